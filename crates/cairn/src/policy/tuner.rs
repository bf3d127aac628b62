//! The compaction-policy seam (RusKey 3, 5): after every mission of M operations a tuner
//! reads the mission's statistics and may change the run limit K_i of levels. RusKey's
//! Lerp ([`super::lerp`]) and the greedy-threshold baseline of RusKey 7 ([`GreedyTuner`])
//! implement it; the static baselines (K=1, K=5, K=T, Lazy-Leveling) are presets with no
//! tuner. A tuner is advisory: K moves the shape of the tree, never an answer.

use serde::{Deserialize, Serialize};

use super::lerp::LerpParams;
use crate::options::Transition;
use crate::Result;

/// Which tuner runs after each mission.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum TunerPolicy {
    /// No tuner: K_i stays as configured (the static baselines).
    #[default]
    Static,
    /// RusKey 7 (Fig. 12): a level whose share of lookups among its lookups and the
    /// mission's updates is below `h_bottom` gets K+1, above `h_top` K-1.
    Greedy {
        /// Lookup share under which the level is treated as write-heavy.
        h_bottom: f64,
        /// Lookup share over which the level is treated as read-heavy.
        h_top: f64,
    },
    /// RusKey's Lerp: a DDPG agent per level, with policy propagation.
    Lerp(LerpParams),
}

/// Options of the compaction-policy tuner ([`Options::tuner`](crate::Options)).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TunerOptions {
    /// The tuner.
    pub policy: TunerPolicy,
    /// Operations (point reads, written entries, iterators) per mission (RusKey 7: 50,000).
    pub mission_ops: u64,
    /// How a change of K takes effect (RusKey 4.2: flexible): the tuner's changes, and
    /// those a tool makes on the user's behalf with this database's options (e.g.
    /// cairn-bench's `--set-k-at`, RusKey's Fig. 10).
    pub transition: Transition,
    /// Keep the tuner's learned state in the database directory (file `TUNER`) every
    /// `checkpoint_every` missions and at close, and resume from it at open.
    pub checkpoint: bool,
    /// Missions between checkpoints.
    pub checkpoint_every: u64,
}

impl Default for TunerOptions {
    fn default() -> Self {
        TunerOptions {
            policy: TunerPolicy::Static,
            mission_ops: 50_000,
            transition: Transition::Flexible,
            checkpoint: true,
            checkpoint_every: 20,
        }
    }
}

impl TunerOptions {
    pub(crate) fn validate(&self) -> std::result::Result<(), String> {
        if self.mission_ops == 0 {
            return Err("tuner.mission_ops must be at least 1".into());
        }
        if self.checkpoint_every == 0 {
            return Err("tuner.checkpoint_every must be at least 1".into());
        }
        match &self.policy {
            TunerPolicy::Static => Ok(()),
            TunerPolicy::Greedy { h_bottom, h_top } => {
                if !(0.0..=1.0).contains(h_bottom)
                    || !(0.0..=1.0).contains(h_top)
                    || h_bottom > h_top
                {
                    return Err(format!(
                        "greedy thresholds must satisfy 0 <= h_bottom <= h_top <= 1, got {h_bottom}, {h_top}"
                    ));
                }
                Ok(())
            }
            TunerPolicy::Lerp(p) if cfg!(feature = "ruskey") => p.validate(),
            TunerPolicy::Lerp(_) => Err("RusKey's learned tuner (Lerp) needs cairn built with \
                                         its `ruskey` feature (candle), which this build \
                                         leaves out"
                .into()),
        }
    }
}

/// What a mission did at one level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelMission {
    /// Run limit K_i at the end of the mission.
    pub k: usize,
    /// Runs in the level.
    pub runs: usize,
    /// Bytes in the level.
    pub bytes: u64,
    /// Capacity C_i (0 for level 0).
    pub capacity: u64,
    /// Point reads that reached the level.
    pub lookups: u64,
    /// Storage reads of the level's tables by reads (not compactions).
    pub read_ios: u64,
    /// Bytes written into the level by flushes and compactions.
    pub write_bytes: u64,
    /// Storage writes into the level.
    pub write_ios: u64,
    /// Time reads spent in the level, nanoseconds.
    pub read_ns: u64,
    /// Time flushes or compactions spent writing into the level, nanoseconds.
    pub compaction_ns: u64,
}

/// The statistics of one mission (RusKey 3.1, 5.1.1), per level and in all.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MissionStats {
    /// Mission number, from 1.
    pub mission: u64,
    /// Point reads and iterators (lookups).
    pub lookups: u64,
    /// Entries written (updates).
    pub updates: u64,
    /// User bytes written.
    pub user_bytes: u64,
    /// Sum of the foreground operations' latencies, nanoseconds.
    pub op_ns: u64,
    /// Wall-clock time of the mission, nanoseconds.
    pub wall_ns: u64,
    /// Lookup share of the previous mission (its read/write mix).
    pub prev_read_fraction: f64,
    /// Size ratio T.
    pub size_ratio: usize,
    /// Per level, index = level number.
    pub levels: Vec<LevelMission>,
}

impl MissionStats {
    /// Operations in the mission (at least 1).
    pub fn ops(&self) -> u64 {
        (self.lookups + self.updates).max(1)
    }

    /// Lookups per operation.
    pub fn read_fraction(&self) -> f64 {
        self.lookups as f64 / self.ops() as f64
    }

    /// End-to-end latency t': the mean latency of the mission's operations, nanoseconds.
    pub fn end_to_end_ns(&self) -> f64 {
        self.op_ns as f64 / self.ops() as f64
    }

    /// Level latency t_i: time in the level's reads and in flushes or compactions into
    /// it, per operation of the mission, nanoseconds.
    pub fn level_ns(&self, level: usize) -> f64 {
        self.levels.get(level).map_or(0.0, |l| {
            (l.read_ns + l.compaction_ns) as f64 / self.ops() as f64
        })
    }

    /// The deepest level holding data (0 if none below level 0).
    pub fn deepest(&self) -> usize {
        self.levels
            .iter()
            .rposition(|l| l.bytes > 0 || l.runs > 0)
            .unwrap_or(0)
    }
}

/// A tuner: the policy that sets K_i between missions.
pub trait CompactionTuner: Send {
    /// Name for stats and logs.
    fn name(&self) -> &'static str;
    /// The run limits to set after mission `m`, as `(level, K)` pairs (levels >= 1, K in
    /// 1..=T); the caller applies those that differ from the current K.
    fn decide(&mut self, m: &MissionStats) -> Result<Vec<(usize, usize)>>;
    /// The learned state to checkpoint, if any.
    fn save(&self) -> Option<Vec<u8>> {
        None
    }
}

/// RusKey 7's greedy baseline: per level, the share of lookups among the lookups that
/// reached the level and the mission's updates; below `h_bottom` the level is treated as
/// write-heavy (K+1), above `h_top` as read-heavy (K-1).
pub struct GreedyTuner {
    h_bottom: f64,
    h_top: f64,
}

impl GreedyTuner {
    /// A greedy tuner with thresholds in [0, 1].
    pub fn new(h_bottom: f64, h_top: f64) -> Self {
        GreedyTuner { h_bottom, h_top }
    }
}

impl CompactionTuner for GreedyTuner {
    fn name(&self) -> &'static str {
        "greedy"
    }

    fn decide(&mut self, m: &MissionStats) -> Result<Vec<(usize, usize)>> {
        let t = m.size_ratio.max(1);
        let mut out = Vec::new();
        for (level, l) in m.levels.iter().enumerate().skip(1) {
            if l.bytes == 0 && l.runs == 0 {
                continue;
            }
            let seen = l.lookups + m.updates;
            if seen == 0 {
                continue;
            }
            let share = l.lookups as f64 / seen as f64;
            let k = if share < self.h_bottom {
                (l.k + 1).min(t)
            } else if share > self.h_top {
                l.k.saturating_sub(1).max(1)
            } else {
                l.k
            };
            out.push((level, k));
        }
        Ok(out)
    }
}

/// What the tuner has done, in [`DbStats::tuner`](crate::DbStats).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TunerStats {
    /// The tuner's name (`static` when none runs).
    pub policy: String,
    /// Missions completed.
    pub missions: u64,
    /// K changes applied.
    pub changes: u64,
    /// Thread CPU time spent deciding and training, nanoseconds (all missions).
    pub train_cpu_ns: u64,
    /// Sum of the missions' foreground operation time, nanoseconds (Fig. 13's other bar).
    pub mission_op_ns: u64,
    /// Missions whose statistics were dropped because the tuner was still busy.
    pub missions_skipped: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
    /// Whether the learned state was resumed from a checkpoint at open.
    pub resumed: bool,
    /// Missions simulated on the cost model before the real ones (pretraining).
    pub pretrained_missions: u64,
    /// Thread CPU time of that pretraining, nanoseconds.
    pub pretrain_cpu_ns: u64,
    /// The entry size (bytes) the pretraining simulator was given: the mean of the
    /// writes before the first mission ended when there were at least 100, else the
    /// simulator's default (0 until pretraining ran).
    pub pretrain_entry_bytes: f64,
    /// Errors met (checkpoint writes, K changes); the tuner goes on.
    pub errors: u64,
    /// K per level after the last mission (index = level).
    pub last_k: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RusKey's presets open with the `ruskey` feature and are refused, saying why,
    /// without it (candle left out).
    #[test]
    fn ruskey_presets_need_the_ruskey_feature() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = crate::presets::by_name("ruskey").unwrap();
        opts.create_if_missing = true;
        let opened = crate::Db::open(dir.path(), opts);
        if cfg!(feature = "ruskey") {
            opened.unwrap().close().unwrap();
        } else {
            let e = opened.err().expect("refused without the feature");
            assert!(
                matches!(&e, crate::Error::InvalidArgument(m) if m.contains("`ruskey` feature")),
                "{e}"
            );
        }
    }

    fn mission(lookups: u64, updates: u64, reached: &[u64], k: &[usize]) -> MissionStats {
        MissionStats {
            mission: 1,
            lookups,
            updates,
            size_ratio: 10,
            levels: std::iter::once(LevelMission::default())
                .chain(reached.iter().zip(k).map(|(&r, &k)| LevelMission {
                    k,
                    runs: 1,
                    bytes: 1,
                    lookups: r,
                    ..Default::default()
                }))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn greedy_moves_k_by_lookup_share() {
        let mut g = GreedyTuner::new(0.33, 0.67);
        // 90% lookups reach level 1, fewer reach level 2 (found earlier), level 3 is
        // at T already and write-heavy.
        let m = mission(900, 100, &[900, 150, 10], &[3, 3, 10]);
        assert_eq!(g.decide(&m).unwrap(), vec![(1, 2), (2, 3), (3, 10)]);
        let m = mission(900, 100, &[900, 900, 900], &[1, 1, 1]);
        assert_eq!(g.decide(&m).unwrap(), vec![(1, 1), (2, 1), (3, 1)]);
        // An empty level is left alone.
        let mut m = mission(0, 100, &[0, 0], &[4, 4]);
        m.levels[2].bytes = 0;
        m.levels[2].runs = 0;
        assert_eq!(g.decide(&m).unwrap(), vec![(1, 5)]);
    }

    #[test]
    fn latencies_are_per_operation() {
        let mut m = mission(600, 400, &[600], &[1]);
        m.op_ns = 2_000_000;
        m.levels[1].read_ns = 300_000;
        m.levels[1].compaction_ns = 700_000;
        assert_eq!(m.ops(), 1000);
        assert!((m.read_fraction() - 0.6).abs() < 1e-12);
        assert!((m.end_to_end_ns() - 2000.0).abs() < 1e-9);
        assert!((m.level_ns(1) - 1000.0).abs() < 1e-9);
        assert_eq!(m.level_ns(9), 0.0);
        assert_eq!(m.deepest(), 1);
    }

    #[test]
    fn options_are_checked() {
        assert!(TunerOptions::default().validate().is_ok());
        let bad = TunerOptions {
            policy: TunerPolicy::Greedy {
                h_bottom: 0.7,
                h_top: 0.3,
            },
            ..Default::default()
        };
        assert!(bad.validate().is_err());
        let bad = TunerOptions {
            mission_ops: 0,
            ..Default::default()
        };
        assert!(bad.validate().is_err());
    }
}
