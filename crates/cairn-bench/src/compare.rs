//! `run` and `compare` commands: run engines (in child processes for `compare`), then write
//! JSON, timeline CSVs, report.md and plots.

use crate::cli::{CompareArgs, RunArgs};
use crate::engines::{BenchConfig, EngineName, DEFAULT_INVALIDATION_WINDOW_MS};
use crate::measure::timeline::{self, TimelineRow};
use crate::report::json::{Repeats, RunResult};
use crate::report::{markdown, plots};
use crate::runner::{self, RunRequest};
use crate::workload::WorkloadSpec;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

fn write_timeline(rows: &[TimelineRow], path: &Path) -> Result<()> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d)?;
    }
    std::fs::write(path, timeline::to_csv(rows))
        .with_context(|| format!("writing {}", path.display()))
}

/// `x.json` -> `x.timeline.csv`.
fn timeline_beside(json: &Path) -> PathBuf {
    json.with_extension("timeline.csv")
}

/// File stems per result, unique even when an engine is listed twice (`btree,btree`
/// measures run-to-run noise): later repeats get `-2`, `-3`, ...
pub fn unique_stems(engines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in engines {
        let base = EngineName::parse(e).map_or(e.replace([':', '/'], "-"), |n| n.file_stem());
        let mut stem = base.clone();
        let mut n = 1;
        while out.contains(&stem) {
            n += 1;
            stem = format!("{base}-{n}");
        }
        out.push(stem);
    }
    out
}

fn with_stems<'a>(
    results: &'a [RunResult],
    timelines: &'a [(String, Vec<TimelineRow>)],
) -> impl Iterator<Item = (&'a RunResult, &'a (String, Vec<TimelineRow>), String)> {
    let stems = unique_stems(&results.iter().map(|r| r.engine.clone()).collect::<Vec<_>>());
    results
        .iter()
        .zip(timelines)
        .zip(stems)
        .map(|((r, t), s)| (r, t, s))
}

/// Writes each engine's JSON and CSV, report.md and the plots into `dir`.
pub fn write_outputs(
    dir: &Path,
    results: &[RunResult],
    timelines: &[(String, Vec<TimelineRow>)],
) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let mut order = Vec::new();
    for (r, (_, rows), stem) in with_stems(results, timelines) {
        r.write(&dir.join(format!("{stem}.json")))?;
        write_timeline(rows, &dir.join(format!("{stem}.timeline.csv")))?;
        order.push(stem);
    }
    // The engines' order, one file stem a line, for tools that read the directory back
    // (leaper-summary).
    std::fs::write(dir.join("runs.list"), order.join("\n") + "\n")?;
    let plots = plots::all(results, timelines, dir)?;
    let report = dir.join("report.md");
    std::fs::write(&report, markdown::report(results, &plots))?;
    Ok(report)
}

pub fn summary_line(r: &RunResult) -> String {
    format!(
        "{}: {} {:.0} ops/s, p99 {:.1} us, {} ops in {:.2} s",
        r.engine, r.workload, r.ops_per_sec, r.latency_us.p99, r.ops, r.seconds
    )
}

/// The request `run` makes of its arguments.
pub fn request_of(a: &RunArgs) -> Result<RunRequest> {
    let engine = EngineName::parse(&a.engine)?;
    engine.check_available()?;
    let spec = a.workload.spec()?;
    Ok(RunRequest {
        engine,
        config: a.leaper.apply(a.budget.config_for(Some(spec.workload)))?,
        spec,
        data_dir: a.budget.db_dir.clone(),
        keep_data: a.budget.keep_db,
        timeline_period_ms: a.workload.timeline_ms(),
        leaper: a.leaper.settings(),
        window_source: None,
        salsm: a.salsm.settings(
            a.leaper.python.clone(),
            a.out
                .as_deref()
                .or(a.json.as_deref().and_then(|j| j.parent())),
        ),
    })
}

pub fn run_cmd(a: &RunArgs) -> Result<()> {
    let req = request_of(a)?;
    let (result, rows) = runner::run(&req)?;
    eprintln!("{}", summary_line(&result));
    if let Some(j) = &a.json {
        result.write(j)?;
        write_timeline(
            &rows,
            &a.timeline.clone().unwrap_or_else(|| timeline_beside(j)),
        )?;
    } else if let Some(t) = &a.timeline {
        write_timeline(&rows, t)?;
    }
    let results = [result];
    if let Some(out) = &a.out {
        let report = write_outputs(out, &results, &[(results[0].engine.clone(), rows)])?;
        eprintln!("report: {}", report.display());
    }
    if a.json.is_none() && a.out.is_none() {
        println!("{}", serde_json::to_string_pretty(&results[0])?);
    } else {
        print!("{}", markdown::table(&results));
    }
    Ok(())
}

pub fn child_cmd(request: &Path, json: &Path, timeline_csv: &Path) -> Result<()> {
    let req: RunRequest = serde_json::from_str(&std::fs::read_to_string(request)?)
        .with_context(|| format!("parsing {}", request.display()))?;
    let (result, rows) = runner::run(&req)?;
    result.write(json)?;
    write_timeline(&rows, timeline_csv)
}

/// Runs one engine, in a child process (its own peak RSS) unless `in_process`; the child
/// leaves `STEM.json` and `STEM.timeline.csv` in `out`.
pub fn run_one(
    req: &RunRequest,
    out: &Path,
    stem: &str,
    in_process: bool,
) -> Result<(RunResult, Vec<TimelineRow>)> {
    if in_process {
        return runner::run(req);
    }
    std::fs::create_dir_all(out)?;
    let req_path = out.join(format!("{stem}.request.json"));
    let json = out.join(format!("{stem}.json"));
    let csv = out.join(format!("{stem}.timeline.csv"));
    std::fs::write(&req_path, serde_json::to_string_pretty(req)?)?;
    let status = std::process::Command::new(std::env::current_exe()?)
        .arg("child")
        .arg("--request")
        .arg(&req_path)
        .arg("--json")
        .arg(&json)
        .arg("--timeline")
        .arg(&csv)
        .status()
        .context("starting child process")?;
    if !status.success() {
        bail!("engine {} failed ({status})", req.engine);
    }
    std::fs::remove_file(&req_path).ok();
    Ok((
        RunResult::read(&json)?,
        timeline::from_csv(&std::fs::read_to_string(&csv)?)?,
    ))
}

pub fn compare_cmd(a: &CompareArgs) -> Result<()> {
    let engines = a
        .engines
        .iter()
        .filter(|e| !e.trim().is_empty())
        .map(|e| EngineName::parse(e))
        .collect::<Result<Vec<_>>>()?;
    if engines.is_empty() {
        bail!("--engines lists no engine");
    }
    // Refuse before running anything, rather than after the first engine's long run.
    for e in &engines {
        e.check_available()?;
    }
    let mut spec = a.workload.spec()?;
    std::fs::create_dir_all(&a.out)?;
    let stems = unique_stems(&engines.iter().map(|e| e.to_string()).collect::<Vec<_>>());
    let mut cfg = a.leaper.apply(a.budget.config_for(Some(spec.workload)))?;
    let request = |engine: &EngineName,
                   spec: &WorkloadSpec,
                   cfg: &BenchConfig,
                   source: Option<String>| RunRequest {
        engine: engine.clone(),
        spec: spec.clone(),
        config: cfg.clone(),
        data_dir: a.budget.db_dir.clone(),
        keep_data: a.budget.keep_db,
        timeline_period_ms: a.workload.timeline_ms(),
        leaper: a.leaper.settings(),
        window_source: source,
        salsm: a.salsm.settings(a.leaper.python.clone(), Some(&a.out)),
    };
    let mut done: Vec<Option<Finished>> = vec![None; engines.len()];
    let mut source = None;
    if cfg.invalidation_window_ms.is_none() && spec.workload.is_leaper() {
        // T = the stock engine's median hit-ratio recovery time: run it first.
        let i = stock_engine(&engines);
        let req = request(&engines[i], &spec, &cfg, None);
        let (t, desc, reuse) = calibrate_window(a, &engines[i], &stems[i], &req, &mut spec)?;
        cfg.invalidation_window_ms = Some(t);
        source = Some(desc);
        done[i] = reuse;
    }
    // Rounds alternate the order (listed, reversed, listed, ...) so no engine always
    // runs first, on a cooler machine or a colder page cache.
    let rounds = a.repeat.max(1) as usize;
    let n = engines.len();
    let mut runs: Vec<Vec<(RunResult, Vec<TimelineRow>, usize)>> = vec![Vec::new(); n];
    for round in 0..rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        for (pos, &i) in order.iter().enumerate() {
            if let Some((r, rows)) = done[i].take() {
                runs[i].push((r, rows, pos));
                continue;
            }
            let engine = &engines[i];
            let req = request(engine, &spec, &cfg, source.clone());
            let stem = match rounds {
                1 => stems[i].clone(),
                _ => format!("{}.run{}", stems[i], round + 1),
            };
            let label = match rounds {
                1 => String::new(),
                _ => format!(" (run {}/{rounds})", round + 1),
            };
            eprintln!("running {engine} on {}{label} ...", spec.workload.name());
            let (r, rows) = run_one(&req, &a.out, &stem, a.in_process)?;
            eprintln!("{}", summary_line(&r));
            pin_warmup(&mut spec, &r);
            runs[i].push((r, rows, pos));
        }
    }
    let mut results = Vec::new();
    let mut timelines = Vec::new();
    for (i, engine_runs) in runs.into_iter().enumerate() {
        let (mut result, rows) = pick_median(engine_runs);
        if needs_counters_pass(&engines[i], &cfg) && !a.no_counters_pass {
            // RocksDB was timed without statistics; its counters come from one more run
            // of the same stream with them on, not timed.
            let mut with_stats = cfg.clone();
            with_stats.rocksdb_statistics = true;
            let req = request(&engines[i], &spec, &with_stats, source.clone());
            eprintln!(
                "running {} on {} for its counters (untimed) ...",
                engines[i],
                spec.workload.name()
            );
            let (c, _) = run_one(
                &req,
                &a.out,
                &format!("{}.counters", stems[i]),
                a.in_process,
            )?;
            take_counters(&mut result, &c);
        }
        if a.in_process && !results.is_empty() {
            result.rss_note = "in-process compare: VmHWM is the peak of this process so far, \
                               earlier engines included; compare rss_at_open_bytes"
                .to_string();
        }
        if rounds > 1 {
            eprintln!("median: {}", summary_line(&result));
        }
        timelines.push((result.engine.clone(), rows));
        results.push(result);
    }
    let report = write_outputs(&a.out, &results, &timelines)?;
    print!("{}", markdown::table(&results));
    if results.iter().any(|r| r.spec.workload.is_leaper()) {
        println!();
        print!("{}", markdown::invalidation_table(&results));
    }
    eprintln!("report: {}", report.display());
    Ok(())
}

/// A finished run and its timeline.
type Finished = (RunResult, Vec<TimelineRow>);

/// Leaper's T: the median hit-ratio recovery time of `engine` (the stock one) in a
/// calibration run of `req`, whose warm-up then holds for the runs after it. Returns T,
/// where it came from, and the run itself when it may stand as the engine's first
/// measured run (T fell back to the default, which that run already used).
fn calibrate_window(
    a: &CompareArgs,
    engine: &EngineName,
    stem: &str,
    req: &RunRequest,
    spec: &mut WorkloadSpec,
) -> Result<(u64, String, Option<Finished>)> {
    eprintln!(
        "running {engine} on {} to measure the hit-ratio recovery time (T) ...",
        spec.workload.name()
    );
    let (r, rows) = run_one(req, &a.out, &format!("{stem}.calibration"), a.in_process)?;
    eprintln!("{}", summary_line(&r));
    pin_warmup(spec, &r);
    let t = window_from(&r, a.workload.timeline_ms());
    let desc = match t {
        Some(_) => format!(
            "median hit-ratio recovery of {engine} ({} jobs; calibration run)",
            r.invalidation.as_ref().map_or(0, |v| v.recoveries)
        ),
        None => format!("cairn's default: {engine} showed no recovery to measure"),
    };
    let t = t.unwrap_or(DEFAULT_INVALIDATION_WINDOW_MS);
    eprintln!("T = {t} ms ({desc})");
    if t != DEFAULT_INVALIDATION_WINDOW_MS {
        return Ok((t, desc, None));
    }
    let mut r = r;
    if let Some(v) = r.invalidation.as_mut() {
        v.window_source = desc.clone();
    }
    Ok((t, desc, Some((r, rows))))
}

/// The run with the median throughput (the lower middle for an even count), carrying every
/// run's figures in `repeats` when there was more than one.
pub fn pick_median(
    mut runs: Vec<(RunResult, Vec<TimelineRow>, usize)>,
) -> (RunResult, Vec<TimelineRow>) {
    let repeats = Repeats {
        ops_per_sec: runs.iter().map(|r| r.0.ops_per_sec).collect(),
        position: runs.iter().map(|r| r.2).collect(),
        settled_ops_per_sec: runs
            .iter()
            .filter_map(|r| r.0.settled_ops_per_sec)
            .collect(),
        cpu_us_per_op: runs
            .iter()
            .filter_map(|r| r.0.cpu_ms_per_op().map(|x| x * 1e3))
            .collect(),
        stall_seconds: runs.iter().map(|r| r.0.stall_seconds).collect(),
    };
    let many = runs.len() > 1;
    let mut by_speed: Vec<usize> = (0..runs.len()).collect();
    by_speed.sort_by(|&x, &y| runs[x].0.ops_per_sec.total_cmp(&runs[y].0.ops_per_sec));
    let mid = by_speed[(by_speed.len() - 1) / 2];
    let (mut r, rows, _) = runs.swap_remove(mid);
    if many {
        r.repeats = Some(repeats);
    }
    (r, rows)
}

/// Engines timed without their counters (RocksDB without statistics).
pub fn needs_counters_pass(engine: &EngineName, cfg: &BenchConfig) -> bool {
    matches!(engine, EngineName::Rocksdb) && !cfg.rocksdb_statistics
}

/// Copies the I/O, cache and write-amplification figures of an untimed pass `c` into
/// the timed result `r`.
pub fn take_counters(r: &mut RunResult, c: &RunResult) {
    r.storage = c.storage;
    r.cache = c.cache;
    r.write_amplification = c.write_amplification;
    r.flush_bytes_written = c.flush_bytes_written;
    r.compaction_bytes_written = c.compaction_bytes_written;
    r.load.storage = c.load.storage;
    // Leaper's count metric (data-block misses per read) comes from the counters too.
    if let (Some(to), Some(from)) = (r.invalidation.as_mut(), c.invalidation.as_ref()) {
        to.data_block_misses = from.data_block_misses;
        to.reads = from.reads;
        to.misses_per_read = from.misses_per_read;
    }
    r.counters_source = "a separate untimed pass of the same stream with statistics on".into();
}

/// After a run with a time-bounded warm-up, the others run its warm-up op count.
fn pin_warmup(spec: &mut WorkloadSpec, r: &RunResult) {
    if spec.warmup_secs.is_some() {
        eprintln!(
            "warm-up: {} ops in --warmup-secs; the next engines run that many",
            r.warmup_ops
        );
        spec.warmup_ops = r.warmup_ops;
        spec.warmup_secs = None;
    }
}

/// The engine whose recovery time sets T: cairn:lru (RocksDB's default cache behaviour)
/// when listed, else the first.
pub fn stock_engine(engines: &[EngineName]) -> usize {
    engines
        .iter()
        .position(|e| e.to_string() == "cairn:lru")
        .unwrap_or(0)
}

/// T from a run's median recovery time, rounded up to whole timeline periods (at least
/// one); None when the run had no job to recover from.
pub fn window_from(r: &RunResult, period_ms: u64) -> Option<u64> {
    let rec = r.invalidation.as_ref()?.recovery_ms?;
    let p = period_ms.max(1);
    Some(rec.div_ceil(p).max(1) * p)
}
