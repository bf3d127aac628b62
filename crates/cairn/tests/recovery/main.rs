//! Scenario tests of damage and recovery, one module per former test file (one test binary,
//! so the crate is linked once for all of them): `Db::check`, corrupted files, lying
//! metadata, failures found by review, and `Db::repair`. Run one module with
//! `cargo test -p cairn --test recovery <module>::`.
//!
//! Binaries of their own, not folded: `crash` and `stress` (they run and kill child
//! processes), `power_loss` (a process-wide counter), `bad_input` (it forks itself as a
//! child by test name, and every test that opens a database keeps out of that moment) and
//! `open_files` (it counts the process's descriptors and runs itself under a lower
//! `RLIMIT_NOFILE`), and `fuzz_corpus` (run by name, target by target, from
//! `scripts/fuzz.sh`).

#[path = "../support/mod.rs"]
mod support;

mod check;
mod corruption;
mod lying_metadata;
mod reliability;
mod repair;
