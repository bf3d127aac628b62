//! Background policies that act on the engine's seams. So far: the pieces of Leaper's
//! prefetcher (the cache around flush and compaction) that do not depend on a model:
//! the overlap check of Algorithm 3.

pub mod overlap;
