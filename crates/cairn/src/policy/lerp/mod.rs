//! RusKey's Lerp (5.1-5.2): one DDPG agent per learned level. After each mission the
//! agent of level i is rewarded for its last action by -(alpha t_i + (1 - alpha) t'),
//! in units of the mix's reference cost ([`super::mix_scale`]), trains on its replay
//! buffer, and picks K_i - 1, K_i or K_i + 1 from the level's state. Exploration restarts
//! on a shift that persists and stops once the level has converged; deeper levels follow
//! by policy propagation ([`super::propagation`]) once the learned ones have converged
//! ([`super::schedule`]). Training runs in the tuner's background thread, never on the
//! read or write path.
//!
//! The agents need candle (the `ruskey` feature, on by default); the parameters do not,
//! so options naming Lerp parse either way and are refused at open without it.

#[cfg(feature = "ruskey")]
mod agents;

#[cfg(feature = "ruskey")]
pub use agents::Lerp;

use super::propagation::Propagation;

/// Levels below 0 whose K every level's state holds (RusKey 5.1.1: the compaction
/// policies at each level); deeper levels share the last slot.
pub const K_SLOTS: usize = 6;

/// Features of a level's state: eight of the level and the mission, then K of levels
/// 1..=[`K_SLOTS`]. No latency: the mission's latency is the reward of the K it ran
/// with, and as a feature of the next state it let the critic read the reward off the
/// state instead of learning what K does.
pub const STATE_DIM: usize = 8 + K_SLOTS;

/// Lerp's parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LerpParams {
    /// Which levels learn and how the rest follow (5.2).
    pub propagation: Propagation,
    /// Weight of the level latency t_i against the end-to-end latency t' in the reward.
    pub alpha: f64,
    /// Gradient steps per agent after each mission.
    pub train_steps: usize,
    /// A change of the lookup share larger than this, from the share exploration last
    /// started at, is a new workload (RusKey 3.1 restarts exploration on a workload
    /// change) once it lasts `shift_persist` missions (our addition: one odd mission is
    /// no change): exploration restarts.
    pub change_threshold: f64,
    /// Missions in a row a changed lookup share must last to count as a shift.
    pub shift_persist: u32,
    /// Trained missions over which a learned level's K must stay within one step for the
    /// level to count as converged: its K is then propagated to the levels that do not
    /// learn (5.2 propagates once level 1 has converged; the paper gives no test, this
    /// is ours), and it stops exploring (ours: the paper only restarts exploration on a
    /// change). 0: converged from the start, propagation every mission, exploration
    /// never stops.
    pub converge_after: u32,
    /// Beyond the paper: at the start and after each persistent shift, K walks one step
    /// per mission to the K of eq. 5 fitted online from the counts ([`CostPrior`](crate::policy::cost_prior::CostPrior));
    /// from there Lerp moves and explores as usual. Exploring moves also step toward
    /// the prior's K rather than to a random neighbour.
    pub prior: bool,
    /// Missions simulated on the cost model ([`CostModel`](crate::policy::cost_model::CostModel)) before the first real one
    /// (0: none). Skipped when a checkpoint is resumed.
    pub pretrain_missions: u32,
    /// Seed of the agents' weights, noise and replay sampling.
    pub seed: u64,
}

impl Default for LerpParams {
    fn default() -> Self {
        LerpParams {
            propagation: Propagation::Uniform,
            alpha: 0.5,
            train_steps: 2,
            change_threshold: 0.15,
            shift_persist: 3,
            converge_after: 20,
            prior: false,
            pretrain_missions: 0,
            seed: 0x5EED_1E77,
        }
    }
}

impl LerpParams {
    pub(crate) fn validate(&self) -> std::result::Result<(), String> {
        if !(0.0..=1.0).contains(&self.alpha) {
            return Err(format!("lerp alpha must be in [0, 1], got {}", self.alpha));
        }
        if !(0.0..=1.0).contains(&self.change_threshold) {
            return Err("lerp change_threshold must be in [0, 1]".into());
        }
        if self.shift_persist == 0 || self.shift_persist > 1_000_000 {
            return Err("lerp shift_persist must be in 1..=1,000,000".into());
        }
        if self.converge_after > 1_000_000 {
            return Err("lerp converge_after is at most 1,000,000".into());
        }
        if self.pretrain_missions > 1_000_000 {
            return Err("lerp pretrain_missions is at most 1,000,000".into());
        }
        Ok(())
    }
}
