//! cairn-bench: runs key-value engines on the same seeded operation stream and compares
//! them. The binary is a thin wrapper over [`cli`] and [`compare`].

pub mod calibrate;
pub mod cli;
pub mod clock_summary;
pub mod compare;
pub mod engines;
pub mod leaper;
pub mod measure;
pub mod paper;
pub mod range_delete;
pub mod report;
pub mod reprice;
pub mod rng;
pub mod runner;
pub mod ruskey;
pub mod salsm;
pub mod summary;
pub mod sweep;
pub mod workload;
