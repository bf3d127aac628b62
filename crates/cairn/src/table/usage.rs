//! Per-table lookup counters and sampled path timings, for Bourbon's cost-benefit
//! analyzer. Updated on the read path with relaxed atomics; one lookup in
//! [`SAMPLE_EVERY`] is timed, so the clock costs a few nanoseconds per lookup on average.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One lookup in this many (that reaches the index) is timed.
pub const SAMPLE_EVERY: u64 = 32;

/// Lookups a table served and how long sampled ones took.
#[derive(Debug, Default)]
pub struct TableUsage {
    index_lookups: AtomicU64,
    positives: AtomicU64,
    bloom_negatives: AtomicU64,
    fence_ns: AtomicU64,
    fence_samples: AtomicU64,
    model_ns: AtomicU64,
    model_samples: AtomicU64,
}

/// A copy of [`TableUsage`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsageSnapshot {
    /// Lookups that reached the index (bloom said maybe, or no bloom).
    pub index_lookups: u64,
    /// Of those, lookups that found the user key.
    pub positives: u64,
    /// Lookups stopped by the bloom filter (they gain nothing from a model).
    pub bloom_negatives: u64,
    /// Nanoseconds of sampled fence-path lookups (index search and block search; lookups
    /// that read storage are not sampled).
    pub fence_ns: u64,
    /// Sampled fence-path lookups.
    pub fence_samples: u64,
    /// Nanoseconds of sampled model-path lookups (fallbacks included).
    pub model_ns: u64,
    /// Sampled model-path lookups.
    pub model_samples: u64,
}

impl UsageSnapshot {
    /// Adds another snapshot's counts.
    pub fn add(&mut self, o: &UsageSnapshot) {
        self.index_lookups += o.index_lookups;
        self.positives += o.positives;
        self.bloom_negatives += o.bloom_negatives;
        self.fence_ns += o.fence_ns;
        self.fence_samples += o.fence_samples;
        self.model_ns += o.model_ns;
        self.model_samples += o.model_samples;
    }
}

impl TableUsage {
    /// Counts a lookup that reached the index; true if it should be timed.
    pub(crate) fn begin_lookup(&self) -> bool {
        self.index_lookups
            .fetch_add(1, Relaxed)
            .is_multiple_of(SAMPLE_EVERY)
    }

    pub(crate) fn bloom_negative(&self) {
        self.bloom_negatives.fetch_add(1, Relaxed);
    }

    pub(crate) fn positive(&self) {
        self.positives.fetch_add(1, Relaxed);
    }

    /// Records a timed lookup on the model path (`model`) or the fence path.
    pub(crate) fn sample(&self, model: bool, ns: u64) {
        let (t, n) = if model {
            (&self.model_ns, &self.model_samples)
        } else {
            (&self.fence_ns, &self.fence_samples)
        };
        t.fetch_add(ns, Relaxed);
        n.fetch_add(1, Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> UsageSnapshot {
        UsageSnapshot {
            index_lookups: self.index_lookups.load(Relaxed),
            positives: self.positives.load(Relaxed),
            bloom_negatives: self.bloom_negatives.load(Relaxed),
            fence_ns: self.fence_ns.load(Relaxed),
            fence_samples: self.fence_samples.load(Relaxed),
            model_ns: self.model_ns.load(Relaxed),
            model_samples: self.model_samples.load(Relaxed),
        }
    }
}
