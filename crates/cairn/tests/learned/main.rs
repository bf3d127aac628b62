//! Scenario tests of the learned techniques in a database, one module per former test file
//! (one test binary, so the crate is linked once for all of them): Leaper's collector,
//! inference and prefetcher, the LightGBM evaluator, Bourbon's learner, SA-LSM's placement
//! and RusKey's tuners. Run one module with `cargo test -p cairn --test learned <module>::`.

#[path = "../support/mod.rs"]
mod support;

mod access;
mod gbdt;
mod leaper_predict;
mod learner;
mod placement;
mod prefetch;
mod tuner;
