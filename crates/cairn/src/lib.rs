//! cairn: an LSM-tree key-value storage engine with seams for learned policies.
//!
//! See the repository README for an overview and `DESIGN.md` (in the shared folder) for
//! the principles.

#![warn(missing_docs)]

pub mod batch;
pub mod error;
pub mod iter;
pub mod log;
pub mod memtable;
pub mod storage;
pub mod types;

pub use error::{Error, Result};
