//! Background policies that act on the engine's seams:
//! - Leaper's prefetcher and its baselines (the cache around flush and compaction,
//!   [`prefetch`]), with the hot-range prediction ([`hot_ranges`]), overlap check
//!   ([`overlap`]) and the staging of warmed blocks until install (`staging`) it uses;
//! - the compaction-policy tuner (K_i per level, [`tuner`]): RusKey's Lerp ([`lerp`]) with
//!   policy propagation ([`propagation`]), its exploration schedule ([`schedule`]) and
//!   per-mix reward units ([`mix_scale`]), a cost-model simulator to pretrain and test it
//!   ([`cost_model`]), an online eq. 5 prior for its exploration ([`cost_prior`], beyond
//!   the paper), and the greedy-threshold baseline;
//! - hot/cold placement ([`placement`]): SA-LSM's cold-key sets, the age rule and passive
//!   compaction, for the proactive compaction of `db/placement.rs`.

pub mod cost_model;
pub mod cost_prior;
pub mod hot_ranges;
pub mod lerp;
pub mod level_options;
pub mod mix_scale;
pub mod overlap;
pub mod placement;
pub mod prefetch;
pub mod propagation;
pub mod schedule;
pub(crate) mod staging;
pub mod tuner;

pub use hot_ranges::HotRangePredictor;
#[cfg(feature = "ruskey")]
pub use lerp::Lerp;
pub use lerp::LerpParams;
pub use placement::{Placement, PlacementOptions, PlacementPolicy};
pub use prefetch::{HotRangeSource, LeaperParams, PrefetchPolicy, PrefetchStats};
pub use propagation::Propagation;
pub use tuner::{CompactionTuner, MissionStats, TunerOptions, TunerPolicy, TunerStats};
