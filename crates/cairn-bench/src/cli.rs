//! Command-line interface (clap derive). Every flag is documented here; `--help` shows it.

use crate::engines::BenchConfig;
use crate::workload::dataset::Dataset;
use crate::workload::mix::{Distribution, Mix};
use crate::workload::{phases, ValueSize, WorkloadName, WorkloadSpec};
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "cairn-bench",
    version,
    about = "Benchmark harness: runs engines on the same seeded operation stream and compares them",
    long_about = "Runs key-value engines (cairn, RocksDB, an in-memory BTreeMap peer) on an identical, \
                  seeded operation stream after an identical load phase, and reports throughput, \
                  latency percentiles per operation type, storage I/O counts, write amplification, \
                  on-disk size, cache hits and peak RSS, with ratios against the first engine."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run one engine on one workload and print/write its result.
    Run(RunArgs),
    /// Run several engines one after another, each in its own child process, on the same
    /// op stream; print a markdown table with ratios against the first engine.
    Compare(CompareArgs),
    /// One table over several `compare` directories (scripts/bench.sh): each engine
    /// against the first, median throughput with its range, bytes read per op, write
    /// amplification, disk size, peak RSS and stall time.
    Summary(crate::summary::SummaryArgs),
    /// AC-Key's experiments (Figs. 7-13, Table 2, fixed splits): every point with every
    /// engine; a markdown summary per figure and the Fig. 12 plot.
    Sweep(Box<crate::sweep::SweepArgs>),
    /// Leaper's tables across `compare` output directories (sweep points): invalidation
    /// misses, job windows, p95 spikes, goals against cairn:lru and cairn:warmup, overhead.
    LeaperSummary(crate::leaper::summary::SummaryArgs),
    /// RusKey's tables from `compare` output directories: per session each method's
    /// converged latency, rank and ratio to the best static policy, Table 3's ranks, the
    /// goals, RusKey's convergence; writes ruskey-summary.md and ruskey_missions.png.
    RuskeySummary(crate::ruskey::RuskeySummaryArgs),
    /// SA-LSM's tables from `scripts/sa-lsm-bench.sh`'s output directory: Table 3 (c-index
    /// per method and profile), Fig. 12 (cold_fir at equal budgets), Figs. 15-17 (replay
    /// throughput, p99, cold-tier reads per method), Table 5 (proactive vs passive
    /// compaction), the goals; writes salsm-summary.md.
    SalsmSummary(crate::salsm::summary::SalsmSummaryArgs),
    /// SA-LSM's trace of an awpi-* workload alone: cairn:sa-lsm replays the trace days (no
    /// device latency), exports the record trace, and (with --evaluate) runs the service's
    /// `evaluate` on it (Table 3, Fig. 12).
    SalsmTrace(crate::salsm::run::SalsmTraceArgs),
    /// One delete_range over N keys loaded in order, per engine: the call's time and bytes
    /// written, the flush and compactions after it, and point reads of deleted keys.
    RangeDelete(crate::range_delete::RangeDeleteArgs),
    /// Measures what each counted unit of foreground work costs in CPU on this machine and
    /// writes the virtual clock's CPU price file (with how close the prices come).
    Calibrate(crate::calibrate::CalibrateArgs),
    /// The virtual clock's results page: CPU calibration, overhead, reruns checked field by
    /// field, and a static K sweep over RusKey's sessions (docs/results/virtual-clock.md).
    ClockSummary(crate::clock_summary::ClockSummaryArgs),
    /// Prices a finished virtual-clock run again under another device model, from the I/O
    /// counts its JSON keeps (measured phase, windows, missions), without rerunning it.
    Reprice(crate::reprice::RepriceArgs),
    /// A paper's experiments, one entry point each: its runs, then its summary tables in
    /// OUT/summary.md (with --publish, also in docs/results/PAPER.md).
    Paper(crate::paper::PaperArgs),
    /// Internal: run one request file in this process (used by `compare`).
    #[command(hide = true)]
    Child {
        #[arg(long)]
        request: PathBuf,
        #[arg(long)]
        json: PathBuf,
        #[arg(long)]
        timeline: PathBuf,
    },
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Engine: btree, rocksdb (needs the `rocksdb` cargo feature), cairn, or cairn:PRESET.
    #[arg(long)]
    pub engine: String,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub leaper: LeaperArgs,
    #[command(flatten)]
    pub salsm: crate::salsm::SalsmArgs,
    /// Write the result JSON to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write the per-second timeline CSV to this file [default: beside --json, as
    /// NAME.timeline.csv].
    #[arg(long, value_name = "PATH")]
    pub timeline: Option<PathBuf>,
    /// Also write ENGINE.json, ENGINE.timeline.csv, report.md and PNG plots into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Comma-separated engines, e.g. `cairn,rocksdb,btree`; ratios are against the first.
    #[arg(long, value_delimiter = ',', required = true)]
    pub engines: Vec<String>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub leaper: LeaperArgs,
    #[command(flatten)]
    pub salsm: crate::salsm::SalsmArgs,
    /// Directory for per-engine JSON and timeline CSV, report.md and PNG plots.
    #[arg(long, value_name = "DIR", default_value = "cairn-bench-out")]
    pub out: PathBuf,
    /// Run all engines in this process instead of one child process each (faster to
    /// start, but peak RSS then accumulates across engines).
    #[arg(long)]
    pub in_process: bool,
    /// Runs per engine. Rounds alternate the engine order (listed, then reversed, ...), and
    /// the tables show each engine's median run with the range over all runs
    /// (scripts/bench.sh: 3; the docs/results tables: 5).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub repeat: u32,
    /// Skip the untimed pass that gives RocksDB's I/O and cache counters (RocksDB is timed
    /// without statistics; without the pass its counter columns stay empty).
    #[arg(long)]
    pub no_counters_pass: bool,
}

/// Leaper's experiments: the access statistics' slot, the invalidation metric's T, and
/// training the model on the warm-up part of the stream.
#[derive(Args, Debug, Clone)]
pub struct LeaperArgs {
    /// Time slot of the access statistics of cairn's Leaper presets, in milliseconds
    /// (the paper's one or two minutes are too long for a bench run).
    #[arg(long, default_value_t = crate::engines::default_leaper_slot_ms(), value_name = "MS")]
    pub leaper_slot_ms: u64,
    /// Sampling probability of those statistics (Leaper's P, eq. 1; each sampled access
    /// costs about 300 ns) [default: cairn's, 0.1].
    #[arg(long, value_name = "P")]
    pub leaper_sample_p: Option<f64>,
    /// T of the invalidation-miss metric (misses within T after a flush or compaction), in
    /// milliseconds, or `auto`: for `compare` on a leaper-* workload, the stock engine's
    /// (cairn:lru, else the first) median hit-ratio recovery time, measured by running it
    /// first (then again with that T); elsewhere cairn's default, 10 s.
    #[arg(long, default_value = "auto", value_name = "MS|auto")]
    pub invalidation_window_ms: String,
    /// Python interpreter for the learners (Leaper's, SA-LSM's service) [default:
    /// $CAIRN_PYTHON, else target/pyenv/bin/python, else python3].
    #[arg(long, value_name = "PATH")]
    pub python: Option<String>,
    /// Models the learner trains (future slots); default: Leaper's eq. 2 from the warm-up's
    /// jobs, k = ceil(max(T1 + T2) / slot) + 1, capped by --leaper-max-k.
    #[arg(long, value_name = "K")]
    pub leaper_k: Option<usize>,
    /// Cap on eq. 2's number of models.
    #[arg(long, default_value_t = 8, value_name = "K")]
    pub leaper_max_k: usize,
    /// LightGBM threads for the learner (0: LightGBM's default).
    #[arg(long, default_value_t = 0)]
    pub leaper_threads: usize,
    /// Do not train: Leaper engines run without a model (their fallback).
    #[arg(long)]
    pub leaper_no_train: bool,
    /// Retrain Leaper every N measured ops on the trace so far (the learner's periodic
    /// retraining; the access clock stands still while it trains). Needs --threads 1.
    #[arg(long, value_name = "N")]
    pub leaper_retrain_ops: Option<u64>,
    /// Flushes only, no compactions (Leaper's Fig. 10): cairn's level-0 triggers are put
    /// out of reach, so tables pile up in level 0.
    #[arg(long)]
    pub flush_only: bool,
    /// Record cairn's block-cache lookups in the measured phase and report Belady's bounds
    /// beside the misses per read (cairn with its LRU block cache).
    #[arg(long)]
    pub block_trace: bool,
    /// Extra arguments for the learner (`python -m cairn.learn.leaper train --help`), one
    /// string split at spaces, e.g. `--max-multiplier 8 --alpha 0.6`.
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub learner_args: Option<String>,
}

impl LeaperArgs {
    /// `--invalidation-window-ms`: Some(ms), or None for `auto`.
    pub fn window_ms(&self) -> Result<Option<u64>> {
        let w = self.invalidation_window_ms.trim();
        if w.eq_ignore_ascii_case("auto") {
            return Ok(None);
        }
        w.parse()
            .map(Some)
            .with_context(|| format!("--invalidation-window-ms takes MS or auto, got `{w}`"))
    }

    pub fn settings(&self) -> crate::leaper::LeaperSettings {
        crate::leaper::LeaperSettings {
            python: self.python.clone(),
            pythonpath: None,
            k: self.leaper_k,
            max_k: self.leaper_max_k,
            threads: self.leaper_threads,
            train: !self.leaper_no_train,
            learner_args: self
                .learner_args
                .as_deref()
                .unwrap_or("")
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            retrain_ops: self.leaper_retrain_ops.filter(|&n| n > 0),
        }
    }

    /// The budget with the slot and (when fixed) T applied.
    pub fn apply(&self, mut cfg: BenchConfig) -> Result<BenchConfig> {
        if self.leaper_slot_ms == 0 {
            bail!("--leaper-slot-ms must be positive");
        }
        cfg.leaper_slot_ms = self.leaper_slot_ms;
        if let Some(p) = self.leaper_sample_p {
            if !(p > 0.0 && p <= 1.0) {
                bail!("--leaper-sample-p must be within (0, 1], got {p}");
            }
            cfg.leaper_sample_p = Some(p);
        }
        cfg.invalidation_window_ms = self.window_ms()?;
        cfg.flush_only = self.flush_only;
        cfg.block_trace = self.block_trace;
        Ok(cfg)
    }
}

#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Workload. db_bench: fillseq, fillrandom, overwrite, readrandom, readseq, seekrandom,
    /// readwhilewriting; YCSB: ycsb-a..ycsb-f; custom: mix (--mix), phased (--phases);
    /// presets: ruskey-sessions, ac-key-two-phase, ac-key-default; Leaper (Table 2):
    /// leaper-synthetic, leaper-ecommerce, leaper-im. Defaults to mix/phased when
    /// --mix/--phases is given.
    #[arg(long, value_enum)]
    pub workload: Option<WorkloadName>,
    /// Records loaded before the measured phase (for fillseq/fillrandom: records written;
    /// awpi-*: records inserted over the trace and replay days) [default: 100000; awpi-*:
    /// the profile's, times --awpi-scale].
    #[arg(long)]
    pub records: Option<u64>,
    /// Operations in the measured phase (split evenly across phases of presets, and
    /// across --threads). Ignored by fillseq/fillrandom.
    #[arg(long, default_value_t = 100_000)]
    pub ops: u64,
    /// Seed of the op stream, load order, dataset and values; equal seeds give every
    /// engine the identical stream.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Key size in bytes (>= 8): big-endian integer key, zero padded.
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    /// Fixed value size in bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Value size distribution, overriding --value-size: `fixed:N` or `uniform:MIN:MAX`.
    #[arg(long, value_name = "DIST")]
    pub value_size_dist: Option<String>,
    /// Key dataset: sequential, uniform, linear (evenly spaced, random stride), normal
    /// (sorted, de-duplicated), seg1 / seg10 (1% / 10% of gaps are jumps between dense
    /// linear segments), clustered; or file:PATH, a user's keys (one per line: decimal or
    /// 0x-hex u64, else bytes escaped as the CLI writes them; or a binary u64 file: a
    /// little-endian count, then the keys), of which --records are loaded.
    #[arg(long, default_value_t = Dataset::Sequential)]
    pub dataset: Dataset,
    /// Request distribution, overriding the workload's own (uniform for db_bench
    /// workloads, YCSB's for ycsb-*, zipfian for mix/phased/presets).
    #[arg(long, value_enum)]
    pub distribution: Option<Distribution>,
    /// Zipfian constant (YCSB default 0.99; leaper-* workloads: their own); implies
    /// --distribution zipfian unless --distribution is given (then it sets the skew of
    /// `latest`/`zipfian`) or the workload is leaper-* (which keep their distribution).
    #[arg(long, value_name = "THETA")]
    pub zipf: Option<f64>,
    /// Custom op mix for workload `mix`, e.g. `read=0.5,scan=0.1,update=0.3,insert=0.1,rmw=0`
    /// (ops: read, scan, update, insert, rmw; proportions sum to 1).
    #[arg(long, value_name = "MIX")]
    pub mix: Option<String>,
    /// Phases for workload `phased`: `MIX:OPS;MIX:OPS;...`, e.g.
    /// `read=0.9,update=0.1:100000;read=0.5,update=0.5:100000`.
    #[arg(long, value_name = "PHASES")]
    pub phases: Option<String>,
    /// Entries per scan (seekrandom, readseq, mix/phased scans); ycsb-e draws 1..=100.
    #[arg(long, default_value_t = 100)]
    pub scan_length: usize,
    /// Foreground worker threads (readwhilewriting: reader threads, plus one writer).
    /// The stream is identical across engines; with > 1 thread the interleaving is not.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Timeline sampling period in milliseconds [default: 100, so short runs plot; 1000
    /// for leaper-* and awpi-* workloads, whose window metrics are per second].
    #[arg(long, value_name = "MS")]
    pub timeline_ms: Option<u64>,
    /// Hotset distribution (ac-key-default, or --distribution hotset): fraction of the keys
    /// that are hot, scattered over the key space.
    #[arg(long, default_value_t = crate::workload::default_hot_keys(), value_name = "FRACTION")]
    pub hot_keys: f64,
    /// Hotset distribution: fraction of the ops (point keys and scan starts) on hot keys;
    /// equal to --hot-keys gives a uniform distribution.
    #[arg(long, default_value_t = crate::workload::default_hot_ops(), value_name = "FRACTION")]
    pub hot_ops: f64,
    /// moving-hot distribution (leaper-moving): draws between two steps of the hot windows
    /// (per run, split over the threads).
    #[arg(long, default_value_t = crate::workload::default_hot_phase_ops(), value_name = "OPS")]
    pub hot_phase_ops: u64,
    /// ac-key-default: fraction of ops that are scans; the rest are point lookups.
    #[arg(long, default_value_t = crate::workload::default_scan_ratio(), value_name = "FRACTION")]
    pub scan_ratio: f64,
    /// After the load, wait until the engine reports no flush or compaction running
    /// (at most 10 minutes), so the measured phase starts from a settled tree. The
    /// default except for leaper-* workloads (about background work); kept for old
    /// command lines.
    #[arg(long, conflicts_with = "no_settle")]
    pub settle: bool,
    /// Start the measured phase right after the load's last flush, with compactions of
    /// the load possibly still running.
    #[arg(long)]
    pub no_settle: bool,
    /// Ops of the stream run unmeasured before the measured --ops (the part Leaper's
    /// learner trains on; every engine runs it, then the harness waits for background
    /// work to finish) [default: 0; leaper-* workloads: --warmup-secs 20].
    #[arg(long, value_name = "OPS")]
    pub warmup_ops: Option<u64>,
    /// End the warm-up after this many seconds if --warmup-ops (default 50 x --ops here)
    /// have not run by then (Leaper's learner needs enough time slots). `compare` pins the
    /// first engine's count for the others, so every engine runs the same stream (exactly
    /// so with one thread).
    #[arg(long, value_name = "SECS")]
    pub warmup_secs: Option<f64>,
    /// leaper-* workloads: share of reads (point + range) among the ops; the rest are
    /// writes in the workload's update:insert ratio (Fig. 13b's mixtures).
    #[arg(long, value_name = "FRACTION")]
    pub read_share: Option<f64>,
    /// leaper-* workloads: share of the reads that are range lookups of --scan-length
    /// (Fig. 13a).
    #[arg(long, value_name = "FRACTION")]
    pub range_ratio: Option<f64>,
    /// awpi-* workloads: records = the profile's times this, when --records is not given.
    #[arg(long, default_value_t = 1.0, value_name = "SCALE")]
    pub awpi_scale: f64,
}

/// Accepts `none`, `lz4`, `zstd` and `zstd:LEVEL`.
pub fn parse_compression(s: &str) -> Result<cairn::Compression, String> {
    let c = cairn::Compression::parse(s)
        .ok_or_else(|| format!("unknown compression `{s}` (none, lz4, zstd, zstd:LEVEL)"))?;
    c.validate().map_err(|e| e.to_string())?;
    Ok(c)
}

/// Accepts `8388608`, `512K`, `64M`, `64MiB`, `1G`, `1GB` (binary multiples).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim().to_ascii_lowercase();
    let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &t[digits.len()..];
    let mult: usize = match unit {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("unknown size unit `{unit}` (use K, M or G)")),
    };
    let n: usize = digits
        .trim()
        .parse()
        .map_err(|_| format!("bad size `{s}`"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size `{s}` overflows"))
}

#[derive(Args, Debug, Clone)]
pub struct BudgetArgs {
    /// Memtable size given to every engine (e.g. 64M) [default: 64M; 1M for leaper-* and
    /// awpi-* workloads, so flushes and compactions run while they are measured].
    #[arg(long, value_parser = parse_size, value_name = "BYTES")]
    pub write_buffer_size: Option<usize>,
    /// Block cache capacity given to every engine (e.g. 8M).
    #[arg(long, default_value = "8M", value_parser = parse_size, value_name = "BYTES")]
    pub cache_bytes: usize,
    /// Bloom filter bits per key.
    #[arg(long, default_value_t = 10.0)]
    pub bloom_bits: f64,
    /// Use direct I/O (O_DIRECT) for reads (and RocksDB's flush/compaction).
    #[arg(long)]
    pub direct_io: bool,
    /// Keep index and filter blocks in the block cache, charged to its budget, for every
    /// engine (cairn's and RocksDB's cache_index_and_filter_blocks) [default: pinned].
    #[arg(long)]
    pub cache_index_and_filter_blocks: bool,
    /// Read tables (and cairn's value logs) through memory maps, for every engine
    /// (cairn's mmap_reads, RocksDB's allow_mmap_reads; LevelDB's and Bourbon's default)
    /// [default: each engine's own: cairn's wisckey and bourbon presets map, the rest
    /// do not].
    #[arg(long, conflicts_with = "no_mmap_reads")]
    pub mmap_reads: bool,
    /// Read through pread for every engine, whatever its preset says.
    #[arg(long)]
    pub no_mmap_reads: bool,
    /// cairn writes LevelDB's classic bloom filter (a key's bits anywhere in the array)
    /// instead of the cache-local one (one 64-byte line per key) [default: cache-local].
    #[arg(long)]
    pub classic_filter: bool,
    /// Block compression for every engine, at every level: none, lz4, zstd or zstd:LEVEL
    /// (cairn's compression and RocksDB's, bottommost included).
    #[arg(long, default_value = "none", value_parser = parse_compression)]
    pub compression: cairn::Compression,
    /// Sync the WAL on every write.
    #[arg(long)]
    pub sync: bool,
    /// Device: on the wall clock, latency cairn adds to each table I/O so a storage read
    /// costs what it would on that device (ssd: 228 us per 4 KiB read); on the virtual
    /// clock, the device model every I/O is priced on. RocksDB and btree ignore it.
    #[arg(long, value_enum, default_value_t = crate::engines::Device::None)]
    pub device: crate::engines::Device,
    /// The clock: wall, or virtual (cairn only, with --device and --threads 1): every
    /// I/O, foreground and background, priced on one simulated device, CPU priced from
    /// counts, background work at fixed points, so a rerun gives the same times.
    #[arg(long, value_enum, default_value_t = crate::engines::ClockKind::Wall)]
    pub clock: crate::engines::ClockKind,
    /// On the virtual clock: requests between the fixed points where background work runs.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub bg_every_ops: u64,
    /// On the virtual clock: a CPU price file from `cairn-bench calibrate` [default: the
    /// built-in one].
    #[arg(long, value_name = "FILE")]
    pub cpu_prices: Option<PathBuf>,
    /// Parent directory for engine data [default: a fresh temporary directory].
    #[arg(long, value_name = "DIR")]
    pub db_dir: Option<PathBuf>,
    /// Keep engine data after the run (under --db-dir).
    #[arg(long)]
    pub keep_db: bool,
    /// Capacity of level 1 (e.g. 4M): cairn's level1_bytes, RocksDB's
    /// max_bytes_for_level_base [default: the engine's own; cairn 256M].
    #[arg(long, value_parser = parse_size, value_name = "BYTES")]
    pub level1_bytes: Option<usize>,
    /// Target size of a table file (e.g. 2M): cairn's target_file_size, RocksDB's
    /// target_file_size_base [default: the engine's own, 64M].
    #[arg(long, value_parser = parse_size, value_name = "BYTES")]
    pub target_file_size: Option<usize>,
    /// Size ratio T between levels (2..=64): cairn's size_ratio, RocksDB's
    /// max_bytes_for_level_multiplier [default: the engine's own, 10]. cairn presets'
    /// K = T entries follow it; other K entries are clamped to it.
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(2..=64))]
    pub size_ratio: Option<u64>,
    /// Level-0 runs that trigger a compaction into level 1 (cairn's l0_compaction_trigger,
    /// RocksDB's level0_file_num_compaction_trigger) [default: the engine's own, 4].
    /// RusKey's tree merges every flush at once: 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=64))]
    pub l0_trigger: Option<u64>,
    /// Levels, level 0 included (cairn's num_levels, RocksDB's num_levels) [default: the
    /// engine's own, 7]. RusKey's tree has its bulk in the configured last level, where
    /// lazy-leveling keeps one run: size it so that the data reaches that level.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..=16))]
    pub num_levels: Option<u64>,
    /// Memtables per engine, the active one included, before writes wait for a flush
    /// (cairn's max_write_buffers, RocksDB's max_write_buffer_number).
    #[arg(long, default_value_t = crate::engines::default_memtables() as u64, value_parser = clap::value_parser!(u64).range(2..=64))]
    pub memtables: u64,
    /// Threads one level-0 compaction may use, for both engines (cairn's
    /// max_subcompactions, RocksDB's max_subcompactions).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub subcompactions: u64,
    /// Compaction jobs that may run at once, for both engines (cairn's
    /// max_background_compactions; RocksDB's max_background_jobs set to N + 1, which is
    /// one flush and N compactions for N up to 6).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub compaction_jobs: u64,
    /// Keep RocksDB's statistics on while it is timed (they cost it time; by default
    /// `compare` reads its counters from a separate untimed pass instead).
    #[arg(long)]
    pub rocksdb_statistics: bool,
    /// RocksDB caches the blocks its flushes write (`prepopulate_block_cache =
    /// kFlushOnly`, Leaper's RocksDB baseline; set through its options file, which the C
    /// API of 7.8 leaves as the only way).
    #[arg(long)]
    pub rocksdb_prepopulate: bool,
    /// Operations per mission (RusKey): the run JSON then has a per-mission series
    /// (`missions`), and cairn's tuner uses it [default: 50000; the series is written for
    /// multi-phase workloads even without this flag].
    #[arg(long, value_name = "OPS", value_parser = clap::value_parser!(u64).range(1..))]
    pub mission_ops: Option<u64>,
    /// RusKey's Fig. 10: after MISSION missions of the measured phase, set K at every level
    /// below 0 to K by the engine's transition (cairn: `cairn:transition-greedy`,
    /// `-lazy`, `-flexible`; other presets flexible). Needs --mission-ops.
    #[arg(long, value_name = "MISSION:K", requires = "mission_ops")]
    pub set_k_at: Option<crate::engines::KChange>,
    /// Seed of cairn's learned tuner (presets tuned by Lerp: cairn:ruskey,
    /// cairn:ruskey-pretrained, cairn:ruskey-monkey) [default: the preset's own]. Other
    /// engines ignore it. Recorded in the run's `config`, where ruskey-summary reads it.
    #[arg(long, value_name = "N")]
    pub tuner_seed: Option<u64>,
    /// cairn: write STATS.json and a stats line to LOG every this many milliseconds while
    /// the run goes (`Options::stats_dump_period_ms`; the cost of following a running
    /// database). Other engines ignore it.
    #[arg(long, value_name = "MS")]
    pub stats_dump_ms: Option<u64>,
    /// cairn: hand the allocator's free pages back to the OS after flushes and compactions
    /// (`Options::release_memory_after_jobs`; default: the option's default, on). Other
    /// engines ignore it.
    #[arg(long, value_name = "BOOL")]
    pub release_memory_after_jobs: Option<bool>,
    /// cairn: merge level 0 below its trigger once scans that had to merge it with other
    /// runs are worth the merge (`Options::read_triggered_compaction`, LevelDB's seek
    /// compaction; default: the option's default, on). Other engines ignore it.
    #[arg(long, value_name = "BOOL")]
    pub read_triggered_compaction: Option<bool>,
}

impl BudgetArgs {
    pub fn config(&self) -> BenchConfig {
        self.config_for(None)
    }

    /// The budget for a workload (its default memtable size when none is given).
    pub fn config_for(&self, w: Option<crate::workload::WorkloadName>) -> BenchConfig {
        let wbs = if w.is_some_and(|w| w.is_leaper() || w.is_awpi()) {
            1 << 20
        } else {
            64 << 20
        };
        BenchConfig {
            write_buffer_size: self.write_buffer_size.unwrap_or(wbs),
            cache_bytes: self.cache_bytes,
            bloom_bits: self.bloom_bits,
            direct_io: self.direct_io,
            cache_index_and_filter_blocks: self.cache_index_and_filter_blocks,
            mmap_reads: match (self.mmap_reads, self.no_mmap_reads) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            classic_filter: self.classic_filter,
            compression: self.compression,
            sync: self.sync,
            device: self.device,
            clock: self.clock,
            bg_every_ops: self.bg_every_ops,
            cpu_prices: self.cpu_prices.clone(),
            level1_bytes: self.level1_bytes.map(|b| b as u64),
            target_file_size: self.target_file_size.map(|b| b as u64),
            size_ratio: self.size_ratio.map(|t| t as usize),
            l0_trigger: self.l0_trigger.map(|n| n as usize),
            num_levels: self.num_levels.map(|n| n as usize),
            mission_ops: self.mission_ops,
            set_k_at: self.set_k_at,
            memtables: self.memtables as usize,
            subcompactions: self.subcompactions as usize,
            compaction_jobs: self.compaction_jobs as usize,
            rocksdb_statistics: self.rocksdb_statistics,
            rocksdb_prepopulate: self.rocksdb_prepopulate,
            tuner_seed: self.tuner_seed,
            stats_dump_ms: self.stats_dump_ms,
            release_memory_after_jobs: self
                .release_memory_after_jobs
                .unwrap_or(BenchConfig::default().release_memory_after_jobs),
            read_triggered_compaction: self
                .read_triggered_compaction
                .unwrap_or(BenchConfig::default().read_triggered_compaction),
            ..BenchConfig::default()
        }
    }
}

/// --records when not given (awpi-* workloads take their profile's).
pub const DEFAULT_RECORDS: u64 = 100_000;

impl WorkloadArgs {
    /// --timeline-ms, or its default for the workload.
    pub fn timeline_ms(&self) -> u64 {
        self.timeline_ms.unwrap_or_else(|| match self.workload {
            Some(w) if w.is_leaper() || w.is_awpi() => 1000,
            _ => 100,
        })
    }

    /// --records, or its default.
    pub fn records(&self) -> u64 {
        self.records.unwrap_or(DEFAULT_RECORDS)
    }

    /// Validates the flags and resolves them into the spec every engine runs.
    pub fn spec(&self) -> Result<WorkloadSpec> {
        let workload = match (self.workload, &self.mix, &self.phases) {
            (Some(w), _, _) => w,
            (None, _, Some(_)) => WorkloadName::Phased,
            (None, Some(_), None) => WorkloadName::Mix,
            (None, None, None) => bail!("--workload is required (or give --mix / --phases)"),
        };
        if let Some(m) = &self.mix {
            Mix::parse(m)?;
        }
        if let Some(p) = &self.phases {
            phases::parse(p)?;
        }
        let value_size = match &self.value_size_dist {
            // SA-LSM's records: values of 200-500 bytes.
            None if workload.is_awpi() => ValueSize::Uniform(200, 500),
            None => ValueSize::Fixed(self.value_size),
            Some(d) => ValueSize::parse(d.strip_prefix("fixed:").unwrap_or(d))
                .with_context(|| format!("--value-size-dist `{d}`"))?,
        };
        let theta = self.zipf.unwrap_or(workload.default_theta());
        if !(theta > 0.0 && (theta - 1.0).abs() > 1e-9 && theta.is_finite()) {
            bail!("--zipf must be > 0 and != 1, got {theta}");
        }
        // Leaper workloads keep their own (clustered / latest) zipfian for --zipf.
        let distribution = self.distribution.or(self
            .zipf
            .filter(|_| !workload.is_leaper())
            .map(|_| Distribution::Zipfian));
        if (self.read_share.is_some() || self.range_ratio.is_some()) && !workload.is_leaper() {
            bail!("--read-share and --range-ratio apply to leaper-* workloads");
        }
        // Leaper workloads warm up for 20 s unless told otherwise: the learner needs time
        // slots, not ops.
        let warmup_secs = match (self.warmup_ops, self.warmup_secs) {
            (None, None) if workload.is_leaper() => Some(20.0),
            (_, s) => s,
        };
        let warmup_ops = match (self.warmup_ops, warmup_secs) {
            (Some(n), _) => n,
            // Time-bounded: until the deadline, at most 50x the measured ops.
            (None, Some(_)) => self.ops.saturating_mul(50),
            (None, None) => 0,
        };
        if self
            .warmup_secs
            .is_some_and(|s| !(s >= 0.0 && s.is_finite()))
        {
            bail!("--warmup-secs must be a non-negative number of seconds");
        }
        if self.threads == 0 {
            bail!("--threads must be at least 1");
        }
        if self.scan_length == 0 {
            bail!("--scan-length must be at least 1");
        }
        Ok(WorkloadSpec {
            workload,
            records: match (self.records, workload.awpi_profile()) {
                (Some(n), _) => n,
                (None, Some(p)) => {
                    if !(self.awpi_scale > 0.0 && self.awpi_scale.is_finite()) {
                        bail!("--awpi-scale must be positive");
                    }
                    ((p.records as f64 * self.awpi_scale).round() as u64).max(100)
                }
                (None, None) => DEFAULT_RECORDS,
            },
            ops: self.ops,
            seed: self.seed,
            key_size: self.key_size,
            value_size,
            dataset: self.dataset.clone(),
            distribution,
            zipf_theta: theta,
            mix: self.mix.clone(),
            phases: self.phases.clone(),
            scan_length: self.scan_length,
            threads: self.threads,
            hot_keys: self.hot_keys,
            hot_ops: self.hot_ops,
            hot_phase_ops: self.hot_phase_ops,
            scan_ratio: self.scan_ratio,
            settle: self.settle || (!self.no_settle && !workload.is_leaper()),
            warmup_ops,
            warmup_secs,
            read_share: self.read_share,
            range_ratio: self.range_ratio,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent_and_every_flag_is_documented() {
        Cli::command().debug_assert();
        for sub in Cli::command()
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
        {
            for a in sub.get_arguments() {
                if a.get_id() == "help" || a.get_id() == "version" {
                    continue;
                }
                assert!(
                    a.get_help().is_some(),
                    "{} --{} has no help",
                    sub.get_name(),
                    a.get_id()
                );
            }
        }
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("12Q").is_err());
    }

    #[test]
    fn tree_shape_flags_reach_the_config() {
        let parse = |extra: &[&str]| {
            let mut args = vec![
                "cairn-bench",
                "run",
                "--engine",
                "cairn",
                "--workload",
                "mix",
            ];
            args.extend_from_slice(extra);
            Cli::try_parse_from(args).map(|cli| match cli.command {
                Command::Run(r) => r.budget.config(),
                _ => panic!(),
            })
        };
        let c = parse(&[
            "--level1-bytes",
            "4M",
            "--size-ratio",
            "8",
            "--mission-ops",
            "2000",
            "--target-file-size",
            "2M",
        ])
        .unwrap();
        assert_eq!(c.level1_bytes, Some(4 << 20));
        assert_eq!(c.target_file_size, Some(2 << 20));
        assert_eq!(c.size_ratio, Some(8));
        assert_eq!(c.mission_ops, Some(2000));
        assert_eq!(c.mission_ops(), 2000);
        let d = parse(&[]).unwrap();
        assert_eq!(
            (d.level1_bytes, d.size_ratio, d.mission_ops),
            (None, None, None)
        );
        assert_eq!(d.mission_ops(), crate::engines::DEFAULT_MISSION_OPS);
        assert!(parse(&["--size-ratio", "1"]).is_err());
        assert!(parse(&["--size-ratio", "65"]).is_err());
        assert!(parse(&["--mission-ops", "0"]).is_err());
        assert!(parse(&["--level1-bytes", "4Q"]).is_err());
        let k = parse(&["--mission-ops", "100", "--set-k-at", "60:10"]).unwrap();
        assert_eq!(
            k.set_k_at,
            Some(crate::engines::KChange { mission: 60, k: 10 })
        );
        assert_eq!(d.set_k_at, None);
        assert_eq!(parse(&["--tuner-seed", "7"]).unwrap().tuner_seed, Some(7));
        assert_eq!(d.tuner_seed, None);
        for bad in ["60", "0:10", "60:0", "a:1", "60:10:1"] {
            assert!(
                parse(&["--mission-ops", "100", "--set-k-at", bad]).is_err(),
                "{bad}"
            );
        }
        assert!(
            parse(&["--set-k-at", "60:10"]).is_err(),
            "needs --mission-ops"
        );
        // Compression: off unless asked, one codec for every engine.
        assert_eq!(d.compression, cairn::Compression::None);
        let z = parse(&["--compression", "zstd:19"]).unwrap();
        assert_eq!(z.compression, cairn::Compression::Zstd { level: 19 });
        let l = parse(&["--compression", "lz4"]).unwrap();
        assert_eq!(l.compression, cairn::Compression::Lz4);
        for bad in ["snappy", "zstd:99", "zstd:x"] {
            assert!(parse(&["--compression", bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn flags_resolve_into_a_spec() {
        let cli = Cli::try_parse_from([
            "cairn-bench",
            "run",
            "--engine",
            "btree",
            "--mix",
            "read=0.5,update=0.5",
            "--zipf",
            "0.8",
            "--value-size-dist",
            "uniform:10:20",
        ])
        .unwrap();
        let Command::Run(r) = cli.command else {
            panic!()
        };
        let s = r.workload.spec().unwrap();
        assert_eq!(s.workload, WorkloadName::Mix);
        assert_eq!(s.distribution, Some(Distribution::Zipfian));
        assert_eq!(s.zipf_theta, 0.8);
        assert_eq!(s.value_size, ValueSize::Uniform(10, 20));
        let cli = Cli::try_parse_from(["cairn-bench", "run", "--engine", "btree"]).unwrap();
        let Command::Run(r) = cli.command else {
            panic!()
        };
        assert!(r.workload.spec().is_err());
    }
}
