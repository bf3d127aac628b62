//! Background policies that act on the engine's seams. So far, Leaper's prefetcher and
//! its baselines (the cache around flush and compaction, [`prefetch`]), with the
//! hot-range prediction ([`hot_ranges`]) and overlap check ([`overlap`]) it uses.

pub mod hot_ranges;
pub mod overlap;
pub mod prefetch;

pub use hot_ranges::HotRangePredictor;
pub use prefetch::{HotRangeSource, LeaperParams, PrefetchPolicy, PrefetchStats};
