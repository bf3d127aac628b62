//! Scenario tests of the engine itself, one module per former test file (one test binary,
//! so the crate is linked once for all of them): the public API, concurrency, the
//! model-based test, FLSM, compaction, caches, value logs and the virtual clock.
//! Run one module with `cargo test -p cairn --test engine <module>::`.

#[path = "../support/mod.rs"]
mod support;

mod basic;
mod bottom_seqs;
mod cf_options;
mod checkpoint;
mod compression;
mod concurrency;
mod event_log;
mod flsm;
mod ingest;
mod model;
mod parallel_compaction;
mod range_delete;
mod read_cache;
mod read_compaction;
mod shared_cache;
mod subcompaction;
mod user_api;
mod virtual_clock;
mod vlog;
