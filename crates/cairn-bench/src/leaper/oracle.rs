//! `cairn:oracle`'s hot ranges: the key numbers the op stream will read in the next time
//! slots, read off the stream itself (the harness generates it up front, seeded). The
//! runner counts executed ops; the position in time of a future op is estimated from the
//! recent op rate, on the run's clock (virtual time on the virtual clock, where the slots
//! of the access statistics are too). An upper bound for Leaper's predictions, not something a real system
//! could have.

use crate::workload::dataset::KeySpace;
use crate::workload::mix::OpKind;
use crate::workload::{KeyCounter, Plan, WorkloadSpec};
use cairn::access::Clock;
use cairn::policy::HotRangeSource;
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Steps (slots) ahead the oracle answers for.
pub const ORACLE_STEPS: usize = 64;

pub struct OracleSource {
    /// Per op of the stream (warm-up included), the inclusive key-number interval it reads;
    /// `(1, 0)` for writes.
    reads: Vec<(u64, u64)>,
    /// Ops executed so far (the runner bumps it).
    progress: Arc<AtomicU64>,
    slot_ms: u64,
    /// The run's clock.
    clock: Arc<dyn Clock>,
    /// (time, ops then, ops per ms measured since) of the rate estimate.
    anchor: Mutex<Anchor>,
}

struct Anchor {
    at_ms: u64,
    pos: u64,
    rate: f64,
}

impl OracleSource {
    /// Generates the stream of `plan` (threads interleaved op by op, as they roughly run).
    pub fn new(
        plan: &Plan,
        spec: &WorkloadSpec,
        keys: &KeySpace,
        slot_ms: u64,
        clock: Arc<dyn Clock>,
    ) -> OracleSource {
        let counter = KeyCounter::new(spec.records);
        let threads = spec.threads.max(1);
        let mut gens: Vec<_> = (0..threads)
            .map(|t| plan.stream(spec.seed, t, threads, spec.value_size, &counter))
            .collect();
        let mut reads = Vec::with_capacity((plan.total_ops() + plan.warmup) as usize);
        let mut live = threads;
        while live > 0 {
            live = 0;
            for g in gens.iter_mut() {
                let Some(op) = g.next() else { continue };
                live += 1;
                reads.push(match op.kind {
                    OpKind::Read | OpKind::Rmw => {
                        let k = keys.int_key(op.key);
                        (k, k)
                    }
                    OpKind::Scan => {
                        let last = op.key + op.len.max(1) as u64 - 1;
                        (keys.int_key(op.key), keys.int_key(last))
                    }
                    OpKind::Update | OpKind::Insert => (1, 0),
                });
            }
        }
        OracleSource {
            reads,
            progress: Arc::new(AtomicU64::new(0)),
            slot_ms: slot_ms.max(1),
            anchor: Mutex::new(Anchor {
                at_ms: clock.now_ms(),
                pos: 0,
                rate: 0.0,
            }),
            clock,
        }
    }

    /// The counter the runner bumps once per executed op.
    pub fn progress(&self) -> Arc<AtomicU64> {
        self.progress.clone()
    }

    /// Restarts the rate estimate (after a pause: training, settling).
    pub fn mark(&self) {
        let mut a = self.anchor.lock();
        a.at_ms = self.clock.now_ms();
        a.pos = self.progress.load(Ordering::Relaxed);
    }

    /// Ops per millisecond lately (a floor of 1 op/ms before any measurement).
    fn rate(&self, pos: u64) -> f64 {
        let mut a = self.anchor.lock();
        let now = self.clock.now_ms();
        let ms = now.saturating_sub(a.at_ms) as f64;
        if ms >= 200.0 && pos > a.pos {
            let r = (pos - a.pos) as f64 / ms;
            a.rate = if a.rate > 0.0 {
                0.5 * a.rate + 0.5 * r
            } else {
                r
            };
            if ms >= 2000.0 {
                a.at_ms = now;
                a.pos = pos;
            }
        }
        if a.rate > 0.0 {
            a.rate
        } else {
            1.0
        }
    }

    /// Sorted, merged intervals read by ops `[lo, hi)` of the stream.
    pub fn intervals(&self, lo: usize, hi: usize) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (a, b) in self.sorted_reads(lo, hi) {
            match out.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        out
    }

    /// Sorted, disjoint intervals read by ops `[lo, hi)`, each with how many of those
    /// ops read it (overlapping reads merge; adjacent ones do not).
    pub fn scored(&self, lo: usize, hi: usize) -> Vec<((u64, u64), f64)> {
        let mut out: Vec<((u64, u64), f64)> = Vec::new();
        for (a, b) in self.sorted_reads(lo, hi) {
            match out.last_mut() {
                Some((last, n)) if a <= last.1 => {
                    last.1 = last.1.max(b);
                    *n += 1.0;
                }
                _ => out.push(((a, b), 1.0)),
            }
        }
        out
    }

    fn sorted_reads(&self, lo: usize, hi: usize) -> Vec<(u64, u64)> {
        let hi = hi.min(self.reads.len());
        let lo = lo.min(hi);
        let mut v: Vec<(u64, u64)> = self.reads[lo..hi]
            .iter()
            .copied()
            .filter(|(a, b)| a <= b)
            .collect();
        v.sort_unstable();
        v
    }

    /// Ops `[a, b)` of the stream that fall in `steps` from now.
    fn span(&self, steps: &Range<usize>) -> (usize, usize) {
        let pos = self.progress.load(Ordering::Relaxed);
        let per_slot = self.rate(pos) * self.slot_ms as f64;
        let at = |s: usize| pos as usize + (s as f64 * per_slot).ceil() as usize;
        (at(steps.start), at(steps.end))
    }
}

impl HotRangeSource for OracleSource {
    fn hot_intervals(&self, steps: Range<usize>, _span: (u64, u64)) -> Option<Vec<(u64, u64)>> {
        let (a, b) = self.span(&steps);
        Some(self.intervals(a, b))
    }

    /// Each range scored by the reads it will get: the ranking Leaper's model estimates.
    fn hot_scores(&self, steps: Range<usize>, _span: (u64, u64)) -> Option<Vec<((u64, u64), f64)>> {
        let (a, b) = self.span(&steps);
        Some(self.scored(a, b))
    }

    fn slot_ms(&self) -> u64 {
        self.slot_ms
    }

    fn steps(&self) -> usize {
        ORACLE_STEPS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::WorkloadName;

    #[test]
    fn reads_of_the_stream_become_merged_intervals() {
        let spec = WorkloadSpec {
            workload: WorkloadName::LeaperEcommerce,
            records: 1000,
            ops: 500,
            warmup_ops: 100,
            scan_length: 5,
            ..Default::default()
        };
        let plan = Plan::build(&spec).unwrap();
        let keys = KeySpace::new(&spec.dataset, spec.records, 16, spec.seed).unwrap();
        let clock = Arc::new(cairn::access::SystemClock);
        let o = OracleSource::new(&plan, &spec, &keys, 1000, clock);
        assert_eq!(o.reads.len(), 600);
        let iv = o.intervals(0, 600);
        assert!(iv.windows(2).all(|w| w[0].1 + 1 < w[1].0), "{iv:?}");
        let reads = o.reads.iter().filter(|(a, b)| a <= b).count();
        assert!(reads > 400, "{reads}");
        // Every read falls inside an interval.
        for &(a, b) in o.reads.iter().filter(|(a, b)| a <= b) {
            assert!(iv.iter().any(|&(x, y)| x <= a && b <= y));
        }
        // Scored: disjoint, every read counted once, in the interval holding it.
        let sc = o.scored(0, 600);
        assert!(sc.windows(2).all(|w| w[0].0 .1 < w[1].0 .0));
        assert_eq!(sc.iter().map(|s| s.1).sum::<f64>(), reads as f64);
        // No ops executed yet: the next slot starts at op 0.
        let hot = o.hot_intervals(0..1, (0, u64::MAX)).unwrap();
        assert!(!hot.is_empty());
        assert_eq!(o.slot_ms(), 1000);
    }
}
