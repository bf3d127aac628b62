//! The JSON record of one engine's run (`cairn-bench run --json`), the unit `compare`
//! collects from its child processes.

use crate::engines::BenchConfig;
use crate::measure::latency::LatencySummary;
use crate::measure::rss::{CpuTime, ProcIo};
use crate::workload::WorkloadSpec;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Storage {
    pub read_ops: u64,
    pub read_bytes: u64,
    pub write_ops: u64,
    pub write_bytes: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// None when the engine made no cache lookups.
    pub hit_ratio: Option<f64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadPhase {
    pub records: u64,
    pub seconds: f64,
    pub storage: Storage,
}

/// One phase of the measured stream (a single phase for non-phased workloads).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    pub index: usize,
    pub mix: String,
    pub ops: u64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    pub latency_us: LatencySummary,
    /// Exact mean latency per op (microseconds; `latency_us.mean` is the histogram's).
    #[serde(default)]
    pub mean_us: f64,
    /// Reads (point reads, scans) and writes (updates, inserts, read-modify-writes).
    #[serde(default)]
    pub read_ops: u64,
    #[serde(default)]
    pub read_mean_us: Option<f64>,
    #[serde(default)]
    pub write_ops: u64,
    #[serde(default)]
    pub write_mean_us: Option<f64>,
    /// The last half of the phase (of each worker's share), "after convergence": ops,
    /// mean latency per op and throughput.
    #[serde(default)]
    pub converged_ops: u64,
    #[serde(default)]
    pub converged_mean_us: Option<f64>,
    #[serde(default)]
    pub converged_ops_per_sec: Option<f64>,
}

/// One mission (RusKey: a fixed number of operations, counted over all threads; the last
/// mission of a phase may be shorter) of the measured phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MissionRow {
    /// 0-based over the whole measured phase.
    pub index: usize,
    /// The phase (session) it ran in.
    pub phase: usize,
    pub ops: u64,
    /// Wall time from the previous mission's end (or the measured phase's start).
    pub wall_ns: u64,
    /// Mean latency per op, all ops / reads / writes (None: no such op).
    pub mean_ns: f64,
    pub read_ops: u64,
    pub read_mean_ns: Option<f64>,
    pub write_ops: u64,
    pub write_mean_ns: Option<f64>,
    /// K_i at the mission's end, level 1 first (engines with per-level run limits).
    #[serde(default)]
    pub ks: Option<Vec<usize>>,
    /// Sorted runs per level at the mission's end, level 1 first.
    #[serde(default)]
    pub runs: Option<Vec<usize>>,
    /// K set at every level at this mission's end (`--set-k-at`), after `ks` was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k_set: Option<usize>,
    /// On the virtual clock: the mission's I/O by device, issuer and kind, priced CPU,
    /// waits and stalls (`now_ns`: its virtual length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<cairn::clock::VirtualStats>,
}

/// The read cache's components over the measured phase (engines that report them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadCacheSummary {
    pub policy: String,
    pub capacity: u64,
    /// Sizes at the end of the measured phase.
    pub kv_bytes: u64,
    pub kp_bytes: u64,
    pub block_bytes: u64,
    pub ghost_bytes: u64,
    /// Counts within the measured phase.
    pub kv_hits: u64,
    pub kp_hits: u64,
    pub block_hits: u64,
    pub block_misses: u64,
    pub ghost_hits: u64,
    /// Storage reads of point reads and scans (compaction reads excluded).
    pub foreground_reads: u64,
    /// Point reads the harness issued (reads and the reads of read-modify-writes).
    pub point_reads: u64,
    /// kv_hits / point_reads.
    pub kv_hit_ratio: Option<f64>,
    /// kp_hits / point_reads.
    pub kp_hit_ratio: Option<f64>,
    /// block_hits / (block_hits + block_misses).
    pub block_hit_ratio: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub engine: String,
    pub workload: String,
    pub records: u64,
    /// Operations in the measured phase (foreground only; see `background_write_ops`).
    pub ops: u64,
    /// Seconds from the first to the last operation of the measured phase.
    pub seconds: f64,
    pub ops_per_sec: f64,
    /// Write-only workloads (fills, overwrite): seconds from the first write until the flushes and compactions the
    /// writes caused had finished, and the throughput over that span.
    #[serde(default)]
    pub settled_seconds: Option<f64>,
    #[serde(default)]
    pub settled_ops_per_sec: Option<f64>,
    /// Seconds writers were stalled or slowed by background work in the measured phase
    /// (and, for fills, until settled).
    #[serde(default)]
    pub stall_seconds: f64,
    /// Where `storage`, `cache` and the write amplification come from.
    #[serde(default)]
    pub counters_source: String,
    /// The engine's name and version (`EngineName::version`).
    #[serde(default)]
    pub engine_version: String,
    /// `compare --repeat R`: every run's figures; this record is the median run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Repeats>,
    /// All foreground ops together.
    pub latency_us: LatencySummary,
    /// Per op type: read, scan, update, insert, rmw, and background_update for the
    /// readwhilewriting writer.
    pub per_op_latency_us: BTreeMap<String, LatencySummary>,
    /// (percentile, microseconds) points of all foreground ops.
    pub latency_cdf_us: Vec<[f64; 2]>,
    /// Per phase, in order (phased workloads and presets show how engines adapt).
    pub phases: Vec<PhaseResult>,
    /// Storage I/O during the measured phase, as the engine counts it.
    pub storage: Storage,
    pub cache: CacheStats,
    /// Storage bytes written over the whole run (load included) divided by the key+value
    /// bytes the harness handed to put; None when the engine writes no storage.
    pub write_amplification: Option<f64>,
    /// Key+value bytes put by the harness, load included.
    pub user_bytes_written: u64,
    pub flush_bytes_written: u64,
    pub compaction_bytes_written: u64,
    pub load: LoadPhase,
    /// Size of the engine's directory after the run.
    pub disk_bytes: u64,
    /// Peak RSS of the process that ran this engine (harness and key tables included).
    pub peak_rss_bytes: u64,
    /// RSS just before the engine was opened (key tables and value pool already built):
    /// `peak_rss_bytes - rss_at_open_bytes` bounds what the engine itself added.
    pub rss_at_open_bytes: u64,
    pub rss_note: String,
    /// What the OS saw during the measured phase (/proc/self/io deltas).
    pub os_io: ProcIo,
    pub reads_found: u64,
    pub reads_missing: u64,
    pub scan_entries: u64,
    pub background_write_ops: u64,
    pub threads: usize,
    pub spec: WorkloadSpec,
    pub config: BenchConfig,
    /// Unix time the run started.
    pub started_at_unix: u64,
    /// CPU time (user, sys) of the process during the measured phase, all threads.
    #[serde(default)]
    pub cpu: CpuTime,
    /// Read-cache components (cairn): sizes, hits by component.
    #[serde(default)]
    pub read_cache: Option<ReadCacheSummary>,
    /// Engine-specific figures at the end of the run (see `Engine::extra_stats`).
    #[serde(default)]
    pub engine_stats: BTreeMap<String, f64>,
    /// Cache invalidations by flushes and compactions (Leaper's metric), and the run split
    /// into background-job windows (T1 + T2) and the rest.
    #[serde(default)]
    pub invalidation: Option<InvalidationSummary>,
    /// Flushes and compactions that overlapped the measured phase.
    #[serde(default)]
    pub background_jobs: Vec<crate::measure::windows::BackgroundJob>,
    /// Leaper engines: training on the warm-up part of the stream.
    #[serde(default)]
    pub leaper: Option<crate::leaper::LeaperTraining>,
    /// Ops of the stream run unmeasured before the measured phase.
    #[serde(default)]
    pub warmup_ops: u64,
    /// Operations per mission of `missions`.
    #[serde(default)]
    pub mission_ops: Option<u64>,
    /// The per-mission series (multi-phase workloads, or --mission-ops): one row per
    /// mission, written one row a line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missions: Vec<MissionRow>,
    /// SA-LSM's runs (awpi-* workloads): the placement and what it did to the replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::salsm::PlacementSummary>,
    /// SA-LSM's runs: the AWPI stream's shape and ground truth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awpi: Option<crate::workload::awpi::AwpiStats>,
    /// The clock its times are on: `wall` or `virtual`.
    #[serde(default = "wall")]
    pub clock: String,
    /// On the virtual clock: the devices, priced CPU and device time of the measured
    /// phase, and the I/O of each timeline window (what `reprice` prices again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_clock: Option<VirtualClockReport>,
}

fn wall() -> String {
    "wall".into()
}

/// A virtual run's report: the measured phase, and each timeline window's I/O.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VirtualClockReport {
    #[serde(flatten)]
    pub run: crate::measure::clock::VirtualReport,
    pub windows: Vec<WindowIo>,
}

/// One timeline window of a virtual run: when it ended, its requests, its I/O.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowIo {
    pub second: f64,
    pub ops: u64,
    pub io: cairn::clock::VirtualStats,
}

/// Leaper's metric. An invalidation miss is a foreground data-block miss on a key whose
/// cached block a flush or compaction removed (or whose range a flush moved out of the
/// memtable) while the job ran or within T after it; compaction reads, warming reads and
/// probes never count. The engine counts them (cairn's `PrefetchStats`; None for engines
/// that do not); the window figures come from the per-interval timeline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InvalidationSummary {
    /// T in milliseconds.
    pub window_ms: u64,
    /// Where T came from (a flag, the stock engine's recovery time, the default).
    pub window_source: String,
    /// Data-block misses per read over the measured phase (reads: point reads,
    /// read-modify-writes and scans): the primary metric, whole-run, so a policy cannot
    /// win it by caching less. Engines whose counters are data blocks only (cairn).
    #[serde(default)]
    pub misses_per_read: Option<f64>,
    #[serde(default)]
    pub data_block_misses: Option<u64>,
    #[serde(default)]
    pub reads: Option<u64>,
    /// Belady's MIN on the run's own block lookups, per read (`measure::belady`): demand
    /// caching, and with first uses of blocks written during the run free.
    #[serde(default)]
    pub belady_misses_per_read: Option<f64>,
    #[serde(default)]
    pub belady_warmed_misses_per_read: Option<f64>,
    /// Times Leaper's guardrail stopped it in the measured phase.
    #[serde(default)]
    pub rollbacks: Option<u64>,
    /// Leaper's model evaluations (a range through one step's model) in the measured
    /// phase, and the CPU nanoseconds inference took (§5.2: only the ranges a job
    /// involves).
    #[serde(default)]
    pub model_evals: Option<u64>,
    #[serde(default)]
    pub inference_ns: Option<u64>,
    /// Invalidation misses with T (T1 + T2 windows): the secondary count.
    pub misses: Option<u64>,
    /// Every foreground block-cache miss in timeline intervals inside T1 + T2 windows
    /// (invalidation or not; what Leaper's Table 4 counts "during and after compactions").
    pub window_misses: Option<u64>,
    /// Blocks put in the cache by warming (prefetching) in the measured phase.
    pub warmed_blocks: Option<u64>,
    /// Warmed blocks hit afterwards / warmed blocks, since the engine opened (each warmed
    /// block counts as hit once, so at most 1; `warmed_blocks` and `warmed_hits` are the
    /// measured phase's own).
    pub precision: Option<f64>,
    pub warmed_hits: Option<u64>,
    /// Of `misses`, those while the job ran (T1).
    pub misses_during_jobs: Option<u64>,
    /// Of `misses`, after flushes (the rest after compactions), and by range scans (the
    /// rest by point reads).
    #[serde(default)]
    pub misses_after_flush: Option<u64>,
    #[serde(default)]
    pub misses_by_scans: Option<u64>,
    /// Invalidation misses with T = 1 s and T = 60 s.
    pub misses_1s: Option<u64>,
    pub misses_60s: Option<u64>,
    /// Block-cache misses outside the windows.
    pub outside_misses: Option<u64>,
    pub invalidated_blocks: Option<u64>,
    pub evicted_blocks: Option<u64>,
    pub model_errors: Option<u64>,
    /// Flushes and compactions that had hot ranges to act on.
    pub jobs_with_model: Option<u64>,
    /// Leaper's eq. 3 fits at the end of the run.
    pub alpha_ms_per_block: Option<f64>,
    pub beta: Option<f64>,
    /// Flushes and compactions that ended in the measured phase.
    pub flushes: u64,
    pub compactions: u64,
    /// Seconds of the measured phase inside and outside the windows.
    pub window_seconds: f64,
    pub outside_seconds: f64,
    pub hit_ratio_in_windows: Option<f64>,
    pub hit_ratio_outside: Option<f64>,
    pub qps_in_windows: Option<f64>,
    pub qps_outside: Option<f64>,
    /// Median of the per-interval p95 latencies.
    pub median_p95_us: f64,
    /// p95 and p99 of the ops inside the windows (T1 + T2), in microseconds.
    #[serde(default)]
    pub p95_in_windows_us: Option<f64>,
    #[serde(default)]
    pub p99_in_windows_us: Option<f64>,
    /// Seconds whose p95 exceeded twice that median, in all and inside windows.
    pub p95_spike_seconds: f64,
    pub p95_spike_seconds_in_windows: f64,
    /// This run's median hit-ratio recovery time after a job (ms), over `recoveries` jobs.
    pub recovery_ms: Option<u64>,
    pub recoveries: usize,
}

/// One engine's repeated runs of a workload (`compare --repeat`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Repeats {
    /// Throughput of each run, in run order.
    pub ops_per_sec: Vec<f64>,
    /// The engine's place in each round's order (0: ran first).
    pub position: Vec<usize>,
    /// Fill workloads: throughput to the end of background work, per run.
    #[serde(default)]
    pub settled_ops_per_sec: Vec<f64>,
    /// CPU microseconds per op (all threads), per run.
    #[serde(default)]
    pub cpu_us_per_op: Vec<f64>,
    /// Stall seconds per run.
    #[serde(default)]
    pub stall_seconds: Vec<f64>,
}

impl Repeats {
    /// (min, max) throughput.
    pub fn range(&self) -> (f64, f64) {
        let min = self
            .ops_per_sec
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let max = self.ops_per_sec.iter().copied().fold(0.0, f64::max);
        (min, max)
    }
}

impl RunResult {
    /// Storage reads per operation in the measured phase: the foreground reads when the
    /// engine reports them (compactions excluded), else every storage read.
    pub fn storage_reads_per_op(&self) -> Option<f64> {
        let reads = self
            .read_cache
            .as_ref()
            .map_or(self.storage.read_ops, |c| c.foreground_reads);
        (self.ops > 0).then(|| reads as f64 / self.ops as f64)
    }

    /// CPU milliseconds per operation (seconds per thousand).
    pub fn cpu_ms_per_op(&self) -> Option<f64> {
        (self.ops > 0).then(|| self.cpu.total_s() * 1e3 / self.ops as f64)
    }

    /// Pretty JSON, but `missions` with one compact row a line (thousands of rows).
    pub fn to_json(&self) -> Result<String> {
        if self.missions.is_empty() {
            return Ok(serde_json::to_string_pretty(self)? + "\n");
        }
        let head = RunResult {
            missions: Vec::new(),
            ..self.clone()
        };
        let mut s = serde_json::to_string_pretty(&head)?;
        let close = s.rfind('}').context("JSON object")?;
        s.truncate(close);
        let s = s.trim_end().to_string();
        let rows = self
            .missions
            .iter()
            .map(|m| serde_json::to_string(m).map(|r| format!("    {r}")))
            .collect::<serde_json::Result<Vec<_>>>()?;
        Ok(format!(
            "{s},\n  \"missions\": [\n{}\n  ]\n}}\n",
            rows.join(",\n")
        ))
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, self.to_json()?).with_context(|| format!("writing {}", path.display()))
    }

    pub fn read(path: &Path) -> Result<RunResult> {
        let s =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&s).with_context(|| format!("parsing {}", path.display()))
    }
}

/// Removes from a run's JSON the fields measured on the wall clock (CPU, RSS, the OS's
/// counters, sampled step timings, the tuner's training CPU, files holding such timings),
/// which a rerun on the virtual clock may change; everything left must repeat exactly.
pub fn strip_wall_fields(v: &mut serde_json::Value) {
    use serde_json::Value;
    let Value::Object(m) = v else { return };
    for k in [
        "started_at_unix",
        "cpu",
        "os_io",
        "peak_rss_bytes",
        "rss_at_open_bytes",
        "disk_bytes",
    ] {
        m.remove(k);
    }
    if let Some(Value::Object(s)) = m.get_mut("engine_stats") {
        s.retain(|k, _| {
            !k.ends_with("_ns") && !k.ends_with("_ms") && !k.starts_with("tuner_train")
        });
    }
    if let Some(Value::Object(s)) = m.get_mut("virtual_clock") {
        for k in [
            "measured_foreground_cpu_ns",
            "measured_background_cpu_ns",
            "wall_seconds",
        ] {
            s.remove(k);
        }
    }
    if let Some(Value::Object(p)) = m.get_mut("placement") {
        p.retain(|k, _| !k.contains("seconds") && !k.ends_with("_ms"));
        if let Some(Value::Object(r)) = p.get_mut("proactive") {
            r.retain(|k, _| !k.ends_with("_ns"));
        }
    }
}

/// The paths where two JSON values differ (`.a.b[3]: x != y`).
pub fn json_differences(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    fn walk(a: &serde_json::Value, b: &serde_json::Value, at: String, out: &mut Vec<String>) {
        use serde_json::Value;
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let only_y = y.keys().filter(|k| !x.contains_key(*k));
                for k in x.keys().chain(only_y) {
                    match (x.get(k), y.get(k)) {
                        (Some(p), Some(q)) => walk(p, q, format!("{at}.{k}"), out),
                        _ => out.push(format!("{at}.{k}: present in one only")),
                    }
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    walk(p, q, format!("{at}[{i}]"), out);
                }
            }
            _ if a != b => out.push(format!("{at}: {a} != {b}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(a, b, String::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{ValueSize, WorkloadName};

    #[test]
    fn json_round_trips_and_has_required_fields() {
        let mut r = RunResult {
            engine: "btree".into(),
            workload: "ycsb-a".into(),
            records: 10,
            ops: 20,
            seconds: 1.5,
            ops_per_sec: 13.3,
            write_amplification: Some(2.5),
            spec: WorkloadSpec {
                workload: WorkloadName::YcsbA,
                value_size: ValueSize::Uniform(1, 9),
                mix: Some("read=1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        r.per_op_latency_us.insert(
            "read".into(),
            LatencySummary {
                count: 3,
                p50: 1.0,
                ..Default::default()
            },
        );
        r.latency_cdf_us = vec![[50.0, 1.0], [100.0, 9.0]];
        r.cache.hit_ratio = Some(0.25);
        let s = serde_json::to_string(&r).unwrap();
        let back: RunResult = serde_json::from_str(&s).unwrap();
        assert_eq!(back, r);
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        for k in [
            "engine",
            "workload",
            "records",
            "ops",
            "seconds",
            "ops_per_sec",
            "write_amplification",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        for k in ["p50", "p95", "p99", "p999"] {
            assert!(v["latency_us"].get(k).is_some(), "{k}");
        }
        for k in ["read_ops", "read_bytes", "write_ops", "write_bytes"] {
            assert!(v["storage"].get(k).is_some(), "{k}");
        }
        assert!(v["cache"].get("hits").is_some() && v["cache"].get("misses").is_some());
        assert_eq!(v["spec"]["workload"], "ycsb-a");
        assert!(v.get("missions").is_none(), "no series, no key");
    }

    #[test]
    fn missions_are_written_one_row_a_line_and_read_back() {
        let mut r = RunResult {
            engine: "cairn:ruskey".into(),
            mission_ops: Some(100),
            ..Default::default()
        };
        r.missions = (0..3)
            .map(|i| MissionRow {
                index: i,
                phase: i / 2,
                ops: 100,
                wall_ns: 1_000_000,
                mean_ns: 9000.5,
                read_ops: 40,
                read_mean_ns: Some(5000.0),
                write_ops: 60,
                write_mean_ns: None,
                ks: Some(vec![1, 2, 3]),
                runs: Some(vec![1, 4, 2]),
                k_set: (i == 1).then_some(10),
                io: None,
            })
            .collect();
        let s = r.to_json().unwrap();
        let back: RunResult = serde_json::from_str(&s).unwrap();
        assert_eq!(back, r);
        let lines: Vec<&str> = s.lines().filter(|l| l.contains("\"index\"")).collect();
        assert_eq!(lines.len(), 3, "{s}");
        assert!(s.ends_with("]\n}\n"));
    }
}
