//! cairn: an LSM-tree key-value storage engine with seams for learned policies.
//!
//! ```no_run
//! use cairn::{Db, Options, WriteOptions};
//! let db = Db::open("/tmp/cairn-example", Options::default())?;
//! db.put(&WriteOptions::default(), b"hello", b"world")?;
//! assert_eq!(db.get(b"hello")?, Some(b"world".to_vec()));
//! for item in db.scan(b"a".to_vec()..)? {
//!     let (key, value) = item?;
//!     println!("{key:?} = {value:?}");
//! }
//! db.close()?;
//! # Ok::<(), cairn::Error>(())
//! ```
//!
//! See the repository README for an overview and `DESIGN.md` (in the shared folder) for
//! the principles.

#![warn(missing_docs)]

pub mod access;
pub mod batch;
pub mod cache;
pub mod cf_options;
pub mod clock;
pub mod coding;
pub mod compaction;
pub mod compression;
pub mod db;
pub mod error;
pub mod events;
pub mod filenames;
#[doc(hidden)]
pub mod fuzzing;
mod heap;
pub mod ids;
pub mod iter;
pub mod key_text;
mod latency;
pub mod learned;
pub mod log;
pub mod lookup_steps;
pub mod memtable;
pub mod merging;
pub mod metrics;
pub mod options;
pub mod options_file;
pub mod policy;
pub mod presets;
pub mod range_del;
pub mod sst_file_writer;
pub mod stats;
pub mod storage;
pub mod table;
pub mod types;
pub mod version;
pub mod vlog;

pub use batch::WriteBatch;
pub use cf_options::CfOptions;
pub use clock::{Clock, DeviceModel, VirtualClock};
pub use compression::Compression;
pub use db::{
    CfInfo, CheckIssue, CheckProgress, CheckReport, ColumnFamily, Db, DbIterator, LevelInfo,
    ManifestInfo, ProactiveReport, RepairMethod, RepairReport, RunInfo, Scan, Snapshot,
    TableFileInfo,
};
pub use error::{Error, Result};
pub use events::{CompactionInfo, EventListener, FlushInfo};
pub use ids::{CfId, FileNo};
pub use options::{
    AcKeyParams, BloomAllocation, IndexPolicy, LearnMode, Options, ReadCachePolicy, ReadOptions,
    Transition, WalRecovery, WriteOptions,
};
pub use sst_file_writer::{ExternalFileInfo, SstFileWriter};
pub use stats::{CpuCounts, DbStats, LevelStats, ReadCacheStats};
pub use storage::{DeviceProfile, TierConfig};
