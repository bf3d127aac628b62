//! Latency histograms per operation type (HDR, nanosecond resolution, 3 significant digits).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// Highest trackable latency: an hour, far above any single op.
const MAX_NANOS: u64 = 3_600_000_000_000;

pub fn new_histogram() -> Histogram<u64> {
    new_histogram_digits(3)
}

/// As [`new_histogram`], to `digits` significant digits (1 to 5).
pub fn new_histogram_digits(digits: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NANOS, digits).expect("valid bounds")
}

/// One phase of a phased workload: its latencies and when it ran (earliest start and
/// latest end over all workers, so throughput per phase is ops / (end - start)).
#[derive(Clone)]
pub struct PhaseSpan {
    pub hist: Histogram<u64>,
    pub start: Instant,
    pub end: Instant,
    /// Exact sums: every op, reads (point reads and scans), writes (updates, inserts,
    /// read-modify-writes).
    pub all: Sum,
    pub reads: Sum,
    pub writes: Sum,
    /// The last half of each worker's share of the phase ("after convergence"), and when
    /// it ran (earliest start, latest end).
    pub tail: Sum,
    pub tail_span: Option<(Instant, Instant)>,
}

/// Count and total nanoseconds of a set of ops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sum {
    pub n: u64,
    pub ns: u64,
}

impl Sum {
    pub fn add(&mut self, nanos: u64) {
        self.n += 1;
        self.ns += nanos;
    }

    pub fn merge(&mut self, o: &Sum) {
        self.n += o.n;
        self.ns += o.ns;
    }

    /// Mean in microseconds; None when empty.
    pub fn mean_us(&self) -> Option<f64> {
        (self.n > 0).then(|| self.ns as f64 / self.n as f64 / 1000.0)
    }
}

/// What the phase statistics need to know about an op besides its latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpClass {
    /// Writes: updates, inserts and read-modify-writes; the rest are reads.
    pub write: bool,
    /// In the last half of the worker's share of its phase.
    pub tail: bool,
}

/// Per-op-type histograms keyed by op name, their union, and per-phase spans.
#[derive(Clone)]
pub struct OpLatencies {
    pub by_op: BTreeMap<String, Histogram<u64>>,
    pub all: Histogram<u64>,
    pub phases: Vec<Option<PhaseSpan>>,
}

impl Default for OpLatencies {
    fn default() -> Self {
        OpLatencies {
            by_op: BTreeMap::new(),
            all: new_histogram(),
            phases: Vec::new(),
        }
    }
}

impl OpLatencies {
    /// Attributes an op that ran from `start` for `nanos` to `phase`.
    pub fn record_phase(&mut self, phase: usize, start: Instant, nanos: u64, class: OpClass) {
        if self.phases.len() <= phase {
            self.phases.resize(phase + 1, None);
        }
        let end = start + std::time::Duration::from_nanos(nanos);
        let span = self.phases[phase].get_or_insert_with(|| PhaseSpan {
            hist: new_histogram(),
            start,
            end,
            all: Sum::default(),
            reads: Sum::default(),
            writes: Sum::default(),
            tail: Sum::default(),
            tail_span: None,
        });
        span.hist.saturating_record(nanos.clamp(1, MAX_NANOS));
        span.end = end;
        span.all.add(nanos);
        if class.write {
            span.writes.add(nanos);
        } else {
            span.reads.add(nanos);
        }
        if class.tail {
            span.tail.add(nanos);
            let t = span.tail_span.get_or_insert((start, end));
            t.1 = end;
        }
    }

    pub fn record(&mut self, op: &str, nanos: u64) {
        let n = nanos.clamp(1, MAX_NANOS);
        self.all.saturating_record(n);
        if let Some(h) = self.by_op.get_mut(op) {
            h.saturating_record(n);
        } else {
            let mut h = new_histogram();
            h.saturating_record(n);
            self.by_op.insert(op.to_string(), h);
        }
    }

    pub fn merge(&mut self, other: &OpLatencies) {
        self.all.add(&other.all).expect("same bounds");
        for (k, h) in &other.by_op {
            self.by_op
                .entry(k.clone())
                .or_insert_with(new_histogram)
                .add(h)
                .expect("same bounds");
        }
        if self.phases.len() < other.phases.len() {
            self.phases.resize(other.phases.len(), None);
        }
        for (mine, theirs) in self.phases.iter_mut().zip(&other.phases) {
            match (mine.as_mut(), theirs) {
                (_, None) => {}
                (None, Some(t)) => *mine = Some(t.clone()),
                (Some(m), Some(t)) => {
                    m.hist.add(&t.hist).expect("same bounds");
                    m.start = m.start.min(t.start);
                    m.end = m.end.max(t.end);
                    m.all.merge(&t.all);
                    m.reads.merge(&t.reads);
                    m.writes.merge(&t.writes);
                    m.tail.merge(&t.tail);
                    m.tail_span = match (m.tail_span, t.tail_span) {
                        (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
                        (a, b) => a.or(b),
                    };
                }
            }
        }
    }
}

/// Percentiles in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

fn us(nanos: u64) -> f64 {
    nanos as f64 / 1000.0
}

pub fn summarize(h: &Histogram<u64>) -> LatencySummary {
    if h.is_empty() {
        return LatencySummary::default();
    }
    LatencySummary {
        count: h.len(),
        mean: h.mean() / 1000.0,
        p50: us(h.value_at_quantile(0.50)),
        p95: us(h.value_at_quantile(0.95)),
        p99: us(h.value_at_quantile(0.99)),
        p999: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
    }
}

/// (percentile, microseconds) points, dense toward the tail where engines differ.
pub fn cdf(h: &Histogram<u64>) -> Vec<[f64; 2]> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut qs: Vec<f64> = (0..=90).map(|i| i as f64).collect();
    qs.extend((1..=9).map(|i| 90.0 + i as f64));
    qs.extend([99.5, 99.9, 99.95, 99.99, 100.0]);
    qs.into_iter()
        .map(|q| [q, us(h.value_at_quantile(q / 100.0))])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_ordered_and_in_microseconds() {
        let mut l = OpLatencies::default();
        for i in 1..=1000u64 {
            l.record("read", i * 1000);
        }
        l.record("update", 5_000_000);
        let s = summarize(&l.by_op["read"]);
        assert_eq!(s.count, 1000);
        assert!((s.p50 - 500.0).abs() < 2.0, "{}", s.p50);
        assert!(s.p50 <= s.p95 && s.p95 <= s.p99 && s.p99 <= s.p999 && s.p999 <= s.max);
        assert_eq!(summarize(&l.all).count, 1001);
        let c = cdf(&l.all);
        assert!(c.windows(2).all(|w| w[0][1] <= w[1][1]));
    }

    #[test]
    fn phase_spans_merge_across_workers() {
        let t0 = Instant::now();
        let ms = std::time::Duration::from_millis;
        let (mut a, mut b) = (OpLatencies::default(), OpLatencies::default());
        let read = OpClass::default();
        let write_tail = OpClass {
            write: true,
            tail: true,
        };
        a.record_phase(0, t0, 1000, read);
        a.record_phase(1, t0 + ms(10), 1000, write_tail);
        b.record_phase(1, t0 + ms(5), 1000, read);
        b.record_phase(1, t0 + ms(20), 2000, write_tail);
        a.merge(&b);
        let p1 = a.phases[1].as_ref().unwrap();
        assert_eq!(p1.hist.len(), 3);
        assert_eq!(p1.start, t0 + ms(5));
        assert_eq!(p1.end, t0 + ms(20) + std::time::Duration::from_nanos(2000));
        assert_eq!(a.phases[0].as_ref().unwrap().hist.len(), 1);
        assert_eq!(p1.all, Sum { n: 3, ns: 4000 });
        assert_eq!(p1.reads, Sum { n: 1, ns: 1000 });
        assert_eq!(p1.writes, Sum { n: 2, ns: 3000 });
        assert_eq!(p1.tail.mean_us(), Some(1.5));
        assert_eq!(
            p1.tail_span,
            Some((
                t0 + ms(10),
                t0 + ms(20) + std::time::Duration::from_nanos(2000)
            ))
        );
    }
}
