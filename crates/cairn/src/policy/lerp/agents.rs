//! Lerp's agents: one DDPG agent per learned level, trained after every mission.

use std::collections::BTreeMap;

use super::super::cost_model::{CostModel, SplitMix64};
use super::super::cost_prior::CostPrior;
use super::super::mix_scale::MixScale;
use super::super::propagation::{propagate, Propagation};
use super::super::schedule::{Convergence, ShiftDetector};
use super::super::tuner::{CompactionTuner, MissionStats};
use super::{LerpParams, K_SLOTS, STATE_DIM};
use crate::coding::take;
use crate::learned::ddpg::{action_delta, next_k, DdpgAgent, DdpgConfig};
use crate::{Error, Result};

#[cfg(test)]
mod tests;

/// One level's agent, the transition it waits to be rewarded for, and whether it has
/// settled.
struct LevelAgent {
    agent: DdpgAgent,
    pending: Option<(Vec<f32>, f32)>,
    conv: Convergence,
    /// Walking to the prior's K (with `LerpParams::prior`), until it is reached.
    walking: bool,
}

/// RusKey's tuner.
pub struct Lerp {
    params: LerpParams,
    num_levels: usize,
    agents: BTreeMap<usize, LevelAgent>,
    /// The rewards' unit per mix and level.
    scale: MixScale,
    shift: ShiftDetector,
    /// Eq. 5 fitted online (used when `params.prior`).
    prior: CostPrior,
    /// Draws exploration moves.
    rng: SplitMix64,
    missions: u64,
    /// Missions simulated before the real ones.
    pub pretrained: u64,
}

/// Version 2: no latency features in the state, per-mix reward units.
const CHECKPOINT_VERSION: u32 = 2;

impl Lerp {
    /// A fresh tuner for a tree of `num_levels` levels (level 0 included).
    pub fn new(params: LerpParams, num_levels: usize) -> Self {
        let rng = SplitMix64(params.seed ^ 0xE7F1_04E5);
        let shift = ShiftDetector::new(params.change_threshold, params.shift_persist);
        Lerp {
            params,
            num_levels: num_levels.max(2),
            agents: BTreeMap::new(),
            scale: MixScale::default(),
            shift,
            prior: CostPrior::default(),
            rng,
            missions: 0,
            pretrained: 0,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &LerpParams {
        &self.params
    }

    /// Missions seen (simulated and real).
    pub fn missions(&self) -> u64 {
        self.missions
    }

    /// Exploration noise of level `level`'s agent, if it has one.
    pub fn noise(&self, level: usize) -> Option<f64> {
        self.agents.get(&level).map(|a| a.agent.noise())
    }

    /// Whether level `level`'s agent has converged (false for a level without one).
    pub fn converged(&self, level: usize) -> bool {
        self.agents.get(&level).is_some_and(|a| a.conv.converged())
    }

    fn agent(&mut self, level: usize) -> Result<&mut LevelAgent> {
        if !self.agents.contains_key(&level) {
            let mut cfg = DdpgConfig::new(STATE_DIM);
            cfg.seed = self.params.seed ^ (level as u64).wrapping_mul(0x9E37_79B9);
            let agent = DdpgAgent::new(cfg)?.with_discrete_moves(&MOVES);
            let conv = Convergence::new(self.params.converge_after);
            self.agents.insert(
                level,
                LevelAgent {
                    agent,
                    pending: None,
                    conv,
                    walking: true,
                },
            );
        }
        Ok(self.agents.get_mut(&level).expect("inserted above"))
    }

    /// The state of `level` after mission `m` (RusKey 5.1.1), each feature in about [0, 1].
    pub fn state(&self, m: &MissionStats, level: usize) -> Vec<f32> {
        let t = m.size_ratio.max(1) as f64;
        let ops = m.ops() as f64;
        let l = m.levels.get(level).cloned().unwrap_or_default();
        let fill = if l.capacity > 0 {
            l.bytes as f64 / l.capacity as f64
        } else {
            0.0
        };
        let wa = l.write_bytes as f64 / (m.user_bytes.max(1)) as f64;
        [
            m.read_fraction(),
            m.prev_read_fraction,
            l.k as f64 / t,
            fill.min(2.0) / 2.0,
            (l.runs as f64 / t).min(1.0),
            (l.lookups as f64 / ops).min(1.0),
            (l.read_ios as f64 / ops).min(4.0) / 4.0,
            wa.min(2.0 * t) / (2.0 * t),
        ]
        .iter()
        .copied()
        .chain(Self::ks(m, t))
        .map(|x| x as f32)
        .collect()
    }

    /// K / T of levels 1..=[`K_SLOTS`] (the deepest slot: the largest K below it; a level
    /// the tree does not have yet: K = 1).
    fn ks(m: &MissionStats, t: f64) -> [f64; K_SLOTS] {
        let mut out = [1.0 / t; K_SLOTS];
        for (i, l) in m.levels.iter().enumerate().skip(1) {
            let slot = (i - 1).min(K_SLOTS - 1);
            let k = l.k.max(1) as f64 / t;
            out[slot] = if i > K_SLOTS { out[slot].max(k) } else { k };
        }
        out
    }

    /// The reward of level `level` for mission `m`: -(alpha t_i + (1 - alpha) t') in
    /// units of the mix's reference cost (about -1; feeds the reference while it warms
    /// up).
    pub fn reward(&mut self, m: &MissionStats, level: usize) -> f32 {
        let a = self.params.alpha;
        let cost = a * m.level_ns(level) + (1.0 - a) * m.end_to_end_ns();
        let unit = self.scale.normalise(level, m.read_fraction(), cost);
        (-unit).max(-10.0) as f32
    }

    /// Simulates `missions` missions on `model`: lookup shares cycle through read-heavy,
    /// balanced, write-heavy, write-inclined and read-inclined phases, plus random ones,
    /// so the agents start from a policy that already maps the mix to K. Returns the K
    /// vector it ended with.
    pub fn pretrain(&mut self, model: &CostModel, missions: u32) -> Result<Vec<usize>> {
        let mut rng = SplitMix64(self.params.seed ^ 0xC057_30DE1);
        let mut ks = vec![1usize; model.levels()];
        let phases = [0.9, 0.5, 0.1, 0.3, 0.7];
        let mut gamma = phases[0];
        let mut prev = gamma;
        let per_phase = 40;
        for i in 0..missions {
            if i % per_phase == 0 {
                let p = (i / per_phase) as usize;
                gamma = if p < phases.len() {
                    phases[p]
                } else {
                    0.05 + 0.9 * rng.next_f64()
                };
            }
            let m = model.mission(i as u64 + 1, 10_000, gamma, prev, &ks, &mut rng);
            prev = gamma;
            for (level, k) in self.decide(&m)? {
                if let Some(slot) = ks.get_mut(level - 1) {
                    *slot = k;
                }
            }
        }
        self.pretrained += missions as u64;
        // The simulator's times are not the engine's: fresh units, a fresh anchor, and
        // exploration from the start on the real tree.
        self.scale.clear();
        self.shift.reset();
        self.prior = CostPrior::default();
        for a in self.agents.values_mut() {
            a.pending = None;
            a.conv.reset();
            a.walking = true;
            a.agent.reset_noise();
        }
        Ok(ks)
    }

    /// The learned state, versioned (the caller frames and checksums the file).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
        out.push(match self.params.propagation {
            Propagation::None => 0,
            Propagation::Uniform => 1,
            Propagation::Monkey => 2,
        });
        self.scale.encode(&mut out);
        out.extend_from_slice(&self.missions.to_le_bytes());
        out.extend_from_slice(&self.pretrained.to_le_bytes());
        out.extend_from_slice(&(self.agents.len() as u32).to_le_bytes());
        for (&level, a) in &self.agents {
            out.extend_from_slice(&(level as u32).to_le_bytes());
            a.agent.save(&mut out);
        }
        out
    }

    /// A tuner resumed from [`Lerp::encode`]'s bytes. A checkpoint of another version or
    /// propagation mode, or any malformed byte, is an error (the caller starts fresh).
    pub fn decode(params: LerpParams, num_levels: usize, mut input: &[u8]) -> Result<Self> {
        let bad = |d: &str| Error::corruption(crate::filenames::TUNER, d);
        let u32_of =
            |i: &mut &[u8]| take(i, 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
        let u64_of =
            |i: &mut &[u8]| take(i, 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
        let version = u32_of(&mut input).ok_or_else(|| bad("truncated"))?;
        if version != CHECKPOINT_VERSION {
            return Err(Error::UnsupportedVersion {
                file: crate::filenames::TUNER.into(),
                found: version,
                supported: CHECKPOINT_VERSION,
            });
        }
        let mode = take(&mut input, 1).ok_or_else(|| bad("truncated"))?[0];
        let expect = match params.propagation {
            Propagation::None => 0,
            Propagation::Uniform => 1,
            Propagation::Monkey => 2,
        };
        if mode != expect {
            return Err(bad("checkpoint of another propagation mode"));
        }
        let scale = MixScale::decode(&mut input).ok_or_else(|| bad("bad reward units"))?;
        let missions = u64_of(&mut input).ok_or_else(|| bad("truncated"))?;
        let pretrained = u64_of(&mut input).ok_or_else(|| bad("truncated"))?;
        let n = u32_of(&mut input).ok_or_else(|| bad("truncated"))?;
        if n as usize > num_levels.max(2) {
            return Err(bad("more agents than levels"));
        }
        let mut agents = BTreeMap::new();
        for _ in 0..n {
            let level = u32_of(&mut input).ok_or_else(|| bad("truncated"))? as usize;
            if level == 0 || level >= num_levels.max(2) {
                return Err(bad("agent of a level the tree does not have"));
            }
            let agent = DdpgAgent::load(&mut input)?.with_discrete_moves(&MOVES);
            if agent.config().state_dim != STATE_DIM {
                return Err(bad("agent of another state size"));
            }
            agents.insert(
                level,
                LevelAgent {
                    agent,
                    pending: None,
                    conv: Convergence::new(params.converge_after),
                    walking: true,
                },
            );
        }
        if !input.is_empty() {
            return Err(bad("trailing bytes"));
        }
        let rng = SplitMix64(params.seed ^ missions.rotate_left(17));
        let shift = ShiftDetector::new(params.change_threshold, params.shift_persist);
        Ok(Lerp {
            params,
            num_levels: num_levels.max(2),
            agents,
            scale,
            shift,
            prior: CostPrior::default(),
            rng,
            missions,
            pretrained,
        })
    }
}

/// The three moves of K (down, keep, up) as the actions the critic is asked about and
/// the replay remembers.
const MOVES: [f32; 3] = [-1.0, 0.0, 1.0];

/// The level's greedy move: the actor's proposal refined by the critic among the three
/// moves (Dulac-Arnold et al.'s refinement of DDPG for discrete actions, with k = 3
/// neighbours): the move with the highest Q(s, a), the actor's own move on ties. In the
/// simulator the actor's proposal alone saturated at -1 or +1 (tanh) and never left it.
fn greedy_move(agent: &mut DdpgAgent, state: &[f32]) -> Result<f32> {
    let proposal = MOVES[(action_delta(agent.act(state, false)?) + 1) as usize];
    let mut best = (agent.q_value(state, proposal)?, proposal);
    for m in MOVES {
        let q = agent.q_value(state, m)?;
        if q > best.0 {
            best = (q, m);
        }
    }
    Ok(best.1)
}

/// Picks the level's move. Exploration: with probability equal to the agent's noise
/// level (which decays per mission, restarts on a persistent shift and stops at
/// convergence) a random move, so every move keeps being tried, or with a prior's
/// proposal `toward`, a step toward it; otherwise the greedy move.
fn choose_move(
    agent: &mut DdpgAgent,
    state: &[f32],
    rng: &mut SplitMix64,
    toward: Option<(usize, usize)>,
) -> Result<f32> {
    if rng.next_f64() < agent.noise() {
        let random = MOVES[(rng.next_u64() % 3) as usize];
        return Ok(match toward {
            Some((k, target)) if target != k => {
                if target > k {
                    1.0
                } else {
                    -1.0
                }
            }
            _ => random,
        });
    }
    greedy_move(agent, state)
}

/// The step of a walk to the prior's K, if the level is walking and has not reached it
/// (reaching it ends the walk; no proposal yet keeps it pending).
fn walk_step(a: &mut LevelAgent, toward: Option<(usize, usize)>) -> Option<f32> {
    if a.conv.converged() {
        // Settled before the prior had a proposal: the learner's choice stands.
        a.walking = false;
    }
    let (k, target) = toward?;
    if !a.walking {
        return None;
    }
    if k == target {
        a.walking = false;
        return None;
    }
    Some(if target > k { 1.0 } else { -1.0 })
}

/// One mission's exploration step for a level: a persistent shift restarts exploring
/// and convergence; a converged level stops exploring; otherwise the noise decays.
fn schedule_noise(a: &mut LevelAgent, shifted: bool) {
    if shifted {
        a.agent.reset_noise();
        a.conv.reset();
        a.walking = true;
    } else if a.conv.stops_exploring() {
        a.agent.stop_noise();
    } else {
        a.agent.decay_noise();
    }
}

impl Lerp {
    /// The prior's K for `level` (when the prior is on): priced over the levels that will
    /// carry its K, i.e. with uniform propagation level 1 and every deeper level holding
    /// data, otherwise the level alone.
    fn prior_target(&self, m: &MissionStats, level: usize, learned: &[usize]) -> Option<usize> {
        if !self.params.prior {
            return None;
        }
        let follows: Vec<usize> =
            if self.params.propagation == Propagation::Uniform && learned == [1] {
                (1..=m.deepest().max(1)).collect()
            } else {
                vec![level]
            };
        self.prior
            .best_k(&follows, m.read_fraction(), m.size_ratio.max(1))
    }

    /// Rewards, trains and moves each learned level; returns their new K in order.
    fn learn_levels(
        &mut self,
        m: &MissionStats,
        learned: &[usize],
        shifted: bool,
    ) -> Result<Vec<usize>> {
        let t = m.size_ratio.max(1);
        let steps = self.params.train_steps;
        let mut chosen = Vec::with_capacity(learned.len());
        let mut rng = self.rng.clone();
        for &level in learned {
            let state = self.state(m, level);
            let reward = self.reward(m, level);
            let k = m.levels.get(level).map_or(1, |l| l.k.max(1));
            let toward = self.prior_target(m, level, learned).map(|p| (k, p));
            let a = self.agent(level)?;
            if let Some((s, act)) = a.pending.take() {
                a.agent.remember(&s, act, reward, &state);
            }
            a.agent.train(steps)?;
            schedule_noise(a, shifted);
            let act = match walk_step(a, toward) {
                Some(step) => step,
                None => choose_move(&mut a.agent, &state, &mut rng, toward)?,
            };
            let trained = a.agent.replay_len() >= a.agent.config().batch;
            let next = next_k(k, act, t);
            a.conv.observe(next, trained);
            a.pending = Some((state, act));
            chosen.push(next);
        }
        self.rng = rng;
        Ok(chosen)
    }
}

impl CompactionTuner for Lerp {
    fn name(&self) -> &'static str {
        match self.params.propagation {
            Propagation::None => "ruskey-none",
            Propagation::Uniform if self.params.prior => "ruskey-prior",
            Propagation::Uniform => "ruskey",
            Propagation::Monkey => "ruskey-monkey",
        }
    }

    fn decide(&mut self, m: &MissionStats) -> Result<Vec<(usize, usize)>> {
        self.missions += 1;
        let t = m.size_ratio.max(1);
        let shifted = self.shift.observe(m.read_fraction());
        self.prior.observe(m);
        let learned = self
            .params
            .propagation
            .learned_levels(self.num_levels, m.deepest());
        let chosen = self.learn_levels(m, &learned, shifted)?;
        // Levels 1.. of the tree as they are, then the learned and propagated ones.
        let current: Vec<usize> = (1..self.num_levels)
            .map(|l| m.levels.get(l).map_or(1, |x| x.k.max(1)))
            .collect();
        let settled = learned.iter().all(|&l| self.converged(l));
        // The levels that do not learn hold until the learned ones converge (5.2).
        let mode = if settled {
            self.params.propagation
        } else {
            Propagation::None
        };
        Ok(propagate(mode, &chosen, &current, t)
            .into_iter()
            .enumerate()
            .map(|(i, k)| (i + 1, k))
            .collect())
    }

    fn save(&self) -> Option<Vec<u8>> {
        Some(self.encode())
    }
}
