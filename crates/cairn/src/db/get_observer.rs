//! What a point read tells the learned parts, in one place. A [`GetObserver`] is opened
//! once per get: it records the key's access (Leaper's range collector, SA-LSM's query
//! store) and counts the get; it times the read's steps when the get is sampled for
//! Bourbon's lookup breakdown, and a level's part when sampled for RusKey's per-level
//! read time t_i; and it hands each table read's block counts to the level's counters
//! and its data-block misses and warmed hits to the prefetcher (Leaper). The read path
//! itself only says where it is.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{CfState, DbInner};
use crate::access::Access;
use crate::clock::{EngineClock, Stopwatch};
use crate::ids::FileNo;
use crate::lookup_steps::{Step, StepClock};
use crate::policy::prefetch::Prefetcher;
use crate::stats::StatsInner;
use crate::table::ReadTrace;

/// One get in [`READ_TIME_SAMPLE`] has its time per level measured (RusKey's t_i).
pub(super) const READ_TIME_SAMPLE: u64 = 8;

pub(super) struct GetObserver<'a> {
    key: &'a [u8],
    stats: &'a StatsInner,
    clock: &'a EngineClock,
    prefetch: &'a Prefetcher,
    /// Bourbon's step clock, when this get is sampled for the breakdown.
    steps: Option<StepClock<'a>>,
    /// Whether this get's time per level is measured.
    time_levels: bool,
}

impl<'a> GetObserver<'a> {
    /// Opens the observer of a get of `key` in column family `state`: the key's access is
    /// recorded and the get counted.
    pub(super) fn open(db: &'a DbInner, state: &CfState, key: &'a [u8]) -> Self {
        if let Some(a) = &state.access {
            a.record(key, Access::Read);
        }
        if let Some(r) = &state.records {
            r.record_read(key);
        }
        let get_no = db.stats.gets.fetch_add(1, Ordering::Relaxed);
        GetObserver {
            key,
            stats: &db.stats,
            clock: &db.clock,
            prefetch: &db.prefetch,
            steps: db.stats.lookup_steps.clock(get_no),
            time_levels: get_no.is_multiple_of(READ_TIME_SAMPLE),
        }
    }

    /// The read finished `step` (Bourbon's breakdown).
    pub(super) fn lap(&mut self, step: Step) {
        if let Some(c) = &mut self.steps {
            c.lap(step);
        }
    }

    /// The read reaches `level`; what it returns, held until the read leaves the level,
    /// times the level's part when this get is sampled.
    pub(super) fn enter_level(&self, level: usize) -> Option<LevelTimer<'a>> {
        let counters = self.stats.level(level);
        counters.lookups_reached.fetch_add(1, Ordering::Relaxed);
        self.time_levels
            .then(|| LevelTimer::start(&counters.read_ns, self.clock))
    }

    /// A fresh trace for one table read: with step times when this get is sampled.
    pub(super) fn table_trace(&mut self, fill_cache: bool) -> ReadTrace {
        if let Some(c) = &mut self.steps {
            c.skip();
        }
        ReadTrace {
            time_steps: self.steps.is_some(),
            no_fill: !fill_cache,
            ..ReadTrace::default()
        }
    }

    /// A table of `level` (file `file_no`) was read with `trace`.
    pub(super) fn table_read(&mut self, level: usize, file_no: FileNo, trace: &ReadTrace) {
        if let Some(c) = &mut self.steps {
            c.add(Step::Filters, trace.step_filter_ns);
            c.add(Step::Index, trace.step_index_ns);
            c.add(Step::Data, trace.step_data_ns);
            c.skip();
        }
        self.stats.level(level).record(trace);
        if trace.data_misses > 0 || trace.warmed_hits > 0 {
            let (misses, warmed) = (trace.data_misses, trace.warmed_hits);
            self.prefetch
                .note_read(self.key, file_no, misses, warmed, false);
        }
    }
}

/// Adds the time until it is dropped, times [`READ_TIME_SAMPLE`], to a level's read time
/// (so the read's early returns are counted too).
pub(super) struct LevelTimer<'a> {
    ns: &'a AtomicU64,
    start: Stopwatch,
}

impl<'a> LevelTimer<'a> {
    fn start(ns: &'a AtomicU64, clock: &EngineClock) -> Self {
        LevelTimer {
            ns,
            start: clock.stopwatch(),
        }
    }
}

impl Drop for LevelTimer<'_> {
    fn drop(&mut self) {
        let ns = self.start.elapsed_ns();
        self.ns.fetch_add(ns * READ_TIME_SAMPLE, Ordering::Relaxed);
    }
}
