//! The storage environment: the one place where cairn touches files (DESIGN.md principle 4).
//!
//! Every read and write is counted per file kind and per tier ([`IoStats`]); tables can be
//! read with `O_DIRECT`; levels map to tiers (directories), each with a [`DeviceProfile`]
//! that adds latency per I/O so a cold tier can be slower than a hot one on one machine.
//! A space quota can be set to simulate a full disk in tests, and a [`FaultInjector`]
//! fails chosen operations and simulates power loss.

mod accounting;
mod env;
pub mod fault;
mod file;
mod profile;
mod stats;

pub use env::{StorageEnv, TierConfig};
pub use fault::{FaultError, FaultInjector, FaultOp};
pub use file::{RandomAccessFile, WritableFile};
pub use profile::DeviceProfile;
pub use stats::{
    FileKind, IoCounts, IoStats, IoStatsSnapshot, MAX_TRACKED_LEVELS, MAX_TRACKED_TIERS,
};
