//! Options of a database, of writes and of reads, with validation.

use std::sync::Arc;

use crate::compression::Compression;
use crate::events::EventListener;
use crate::storage::TierConfig;
use crate::table::TableBuildOptions;
use crate::{Error, Result};

pub use crate::cache::read_cache_policy::{AcKeyParams, ReadCachePolicy};
pub use crate::policy::level_options::{BloomAllocation, Transition};
pub use crate::table::index_policy::{IndexPolicy, LearnMode, MAX_LEARNED_DELTA};

/// What to do with a corrupt record in the middle of a write-ahead log at recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WalRecovery {
    /// Fail to open with a corruption error (a torn tail is always truncated).
    Strict,
    /// Skip corrupt records and go on; the count is reported in stats.
    SkipCorrupt,
}

/// Options of a database.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Options {
    /// Create the database if the directory holds none.
    #[serde(skip)]
    pub create_if_missing: bool,
    /// Fail if a database already exists.
    #[serde(skip)]
    pub error_if_exists: bool,
    /// Bytes a memtable takes before it is switched and flushed.
    pub write_buffer_size: usize,
    /// Memtables (active + immutable) allowed before writes stop and wait for flushes.
    pub max_write_buffers: usize,
    /// The writers of a commit group each insert their own batch into the memtable, at
    /// once, after the group's leader has logged them all (RocksDB's
    /// `allow_concurrent_memtable_write`); off: the leader inserts every batch.
    pub concurrent_memtable_writes: bool,
    /// Target size of a data block (before compression).
    pub block_size: usize,
    /// How data and index blocks are compressed at levels that
    /// [`compression_per_level`](Self::compression_per_level) does not name. Default: LZ4.
    pub compression: Compression,
    /// Compression of level `i` for each `i` it covers (levels past its end use
    /// [`compression`](Self::compression)). Default: none at levels 0 and 1, where flushes
    /// and the busiest compactions write and data is soon rewritten (RocksDB's tuning
    /// advice).
    pub compression_per_level: Vec<Compression>,
    /// Compression of tables written to the bottommost level (the deepest level holding
    /// data, where most of it lives), whatever its level's setting; `None`: as its level.
    /// Default: Zstandard level 3, as RocksDB recommends.
    pub bottommost_compression: Option<Compression>,
    /// Byte budget of the block cache (ignored when `block_cache` is set).
    pub block_cache_bytes: usize,
    /// Number of shards of the block cache; 0 (the default): one per 512 KiB of
    /// capacity, a power of two from 1 to 64, as RocksDB's LRU cache picks them (small
    /// shards thrash when hot blocks hash unevenly).
    pub block_cache_shards: usize,
    /// Share of the block cache's budget for blocks hit since they came in (RocksDB's
    /// `high_pri_pool_ratio`, 0.5 by default there and here): new blocks enter below that
    /// part (midpoint insertion) and are evicted first unless read again. 0 is plain LRU.
    pub block_cache_hot_share: f64,
    /// A block cache to use instead of a new LRU cache (to share one between databases,
    /// or to plug in a policy). Each database keys its blocks apart from the others'.
    #[serde(skip)]
    pub block_cache: Option<Arc<dyn crate::cache::BlockCache>>,
    /// Average bloom-filter bits per key (0 disables filters).
    pub bloom_bits_per_key: f64,
    /// How bloom bits are spread over levels.
    pub bloom_allocation: BloomAllocation,
    /// Size ratio T between consecutive levels.
    pub size_ratio: usize,
    /// Capacity C_1 of level 1 in bytes; level i holds C_1 * T^(i-1).
    pub level1_bytes: u64,
    /// Number of levels, level 0 included. The last level has no capacity limit.
    pub num_levels: usize,
    /// Runs in level 0 that trigger a compaction into level 1 (K_0).
    pub l0_compaction_trigger: usize,
    /// Level-0 runs at which each write is delayed by 1 ms.
    pub l0_slowdown_trigger: usize,
    /// Level-0 runs at which writes stop until compaction catches up.
    pub l0_stop_trigger: usize,
    /// Initial run limit K_i of levels 1.. (index 0 is level 1); missing levels use 1.
    pub level_runs: Vec<usize>,
    /// Target size of table files written by flushes and compactions.
    pub target_file_size: u64,
    /// Read-triggered compaction (LevelDB's seek compaction): a seek that must position
    /// in a level-0 table and in another run is charged to the newest such table, and once
    /// the charges outnumber the merge's cost (one seek per 16 KiB of level 0 and the
    /// level-1 files it overlaps, at least 100 seeks), level 0 merges into level 1 below
    /// its run trigger, when no other compaction is due. Scans then merge fewer runs. On
    /// by default.
    pub read_triggered_compaction: bool,
    /// Threads one level-0 compaction may use (RocksDB's `max_subcompactions`): its key
    /// range is cut at data-block boundaries into up to this many ranges of about equal
    /// bytes (none below `target_file_size` or 1 MiB, whichever is smaller), merged in
    /// parallel and installed as one edit. 1 (the default, as in RocksDB) merges on the
    /// compaction thread alone. Merges that rewrite values into the value log are not
    /// split.
    pub max_subcompactions: usize,
    /// Compaction jobs that may run at once (RocksDB's `max_background_compactions`), each
    /// on a thread of its own. A job holds the levels from its source to its destination,
    /// and a second job takes only work on other levels: level 0 into level 1 beside level
    /// 2 into level 3, say. Manual and proactive compactions and value-log GC still run
    /// alone. 1 (the default, as RocksDB's default of two background jobs gives) keeps one
    /// compaction thread.
    pub max_background_compactions: usize,
    /// Read tables with `O_DIRECT` where the filesystem allows it.
    pub use_direct_reads: bool,
    /// Map tables and value-log files into memory and read them by copying out of the
    /// mapping, with no system call per read (RocksDB's `allow_mmap_reads`; LevelDB, and
    /// WiscKey and Bourbon on it, map tables by default). Reads through the page cache
    /// either way; `use_direct_reads` takes precedence for tables. Off by default. As with
    /// any mapped file, a device read error or another process truncating a mapped file
    /// raises SIGBUS instead of returning an error; checksums still catch damaged bytes.
    pub mmap_reads: bool,
    /// The most table and value-log files the database keeps open at once (RocksDB's
    /// `max_open_files`, whose table cache its blob files share). `None` (the default, as
    /// RocksDB's -1) keeps every file open from its first read until it is deleted.
    ///
    /// A bound `n` keeps an LRU of `n - 10` open tables and value-log files (10 are left
    /// for the write-ahead log, manifest, lock file and the files of running flushes and
    /// compactions, which read their inputs one file per sorted run at a time). Opening
    /// one more closes the least recently read file that no reader or iterator is using;
    /// a closed file opens again when next read (a table's index and filter are read
    /// again). Files in use are never closed under their users: while they outnumber
    /// the LRU's share, it holds them beyond it, as RocksDB's table cache does. A learned
    /// table (Bourbon) closed this way gets its model back from the model file saved
    /// beside it when opened again, or is learned again if it had none. Must be at
    /// least [`MIN_OPEN_FILES`].
    ///
    /// Unbounded is the default because it is the fastest: once a version's table has
    /// been read it is read with no lock at all, and no table is opened twice. With the
    /// default 64 MiB tables, the common 1024-descriptor limit covers some 60 GiB; a
    /// larger tree, or a process with a lower `RLIMIT_NOFILE`, needs a bound (or a
    /// higher limit), or reads fail with `EMFILE` (an I/O error) once the process runs
    /// out of descriptors. Bounded, each table read takes the lock of one of up to 16
    /// shards of the LRU, and a tree much larger than the bound reopens tables often.
    pub max_open_files: Option<usize>,
    /// Keep each table's index and bloom filter in the block cache, charged to its budget
    /// and evicted like data blocks (RocksDB's `cache_index_and_filter_blocks`), instead of
    /// pinned in memory beside it. Memory then stays within the cache's budget however many
    /// tables are open, and a lookup whose table's index or filter was evicted reads it
    /// again (one more storage read). With AC-Key a key-pointer hit skips them. A read
    /// cache that gives blocks no budget (`PureKv`, `PureKp`, a fixed split with no block
    /// part) cannot keep them: every probe then reads them again, as in AC-Key's paper's
    /// pure-KV and pure-KP baselines. Off by default, as in RocksDB.
    pub cache_index_and_filter_blocks: bool,
    /// Storage tiers; empty means one tier, the database directory, with no added latency.
    pub tiers: Vec<TierConfig>,
    /// Multiplier of the tiers' device-profile latencies (wall clock only).
    pub latency_scale: f64,
    /// The clock I/O is timed on: the wall clock (the default), or a virtual device clock
    /// that prices every I/O on a simulated device, deterministically (`crate::clock`).
    /// The virtual clock repeats exactly only with `background_work = false`, the caller
    /// driving background work at fixed points of its request stream.
    pub clock: crate::clock::Clock,
    /// Handling of mid-log WAL corruption at recovery.
    pub wal_recovery: WalRecovery,
    /// Listeners of flush and compaction events.
    #[serde(skip)]
    pub listeners: Vec<Arc<dyn EventListener>>,
    /// Write the event log `LOG` in the database directory, as RocksDB's info log: the
    /// options at open, flushes and compactions with their sizes and times, background
    /// errors, write stalls, warnings and the learned parts' decisions (never for a
    /// read-only open).
    pub info_log: bool,
    /// `LOG` is renamed `LOG.old.<micros>` and a new one started past this many bytes
    /// (0: only at each open).
    pub max_log_file_size: u64,
    /// Rotated event logs kept; older ones are removed.
    pub keep_log_file_num: usize,
    /// Every this many milliseconds a thread of its own writes the statistics to
    /// `STATS.json` (atomically) and a summary line to the event log, so tools can follow
    /// a running database; 0: only at close. Needs `background_work`.
    pub stats_dump_period_ms: u64,
    /// Start background flush and compaction threads (off only in tests that drive
    /// flushes and compactions by hand).
    pub background_work: bool,
    /// After flushes and compactions, hand the allocator's free pages back to the
    /// operating system (glibc's `malloc_trim`, which trims every arena of the process;
    /// Linux only): the background threads' arenas otherwise keep the memory their jobs
    /// freed. At most once per 200 ms; jobs that end sooner leave the release for the
    /// next idle moment. On by default: on the bench's readrandom it lowers peak RSS by
    /// 3.4 MiB (29.4-30.1 -> 26.3-26.7), with fillrandom's throughput unchanged within
    /// the noise at one and four threads. A release after every job cost 9% of
    /// fillrandom at one thread (pages handed back are faulted in again).
    pub release_memory_after_jobs: bool,
    /// The index tables use for point reads (fence pointers or Bourbon's learned index).
    pub index: IndexPolicy,
    /// How the read-cache budget (`block_cache_bytes`) is split between KV, KP and block
    /// caches (AC-Key). Other than `Block`, `block_cache` must be unset.
    pub read_cache: ReadCachePolicy,
    /// Key-value separation (WiscKey): values of at least this many bytes are written to a
    /// value log at flush, and the tree keeps the key and a pointer. `Some(0)` separates
    /// every value, `None` (the default) none. Values already separated stay readable
    /// whatever this is set to at a later open.
    pub value_threshold: Option<usize>,
    /// Write data blocks fixed-width where their keys and values are at most 255 bytes
    /// (Bourbon's key + pointer entries: with key-value separation every value is a short
    /// pointer). A learned index then reads only the few entries around its prediction,
    /// each chunk of four checksummed, instead of the whole block. Tables written with it
    /// are format version 3 (older builds refuse them); any build reads both layouts, so
    /// it can change between opens. Off by default; the `bourbon*` presets turn it on.
    pub fixed_width_entries: bool,
    /// Write tables' bloom filters in the cache-local layout: all of a key's probe bits
    /// lie in one 64-byte line, so a probe costs one cache miss and no division instead
    /// of up to `k` misses (the layout of RocksDB's newer filters), for a slightly higher
    /// false-positive rate at equal bits per key (about 1.0% against 0.8% at 10). Tables
    /// written with it are format version 4 (older builds refuse them); any build reads
    /// both layouts. On by default; off writes LevelDB's classic filter.
    pub cache_local_filter: bool,
    /// Value-log garbage collection: when the value log's bytes exceed this many times
    /// the bytes tables still reference, the files with the most garbage are collected by
    /// rewriting the tables that point into them. Must be a finite number > 1; `None`
    /// turns GC off (files are still deleted once nothing references them).
    pub vlog_gc_space_amp: Option<f64>,
    /// Access statistics per key range and time slot (Leaper's collector); `None` (the
    /// default) collects nothing and costs nothing.
    pub access: Option<crate::access::AccessOptions>,
    /// SA-LSM's query store: a record-level access trace per column family, exported
    /// with `Db::export_record_trace` for the external service and kept across restarts.
    /// `None` (the default) records nothing.
    pub records: Option<crate::access::RecordOptions>,
    /// Hot/cold placement and proactive compaction (SA-LSM and its baselines). Default:
    /// passive (data moves between tiers by level size only).
    pub placement: crate::policy::PlacementOptions,
    /// What happens to cached blocks around flushes and compactions (Leaper and its
    /// baselines). Default: blocks of deleted tables are erased.
    pub prefetch: crate::policy::PrefetchPolicy,
    /// T of the invalidation-miss metric (`DbStats::prefetch`), in milliseconds.
    pub invalidation_window_ms: u64,
    /// Count invalidation misses (Leaper's metric): every flush and compaction records
    /// the keys it moved, and every foreground block miss is looked up among them. Off by
    /// default (it costs the read path a shared lock per miss); the Leaper presets and
    /// their baselines turn it on, and Leaper's own policy always counts.
    pub invalidation_metric: bool,
    /// The compaction-policy tuner run after every mission of operations (RusKey's Lerp
    /// or its greedy baseline). Default: none, K_i stays as `level_runs` sets it.
    pub tuner: crate::policy::TunerOptions,
    /// Faults to inject into every storage operation, and simulated power loss: for
    /// tests of failing I/O (see [`FaultInjector`](crate::storage::FaultInjector)).
    #[serde(skip)]
    pub faults: Option<std::sync::Arc<crate::storage::FaultInjector>>,
    /// Options of named column families, laid over these ([`Options::for_family`]); a
    /// family not named here runs with these.
    pub column_families: std::collections::BTreeMap<String, crate::cf_options::CfOptions>,
}

/// The block cache's shard count for `capacity` bytes when `block_cache_shards` is 0:
/// RocksDB's rule, one shard per 512 KiB, a power of two in 1..=64.
pub fn auto_cache_shards(capacity: usize) -> usize {
    let per = capacity / (512 << 10);
    if per < 2 {
        return 1;
    }
    (1usize << per.ilog2()).min(64)
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_write_buffers: 3,
            concurrent_memtable_writes: true,
            block_size: 4096,
            compression: Compression::Lz4,
            compression_per_level: vec![Compression::None, Compression::None],
            bottommost_compression: Some(Compression::ZSTD),
            block_cache_bytes: 32 << 20,
            block_cache_shards: 0,
            block_cache_hot_share: crate::cache::DEFAULT_HOT_SHARE,
            block_cache: None,
            bloom_bits_per_key: 10.0,
            bloom_allocation: BloomAllocation::Uniform,
            size_ratio: 10,
            level1_bytes: 256 << 20,
            num_levels: 7,
            l0_compaction_trigger: 4,
            l0_slowdown_trigger: 20,
            l0_stop_trigger: 36,
            level_runs: Vec::new(),
            target_file_size: 64 << 20,
            read_triggered_compaction: true,
            max_subcompactions: 1,
            max_background_compactions: 1,
            use_direct_reads: false,
            max_open_files: None,
            cache_index_and_filter_blocks: false,
            tiers: Vec::new(),
            latency_scale: 1.0,
            clock: crate::clock::Clock::Wall,
            wal_recovery: WalRecovery::Strict,
            listeners: Vec::new(),
            info_log: true,
            max_log_file_size: 64 << 20,
            keep_log_file_num: 10,
            stats_dump_period_ms: 0,
            background_work: true,
            release_memory_after_jobs: true,
            index: IndexPolicy::Fence,
            read_cache: ReadCachePolicy::Block,
            value_threshold: None,
            fixed_width_entries: false,
            cache_local_filter: true,
            mmap_reads: false,
            vlog_gc_space_amp: Some(1.5),
            access: None,
            records: None,
            placement: Default::default(),
            prefetch: crate::policy::PrefetchPolicy::EagerEvict,
            invalidation_window_ms: 10_000,
            invalidation_metric: false,
            tuner: Default::default(),
            faults: None,
            column_families: Default::default(),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("write_buffer_size", &self.write_buffer_size)
            .field("block_size", &self.block_size)
            .field("compression", &self.compression)
            .field("compression_per_level", &self.compression_per_level)
            .field("bottommost_compression", &self.bottommost_compression)
            .field("block_cache_bytes", &self.block_cache_bytes)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("bloom_allocation", &self.bloom_allocation)
            .field("size_ratio", &self.size_ratio)
            .field("level1_bytes", &self.level1_bytes)
            .field("num_levels", &self.num_levels)
            .field("level_runs", &self.level_runs)
            .field("target_file_size", &self.target_file_size)
            .field("read_triggered_compaction", &self.read_triggered_compaction)
            .field("max_subcompactions", &self.max_subcompactions)
            .field(
                "max_background_compactions",
                &self.max_background_compactions,
            )
            .field("use_direct_reads", &self.use_direct_reads)
            .field("max_open_files", &self.max_open_files)
            .field(
                "cache_index_and_filter_blocks",
                &self.cache_index_and_filter_blocks,
            )
            .field("tiers", &self.tiers)
            .field("clock", &self.clock)
            .field("index", &self.index)
            .field("read_cache", &self.read_cache)
            .field("value_threshold", &self.value_threshold)
            .field("fixed_width_entries", &self.fixed_width_entries)
            .field("cache_local_filter", &self.cache_local_filter)
            .field("mmap_reads", &self.mmap_reads)
            .field("vlog_gc_space_amp", &self.vlog_gc_space_amp)
            .field("access", &self.access)
            .field("prefetch", &self.prefetch)
            .field("column_families", &self.column_families)
            .finish_non_exhaustive()
    }
}

/// Largest number of levels supported.
pub const MAX_LEVELS: usize = 16;

/// Smallest bound [`Options::max_open_files`] accepts: room for the files the database
/// keeps open besides tables and value logs, and for a few of those (RocksDB raises
/// smaller values to 20).
pub const MIN_OPEN_FILES: usize = 20;

fn invalid<T>(msg: String) -> Result<T> {
    Err(Error::InvalidArgument(msg))
}

impl Options {
    /// Options scaled down for tests and small experiments: small memtables, files and
    /// level capacities, so flushes and compactions happen after a few megabytes.
    pub fn small() -> Self {
        Options {
            write_buffer_size: 256 << 10,
            block_cache_bytes: 1 << 20,
            level1_bytes: 1 << 20,
            target_file_size: 256 << 10,
            ..Options::default()
        }
    }

    /// These options with every level's tables compressed as `c` (no per-level setting,
    /// no bottommost override): one codec everywhere, as a benchmark sets both engines,
    /// or `Compression::None` where sizes on disk must equal the bytes written.
    pub fn with_compression(mut self, c: Compression) -> Self {
        self.compression = c;
        self.compression_per_level.clear();
        self.bottommost_compression = None;
        self
    }

    /// Checks every option; returns the first problem found.
    pub fn validate(&self) -> Result<()> {
        self.validate_families()?;
        self.validate_buffers()?;
        self.validate_shape()?;
        self.validate_learned_parts()
    }

    /// Each column family's options laid over these, and one learner's parameters.
    fn validate_families(&self) -> Result<()> {
        // One learner serves every family: its learned indexes share their parameters.
        let mut learned = matches!(self.index, IndexPolicy::Learned { .. }).then_some(self.index);
        for (name, c) in &self.column_families {
            if name.is_empty() || name.len() > 255 {
                return invalid("column family names are 1..=255 bytes".into());
            }
            self.for_family(name)
                .validate()
                .map_err(|e| Error::InvalidArgument(format!("column family {name:?}: {e}")))?;
            if let IndexPolicy::Learned { .. } = c.index {
                match learned {
                    Some(l) if l != c.index => {
                        return invalid(format!(
                            "column family {name:?} learns with {:?}, another with {l:?}: \
                             learned families share one learner and its parameters",
                            c.index
                        ))
                    }
                    _ => learned = Some(c.index),
                }
            }
        }
        Ok(())
    }

    /// The memtables, blocks, block cache and filters.
    fn validate_buffers(&self) -> Result<()> {
        if self.write_buffer_size < 4096 {
            return invalid(format!(
                "write_buffer_size {} is below 4096",
                self.write_buffer_size
            ));
        }
        if self.max_write_buffers < 2 {
            return invalid("max_write_buffers must be at least 2".into());
        }
        if !(256..=(16 << 20)).contains(&self.block_size) {
            return invalid(format!(
                "block_size {} outside 256..=16 MiB",
                self.block_size
            ));
        }
        self.validate_compression()?;
        if !(self.block_cache_hot_share.is_finite()
            && (0.0..=1.0).contains(&self.block_cache_hot_share))
        {
            return invalid(format!(
                "block_cache_hot_share {} outside 0..=1",
                self.block_cache_hot_share
            ));
        }
        if self.block_cache_shards > 1024 {
            return invalid("block_cache_shards must be in 0 (auto)..=1024".into());
        }
        if !(self.bloom_bits_per_key.is_finite() && (0.0..=64.0).contains(&self.bloom_bits_per_key))
        {
            return invalid(format!(
                "bloom_bits_per_key {} outside 0..=64",
                self.bloom_bits_per_key
            ));
        }
        Ok(())
    }

    /// The tree's shape and its background jobs.
    fn validate_shape(&self) -> Result<()> {
        if !(2..=64).contains(&self.size_ratio) {
            return invalid(format!("size_ratio {} outside 2..=64", self.size_ratio));
        }
        if self.level1_bytes == 0 {
            return invalid("level1_bytes must be positive".into());
        }
        if !(2..=MAX_LEVELS).contains(&self.num_levels) {
            return invalid(format!(
                "num_levels {} outside 2..={MAX_LEVELS}",
                self.num_levels
            ));
        }
        if self.l0_compaction_trigger == 0
            || self.l0_slowdown_trigger < self.l0_compaction_trigger
            || self.l0_stop_trigger < self.l0_slowdown_trigger
        {
            return invalid(
                "need 1 <= l0_compaction_trigger <= l0_slowdown_trigger <= l0_stop_trigger".into(),
            );
        }
        for (i, &k) in self.level_runs.iter().enumerate() {
            self.check_runs(i + 1, k)?;
        }
        if self.level_runs.len() >= self.num_levels {
            return invalid("level_runs has more entries than there are levels below L0".into());
        }
        if self.target_file_size < 4096 {
            return invalid("target_file_size must be at least 4096".into());
        }
        if !(1..=64).contains(&self.max_subcompactions) {
            return invalid(format!(
                "max_subcompactions {} outside 1..=64",
                self.max_subcompactions
            ));
        }
        if self.max_log_file_size != 0 && self.max_log_file_size < 4096 {
            return invalid("max_log_file_size must be 0 (no limit) or at least 4096".into());
        }
        if !(1..=64).contains(&self.max_background_compactions) {
            return invalid(format!(
                "max_background_compactions {} outside 1..=64",
                self.max_background_compactions
            ));
        }
        if let Some(n) = self.max_open_files {
            if n < MIN_OPEN_FILES {
                return invalid(format!(
                    "max_open_files {n} is below {MIN_OPEN_FILES} (None: unbounded)"
                ));
            }
        }
        Ok(())
    }

    /// The learned parts and what they need: tuner, learned index, read cache, value
    /// separation, device model, access statistics, placement, prefetching.
    fn validate_learned_parts(&self) -> Result<()> {
        if let Err(e) = self.tuner.validate() {
            return invalid(e);
        }
        if let IndexPolicy::Learned { delta, .. } = self.index {
            if !(1..=MAX_LEARNED_DELTA).contains(&delta) {
                return invalid(format!(
                    "learned index delta {delta} outside 1..={MAX_LEARNED_DELTA}"
                ));
            }
        }
        self.read_cache.validate()?;
        if self.read_cache != ReadCachePolicy::Block && self.block_cache.is_some() {
            return invalid("a custom block_cache needs read_cache = Block".into());
        }
        if self
            .value_threshold
            .is_some_and(|t| t > crate::types::MAX_VALUE_SIZE)
        {
            return invalid(format!(
                "value_threshold above the largest value ({} bytes) would separate nothing",
                crate::types::MAX_VALUE_SIZE
            ));
        }
        if let Some(a) = self.vlog_gc_space_amp {
            if !(a.is_finite() && a > 1.0) {
                return invalid(format!("vlog_gc_space_amp {a} must be a finite number > 1"));
            }
        }
        if !(self.latency_scale.is_finite() && self.latency_scale >= 0.0) {
            return invalid("latency_scale must be a finite number >= 0".into());
        }
        if let crate::clock::Clock::Virtual(model) = &self.clock {
            model.validate()?;
        }
        if let Some(a) = &self.access {
            a.validate()?;
        }
        if let Some(r) = &self.records {
            r.validate()?;
        }
        self.placement.validate()?;
        if let crate::policy::PrefetchPolicy::Leaper(p) = &self.prefetch {
            if p.model.is_some() && self.access.is_none() {
                return invalid("a Leaper model needs access statistics (Options::access)".into());
            }
        }
        Ok(())
    }

    /// Checks a run limit K for `level` (1 <= K <= T; level 0 takes any positive K).
    pub fn check_runs(&self, level: usize, k: usize) -> Result<()> {
        if level >= self.num_levels {
            return invalid(format!(
                "level {level} does not exist (num_levels = {})",
                self.num_levels
            ));
        }
        if level == 0 {
            if k == 0 || k > self.l0_slowdown_trigger {
                return invalid(format!(
                    "K_0 = {k} outside 1..={} (l0_slowdown_trigger)",
                    self.l0_slowdown_trigger
                ));
            }
            return Ok(());
        }
        if k == 0 || k > self.size_ratio {
            return invalid(format!(
                "K_{level} = {k} outside 1..={} (the size ratio T)",
                self.size_ratio
            ));
        }
        Ok(())
    }

    /// Initial run limit of a level.
    pub fn initial_runs(&self, level: usize) -> usize {
        if level == 0 {
            self.l0_compaction_trigger
        } else {
            self.level_runs.get(level - 1).copied().unwrap_or(1)
        }
    }

    /// Capacity C_i of level `level` >= 1 in bytes (saturating).
    pub fn level_capacity(&self, level: usize) -> u64 {
        let mut c = self.level1_bytes;
        for _ in 1..level {
            c = c.saturating_mul(self.size_ratio as u64);
        }
        c
    }

    /// How tables written to `level` are compressed, `deepest` being the deepest level that
    /// will hold data once they are in (the bottommost level gets `bottommost_compression`;
    /// a flush to level 0 never does).
    pub fn compression_for_level(&self, level: usize, deepest: usize) -> Compression {
        match self.bottommost_compression {
            Some(c) if level > 0 && level >= deepest => c,
            _ => self
                .compression_per_level
                .get(level)
                .copied()
                .unwrap_or(self.compression),
        }
    }

    /// How to build a table written to `level` (see
    /// [`compression_for_level`](Self::compression_for_level) for `deepest`).
    pub fn table_build_options(&self, level: usize, deepest: usize) -> TableBuildOptions {
        TableBuildOptions {
            block_size: self.block_size,
            bloom_bits_per_key: self.bloom_bits_for_level(level, deepest),
            fixed_width_entries: self.fixed_width_entries,
            cache_local_filter: self.cache_local_filter,
            compression: self.compression_for_level(level, deepest),
        }
    }

    fn validate_compression(&self) -> Result<()> {
        if self.compression_per_level.len() > self.num_levels {
            return invalid(format!(
                "compression_per_level names {} levels of {}",
                self.compression_per_level.len(),
                self.num_levels
            ));
        }
        let every = self.compression_per_level.iter().chain([&self.compression]);
        for c in every.chain(self.bottommost_compression.as_ref()) {
            c.validate()?;
        }
        Ok(())
    }

    /// Bloom bits per key for a table written to `level` when the deepest level holding
    /// data is `deepest`. Uniform gives the average everywhere; Monkey solves
    /// f_i = T^(i-1) f_1 with the entry-weighted average equal to `bloom_bits_per_key`,
    /// weighting levels by their capacities (level 0 counts as level 1).
    pub fn bloom_bits_for_level(&self, level: usize, deepest: usize) -> f64 {
        let b = self.bloom_bits_per_key;
        if b == 0.0 || self.bloom_allocation == BloomAllocation::Uniform {
            return b;
        }
        let deepest = deepest.max(1).min(self.num_levels - 1);
        let level = level.clamp(1, deepest);
        // bits(i) = b_L + (L - i) * ln T / ln^2 2 ; weights N_i ~ T^(i-1).
        let step = (self.size_ratio as f64).ln() / std::f64::consts::LN_2.powi(2);
        let t = self.size_ratio as f64;
        let (mut wsum, mut dsum) = (0.0, 0.0);
        for i in 1..=deepest {
            let w = t.powi(i as i32 - 1);
            wsum += w;
            dsum += w * (deepest - i) as f64;
        }
        let b_last = b - step * dsum / wsum;
        (b_last + step * (deepest - level) as f64).max(0.0)
    }
}

/// Options of a write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// fsync the write-ahead log before acknowledging.
    pub sync: bool,
    /// Write to the memtables only, not the write-ahead log (RocksDB's `disableWAL`): for
    /// bulk loads that can be redone. Such a write is durable once its memtable is flushed
    /// ([`Db::flush`](crate::Db::flush); `close` flushes when there were such writes); a
    /// crash before that loses it, even where later logged writes survive. Cannot be
    /// combined with `sync`.
    pub disable_wal: bool,
    /// The column (of the application's row) the write updates, for SA-LSM's query store:
    /// per-column update counts are among the survival model's features (§2.2.3). None:
    /// not said. Columns past the store's last count in the last.
    pub query_column: Option<u8>,
}

/// Options of a read.
#[derive(Clone)]
pub struct ReadOptions {
    /// Read at this snapshot instead of the latest state.
    pub snapshot: Option<crate::db::Snapshot>,
    /// Inclusive lower bound of iterators.
    pub lower_bound: Option<Vec<u8>>,
    /// Exclusive upper bound of iterators.
    pub upper_bound: Option<Vec<u8>>,
    /// Put what the read loads into the caches (default `true`). A one-off scan that
    /// should not push out the working set sets it `false` (RocksDB's `fill_cache`): the
    /// blocks it reads from storage stay out of the block cache, and its gets are not
    /// admitted to AC-Key's point caches. Blocks already cached are still used.
    pub fill_cache: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            snapshot: None,
            lower_bound: None,
            upper_bound: None,
            fill_cache: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_shards_follow_rocksdb_rule() {
        assert_eq!(auto_cache_shards(0), 1);
        assert_eq!(auto_cache_shards(512 << 10), 1);
        assert_eq!(auto_cache_shards(1 << 20), 2);
        assert_eq!(auto_cache_shards(3 << 20), 4);
        assert_eq!(auto_cache_shards(4 << 20), 8);
        assert_eq!(auto_cache_shards(32 << 20), 64);
        assert_eq!(auto_cache_shards(1 << 30), 64);
    }

    #[test]
    fn validation_catches_bad_values() {
        assert!(Options::default().validate().is_ok());
        let mut o = Options {
            level_runs: vec![11],
            ..Options::default()
        };
        assert!(matches!(o.validate(), Err(Error::InvalidArgument(_))));
        o.level_runs = vec![0];
        assert!(o.validate().is_err());
        let o = Options {
            write_buffer_size: 0,
            ..Options::default()
        };
        assert!(o.validate().is_err());
        let o = Options {
            size_ratio: 1,
            ..Options::default()
        };
        assert!(o.validate().is_err());
        for (n, ok) in [
            (Some(0), false),
            (Some(MIN_OPEN_FILES - 1), false),
            (Some(MIN_OPEN_FILES), true),
            (Some(1 << 20), true),
            (None, true),
        ] {
            let o = Options {
                max_open_files: n,
                ..Options::default()
            };
            assert_eq!(o.validate().is_ok(), ok, "max_open_files {n:?}");
        }
        for (delta, ok) in [
            (0, false),
            (1, true),
            (8, true),
            (1 << 16, true),
            ((1 << 16) + 1, false),
        ] {
            let o = Options {
                index: IndexPolicy::learn_all(delta),
                ..Options::default()
            };
            assert_eq!(o.validate().is_ok(), ok, "delta {delta}");
        }
    }

    #[test]
    fn monkey_keeps_average_and_decreases_with_depth() {
        let o = Options {
            bloom_allocation: BloomAllocation::Monkey,
            bloom_bits_per_key: 8.0,
            ..Options::default()
        };
        let deepest = 4;
        let t = o.size_ratio as f64;
        let (mut num, mut den) = (0.0, 0.0);
        for i in 1..=deepest {
            let w = t.powi(i as i32 - 1);
            num += w * o.bloom_bits_for_level(i, deepest);
            den += w;
        }
        assert!((num / den - 8.0).abs() < 1e-9);
        assert!(o.bloom_bits_for_level(1, deepest) > o.bloom_bits_for_level(4, deepest));
        // FPR ratio between consecutive levels equals T.
        let fpr = |b: f64| (-b * std::f64::consts::LN_2.powi(2)).exp();
        let r = fpr(o.bloom_bits_for_level(3, deepest)) / fpr(o.bloom_bits_for_level(2, deepest));
        assert!((r - t).abs() < 1e-6);
    }
}
