//! What one table read did: the counts behind the statistics, the lookup-step times, and
//! what the policies that learn from reads use (Leaper's misses, AC-Key's block handle).

use super::format::BlockHandle;

/// What one read did, for statistics and for policies that learn from reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadTrace {
    /// The bloom filter was consulted.
    pub bloom_checked: bool,
    /// The bloom filter said the key is absent.
    pub bloom_negative: bool,
    /// Data blocks found in the block cache.
    pub data_hits: u32,
    /// Data blocks read from storage.
    pub data_misses: u32,
    /// Index lookups served from memory (pinned in the table or found in the cache).
    pub index_hits: u32,
    /// Index blocks read from storage (only with `cache_index_and_filter_blocks`).
    pub index_misses: u32,
    /// Filter probes served from memory (pinned in the table or found in the cache).
    pub filter_hits: u32,
    /// Filter blocks read from storage (only with `cache_index_and_filter_blocks`).
    pub filter_misses: u32,
    /// Storage reads issued.
    pub storage_reads: u32,
    /// Bytes read from storage.
    pub storage_bytes: u64,
    /// Storage reads of a few fixed-width entries (a learned get's window) instead of
    /// their whole block; also counted in `storage_reads`, not in `data_misses` (no block
    /// was loaded, so Leaper's prefetcher, which learns from block misses, skips them).
    pub chunk_reads: u32,
    /// Lookups answered by the table's learned index.
    pub learned_lookups: u32,
    /// Lookups the learned index handed to the fence pointers.
    pub learned_fallbacks: u32,
    /// Cached data blocks read for the first time since a prefetcher put them there.
    pub warmed_hits: u32,
    /// Nanoseconds of the index-and-block search when this lookup was sampled for timing
    /// (0: not sampled).
    pub sampled_ns: u64,
    /// Of `sampled_ns`, nanoseconds before the first data block was asked for (the
    /// index's part; the rest is the data block's).
    pub sampled_index_ns: u64,
    /// The sampled lookup went through a learned index (else the fence pointers).
    pub sampled_model: bool,
    /// Set by the caller: time this lookup's steps into `step_*_ns` (the database's
    /// lookup breakdown).
    pub time_steps: bool,
    /// Set by the caller: blocks read from storage are not put in the block cache
    /// ([`ReadOptions::fill_cache`](crate::ReadOptions::fill_cache) off).
    pub no_fill: bool,
    /// With `time_steps`: nanoseconds in the bloom filter.
    pub step_filter_ns: u64,
    /// With `time_steps`: nanoseconds finding the block and position (fences or model),
    /// up to the first data block asked for.
    pub step_index_ns: u64,
    /// With `time_steps`: nanoseconds from then on (fetching and searching data blocks).
    pub step_data_ns: u64,
    /// Where a get found its entry: the data block's number and handle (AC-Key's
    /// key-pointer cache keeps the handle, so a hit reads the block without the index).
    pub found_block: Option<(u32, BlockHandle)>,
}
