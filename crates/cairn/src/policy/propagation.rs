//! RusKey's policy propagation (5.2): deeper levels get too few missions' worth of
//! feedback to learn, so their K is derived from the levels that do learn.
//!
//! - Uniform bloom bits (5.2.1): every level has the same read/write cost ratio, so level
//!   1's learned K is copied down.
//! - Monkey bloom allocation (5.2.2): levels 1 and 2 learn, and Lemma 5.1 gives the rest:
//!   1/K_{i+1} = sqrt(1/K_i^2 + T (1/K_i^2 - 1/K_{i-1}^2)), rounded to the nearest valid K.

use serde::{Deserialize, Serialize};

/// How learned run limits reach the levels that do not learn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Propagation {
    /// Every level with data learns on its own (RusKey's "brute force" ablation).
    None,
    /// Level 1 learns; its K is copied to every deeper level (uniform bloom bits).
    #[default]
    Uniform,
    /// Levels 1 and 2 learn; deeper levels follow Lemma 5.1 (Monkey bloom allocation).
    Monkey,
}

impl Propagation {
    /// Levels whose K an agent learns, among levels 1..num_levels, given the deepest level
    /// holding data.
    pub fn learned_levels(self, num_levels: usize, deepest: usize) -> Vec<usize> {
        let last = num_levels.saturating_sub(1);
        match self {
            Propagation::Uniform => (1..=last.min(1)).collect(),
            Propagation::Monkey => (1..=last.min(2)).collect(),
            Propagation::None => (1..=deepest.clamp(1, last.max(1)).min(last)).collect(),
        }
    }
}

/// K_{i+1} from K_{i-1} and K_i by Lemma 5.1 (Monkey), clamped to [1, T] and rounded to
/// the nearest integer. A K_i above K_{i-1} (outside the lemma's premise K_i <= K_{i-1})
/// makes the bracket smaller than 1/K_i^2; a bracket at or below 1/T^2 gives T.
pub fn monkey_next(k_prev: usize, k: usize, t: usize) -> usize {
    let t = t.max(1);
    let (kp, ki) = (k_prev.max(1) as f64, k.max(1) as f64);
    let inv2 = 1.0 / (ki * ki) + t as f64 * (1.0 / (ki * ki) - 1.0 / (kp * kp));
    let floor = 1.0 / (t as f64 * t as f64);
    if inv2 <= floor {
        return t;
    }
    let next = 1.0 / inv2.sqrt();
    (next.round() as usize).clamp(1, t)
}

/// The run limits of levels 1..num_levels (index 0 is level 1) given the learned ones:
/// `learned[j]` is the K of level j + 1 for the levels [`Propagation::learned_levels`]
/// names. Levels past the learned ones follow the propagation rule (`None`: keep
/// `current`).
pub fn propagate(mode: Propagation, learned: &[usize], current: &[usize], t: usize) -> Vec<usize> {
    let n = current.len();
    let mut out: Vec<usize> = current.to_vec();
    for (i, &k) in learned.iter().enumerate().take(n) {
        out[i] = k.clamp(1, t.max(1));
    }
    match mode {
        Propagation::None => {}
        Propagation::Uniform => {
            if let Some(&k1) = out.first() {
                for k in out.iter_mut().skip(1) {
                    *k = k1;
                }
            }
        }
        Propagation::Monkey => {
            if n >= 3 {
                for i in 2..n {
                    out[i] = monkey_next(out[i - 2], out[i - 1], t);
                }
            } else if n == 2 && learned.len() < 2 {
                out[1] = out[0];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lemma_on_the_papers_example() {
        // T = 10, K1 = 9, K2 = 7 gives K3 = 3 and K4 = 1.
        assert_eq!(monkey_next(9, 7, 10), 3);
        assert_eq!(monkey_next(7, 3, 10), 1);
        assert_eq!(
            propagate(Propagation::Monkey, &[9, 7], &[1, 1, 1, 1, 1], 10),
            vec![9, 7, 3, 1, 1]
        );
    }

    #[test]
    fn lemma_edges_stay_valid() {
        // Equal K: the bracket is 1/K^2, so K stays.
        assert_eq!(monkey_next(4, 4, 10), 4);
        // K grows with depth (outside the premise): clamped to T.
        assert_eq!(monkey_next(1, 10, 10), 10);
        assert_eq!(monkey_next(2, 3, 10), 10);
        for kp in 1..=10 {
            for k in 1..=10 {
                let n = monkey_next(kp, k, 10);
                assert!((1..=10).contains(&n), "{kp} {k} -> {n}");
            }
        }
    }

    #[test]
    fn uniform_copies_level_one() {
        assert_eq!(
            propagate(Propagation::Uniform, &[4], &[1, 2, 3, 4], 10),
            vec![4, 4, 4, 4]
        );
        assert_eq!(
            propagate(Propagation::None, &[4, 6], &[1, 2, 3], 10),
            vec![4, 6, 3]
        );
        assert_eq!(
            propagate(Propagation::Uniform, &[40], &[1, 1], 10),
            vec![10, 10]
        );
    }

    #[test]
    fn learned_levels_by_mode() {
        assert_eq!(Propagation::Uniform.learned_levels(7, 4), vec![1]);
        assert_eq!(Propagation::Monkey.learned_levels(7, 4), vec![1, 2]);
        assert_eq!(Propagation::None.learned_levels(7, 4), vec![1, 2, 3, 4]);
        assert_eq!(Propagation::None.learned_levels(7, 0), vec![1]);
        assert_eq!(Propagation::Monkey.learned_levels(2, 1), vec![1]);
    }
}
