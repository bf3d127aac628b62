//! One SA-LSM run (`compare --workload awpi-*`): the engine, opened with its preset, a
//! simulated clock (`ManualClock`, set to each op's time) for the query store and the
//! placement, level 1 sized so the hot tier holds (1 - B) of the data and the block cache
//! at a share of it, replays the trace days without added device latency; then
//!
//! - sa-* presets: the record trace is exported, the service trains (a subprocess; the
//!   clock stands still) and writes the cold-key set, the engine loads it and runs a
//!   proactive compaction (Table 5: cairn:sa-lsm also compacts a copy of the same data
//!   passively, for comparison);
//! - age-tier: the age threshold is set so the same share B is older than it, and a
//!   proactive compaction moves those records;
//! - passive: nothing more (level 1's capacity put the rest of the data on the cold tier).
//!
//! The database is closed, the tiers' tables are read to see which records each placement
//! left on the cold tier (migrated share, cold_fir against the replay's accesses), and it
//! is reopened with the tiers' device latencies (scaled) for the replay days: a share of
//! them warms the cache unmeasured, the rest is measured (throughput, latency, cold-tier
//! reads per op).

use super::arrivals::Arrivals;
use super::{layout, service, CompactionCost, PlacementSummary, SalsmArgs};
use crate::engines::ClockKind;
use crate::engines::{BenchConfig, Engine, EngineCounters, EngineExtras, EngineName, SalsmOpen};
use crate::measure::clock::{self, thread_cpu_ns, Installed, VirtualRun};
use crate::measure::cpu_price::PriceFile;
use crate::measure::latency::{cdf, summarize, OpClass, OpLatencies};
use crate::measure::rss::{current_rss_bytes, peak_rss_bytes, CpuTime, ProcIo};
use crate::measure::timeline::{self, Live, TimelineRow};
use crate::report::json::{CacheStats, LoadPhase, RunResult};
use crate::runner::{
    data_parent, dir_size, fresh_engine_dir, phases_of, progress, settle, storage, RunRequest,
    Values,
};
use crate::workload::awpi::{self, AwpiKind, AwpiOp, AwpiSpec, AwpiStream, DAY_MS};
use crate::workload::dataset::{Dataset, KeySpace};
use crate::workload::{ValueSize, WorkloadSpec};
use anyhow::{bail, Context, Result};
use cairn::access::ManualClock;
use clap::Args;
use indicatif::ProgressBar;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Table bytes per byte of key and value (internal-key trailers, block and index
/// overhead, blooms), to size level 1 and the cache from the data's bytes.
const TABLE_OVERHEAD: f64 = 1.06;

/// The service's prediction horizon unless told: the paper's 30 days.
pub const DEFAULT_HORIZON_DAYS: f64 = 30.0;

/// The AWPI stream a run request describes.
pub fn awpi_spec(spec: &WorkloadSpec, s: &super::SalsmSettings) -> Result<AwpiSpec> {
    let p = spec
        .workload
        .awpi_profile()
        .with_context(|| format!("{} is not an awpi-* workload", spec.workload.name()))?;
    let (value_min, value_max) = match spec.value_size {
        ValueSize::Fixed(n) => (n, n),
        ValueSize::Uniform(a, b) => (a, b),
    };
    Ok(AwpiSpec {
        profile: p.name.to_string(),
        generator: s.generator.clone(),
        ablate: s.ablate.clone(),
        records: spec.records,
        trace_days: s.trace_days,
        replay_days: s.replay_days,
        seed: spec.seed,
        key_size: spec.key_size,
        value_min,
        value_max,
    })
}

/// Runs the AWPI ops on an engine, setting the clock to each op's time.
struct Driver<'a> {
    keys: &'a KeySpace,
    values: &'a Values,
    clock: &'a ManualClock,
    user_bytes: u64,
    kbuf: Vec<u8>,
    /// On the virtual clock: the driver of the engine opened last (and its
    /// installation), charging each op's CPU and running background work at fixed points.
    virt: Option<(VirtualRun, Installed)>,
}

impl Driver<'_> {
    /// On the virtual clock, drives `engine` (just opened) from here on.
    fn attach(&mut self, engine: &dyn Engine, req: &RunRequest) -> Result<()> {
        self.virt = None; // uninstalls the previous engine's clock first
        if req.config.clock != ClockKind::Virtual {
            return Ok(());
        }
        let prices = match &req.config.cpu_prices {
            Some(p) => Some((PriceFile::load(p)?, p.display().to_string())),
            None => None,
        };
        let v = VirtualRun::of(engine, prices, req.config.bg_every_ops).with_context(|| {
            format!(
                "{} cannot run on the virtual clock (cairn's engines only)",
                req.engine
            )
        })?;
        let guard = v.install();
        self.virt = Some((v, guard));
        Ok(())
    }

    fn virt(&self) -> Option<&VirtualRun> {
        self.virt.as_ref().map(|(v, _)| v)
    }

    /// Waits for background work: the wall clock's settle, or the virtual one's.
    fn settle(&self, engine: &dyn Engine) -> Result<()> {
        match self.virt() {
            Some(v) => v.settle(engine).map(|_| ()),
            None => {
                settle(engine);
                Ok(())
            }
        }
    }

    fn exec(&mut self, engine: &dyn Engine, op: &AwpiOp, salt: u64) -> Result<bool> {
        let r = self.exec_op(engine, op, salt)?;
        if let Some(v) = self.virt() {
            v.after_op(engine, 0);
            v.fixed_point(engine)?;
        }
        Ok(r)
    }

    fn exec_op(&mut self, engine: &dyn Engine, op: &AwpiOp, salt: u64) -> Result<bool> {
        self.clock.set(op.t_ms);
        self.keys.encode_into(op.rec as u64, &mut self.kbuf);
        Ok(match op.kind {
            AwpiKind::Read => engine.get(&self.kbuf)?.is_some(),
            AwpiKind::Scan => engine.scan(&self.kbuf, op.len as usize)? > 0,
            AwpiKind::Insert | AwpiKind::Update => {
                let v = self.values.get(op.rec as u64, salt, op.len as usize);
                self.user_bytes += (self.kbuf.len() + v.len()) as u64;
                if op.kind == AwpiKind::Update {
                    engine.put_column(&self.kbuf, v, op.col)?;
                } else {
                    engine.put(&self.kbuf, v)?; // an insert writes every column
                }
                true
            }
        })
    }

    fn run_untimed(&mut self, engine: &dyn Engine, ops: &[AwpiOp], label: &str) -> Result<()> {
        let pb = progress(ops.len() as u64, label.to_string());
        for (i, op) in ops.iter().enumerate() {
            self.exec(engine, op, op.t_ms)?;
            if i % 4096 == 0 {
                pb.set_position(i as u64);
            }
        }
        pb.finish_and_clear();
        Ok(())
    }
}

fn preset_of(e: &EngineName) -> Option<&str> {
    match e {
        EngineName::Cairn { preset } => preset.as_deref(),
        _ => None,
    }
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let dst = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &dst)?;
        } else {
            std::fs::copy(e.path(), &dst)?;
        }
    }
    Ok(())
}

/// Table 5's passive side: a copy of the database compacted down through the levels in
/// this thread (CPU and wall time around it, bytes from the engine's counters).
fn passive_compaction(
    engine_name: &EngineName,
    src: &Path,
    copy: &Path,
    cfg: &crate::engines::BenchConfig,
    extras: &EngineExtras,
) -> Result<CompactionCost> {
    if copy.exists() {
        std::fs::remove_dir_all(copy)?;
    }
    copy_dir(src, copy)?;
    let e = engine_name.open_with(copy, cfg, extras)?;
    settle(e.as_ref());
    let c0 = e.counters();
    let (cpu0, t0) = (thread_cpu_ns(), Instant::now());
    e.compact_all()?;
    let cost = CompactionCost {
        input_bytes: e.counters().compaction_bytes_read - c0.compaction_bytes_read,
        output_bytes: e.counters().compaction_bytes_written - c0.compaction_bytes_written,
        cpu_ms: thread_cpu_ns().saturating_sub(cpu0) as f64 / 1e6,
        wall_ms: t0.elapsed().as_secs_f64() * 1e3,
    };
    e.close()?;
    std::fs::remove_dir_all(copy).ok();
    Ok(cost)
}

/// The settings a run derives from its stream.
struct Derived {
    budget: f64,
    budget_source: String,
    level1: u64,
    slack: f64,
    cache: u64,
    age_ms: Option<u64>,
}

fn derive(req: &RunRequest, stream: &AwpiStream) -> Result<Derived> {
    let st = &stream.stats;
    let s = &req.salsm;
    let (budget, budget_source) = match s.budget {
        Some(b) => (b, "--salsm-budget".to_string()),
        None => (
            st.true_cold_share,
            "the generator's true cold share (trace records not accessed in the replay days)"
                .to_string(),
        ),
    };
    if !(budget > 0.0 && budget < 1.0) {
        bail!("the cold budget must be within (0, 1), got {budget}");
    }
    if !(s.cache_share > 0.0 && s.cache_share.is_finite()) {
        bail!("--salsm-cache-share must be positive");
    }
    if !(s.latency_scale >= 0.0 && s.latency_scale.is_finite()) {
        bail!("--salsm-latency-scale must be a number >= 0");
    }
    if !(0.0..1.0).contains(&s.warmup_share) {
        bail!("--salsm-warmup-share must be within [0, 1)");
    }
    if s.arrival_rate.is_some() && req.config.clock != ClockKind::Virtual {
        bail!("--salsm-arrival-rate (an open-loop replay) needs --clock virtual");
    }
    let data = st.live_bytes as f64 * TABLE_OVERHEAD;
    let level1 = req
        .config
        .level1_bytes
        .unwrap_or(((1.0 - budget) * data) as u64)
        .max(256 << 10);
    // While placement is on, level 1 may hold this many times its capacity before passive
    // compaction spills it: all of the data, so the proactive compaction decides.
    let slack = (1.5 * data / level1 as f64).clamp(8.0, 10_000.0);
    let age_ms = match preset_of(&req.engine) {
        Some("age-tier") => stream.age_for_share(budget),
        _ => None,
    };
    Ok(Derived {
        budget,
        budget_source,
        level1,
        slack,
        cache: ((s.cache_share * data) as u64).max(64 << 10),
        age_ms,
    })
}

fn extras(clock: &ManualClock, d: &Derived, scale: f64) -> EngineExtras {
    extras_with(clock, d, scale, None)
}

fn extras_with(
    clock: &ManualClock,
    d: &Derived,
    scale: f64,
    store_times: Option<usize>,
) -> EngineExtras {
    EngineExtras {
        salsm: Some(SalsmOpen {
            clock: Arc::new(clock.clone()),
            day_ms: DAY_MS,
            latency_scale: scale,
            hot_level_slack: d.slack,
            store_times,
            age_tier_ms: d.age_ms,
            target_file_size: Some((d.level1 / 16).clamp(64 << 10, 2 << 20)),
        }),
        ..Default::default()
    }
}

/// Writes the Bayes oracle's scores for the service (`--oracle-scores`): each record's
/// true probability of a read in (at_ms, at_ms + horizon_ms], by key.
pub fn write_oracle(
    stream: &AwpiStream,
    keys: &KeySpace,
    at_ms: u64,
    horizon_ms: u64,
    path: &Path,
) -> Result<()> {
    let p = awpi::oracle::read_probability(stream, at_ms, horizon_ms)?;
    let hex: Vec<String> = (0..p.len() as u64)
        .map(|r| {
            let buf = keys.key(r);
            buf.iter().map(|b| format!("{b:02x}")).collect()
        })
        .collect();
    let v = serde_json::json!({
        "format": "cairn-salsm-oracle",
        "version": 1,
        "at_ms": at_ms,
        "horizon_ms": horizon_ms,
        "futures": awpi::oracle::FUTURES,
        "keys_hex": hex,
        "p_read": p,
    });
    std::fs::write(path, serde_json::to_vec(&v)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Exports the trace, runs the service, loads its cold-key set.
#[allow(clippy::too_many_arguments)]
fn train(
    engine: &dyn Engine,
    req: &RunRequest,
    method: &str,
    budget: f64,
    work: &Path,
    stem: &str,
    placement: &mut PlacementSummary,
    oracle: Option<(&AwpiStream, &KeySpace)>,
) -> Result<PathBuf> {
    let trace = work.join("trace.rtr");
    let rows = engine
        .export_record_trace(&trace)?
        .context("the engine keeps no query store (Options::records)")?;
    let cold = work.join("cold.cld");
    let report = work.join("service.json");
    let horizon = req.salsm.horizon_days.unwrap_or(DEFAULT_HORIZON_DAYS);
    eprintln!("{stem}: service trains {method} on {rows} records (budget {budget:.3}) ...");
    let mut args = req.salsm.service_args.clone();
    if let Some((stream, keys)) = oracle {
        // The oracle ranks by the chance of a read in the measured replay days.
        let f = work.join("oracle.json");
        let end = stream.spec.trace_end_ms();
        write_oracle(
            stream,
            keys,
            end,
            stream.spec.replay_days as u64 * DAY_MS,
            &f,
        )?;
        args.extend(["--oracle-scores".to_string(), f.display().to_string()]);
    }
    let r = service::train(
        req.salsm.python.as_deref(),
        &trace,
        method,
        budget,
        horizon,
        &cold,
        &report,
        &args,
    )?;
    placement.service = Some(r);
    if let Some(a) = &req.salsm.artifacts {
        std::fs::create_dir_all(a)?;
        for (f, ext) in [
            (&trace, "trace.rtr"),
            (&cold, "cold.cld"),
            (&report, "service.json"),
        ] {
            std::fs::copy(f, a.join(format!("{stem}.{ext}"))).ok();
        }
    }
    Ok(cold)
}

/// Runs an SA-LSM experiment (an awpi-* workload): trace days, placement, replay days.
pub fn run(req: &RunRequest) -> Result<(RunResult, Vec<TimelineRow>)> {
    let aspec = awpi_spec(&req.spec, &req.salsm)?;
    let t_gen = Instant::now();
    let stream = awpi::generate(&aspec)?;
    let d = derive(req, &stream)?;
    let name = req.engine.to_string();
    eprintln!(
        "{name}: {} records ({} trace), {} + {} ops, B = {:.3}, level 1 {} KiB, cache {} KiB (generated in {:.1} s)",
        aspec.records,
        stream.stats.trace_records,
        stream.trace().len(),
        stream.replay().len(),
        d.budget,
        d.level1 >> 10,
        d.cache >> 10,
        t_gen.elapsed().as_secs_f64()
    );
    let cfg = run_config(req, &d);
    let (_tmp, parent) = data_parent(req)?;
    let dir = fresh_engine_dir(&parent, &req.engine)?;
    let stem = req.engine.file_stem();
    let work = parent.join(format!("salsm-{stem}"));
    std::fs::create_dir_all(&work)?;
    let started_at_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |x| x.as_secs());
    let rss_at_open = current_rss_bytes();
    let clock = ManualClock::new(0);
    let keys = KeySpace::new(
        &Dataset::Sequential,
        aspec.records,
        aspec.key_size,
        aspec.seed,
    )?;
    let values = Values::new(aspec.seed, aspec.value_max);
    let mut drv = Driver {
        keys: &keys,
        values: &values,
        clock: &clock,
        user_bytes: 0,
        kbuf: vec![0u8; aspec.key_size],
        virt: None,
    };
    let preset = preset_of(&req.engine);
    let r = SalsmRun {
        req,
        aspec: &aspec,
        stream: &stream,
        d: &d,
        cfg: &cfg,
        clock: &clock,
        parent: &parent,
        dir: &dir,
        work: &work,
        name,
        stem,
        preset,
        method: preset.and_then(cairn::presets::salsm_method),
    };

    let (engine, load, c_start) = r.trace_days(&mut drv)?;
    let mut pl = r.placement_summary(load.seconds);
    let (cold_set, level_bytes) = r.place(&mut drv, engine, &mut pl)?;
    r.locate(&mut pl, cold_set.as_ref(), level_bytes)?;
    let engine = r.open(&mut drv, req.salsm.latency_scale)?;
    let replayed = r.replay(&mut drv, engine.as_ref(), &mut pl)?;
    let life = engine.counters().since(&c_start);
    let disk_bytes = dir_size(&dir);
    engine.close()?;
    if !req.keep_data {
        std::fs::remove_dir_all(&dir).ok();
        std::fs::remove_dir_all(&work).ok();
    }
    let (measured, rows) = r.result(replayed);
    let result = RunResult {
        write_amplification: (life.write_bytes > 0 && drv.user_bytes > 0)
            .then(|| life.write_bytes as f64 / drv.user_bytes as f64),
        user_bytes_written: drv.user_bytes,
        flush_bytes_written: life.flush_bytes_written,
        compaction_bytes_written: life.compaction_bytes_written,
        load,
        disk_bytes,
        peak_rss_bytes: peak_rss_bytes(),
        rss_at_open_bytes: rss_at_open,
        started_at_unix,
        placement: Some(pl),
        ..measured
    };
    Ok((result, rows))
}

/// The bench's config for a run: level 1 and the cache sized from the stream, and the
/// device model the clock needs.
fn run_config(req: &RunRequest, d: &Derived) -> BenchConfig {
    let mut cfg = req.config.clone();
    cfg.level1_bytes = Some(d.level1);
    cfg.cache_bytes = d.cache as usize;
    if cfg.clock == ClockKind::Wall {
        cfg.device = crate::engines::Device::None;
    } else if cfg.device == crate::engines::Device::None {
        // The model of tiers without a device profile; SA-LSM's presets give both of
        // theirs one (ssd hot, hdd cold), which the virtual clock keeps.
        cfg.device = crate::engines::Device::Ssd;
    }
    cfg
}

/// One SA-LSM run's fixed parts, shared by its phases.
struct SalsmRun<'a> {
    req: &'a RunRequest,
    aspec: &'a AwpiSpec,
    stream: &'a AwpiStream,
    d: &'a Derived,
    cfg: &'a BenchConfig,
    clock: &'a ManualClock,
    parent: &'a Path,
    /// The engine's directory.
    dir: &'a Path,
    /// The service's work directory.
    work: &'a Path,
    name: String,
    stem: String,
    preset: Option<&'a str>,
    /// The service's method (sa-* presets).
    method: Option<&'a str>,
}

/// What the replay days measured.
struct Replayed {
    lat: OpLatencies,
    rows: Vec<TimelineRow>,
    seconds: f64,
    tally: ReplayTally,
    virtual_clock: Option<crate::report::json::VirtualClockReport>,
    cpu: CpuTime,
    io: ProcIo,
    /// The engine's counters over the measured part.
    counters: EngineCounters,
    engine_stats: std::collections::BTreeMap<String, f64>,
    warmup_ops: u64,
}

/// The measured replay's reads found and missing, and scans.
#[derive(Default)]
struct ReplayTally {
    found: u64,
    missing: u64,
    scanned: u64,
}

impl SalsmRun<'_> {
    /// Opens the engine with the tiers' latencies times `scale`, driven by `drv`.
    fn open(&self, drv: &mut Driver<'_>, scale: f64) -> Result<Box<dyn Engine>> {
        let engine =
            self.req
                .engine
                .open_with(self.dir, self.cfg, &extras(self.clock, self.d, scale))?;
        drv.attach(engine.as_ref(), self.req)?;
        Ok(engine)
    }

    /// The trace days, no added latency. Returns the engine, the phase's summary and the
    /// counters at its start.
    fn trace_days(
        &self,
        drv: &mut Driver<'_>,
    ) -> Result<(Box<dyn Engine>, LoadPhase, EngineCounters)> {
        let engine = self.open(drv, 0.0)?;
        let t_trace = clock::now();
        let c_start = engine.counters();
        let label = format!("{} trace days", self.name);
        drv.run_untimed(engine.as_ref(), self.stream.trace(), &label)?;
        engine.flush()?;
        drv.settle(engine.as_ref())?;
        self.clock.set(self.aspec.trace_end_ms());
        let load = LoadPhase {
            records: self.stream.stats.trace_records,
            seconds: clock::now().duration_since(t_trace).as_secs_f64(),
            storage: storage(&engine.counters().since(&c_start)),
        };
        Ok((engine, load, c_start))
    }

    /// The placement's summary before it runs.
    fn placement_summary(&self, trace_seconds: f64) -> PlacementSummary {
        let d = self.d;
        PlacementSummary {
            method: self
                .method
                .or(self.preset)
                .map_or_else(|| self.name.clone(), str::to_string),
            budget: d.budget,
            budget_source: d.budget_source.clone(),
            level1_bytes: d.level1,
            hot_level_slack: d.slack,
            cache_bytes: d.cache,
            latency_scale: self.req.salsm.latency_scale,
            age_days: d.age_ms.map(|a| a as f64 / DAY_MS as f64),
            trace_seconds,
            ..Default::default()
        }
    }

    /// The placement: the service's cold set loaded (sa-* presets) and the proactive
    /// compaction (those and age-tier). Closes the engine; returns the cold set and the
    /// bytes per level.
    fn place(
        &self,
        drv: &mut Driver<'_>,
        mut engine: Box<dyn Engine>,
        pl: &mut PlacementSummary,
    ) -> Result<(Option<cairn::learned::ColdSet>, Option<Vec<u64>>)> {
        let t_place = Instant::now();
        let mut cold_set = None;
        if let Some(m) = self.method {
            let (cold, e) = self.learned_cold_set(drv, engine, m, pl)?;
            engine = e;
            engine.load_cold_set(&cold)?;
            cold_set = Some(cairn::learned::ColdSet::read(&cold)?);
        }
        if self.method.is_some() || self.preset == Some("age-tier") {
            let r = engine.proactive_compact()?;
            if let Some(r) = &r {
                if let Some(why) = &r.skipped {
                    eprintln!(
                        "warning: {}: the proactive compaction did nothing: {why}",
                        self.name
                    );
                    pl.note = Some(format!("proactive compaction skipped: {why}"));
                }
                pl.proactive_cpu_ms = Some(r.cpu_ns as f64 / 1e6);
                pl.proactive_wall_ms = Some(r.wall_ns as f64 / 1e6);
            }
            pl.proactive = r;
        }
        drv.settle(engine.as_ref())?;
        pl.placement_seconds = t_place.elapsed().as_secs_f64();
        let level_bytes = engine.level_bytes();
        drv.virt = None;
        engine.close()?;
        Ok((cold_set, level_bytes))
    }

    /// The service's cold-key set for `method`; for cairn:sa-lsm with Table 5 on, also
    /// the passive compaction of a copy (the engine is reopened for it, so it is returned).
    fn learned_cold_set(
        &self,
        drv: &mut Driver<'_>,
        mut engine: Box<dyn Engine>,
        method: &str,
        pl: &mut PlacementSummary,
    ) -> Result<(PathBuf, Box<dyn Engine>)> {
        let oracle = (method == "oracle").then_some((self.stream, drv.keys));
        let (budget, req) = (self.d.budget, self.req);
        let cold = train(
            engine.as_ref(),
            req,
            method,
            budget,
            self.work,
            &self.stem,
            pl,
            oracle,
        )?;
        if req.salsm.table5 && self.preset == Some("sa-lsm") {
            // Table 5's passive side, on a copy of the data the proactive compaction gets.
            drv.virt = None;
            engine.close()?;
            let copy = self.parent.join(format!("salsm-{}-passive", self.stem));
            let extras = extras(self.clock, self.d, 0.0);
            let cost = passive_compaction(&req.engine, self.dir, &copy, self.cfg, &extras)?;
            pl.passive_compaction = Some(cost);
            engine = self.open(drv, 0.0)?;
        }
        Ok((cold, engine))
    }

    /// Where the records are after the placement: the tiers' tables read back, the
    /// migrated share and cold_fir against the replay's accesses.
    fn locate(
        &self,
        pl: &mut PlacementSummary,
        cold_set: Option<&cairn::learned::ColdSet>,
        level_bytes: Option<Vec<u64>>,
    ) -> Result<()> {
        let (stream, name) = (self.stream, &self.name);
        let lay = layout::read(self.dir)?;
        let trace_n = stream.stats.trace_records;
        let on_cold = lay.cold.iter().filter(|&&r| r < trace_n).count();
        pl.migrated_share = (trace_n > 0).then(|| on_cold as f64 / trace_n as f64);
        pl.hot_bytes = lay.hot_bytes;
        pl.cold_bytes = lay.cold_bytes;
        let all = lay.hot_bytes + lay.cold_bytes;
        pl.migrated_bytes_share = (all > 0).then(|| lay.cold_bytes as f64 / all as f64);
        pl.cold_fir = layout::cold_fir(lay.cold.iter().copied(), &stream.replay_accessed);
        if pl.cold_fir.is_none() {
            pl.note
                .get_or_insert_with(|| "no record of the trace is on the cold tier".into());
        }
        if let Some(set) = cold_set {
            pl.cold_set_keys = Some(set.len());
            pl.cold_set_fir = layout::cold_fir(
                set.keys().iter().filter_map(|k| layout::record_of(k)),
                &stream.replay_accessed,
            );
        }
        if let Some(lb) = level_bytes {
            let (h, c): (u64, u64) = (lb.iter().take(2).sum(), lb.iter().skip(2).sum());
            if h != lay.hot_bytes || c != lay.cold_bytes {
                eprintln!(
                    "note: {name}: tier directories hold {}/{} bytes, levels {h}/{c} (hot/cold)",
                    lay.hot_bytes, lay.cold_bytes
                );
            }
        }
        eprintln!(
            "{name}: placement {} moved {:.1}% of the trace's records ({:.1}% of bytes), cold_fir {}",
            pl.method,
            pl.migrated_share.unwrap_or(0.0) * 100.0,
            pl.migrated_bytes_share.unwrap_or(0.0) * 100.0,
            pl.cold_fir
                .map_or("-".to_string(), |f| format!("{:.1}%", f * 100.0))
        );
        Ok(())
    }

    /// The replay days on `engine` (opened with the tiers' scaled latencies): a share warms
    /// the cache unmeasured, the rest is measured.
    fn replay(
        &self,
        drv: &mut Driver<'_>,
        engine: &dyn Engine,
        pl: &mut PlacementSummary,
    ) -> Result<Replayed> {
        let (req, name) = (self.req, &self.name);
        let replay = self.stream.replay();
        let warm = (replay.len() as f64 * req.salsm.warmup_share) as usize;
        drv.run_untimed(engine, &replay[..warm], &format!("{name} warm-up"))?;
        pl.warmup_ops = warm as u64;
        let measured = &replay[warm..];
        let c0 = engine.counters();
        let io0 = ProcIo::now();
        let cpu0 = CpuTime::now();
        if let Some(v) = drv.virt() {
            v.begin(engine, 0);
        }
        pl.arrival_rate = req.salsm.arrival_rate;
        let pb = progress(measured.len() as u64, format!("{name} replay"));
        let (lat, rows, tally, t0, end) = self.replay_measured(drv, engine, measured, &pb)?;
        let seconds = end.duration_since(t0).as_secs_f64();
        let virtual_clock = drv.virt().map(|v| v.report_with(&rows));
        drv.virt = None;
        pb.finish_and_clear();
        let cpu = CpuTime::now().since(&cpu0);
        let io = ProcIo::now().since(&io0);
        let counters = engine.counters().since(&c0);
        let ops = lat.all.len();
        pl.cold_tier_reads = counters.cold_read_ops;
        pl.cold_tier_reads_per_op = if ops > 0 {
            counters.cold_read_ops as f64 / ops as f64
        } else {
            0.0
        };
        Ok(Replayed {
            lat,
            rows,
            seconds,
            tally,
            virtual_clock,
            cpu,
            io,
            counters,
            engine_stats: engine.extra_stats(),
            warmup_ops: warm as u64,
        })
    }

    /// The measured replay ops, timed, while the timeline samples the engine; on the
    /// virtual clock in an open loop when an arrival rate is given. Returns the latencies,
    /// the rows, the tally, and the start and end times.
    #[allow(clippy::type_complexity)]
    fn replay_measured(
        &self,
        drv: &mut Driver<'_>,
        engine: &dyn Engine,
        measured: &[AwpiOp],
        pb: &ProgressBar,
    ) -> Result<(OpLatencies, Vec<TimelineRow>, ReplayTally, Instant, Instant)> {
        // Open loop: each op moves the virtual clock to its arrival.
        let mut arrivals = match (self.req.salsm.arrival_rate, drv.virt()) {
            (Some(rate), Some(v)) => Some((
                Arrivals::new(rate, self.aspec.seed, v.clock.now_ns())?,
                v.clock.clone(),
            )),
            _ => None,
        };
        let live = Live::default();
        let period = Duration::from_millis(self.req.timeline_period_ms.max(10));
        let t0 = clock::now();
        let mut lat = OpLatencies::default();
        // The latest end so far (open-loop ops may end out of order).
        let mut frontier = t0;
        let mut tally = ReplayTally::default();
        let rows = std::thread::scope(|s| -> Result<Vec<TimelineRow>> {
            // On the virtual clock the replay loop takes the rows, at virtual times.
            let sampler = match drv.virt() {
                Some(_) => {
                    *live.inline.lock() = Some(timeline::Sampler::new(engine, period, t0));
                    None
                }
                None => Some(s.spawn(|| timeline::sample(engine, &live, period, t0))),
            };
            let r = (|| -> Result<()> {
                for (i, op) in measured.iter().enumerate() {
                    if let Some((a, c)) = arrivals.as_mut() {
                        c.arrive(a.next_ns());
                    }
                    let t = clock::now();
                    let hit = drv.exec(engine, op, op.t_ms)?;
                    let end = clock::now();
                    frontier = frontier.max(end);
                    let nanos = end.duration_since(t).as_nanos() as u64;
                    tally.count(op.kind, hit);
                    lat.record(op.kind.name(), nanos);
                    let tail = i >= measured.len() / 2;
                    let class = OpClass {
                        write: op.kind.writes(),
                        tail,
                    };
                    lat.record_phase(0, t, nanos, class);
                    live.record(nanos);
                    if drv.virt().is_some() {
                        if let Some(s) = live.inline.lock().as_mut() {
                            s.poll(engine, &live, frontier);
                        }
                    }
                    if i % 4096 == 0 {
                        pb.set_position(i as u64);
                    }
                }
                Ok(())
            })();
            live.stop.store(true, std::sync::atomic::Ordering::Release);
            let rows = match sampler {
                Some(s) => s.join().expect("sampler panicked"),
                None => {
                    let mut inline = live.inline.lock().take().expect("the inline sampler");
                    inline.take(engine, &live, frontier.max(clock::now()), true);
                    inline.rows
                }
            };
            r.map(|_| rows)
        })?;
        Ok((lat, rows, tally, t0, frontier.max(clock::now())))
    }

    /// The run's result from the replay (the caller adds the trace days and placement).
    fn result(&self, r: Replayed) -> (RunResult, Vec<TimelineRow>) {
        let (dd, lat) = (&r.counters, &r.lat);
        let ops = lat.all.len();
        let lookups = dd.cache_hits + dd.cache_misses;
        let days = self.aspec.replay_days;
        let phases = phases_of(lat, |_| format!("{days} replay days"), false);
        let result = RunResult {
            engine: self.name.clone(),
            workload: self.req.spec.workload.name(),
            records: self.aspec.records,
            ops,
            seconds: r.seconds,
            ops_per_sec: if r.seconds > 0.0 {
                ops as f64 / r.seconds
            } else {
                0.0
            },
            latency_us: summarize(&lat.all),
            per_op_latency_us: lat
                .by_op
                .iter()
                .map(|(k, h)| (k.clone(), summarize(h)))
                .collect(),
            latency_cdf_us: cdf(&lat.all),
            phases,
            storage: storage(dd),
            cache: CacheStats {
                hits: dd.cache_hits,
                misses: dd.cache_misses,
                hit_ratio: (lookups > 0).then(|| dd.cache_hits as f64 / lookups as f64),
            },
            rss_note: "peak RSS of the whole process (VmHWM), the AWPI stream included".into(),
            os_io: r.io,
            reads_found: r.tally.found,
            reads_missing: r.tally.missing,
            scan_entries: r.tally.scanned,
            threads: 1,
            spec: self.req.spec.clone(),
            config: self.cfg.clone(),
            cpu: r.cpu,
            engine_stats: r.engine_stats,
            warmup_ops: r.warmup_ops,
            awpi: Some(self.stream.stats.clone()),
            clock: self.req.config.clock.name().to_string(),
            virtual_clock: r.virtual_clock,
            ..Default::default()
        };
        (result, r.rows)
    }
}

impl ReplayTally {
    fn count(&mut self, kind: AwpiKind, hit: bool) {
        match kind {
            AwpiKind::Read if hit => self.found += 1,
            AwpiKind::Read => self.missing += 1,
            AwpiKind::Scan => self.scanned += 1,
            _ => {}
        }
    }
}

/// Fig. 13's censored shares (20 feature days, labels over 10 and over 65 days) of the same
/// profile and seed, from a stream long enough to have them.
fn fig13_shares(aspec: &AwpiSpec) -> Result<serde_json::Value> {
    let long = AwpiSpec {
        trace_days: 82,
        ..aspec.clone()
    };
    let st = awpi::generate(&long)?.stats;
    Ok(serde_json::json!({
        "label10": st.censored_label10,
        "label65": st.censored_label65,
    }))
}

/// Access times per record the engine's query store keeps (its default).
pub fn engine_store_times() -> usize {
    cairn::access::RecordOptions::default().max_times
}

/// `salsm-trace`: the trace days on cairn:sa-lsm, exported; optionally evaluated.
#[derive(Args, Debug)]
pub struct SalsmTraceArgs {
    #[command(flatten)]
    pub workload: crate::cli::WorkloadArgs,
    #[command(flatten)]
    pub salsm: SalsmArgs,
    /// Python interpreter for the service [default: $CAIRN_PYTHON, else
    /// target/pyenv/bin/python, else python3].
    #[arg(long, value_name = "PATH")]
    pub python: Option<String>,
    /// Output directory: trace.rtr, awpi.json, and with --evaluate eval.json (and km.png).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Access times the query store keeps per record while tracing. More than the
    /// engine's 32, so that `evaluate` can cut the trace at T_cut and still see what a
    /// store of the engine's size held then (it re-applies the engine's cap there and
    /// at the end, `--store-times`); with 32, a busy record's times before T_cut are gone.
    #[arg(long, default_value_t = 4096, value_name = "N")]
    pub store_times: usize,
    /// Run the service's `evaluate` on the trace.
    #[arg(long)]
    pub evaluate: bool,
    /// Methods `evaluate` scores.
    #[arg(
        long,
        default_value = "rsf,gbdt-naive,gbdt-h,cox,lru,lfu,lru2,lirs",
        value_delimiter = ','
    )]
    pub methods: Vec<String>,
    /// Budgets of `evaluate`'s cold_fir [default: B (the true cold share), 0.2, 0.3, 0.5].
    #[arg(long, value_delimiter = ',', value_name = "FRACTIONS")]
    pub budgets: Option<Vec<f64>>,
    /// Ask `evaluate` for the Kaplan-Meier plot (km.png, Fig. 11).
    #[arg(long)]
    pub km_plot: bool,
    /// Extra arguments for `evaluate`, one string split at spaces.
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub eval_args: Option<String>,
}

pub fn trace_cmd(a: &SalsmTraceArgs) -> Result<()> {
    let spec = a.workload.spec()?;
    let s = a.salsm.settings(a.python.clone(), None);
    let aspec = awpi_spec(&spec, &s)?;
    let stream = awpi::generate(&aspec)?;
    let engine = EngineName::parse("cairn:sa-lsm")?;
    let req = RunRequest {
        engine: engine.clone(),
        spec: spec.clone(),
        config: crate::engines::BenchConfig {
            write_buffer_size: 1 << 20,
            ..Default::default()
        },
        data_dir: None,
        keep_data: false,
        timeline_period_ms: 1000,
        leaper: Default::default(),
        window_source: None,
        salsm: s.clone(),
    };
    let d = derive(&req, &stream)?;
    let mut cfg = req.config.clone();
    cfg.level1_bytes = Some(d.level1);
    cfg.cache_bytes = d.cache as usize;
    let tmp = tempfile::Builder::new().prefix("cairn-bench-").tempdir()?;
    let dir = tmp.path().join("db");
    let clock = ManualClock::new(0);
    let keys = KeySpace::new(
        &Dataset::Sequential,
        aspec.records,
        aspec.key_size,
        aspec.seed,
    )?;
    let values = Values::new(aspec.seed, aspec.value_max);
    let mut drv = Driver {
        keys: &keys,
        values: &values,
        clock: &clock,
        user_bytes: 0,
        kbuf: vec![0u8; aspec.key_size],
        virt: None,
    };
    let store = Some(a.store_times);
    let e = engine.open_with(&dir, &cfg, &extras_with(&clock, &d, 0.0, store))?;
    let t = Instant::now();
    drv.run_untimed(e.as_ref(), stream.trace(), "trace days")?;
    clock.set(aspec.trace_end_ms());
    std::fs::create_dir_all(&a.out)?;
    let trace = a.out.join("trace.rtr");
    let rows = e
        .export_record_trace(&trace)?
        .context("cairn:sa-lsm keeps no query store")?;
    let trace_seconds = t.elapsed().as_secs_f64();
    e.close()?;
    let mut info = serde_json::json!({
        "workload": spec.workload.name(),
        "spec": aspec,
        "stats": stream.stats,
        "fig13": fig13_shares(&aspec)?,
        "budget": d.budget,
        "budget_source": d.budget_source,
        "trace_records_exported": rows,
        "store_times": a.store_times,
        "trace_seconds": trace_seconds,
    });
    eprintln!(
        "{}: {} records traced in {trace_seconds:.1} s; r/w {:.1}, censored {:.1}%, true cold share {:.1}%",
        spec.workload.name(),
        rows,
        stream.stats.rw_ratio,
        stream.stats.censored_share * 100.0,
        stream.stats.true_cold_share * 100.0
    );
    if a.evaluate {
        let mut budgets = a
            .budgets
            .clone()
            .unwrap_or_else(|| vec![(d.budget * 1000.0).round() / 1000.0, 0.2, 0.3, 0.5]);
        budgets.dedup_by(|x, y| (*x - *y).abs() < 1e-3);
        let horizon = s.horizon_days.unwrap_or(DEFAULT_HORIZON_DAYS);
        let km = a.out.join("km.png");
        let mut methods = a.methods.clone();
        let mut eval_args: Vec<String> = a
            .eval_args
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if !eval_args.iter().any(|a| a.starts_with("--store-times")) {
            // The models see the engine's store, cut at T_cut (see --store-times).
            eval_args.extend([
                "--store-times".to_string(),
                engine_store_times().to_string(),
            ]);
        }
        if stream.paths.is_some() && !methods.iter().any(|m| m == "oracle") {
            // evaluate's held-out cold_fir ranks at T_cut = the trace's end - horizon.
            let h = (horizon * DAY_MS as f64) as u64;
            let f = a.out.join("oracle-cut.json");
            write_oracle(
                &stream,
                &keys,
                aspec.trace_end_ms().saturating_sub(h),
                h,
                &f,
            )?;
            methods.push("oracle".into());
            eval_args.extend(["--oracle-scores".to_string(), f.display().to_string()]);
        }
        let (v, secs) = service::evaluate(
            s.python.as_deref(),
            &trace,
            &methods,
            &budgets,
            horizon,
            &a.out.join("eval.json"),
            a.km_plot.then_some(km.as_path()),
            &eval_args,
        )?;
        info["evaluate_seconds"] = secs.into();
        info["budgets"] = budgets.clone().into();
        info["horizon_days"] = horizon.into();
        for m in &methods {
            eprintln!(
                "  {m}: c-index {}",
                service::eval_c_index(&v, m).map_or("-".into(), |c| format!("{c:.3}"))
            );
        }
    }
    std::fs::write(
        a.out.join("awpi.json"),
        serde_json::to_string_pretty(&info)?,
    )?;
    Ok(())
}
