//! Key-value separation (WiscKey, the base Bourbon runs on): values at or above
//! `Options::value_threshold` are written to value-log files at flush time and the tree
//! stores the key with a [`ValuePointer`], so table entries are small.
//!
//! Lifetime of a value-log file, which makes crash safety follow from the manifest:
//! - A flush or a GC-carrying compaction writes a new file and syncs it before the
//!   manifest edit that installs the tables pointing into it. Every table records, per
//!   value-log file, the bytes of the records it references (`FileDesc::vlog_refs`).
//! - The live files are exactly those referenced by a table of a current version; at open,
//!   other `.vlog` files are orphans (work cut short by a crash) and are removed, and a
//!   referenced file that is missing is a corruption error.
//! - While running, every installed table holds a [`VlogRef`] of each file it references;
//!   when the last one goes (no version of any reader names the file any more), the file
//!   is queued and deleted by the same purge as tables.
//! - Garbage collection moves the live records of the files with the most garbage by
//!   rewriting the tables that reference them (see [`gc`]); a crash before the rewrite's
//!   edit leaves the old file referenced, a crash after leaves it unreferenced.

pub mod format;
pub mod gc;
mod merge;
mod store;
mod writer;

pub use format::ValuePointer;
pub use merge::VlogMerge;
pub use store::{VlogRef, VlogRegistry, VlogStats, VlogStore};
pub use writer::VlogWriter;

pub use crate::filenames::{vlog_no as parse_vlog_name, vlog_path};
