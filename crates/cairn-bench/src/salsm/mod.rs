//! The harness's side of SA-LSM's experiments (Zhang et al., VLDB 2022, §4): AWPI streams
//! replayed on a simulated clock, the external service (`python -m cairn.learn.salsm`, in
//! `python/`) run as a subprocess between the trace days and the replay days, the
//! placement (proactive compaction, or the baselines' own), and the measured replay.
//! `run` is the end-to-end run behind `compare --workload awpi-*`, `service` drives the
//! Python service, `layout` reads which records ended up on the cold tier, `summary` makes
//! the paper's tables.

pub mod arrivals;
pub mod layout;
pub mod run;
pub mod service;
pub mod summary;

use crate::engines::ProactiveSummary;
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// SA-LSM's flags (awpi-* workloads; ignored by the others).
#[derive(Args, Debug, Clone)]
pub struct SalsmArgs {
    /// Cold budget B: the share of the trace's records every method places on the cold
    /// tier (equal budgets) [default: the generator's true cold share, the records not
    /// accessed in the replay days].
    #[arg(long, value_name = "FRACTION")]
    pub salsm_budget: Option<f64>,
    /// The AWPI generator: `lifecycle` (records moving through their stages, with
    /// predictable late activity) or `decay` (the control: popularity decaying after the
    /// insert).
    #[arg(long, default_value = "lifecycle", value_name = "NAME")]
    pub salsm_generator: String,
    /// Lifecycle ingredients to switch off, comma-separated (revival, periodic, noise,
    /// polling, bursts, season, memoryless): the ablations.
    #[arg(long, value_name = "LIST")]
    pub salsm_ablate: Option<String>,
    /// Simulated days of the trace (the query store's observation window: 20 feature days
    /// and the 30-day horizon, as the paper labels).
    #[arg(long, default_value_t = 50, value_name = "DAYS")]
    pub salsm_trace_days: u32,
    /// Simulated days replayed and measured after the placement.
    #[arg(long, default_value_t = 3, value_name = "DAYS")]
    pub salsm_replay_days: u32,
    /// Multiplier of the tiers' device latencies during the replay (ssd 228 us, hdd
    /// 5050 us per read at 1.0); the trace days run without added latency.
    #[arg(long, default_value_t = 0.05, value_name = "SCALE")]
    pub salsm_latency_scale: f64,
    /// Block cache as a share of the trace's data bytes (the paper's 30%); overrides
    /// --cache-bytes for awpi-* workloads.
    #[arg(long, default_value_t = 0.3, value_name = "FRACTION")]
    pub salsm_cache_share: f64,
    /// The service's prediction horizon (--horizon-days) [default: 30, the paper's].
    #[arg(long, value_name = "DAYS")]
    pub salsm_horizon_days: Option<f64>,
    /// Share of the replay's ops run first, unmeasured, to warm the block cache (the
    /// paper warms up for 60 s).
    #[arg(long, default_value_t = 0.1, value_name = "FRACTION")]
    pub salsm_warmup_share: f64,
    /// An open-loop replay (virtual clock only): the measured ops arrive at this rate, in
    /// ops per second of virtual time (Poisson arrivals, seeded), as from many concurrent
    /// clients; each waits at a tier's device for what the requests before it left
    /// there, and its latency counts from its arrival (the paper's rate-driven replay,
    /// where a busy cold tier queues) [default: closed loop, one client].
    #[arg(long, value_name = "OPS_PER_SEC")]
    pub salsm_arrival_rate: Option<f64>,
    /// Extra arguments for `python -m cairn.learn.salsm train`, one string split at
    /// spaces (e.g. `--pivots 5 --seed 1`).
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub salsm_service_args: Option<String>,
    /// cairn:sa-lsm runs: skip Table 5's passive compaction of a copy of the same data.
    #[arg(long)]
    pub salsm_no_table5: bool,
}

impl SalsmArgs {
    /// The settings carried to the run; `artifacts` keeps each run's trace, cold-key set
    /// and service report.
    pub fn settings(&self, python: Option<String>, artifacts: Option<&Path>) -> SalsmSettings {
        SalsmSettings {
            python,
            budget: self.salsm_budget,
            generator: self.salsm_generator.clone(),
            ablate: self.salsm_ablate.clone().unwrap_or_default(),
            trace_days: self.salsm_trace_days,
            replay_days: self.salsm_replay_days,
            latency_scale: self.salsm_latency_scale,
            cache_share: self.salsm_cache_share,
            horizon_days: self.salsm_horizon_days,
            warmup_share: self.salsm_warmup_share,
            arrival_rate: self.salsm_arrival_rate,
            service_args: self
                .salsm_service_args
                .as_deref()
                .unwrap_or("")
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            table5: !self.salsm_no_table5,
            artifacts: artifacts.map(Path::to_path_buf),
        }
    }
}

/// How an SA-LSM run goes (carried to child processes in the run request).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SalsmSettings {
    #[serde(default)]
    pub python: Option<String>,
    #[serde(default)]
    pub budget: Option<f64>,
    #[serde(default = "default_generator")]
    pub generator: String,
    #[serde(default)]
    pub ablate: String,
    pub trace_days: u32,
    pub replay_days: u32,
    pub latency_scale: f64,
    pub cache_share: f64,
    #[serde(default)]
    pub horizon_days: Option<f64>,
    pub warmup_share: f64,
    /// Open-loop arrivals per second of virtual time (None: closed loop).
    #[serde(default)]
    pub arrival_rate: Option<f64>,
    #[serde(default)]
    pub service_args: Vec<String>,
    pub table5: bool,
    /// Where each run leaves its trace, cold-key set and service report.
    #[serde(default)]
    pub artifacts: Option<PathBuf>,
}

fn default_generator() -> String {
    "lifecycle".into()
}

impl Default for SalsmSettings {
    fn default() -> Self {
        SalsmSettings {
            python: None,
            budget: None,
            generator: default_generator(),
            ablate: String::new(),
            trace_days: 50,
            replay_days: 3,
            latency_scale: 0.05,
            cache_share: 0.3,
            horizon_days: None,
            warmup_share: 0.1,
            arrival_rate: None,
            service_args: Vec::new(),
            table5: true,
            artifacts: None,
        }
    }
}

/// The run JSON's `placement` section: how the placement was made and what it did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlacementSummary {
    /// `passive`, `age-tier`, or the service's method (`rsf`, `gbdt`, `lru`, ...).
    pub method: String,
    /// The cold budget B every method was given (share of the trace's records).
    pub budget: f64,
    /// Where B came from (the generator's true cold share, or --salsm-budget).
    pub budget_source: String,
    /// Measured after the placement: of the trace's records, the share whose newest
    /// version sits on the cold tier (read from the tables of each tier).
    pub migrated_share: Option<f64>,
    /// Bytes of tables on the cold tier / all table bytes, after the placement.
    pub migrated_bytes_share: Option<f64>,
    /// FP / (FP + TP) over the records the placement left on the cold tier (as measured
    /// above): a record on the cold tier that the replay days access (a point access, or
    /// inside a scan) is a false positive.
    pub cold_fir: Option<f64>,
    /// The same over the service's cold-key set (sa-* presets).
    pub cold_set_fir: Option<f64>,
    /// Keys in the service's cold-key set.
    pub cold_set_keys: Option<usize>,
    /// Why a figure is missing.
    pub note: Option<String>,
    /// Cold-tier (tier 1) storage reads per op of the measured replay.
    pub cold_tier_reads_per_op: f64,
    pub cold_tier_reads: u64,
    /// Table 5: the proactive compaction's CPU and wall time (ms), its input and output.
    pub proactive: Option<ProactiveSummary>,
    pub proactive_cpu_ms: Option<f64>,
    pub proactive_wall_ms: Option<f64>,
    /// Table 5's passive side (cairn:sa-lsm runs): a manual compaction of a copy of the
    /// same data (taken before the proactive compaction) down through the levels.
    pub passive_compaction: Option<CompactionCost>,
    /// The service: training wall time (the clock stood still), its report's figures.
    pub service: Option<service::TrainReport>,
    /// The age rule's threshold (age-tier), in days.
    pub age_days: Option<f64>,
    /// Level 1's capacity (every method the same) and the hot level's slack.
    pub level1_bytes: u64,
    pub hot_level_slack: f64,
    pub cache_bytes: u64,
    pub latency_scale: f64,
    /// Hot and cold tier table bytes after the placement.
    pub hot_bytes: u64,
    pub cold_bytes: u64,
    /// Seconds of the trace days' replay (unmeasured) and of the placement step.
    pub trace_seconds: f64,
    pub placement_seconds: f64,
    /// Replay ops run unmeasured to warm the cache.
    pub warmup_ops: u64,
    /// The open-loop replay's arrival rate, ops per second (None: closed loop).
    pub arrival_rate: Option<f64>,
}

/// What a compaction cost (Table 5).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactionCost {
    pub input_bytes: u64,
    pub output_bytes: u64,
    pub cpu_ms: f64,
    pub wall_ms: f64,
}

impl CompactionCost {
    /// Input MB per second of wall time.
    pub fn mb_per_sec(&self) -> Option<f64> {
        (self.wall_ms > 0.0).then(|| self.input_bytes as f64 / 1e6 / (self.wall_ms / 1e3))
    }
    /// CPU time / wall time.
    pub fn cpu_share(&self) -> Option<f64> {
        (self.wall_ms > 0.0).then(|| self.cpu_ms / self.wall_ms)
    }
}

impl From<&ProactiveSummary> for CompactionCost {
    fn from(p: &ProactiveSummary) -> Self {
        CompactionCost {
            input_bytes: p.input_bytes,
            output_bytes: p.hot_bytes + p.cold_bytes,
            cpu_ms: p.cpu_ns as f64 / 1e6,
            wall_ms: p.wall_ns as f64 / 1e6,
        }
    }
}
