//! Leaper's inference (§5.2, §6): which key ranges will be read in each of the next k
//! slots, from the collector's counts and the learner's models, memoised per slot.
//!
//! At the first question in a slot, the counts of the last complete slots are read from
//! the collector and summed into the model's range width (a multiple of the collector's).
//! A question names the key span of the job that asks (§5.2: only the ranges a flush or
//! compaction involves are inferred): each range of the span not inferred yet in this
//! slot gets its 18 features (`docs/design/formats/leaper.md`) and goes through the k models;
//! the answers hold until the slot ends. Ranges with an access in the feature window are
//! predicted, and idle ranges whose precursors had one (their own counts are zero, their
//! precursor features are not); any other range has all-zero features, and the model's
//! answer for it is one number, checked once per slot. Ranges whose features are
//! equal (sparse ones often are: the same few reads, the same clock) share their
//! answers within the slot, so each distinct row goes through a model once.

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::overlap::Interval;
use crate::access::{estimate, RangeCollector};
use crate::learned::leaper_model::LeaperModel;
use crate::{Error, Result};

/// One range's predictions so far this slot.
#[derive(Debug)]
struct RangeMemo {
    /// Each step's predicted probability; NaN where that step's model has not run yet
    /// (a question runs only the models of its steps).
    probs: Box<[f32]>,
    /// Estimated reads per slot over the feature window.
    rate: f64,
}

impl RangeMemo {
    /// The steps of `mask` whose probability reaches `threshold`.
    fn hot_steps(&self, mask: u64, threshold: f64) -> u64 {
        self.probs
            .iter()
            .enumerate()
            .filter(|&(i, &p)| i < 64 && mask & (1 << i) != 0 && f64::from(p) >= threshold)
            .fold(0u64, |b, (i, _)| b | (1 << i))
    }

    /// Expected reads in the best step of `mask`: probability x read rate.
    fn score(&self, mask: u64) -> f64 {
        self.probs
            .iter()
            .enumerate()
            .filter(|&(i, p)| i < 64 && mask & (1 << i) != 0 && !p.is_nan())
            .map(|(_, &p)| f64::from(p) * self.rate)
            .fold(0.0, f64::max)
    }
}

/// Each step's answer per feature row (its f64 bits); NaN where not run yet.
type RowAnswers = FxHashMap<Box<[u64]>, Box<[f32]>>;

/// One slot's inputs and the predictions made from them so far.
#[derive(Debug)]
struct Memo {
    slot: u64,
    /// Estimated reads and writes per model range and slot of the feature window.
    counts: BTreeMap<u64, Vec<(f64, f64)>>,
    /// Time of day at the end of the last complete slot (hour, minute, second).
    clock: [f64; 3],
    /// Whether a range with no recent access is predicted hot at each step (bit mask).
    idle_hot: u64,
    /// Ranges inferred this slot.
    done: Mutex<BTreeMap<u64, RangeMemo>>,
    /// Each step's answer per distinct feature row (f64 bits) this slot; NaN where that
    /// step's model has not run on the row. Locked after `done`.
    rows: Mutex<RowAnswers>,
}

/// What inference has cost since open (§7.4's overhead).
#[derive(Debug, Default)]
struct Cost {
    /// Model evaluations (one range through one step's model).
    evals: AtomicU64,
    nanos: AtomicU64,
}

/// Predicts hot key ranges with one model bundle over one collector.
#[derive(Debug)]
pub struct HotRangePredictor {
    model: Arc<LeaperModel>,
    collector: Arc<RangeCollector>,
    /// Collector ranges per model range.
    ratio: u64,
    memo: Mutex<Option<Arc<Memo>>>,
    cost: Cost,
}

impl HotRangePredictor {
    /// Pairs a model with a collector; refused when their key mappings cannot agree.
    pub fn new(model: Arc<LeaperModel>, collector: Arc<RangeCollector>) -> Result<Self> {
        let m = model.meta();
        let c = collector.options();
        if m.key_offset as usize != c.key_offset
            || m.range_width == 0
            || !m.range_width.is_multiple_of(c.range_width)
        {
            return Err(Error::InvalidArgument(format!(
                "Leaper model (range width {}, key offset {}) does not fit the collector \
                 (range width {}, key offset {})",
                m.range_width, m.key_offset, c.range_width, c.key_offset
            )));
        }
        if m.k as usize > 64 || model.models().is_empty() {
            return Err(Error::InvalidArgument(
                "Leaper model: k must be 1..=64".into(),
            ));
        }
        let ratio = m.range_width / c.range_width;
        Ok(HotRangePredictor {
            model,
            collector,
            ratio,
            memo: Mutex::new(None),
            cost: Cost::default(),
        })
    }

    /// Number of steps (models).
    pub fn steps(&self) -> usize {
        self.model.models().len()
    }

    /// Offset of the 8 key bytes the model's ranges are made of.
    pub fn key_offset(&self) -> usize {
        self.model.meta().key_offset as usize
    }

    /// The model's slot length.
    pub fn slot_ms(&self) -> u64 {
        self.model.meta().slot_ms
    }

    /// Steps covering `ms` milliseconds (eq. 2's ceiling), at least 1, at most k.
    pub fn steps_for(&self, ms: u64) -> usize {
        (ms.div_ceil(self.slot_ms().max(1)) as usize).clamp(1, self.steps())
    }

    /// Model evaluations (one distinct feature row through one step's model) since open,
    /// and the CPU nanoseconds inference took (reading the counts included).
    pub fn inference_cost(&self) -> (u64, u64) {
        (self.cost.evals.load(Relaxed), self.cost.nanos.load(Relaxed))
    }

    /// This slot's memo with every range of `span` (key numbers) inferred for the steps
    /// of `mask`.
    fn memo(&self, span: Interval, mask: u64) -> Arc<Memo> {
        // CPU time of this thread: the wall clock would also count the time the
        // background thread waited for a core.
        let start = crate::clock::thread_cpu_nanos();
        let slot = self.collector.current_slot();
        let m = {
            let mut g = self.memo.lock();
            match g.as_ref().filter(|m| m.slot == slot) {
                Some(m) => m.clone(),
                None => {
                    let m = Arc::new(self.begin_slot(slot));
                    *g = Some(m.clone());
                    m
                }
            }
        };
        let evals = self.infer_span(&m, span, mask);
        self.cost.evals.fetch_add(evals, Relaxed);
        self.cost.nanos.fetch_add(
            crate::clock::thread_cpu_nanos().saturating_sub(start),
            Relaxed,
        );
        m
    }

    /// A new slot: the feature window's counts, the clock, the idle ranges' answer.
    fn begin_slot(&self, slot: u64) -> Memo {
        let n = self.model.meta().history_slots as usize;
        let p = self.collector.options().sample_p;
        // Estimated reads and writes per model range and slot (eq. 1 per collector cell).
        let mut counts: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
        for (range, h) in self.collector.all_history(n) {
            let e = counts
                .entry(range / self.ratio)
                .or_insert_with(|| vec![(0.0, 0.0); n]);
            for (acc, &(r, w)) in e.iter_mut().zip(&h) {
                acc.0 += estimate(r, p);
                acc.1 += estimate(w, p);
            }
        }
        let end_ms = self.collector.slot_end_ms(slot.saturating_sub(1));
        let day_s = (end_ms / 1000) % 86_400;
        let clock = [
            (day_s / 3600) as f64,
            ((day_s / 60) % 60) as f64,
            (day_s % 60) as f64,
        ];
        let mut m = Memo {
            slot,
            counts,
            clock,
            idle_hot: 0,
            done: Mutex::new(BTreeMap::new()),
            rows: Mutex::new(FxHashMap::default()),
        };
        let idle = self.row(&m, None, [0.0; 3]);
        m.idle_hot = self
            .model
            .models()
            .iter()
            .enumerate()
            .filter(|(_, model)| model.predict(&idle) >= self.model.meta().threshold)
            .fold(0u64, |b, (i, _)| b | (1 << i));
        m
    }

    /// The model ranges covering the key numbers of `span`.
    fn ranges_of(&self, span: Interval) -> std::ops::RangeInclusive<u64> {
        let w = self.model.meta().range_width;
        span.0 / w..=span.1 / w
    }

    /// Runs the models of `mask`'s steps on the ranges of `span` that have not been
    /// through them this slot: ranges read in the feature window, and idle ones whose
    /// precursors were (a range that turns hot after another, §4.2: known only through
    /// its precursors). Returns the model evaluations made.
    fn infer_span(&self, m: &Memo, span: Interval, mask: u64) -> u64 {
        let within = self.ranges_of(span);
        let precursors = &self.model.meta().precursors;
        let announced = precursors
            .range(within.clone())
            .filter(|(r, qs)| {
                !m.counts.contains_key(r) && qs.iter().any(|q| m.counts.contains_key(q))
            })
            .map(|(&r, _)| r);
        let wanted: BTreeSet<u64> = m
            .counts
            .range(within)
            .map(|(&r, _)| r)
            .chain(announced)
            .collect();
        let models = self.model.models();
        let mut done = m.done.lock();
        let mut rows = m.rows.lock();
        let mut evals = 0;
        let missing = |e: Option<&RangeMemo>, step: usize| {
            step < 64 && mask & (1 << step) != 0 && e.is_none_or(|e| e.probs[step].is_nan())
        };
        for range in wanted {
            // A range asked about again in the slot is answered from the memo.
            if !(0..models.len()).any(|step| missing(done.get(&range), step)) {
                continue;
            }
            let (features, rate) = self.features(m, range);
            let e = done.entry(range).or_insert_with(|| RangeMemo {
                probs: vec![f32::NAN; models.len()].into(),
                rate,
            });
            let shared = rows
                .entry(features.iter().map(|f| f.to_bits()).collect())
                .or_insert_with(|| vec![f32::NAN; models.len()].into());
            for (step, model) in models.iter().enumerate() {
                if missing(Some(e), step) {
                    if shared[step].is_nan() {
                        shared[step] = model.predict(&features) as f32;
                        evals += 1;
                    }
                    e.probs[step] = shared[step];
                }
            }
        }
        evals
    }

    /// One range's features and its read rate (an idle range's: its precursors', as it
    /// would be read as they are when it turns hot).
    fn features(&self, m: &Memo, range: u64) -> (Vec<f64>, f64) {
        let counts = m.counts.get(&range);
        let mut pre = [0.0; 3];
        let mut pre_rate: f64 = 0.0;
        for (slot, &q) in pre.iter_mut().zip(self.model.precursors(range)) {
            if let Some(c) = m.counts.get(&q) {
                *slot = c[0].0;
                pre_rate = pre_rate.max(Self::rate(c));
            }
        }
        let rate = counts.map_or(pre_rate, |c| Self::rate(c));
        (self.row(m, counts, pre), rate)
    }

    /// The 18 features of one range (counts, clock, precursors).
    fn row(&self, m: &Memo, counts: Option<&Vec<(f64, f64)>>, pre: [f64; 3]) -> Vec<f64> {
        let n = self.model.meta().history_slots as usize;
        let mut f = Vec::with_capacity(2 * n + 6);
        f.extend((0..n).map(|i| counts.map_or(0.0, |c| c[i].0)));
        f.extend((0..n).map(|i| counts.map_or(0.0, |c| c[i].1)));
        f.extend_from_slice(&m.clock);
        f.extend_from_slice(&pre);
        f
    }

    /// Estimated reads per slot over the feature window.
    fn rate(c: &[(f64, f64)]) -> f64 {
        c.iter().map(|c| c.0).sum::<f64>() / c.len().max(1) as f64
    }

    fn mask(steps: std::ops::Range<usize>) -> u64 {
        steps.filter(|&s| s < 64).fold(0u64, |b, s| b | (1u64 << s))
    }

    /// The ranges of `span` predicted hot in some step of `mask`, with their id.
    fn hot_in<T>(
        &self,
        span: Interval,
        mask: u64,
        f: impl Fn(u64, &RangeMemo) -> T,
    ) -> (u64, Vec<T>) {
        let m = self.memo(span, mask);
        let threshold = self.model.meta().threshold;
        let done = m.done.lock();
        let out = done
            .range(self.ranges_of(span))
            .filter(|(_, h)| h.hot_steps(mask, threshold) != 0)
            .map(|(&r, h)| f(r, h))
            .collect();
        (m.idle_hot, out)
    }

    /// The key-number intervals of the ranges of `span` predicted hot in any step of
    /// `steps` (0-based: step 0 is the next slot), sorted and merged. `None` when the
    /// model calls every idle range hot: then everything is (the caller keeps or warms
    /// all).
    pub fn hot_intervals(
        &self,
        steps: std::ops::Range<usize>,
        span: Interval,
    ) -> Option<Vec<Interval>> {
        let mask = Self::mask(steps);
        let w = self.model.meta().range_width;
        let (idle_hot, ranges) = self.hot_in(span, mask, |r, _| r);
        if idle_hot & mask != 0 {
            return None;
        }
        let mut out: Vec<Interval> = Vec::new();
        for r in ranges {
            let lo = r.saturating_mul(w);
            let hi = lo.saturating_add(w - 1);
            match out.last_mut() {
                Some(last) if last.1.saturating_add(1) >= lo => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        Some(out)
    }

    /// The ranges of `span` predicted hot in any step of `steps`, one interval each
    /// (sorted, disjoint), scored by expected reads: the best step's probability times
    /// the range's read rate over the feature window (an idle range announced by its
    /// precursors: theirs). A ranking, where `hot_intervals` is a set: warming fills its
    /// budget with the best first. Idle ranges with no precursor read have no expected
    /// reads to rank by and are left out even when the model calls them hot.
    pub fn hot_scores(
        &self,
        steps: std::ops::Range<usize>,
        span: Interval,
    ) -> Option<Vec<(Interval, f64)>> {
        let mask = Self::mask(steps);
        let w = self.model.meta().range_width;
        let (_, scored) = self.hot_in(span, mask, |r, h| {
            let lo = r.saturating_mul(w);
            ((lo, lo.saturating_add(w - 1)), h.score(mask))
        });
        Some(scored)
    }

    /// Ranges predicted hot in the next slot, over the whole key space (for tests and
    /// reports).
    pub fn hot_ranges_next(&self) -> Vec<u64> {
        self.hot_in((0, u64::MAX), 1, |r, _| r).1
    }
}
