//! Where a point read's time goes, step by step (Bourbon's lookup breakdown): memtables,
//! the point cache, bloom filters, the index or model, the data block (cache or storage),
//! the value-log read of a separated value, and the rest (version, table handles, the
//! level loop).
//!
//! One get in [`SAMPLE_EVERY`] is timed, so the clock costs about a nanosecond per get on
//! average. Gets answered by a memtable are timed as well: the breakdown is of all gets.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// One get in this many is broken into steps.
pub const SAMPLE_EVERY: u64 = 64;

/// The steps of a get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Memtables,
    PointCache,
    Filters,
    Index,
    Data,
    Value,
}

const STEPS: usize = 6;

/// Running sums over the sampled gets.
#[derive(Debug, Default)]
pub(crate) struct StepCounters {
    samples: AtomicU64,
    total_ns: AtomicU64,
    step_ns: [AtomicU64; STEPS],
}

/// Mean nanoseconds per sampled get in each step.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LookupSteps {
    /// Gets timed.
    pub samples: u64,
    /// Searching the active and immutable memtables.
    pub memtables_ns: f64,
    /// Probing the point (KV/KP) cache, when one is configured.
    pub point_cache_ns: f64,
    /// Bloom filter probes.
    pub filters_ns: f64,
    /// Finding the data block and position: fence pointers or the learned model.
    pub index_ns: f64,
    /// Fetching the data block (cache or storage) and searching it.
    pub data_ns: f64,
    /// Reading a separated value from the value log.
    pub value_ns: f64,
    /// Everything else: version and table handles, the level loop, copies.
    pub other_ns: f64,
    /// The whole get.
    pub total_ns: f64,
}

impl StepCounters {
    /// A clock for one get, or `None` if this get is not sampled (`get_no` counts gets).
    /// The sampled gets are not those whose level times RusKey's tuner samples (every
    /// 8th from 0), so the step clock's own reads never inflate those.
    pub(crate) fn clock(&self, get_no: u64) -> Option<StepClock<'_>> {
        (get_no % SAMPLE_EVERY == 1).then(|| {
            let now = Instant::now();
            StepClock {
                counters: self,
                start: now,
                last: now,
                ns: [0; STEPS],
            }
        })
    }

    pub(crate) fn snapshot(&self) -> LookupSteps {
        let n = self.samples.load(Relaxed);
        let mean = |v: u64| if n == 0 { 0.0 } else { v as f64 / n as f64 };
        let step = |s: Step| mean(self.step_ns[s as usize].load(Relaxed));
        let total = mean(self.total_ns.load(Relaxed));
        let mut r = LookupSteps {
            samples: n,
            memtables_ns: step(Step::Memtables),
            point_cache_ns: step(Step::PointCache),
            filters_ns: step(Step::Filters),
            index_ns: step(Step::Index),
            data_ns: step(Step::Data),
            value_ns: step(Step::Value),
            other_ns: 0.0,
            total_ns: total,
        };
        let steps =
            r.memtables_ns + r.point_cache_ns + r.filters_ns + r.index_ns + r.data_ns + r.value_ns;
        r.other_ns = (total - steps).max(0.0);
        r
    }
}

/// Times one get; adds to the counters when dropped (so early returns count).
pub(crate) struct StepClock<'a> {
    counters: &'a StepCounters,
    start: Instant,
    last: Instant,
    ns: [u64; STEPS],
}

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl StepClock<'_> {
    /// The time since the last lap (or the start) was spent in `step`.
    pub(crate) fn lap(&mut self, step: Step) {
        let now = Instant::now();
        self.ns[step as usize] += nanos(now.saturating_duration_since(self.last));
        self.last = now;
    }

    /// The time since the last lap was not one step's; only restart the lap.
    pub(crate) fn skip(&mut self) {
        self.last = Instant::now();
    }

    /// Adds time measured elsewhere (inside a table's lookup) to `step`.
    pub(crate) fn add(&mut self, step: Step, ns: u64) {
        self.ns[step as usize] += ns;
    }
}

impl Drop for StepClock<'_> {
    fn drop(&mut self) {
        let c = self.counters;
        c.samples.fetch_add(1, Relaxed);
        c.total_ns.fetch_add(nanos(self.start.elapsed()), Relaxed);
        for (sum, &ns) in c.step_ns.iter().zip(&self.ns) {
            if ns > 0 {
                sum.fetch_add(ns, Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_one_get_in_n_and_splits_its_time() {
        let c = StepCounters::default();
        assert!(c.clock(0).is_none() && c.clock(8).is_none());
        {
            let mut clock = c.clock(SAMPLE_EVERY + 1).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(2));
            clock.lap(Step::Memtables);
            clock.add(Step::Index, 1_000_000);
            clock.skip();
        }
        let s = c.snapshot();
        assert_eq!(s.samples, 1);
        assert!(s.memtables_ns >= 2e6, "{s:?}");
        assert_eq!(s.index_ns, 1e6);
        assert!(s.total_ns >= s.memtables_ns);
        assert_eq!(s.value_ns, 0.0);
    }
}
