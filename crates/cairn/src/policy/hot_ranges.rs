//! Leaper's inference (§5.2, §6): which key ranges will be read in each of the next k
//! slots, from the collector's counts and the learner's models, memoised per slot.
//!
//! At the first question in a slot, the counts of the last complete slots are read from
//! the collector, summed into the model's range width (a multiple of the collector's),
//! turned into the 18 features of `docs/leaper-formats.md` and passed through the k
//! models; the answers hold until the slot ends. Ranges with an access in the feature
//! window are predicted, and idle ranges whose precursors had one (their own counts are
//! zero, their precursor features are not); any other range has all-zero features, and
//! the model's answer for it is one number, checked once.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::overlap::Interval;
use crate::access::{estimate, RangeCollector};
use crate::learned::leaper_model::LeaperModel;
use crate::{Error, Result};

/// One range predicted hot in some step.
#[derive(Debug)]
struct HotRange {
    /// Coarse range id.
    range: u64,
    /// A bit per step (bit i: hot in slot s + i + 1).
    bits: u64,
    /// Each step's predicted probability.
    probs: Box<[f32]>,
    /// Estimated reads per slot over the feature window.
    rate: f64,
}

impl HotRange {
    /// Expected reads in the best step of `mask`: probability x read rate.
    fn score(&self, mask: u64) -> f64 {
        self.probs
            .iter()
            .enumerate()
            .filter(|&(i, _)| i < 64 && mask & (1 << i) != 0)
            .map(|(_, &p)| f64::from(p) * self.rate)
            .fold(0.0, f64::max)
    }
}

/// Predictions for one slot.
#[derive(Debug)]
struct Memo {
    slot: u64,
    /// Ranges hot in some step, sorted by id.
    hot: Vec<HotRange>,
    /// Whether a range with no recent access is predicted hot at each step (bit mask).
    idle_hot: u64,
}

/// Predicts hot key ranges with one model bundle over one collector.
#[derive(Debug)]
pub struct HotRangePredictor {
    model: Arc<LeaperModel>,
    collector: Arc<RangeCollector>,
    /// Collector ranges per model range.
    ratio: u64,
    memo: Mutex<Option<Arc<Memo>>>,
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

    fn memo(&self) -> Arc<Memo> {
        let slot = self.collector.current_slot();
        let mut g = self.memo.lock();
        if let Some(m) = g.as_ref().filter(|m| m.slot == slot) {
            return m.clone();
        }
        let m = Arc::new(self.predict_slot(slot));
        *g = Some(m.clone());
        m
    }

    fn predict_slot(&self, slot: u64) -> Memo {
        let meta = self.model.meta();
        let n = meta.history_slots as usize;
        let p = self.collector.options().sample_p;
        // Estimated reads and writes per model range and slot (eq. 1 per collector cell).
        let mut agg: HashMap<u64, Vec<(f64, f64)>> = HashMap::new();
        for (range, h) in self.collector.all_history(n) {
            let e = agg
                .entry(range / self.ratio)
                .or_insert_with(|| vec![(0.0, 0.0); n]);
            for (acc, &(r, w)) in e.iter_mut().zip(&h) {
                acc.0 += estimate(r, p);
                acc.1 += estimate(w, p);
            }
        }
        // Time of day at the end of the last complete slot.
        let end_ms = self.collector.slot_end_ms(slot.saturating_sub(1));
        let day_s = (end_ms / 1000) % 86_400;
        let clock = [
            (day_s / 3600) as f64,
            ((day_s / 60) % 60) as f64,
            (day_s % 60) as f64,
        ];
        let row = |counts: Option<&Vec<(f64, f64)>>, pre: [f64; 3]| {
            let mut f = Vec::with_capacity(2 * n + 6);
            f.extend((0..n).map(|i| counts.map_or(0.0, |c| c[i].0)));
            f.extend((0..n).map(|i| counts.map_or(0.0, |c| c[i].1)));
            f.extend_from_slice(&clock);
            f.extend_from_slice(&pre);
            f
        };
        let probs = |f: &[f64]| -> Box<[f32]> {
            self.model
                .models()
                .iter()
                .map(|m| m.predict(f) as f32)
                .collect()
        };
        let bits = |p: &[f32]| {
            p.iter()
                .enumerate()
                .filter(|&(_, &p)| f64::from(p) >= meta.threshold)
                .fold(0u64, |b, (i, _)| b | (1 << i))
        };
        let rate = |c: &Vec<(f64, f64)>| c.iter().map(|c| c.0).sum::<f64>() / n.max(1) as f64;
        // Ranges read in the feature window, and idle ranges whose precursors were (a range
        // that turns hot after another, §4.2: known only through its precursors).
        let announced = meta
            .precursors
            .iter()
            .filter(|(r, qs)| !agg.contains_key(r) && qs.iter().any(|q| agg.contains_key(q)))
            .map(|(&r, _)| r);
        let candidates: Vec<u64> = agg.keys().copied().chain(announced).collect();
        let mut hot: Vec<HotRange> = candidates
            .into_iter()
            .filter_map(|range| {
                let counts = agg.get(&range);
                let mut pre = [0.0; 3];
                let mut pre_rate: f64 = 0.0;
                for (slot, &q) in pre.iter_mut().zip(self.model.precursors(range)) {
                    if let Some(c) = agg.get(&q) {
                        *slot = c[0].0;
                        pre_rate = pre_rate.max(rate(c));
                    }
                }
                let p = probs(&row(counts, pre));
                let b = bits(&p);
                (b != 0).then(|| HotRange {
                    range,
                    bits: b,
                    probs: p,
                    // An idle range would be read as its precursor is when it turns hot.
                    rate: counts.map_or(pre_rate, rate),
                })
            })
            .collect();
        hot.sort_unstable_by_key(|h| h.range);
        Memo {
            slot,
            hot,
            idle_hot: bits(&probs(&row(None, [0.0; 3]))),
        }
    }

    fn mask(steps: std::ops::Range<usize>) -> u64 {
        steps.filter(|&s| s < 64).fold(0u64, |b, s| b | (1u64 << s))
    }

    /// The key-number intervals of the ranges predicted hot in any step of `steps`
    /// (0-based: step 0 is the next slot), sorted and merged. `None` when the model
    /// calls every idle range hot: then everything is (the caller keeps or warms all).
    pub fn hot_intervals(&self, steps: std::ops::Range<usize>) -> Option<Vec<Interval>> {
        let m = self.memo();
        let mask = Self::mask(steps);
        if m.idle_hot & mask != 0 {
            return None;
        }
        let w = self.model.meta().range_width;
        let mut out: Vec<Interval> = Vec::new();
        for h in m.hot.iter().filter(|h| h.bits & mask != 0) {
            let lo = h.range.saturating_mul(w);
            let hi = lo.saturating_add(w - 1);
            match out.last_mut() {
                Some(last) if last.1.saturating_add(1) >= lo => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        Some(out)
    }

    /// The ranges predicted hot in any step of `steps`, one interval each (sorted,
    /// disjoint), scored by expected reads: the best step's probability times the
    /// range's read rate over the feature window (an idle range announced by its
    /// precursors: theirs). A ranking, where `hot_intervals` is a set: warming fills its
    /// budget with the best first. Idle ranges with no precursor read have no expected
    /// reads to rank by and are left out even when the model calls them hot.
    pub fn hot_scores(&self, steps: std::ops::Range<usize>) -> Option<Vec<(Interval, f64)>> {
        let m = self.memo();
        let mask = Self::mask(steps);
        let w = self.model.meta().range_width;
        Some(
            m.hot
                .iter()
                .filter(|h| h.bits & mask != 0)
                .map(|h| {
                    let lo = h.range.saturating_mul(w);
                    ((lo, lo.saturating_add(w - 1)), h.score(mask))
                })
                .collect(),
        )
    }

    /// Ranges predicted hot in the next slot (for tests and reports).
    pub fn hot_ranges_next(&self) -> Vec<u64> {
        self.memo()
            .hot
            .iter()
            .filter(|h| h.bits & 1 != 0)
            .map(|h| h.range)
            .collect()
    }
}
