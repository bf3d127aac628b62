//! Learned indexes (Bourbon, Dai et al., OSDI 2020).
//!
//! [`plr`] is the model: Greedy piecewise linear regression with an error bound. The
//! per-table index built from it is [`LearnedIndex`](crate::table::LearnedIndex). [`cba`]
//! is Bourbon's cost-benefit analyzer, which the database's background learner
//! (`db/learner.rs`) asks whether a table is worth learning under
//! [`LearnMode::Cba`](crate::options::LearnMode).

pub mod cba;
pub mod plr;

pub use cba::{CbaEstimate, CbaInput};
pub use plr::{key_to_u64, Plr, PlrBuilder, Segment};
