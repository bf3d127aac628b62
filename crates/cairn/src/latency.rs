//! Latency histograms that many threads record into at once.
//!
//! One HDR histogram behind one lock made every get, write and scan step of every thread
//! take the same lock. Here each thread records into a shard (chosen once per thread,
//! round robin), as many shards as cores (a power of two, at most 32), so threads meet on
//! a lock about as often as they meet on a core; a read merges the shards. A shard's
//! histogram is made on its first record: at most one per core and operation kind,
//! however many threads come and go.
//!
//! Two significant digits (a quantile within 1%) keep a histogram at about 37 KiB. Three
//! took 270 KiB: 26 MiB for three kinds on 32 cores, and each `Db::stats` merged them into
//! fresh ones, large enough that glibc's allocator, once such a block was freed, served the
//! next ones from a thread's arena and kept them resident.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use hdrhistogram::Histogram;
use parking_lot::Mutex;

/// Highest latency tracked: one hour, in nanoseconds.
const MAX_NANOS: u64 = 3_600_000_000_000;
/// The most shards a histogram has.
const MAX_SHARDS: usize = 32;
/// Significant decimal digits kept: a recorded latency reads back within 1%.
const SIGNIFICANT_DIGITS: u8 = 2;

/// Shards per histogram: one per core, rounded up to a power of two.
fn shard_count() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .next_power_of_two()
        .min(MAX_SHARDS)
}

/// One shard, on its own cache lines so that neighbours' locks do not bounce them.
#[repr(align(128))]
#[derive(Default)]
struct Shard(Mutex<Option<Histogram<u64>>>);

/// A latency histogram recorded from many threads, read as one.
pub(crate) struct ShardedHistogram {
    shards: Box<[Shard]>,
}

fn empty() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NANOS, SIGNIFICANT_DIGITS).expect("static bounds")
}

/// The calling thread's number (threads numbered as they first record), which picks its
/// shard.
fn thread_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|i| {
        if i.get() == usize::MAX {
            i.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        i.get()
    })
}

impl Default for ShardedHistogram {
    fn default() -> Self {
        ShardedHistogram {
            shards: (0..shard_count()).map(|_| Shard::default()).collect(),
        }
    }
}

impl ShardedHistogram {
    /// Records `nanos` (at least 1, at most an hour) `n` times.
    pub(crate) fn record_n(&self, nanos: u64, n: u64) {
        let mut shard = self.shards[thread_number() % self.shards.len()].0.lock();
        let h = shard.get_or_insert_with(empty);
        let _ = h.record_n(nanos.clamp(1, MAX_NANOS), n);
    }

    /// Every shard's records in one histogram.
    pub(crate) fn snapshot(&self) -> Histogram<u64> {
        let mut all = empty();
        for s in self.shards.iter() {
            if let Some(h) = s.0.lock().as_ref() {
                // Same bounds on both sides: adding cannot fail.
                let _ = all.add(h);
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn records_from_many_threads_read_as_one() {
        let h = Arc::new(ShardedHistogram::default());
        let threads: Vec<_> = (0..8u64)
            .map(|t| {
                let h = h.clone();
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        h.record_n(1000 * (t + 1) + i % 7, 2);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = h.snapshot();
        assert_eq!(s.len(), 8 * 1000 * 2);
        assert_eq!(s.min(), 1000);
        // Within the histogram's 1%.
        assert!(s.max() >= 8006 && s.max() <= 8087, "{}", s.max());
        // Only the shards of threads that recorded hold a histogram, and no more than
        // there are shards.
        let made = h.shards.iter().filter(|s| s.0.lock().is_some()).count();
        assert!((1..=8.min(shard_count())).contains(&made), "{made}");
        assert!(h.shards.len() <= MAX_SHARDS);
    }

    #[test]
    fn a_histogram_is_small_and_reads_back_within_one_percent() {
        // Below glibc's default mmap threshold (128 KiB) with room to spare.
        let bytes = empty().distinct_values() * std::mem::size_of::<u64>();
        assert!(bytes < 48 << 10, "{bytes}");
        let h = ShardedHistogram::default();
        for ns in [1u64, 999, 12_345, 7_654_321, 2_000_000_000_000] {
            h.record_n(ns, 1);
            let got = h.snapshot().max();
            let err = got.abs_diff(ns) as f64 / ns as f64;
            assert!(err <= 0.01, "{ns} read back as {got}");
        }
    }

    #[test]
    fn out_of_range_latencies_are_clamped_not_lost() {
        let h = ShardedHistogram::default();
        h.record_n(0, 1);
        h.record_n(u64::MAX, 1);
        let s = h.snapshot();
        assert_eq!(s.len(), 2);
        assert_eq!(s.min(), 1);
    }
}
