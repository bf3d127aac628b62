//! Counters and latency histograms of a database.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use hdrhistogram::Histogram;

use crate::latency::ShardedHistogram;

use crate::storage::{IoStatsSnapshot, MAX_TRACKED_LEVELS};
use crate::table::ReadTrace;

/// Per-level read counters.
#[derive(Default)]
pub(crate) struct LevelCounters {
    pub gets_served: AtomicU64,
    pub tables_probed: AtomicU64,
    pub bloom_negatives: AtomicU64,
    pub data_hits: AtomicU64,
    pub data_misses: AtomicU64,
    pub index_hits: AtomicU64,
    pub index_misses: AtomicU64,
    pub filter_hits: AtomicU64,
    pub filter_misses: AtomicU64,
    pub storage_reads: AtomicU64,
    pub chunk_reads: AtomicU64,
    pub learned_lookups: AtomicU64,
    pub learned_fallbacks: AtomicU64,
    pub learned_seeks: AtomicU64,
    pub learned_seek_fallbacks: AtomicU64,
    pub fence_path_ns: AtomicU64,
    pub fence_path_samples: AtomicU64,
    pub model_path_ns: AtomicU64,
    pub model_path_samples: AtomicU64,
    pub fence_index_ns: AtomicU64,
    pub model_index_ns: AtomicU64,
    /// Point reads that reached this level (checked at least one of its runs).
    pub lookups_reached: AtomicU64,
    /// Time point reads spent in this level's tables, nanoseconds (sampled, scaled up).
    pub read_ns: AtomicU64,
    /// Time flushes (level 0) and compactions spent writing into this level, nanoseconds.
    pub compaction_ns: AtomicU64,
}

impl LevelCounters {
    pub(crate) fn record(&self, t: &ReadTrace) {
        self.tables_probed.fetch_add(1, Relaxed);
        if t.bloom_negative {
            self.bloom_negatives.fetch_add(1, Relaxed);
        }
        let add = |c: &AtomicU64, n: u32| {
            if n > 0 {
                c.fetch_add(n as u64, Relaxed);
            }
        };
        add(&self.data_hits, t.data_hits);
        add(&self.data_misses, t.data_misses);
        add(&self.index_hits, t.index_hits);
        add(&self.index_misses, t.index_misses);
        add(&self.filter_hits, t.filter_hits);
        add(&self.filter_misses, t.filter_misses);
        add(&self.storage_reads, t.storage_reads);
        add(&self.chunk_reads, t.chunk_reads);
        add(&self.learned_lookups, t.learned_lookups);
        add(&self.learned_fallbacks, t.learned_fallbacks);
        if t.sampled_ns > 0 {
            let (ns, n, index) = if t.sampled_model {
                (
                    &self.model_path_ns,
                    &self.model_path_samples,
                    &self.model_index_ns,
                )
            } else {
                (
                    &self.fence_path_ns,
                    &self.fence_path_samples,
                    &self.fence_index_ns,
                )
            };
            ns.fetch_add(t.sampled_ns, Relaxed);
            n.fetch_add(1, Relaxed);
            index.fetch_add(t.sampled_index_ns, Relaxed);
        }
    }

    /// Block reads of an iterator over a table (no probe: iterators read blocks in order).
    pub(crate) fn record_scan(&self, t: &ReadTrace) {
        let add = |c: &AtomicU64, n: u32| {
            if n > 0 {
                c.fetch_add(n as u64, Relaxed);
            }
        };
        add(&self.data_hits, t.data_hits);
        add(&self.data_misses, t.data_misses);
        add(&self.storage_reads, t.storage_reads);
        add(&self.learned_seeks, t.learned_lookups);
        add(&self.learned_seek_fallbacks, t.learned_fallbacks);
    }

    fn snapshot(&self) -> LevelStats {
        LevelStats {
            gets_served: self.gets_served.load(Relaxed),
            tables_probed: self.tables_probed.load(Relaxed),
            bloom_negatives: self.bloom_negatives.load(Relaxed),
            data_block_hits: self.data_hits.load(Relaxed),
            data_block_misses: self.data_misses.load(Relaxed),
            index_block_hits: self.index_hits.load(Relaxed),
            index_block_misses: self.index_misses.load(Relaxed),
            filter_block_hits: self.filter_hits.load(Relaxed),
            filter_block_misses: self.filter_misses.load(Relaxed),
            storage_reads: self.storage_reads.load(Relaxed),
            entry_chunk_reads: self.chunk_reads.load(Relaxed),
            learned_lookups: self.learned_lookups.load(Relaxed),
            learned_fallbacks: self.learned_fallbacks.load(Relaxed),
            learned_seeks: self.learned_seeks.load(Relaxed),
            learned_seek_fallbacks: self.learned_seek_fallbacks.load(Relaxed),
            fence_path_ns: self.fence_path_ns.load(Relaxed),
            fence_path_samples: self.fence_path_samples.load(Relaxed),
            model_path_ns: self.model_path_ns.load(Relaxed),
            model_path_samples: self.model_path_samples.load(Relaxed),
            fence_index_ns: self.fence_index_ns.load(Relaxed),
            model_index_ns: self.model_index_ns.load(Relaxed),
            lookups_reached: self.lookups_reached.load(Relaxed),
            read_ns: self.read_ns.load(Relaxed),
            compaction_ns: self.compaction_ns.load(Relaxed),
            ..Default::default()
        }
    }
}

/// Operation kinds with a latency histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Point read.
    Get,
    /// Write (put, delete or batch).
    Write,
    /// Iterator creation and scan steps.
    Scan,
}

pub(crate) struct StatsInner {
    pub levels: Vec<LevelCounters>,
    pub memtable_hits: AtomicU64,
    pub gets: AtomicU64,
    pub user_bytes_written: AtomicU64,
    pub writes: AtomicU64,
    pub flush_bytes_written: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub flushes: AtomicU64,
    pub compactions: AtomicU64,
    pub trivial_moves: AtomicU64,
    pub memory_releases: AtomicU64,
    pub read_triggered_compactions: AtomicU64,
    pub subcompactions: AtomicU64,
    pub compaction_jobs_peak: AtomicU64,
    pub flushes_running: AtomicU64,
    pub compactions_running: AtomicU64,
    pub stall_micros: AtomicU64,
    pub slowdowns: AtomicU64,
    pub member_inserts: AtomicU64,
    pub wal_skipped_records: AtomicU64,
    pub wal_truncated_bytes: AtomicU64,
    pub background_errors: AtomicU64,
    pub learned_tables: AtomicU64,
    pub learned_segments: AtomicU64,
    pub learned_entries: AtomicU64,
    pub learn_cpu_nanos: AtomicU64,
    pub learn_errors: AtomicU64,
    pub learned_models_loaded: AtomicU64,
    pub learned_models_rejected: AtomicU64,
    /// Entries written by batches (puts and deletes), the updates of RusKey's missions.
    pub entries_written: AtomicU64,
    /// Iterators created (range lookups).
    pub iterators: AtomicU64,
    /// SA-LSM: proactive compactions run, backed off, records moved cold, CPU spent.
    pub proactive_compactions: AtomicU64,
    pub proactive_backoffs: AtomicU64,
    pub proactive_cold_records: AtomicU64,
    pub proactive_cpu_ns: AtomicU64,
    /// Sum of foreground operation latencies (gets, writes, scan steps), nanoseconds.
    pub op_ns: AtomicU64,
    /// Sampled gets broken into steps.
    pub lookup_steps: crate::lookup_steps::StepCounters,
    hist: [ShardedHistogram; 3],
}

impl Default for StatsInner {
    fn default() -> Self {
        StatsInner {
            levels: (0..MAX_TRACKED_LEVELS)
                .map(|_| LevelCounters::default())
                .collect(),
            memtable_hits: AtomicU64::new(0),
            gets: AtomicU64::new(0),
            user_bytes_written: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            flush_bytes_written: AtomicU64::new(0),
            compaction_bytes_written: AtomicU64::new(0),
            compaction_bytes_read: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            compactions: AtomicU64::new(0),
            trivial_moves: AtomicU64::new(0),
            memory_releases: AtomicU64::new(0),
            read_triggered_compactions: AtomicU64::new(0),
            subcompactions: AtomicU64::new(0),
            compaction_jobs_peak: AtomicU64::new(0),
            flushes_running: AtomicU64::new(0),
            compactions_running: AtomicU64::new(0),
            stall_micros: AtomicU64::new(0),
            slowdowns: AtomicU64::new(0),
            member_inserts: AtomicU64::new(0),
            wal_skipped_records: AtomicU64::new(0),
            wal_truncated_bytes: AtomicU64::new(0),
            background_errors: AtomicU64::new(0),
            learned_tables: AtomicU64::new(0),
            learned_segments: AtomicU64::new(0),
            learned_entries: AtomicU64::new(0),
            learn_cpu_nanos: AtomicU64::new(0),
            learn_errors: AtomicU64::new(0),
            learned_models_loaded: AtomicU64::new(0),
            learned_models_rejected: AtomicU64::new(0),
            entries_written: AtomicU64::new(0),
            iterators: AtomicU64::new(0),
            proactive_compactions: AtomicU64::new(0),
            proactive_backoffs: AtomicU64::new(0),
            proactive_cold_records: AtomicU64::new(0),
            proactive_cpu_ns: AtomicU64::new(0),
            op_ns: AtomicU64::new(0),
            lookup_steps: Default::default(),
            hist: Default::default(),
        }
    }
}

/// The counts CPU work is priced from on the virtual clock (`Db::cpu_counts`): cheap to
/// read, so a harness can take them around every request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuCounts {
    /// Point reads.
    pub gets: u64,
    /// Point reads a memtable answered.
    pub memtable_hits: u64,
    /// Write batches (each put or delete is one).
    pub writes: u64,
    /// Entries written (puts and deletes in batches).
    pub entries_written: u64,
    /// Bytes of keys and values written.
    pub user_bytes: u64,
    /// Tables a point read probed (filter checked).
    pub tables_probed: u64,
    /// Data blocks searched (cache hits and misses).
    pub blocks_searched: u64,
    /// Blocks read from storage (checksummed and decoded): data, index and filter.
    pub blocks_read: u64,
    /// Lookups through a learned model.
    pub learned_lookups: u64,
    /// Iterators created.
    pub iterators: u64,
    /// Bytes flushes and compactions read and wrote (background).
    pub background_bytes: u64,
}

impl CpuCounts {
    /// Difference `self - earlier`.
    pub fn since(&self, e: &CpuCounts) -> CpuCounts {
        CpuCounts {
            gets: self.gets.saturating_sub(e.gets),
            memtable_hits: self.memtable_hits.saturating_sub(e.memtable_hits),
            writes: self.writes.saturating_sub(e.writes),
            entries_written: self.entries_written.saturating_sub(e.entries_written),
            user_bytes: self.user_bytes.saturating_sub(e.user_bytes),
            tables_probed: self.tables_probed.saturating_sub(e.tables_probed),
            blocks_searched: self.blocks_searched.saturating_sub(e.blocks_searched),
            blocks_read: self.blocks_read.saturating_sub(e.blocks_read),
            learned_lookups: self.learned_lookups.saturating_sub(e.learned_lookups),
            iterators: self.iterators.saturating_sub(e.iterators),
            background_bytes: self.background_bytes.saturating_sub(e.background_bytes),
        }
    }
}

impl StatsInner {
    /// The CPU counts, summed over the first `levels` levels.
    pub(crate) fn cpu_counts(&self, levels: usize) -> CpuCounts {
        let mut c = CpuCounts {
            gets: self.gets.load(Relaxed),
            memtable_hits: self.memtable_hits.load(Relaxed),
            writes: self.writes.load(Relaxed),
            entries_written: self.entries_written.load(Relaxed),
            user_bytes: self.user_bytes_written.load(Relaxed),
            iterators: self.iterators.load(Relaxed),
            background_bytes: self.flush_bytes_written.load(Relaxed)
                + self.compaction_bytes_written.load(Relaxed)
                + self.compaction_bytes_read.load(Relaxed),
            ..Default::default()
        };
        for l in &self.levels[..levels.clamp(1, MAX_TRACKED_LEVELS)] {
            c.tables_probed += l.tables_probed.load(Relaxed);
            c.blocks_searched += l.data_hits.load(Relaxed) + l.data_misses.load(Relaxed);
            c.blocks_read += l.data_misses.load(Relaxed)
                + l.index_misses.load(Relaxed)
                + l.filter_misses.load(Relaxed);
            c.learned_lookups += l.learned_lookups.load(Relaxed);
        }
        c
    }

    pub(crate) fn level(&self, l: usize) -> &LevelCounters {
        &self.levels[l.min(MAX_TRACKED_LEVELS - 1)]
    }
    pub(crate) fn record_latency(&self, op: OpKind, nanos: u64) {
        self.record_latency_n(op, nanos, 1);
    }
    /// Records one sampled latency that stands for `n` operations.
    pub(crate) fn record_latency_n(&self, op: OpKind, nanos: u64, n: u64) {
        self.op_ns.fetch_add(nanos.saturating_mul(n), Relaxed);
        self.hist[op as usize].record_n(nanos, n);
    }
    pub(crate) fn latency(&self, op: OpKind) -> Histogram<u64> {
        self.hist[op as usize].snapshot()
    }
}

/// Read counters of one level.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LevelStats {
    /// Point reads answered from this level.
    pub gets_served: u64,
    /// Tables probed by point reads.
    pub tables_probed: u64,
    /// Probes stopped by a bloom filter.
    pub bloom_negatives: u64,
    /// Data-block cache hits (point reads and iterators).
    pub data_block_hits: u64,
    /// Data-block cache misses (point reads and iterators).
    pub data_block_misses: u64,
    /// Index-block cache hits.
    pub index_block_hits: u64,
    /// Index-block cache misses.
    pub index_block_misses: u64,
    /// Filter-block cache hits.
    pub filter_block_hits: u64,
    /// Filter-block cache misses.
    pub filter_block_misses: u64,
    /// Storage reads made by point reads and iterators (not by compactions).
    pub storage_reads: u64,
    /// Of `storage_reads`, reads of a learned get's few fixed-width entries instead of
    /// their whole block.
    pub entry_chunk_reads: u64,
    /// Table lookups answered by a learned index.
    pub learned_lookups: u64,
    /// Table lookups a learned index handed to the fence pointers.
    pub learned_fallbacks: u64,
    /// Iterator seeks into a table positioned by its learned index.
    pub learned_seeks: u64,
    /// Iterator seeks a learned index handed to the fence pointers.
    pub learned_seek_fallbacks: u64,
    /// Nanoseconds of sampled fence-path table lookups (index and block search; one
    /// lookup in 32 that reach an index is timed).
    pub fence_path_ns: u64,
    /// Sampled fence-path table lookups.
    pub fence_path_samples: u64,
    /// Nanoseconds of sampled model-path table lookups (fallbacks included).
    pub model_path_ns: u64,
    /// Sampled model-path table lookups.
    pub model_path_samples: u64,
    /// Of `fence_path_ns`, the index's part (before the data block is asked for).
    pub fence_index_ns: u64,
    /// Of `model_path_ns`, the index's part (model and block choice).
    pub model_index_ns: u64,
    /// Point reads that reached this level.
    pub lookups_reached: u64,
    /// Time point reads spent in this level's tables, nanoseconds (sampled: one read in
    /// 8 is timed, counted 8 times).
    pub read_ns: u64,
    /// Time flushes (level 0) and compactions spent writing into this level, nanoseconds.
    pub compaction_ns: u64,
    /// Runs in the level now (default column family).
    pub runs: usize,
    /// Files in the level now (default column family).
    pub files: usize,
    /// Bytes in the level now (default column family).
    pub bytes: u64,
    /// Run limit K now (default column family).
    pub k: u32,
}

/// Latency percentiles in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

impl Latency {
    pub(crate) fn from_hist(h: &Histogram<u64>) -> Self {
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Latency {
            count: h.len(),
            p50: us(0.5),
            p95: us(0.95),
            p99: us(0.99),
            p999: us(0.999),
            max: h.max() as f64 / 1000.0,
        }
    }
}

/// A copy of a database's statistics.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct DbStats {
    /// All storage I/O, by file kind, tier and level.
    pub io: IoStatsSnapshot,
    /// Per-level read counters and shape.
    pub levels: Vec<LevelStats>,
    /// Point reads.
    pub gets: u64,
    /// Point reads answered by a memtable.
    pub memtable_hits: u64,
    /// Block cache hits (data blocks; index and filter blocks are pinned per table).
    pub block_cache_hits: u64,
    /// Block cache misses (data blocks).
    pub block_cache_misses: u64,
    /// Bytes of keys and values written by users.
    pub user_bytes_written: u64,
    /// Write operations (batches) acknowledged.
    pub writes: u64,
    /// Bytes of tables written by flushes.
    pub flush_bytes_written: u64,
    /// Bytes of tables written by compactions.
    pub compaction_bytes_written: u64,
    /// Bytes read by compactions.
    pub compaction_bytes_read: u64,
    /// Flushes done.
    pub flushes: u64,
    /// Compactions done (merges; trivial moves counted apart).
    pub compactions: u64,
    /// Files moved down without rewriting.
    pub trivial_moves: u64,
    /// Times background work handed the allocator's free memory back to the operating
    /// system (`Options::release_memory_after_jobs`).
    pub memory_releases: u64,
    /// Level-0 compactions (merges and moves) that seeks asked for, below the run trigger.
    pub read_triggered_compactions: u64,
    /// Key ranges merged by compactions that were split into more than one
    /// (`Options::max_subcompactions`).
    pub subcompactions: u64,
    /// Most compaction jobs picked by the compaction threads that ran at once
    /// (`Options::max_background_compactions`).
    pub compaction_jobs_peak: u64,
    /// Flushes running now.
    pub flushes_running: u64,
    /// Compactions running now.
    pub compactions_running: u64,
    /// Microseconds writers spent stopped waiting for flushes or compactions.
    pub stall_micros: u64,
    /// Writes delayed by the level-0 slowdown.
    pub slowdowns: u64,
    /// Batches of commit groups that their own writers inserted into the memtable, beside
    /// the group's leader (`Options::concurrent_memtable_writes`).
    pub member_inserts: u64,
    /// Corrupt WAL records skipped at recovery (`WalRecovery::SkipCorrupt`).
    pub wal_skipped_records: u64,
    /// Bytes of torn WAL tail dropped at recovery.
    pub wal_truncated_bytes: u64,
    /// Background errors met (flush or compaction failures, retried or fatal).
    pub background_errors: u64,
    /// Table lookups answered by a learned index (all levels).
    pub learned_lookups: u64,
    /// Table lookups a learned index handed to the fence pointers (all levels).
    pub learned_fallbacks: u64,
    /// Iterator seeks into a table positioned by its learned index (all levels).
    pub learned_seeks: u64,
    /// Iterator seeks a learned index handed to the fence pointers (all levels).
    pub learned_seek_fallbacks: u64,
    /// Learned gets' reads of a few fixed-width entries instead of a whole data block
    /// (all levels; see `Options::fixed_width_entries`).
    pub entry_chunk_reads: u64,
    /// Tables learned (by the background learner, or at open).
    pub learned_tables: u64,
    /// PLR segments built over those tables.
    pub learned_segments: u64,
    /// Entries of those tables.
    pub learned_entries: u64,
    /// CPU time the learner spent learning (reading and training), nanoseconds.
    pub learn_cpu_nanos: u64,
    /// Learnings (or model saves) that failed (the table keeps its fence pointers).
    pub learn_errors: u64,
    /// Models loaded from their files when tables were opened (not relearned).
    pub learned_models_loaded: u64,
    /// Model files ignored as damaged or not matching their table (relearned instead).
    pub learned_models_rejected: u64,
    /// Entries written by batches (puts and deletes).
    pub entries_written: u64,
    /// Iterators created.
    pub iterators: u64,
    /// Proactive compactions run (SA-LSM and its placement baselines).
    pub proactive_compactions: u64,
    /// Proactive compactions that backed off under load.
    pub proactive_backoffs: u64,
    /// Records proactive compactions moved to the cold tier.
    pub proactive_cold_records: u64,
    /// CPU time of proactive compactions, nanoseconds.
    pub proactive_cpu_ns: u64,
    /// Sum of foreground operation latencies (gets, writes, scan steps), nanoseconds.
    pub op_ns: u64,
    /// Where a get's time goes, step by step (one get in 64 timed).
    pub lookup_steps: crate::lookup_steps::LookupSteps,
    /// The compaction-policy tuner (RusKey's Lerp or a baseline), when one runs.
    pub tuner: crate::policy::TunerStats,
    /// Get latency.
    pub get_latency: Latency,
    /// Write latency.
    pub write_latency: Latency,
    /// Scan latency (per iterator step).
    pub scan_latency: Latency,
    /// Bytes held by the block cache.
    pub block_cache_usage: usize,
    /// Table and value-log files in the open-file cache now: bounded, about
    /// `Options::max_open_files` less 10 (more while more are in use). Compaction inputs
    /// are not counted.
    pub open_files: u64,
    /// Files the open-file cache closed to stay within `Options::max_open_files`.
    pub open_file_evictions: u64,
    /// The read cache's components (AC-Key's KV, KP and block caches; only `block_*` is
    /// non-zero for a plain block cache).
    pub read_cache: ReadCacheStats,
    /// Key-value separation: value-log bytes, reads, GC and space amplification.
    pub vlog: crate::vlog::VlogStats,
    /// The cache around flush and compaction (Leaper and its baselines), and the
    /// invalidation-miss metric.
    pub prefetch: crate::policy::prefetch::PrefetchStats,
}

/// Sizes and hits of the read cache's components. For AC-Key (paper section 4) the three
/// components and their ghosts share one byte budget, `capacity`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ReadCacheStats {
    /// The cache policy's name (`block`, `pure-kv`, `pure-kp`, `fixed-3-2-5`, `ac-key`).
    pub policy: String,
    /// The shared byte budget.
    pub capacity: u64,
    /// Bytes held by the KV cache (key and value entries).
    pub kv_bytes: u64,
    /// Bytes held by the KP cache (key and pointer entries).
    pub kp_bytes: u64,
    /// Bytes held by the block cache.
    pub block_bytes: u64,
    /// Bytes held by ghost caches (charged to the same budget).
    pub ghost_bytes: u64,
    /// Entries in the KV cache.
    pub kv_entries: u64,
    /// Entries in the KP cache.
    pub kp_entries: u64,
    /// Target size of the point (KV + KP) part, in bytes (E-ARC's boundary).
    pub point_target_bytes: u64,
    /// Target size of the KV part inside the point part, in bytes.
    pub kv_target_bytes: u64,
    /// Point reads answered by the KV cache.
    pub kv_hits: u64,
    /// Point reads whose block was found through the KP cache.
    pub kp_hits: u64,
    /// Data-block lookups answered by the block cache.
    pub block_hits: u64,
    /// Data-block lookups that went to storage.
    pub block_misses: u64,
    /// Hits in the ghost caches (each moves an E-ARC boundary).
    pub ghost_hits: u64,
    /// Cached blocks of compacted tables replaced by a new block from the compaction.
    pub block_replacements: u64,
}

impl DbStats {
    /// Table and value-log bytes written by flushes and compactions per user byte
    /// written.
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            0.0
        } else {
            (self.flush_bytes_written + self.compaction_bytes_written) as f64
                / self.user_bytes_written as f64
        }
    }

    pub(crate) fn collect(s: &StatsInner) -> DbStats {
        let levels: Vec<LevelStats> = s.levels.iter().map(|l| l.snapshot()).collect();
        // Index and filter blocks are pinned by their tables, not cached: the cache's hit
        // ratio is the data blocks'.
        let hits = levels.iter().map(|l| l.data_block_hits).sum();
        let misses = levels.iter().map(|l| l.data_block_misses).sum();
        DbStats {
            gets: s.gets.load(Relaxed),
            memtable_hits: s.memtable_hits.load(Relaxed),
            block_cache_hits: hits,
            block_cache_misses: misses,
            user_bytes_written: s.user_bytes_written.load(Relaxed),
            writes: s.writes.load(Relaxed),
            flush_bytes_written: s.flush_bytes_written.load(Relaxed),
            compaction_bytes_written: s.compaction_bytes_written.load(Relaxed),
            compaction_bytes_read: s.compaction_bytes_read.load(Relaxed),
            flushes: s.flushes.load(Relaxed),
            compactions: s.compactions.load(Relaxed),
            trivial_moves: s.trivial_moves.load(Relaxed),
            memory_releases: s.memory_releases.load(Relaxed),
            read_triggered_compactions: s.read_triggered_compactions.load(Relaxed),
            subcompactions: s.subcompactions.load(Relaxed),
            compaction_jobs_peak: s.compaction_jobs_peak.load(Relaxed),
            flushes_running: s.flushes_running.load(Relaxed),
            compactions_running: s.compactions_running.load(Relaxed),
            stall_micros: s.stall_micros.load(Relaxed),
            slowdowns: s.slowdowns.load(Relaxed),
            member_inserts: s.member_inserts.load(Relaxed),
            wal_skipped_records: s.wal_skipped_records.load(Relaxed),
            wal_truncated_bytes: s.wal_truncated_bytes.load(Relaxed),
            background_errors: s.background_errors.load(Relaxed),
            learned_lookups: levels.iter().map(|l| l.learned_lookups).sum(),
            learned_fallbacks: levels.iter().map(|l| l.learned_fallbacks).sum(),
            learned_seeks: levels.iter().map(|l| l.learned_seeks).sum(),
            entry_chunk_reads: levels.iter().map(|l| l.entry_chunk_reads).sum(),
            learned_seek_fallbacks: levels.iter().map(|l| l.learned_seek_fallbacks).sum(),
            learned_tables: s.learned_tables.load(Relaxed),
            learned_segments: s.learned_segments.load(Relaxed),
            learned_entries: s.learned_entries.load(Relaxed),
            learn_cpu_nanos: s.learn_cpu_nanos.load(Relaxed),
            learn_errors: s.learn_errors.load(Relaxed),
            learned_models_loaded: s.learned_models_loaded.load(Relaxed),
            learned_models_rejected: s.learned_models_rejected.load(Relaxed),
            entries_written: s.entries_written.load(Relaxed),
            iterators: s.iterators.load(Relaxed),
            proactive_compactions: s.proactive_compactions.load(Relaxed),
            proactive_backoffs: s.proactive_backoffs.load(Relaxed),
            proactive_cold_records: s.proactive_cold_records.load(Relaxed),
            proactive_cpu_ns: s.proactive_cpu_ns.load(Relaxed),
            op_ns: s.op_ns.load(Relaxed),
            lookup_steps: s.lookup_steps.snapshot(),
            get_latency: Latency::from_hist(&s.latency(OpKind::Get)),
            write_latency: Latency::from_hist(&s.latency(OpKind::Write)),
            scan_latency: Latency::from_hist(&s.latency(OpKind::Scan)),
            levels,
            ..Default::default()
        }
    }
}
