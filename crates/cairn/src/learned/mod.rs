//! Learned indexes (Bourbon, Dai et al., OSDI 2020).
//!
//! [`plr`] is the model: Greedy piecewise linear regression with an error bound, over
//! the key numbers of a table's [`key_space`]. The
//! per-table index built from it is [`LearnedIndex`](crate::table::LearnedIndex). [`cba`]
//! is Bourbon's cost-benefit analyzer, which the database's background learner
//! (`db/learner.rs`) asks whether a table is worth learning under
//! [`LearnMode::Cba`](crate::options::LearnMode).
//!
//! Leaper (Yang et al., VLDB 2020), prefetching hot key ranges: [`gbdt`] evaluates the
//! LightGBM models the offline learner trains, and [`leaper_model`] reads the model bundle
//! it writes (`docs/design/formats/leaper.md`).
//!
//! RusKey (Mo et al.), tuning each level's compaction policy online: [`ddpg`] is its
//! reinforcement-learning agent, Deep Deterministic Policy Gradient in candle.
//!
//! SA-LSM (Zhang et al., VLDB 2022): the survival forest runs in the external service;
//! the engine loads what it predicts, a cold-key set ([`cold_set`]).

pub mod cba;
pub mod cold_set;
pub mod ddpg;
pub mod gbdt;
pub mod key_space;
pub mod leaper_model;
pub mod plr;
pub mod rng;

pub use cba::{CbaEstimate, CbaInput, LearnCost, PathSamples};
pub use cold_set::ColdSet;
#[cfg(feature = "ruskey")]
pub use ddpg::DdpgAgent;
pub use ddpg::DdpgConfig;
pub use gbdt::{GbdtModel, Objective};
pub use key_space::KeySpace;
pub use leaper_model::{LeaperMeta, LeaperModel};
pub use plr::{key_to_u64, Plr, PlrBuilder, Segment};
