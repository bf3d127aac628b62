//! Bourbon's cost-benefit analyzer (CBA): learn a table only when the lookup time its
//! model will save over the table's remaining life exceeds the time spent learning it.
//!
//! Inputs are collected online (see `db/learner.rs`): per level, the mean time of a
//! lookup on the baseline (fence) path and on the model path, measured on sampled lookups;
//! per table, the internal lookups it served that reached its index (bloom negatives never
//! reach an index and gain nothing); the learning cost per entry measured on earlier
//! learnings; and the lifetimes of tables of the same level that died recently.
//!
//! * cost = `learn_ns_per_entry * entries`
//! * benefit = `(fence_ns - model_ns) * rate * remaining`, where `rate` = lookups / age
//!   and `remaining` is the expected remaining life.
//! * remaining = `max(expected_life - age, age)`: a table that outlived its level's
//!   expected lifetime is expected to live about as long again (and with no history, the
//!   same). Lower levels live longer (guideline 1); busy upper-level tables have a high
//!   rate (guideline 3); both enter the product, so neither is neglected.

use std::time::Duration;

/// What the analyzer knows about one table and its level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CbaInput {
    /// Entries in the table (learning is linear in them).
    pub entries: u64,
    /// Time since the table became readable.
    pub age: Duration,
    /// Lookups that reached the table's index so far (positive and negative).
    pub lookups: u64,
    /// Mean lifetime of recently dead tables of the same level, if any died.
    pub expected_life: Option<Duration>,
    /// Mean baseline-path lookup time at this level, in nanoseconds.
    pub fence_ns: f64,
    /// Mean model-path lookup time at this level, in nanoseconds.
    pub model_ns: f64,
    /// Learning time per entry, in nanoseconds.
    pub learn_ns_per_entry: f64,
}

/// The analyzer's estimate for one table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CbaEstimate {
    /// Estimated learning time, nanoseconds.
    pub cost_ns: f64,
    /// Estimated lookup time saved over the remaining life, nanoseconds.
    pub benefit_ns: f64,
}

impl CbaEstimate {
    /// Whether learning pays.
    pub fn learn(&self) -> bool {
        self.benefit_ns > self.cost_ns
    }
}

/// Expected remaining life of a table of age `age`.
pub fn remaining_life(age: Duration, expected_life: Option<Duration>) -> Duration {
    match expected_life {
        Some(l) => l.saturating_sub(age).max(age),
        None => age,
    }
}

/// Cost and benefit of learning a table (pure: unit-tested on known cases).
pub fn estimate(i: &CbaInput) -> CbaEstimate {
    let cost_ns = i.learn_ns_per_entry.max(0.0) * i.entries as f64;
    let gain = i.fence_ns - i.model_ns;
    let age = i.age.as_secs_f64();
    let benefit_ns = if gain <= 0.0 || age <= 0.0 || !gain.is_finite() {
        0.0
    } else {
        let rate = i.lookups as f64 / age;
        rate * remaining_life(i.age, i.expected_life).as_secs_f64() * gain
    };
    CbaEstimate {
        cost_ns,
        benefit_ns,
    }
}

/// The learning cost per entry, from the learnings so far: their time over their entries,
/// starting from a prior worth [`LearnCost::PRIOR_ENTRIES`] entries, each sum decayed by
/// [`LearnCost::DECAY`] per learning so that recent ones (the machine's present load) weigh
/// most. Weighing by entries matters: learning a table has a fixed part, so a 4-entry
/// table took 2.3 us an entry where 60,000-entry ones take about 45 ns, and a moving mean
/// of per-table ratios that began with a tiny table priced every large one out (at 10M
/// records, 1 of 166 tables learned).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LearnCost {
    ns: f64,
    entries: f64,
}

impl LearnCost {
    /// Weight kept by the earlier learnings at each new one.
    pub const DECAY: f64 = 0.8;
    /// The prior counts as a learning of this many entries.
    pub const PRIOR_ENTRIES: f64 = 10_000.0;

    /// No learning yet: `ns_per_entry`, as if learned over [`Self::PRIOR_ENTRIES`] entries.
    pub fn with_prior(ns_per_entry: f64) -> Self {
        LearnCost {
            ns: ns_per_entry * Self::PRIOR_ENTRIES,
            entries: Self::PRIOR_ENTRIES,
        }
    }

    /// Records one learning of `entries` entries that took `ns` nanoseconds.
    pub fn record(&mut self, ns: u64, entries: u64) {
        self.ns = Self::DECAY * self.ns + ns as f64;
        self.entries = Self::DECAY * self.entries + entries as f64;
    }

    /// Nanoseconds per entry.
    pub fn per_entry(&self) -> f64 {
        self.ns / self.entries.max(f64::MIN_POSITIVE)
    }
}

/// Sampled lookups on one path (fence or model) at one level, or summed over levels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathSamples {
    /// Their total time, nanoseconds.
    pub ns: u64,
    /// How many.
    pub n: u64,
}

impl PathSamples {
    fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.ns as f64 / self.n as f64)
    }

    /// The sum of two sets of samples.
    pub fn plus(self, o: PathSamples) -> PathSamples {
        PathSamples {
            ns: self.ns.saturating_add(o.ns),
            n: self.n.saturating_add(o.n),
        }
    }
}

/// Model-path samples the analyzer needs before it trusts their mean. One model's first
/// few lookups are a poor estimate of every model's: at 10M records, 7 samples of one
/// small table's model (4.1 us against the fence path's 4.3 us) priced every other
/// table's gain at a twentieth of its size, and 1 of 167 tables was learned.
pub const MIN_MODEL_SAMPLES: u64 = 32;

/// The fence-path and model-path lookup times the analyzer prices a table of a level at:
/// the level's fence time (else every level's), times the model-to-fence ratio of the
/// level (else of every level; each needing [`MIN_MODEL_SAMPLES`] model samples), else
/// `prior_ratio`. A ratio carries over between levels where an absolute time would not
/// (deeper levels search more tables). `None` before any fence-path sample.
pub fn path_times(
    level: (PathSamples, PathSamples),
    all: (PathSamples, PathSamples),
    prior_ratio: f64,
) -> Option<(f64, f64)> {
    let fence = level.0.mean().or(all.0.mean())?;
    let ratio = |(f, m): (PathSamples, PathSamples)| {
        (m.n >= MIN_MODEL_SAMPLES)
            .then(|| Some(m.mean()? / f.mean()?))
            .flatten()
    };
    let r = ratio(level).or_else(|| ratio(all)).unwrap_or(prior_ratio);
    Some((fence, fence * r))
}

/// Whether to learn the table now.
pub fn should_learn(i: &CbaInput) -> bool {
    estimate(i).learn()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> CbaInput {
        CbaInput {
            entries: 100_000,
            age: Duration::from_millis(100),
            lookups: 1_000,
            expected_life: None,
            fence_ns: 400.0,
            model_ns: 250.0,
            learn_ns_per_entry: 50.0,
        }
    }

    #[test]
    fn busy_table_is_learned_idle_one_is_not() {
        // 1000 lookups in 100 ms, as long again to live: 1000 * 150 ns = 150 us < 5 ms.
        assert!(!should_learn(&base()));
        // 100k lookups in 100 ms: 15 ms saved > 5 ms.
        assert!(should_learn(&CbaInput {
            lookups: 100_000,
            ..base()
        }));
        assert!(!should_learn(&CbaInput {
            lookups: 0,
            ..base()
        }));
    }

    #[test]
    fn long_expected_life_tips_the_balance() {
        // Same lookup rate (10k/s); a level whose tables live 10 s: 10k/s * 9.9 s * 150 ns.
        let i = CbaInput {
            expected_life: Some(Duration::from_secs(10)),
            ..base()
        };
        let e = estimate(&i);
        assert!((e.benefit_ns - 10_000.0 * 9.9 * 150.0).abs() < 1.0, "{e:?}");
        assert!(e.learn());
        // Short-lived level (200 ms): remaining max(100 ms, 100 ms) -> not worth it.
        assert!(!should_learn(&CbaInput {
            expected_life: Some(Duration::from_millis(200)),
            ..base()
        }));
    }

    #[test]
    fn no_gain_no_learning() {
        for model_ns in [400.0, 500.0, f64::NAN] {
            let i = CbaInput {
                lookups: u64::MAX / 2,
                model_ns,
                ..base()
            };
            assert!(!should_learn(&i), "model_ns {model_ns}");
        }
        assert!(!should_learn(&CbaInput {
            age: Duration::ZERO,
            lookups: 10,
            ..base()
        }));
    }

    #[test]
    fn cost_grows_with_table_size() {
        let busy = CbaInput {
            lookups: 100_000,
            ..base()
        };
        assert!(should_learn(&busy));
        assert!(!should_learn(&CbaInput {
            entries: 1_000_000,
            ..busy
        }));
        assert_eq!(estimate(&busy).cost_ns, 5_000_000.0);
    }

    #[test]
    fn learning_cost_is_weighed_by_entries() {
        let mut c = LearnCost::with_prior(100.0);
        assert_eq!(c.per_entry(), 100.0);
        // A tiny table, mostly the fixed part (2.3 us an entry), barely moves the prior.
        c.record(9_143, 4);
        assert!((100.0..102.0).contains(&c.per_entry()), "{}", c.per_entry());
        c.record(2_700_000, 60_000); // 45 ns an entry
        c.record(84_000, 200); // 420 ns an entry
        let per = c.per_entry();
        // By entries it stays near the large table's 45 (the mean of ratios: ~800).
        assert!((45.0..60.0).contains(&per), "{per}");
        // Old learnings fade: after many at 90 ns an entry, the cost follows.
        for _ in 0..40 {
            c.record(5_400_000, 60_000);
        }
        let now = c.per_entry();
        assert!((now - 90.0).abs() < 0.1, "{now}");
    }

    #[test]
    fn a_few_model_samples_do_not_price_every_level() {
        let s = |ns_each: u64, n: u64| PathSamples { ns: ns_each * n, n };
        // Level 3 has only fence samples; level 1's one small model gave 7 slow samples.
        let level3 = (s(4_300, 600), PathSamples::default());
        let all = (s(4_330, 700), s(4_126, 7));
        let (fence, model) = path_times(level3, all, 0.5).unwrap();
        assert_eq!((fence, model), (4_300.0, 2_150.0)); // the prior ratio, not 4.1 us
                                                        // With enough model samples anywhere, their ratio carries over.
        let all = (s(4_000, 700), s(1_600, 64));
        let (fence, model) = path_times(level3, all, 0.5).unwrap();
        assert!((model / fence - 0.4).abs() < 1e-9, "{model}");
        // The level's own ratio comes first.
        let level3 = (s(4_300, 600), s(1_290, 40));
        let (_, model) = path_times(level3, all, 0.5).unwrap();
        assert!((model - 1_290.0).abs() < 1e-9, "{model}");
        // No fence sample anywhere: nothing to price.
        assert_eq!(
            path_times(Default::default(), Default::default(), 0.5),
            None
        );
    }

    #[test]
    fn remaining_life_rules() {
        let s = Duration::from_secs;
        assert_eq!(remaining_life(s(1), None), s(1));
        assert_eq!(remaining_life(s(1), Some(s(10))), s(9));
        assert_eq!(remaining_life(s(8), Some(s(10))), s(8));
        assert_eq!(remaining_life(s(20), Some(s(10))), s(20));
    }
}
