//! Beyond the paper (issue 31, labelled as such): a prior on K from RusKey's eq. 5 with
//! its constants fitted online from the engine's own counts, to point Lerp's exploration
//! after a shift.
//!
//! Eq. 5 prices a level with run limit K as `gamma K a + (1 - gamma) (T / K) b`: a lookup
//! pays `a` per unit of K (the runs it may probe), an update pays `b` per merge of the
//! T / K it goes through. Per level and mission the counts give both: `a` = the level's
//! read time per lookup per unit of K, `b` = the time merges into it took per update,
//! per T / K. Summed
//! since open (merges into deep levels are rare and lumpy, so a window would mostly be
//! empty), they price any K under any mix, and the K minimising the sum over the levels
//! that follow the learned one is the prior's proposal. It is a direction for
//! exploration only: moves still come from the critic when Lerp does not explore, and
//! rewards from the engine.

use super::tuner::MissionStats;

/// Running fit of eq. 5's constants per level.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostPrior {
    /// Per level (index = level): read time / (lookups x K) numerator and denominator.
    read: Vec<(f64, f64)>,
    /// Per level: merge time / (updates x T / K) numerator and denominator.
    merge: Vec<(f64, f64)>,
}

impl CostPrior {
    /// Adds one mission's counts.
    pub fn observe(&mut self, m: &MissionStats) {
        let t = m.size_ratio.max(1) as f64;
        let n = m.levels.len();
        self.read.resize(n.max(self.read.len()), (0.0, 0.0));
        self.merge.resize(n.max(self.merge.len()), (0.0, 0.0));
        for (i, l) in m.levels.iter().enumerate().skip(1) {
            if m.lookups > 0 && l.runs > 0 {
                let r = &mut self.read[i];
                r.0 += l.read_ns as f64;
                r.1 += m.lookups as f64 * l.k.max(1) as f64;
            }
            // A level counts only once it holds data: before, no merge can reach it,
            // and its zero merge time would dilute `b` for when it fills.
            if m.updates > 0 && (l.runs > 0 || l.bytes > 0) {
                let w = &mut self.merge[i];
                w.0 += l.compaction_ns as f64;
                w.1 += m.updates as f64 * t / l.k.max(1) as f64;
            }
        }
    }

    /// Eq. 5's `(a, b)` of `level`, once both have been seen.
    pub fn constants(&self, level: usize) -> Option<(f64, f64)> {
        let (rn, rd) = *self.read.get(level)?;
        let (wn, wd) = *self.merge.get(level)?;
        (rd > 0.0 && wd > 0.0).then(|| (rn / rd, wn / wd))
    }

    /// The K in 1..=t that minimises eq. 5 summed over `levels` at lookup share `gamma`;
    /// `None` until every level has both constants.
    pub fn best_k(&self, levels: &[usize], gamma: f64, t: usize) -> Option<usize> {
        let consts: Option<Vec<(f64, f64)>> = levels.iter().map(|&l| self.constants(l)).collect();
        let consts = consts?;
        if consts.is_empty() {
            return None;
        }
        let tf = t.max(1) as f64;
        let cost = |k: usize| -> f64 {
            let kf = k as f64;
            consts
                .iter()
                .map(|&(a, b)| gamma * kf * a + (1.0 - gamma) * tf / kf * b)
                .sum()
        };
        (1..=t.max(1)).min_by(|&x, &y| cost(x).total_cmp(&cost(y)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;
    use crate::policy::cost_model::{CostModel, SplitMix64};

    /// Fitted on the simulator's missions, the prior finds the simulator's own optimum
    /// for uniform K (every level the same K, as uniform propagation sets it).
    #[test]
    fn fitted_on_the_simulator_it_finds_its_optimum() {
        let mut model = CostModel::for_options(&Options::default(), 3);
        model.noise = 0.0;
        let mut prior = CostPrior::default();
        let mut rng = SplitMix64(3);
        // Missions at several K and mixes, as exploration would give.
        for (i, k) in [1, 3, 5, 8, 10, 2, 6].iter().enumerate() {
            for gamma in [0.2, 0.5, 0.8] {
                let m = model.mission(i as u64, 10_000, gamma, gamma, &[*k; 3], &mut rng);
                prior.observe(&m);
            }
        }
        for gamma in [0.1, 0.3, 0.5, 0.7, 0.9] {
            let want = (1..=10)
                .min_by(|&a, &b| {
                    model
                        .cost(&[a; 3], gamma)
                        .total_cmp(&model.cost(&[b; 3], gamma))
                })
                .unwrap();
            let got = prior.best_k(&[1, 2, 3], gamma, 10).unwrap();
            assert_eq!(got, want, "gamma {gamma}");
        }
    }

    #[test]
    fn no_proposal_before_both_constants() {
        let mut prior = CostPrior::default();
        assert_eq!(prior.best_k(&[1], 0.5, 10), None);
        let model = CostModel::for_options(&Options::default(), 2);
        let mut m = model.mission(1, 1000, 1.0, 1.0, &[4, 4], &mut SplitMix64(1));
        prior.observe(&m);
        assert_eq!(prior.best_k(&[1], 0.5, 10), None, "no update seen yet");
        m.updates = 500;
        prior.observe(&m);
        assert!(prior.best_k(&[1, 2], 0.5, 10).is_some());
        assert_eq!(prior.best_k(&[1, 3], 0.5, 10), None, "level 3 unseen");
    }
}
