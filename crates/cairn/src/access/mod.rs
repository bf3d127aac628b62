//! Access statistics: who reads and writes what, and when.
//!
//! One module, two granularities (DESIGN.md): [`ranges`] counts reads and writes per key
//! range and time slot for Leaper (§5.1), and exports them as a trace ([`trace`]) that the
//! offline learner in `python/` (`cairn.learn.leaper`) trains on; SA-LSM's record-level
//! trace will sit beside it. Both run on a [`Clock`] that a bench can drive.
//!
//! Collection is off unless [`Options::access`](crate::Options::access) is set; then each
//! column family has a [`RangeCollector`], fed by gets, writes and iterators, and
//! [`Db::export_access_trace`](crate::Db::export_access_trace) writes its trace.

pub mod clock;
pub mod ranges;
pub mod record_trace;
pub mod records;
pub mod trace;

use std::sync::Arc;

pub use clock::{Clock, ManualClock, SystemClock};
pub use ranges::{estimate, key_number, Access, RangeCollector};
pub use record_trace::{RecordEntry, RecordTraceHeader};
pub use records::{RecordOptions, RecordStore};
pub use trace::{TraceHeader, TraceRow, TransferRow};

use crate::{Error, Result};

/// How access statistics are collected.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct AccessOptions {
    /// Key numbers per range at collection time (Leaper's initial size A; the learner's
    /// Algorithm 1 picks a multiple of it). Default 10.
    pub range_width: u64,
    /// Bytes of a key skipped before the 8 bytes that give its number (a common prefix).
    pub key_offset: usize,
    /// Length of a time slot (Leaper: one or two minutes). Default 60 s.
    pub slot_ms: u64,
    /// Probability P that an access after a cell's first is counted (eq. 1). Default 0.1.
    pub sample_p: f64,
    /// Trace rows kept in memory; the oldest slots go first. Default 1 Mi (24 MiB).
    pub max_trace_rows: usize,
    /// Distinct (to, from) pairs of Algorithm 2 kept. Default 256 Ki.
    pub max_transfer_pairs: usize,
    /// One sampled access in this many updates Algorithm 2's transfer counts (1: all).
    /// The algorithm ranks candidates by count, so a uniform sample keeps the ranking and
    /// spares most requests the shared transfer map. Default 16.
    pub transfer_sample: u64,
    /// The clock slots are measured on.
    #[serde(skip, default = "crate::access::clock::system_clock")]
    pub clock: Arc<dyn Clock>,
}

impl Default for AccessOptions {
    fn default() -> Self {
        AccessOptions {
            range_width: 10,
            key_offset: 0,
            slot_ms: 60_000,
            sample_p: 0.1,
            max_trace_rows: 1 << 20,
            max_transfer_pairs: 1 << 18,
            transfer_sample: 16,
            clock: Arc::new(SystemClock),
        }
    }
}

impl AccessOptions {
    /// Checks the options.
    pub fn validate(&self) -> Result<()> {
        if self.range_width == 0 || self.slot_ms == 0 {
            return Err(Error::InvalidArgument(
                "access: range_width and slot_ms must be positive".into(),
            ));
        }
        if !(self.sample_p > 0.0 && self.sample_p <= 1.0) {
            return Err(Error::InvalidArgument(format!(
                "access: sample_p {} outside (0, 1]",
                self.sample_p
            )));
        }
        Ok(())
    }
}
