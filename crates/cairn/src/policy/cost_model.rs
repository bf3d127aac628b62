//! A cost-model simulator of an FLSM-tree, no disk: the expected time per operation of
//! each level for a vector of run limits K_i and a lookup share gamma, by RusKey's
//! Lemma 5.1 proof (eq. 5, after Dostoevsky and Monkey):
//!
//! level i = gamma * K_i * (f_i * I_r + c_r)                    (zero-result lookups)
//!         + (1 - gamma) * (T / K_i) * (E / B * (I_r + I_w) + c_w)  (updates' merges)
//!
//! with f_i the bloom filter's false-positive rate at the level's bits per key. It emits
//! [`MissionStats`] like the engine's, so Lerp is pretrained (and tested) on the same
//! state and reward code it runs on in the engine.

use super::tuner::{LevelMission, MissionStats};
use crate::options::Options;

/// The seeded generator of the simulations (shared with the DDPG agent).
pub use crate::learned::ddpg::SplitMix64;

/// Constants of the cost model, in nanoseconds and bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct CostModel {
    /// Size ratio T.
    pub size_ratio: usize,
    /// Bloom bits per key of levels 1.. (index 0 is level 1).
    pub bloom_bits: Vec<f64>,
    /// I_r: time of one block read.
    pub read_io_ns: f64,
    /// I_w: time of one block write.
    pub write_io_ns: f64,
    /// c_r: CPU time to probe one run's metadata (bloom filter, index).
    pub probe_ns: f64,
    /// c_w: CPU time one entry costs a merge.
    pub merge_ns: f64,
    /// E: bytes per entry.
    pub entry_bytes: f64,
    /// B: bytes per block.
    pub block_bytes: f64,
    /// Time per operation outside the levels (memtable, write-ahead log).
    pub base_ns: f64,
    /// Multiplicative noise on each mission's times, uniform in [1 - noise, 1 + noise].
    pub noise: f64,
    /// Capacity of level 1 in bytes (for the fill and capacity statistics).
    pub level1_bytes: u64,
}

impl CostModel {
    /// Constants for a database opened with `opts`, with `levels` levels below level 0,
    /// measured roughly on cairn with the data in the page cache (a block read and decode
    /// ~2 us, a bloom and index probe ~150 ns, an entry merged ~300 ns).
    pub fn for_options(opts: &Options, levels: usize) -> Self {
        let deepest = levels.max(1);
        CostModel {
            size_ratio: opts.size_ratio,
            bloom_bits: (1..=deepest)
                .map(|l| opts.bloom_bits_for_level(l, deepest))
                .collect(),
            read_io_ns: 2000.0,
            write_io_ns: 1000.0,
            probe_ns: 150.0,
            merge_ns: 300.0,
            entry_bytes: 116.0,
            block_bytes: opts.block_size as f64,
            base_ns: 1000.0,
            noise: 0.03,
            level1_bytes: opts.level1_bytes,
        }
    }

    /// Levels below level 0.
    pub fn levels(&self) -> usize {
        self.bloom_bits.len()
    }

    fn fpr(bits: f64) -> f64 {
        (-bits * std::f64::consts::LN_2.powi(2)).exp().min(1.0)
    }

    /// Expected (lookup, update) time per operation at `level` (>= 1) with run limit `k`
    /// and lookup share `gamma`.
    pub fn level_cost(&self, level: usize, k: usize, gamma: f64) -> (f64, f64) {
        let bits = self
            .bloom_bits
            .get(level.saturating_sub(1))
            .copied()
            .unwrap_or(0.0);
        let k = k.clamp(1, self.size_ratio.max(1)) as f64;
        let t = self.size_ratio as f64;
        let read = gamma * k * (Self::fpr(bits) * self.read_io_ns + self.probe_ns);
        let write = (1.0 - gamma)
            * (t / k)
            * (self.entry_bytes / self.block_bytes * (self.read_io_ns + self.write_io_ns)
                + self.merge_ns);
        (read, write)
    }

    /// The K in 1..=T minimising the level's cost.
    pub fn optimum(&self, level: usize, gamma: f64) -> usize {
        (1..=self.size_ratio.max(1))
            .min_by(|&a, &b| {
                let (ra, wa) = self.level_cost(level, a, gamma);
                let (rb, wb) = self.level_cost(level, b, gamma);
                (ra + wa).total_cmp(&(rb + wb))
            })
            .unwrap_or(1)
    }

    /// Expected time per operation of the whole tree.
    pub fn cost(&self, ks: &[usize], gamma: f64) -> f64 {
        self.base_ns
            + ks.iter()
                .enumerate()
                .map(|(i, &k)| {
                    let (r, w) = self.level_cost(i + 1, k, gamma);
                    r + w
                })
                .sum::<f64>()
    }

    /// A simulated mission of `ops` operations with lookup share `gamma` on a tree whose
    /// levels 1.. have run limits `ks` (index 0 is level 1). `rng` draws the noise.
    pub fn mission(
        &self,
        number: u64,
        ops: u64,
        gamma: f64,
        prev_gamma: f64,
        ks: &[usize],
        rng: &mut SplitMix64,
    ) -> MissionStats {
        let ops_f = ops.max(1) as f64;
        let lookups = (gamma * ops_f).round() as u64;
        let updates = ops.saturating_sub(lookups);
        let mut jitter = || 1.0 + self.noise * (2.0 * rng.next_f64() - 1.0);
        let mut levels = vec![LevelMission::default()];
        let mut total = self.base_ns * ops_f * jitter();
        let mut cap = self.level1_bytes;
        for (i, &k) in ks.iter().enumerate() {
            let (r, w) = self.level_cost(i + 1, k, gamma);
            let (read_ns, write_ns) = (r * ops_f * jitter(), w * ops_f * jitter());
            total += read_ns + write_ns;
            let written =
                (1.0 - gamma) * ops_f * self.entry_bytes * self.size_ratio as f64 / k.max(1) as f64;
            levels.push(LevelMission {
                k,
                runs: k.div_ceil(2).max(1),
                bytes: cap / 2,
                capacity: cap,
                lookups,
                read_ios: (lookups as f64 * k as f64 * Self::fpr(self.bloom_bits[i])) as u64,
                write_bytes: written as u64,
                write_ios: (written / self.block_bytes) as u64,
                read_ns: read_ns as u64,
                compaction_ns: write_ns as u64,
            });
            cap = cap.saturating_mul(self.size_ratio as u64);
        }
        MissionStats {
            mission: number,
            lookups,
            updates,
            user_bytes: (updates as f64 * self.entry_bytes) as u64,
            op_ns: total as u64,
            wall_ns: total as u64,
            prev_read_fraction: prev_gamma,
            size_ratio: self.size_ratio,
            levels,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::BloomAllocation;

    #[test]
    fn optimum_moves_from_leveling_to_tiering_as_updates_grow() {
        let m = CostModel::for_options(&Options::default(), 4);
        let ks: Vec<usize> = [0.9, 0.7, 0.5, 0.3, 0.1]
            .iter()
            .map(|&g| m.optimum(1, g))
            .collect();
        assert!(ks.windows(2).all(|w| w[0] <= w[1]), "{ks:?}");
        assert!(ks[0] <= 2, "{ks:?}");
        assert_eq!(ks[4], 10, "{ks:?}");
        assert!((3..=7).contains(&ks[2]), "{ks:?}");
        // The whole-tree cost agrees: the read-heavy optimum beats tiering there, and
        // tiering beats leveling when writes dominate.
        assert!(m.cost(&[1; 4], 0.9) < m.cost(&[10; 4], 0.9));
        assert!(m.cost(&[10; 4], 0.1) < m.cost(&[1; 4], 0.1));
    }

    #[test]
    fn monkey_optimum_gets_lazier_with_depth() {
        let o = Options {
            bloom_allocation: BloomAllocation::Monkey,
            ..Options::default()
        };
        let m = CostModel::for_options(&o, 4);
        let ks: Vec<usize> = (1..=4).map(|l| m.optimum(l, 0.5)).collect();
        assert!(ks.windows(2).all(|w| w[0] >= w[1]), "{ks:?}");
    }

    /// The per-level optimum the simulator reports is the best K vector by brute force
    /// over every combination of its own whole-tree cost, for uniform and Monkey blooms
    /// and every mix.
    #[test]
    fn per_level_optimum_matches_brute_force() {
        for alloc in [BloomAllocation::Uniform, BloomAllocation::Monkey] {
            let o = Options {
                bloom_allocation: alloc,
                ..Options::default()
            };
            let mut m = CostModel::for_options(&o, 3);
            m.entry_bytes = 1024.0;
            let t = m.size_ratio;
            for gamma in [0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95] {
                let mut best = (f64::INFINITY, vec![]);
                for a in 1..=t {
                    for b in 1..=t {
                        for c in 1..=t {
                            let cost = m.cost(&[a, b, c], gamma);
                            if cost < best.0 {
                                best = (cost, vec![a, b, c]);
                            }
                        }
                    }
                }
                let opt: Vec<usize> = (1..=3).map(|l| m.optimum(l, gamma)).collect();
                let c = m.cost(&opt, gamma);
                assert!(
                    (c - best.0).abs() <= 1e-9 * best.0,
                    "{alloc:?} gamma {gamma}: {opt:?} ({c}) vs brute force {:?} ({})",
                    best.1,
                    best.0
                );
            }
        }
    }

    #[test]
    fn missions_carry_the_model_times() {
        let mut m = CostModel::for_options(&Options::default(), 3);
        m.noise = 0.0;
        let mut rng = SplitMix64(1);
        let s = m.mission(1, 10_000, 0.5, 0.5, &[1, 5, 10], &mut rng);
        assert_eq!(s.ops(), 10_000);
        assert_eq!(s.levels.len(), 4);
        let expect = m.cost(&[1, 5, 10], 0.5);
        assert!((s.end_to_end_ns() - expect).abs() / expect < 1e-6);
        let (r, w) = m.level_cost(2, 5, 0.5);
        assert!((s.level_ns(2) - (r + w)).abs() / (r + w) < 1e-3);
    }
}
