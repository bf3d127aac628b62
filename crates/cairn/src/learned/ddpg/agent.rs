//! The DDPG agent: acting, remembering, training, and its checkpoint.

use candle_core::{Device, Tensor};
use candle_nn::{AdamW, Optimizer};

use super::checkpoint::{corrupt, put_f32s, Reader};
use super::net::{layer_dims, tensor_err, Net};
use super::replay::Replay;
use super::*;
use crate::{Error, Result};

#[cfg(test)]
mod tests;

/// A DDPG agent for one FLSM-tree level: actor, critic, their targets, the replay buffer
/// and the exploration noise. See the module documentation (`learned::ddpg`).
pub struct DdpgAgent {
    cfg: DdpgConfig,
    actor: Net,
    critic: Net,
    target_actor: Net,
    target_critic: Net,
    actor_opt: AdamW,
    critic_opt: AdamW,
    replay: Replay,
    noise: f64,
    rng: SplitMix64,
    /// The actions the agent picks among, when they are a few discrete moves (Lerp's K
    /// down, keep, up); empty for a continuous action.
    moves: Vec<f32>,
}

impl std::fmt::Debug for DdpgAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DdpgAgent")
            .field("cfg", &self.cfg)
            .field("replay_len", &self.replay.len)
            .field("noise", &self.noise)
            .finish_non_exhaustive()
    }
}

impl DdpgAgent {
    /// A fresh agent. Errors with [`Error::InvalidArgument`] if the configuration is
    /// unusable (`state_dim` 0, a non-positive learning rate, `gamma` outside `[0, 1)`,
    /// ...).
    pub fn new(cfg: DdpgConfig) -> Result<Self> {
        if let Some(p) = cfg.problem() {
            return Err(Error::InvalidArgument(format!("ddpg config: {p}")));
        }
        let mut rng = SplitMix64(cfg.seed);
        let actor_dims = layer_dims(cfg.state_dim, cfg.hidden);
        let critic_dims = layer_dims(cfg.state_dim + 1, cfg.hidden);
        let actor = Net::init(&actor_dims, &mut rng, true)?;
        let critic = Net::init(&critic_dims, &mut rng, false)?;
        let target_actor = actor.duplicate(&actor_dims)?;
        let target_critic = critic.duplicate(&critic_dims)?;
        let noise = cfg.noise_start;
        Self::assemble(
            cfg,
            [actor, critic, target_actor, target_critic],
            noise,
            rng,
            None,
        )
    }

    fn assemble(
        cfg: DdpgConfig,
        [actor, critic, target_actor, target_critic]: [Net; 4],
        noise: f64,
        rng: SplitMix64,
        replay: Option<Replay>,
    ) -> Result<Self> {
        let actor_opt = actor.optimizer(cfg.actor_lr)?;
        let critic_opt = critic.optimizer(cfg.critic_lr)?;
        let replay = replay.unwrap_or_else(|| Replay::new(cfg.replay_capacity, cfg.state_dim));
        Ok(DdpgAgent {
            cfg,
            actor,
            critic,
            target_actor,
            target_critic,
            actor_opt,
            critic_opt,
            replay,
            noise,
            rng,
            moves: Vec::new(),
        })
    }

    /// Declares that the agent acts by picking one of `moves` (the best by the critic),
    /// not by the actor's continuous output: the critic's target then values the next
    /// state by its best move, `r + gamma * max_m Q'(s', m)`, as the moves are picked,
    /// instead of by the target actor's proposal. Not saved with the agent: set it again
    /// after [`DdpgAgent::load`].
    pub fn with_discrete_moves(mut self, moves: &[f32]) -> Self {
        self.moves = moves.to_vec();
        self
    }

    /// The configuration.
    pub fn config(&self) -> &DdpgConfig {
        &self.cfg
    }

    fn check_state(&self, state: &[f32]) -> Result<()> {
        if state.len() != self.cfg.state_dim {
            return Err(Error::InvalidArgument(format!(
                "ddpg state has {} features, the agent takes {}",
                state.len(),
                self.cfg.state_dim
            )));
        }
        if state.iter().any(|v| !v.is_finite()) {
            return Err(Error::InvalidArgument(
                "ddpg state has a non-finite feature".into(),
            ));
        }
        Ok(())
    }

    /// The actor's output for `state`, in `[-1, 1]`; with `explore`, plus Gaussian noise of
    /// standard deviation [`noise`](Self::noise), clipped to `[-1, 1]`. Without `explore`
    /// it changes nothing in the agent (the random generator included). Errors if the
    /// state has the wrong length or a non-finite feature.
    pub fn act(&mut self, state: &[f32], explore: bool) -> Result<f32> {
        self.check_state(state)?;
        let x = Tensor::from_slice(state, (1, state.len()), &Device::Cpu).map_err(tensor_err)?;
        let a = self
            .actor
            .forward(&x)
            .and_then(|y| y.flatten_all())
            .and_then(|y| y.to_vec1::<f32>())
            .map_err(tensor_err)?[0];
        if !a.is_finite() {
            return Err(Error::InvalidArgument(
                "ddpg actor produced a non-finite action".into(),
            ));
        }
        let a = if explore && self.noise > 0.0 {
            (a as f64 + self.noise * self.rng.gaussian()) as f32
        } else {
            a
        };
        Ok(a.clamp(-1.0, 1.0))
    }

    /// The critic's value Q(s, a) of taking action `a` (clipped to [-1, 1]) in `state`.
    pub fn q_value(&self, state: &[f32], action: f32) -> Result<f32> {
        self.check_state(state)?;
        let mut x = Vec::with_capacity(state.len() + 1);
        x.extend_from_slice(state);
        x.push(action.clamp(-1.0, 1.0));
        let x = Tensor::from_slice(&x, (1, x.len()), &Device::Cpu).map_err(tensor_err)?;
        let q = self
            .critic
            .forward(&x)
            .and_then(|y| y.flatten_all())
            .and_then(|y| y.to_vec1::<f32>())
            .map_err(tensor_err)?[0];
        if !q.is_finite() {
            return Err(Error::InvalidArgument(
                "ddpg critic produced a non-finite value".into(),
            ));
        }
        Ok(q)
    }

    /// Stores the transition `(s, a, r, s2)` in the replay buffer (overwriting the oldest
    /// once full). A transition with states of the wrong length or any non-finite number
    /// is dropped (and logged): it could only poison the networks.
    pub fn remember(&mut self, s: &[f32], a: f32, r: f32, s2: &[f32]) {
        let d = self.cfg.state_dim;
        let finite = s.iter().chain(s2).all(|v| v.is_finite()) && a.is_finite() && r.is_finite();
        if s.len() != d || s2.len() != d || !finite {
            log::warn!(
                "ddpg: dropped a transition (state lengths {} / {}, expected {d}; finite: {finite})",
                s.len(),
                s2.len()
            );
            return;
        }
        self.replay.push(s, a.clamp(-1.0, 1.0), r, s2);
    }

    /// Transitions in the replay buffer.
    pub fn replay_len(&self) -> usize {
        self.replay.len
    }

    /// Runs `steps` gradient steps on minibatches of `batch` transitions drawn uniformly
    /// from the replay: each updates the critic, then the actor against the updated
    /// critic, then soft-updates both targets. Does nothing (returns `None`) until the
    /// replay holds `batch` transitions, or with `steps = 0`; otherwise returns the mean
    /// critic loss of the steps (each measured before its update).
    pub fn train(&mut self, steps: usize) -> Result<Option<f32>> {
        if steps == 0 || self.replay.len < self.cfg.batch {
            return Ok(None);
        }
        let (mean, scale) = self.reward_stats();
        let mut total = 0.0f64;
        for _ in 0..steps {
            total += self.train_step(mean, scale)? as f64;
        }
        Ok(Some((total / steps as f64) as f32))
    }

    /// Mean and standard deviation of the rewards in the replay.
    fn reward_stats(&self) -> (f32, f32) {
        if self.replay.len == 0 {
            return (0.0, 1.0);
        }
        let d = self.cfg.state_dim;
        let rec = self.replay.record;
        let (mut sum, mut sum2) = (0.0f64, 0.0f64);
        for x in self.replay.data.chunks_exact(rec) {
            let r = x[d + 1] as f64;
            sum += r;
            sum2 += r * r;
        }
        let n = self.replay.len as f64;
        let mean = sum / n;
        let var = (sum2 / n - mean * mean).max(0.0);
        let std = var.sqrt().max(1e-6 * mean.abs()).max(1e-12);
        (mean as f32, std as f32)
    }

    fn train_step(&mut self, mean: f32, scale: f32) -> Result<f32> {
        let (b, d) = (self.cfg.batch, self.cfg.state_dim);
        let rec = self.replay.record;
        let mut s = Vec::with_capacity(b * d);
        let mut s2 = Vec::with_capacity(b * d);
        let mut a = Vec::with_capacity(b);
        let mut r = Vec::with_capacity(b);
        for _ in 0..b {
            let i = self.rng.below(self.replay.len);
            let x = &self.replay.data[i * rec..(i + 1) * rec];
            s.extend_from_slice(&x[..d]);
            a.push(x[d]);
            r.push((x[d + 1] - mean) / scale);
            s2.extend_from_slice(&x[d + 2..]);
        }
        let loss = self.step_on(s, a, r, s2).map_err(tensor_err)?;
        if !loss.is_finite() {
            return Err(Error::InvalidArgument(format!(
                "ddpg critic loss is {loss}; training diverged"
            )));
        }
        Ok(loss)
    }

    fn step_on(
        &mut self,
        s: Vec<f32>,
        a: Vec<f32>,
        r: Vec<f32>,
        s2: Vec<f32>,
    ) -> candle_core::Result<f32> {
        let (b, d) = (self.cfg.batch, self.cfg.state_dim);
        let dev = &Device::Cpu;
        let s = Tensor::from_vec(s, (b, d), dev)?;
        let s2 = Tensor::from_vec(s2, (b, d), dev)?;
        let a = Tensor::from_vec(a, (b, 1), dev)?;
        let r = Tensor::from_vec(r, (b, 1), dev)?;

        let y = self.critic_target(&r, &s2)?;
        let q = self.critic.forward(&Tensor::cat(&[&s, &a], 1)?)?;
        let critic_loss = (q - y)?.sqr()?.mean_all()?;
        let loss = critic_loss.to_scalar::<f32>()?;
        if !loss.is_finite() {
            return Ok(loss);
        }
        self.critic_opt.backward_step(&critic_loss)?;

        // Actor: ascend Q(s, mu(s)); only the actor's variables are stepped.
        let pre = self.actor.forward_pre(&s, false)?;
        let mu = pre.tanh()?;
        let q_mu = self
            .critic
            .forward_pre(&Tensor::cat(&[&s, &mu], 1)?, true)?;
        let actor_loss = (q_mu.mean_all()?.neg()? + (pre.sqr()?.mean_all()? * ACTION_PENALTY)?)?;
        self.actor_opt.backward_step(&actor_loss)?;

        self.target_critic.soft_update(&self.critic, self.cfg.tau)?;
        self.target_actor.soft_update(&self.actor, self.cfg.tau)?;
        Ok(loss)
    }

    /// The critic's target, with no gradient through the target networks: `r + gamma *
    /// Q'(s2, mu'(s2))`, or with discrete moves `r + gamma * max_m Q'(s2, m)`.
    fn critic_target(&self, r: &Tensor, s2: &Tensor) -> candle_core::Result<Tensor> {
        let q2 = if self.moves.is_empty() {
            let a2 = self.target_actor.forward(s2)?;
            self.target_critic.forward(&Tensor::cat(&[s2, &a2], 1)?)?
        } else {
            let mut best: Option<Tensor> = None;
            for &m in &self.moves {
                let a = Tensor::full(m, (s2.dim(0)?, 1), s2.device())?;
                let q = self.target_critic.forward(&Tensor::cat(&[s2, &a], 1)?)?;
                best = Some(match best {
                    Some(b) => b.maximum(&q)?,
                    None => q,
                });
            }
            best.expect("moves is not empty")
        };
        Ok((r + (q2 * self.cfg.gamma)?)?.detach())
    }

    /// Multiplies the exploration noise by `noise_decay`, not below `noise_min`. Call once
    /// per mission. Does nothing while the replay holds fewer than `batch` transitions
    /// (nothing trains yet, so exploring is all the agent can do).
    pub fn decay_noise(&mut self) {
        if self.replay.len < self.cfg.batch {
            return;
        }
        self.noise = (self.noise * self.cfg.noise_decay).max(self.cfg.noise_min);
    }

    /// Stops exploring (a converged agent): the noise is 0 until [`Self::reset_noise`],
    /// or until [`Self::decay_noise`] lifts it to its floor.
    pub fn stop_noise(&mut self) {
        self.noise = 0.0;
    }

    /// Raises the exploration noise back to `noise_start` (for a workload change).
    pub fn reset_noise(&mut self) {
        self.noise = self.cfg.noise_start;
    }

    /// The current standard deviation of the exploration noise.
    pub fn noise(&self) -> f64 {
        self.noise
    }

    /// Appends the whole agent (configuration, actor, critic, both targets, replay buffer,
    /// noise level, random generator state; not Adam's moments) to `out`, in the layout of
    /// the module documentation (`learned::ddpg`).
    pub fn save(&self, out: &mut Vec<u8>) {
        let c = &self.cfg;
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        let start = out.len();
        let u32_of = |v: usize| v as u32; // every size is bounded far below u32::MAX
        for v in [u32_of(c.state_dim), u32_of(c.hidden)] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [c.actor_lr, c.critic_lr, c.gamma, c.tau] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [u32_of(c.batch), u32_of(c.replay_capacity)] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [c.noise_start, c.noise_decay, c.noise_min] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&c.seed.to_le_bytes());
        out.extend_from_slice(&self.noise.to_le_bytes());
        out.extend_from_slice(&self.rng.0.to_le_bytes());
        for v in [u32_of(self.replay.len), u32_of(self.replay.head)] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        debug_assert_eq!(out.len() - start, HEADER_LEN);
        let crc = crc32c::crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
        for net in [
            &self.actor,
            &self.critic,
            &self.target_actor,
            &self.target_critic,
        ] {
            // Reading a CPU f32 variable back cannot fail.
            let params = net.params().expect("ddpg: reading a CPU tensor");
            for (w, b) in params {
                out.extend_from_slice(&u32_of(b.len()).to_le_bytes());
                out.extend_from_slice(&u32_of(w.len() / b.len().max(1)).to_le_bytes());
                put_f32s(out, &w);
                put_f32s(out, &b);
            }
        }
        put_f32s(out, &self.replay.data);
    }

    /// Reads an agent that [`save`](Self::save) wrote from the front of `input`, and
    /// advances `input` past it. Any malformed input (truncated, a damaged header, wrong
    /// dimensions, non-finite weights or replay) is [`Error::Corruption`]; a newer layout
    /// is [`Error::UnsupportedVersion`].
    pub fn load(input: &mut &[u8]) -> Result<Self> {
        let mut r = Reader(input);
        if r.take(4)? != MAGIC {
            return Err(corrupt("bad magic"));
        }
        let version = r.u32()?;
        if version != VERSION {
            if version > VERSION {
                return Err(Error::UnsupportedVersion {
                    file: FILE.into(),
                    found: version,
                    supported: VERSION,
                });
            }
            return Err(corrupt(format!("bad version {version}")));
        }
        let header = r.take(HEADER_LEN)?;
        let crc = r.u32()?;
        if crc32c::crc32c(header) != crc {
            return Err(corrupt("header checksum mismatch"));
        }
        let mut h = Reader(&mut &header[..]);
        let state_dim = h.u32()? as usize;
        let hidden = h.u32()? as usize;
        let (actor_lr, critic_lr, gamma, tau) = (h.f64()?, h.f64()?, h.f64()?, h.f64()?);
        let (batch, replay_capacity) = (h.u32()? as usize, h.u32()? as usize);
        let (noise_start, noise_decay, noise_min) = (h.f64()?, h.f64()?, h.f64()?);
        let seed = h.u64()?;
        let cfg = DdpgConfig {
            state_dim,
            hidden,
            actor_lr,
            critic_lr,
            gamma,
            tau,
            batch,
            replay_capacity,
            noise_start,
            noise_decay,
            noise_min,
            seed,
        };
        if let Some(p) = cfg.problem() {
            return Err(corrupt(format!("config: {p}")));
        }
        let noise = h.f64()?;
        if !(noise.is_finite() && noise >= 0.0) {
            return Err(corrupt(format!("noise {noise}")));
        }
        let rng = SplitMix64(h.u64()?);
        let (replay_len, replay_head) = (h.u32()? as usize, h.u32()? as usize);
        let head_ok = if replay_len < replay_capacity {
            replay_head == replay_len
        } else {
            replay_len == replay_capacity && replay_head < replay_capacity
        };
        if !head_ok {
            return Err(corrupt(format!(
                "replay length {replay_len} / head {replay_head} with capacity {replay_capacity}"
            )));
        }

        let actor_dims = layer_dims(state_dim, hidden);
        let critic_dims = layer_dims(state_dim + 1, hidden);
        let mut nets = Vec::with_capacity(4);
        for (dims, tanh_out) in [
            (&actor_dims, true),
            (&critic_dims, false),
            (&actor_dims, true),
            (&critic_dims, false),
        ] {
            let mut params = Vec::with_capacity(LAYERS);
            for &(out, inp) in dims {
                let (o, i) = (r.u32()? as usize, r.u32()? as usize);
                if (o, i) != (out, inp) {
                    return Err(corrupt(format!("layer of {o}x{i}, expected {out}x{inp}")));
                }
                let w = r.finite_f32s(out * inp, "weight")?;
                let b = r.finite_f32s(out, "bias")?;
                params.push((w, b));
            }
            nets.push(Net::from_params(dims, params, tanh_out)?);
        }
        let mut replay = Replay::new(replay_capacity, state_dim);
        replay.data = r.finite_f32s(replay_len * replay.record, "replay")?;
        replay.len = replay_len;
        replay.head = replay_head;
        let nets: [Net; 4] = nets.try_into().map_err(|_| corrupt("network count"))?;
        Self::assemble(cfg, nets, noise, rng, Some(replay))
    }
}
