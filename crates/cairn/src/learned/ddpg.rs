//! RusKey's reinforcement-learning agent: Deep Deterministic Policy Gradient (DDPG,
//! Lillicrap et al., "Continuous control with deep reinforcement learning", 2015), as
//! RusKey (Mo et al., §5.1.4) runs one per level of its FLSM-tree to pick the level's
//! compaction policy `K_i` (the most sorted runs the level may hold, `1..=T`).
//!
//! The agent is level-agnostic: the caller builds the state vector (I/O counts, the
//! level's `K_i`, the workload's read/write mix, ...), turns the action into a move of
//! `K_i` with [`next_k`] (RusKey allows only `K_i - 1`, `K_i`, `K_i + 1`, §5.1.2) and
//! feeds back the reward (minus a latency, §5.1.3) with [`DdpgAgent::remember`].
//!
//! # Model
//!
//! * **Actor** `mu(s)`: `state_dim -> hidden -> hidden -> hidden -> 1`, ReLU after each
//!   hidden layer, `tanh` on the output, so an action is in `[-1, 1]`.
//! * **Critic** `Q(s, a)`: `(state, action)` concatenated `-> hidden -> hidden -> hidden
//!   -> 1`, ReLU hidden layers, linear output.
//! * **Targets** `mu'`, `Q'`: separate copies (their own [`VarMap`]s) made at start and
//!   soft-updated after every gradient step: `theta' <- tau * theta + (1 - tau) * theta'`.
//! * **Critic loss**: `mean (Q(s, a) - y)^2` with `y = r + gamma * Q'(s2, mu'(s2))`. A
//!   mission has no terminal state, so there is no done flag.
//! * **Actor loss**: `-mean Q(s, mu(s))` (the deterministic policy gradient), taken
//!   through the critic with its weights held constant (only the actor is stepped, so
//!   the critic's weight gradients are not computed), plus `0.01 * mean(z^2)` where `z`
//!   is the actor's output before `tanh`. This small penalty is not in Lillicrap et al.:
//!   without it the actor often ran into `tanh`'s flat tails early in training (all
//!   actions `+1` or all `-1`), where its gradient vanishes and it stayed for good, with
//!   `K` stuck at `1` or `T`.
//! * **Rewards** are standardised before each [`DdpgAgent::train`] call by the mean and
//!   standard deviation of the rewards in the replay buffer (the buffer keeps the raw
//!   ones). With no terminal state a positive affine change of the rewards does not change
//!   the optimal policy, and it frees the caller from choosing a scale: a latency in
//!   microseconds or seconds trains alike, and Q-values stay near zero, where the
//!   critic's output starts. (On the toy level of the tests it turned 0 of 6 seeds into
//!   4 of 6 before the other fixes.)
//! * **Optimiser**: Adam for each network (candle's `AdamW` with `weight_decay = 0`).
//! * **Exploration**: Gaussian noise of standard deviation [`DdpgAgent::noise`] added to
//!   the actor's output and clipped to `[-1, 1]`; the level decays by `noise_decay` per
//!   mission ([`DdpgAgent::decay_noise`]) down to `noise_min`, but only once the replay
//!   holds a batch (before that nothing trains, and decaying would spend the exploration
//!   on an agent that learns nothing from it). [`DdpgAgent::reset_noise`] raises it back
//!   to `noise_start` when the workload changes. (Lillicrap et al. use an
//!   Ornstein-Uhlenbeck process; missions are seconds apart and the action is coarse, so
//!   uncorrelated noise serves as well and keeps no extra state.)
//! * **Replay**: a ring buffer of `replay_capacity` transitions, sampled uniformly with
//!   replacement in minibatches of `batch`.
//!
//! # Cost
//!
//! A gradient step with the defaults (`hidden` 128, `batch` 64) is about 60 MFLOP, a few
//! milliseconds on one core: with `RAYON_NUM_THREADS=1`, `train(4)` took ~15 ms in a
//! release build on the (shared, 2-core) development machine and `act` ~14 us. candle
//! 0.11 parallelises its CPU matmuls with rayon and, unless `RAYON_NUM_THREADS` is set,
//! works out the thread count on every matmul by parsing `/proc/cpuinfo`
//! (`num_cpus::get_physical`): without the variable `train(4)` took 28 to 51 ms there
//! (load-dependent) and `act` ~200 us. A process embedding the agent should set
//! `RAYON_NUM_THREADS` (1 suits a background trainer) before it starts threads.
//!
//! Initialisation follows Lillicrap et al.: hidden layers uniform in
//! `±1/sqrt(fan_in)`, the output layers uniform in `±3e-3` so that the first actions and
//! Q-values are near zero. Everything random (weights, minibatches, noise) comes from a
//! SplitMix64 generator seeded with [`DdpgConfig::seed`] and kept in the agent (and in its
//! checkpoint), so a run is reproducible. Tensors are `f32` on the CPU.
//!
//! # Checkpoint layout (version 1, little-endian)
//!
//! ```text
//! magic "RDPG" | version u32 | header (HEADER_LEN bytes) | crc32c(header) u32
//! | actor | critic | target actor | target critic | replay records
//! header: state_dim u32, hidden u32, actor_lr f64, critic_lr f64, gamma f64, tau f64,
//!         batch u32, replay_capacity u32, noise_start f64, noise_decay f64,
//!         noise_min f64, seed u64, noise f64, rng u64, replay_len u32, replay_head u32
//! network: 4 layers, each: out u32, in u32, weight f32 x (out*in) row-major, bias f32 x out
//! replay record: s f32 x state_dim, a f32, r f32, s2 f32 x state_dim
//! ```
//!
//! The header carries its own checksum, so a damaged configuration or dimension is always
//! detected; the weights and the replay are only checked to be finite (the file that
//! holds the checkpoint is expected to checksum the whole). Adam's moments are not saved:
//! a loaded agent restarts them, which costs a few steps of slightly larger updates.

use candle_core::{Device, Module, Tensor, Var};
use candle_nn::{AdamW, Linear, Optimizer, ParamsAdamW, VarMap};

use crate::{Error, Result};

/// What corruption errors name as the file.
const FILE: &str = "ddpg checkpoint";
const MAGIC: &[u8; 4] = b"RDPG";
const VERSION: u32 = 1;
/// Bytes of the fixed header that follows magic and version.
const HEADER_LEN: usize = 4 + 4 + 8 * 4 + 4 + 4 + 8 * 3 + 8 + 8 + 8 + 4 + 4;

/// Largest state a checkpoint may declare (a sanity bound, far above any real state).
pub const MAX_STATE_DIM: usize = 4096;
/// Largest hidden width a checkpoint may declare.
pub const MAX_HIDDEN: usize = 4096;
/// Largest minibatch.
pub const MAX_BATCH: usize = 1 << 16;
/// Largest replay buffer (transitions).
pub const MAX_REPLAY: usize = 1 << 22;

/// Linear layers per network: three hidden, one output.
const LAYERS: usize = 4;
/// Output layers are initialised uniform in `±FINAL_INIT` (Lillicrap et al.).
const FINAL_INIT: f64 = 3e-3;
/// Weight of the actor's pre-`tanh` output, squared, in the actor's loss: it keeps `tanh`
/// out of saturation, where its gradient vanishes and the actor could no longer turn back.
const ACTION_PENALTY: f64 = 0.01;

/// Hyperparameters of a [`DdpgAgent`].
///
/// The defaults were chosen on the toy level of this module's tests (cost `K + 16/K` with
/// ±3% noise on `K` in `1..=10`, best `K = 4`, 300 missions of `train(8)`, the last 30
/// greedy): with them the greedy policy walks to `K = 4` and holds it in 16 of 16 runs
/// (seeds 1..=8, from `K = 1` and from `K = 10`; 15 of 16 in the sweep that picked them,
/// whose code differed in float rounding only). Lillicrap et al.'s `actor_lr` 1e-4 /
/// `critic_lr` 1e-3 with `noise_decay` 0.98 managed 4 of 8, mostly because the actor
/// lagged a critic that already knew better; see the field notes.
#[derive(Clone, Debug, PartialEq)]
pub struct DdpgConfig {
    /// Length of the state vector (must be at least 1).
    pub state_dim: usize,
    /// Width of the three hidden layers of both networks (128).
    pub hidden: usize,
    /// Adam step of the actor (1e-3). Lillicrap et al. use 1e-4, but K moves only when
    /// the action crosses ±1/3, so the critic's gradient inside a band is nearly flat and
    /// a slow actor kept choosing a neighbour of the best `K` long after the critic
    /// ranked them right (14 and 15 of 16 toy runs at 1e-3, 4 of 8 at 1e-4).
    pub actor_lr: f64,
    /// Adam step of the critic (3e-4): rewards are noisy measurements, and a slower critic
    /// averages them (15 of 16 toy runs; 14 of 16 at 1e-3).
    pub critic_lr: f64,
    /// Discount of future rewards (0.9). A mission's action moves `K` by at most one, so
    /// reaching a better `K` can take several missions through worse ones; 0.9 looks about
    /// ten missions ahead, which spans `1..=T` for the usual `T <= 10`, while keeping
    /// Q-values (about `reward / (1 - gamma)`) small enough for the critic to resolve
    /// the few-percent cost differences between neighbouring `K`.
    pub gamma: f64,
    /// Soft target update rate (0.01).
    pub tau: f64,
    /// Minibatch size (64).
    pub batch: usize,
    /// Transitions the replay buffer keeps (5000: at one transition per mission, hours
    /// of history; older ones are overwritten first).
    pub replay_capacity: usize,
    /// Standard deviation of the exploration noise on the action at start and after
    /// [`DdpgAgent::reset_noise`] (0.5: half the time the noise alone crosses a ±1/3
    /// threshold, so `K` is tried on both sides).
    pub noise_start: f64,
    /// Factor applied to the noise by each [`DdpgAgent::decay_noise`] (0.99 per mission:
    /// the noise halves in about 70 trained missions and reaches the floor after ~230;
    /// 0.98 left too little exploration for the critic to rank neighbouring `K`s: 12 of
    /// 16 toy runs against 14).
    pub noise_decay: f64,
    /// Floor of the noise (0.05: keeps the critic's view of nearby actions fresh; from an
    /// action at the middle of a band it moves `K` by chance practically never).
    pub noise_min: f64,
    /// Seed of the weights, the minibatch sampling and the noise.
    pub seed: u64,
}

impl Default for DdpgConfig {
    /// The defaults with `state_dim = 0`, which [`DdpgAgent::new`] refuses: set it, or use
    /// [`DdpgConfig::new`].
    fn default() -> Self {
        DdpgConfig {
            state_dim: 0,
            hidden: 128,
            actor_lr: 1e-3,
            critic_lr: 3e-4,
            gamma: 0.9,
            tau: 0.01,
            batch: 64,
            replay_capacity: 5000,
            noise_start: 0.5,
            noise_decay: 0.99,
            noise_min: 0.05,
            seed: 0x5255_534b_4559, // "RUSKEY"
        }
    }
}

impl DdpgConfig {
    /// The defaults for a state of `state_dim` features.
    pub fn new(state_dim: usize) -> Self {
        DdpgConfig {
            state_dim,
            ..DdpgConfig::default()
        }
    }

    /// Why this configuration is unusable, if it is.
    fn problem(&self) -> Option<String> {
        let pos = |v: f64| v.is_finite() && v > 0.0;
        if self.state_dim == 0 || self.state_dim > MAX_STATE_DIM {
            return Some(format!(
                "state_dim {} not in 1..={MAX_STATE_DIM}",
                self.state_dim
            ));
        }
        if self.hidden == 0 || self.hidden > MAX_HIDDEN {
            return Some(format!("hidden {} not in 1..={MAX_HIDDEN}", self.hidden));
        }
        if !pos(self.actor_lr) || !pos(self.critic_lr) {
            return Some(format!(
                "learning rates {} / {} must be positive",
                self.actor_lr, self.critic_lr
            ));
        }
        if !(self.gamma >= 0.0 && self.gamma < 1.0) {
            return Some(format!("gamma {} not in [0, 1)", self.gamma));
        }
        if !(self.tau > 0.0 && self.tau <= 1.0) {
            return Some(format!("tau {} not in (0, 1]", self.tau));
        }
        if self.batch == 0 || self.batch > MAX_BATCH {
            return Some(format!("batch {} not in 1..={MAX_BATCH}", self.batch));
        }
        if self.replay_capacity == 0 || self.replay_capacity > MAX_REPLAY {
            return Some(format!(
                "replay_capacity {} not in 1..={MAX_REPLAY}",
                self.replay_capacity
            ));
        }
        let nonneg = |v: f64| v.is_finite() && v >= 0.0;
        if !nonneg(self.noise_start) || !nonneg(self.noise_min) {
            return Some(format!(
                "noise_start {} / noise_min {} must be finite and >= 0",
                self.noise_start, self.noise_min
            ));
        }
        if !(self.noise_decay > 0.0 && self.noise_decay <= 1.0) {
            return Some(format!("noise_decay {} not in (0, 1]", self.noise_decay));
        }
        None
    }
}

/// Maps an action in `[-1, 1]` to a change of `K`: below `-1/3` is `-1`, above `1/3` is
/// `+1`, anything else (including NaN) is `0`.
pub fn action_delta(a: f32) -> i32 {
    const THIRD: f32 = 1.0 / 3.0;
    if a < -THIRD {
        -1
    } else if a > THIRD {
        1
    } else {
        0
    }
}

/// The next compaction policy of a level: `clamp(k + action_delta(a), 1, t)` (a `t` of 0
/// is taken as 1).
pub fn next_k(k: usize, a: f32, t: usize) -> usize {
    let t = t.max(1) as i64;
    (k as i64 + action_delta(a) as i64).clamp(1, t) as usize
}

/// SplitMix64 (Steele, Lea & Flood 2014): one `u64` of state, good enough statistics for
/// minibatch sampling, exploration noise and the simulations that must replay (RusKey's
/// cost model and Lerp use it too).
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` (`n > 0`), by Lemire's multiply-shift.
    fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Standard normal (Box-Muller; the second value is dropped).
    fn gaussian(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64(); // (0, 1]
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

fn tensor_err(e: candle_core::Error) -> Error {
    Error::InvalidArgument(format!("ddpg tensor operation failed: {e}"))
}

/// `(out, in)` of each linear layer of a network with `input` features.
fn layer_dims(input: usize, hidden: usize) -> [(usize, usize); LAYERS] {
    [
        (hidden, input),
        (hidden, hidden),
        (hidden, hidden),
        (1, hidden),
    ]
}

/// One of the four networks: its variables live in a [`VarMap`] (names `l{i}.weight`,
/// `l{i}.bias`); `vars` keeps them in layer order for the checkpoint and the soft update.
struct Net {
    varmap: VarMap,
    vars: Vec<Var>,
    layers: Vec<Linear>,
    tanh_out: bool,
}

impl Net {
    /// A network from its parameters: per layer, the row-major weight and the bias.
    fn from_params(
        dims: &[(usize, usize); LAYERS],
        params: Vec<(Vec<f32>, Vec<f32>)>,
        tanh_out: bool,
    ) -> Result<Net> {
        let varmap = VarMap::new();
        let mut vars = Vec::with_capacity(2 * LAYERS);
        let mut layers = Vec::with_capacity(LAYERS);
        {
            let mut data = varmap
                .data()
                .lock()
                .map_err(|_| Error::InvalidArgument("ddpg varmap poisoned".into()))?;
            for (i, ((out, inp), (w, b))) in dims.iter().zip(params).enumerate() {
                let w = Var::from_tensor(
                    &Tensor::from_vec(w, (*out, *inp), &Device::Cpu).map_err(tensor_err)?,
                )
                .map_err(tensor_err)?;
                let b =
                    Var::from_tensor(&Tensor::from_vec(b, *out, &Device::Cpu).map_err(tensor_err)?)
                        .map_err(tensor_err)?;
                data.insert(format!("l{i}.weight"), w.clone());
                data.insert(format!("l{i}.bias"), b.clone());
                layers.push(Linear::new(
                    w.as_tensor().clone(),
                    Some(b.as_tensor().clone()),
                ));
                vars.push(w);
                vars.push(b);
            }
        }
        Ok(Net {
            varmap,
            vars,
            layers,
            tanh_out,
        })
    }

    /// A freshly initialised network (Lillicrap et al.'s initialisation).
    fn init(dims: &[(usize, usize); LAYERS], rng: &mut SplitMix64, tanh_out: bool) -> Result<Net> {
        let mut params = Vec::with_capacity(LAYERS);
        for (i, &(out, inp)) in dims.iter().enumerate() {
            let bound = if i + 1 == LAYERS {
                FINAL_INIT
            } else {
                1.0 / (inp as f64).sqrt()
            };
            let mut uniform = |n: usize| -> Vec<f32> {
                (0..n)
                    .map(|_| ((rng.next_f64() * 2.0 - 1.0) * bound) as f32)
                    .collect()
            };
            let w = uniform(out * inp);
            let b = uniform(out);
            params.push((w, b));
        }
        Net::from_params(dims, params, tanh_out)
    }

    /// A copy with its own variables (a target network).
    fn duplicate(&self, dims: &[(usize, usize); LAYERS]) -> Result<Net> {
        Net::from_params(dims, self.params()?, self.tanh_out)
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = self.forward_pre(x, false)?;
        if self.tanh_out {
            y.tanh()
        } else {
            Ok(y)
        }
    }

    /// The output before the final `tanh`. With `frozen`, the weights enter as constants:
    /// a backward pass goes through the network to its input but computes no gradient
    /// for its weights (the actor's update needs the critic's `dQ/da`, not `dQ/dtheta`).
    fn forward_pre(&self, x: &Tensor, frozen: bool) -> candle_core::Result<Tensor> {
        let mut x = x.clone();
        for (i, layer) in self.layers.iter().enumerate() {
            x = if frozen {
                let w = layer.weight().detach();
                let b = layer.bias().map(Tensor::detach);
                Linear::new(w, b).forward(&x)?
            } else {
                layer.forward(&x)?
            };
            if i + 1 < LAYERS {
                x = x.relu()?;
            }
        }
        Ok(x)
    }

    /// Per layer, the row-major weight and the bias.
    fn params(&self) -> Result<Vec<(Vec<f32>, Vec<f32>)>> {
        let flat = |v: &Var| -> Result<Vec<f32>> {
            v.as_tensor()
                .flatten_all()
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(tensor_err)
        };
        self.vars
            .chunks(2)
            .map(|wb| Ok((flat(&wb[0])?, flat(&wb[1])?)))
            .collect()
    }

    /// `self <- tau * src + (1 - tau) * self`.
    fn soft_update(&self, src: &Net, tau: f64) -> candle_core::Result<()> {
        for (t, s) in self.vars.iter().zip(&src.vars) {
            let next = ((s.as_tensor() * tau)? + (t.as_tensor() * (1.0 - tau))?)?;
            t.set(&next)?;
        }
        Ok(())
    }

    fn optimizer(&self, lr: f64) -> Result<AdamW> {
        let params = ParamsAdamW {
            lr,
            weight_decay: 0.0,
            ..ParamsAdamW::default()
        };
        AdamW::new(self.varmap.all_vars(), params).map_err(tensor_err)
    }
}

/// The replay buffer: a ring of `(s, a, r, s2)` records stored flat.
struct Replay {
    capacity: usize,
    /// Floats per record: `2 * state_dim + 2`.
    record: usize,
    /// `len * record` floats.
    data: Vec<f32>,
    len: usize,
    /// Where the next record goes once the ring is full.
    head: usize,
}

impl Replay {
    fn new(capacity: usize, state_dim: usize) -> Replay {
        Replay {
            capacity,
            record: 2 * state_dim + 2,
            data: Vec::new(),
            len: 0,
            head: 0,
        }
    }

    fn push(&mut self, s: &[f32], a: f32, r: f32, s2: &[f32]) {
        let at = if self.len < self.capacity {
            self.data.resize((self.len + 1) * self.record, 0.0);
            self.len += 1;
            self.len - 1
        } else {
            self.head
        };
        // Until the ring is full `head == len`; then it walks over the oldest record.
        self.head = (at + 1) % self.capacity;
        let rec = &mut self.data[at * self.record..(at + 1) * self.record];
        let d = s.len();
        rec[..d].copy_from_slice(s);
        rec[d] = a;
        rec[d + 1] = r;
        rec[d + 2..].copy_from_slice(s2);
    }
}

/// A DDPG agent for one FLSM-tree level: actor, critic, their targets, the replay buffer
/// and the exploration noise. See the [module documentation](self).
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
    /// the [module documentation](self).
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

fn corrupt(detail: impl Into<String>) -> Error {
    Error::corruption(FILE, detail)
}

fn put_f32s(out: &mut Vec<u8>, v: &[f32]) {
    out.reserve(v.len() * 4);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Reads little-endian values off the front of a byte slice, advancing it.
struct Reader<'a, 'b>(&'a mut &'b [u8]);

impl<'b> Reader<'_, 'b> {
    fn take(&mut self, n: usize) -> Result<&'b [u8]> {
        if self.0.len() < n {
            return Err(corrupt(format!(
                "truncated: {n} bytes needed, {} left",
                self.0.len()
            )));
        }
        let (head, tail) = self.0.split_at(n);
        *self.0 = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// `n` finite floats; the length is checked against the input before allocating.
    fn finite_f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>> {
        let bytes = n
            .checked_mul(4)
            .ok_or_else(|| corrupt(format!("{what} size overflows")))?;
        let raw = self.take(bytes)?;
        let v: Vec<f32> = raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if v.iter().any(|x| !x.is_finite()) {
            return Err(corrupt(format!("non-finite {what}")));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn action_mapping_and_clipping() {
        let third = 1.0f32 / 3.0;
        assert_eq!(action_delta(-1.0), -1);
        assert_eq!(action_delta(-0.34), -1);
        assert_eq!(action_delta(-third), 0);
        assert_eq!(action_delta(-0.33), 0);
        assert_eq!(action_delta(0.0), 0);
        assert_eq!(action_delta(0.33), 0);
        assert_eq!(action_delta(third), 0);
        assert_eq!(action_delta(0.34), 1);
        assert_eq!(action_delta(1.0), 1);
        assert_eq!(action_delta(f32::NAN), 0);
        assert_eq!(next_k(1, -1.0, 10), 1);
        assert_eq!(next_k(10, 1.0, 10), 10);
        assert_eq!(next_k(5, 0.0, 10), 5);
        assert_eq!(next_k(5, 0.3, 10), 5);
        assert_eq!(next_k(5, 0.4, 10), 6);
        assert_eq!(next_k(5, -0.4, 10), 4);
        assert_eq!(next_k(1, 0.9, 10), 2);
        assert_eq!(next_k(10, -0.9, 10), 9);
        // Out-of-range inputs are brought back into 1..=t.
        assert_eq!(next_k(12, 0.0, 10), 10);
        assert_eq!(next_k(0, 0.0, 10), 1);
        assert_eq!(next_k(3, 1.0, 0), 1);
    }

    #[test]
    fn config_validation_and_noise_schedule() {
        assert!(DdpgAgent::new(DdpgConfig::default()).is_err());
        for bad in [
            DdpgConfig {
                gamma: 1.0,
                ..DdpgConfig::new(2)
            },
            DdpgConfig {
                tau: 0.0,
                ..DdpgConfig::new(2)
            },
            DdpgConfig {
                actor_lr: f64::NAN,
                ..DdpgConfig::new(2)
            },
            DdpgConfig {
                batch: 0,
                ..DdpgConfig::new(2)
            },
        ] {
            assert!(matches!(
                DdpgAgent::new(bad),
                Err(Error::InvalidArgument(_))
            ));
        }
        let cfg = DdpgConfig {
            hidden: 8,
            batch: 2,
            noise_start: 0.5,
            noise_decay: 0.5,
            noise_min: 0.1,
            ..DdpgConfig::new(2)
        };
        let mut agent = DdpgAgent::new(cfg).unwrap();
        assert_eq!(agent.noise(), 0.5);

        // Wrong or non-finite states are refused; bad transitions are dropped.
        assert!(agent.act(&[0.0], false).is_err());
        assert!(agent.act(&[0.0, f32::NAN], false).is_err());
        agent.remember(&[0.0, 1.0], 0.5, f32::NAN, &[0.0, 1.0]);
        agent.remember(&[0.0], 0.5, 1.0, &[0.0, 1.0]);
        agent.remember(&[0.0, 1.0], 0.5, 1.0, &[0.0, f32::INFINITY]);
        assert_eq!(agent.replay_len(), 0);
        agent.remember(&[0.0, 1.0], 0.5, 1.0, &[0.0, 1.0]);
        assert_eq!(agent.replay_len(), 1);
        // Fewer samples than a batch: no training, and the noise holds.
        assert_eq!(agent.train(4).unwrap(), None);
        agent.decay_noise();
        assert_eq!(agent.noise(), 0.5);
        agent.remember(&[1.0, 0.0], -0.5, 2.0, &[0.0, 1.0]);
        assert!(agent.train(1).unwrap().is_some());
        assert_eq!(agent.train(0).unwrap(), None);
        agent.decay_noise();
        assert_eq!(agent.noise(), 0.25);
        agent.decay_noise();
        agent.decay_noise();
        assert_eq!(agent.noise(), 0.1);
        agent.reset_noise();
        assert_eq!(agent.noise(), 0.5);

        // Greedy acting touches nothing; exploring stays in [-1, 1] and varies.
        let s = [0.3, -0.2];
        let a0 = agent.act(&s, false).unwrap();
        assert!(a0.abs() < 0.1, "{a0}");
        assert_eq!(agent.act(&s, false).unwrap().to_bits(), a0.to_bits());
        let explored: Vec<f32> = (0..50).map(|_| agent.act(&s, true).unwrap()).collect();
        assert!(explored.iter().all(|a| (-1.0..=1.0).contains(a)));
        assert!(explored.iter().any(|&a| (a - a0).abs() > 0.2));

        fn is_send<T: Send>() {}
        is_send::<DdpgAgent>();
    }

    #[test]
    fn same_seed_same_agent() {
        let run = |seed: u64| {
            let cfg = DdpgConfig {
                hidden: 16,
                batch: 8,
                seed,
                ..DdpgConfig::new(3)
            };
            let mut agent = DdpgAgent::new(cfg).unwrap();
            let mut rng = SplitMix64(99);
            for _ in 0..20 {
                let s: Vec<f32> = (0..3).map(|_| rng.next_f64() as f32).collect();
                let s2: Vec<f32> = (0..3).map(|_| rng.next_f64() as f32).collect();
                let a = agent.act(&s, true).unwrap();
                agent.remember(&s, a, -(rng.next_f64() as f32), &s2);
                agent.train(2).unwrap();
            }
            let mut out = Vec::new();
            agent.save(&mut out);
            out
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    // ---- The toy level: cost(K) = K + 16/K on K in 1..=10, best at K = 4. ----

    const T: usize = 10;
    const COST_REF: f64 = 10.0;

    fn cost(k: usize) -> f64 {
        k as f64 + 16.0 / k as f64
    }

    /// The measured cost of a mission at `k`: the true cost with ±3% uniform noise.
    fn observe(k: usize, rng: &mut SplitMix64) -> f64 {
        cost(k) * (1.0 + 0.03 * (2.0 * rng.next_f64() - 1.0))
    }

    /// The state: K/T, the last mission's measured cost (normalised), a bias feature.
    fn toy_state(k: usize, c: f64) -> [f32; 3] {
        [k as f32 / T as f32, (c / COST_REF) as f32, 1.0]
    }

    const TOY_MISSIONS: usize = 300;
    const TOY_GREEDY: usize = 30;
    const TOY_STEPS: usize = 8;

    /// Runs the toy from `start`: `TOY_MISSIONS` missions of `train(steps)`, the last
    /// `TOY_GREEDY` of them without exploration. Returns the agent and the K of those
    /// greedy missions.
    fn run_toy_with(
        start: usize,
        cfg: DdpgConfig,
        steps: usize,
        print: bool,
    ) -> (DdpgAgent, Vec<usize>) {
        let seed = cfg.seed;
        let mut agent = DdpgAgent::new(cfg).unwrap();
        let mut env = SplitMix64(seed ^ 0xe4f);
        let (mut k, mut c) = (start, 0.0);
        c += observe(k, &mut env);
        let mut greedy_ks = Vec::new();
        let mut trace = String::new();
        for m in 0..TOY_MISSIONS {
            let explore = m < TOY_MISSIONS - TOY_GREEDY;
            let s = toy_state(k, c);
            let a = agent.act(&s, explore).unwrap();
            let k2 = next_k(k, a, T);
            let c2 = observe(k2, &mut env);
            agent.remember(&s, a, -(c2 / COST_REF) as f32, &toy_state(k2, c2));
            agent.train(steps).unwrap();
            agent.decay_noise();
            if !explore {
                greedy_ks.push(k2);
            }
            trace.push_str(&k2.to_string());
            trace.push(if m % 50 == 49 { '\n' } else { ' ' });
            (k, c) = (k2, c2);
        }
        if print {
            println!("toy from K={start} seed {seed}, K per mission:\n{trace}");
        }
        (agent, greedy_ks)
    }

    /// The K a greedy rollout of `steps` missions from `start` visits.
    fn greedy_rollout(agent: &mut DdpgAgent, start: usize, steps: usize) -> Vec<usize> {
        let mut env = SplitMix64(start as u64);
        let mut k = start;
        let mut ks = Vec::new();
        for _ in 0..steps {
            let a = agent
                .act(&toy_state(k, observe(k, &mut env)), false)
                .unwrap();
            k = next_k(k, a, T);
            ks.push(k);
        }
        ks
    }

    /// Runs the toy and judges it: `Err` says why it failed.
    fn toy_outcome(start: usize, seed: u64, print: bool) -> std::result::Result<(), String> {
        let t0 = Instant::now();
        let cfg = DdpgConfig {
            seed,
            ..DdpgConfig::new(3)
        };
        let (mut agent, ks) = run_toy_with(start, cfg, TOY_STEPS, print);
        let at4 = ks.iter().filter(|&&k| k == 4).count();
        let policy: Vec<String> = (1..=T)
            .map(|k| format!("{:+.2}", agent.act(&toy_state(k, cost(k)), false).unwrap()))
            .collect();
        println!(
            "toy from K={start} seed {seed}: greedy K {ks:?}, {at4}/{TOY_GREEDY} at 4; actions \
             at K=1..10 (true cost) {policy:?}; {:.1} s",
            t0.elapsed().as_secs_f64()
        );
        if at4 < 25 {
            return Err(format!(
                "only {at4} of {TOY_GREEDY} greedy missions at K=4: {ks:?}"
            ));
        }
        if !ks.iter().all(|k| (3..=5).contains(k)) {
            return Err(format!("greedy missions left 3..=5: {ks:?}"));
        }
        // The policy is not merely "stay": from the start it walks to 4 (at least 3 or 6
        // missions away; the noisy cost in the state may make it hesitate) and holds there.
        let from_start = greedy_rollout(&mut agent, start, 12);
        if !from_start[9..].iter().all(|&k| k == 4) {
            return Err(format!("greedy from K={start}: {from_start:?}"));
        }
        Ok(())
    }

    #[test]
    fn toy_optimum_from_k1() {
        toy_outcome(1, 1, true).unwrap();
    }

    #[test]
    fn toy_optimum_from_k10() {
        toy_outcome(10, 2, true).unwrap();
    }

    /// The success rate behind the defaults (16 of 16 when last run). Slow: run
    /// with `cargo test --release -p cairn --lib toy_optimum_many_seeds -- --ignored`.
    #[test]
    #[ignore]
    fn toy_optimum_many_seeds() {
        let mut failures = Vec::new();
        for start in [1, 10] {
            for seed in 1..=8 {
                if let Err(e) = toy_outcome(start, seed, false) {
                    failures.push(format!("K={start} seed {seed}: {e}"));
                }
            }
        }
        println!("{} of 16 toy runs failed: {failures:#?}", failures.len());
        assert!(failures.len() <= 2, "{failures:#?}");
    }

    // ---- Checkpoints ----

    /// A small trained agent whose replay has wrapped around.
    fn small_agent(hidden: usize, capacity: usize, pushes: usize) -> DdpgAgent {
        let cfg = DdpgConfig {
            hidden,
            batch: 4,
            replay_capacity: capacity,
            ..DdpgConfig::new(3)
        };
        let mut agent = DdpgAgent::new(cfg).unwrap();
        let mut rng = SplitMix64(5);
        for _ in 0..pushes {
            let s: Vec<f32> = (0..3).map(|_| rng.next_f64() as f32).collect();
            let s2: Vec<f32> = (0..3).map(|_| rng.next_f64() as f32).collect();
            let a = agent.act(&s, true).unwrap();
            agent.remember(&s, a, -(rng.next_f64() as f32), &s2);
            agent.train(1).unwrap();
            agent.decay_noise();
        }
        agent
    }

    fn probe_states() -> Vec<[f32; 3]> {
        let mut rng = SplitMix64(11);
        (0..16)
            .map(|_| [0; 3].map(|_| (rng.next_f64() * 2.0 - 1.0) as f32))
            .collect()
    }

    #[test]
    fn save_load_round_trip() {
        let mut agent = small_agent(32, 40, 57);
        assert_eq!(agent.replay_len(), 40);
        let mut bytes = vec![0xAB]; // save appends
        agent.save(&mut bytes);
        let other = small_agent(8, 10, 3);
        other.save(&mut bytes);
        bytes.extend_from_slice(b"tail");

        let mut input = &bytes[1..];
        let mut loaded = DdpgAgent::load(&mut input).unwrap();
        let loaded_other = DdpgAgent::load(&mut input).unwrap();
        assert_eq!(input, b"tail");
        assert_eq!(loaded_other.replay_len(), 3);
        assert_eq!(loaded_other.config(), other.config());

        assert_eq!(loaded.config(), agent.config());
        assert_eq!(loaded.replay_len(), agent.replay_len());
        assert_eq!(loaded.noise(), agent.noise());
        for s in probe_states() {
            let a = agent.act(&s, false).unwrap();
            let b = loaded.act(&s, false).unwrap();
            assert_eq!(a.to_bits(), b.to_bits());
        }
        // Same generator state: the same exploration draws.
        let s = probe_states()[0];
        for _ in 0..5 {
            assert_eq!(
                agent.act(&s, true).unwrap().to_bits(),
                loaded.act(&s, true).unwrap().to_bits()
            );
        }
        // Saving the loaded agent writes the same bytes.
        let mut again = Vec::new();
        loaded.save(&mut again);
        let mut first = Vec::new();
        agent.save(&mut first);
        assert_eq!(again, first);

        // The loaded agent trains on.
        let before: Vec<f32> = probe_states()
            .iter()
            .map(|s| loaded.act(s, false).unwrap())
            .collect();
        let loss = loaded.train(5).unwrap().expect("trained");
        assert!(loss.is_finite());
        let after: Vec<f32> = probe_states()
            .iter()
            .map(|s| loaded.act(s, false).unwrap())
            .collect();
        assert_ne!(before, after);
        loaded.remember(&s, 0.1, -1.0, &s);
        assert_eq!(loaded.replay_len(), 40);
    }

    fn load_all(bytes: &[u8]) -> Result<DdpgAgent> {
        let mut input = bytes;
        DdpgAgent::load(&mut input)
    }

    /// Overwrites a header field at `off` (relative to the header) and fixes the checksum.
    fn patch_header(bytes: &[u8], off: usize, field: &[u8]) -> Vec<u8> {
        let mut b = bytes.to_vec();
        b[8 + off..8 + off + field.len()].copy_from_slice(field);
        let crc = crc32c::crc32c(&b[8..8 + HEADER_LEN]);
        b[8 + HEADER_LEN..12 + HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        b
    }

    #[test]
    fn damaged_checkpoints_are_errors() {
        let agent = small_agent(4, 8, 6);
        let mut bytes = Vec::new();
        agent.save(&mut bytes);
        assert!(load_all(&bytes).is_ok());
        println!("small checkpoint: {} bytes", bytes.len());

        // Every truncation.
        for len in 0..bytes.len() {
            let e = load_all(&bytes[..len]).expect_err("truncated checkpoint loaded");
            assert!(e.is_corruption(), "{e}");
        }

        // Every bit of magic, version, header, header checksum and the layer dimensions.
        let body = 12 + HEADER_LEN;
        let mut dims_at = Vec::new();
        let mut at = body;
        for dims in [
            layer_dims(3, 4),
            layer_dims(4, 4),
            layer_dims(3, 4),
            layer_dims(4, 4),
        ] {
            for (out, inp) in dims {
                dims_at.extend(at..at + 8);
                at += 8 + 4 * (out * inp + out);
            }
        }
        assert_eq!(bytes.len(), at + 4 * 6 * (2 * 3 + 2));
        for i in (0..body).chain(dims_at) {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                let e = load_all(&b).expect_err("flipped header bit loaded");
                assert!(e.is_corruption(), "{e}");
            }
        }

        // Non-finite weights (first, last of the actor; a target critic's) and replay.
        let first_weight = body + 8;
        let mut nonfinite_at = vec![first_weight, at - 4, at - 4 * 6 * 8 - 4];
        nonfinite_at.push(dims_at_of_layer(&bytes, 13) + 8);
        for &i in &nonfinite_at {
            for v in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                let mut b = bytes.clone();
                b[i..i + 4].copy_from_slice(&v.to_le_bytes());
                let e = load_all(&b).expect_err("non-finite value loaded");
                assert!(e.is_corruption(), "{e}");
            }
        }

        // Absurd values behind a valid header checksum.
        let absurd: [(usize, Vec<u8>); 9] = [
            (0, (1u32 << 30).to_le_bytes().to_vec()),  // state_dim
            (0, 0u32.to_le_bytes().to_vec()),          // state_dim
            (4, u32::MAX.to_le_bytes().to_vec()),      // hidden
            (8, (-1.0f64).to_le_bytes().to_vec()),     // actor_lr
            (24, 1.5f64.to_le_bytes().to_vec()),       // gamma
            (40, u32::MAX.to_le_bytes().to_vec()),     // batch
            (44, (1u32 << 31).to_le_bytes().to_vec()), // replay_capacity
            (80, f64::NAN.to_le_bytes().to_vec()),     // noise
            (96, 9u32.to_le_bytes().to_vec()),         // replay_len > capacity
        ];
        for (off, field) in absurd {
            let e = load_all(&patch_header(&bytes, off, &field)).expect_err("absurd header");
            assert!(e.is_corruption(), "{e}");
        }
        // A consistent header that promises more than is there.
        let big = patch_header(&bytes, 4, &(4000u32).to_le_bytes());
        assert!(load_all(&big).unwrap_err().is_corruption());
        // A newer version.
        let mut newer = bytes.clone();
        newer[4..8].copy_from_slice(&2u32.to_le_bytes());
        assert!(matches!(
            load_all(&newer),
            Err(Error::UnsupportedVersion { found: 2, .. })
        ));

        // Random byte damage anywhere: an error or a working agent, never a panic.
        let mut rng = SplitMix64(1234);
        let mut loaded = 0;
        for _ in 0..2000 {
            let mut b = bytes.clone();
            for _ in 0..1 + rng.below(3) {
                let i = rng.below(b.len());
                b[i] = rng.next_u64() as u8;
            }
            if let Ok(mut a) = load_all(&b) {
                loaded += 1;
                let _ = a.act(&[0.1, 0.2, 0.3], false);
                let _ = a.train(1);
            }
        }
        println!("random damage: {loaded} of 2000 damaged checkpoints still loaded");
    }

    /// Offset of the dimensions of layer `n` (0-based over all four networks) of a
    /// `small_agent(4, ..)` checkpoint.
    fn dims_at_of_layer(bytes: &[u8], n: usize) -> usize {
        let mut at = 12 + HEADER_LEN;
        for _ in 0..n {
            let out = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            let inp = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
            at += 8 + 4 * (out * inp + out);
        }
        at
    }

    fn time_train(label: &str) {
        let mut agent = DdpgAgent::new(DdpgConfig::new(8)).unwrap();
        let mut rng = SplitMix64(3);
        for _ in 0..200 {
            let s: Vec<f32> = (0..8).map(|_| rng.next_f64() as f32).collect();
            let s2: Vec<f32> = (0..8).map(|_| rng.next_f64() as f32).collect();
            agent.remember(&s, rng.next_f64() as f32, -(rng.next_f64() as f32), &s2);
        }
        agent.train(2).unwrap();
        let rounds = 10;
        let t0 = Instant::now();
        for _ in 0..rounds {
            agent.train(4).unwrap().unwrap();
        }
        let per = t0.elapsed().as_secs_f64() / rounds as f64;
        let t1 = Instant::now();
        for _ in 0..100 {
            agent.act(&[0.5; 8], true).unwrap();
        }
        let act = t1.elapsed().as_secs_f64() / 100.0;
        println!(
            "ddpg {label}: train(4) with batch 64, hidden 128, state_dim 8: {:.2} ms; \
             act: {:.1} us (RAYON_NUM_THREADS={:?})",
            per * 1e3,
            act * 1e6,
            std::env::var("RAYON_NUM_THREADS").ok()
        );
    }

    /// With discrete moves the critic's target is r + gamma times the target critic's best
    /// move in the next state, not its value of the target actor's proposal.
    #[test]
    fn the_critic_target_takes_the_best_move() {
        let mut cfg = DdpgConfig::new(3);
        cfg.seed = 11;
        let moves = [-1.0f32, 0.0, 1.0];
        let agent = DdpgAgent::new(cfg).unwrap().with_discrete_moves(&moves);
        let states = [[0.1f32, 0.5, 0.9], [0.7, 0.2, 0.4]];
        let rewards = [-0.5f32, 0.25];
        let dev = &Device::Cpu;
        let s2 = Tensor::from_vec(states.concat(), (2, 3), dev).unwrap();
        let r = Tensor::from_vec(rewards.to_vec(), (2, 1), dev).unwrap();
        let y: Vec<f32> = agent
            .critic_target(&r, &s2)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let gamma = agent.config().gamma as f32;
        for (i, s) in states.iter().enumerate() {
            let q_target = |m: f32| {
                let x = Tensor::from_vec([s.as_slice(), &[m]].concat(), (1, 4), dev).unwrap();
                agent
                    .target_critic
                    .forward(&x)
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap()[0]
            };
            let best = moves.iter().map(|&m| q_target(m)).fold(f32::MIN, f32::max);
            let want = rewards[i] + gamma * best;
            assert!(
                (y[i] - want).abs() < 1e-5,
                "row {i}: {} against {want}",
                y[i]
            );
        }
    }

    #[test]
    fn train_timing() {
        time_train(if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        });
    }
}
