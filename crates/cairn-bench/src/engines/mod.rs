//! The engines under test, behind one small trait so every engine sees the same calls.

pub mod btree;
mod cairn;
pub mod fjall;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// The shared budget every engine is configured to, so comparisons are like for like.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchConfig {
    /// Memtable size in bytes.
    pub write_buffer_size: usize,
    /// Block cache capacity in bytes.
    pub cache_bytes: usize,
    pub bloom_bits: f64,
    /// O_DIRECT reads (and flush/compaction I/O where the engine supports it).
    pub direct_io: bool,
    /// Index and filter blocks in the block cache, charged to it (both engines'
    /// `cache_index_and_filter_blocks`).
    #[serde(default)]
    pub cache_index_and_filter_blocks: bool,
    /// Tables (and value logs) read through memory maps (cairn's `mmap_reads`, RocksDB's
    /// `allow_mmap_reads`); `None`: each engine's own setting (a cairn preset's, RocksDB's
    /// default of pread).
    #[serde(default)]
    pub mmap_reads: Option<bool>,
    /// cairn writes LevelDB's classic bloom filter instead of the cache-local one
    /// (`Options::cache_local_filter`; RocksDB keeps its own).
    #[serde(default)]
    pub classic_filter: bool,
    /// Block compression at every level, for every engine (cairn's `compression`,
    /// RocksDB's compression type, bottommost included); old reports without it ran
    /// uncompressed.
    #[serde(default)]
    pub compression: ::cairn::Compression,
    /// fsync the WAL on every write.
    pub sync: bool,
    /// Latency added to every storage I/O (cairn's device profile; other engines ignore it).
    #[serde(default)]
    pub device: Device,
    /// Time slot of the access statistics for engines that collect them (cairn's Leaper
    /// presets), in milliseconds (Leaper's one or two minutes are too long for a bench).
    #[serde(default = "default_leaper_slot_ms")]
    pub leaper_slot_ms: u64,
    /// Sampling probability of those statistics (Leaper's P, eq. 1); None: cairn's default.
    #[serde(default)]
    pub leaper_sample_p: Option<f64>,
    /// T of the invalidation-miss metric in milliseconds (cairn's
    /// `Options::invalidation_window_ms`); None: the engine's default (10 s).
    #[serde(default)]
    pub invalidation_window_ms: Option<u64>,
    /// No compactions, only flushes (Leaper's Fig. 10): cairn's level-0 triggers out of
    /// reach. Other engines ignore it.
    #[serde(default)]
    pub flush_only: bool,
    /// Capacity of level 1 in bytes (cairn's `Options::level1_bytes`, RocksDB's
    /// `max_bytes_for_level_base`); None: the engine's own (cairn: 256 MiB).
    #[serde(default)]
    pub level1_bytes: Option<u64>,
    /// Target size of a table file in bytes (cairn's `Options::target_file_size`,
    /// RocksDB's `target_file_size_base`); None: the engine's own (64 MiB both).
    #[serde(default)]
    pub target_file_size: Option<u64>,
    /// Size ratio T between levels (cairn's `Options::size_ratio`, RocksDB's
    /// `max_bytes_for_level_multiplier`); None: the engine's own (10).
    #[serde(default)]
    pub size_ratio: Option<usize>,
    /// Level-0 runs that trigger a compaction (cairn's `l0_compaction_trigger`, RocksDB's
    /// `level0_file_num_compaction_trigger`); None: the engine's own (4 both).
    #[serde(default)]
    pub l0_trigger: Option<usize>,
    /// Levels, level 0 included (cairn's `num_levels`, RocksDB's `num_levels`); None:
    /// the engine's own (7 both).
    #[serde(default)]
    pub num_levels: Option<usize>,
    /// Operations per mission (RusKey): the harness's per-mission series, and cairn's tuner
    /// (`TunerOptions::mission_ops`). None: [`DEFAULT_MISSION_OPS`], and no series unless
    /// the workload has several phases.
    #[serde(default)]
    pub mission_ops: Option<u64>,
    /// A scripted change of the run limits (RusKey's Fig. 10): after this many missions of
    /// the measured phase, K at every level below 0 becomes `k`, by the engine's own
    /// transition (cairn's `TunerOptions::transition`). Engines without per-level run
    /// limits ignore it.
    #[serde(default)]
    pub set_k_at: Option<KChange>,
    /// Memtables, the active one included, before writes wait for a flush (cairn's
    /// `max_write_buffers`, RocksDB's `max_write_buffer_number`).
    #[serde(default = "default_memtables")]
    pub memtables: usize,
    /// Threads one level-0 compaction may use (`max_subcompactions` in both engines).
    #[serde(default = "one")]
    pub subcompactions: usize,
    /// Compaction jobs at once (cairn's `max_background_compactions`; RocksDB's
    /// `max_background_jobs` is set to one more, for its flush).
    #[serde(default = "one")]
    pub compaction_jobs: usize,
    /// RocksDB keeps statistics (tickers and timers) while it runs. Off for timed runs:
    /// `compare` then takes RocksDB's counters from a separate, untimed pass.
    #[serde(default)]
    pub rocksdb_statistics: bool,
    /// RocksDB's `prepopulate_block_cache` (Leaper's baseline): blocks a flush writes go
    /// into its block cache.
    #[serde(default)]
    pub rocksdb_prepopulate: bool,
    /// Record the block-cache lookups of the measured phase for the Belady bounds
    /// (cairn with its LRU block cache).
    #[serde(default)]
    pub block_trace: bool,
    /// The clock cairn runs on: the wall clock, or the virtual device clock (`--device`
    /// then names its model; one thread; background work at fixed points).
    #[serde(default)]
    pub clock: ClockKind,
    /// On the virtual clock: operations between fixed points, where the harness runs the
    /// engine's background work (flushes, compactions, learning, missions).
    #[serde(default = "default_bg_every_ops")]
    pub bg_every_ops: u64,
    /// On the virtual clock: the CPU price file (None: the built-in calibration).
    #[serde(default)]
    pub cpu_prices: Option<std::path::PathBuf>,
    /// Seed of cairn's learned tuner (`LerpParams::seed` of the presets tuned by Lerp);
    /// None: the preset's own. Other engines ignore it; ruskey-summary tells repeats
    /// apart by it.
    #[serde(default)]
    pub tuner_seed: Option<u64>,
    /// cairn's `Options::stats_dump_period_ms` (None: off).
    #[serde(default)]
    pub stats_dump_ms: Option<u64>,
    /// cairn's `Options::release_memory_after_jobs`.
    #[serde(default = "default_release_memory")]
    pub release_memory_after_jobs: bool,
    /// cairn's `Options::read_triggered_compaction`.
    #[serde(default = "default_read_triggered")]
    pub read_triggered_compaction: bool,
}

/// cairn's own default for `release_memory_after_jobs`.
fn default_release_memory() -> bool {
    ::cairn::Options::default().release_memory_after_jobs
}

/// cairn's own default for `read_triggered_compaction`.
fn default_read_triggered() -> bool {
    ::cairn::Options::default().read_triggered_compaction
}

/// Which clock a run is timed on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ClockKind {
    /// Real time.
    #[default]
    Wall,
    /// The engine's virtual device clock (cairn only).
    Virtual,
}

impl ClockKind {
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::Wall => "wall",
            ClockKind::Virtual => "virtual",
        }
    }
}

fn default_bg_every_ops() -> u64 {
    1000
}

fn one() -> usize {
    1
}

/// RocksDB's default `max_write_buffer_number`, given to both engines.
pub fn default_memtables() -> usize {
    2
}

/// RusKey's mission size (section 7: 50,000 operations).
pub const DEFAULT_MISSION_OPS: u64 = 50_000;

pub fn default_leaper_slot_ms() -> u64 {
    1000
}

/// T of the invalidation metric when none is set (cairn's default).
pub const DEFAULT_INVALIDATION_WINDOW_MS: u64 = 10_000;

impl BenchConfig {
    /// T of the invalidation metric this run uses.
    pub fn window_ms(&self) -> u64 {
        self.invalidation_window_ms
            .unwrap_or(DEFAULT_INVALIDATION_WINDOW_MS)
    }

    /// Operations per mission this run uses.
    pub fn mission_ops(&self) -> u64 {
        self.mission_ops.unwrap_or(DEFAULT_MISSION_OPS).max(1)
    }
}

/// `--set-k-at MISSION:K`: K at every level below 0 becomes `k` once `mission` missions
/// of the measured phase have ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KChange {
    pub mission: u64,
    pub k: usize,
}

impl std::str::FromStr for KChange {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected MISSION:K with MISSION >= 1 and K >= 1, got `{s}`");
        let (m, k) = s.split_once(':').ok_or_else(bad)?;
        let mission: u64 = m.trim().parse().map_err(|_| bad())?;
        let k: usize = k.trim().parse().map_err(|_| bad())?;
        if mission == 0 || k == 0 {
            return Err(bad());
        }
        Ok(KChange { mission, k })
    }
}

/// A device profile: what a storage I/O costs on top of the machine's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// No added latency.
    #[default]
    None,
    /// A cloud SSD: 228 us per 4 KiB read, 30 us per write (cairn's DeviceProfile::Ssd).
    Ssd,
    /// A datacenter NVMe SSD: 77 us per read, 18 us per write (cairn's `DeviceModel::nvme`).
    Nvme,
    /// A hard disk: 5050 us per read or write.
    Hdd,
}

impl Device {
    /// The virtual clock's model of this device (None: no device).
    pub fn model(self) -> Option<::cairn::DeviceModel> {
        match self {
            Device::None => None,
            Device::Ssd => Some(::cairn::DeviceModel::ssd()),
            Device::Nvme => Some(::cairn::DeviceModel::nvme()),
            Device::Hdd => Some(::cairn::DeviceModel::hdd()),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Device::None => "none",
            Device::Ssd => "ssd",
            Device::Nvme => "nvme",
            Device::Hdd => "hdd",
        }
    }
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            write_buffer_size: 64 << 20,
            cache_bytes: 8 << 20,
            bloom_bits: 10.0,
            direct_io: false,
            cache_index_and_filter_blocks: false,
            mmap_reads: None,
            classic_filter: false,
            compression: ::cairn::Compression::None,
            sync: false,
            device: Device::None,
            leaper_slot_ms: default_leaper_slot_ms(),
            leaper_sample_p: None,
            invalidation_window_ms: None,
            flush_only: false,
            level1_bytes: None,
            target_file_size: None,
            size_ratio: None,
            l0_trigger: None,
            num_levels: None,
            mission_ops: None,
            set_k_at: None,
            memtables: default_memtables(),
            subcompactions: 1,
            compaction_jobs: 1,
            rocksdb_statistics: false,
            rocksdb_prepopulate: false,
            block_trace: false,
            clock: ClockKind::Wall,
            bg_every_ops: default_bg_every_ops(),
            cpu_prices: None,
            tuner_seed: None,
            stats_dump_ms: None,
            release_memory_after_jobs: default_release_memory(),
            read_triggered_compaction: default_read_triggered(),
        }
    }
}

/// Cumulative counters since open; the harness takes deltas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineCounters {
    pub read_ops: u64,
    pub read_bytes: u64,
    pub write_ops: u64,
    pub write_bytes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Bytes of keys + values handed to put (as the engine counts them).
    pub user_bytes_written: u64,
    pub flush_bytes_written: u64,
    pub compaction_bytes_written: u64,
    /// Gauges, not counters: background work running right now.
    pub flushes_running: u64,
    pub compactions_running: u64,
    /// Invalidation misses with T = the configured window (engines that count them).
    #[serde(default)]
    pub invalidation_misses: u64,
    /// Storage reads on the cold tier (tier 1: SA-LSM's hdd levels), engines with tiers.
    #[serde(default)]
    pub cold_read_ops: u64,
    /// Bytes read by compactions.
    #[serde(default)]
    pub compaction_bytes_read: u64,
    /// Time writers spent stalled or slowed down by background work, in microseconds.
    #[serde(default)]
    pub stall_micros: u64,
    /// Block-cache misses on data blocks (Leaper's metric), engines that tell them apart
    /// from index and filter misses.
    #[serde(default)]
    pub data_block_misses: Option<u64>,
}

impl EngineCounters {
    /// `self - earlier` for counters; gauges keep `self`'s value.
    pub fn since(&self, earlier: &EngineCounters) -> EngineCounters {
        EngineCounters {
            read_ops: self.read_ops.saturating_sub(earlier.read_ops),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_ops: self.write_ops.saturating_sub(earlier.write_ops),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            cache_hits: self.cache_hits.saturating_sub(earlier.cache_hits),
            cache_misses: self.cache_misses.saturating_sub(earlier.cache_misses),
            user_bytes_written: self
                .user_bytes_written
                .saturating_sub(earlier.user_bytes_written),
            flush_bytes_written: self
                .flush_bytes_written
                .saturating_sub(earlier.flush_bytes_written),
            compaction_bytes_written: self
                .compaction_bytes_written
                .saturating_sub(earlier.compaction_bytes_written),
            flushes_running: self.flushes_running,
            compactions_running: self.compactions_running,
            invalidation_misses: self
                .invalidation_misses
                .saturating_sub(earlier.invalidation_misses),
            cold_read_ops: self.cold_read_ops.saturating_sub(earlier.cold_read_ops),
            compaction_bytes_read: self
                .compaction_bytes_read
                .saturating_sub(earlier.compaction_bytes_read),
            stall_micros: self.stall_micros.saturating_sub(earlier.stall_micros),
            data_block_misses: self
                .data_block_misses
                .map(|m| m.saturating_sub(earlier.data_block_misses.unwrap_or(0))),
        }
    }
}

/// A flush or compaction as the engine reported it.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpan {
    pub kind: JobKind,
    pub start: std::time::Instant,
    /// None while it runs.
    pub end: Option<std::time::Instant>,
    /// e.g. `L0->L1`.
    pub detail: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    Flush,
    Compaction,
    /// A file moved down a level without rewriting (no block changes).
    Move,
}

impl JobKind {
    pub fn name(self) -> &'static str {
        match self {
            JobKind::Flush => "flush",
            JobKind::Compaction => "compaction",
            JobKind::Move => "move",
        }
    }
}

/// Counters of the cache around flush and compaction (cairn's `PrefetchStats`), cumulative
/// since open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PrefetchCounters {
    pub warmed_blocks: u64,
    pub warmed_hits: u64,
    pub evicted_blocks: u64,
    pub invalidated_blocks: u64,
    pub invalidation_misses: u64,
    pub invalidation_misses_during: u64,
    /// Of `invalidation_misses`, after flushes (the rest after compactions) and by scans.
    #[serde(default)]
    pub invalidation_misses_flush: u64,
    #[serde(default)]
    pub invalidation_misses_scan: u64,
    pub invalidation_misses_1s: u64,
    pub invalidation_misses_60s: u64,
    pub model_errors: u64,
    pub jobs_with_model: u64,
    /// Gauges: eq. 3's fitted constants.
    pub alpha_ms_per_block: f64,
    pub beta: f64,
    /// Times Leaper's guardrail stopped it.
    #[serde(default)]
    pub rollbacks: u64,
    /// Leaper's model evaluations (a range through one step's model), and the
    /// nanoseconds inference took.
    #[serde(default)]
    pub model_evals: u64,
    #[serde(default)]
    pub inference_ns: u64,
}

impl PrefetchCounters {
    /// `self - earlier` for counters; gauges keep `self`'s value.
    pub fn since(&self, e: &PrefetchCounters) -> PrefetchCounters {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        PrefetchCounters {
            warmed_blocks: d(self.warmed_blocks, e.warmed_blocks),
            warmed_hits: d(self.warmed_hits, e.warmed_hits),
            evicted_blocks: d(self.evicted_blocks, e.evicted_blocks),
            invalidated_blocks: d(self.invalidated_blocks, e.invalidated_blocks),
            invalidation_misses: d(self.invalidation_misses, e.invalidation_misses),
            invalidation_misses_during: d(
                self.invalidation_misses_during,
                e.invalidation_misses_during,
            ),
            invalidation_misses_flush: d(
                self.invalidation_misses_flush,
                e.invalidation_misses_flush,
            ),
            invalidation_misses_scan: d(self.invalidation_misses_scan, e.invalidation_misses_scan),
            invalidation_misses_1s: d(self.invalidation_misses_1s, e.invalidation_misses_1s),
            invalidation_misses_60s: d(self.invalidation_misses_60s, e.invalidation_misses_60s),
            model_errors: d(self.model_errors, e.model_errors),
            jobs_with_model: d(self.jobs_with_model, e.jobs_with_model),
            alpha_ms_per_block: self.alpha_ms_per_block,
            beta: self.beta,
            rollbacks: d(self.rollbacks, e.rollbacks),
            model_evals: d(self.model_evals, e.model_evals),
            inference_ns: d(self.inference_ns, e.inference_ns),
        }
    }
}

/// What a run hands an engine at open beyond the budget: the clock its access statistics
/// run on and, for `cairn:oracle`, the future hot ranges.
#[derive(Clone, Default)]
pub struct EngineExtras {
    pub clock: Option<std::sync::Arc<dyn ::cairn::access::Clock>>,
    pub oracle: Option<std::sync::Arc<dyn ::cairn::policy::HotRangeSource>>,
    /// SA-LSM's runs: the simulated clock and the placement settings.
    pub salsm: Option<SalsmOpen>,
}

/// What an SA-LSM run sets at open besides the budget (cairn; other engines ignore it).
#[derive(Clone)]
pub struct SalsmOpen {
    /// The clock the query store and the placement run on (the bench drives simulated days).
    pub clock: std::sync::Arc<dyn ::cairn::access::Clock>,
    /// Length of a simulated day (the query store's `day_ms`).
    pub day_ms: u64,
    /// Multiplier of the tiers' device latencies (`Options::latency_scale`).
    pub latency_scale: f64,
    /// `PlacementOptions::hot_level_slack`.
    pub hot_level_slack: f64,
    /// Access times the query store keeps per record (`RecordOptions::max_times`), when
    /// not the engine's default: the offline trace keeps more, so that its evaluation can
    /// see what a store of the default size held at any earlier time.
    pub store_times: Option<usize>,
    /// The age rule's threshold, for presets with the age rule.
    pub age_tier_ms: Option<u64>,
    /// Table file size (`Options::target_file_size`): small enough that passive compaction
    /// moves level 1 down a slice at a time.
    pub target_file_size: Option<u64>,
}

/// What a proactive compaction did (cairn's `ProactiveReport`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProactiveSummary {
    pub placement: String,
    /// Why nothing moved, when nothing did.
    pub skipped: Option<String>,
    pub input_files: usize,
    pub input_bytes: u64,
    pub cold_records: u64,
    pub hot_records: u64,
    pub cold_bytes: u64,
    pub hot_bytes: u64,
    pub cpu_ns: u64,
    pub wall_ns: u64,
}

/// The read cache's components now (gauges) and its hit counters since open, for engines
/// whose cache has KV / KP / block parts (cairn's AC-Key and its baselines).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadCacheGauges {
    /// Cache policy name (`block`, `pure-kv`, `pure-kp`, `fixed-X-Y-Z`, `ac-key`).
    pub policy: String,
    /// The shared byte budget.
    pub capacity: u64,
    pub kv_bytes: u64,
    pub kp_bytes: u64,
    pub block_bytes: u64,
    pub ghost_bytes: u64,
    pub kv_hits: u64,
    pub kp_hits: u64,
    pub block_hits: u64,
    pub block_misses: u64,
    pub ghost_hits: u64,
    /// Storage reads made by point reads and scans (compaction reads excluded).
    pub foreground_reads: u64,
}

/// A key-value store under test. `Sync` because readwhilewriting and `--threads`
/// share one instance across threads.
pub trait Engine: Send + Sync {
    fn open(dir: &Path, cfg: &BenchConfig) -> Result<Self>
    where
        Self: Sized;
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// A put that updates `column` of the application's row (SA-LSM's per-column counts);
    /// engines without a query store ignore the column.
    fn put_column(&self, key: &[u8], value: &[u8], _column: u8) -> Result<()> {
        self.put(key, value)
    }
    /// The value's length, or None when the key is absent. Engines read the value without
    /// handing it out (RocksDB through `get_pinned`), so no engine pays for a copy it
    /// need not make.
    fn get(&self, key: &[u8]) -> Result<Option<usize>>;
    fn delete(&self, key: &[u8]) -> Result<()>;
    /// Deletes every key in `[start, end)` in one call (RocksDB's `DeleteRange`).
    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()>;
    /// Reads up to `n` entries starting at the first key >= `start`; returns how many.
    fn scan(&self, start: &[u8], n: usize) -> Result<usize>;
    /// Persists the memtable so the measured phase starts from on-disk state.
    fn flush(&self) -> Result<()>;
    fn counters(&self) -> EngineCounters;
    /// Read-cache components; None for engines without them.
    fn read_cache(&self) -> Option<ReadCacheGauges> {
        None
    }
    /// Engine-specific figures for the report (e.g. cairn's learned-index counters),
    /// taken at the end of the run.
    fn extra_stats(&self) -> std::collections::BTreeMap<String, f64> {
        Default::default()
    }
    /// Flushes and compactions since open, for engines that report them as they happen.
    fn jobs(&self) -> Vec<JobSpan> {
        Vec::new()
    }
    /// The cache-around-compaction counters, for engines that have them.
    /// The block lookups it records for the Belady bounds (`BenchConfig::block_trace`).
    fn block_trace(&self) -> Option<Arc<crate::measure::belady::BlockTrace>> {
        None
    }
    fn prefetch(&self) -> Option<PrefetchCounters> {
        None
    }
    /// Writes the access trace (Leaper's collector) to `path`; None when the engine
    /// collects none.
    fn export_access_trace(&self, _path: &Path) -> Result<Option<usize>> {
        Ok(None)
    }
    /// The run limit K_i in force at each level from 1 down to the deepest level holding
    /// data (index 0 is level 1), for engines with per-level run limits (cairn). Called
    /// once per mission.
    fn level_ks(&self) -> Option<Vec<usize>> {
        None
    }
    /// Sorted runs in each of the same levels now (level 1 first).
    fn level_run_counts(&self) -> Option<Vec<usize>> {
        None
    }
    /// Sets the run limit of every level below 0 to `k` (clamped to the size ratio) by
    /// the engine's configured transition; returns the K set, None for engines without
    /// per-level run limits.
    fn set_run_limits(&self, _k: usize) -> Result<Option<usize>> {
        Ok(None)
    }
    /// Installs a Leaper model bundle.
    fn load_leaper_model(&self, _path: &Path) -> Result<()> {
        bail!("this engine takes no Leaper model")
    }
    /// Writes SA-LSM's record trace (the query store) to `path`; None when the engine keeps
    /// no query store.
    fn export_record_trace(&self, _path: &Path) -> Result<Option<usize>> {
        Ok(None)
    }
    /// Loads a cold-key set for the next proactive compaction; returns its keys.
    fn load_cold_set(&self, _path: &Path) -> Result<usize> {
        bail!("this engine takes no cold-key set")
    }
    /// Runs a proactive compaction now (SA-LSM's Algorithm 3); None for engines without.
    fn proactive_compact(&self) -> Result<Option<ProactiveSummary>> {
        Ok(None)
    }
    /// Compacts everything down through every level in the calling thread (a manual,
    /// passive compaction).
    fn compact_all(&self) -> Result<()> {
        bail!("this engine has no manual compaction")
    }
    /// Bytes of tables per level (level 0 first), for engines with levels.
    fn level_bytes(&self) -> Option<Vec<u64>> {
        None
    }
    /// The engine's virtual clock, when it runs on one.
    fn virtual_clock(&self) -> Option<Arc<::cairn::VirtualClock>> {
        None
    }
    /// Runs due background work in the caller's thread (engines opened without their
    /// own background threads, on the virtual clock).
    fn run_background_work(&self) -> Result<()> {
        Ok(())
    }
    /// The counts CPU work is priced from (cairn).
    fn cpu_counts(&self) -> Option<::cairn::CpuCounts> {
        None
    }
    fn close(self: Box<Self>) -> Result<()>;
}

/// Engine names accepted on the command line: `btree`, `rocksdb`, `cairn`, `cairn:PRESET`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EngineName {
    Btree,
    Rocksdb,
    Fjall,
    Cairn { preset: Option<String> },
}

impl EngineName {
    pub fn parse(s: &str) -> Result<EngineName> {
        let s = s.trim();
        Ok(match s {
            "btree" => EngineName::Btree,
            "rocksdb" => EngineName::Rocksdb,
            "fjall" => EngineName::Fjall,
            "cairn" => EngineName::Cairn { preset: None },
            _ => match s.strip_prefix("cairn:") {
                Some(p) if !p.is_empty() => EngineName::Cairn {
                    preset: Some(p.to_string()),
                },
                _ => bail!(
                    "unknown engine `{s}` (expected btree, rocksdb, fjall, cairn or cairn:PRESET)"
                ),
            },
        })
    }

    /// Fails early, before any engine runs, when this binary cannot open the engine.
    pub fn check_available(&self) -> Result<()> {
        match self {
            EngineName::Btree | EngineName::Fjall => Ok(()),
            EngineName::Rocksdb if cfg!(feature = "rocksdb") => Ok(()),
            EngineName::Rocksdb => bail!(
                "engine `rocksdb` is not built in: rebuild with `--features rocksdb` \
                 (install librocksdb with crates/cairn-bench/scripts/setup-rocksdb.sh and set \
                 ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu)"
            ),
            EngineName::Cairn { preset: None } => Ok(()),
            // Leaper's upper bound: the harness supplies the future from its op stream.
            EngineName::Cairn { preset: Some(p) } if p == cairn::ORACLE => Ok(()),
            EngineName::Cairn { preset: Some(p) } => match ::cairn::presets::by_name(p) {
                Some(_) => Ok(()),
                None => bail!(
                    "cairn has no preset `{p}` (known: {})",
                    ::cairn::presets::PRESETS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
        }
    }

    /// The engine and its version, for every report.
    pub fn version(&self) -> String {
        match self {
            EngineName::Btree => "std BTreeMap (in memory)".into(),
            // peers/rocksdb-latest's build names the current RocksDB it links.
            EngineName::Rocksdb => option_env!("CAIRN_ROCKSDB_PEER")
                .unwrap_or("RocksDB 7.8.3 (Debian's librocksdb, crate rocksdb 0.20)")
                .into(),
            EngineName::Fjall => format!("fjall {}", fjall::VERSION),
            EngineName::Cairn { .. } => format!("cairn {}", env!("CARGO_PKG_VERSION")),
        }
    }

    /// A file-name-safe form (`cairn:baseline` -> `cairn-baseline`).
    pub fn file_stem(&self) -> String {
        self.to_string().replace([':', '/'], "-")
    }

    /// True for `cairn:oracle`, which needs the op stream at open.
    pub fn is_oracle(&self) -> bool {
        matches!(self, EngineName::Cairn { preset: Some(p) } if p == cairn::ORACLE)
    }

    pub fn open(&self, dir: &Path, cfg: &BenchConfig) -> Result<Box<dyn Engine>> {
        self.open_with(dir, cfg, &EngineExtras::default())
    }

    pub fn open_with(
        &self,
        dir: &Path,
        cfg: &BenchConfig,
        extras: &EngineExtras,
    ) -> Result<Box<dyn Engine>> {
        self.check_available()?;
        match self {
            EngineName::Btree => Ok(Box::new(btree::BTreeEngine::open(dir, cfg)?)),
            EngineName::Fjall => Ok(Box::new(fjall::FjallEngine::open(dir, cfg)?)),
            #[cfg(feature = "rocksdb")]
            EngineName::Rocksdb => Ok(Box::new(rocksdb::RocksEngine::open(dir, cfg)?)),
            EngineName::Cairn { preset } => Ok(Box::new(cairn::CairnEngine::open_preset(
                dir,
                cfg,
                preset.as_deref(),
                extras,
            )?)),
            #[cfg(not(feature = "rocksdb"))]
            EngineName::Rocksdb => unreachable!("check_available rejected it"),
        }
    }
}

impl std::fmt::Display for EngineName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineName::Btree => write!(f, "btree"),
            EngineName::Rocksdb => write!(f, "rocksdb"),
            EngineName::Fjall => write!(f, "fjall"),
            EngineName::Cairn { preset: None } => write!(f, "cairn"),
            EngineName::Cairn { preset: Some(p) } => write!(f, "cairn:{p}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest's `[dependencies]` lines, comments and the `rocksdb` line left out, and
    /// the path to cairn written from the workspace root.
    fn dependencies_but_rocksdb(manifest: &str) -> Vec<String> {
        manifest
            .lines()
            .skip_while(|l| *l != "[dependencies]")
            .skip(1)
            .take_while(|l| !l.starts_with('['))
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("rocksdb "))
            .map(|l| {
                l.replace("\"../../crates/cairn\"", "\"crates/cairn\"")
                    .replace("\"../cairn\"", "\"crates/cairn\"")
            })
            .collect()
    }

    /// peers/rocksdb-latest builds these sources with a current RocksDB: any other
    /// dependency that differs there would make its binary a different harness.
    #[test]
    fn the_current_rocksdb_build_has_the_same_dependencies() {
        let ours = dependencies_but_rocksdb(include_str!("../../Cargo.toml"));
        let peer =
            dependencies_but_rocksdb(include_str!("../../../../peers/rocksdb-latest/Cargo.toml"));
        assert!(ours.len() > 5, "{ours:?}");
        assert_eq!(ours, peer);
    }

    /// The version the current RocksDB build reports is the one its lock file holds.
    #[test]
    fn the_current_rocksdb_build_names_the_rocksdb_it_locks() {
        let lock = include_str!("../../../../peers/rocksdb-latest/Cargo.lock");
        let build = include_str!("../../../../peers/rocksdb-latest/build.rs");
        let sys = lock
            .split("[[package]]")
            .find(|p| p.contains("name = \"librocksdb-sys\""))
            .expect("the lock holds librocksdb-sys");
        let version = sys
            .lines()
            .find_map(|l| l.strip_prefix("version = \""))
            .and_then(|v| v.trim_end_matches('"').split_once('+'))
            .map(|(_, rocksdb)| rocksdb)
            .expect("librocksdb-sys's version names its RocksDB after a +");
        assert!(
            build.contains(&format!("RocksDB {version} ")),
            "build.rs names another RocksDB than the locked {version}"
        );
    }

    #[test]
    fn engine_names_parse_and_presets_are_checked() {
        assert_eq!(EngineName::parse("btree").unwrap(), EngineName::Btree);
        let c = EngineName::parse("cairn:baseline").unwrap();
        assert_eq!(c.to_string(), "cairn:baseline");
        assert_eq!(c.file_stem(), "cairn-baseline");
        c.check_available().unwrap();
        let err = EngineName::parse("cairn:nope")
            .unwrap()
            .check_available()
            .unwrap_err()
            .to_string();
        assert!(err.contains("no preset"), "{err}");
        assert!(EngineName::parse("cairn")
            .unwrap()
            .check_available()
            .is_ok());
        assert!(EngineName::parse("cairn:").is_err());
        assert!(EngineName::parse("leveldb").is_err());
        let f = EngineName::parse("fjall").unwrap();
        assert_eq!(f.to_string(), "fjall");
        assert!(f.check_available().is_ok());
        assert_eq!(
            EngineName::parse("rocksdb")
                .unwrap()
                .check_available()
                .is_ok(),
            cfg!(feature = "rocksdb")
        );
    }
}
