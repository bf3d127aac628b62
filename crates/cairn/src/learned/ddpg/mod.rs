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
//! * **Targets** `mu'`, `Q'`: separate copies (their own `VarMap`s) made at start and
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
//!
//! The networks and the agent need candle: they build with the `ruskey` feature (on by
//! default). The configuration and the action mapping do not.

#[cfg(feature = "ruskey")]
mod agent;
#[cfg(feature = "ruskey")]
mod checkpoint;
#[cfg(feature = "ruskey")]
mod net;
#[cfg(feature = "ruskey")]
mod replay;

pub use crate::learned::rng::SplitMix64;
#[cfg(feature = "ruskey")]
pub use agent::DdpgAgent;

/// What corruption errors name as the file.
#[cfg(feature = "ruskey")]
const FILE: &str = "ddpg checkpoint";
#[cfg(feature = "ruskey")]
const MAGIC: &[u8; 4] = b"RDPG";
#[cfg(feature = "ruskey")]
const VERSION: u32 = 1;
/// Bytes of the fixed header that follows magic and version.
#[cfg(feature = "ruskey")]
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
#[cfg(feature = "ruskey")]
const LAYERS: usize = 4;
/// Output layers are initialised uniform in `±FINAL_INIT` (Lillicrap et al.).
#[cfg(feature = "ruskey")]
const FINAL_INIT: f64 = 3e-3;
/// Weight of the actor's pre-`tanh` output, squared, in the actor's loss: it keeps `tanh`
/// out of saturation, where its gradient vanishes and the actor could no longer turn back.
#[cfg(feature = "ruskey")]
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
    #[cfg(feature = "ruskey")]
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
