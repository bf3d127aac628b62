//! What every file of a storage environment charges its I/O to: the tiers' device
//! profiles (a sleep on the wall clock) or the virtual device clock, the I/O counters, and
//! the space quota. Shared by the environment (`env.rs`) and its files (`file.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use super::{DeviceProfile, FaultInjector, IoStats};
use crate::clock::{IoOp, VirtualClock};
use crate::{Error, Result};

pub(crate) struct Tier {
    pub(super) dir: PathBuf,
    pub(super) first_level: usize,
    pub(super) profile: DeviceProfile,
}

pub(crate) struct EnvInner {
    pub(crate) stats: IoStats,
    pub(super) tiers: Vec<Tier>,
    pub(super) latency_scale: f64,
    /// Bytes that may still be written; `i64::MAX` when no quota is set.
    pub(super) space_left: AtomicI64,
    /// Faults to inject (tests).
    pub(crate) faults: Option<Arc<FaultInjector>>,
    /// Map tables and value logs opened for buffered reads into memory.
    pub(super) mmap_reads: bool,
    /// Refuse every file creation, rename, removal and directory sync
    /// ([`Db::open_read_only`](crate::Db::open_read_only)).
    pub(super) read_only: bool,
    /// The virtual device clock I/O is charged to (`Clock::Virtual`), instead of the
    /// tiers' profiles sleeping.
    pub(crate) vclock: Option<Arc<VirtualClock>>,
}

impl EnvInner {
    /// Whether I/O on `tier` costs simulated device time.
    pub(crate) fn delays(&self, tier: usize) -> bool {
        self.vclock.is_some()
            || self
                .tiers
                .get(tier)
                .is_some_and(|t| t.profile.delay(false, 1, self.latency_scale).is_some())
    }

    /// Charges one I/O to the virtual clock, or waits out the tier's device profile (an
    /// fsync adds no profile latency on the wall clock).
    pub(crate) fn charge(&self, tier: usize, op: IoOp, bytes: usize) {
        if let Some(c) = &self.vclock {
            c.io(tier, op, bytes as u64);
            return;
        }
        if op == IoOp::Sync {
            return;
        }
        if let Some(t) = self.tiers.get(tier) {
            if let Some(d) = t
                .profile
                .delay(op == IoOp::Write, bytes, self.latency_scale)
            {
                std::thread::sleep(d);
            }
        }
    }

    pub(crate) fn charge_space(&self, bytes: u64, path: &Path) -> Result<()> {
        if self.space_left.load(Ordering::Relaxed) == i64::MAX {
            return Ok(());
        }
        let prev = self.space_left.fetch_sub(bytes as i64, Ordering::Relaxed);
        if prev < bytes as i64 {
            self.space_left.fetch_add(bytes as i64, Ordering::Relaxed);
            return Err(Error::io(
                path.display().to_string(),
                std::io::Error::from_raw_os_error(libc::ENOSPC),
            ));
        }
        Ok(())
    }
}
