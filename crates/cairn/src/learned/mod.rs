//! Learned indexes (Bourbon, Dai et al., OSDI 2020).
//!
//! This first step holds the model, [`plr`]: Greedy piecewise linear regression with an
//! error bound. The per-table index built from it is
//! [`LearnedIndex`](crate::table::LearnedIndex). The cost-benefit analyzer and background
//! learning of Bourbon are not here yet: with
//! [`IndexPolicy::Learned`](crate::options::IndexPolicy) every table is learned when it is
//! opened.

pub mod plr;

pub use plr::{key_to_u64, Plr, PlrBuilder, Segment};
