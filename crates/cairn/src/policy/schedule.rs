//! When Lerp explores and when its learned levels count as converged (RusKey 3.1, 5.2).
//!
//! - A workload shift restarts exploration only once it persists: the lookup share must
//!   stay away from the share exploration last started at for several missions in a row,
//!   so one odd mission (a compaction burst, a scan) does not throw the learned policy
//!   away.
//! - A level has converged once its K (as moved by the critic, exploration or a walk)
//!   has stayed within one step over several trained missions. Converged levels stop
//!   exploring, and only then are their K propagated to the levels that do not learn
//!   (5.2: deeper levels follow level 1 once it has converged).
//!
//! Both rules are ours: the paper restarts exploration on a workload change and
//! propagates after convergence without saying how either is detected.

use std::collections::VecDeque;

/// Detects a workload shift that persists.
#[derive(Clone, Debug, PartialEq)]
pub struct ShiftDetector {
    threshold: f64,
    persist: u32,
    /// The lookup share exploration last (re)started at; `None` before the first mission.
    anchor: Option<f64>,
    /// Missions in a row away from the anchor, all within the threshold of the first of
    /// them: (count, sum of their shares, first share).
    away: (u32, f64, f64),
}

impl ShiftDetector {
    /// A detector for changes of the lookup share above `threshold` lasting `persist`
    /// missions (at least 1).
    pub fn new(threshold: f64, persist: u32) -> Self {
        ShiftDetector {
            threshold,
            persist: persist.max(1),
            anchor: None,
            away: (0, 0.0, 0.0),
        }
    }

    /// Feeds one mission's lookup share; true when a shift has just persisted long
    /// enough (the detector then anchors at the new share).
    pub fn observe(&mut self, read_fraction: f64) -> bool {
        let Some(anchor) = self.anchor else {
            self.anchor = Some(read_fraction);
            return false;
        };
        if (read_fraction - anchor).abs() <= self.threshold {
            self.away = (0, 0.0, 0.0);
            return false;
        }
        let (n, sum, first) = self.away;
        // Missions away in different directions are no one new mix: count from this one.
        self.away = if n > 0 && (read_fraction - first).abs() <= self.threshold {
            (n + 1, sum + read_fraction, first)
        } else {
            (1, read_fraction, read_fraction)
        };
        if self.away.0 < self.persist {
            return false;
        }
        self.anchor = Some(self.away.1 / self.away.0 as f64);
        self.away = (0, 0.0, 0.0);
        true
    }

    /// Forgets the anchor (after pretraining on the simulator's mixes).
    pub fn reset(&mut self) {
        self.anchor = None;
        self.away = (0, 0.0, 0.0);
    }
}

/// Whether a learned level has settled on its K: over the last `after` trained
/// missions its K stayed within one step (a band of two neighbouring values). A noisy
/// critic near the optimum may keep stepping between two neighbours; a band of width one
/// counts that as settled, a walk does not.
#[derive(Clone, Debug, PartialEq)]
pub struct Convergence {
    after: usize,
    recent: VecDeque<usize>,
}

impl Convergence {
    /// Converged after `after` trained missions within one step; `after = 0` counts a
    /// level as converged from the start (propagation every mission, as in tests).
    pub fn new(after: u32) -> Self {
        Convergence {
            after: after as usize,
            recent: VecDeque::with_capacity((after as usize).min(64) + 1),
        }
    }

    /// Feeds the level's K after a mission; `trained` is false while the agent has too
    /// little replay to learn (its moves are then exploration only, and do not count).
    pub fn observe(&mut self, k: usize, trained: bool) {
        if !trained || self.after == 0 {
            return;
        }
        self.recent.push_back(k);
        if self.recent.len() > self.after {
            self.recent.pop_front();
        }
    }

    /// The level has settled.
    pub fn converged(&self) -> bool {
        if self.after == 0 {
            return true;
        }
        let lo = self.recent.iter().min();
        let hi = self.recent.iter().max();
        self.recent.len() == self.after && matches!((lo, hi), (Some(l), Some(h)) if h - l <= 1)
    }

    /// Whether convergence ends exploration (not with `after = 0`, where the level
    /// counts as converged only so that propagation runs every mission).
    pub fn stops_exploring(&self) -> bool {
        self.after > 0 && self.converged()
    }

    /// Starts over (a persistent shift, or a resumed checkpoint).
    pub fn reset(&mut self) {
        self.recent.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shift_restarts_only_once_it_persists() {
        let mut d = ShiftDetector::new(0.15, 3);
        assert!(!d.observe(0.9));
        // One odd mission, then back: no shift.
        assert!(!d.observe(0.1));
        assert!(!d.observe(0.9));
        // Small drift within the threshold: no shift.
        for _ in 0..10 {
            assert!(!d.observe(0.8));
        }
        // A new mix: the third mission in a row away from the anchor is the shift.
        assert!(!d.observe(0.1));
        assert!(!d.observe(0.1));
        assert!(d.observe(0.1));
        // Anchored at the new mix: staying there is no shift.
        for _ in 0..10 {
            assert!(!d.observe(0.1));
        }
        // Away in opposite directions (0.5, then 0.9): no one new mix, no shift yet.
        assert!(!d.observe(0.5));
        assert!(!d.observe(0.9));
        assert!(!d.observe(0.5));
        assert!(!d.observe(0.5));
        // ... until three missions agree.
        assert!(d.observe(0.52));
        d.reset();
        assert!(!d.observe(0.5));
    }

    #[test]
    fn convergence_needs_a_narrow_band_of_trained_missions() {
        let mut c = Convergence::new(3);
        assert!(!c.converged());
        // Untrained missions do not count.
        for _ in 0..5 {
            c.observe(4, false);
        }
        assert!(!c.converged());
        // A walk is not converged; stepping between two neighbours is.
        for k in [1, 3, 5] {
            c.observe(k, true);
            assert!(!c.converged());
        }
        c.observe(5, true);
        assert!(!c.converged());
        c.observe(4, true);
        assert!(c.converged(), "{c:?}");
        assert!(c.stops_exploring());
        c.observe(6, true);
        assert!(!c.converged());
        c.observe(5, true);
        c.observe(5, true);
        c.reset();
        assert!(!c.converged());
        assert!(Convergence::new(0).converged());
        assert!(!Convergence::new(0).stops_exploring());
    }
}
