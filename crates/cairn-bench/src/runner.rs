//! Runs one engine through load + measured phase and produces its `RunResult`.

use crate::engines::{BenchConfig, Engine, EngineCounters, EngineExtras, EngineName, JobKind};
use crate::leaper::{LeaperSettings, OracleSource, PausableClock};
use crate::measure::clock::{self, VirtualRun};
use crate::measure::cpu_price::PriceFile;
use crate::measure::latency::{cdf, summarize, OpClass, OpLatencies};
use crate::measure::missions::Missions;
use crate::measure::rss::{current_rss_bytes, peak_rss_bytes, CpuTime, ProcIo};
use crate::measure::timeline::{self, Live, TimelineRow};
use crate::measure::windows::{self, BackgroundJob};
use crate::report::json::{
    CacheStats, InvalidationSummary, LoadPhase, PhaseResult, ReadCacheSummary, RunResult, Storage,
};
use crate::rng::Rng;
use crate::workload::dataset::KeySpace;
use crate::workload::mix::OpKind;
use crate::workload::{KeyCounter, Op, OpGen, Plan, WorkloadName, WorkloadSpec};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Everything one run needs; serialized to hand a run to a child process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    pub engine: EngineName,
    pub spec: WorkloadSpec,
    pub config: BenchConfig,
    /// Parent of the engine's data directory; a temporary directory when None.
    pub data_dir: Option<PathBuf>,
    /// Keep the engine's files after the run.
    pub keep_data: bool,
    pub timeline_period_ms: u64,
    /// How Leaper engines train on the warm-up part.
    #[serde(default)]
    pub leaper: LeaperSettings,
    /// Where `config.invalidation_window_ms` came from, for the report.
    #[serde(default)]
    pub window_source: Option<String>,
    /// SA-LSM's runs (awpi-* workloads): the placement experiment's settings.
    #[serde(default)]
    pub salsm: crate::salsm::SalsmSettings,
}

/// Bytes that values are sliced from, compressible to about half as db_bench makes them
/// (its `--compression_ratio` 0.5): each 100-byte piece is 50 random bytes written twice.
/// Without compression the content is irrelevant; with it, both engines see the same
/// redundancy.
pub(crate) struct Values {
    buf: Vec<u8>,
}

const VALUE_POOL: usize = 1 << 20;
/// A piece of the pool and its random half.
const PIECE: usize = 100;
const PIECE_RANDOM: usize = 50;

impl Values {
    pub(crate) fn new(seed: u64, max_len: usize) -> Values {
        let mut rng = Rng::derive(seed, 0x7A1);
        let mut buf = Vec::with_capacity(VALUE_POOL + max_len + PIECE);
        while buf.len() < VALUE_POOL + max_len {
            let random: Vec<u8> = (0..PIECE_RANDOM).map(|_| rng.next_u64() as u8).collect();
            for i in 0..PIECE {
                buf.push(random[i % PIECE_RANDOM]);
            }
        }
        Values { buf }
    }

    pub(crate) fn get(&self, key: u64, salt: u64, len: usize) -> &[u8] {
        let off = ((key ^ salt.rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 44) as usize
            % VALUE_POOL;
        &self.buf[off..off + len]
    }
}

/// What workers tally besides latency.
#[derive(Default)]
struct Tally {
    found: AtomicU64,
    missing: AtomicU64,
    scanned: AtomicU64,
    user_bytes: AtomicU64,
}

struct Ctx<'a> {
    engine: &'a dyn Engine,
    keys: &'a KeySpace,
    values: &'a Values,
    tally: &'a Tally,
    /// Ops executed, for `cairn:oracle`'s position in the stream.
    progress: Option<&'a AtomicU64>,
    /// The driver of a run on the virtual clock.
    virt: Option<&'a VirtualRun>,
}

impl Ctx<'_> {
    fn put(&self, key: &[u8], idx: u64, salt: u64, len: usize) -> Result<()> {
        let v = self.values.get(idx, salt, len);
        self.tally
            .user_bytes
            .fetch_add((key.len() + len) as u64, Ordering::Relaxed);
        self.engine.put(key, v)
    }

    fn exec(&self, op: &Op, kbuf: &mut [u8], salt: u64) -> Result<()> {
        if let Some(p) = self.progress {
            p.fetch_add(1, Ordering::Relaxed);
        }
        self.keys.encode_into(op.key, kbuf);
        match op.kind {
            OpKind::Read => {
                let hit = self.engine.get(kbuf)?.is_some();
                let c = if hit {
                    &self.tally.found
                } else {
                    &self.tally.missing
                };
                c.fetch_add(1, Ordering::Relaxed);
            }
            OpKind::Scan => {
                let n = self.engine.scan(kbuf, op.len)?;
                self.tally.scanned.fetch_add(n as u64, Ordering::Relaxed);
            }
            OpKind::Update | OpKind::Insert => self.put(kbuf, op.key, salt, op.len)?,
            OpKind::Rmw => {
                let old = self.engine.get(kbuf)?;
                std::hint::black_box(&old);
                self.put(kbuf, op.key, salt, op.len)?;
            }
        }
        self.op_done()
    }

    /// On the virtual clock: charges the request's priced CPU, and at a fixed point runs
    /// the engine's background work.
    fn op_done(&self) -> Result<()> {
        if let Some(v) = self.virt {
            v.after_op(self.engine, self.tally.scanned.load(Ordering::Relaxed));
            v.fixed_point(self.engine)?;
        }
        Ok(())
    }
}

pub(crate) fn progress(len: u64, msg: String) -> ProgressBar {
    // Hidden when stderr is not a terminal, so logs and CI output stay clean.
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let pb = ProgressBar::with_draw_target(Some(len), target);
    pb.set_style(
        ProgressStyle::with_template("{msg:>24} [{bar:40}] {pos}/{len} {per_sec} eta {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(msg);
    pb
}

const PROGRESS_BATCH: u64 = 4096;

pub fn dir_size(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

pub(crate) fn storage(c: &EngineCounters) -> Storage {
    Storage {
        read_ops: c.read_ops,
        read_bytes: c.read_bytes,
        write_ops: c.write_ops,
        write_bytes: c.write_bytes,
    }
}

/// Runs `req`, returning the result and the per-second timeline.
pub fn run(req: &RunRequest) -> Result<(RunResult, Vec<TimelineRow>)> {
    if req.spec.workload.is_awpi() {
        return crate::salsm::run::run(req);
    }
    let spec = &req.spec;
    let plan = Plan::build(spec)?;
    let keyspace = KeySpace::new(&spec.dataset, spec.records, spec.key_size, spec.seed)?;
    let values = Values::new(spec.seed, spec.value_size.max());
    let started_at_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (_tmp, parent) = data_parent(req)?;
    let dir = fresh_engine_dir(&parent, &req.engine)?;
    let rss_at_open = current_rss_bytes();
    // The access statistics' clock, stopped while the model trains; the oracle's future.
    let clock = Arc::new(match req.config.clock {
        crate::engines::ClockKind::Virtual => PausableClock::on_virtual_time(),
        crate::engines::ClockKind::Wall => PausableClock::new(),
    });
    let oracle = oracle_source(req, &plan, &keyspace, &clock)?;
    let extras = EngineExtras {
        clock: Some(clock.clone()),
        oracle: oracle
            .clone()
            .map(|o| o as Arc<dyn cairn::policy::HotRangeSource>),
        salsm: None,
    };
    let engine = req.engine.open_with(&dir, &req.config, &extras)?;
    let virt = virtual_run(req, spec, engine.as_ref())?;
    let _installed = virt.as_ref().map(VirtualRun::install);
    let op_count = oracle.as_ref().map(|o| o.progress());
    let tally = Tally::default();
    let bench = Bench {
        req,
        spec,
        plan: &plan,
        clock: &clock,
        parent: &parent,
        name: req.engine.to_string(),
        ctx: Ctx {
            engine: engine.as_ref(),
            keys: &keyspace,
            values: &values,
            tally: &tally,
            progress: op_count.as_deref(),
            virt: virt.as_ref(),
        },
    };

    let order = load_order(spec);
    let c_start = engine.counters();
    let load = bench.load(&order, &c_start)?;
    let key_count = KeyCounter::new(spec.records);
    let mut gens = bench.generators(&key_count);
    let (warmup_ops, leaper) = bench.warm_up_and_train(&mut gens, oracle.as_deref())?;
    let retrainer = bench.retrainer(leaper.as_ref())?;
    if let Some(o) = &oracle {
        o.mark();
    }
    let before = Before::take(engine.as_ref(), c_start);
    let measured = bench.measure(gens, &order, &key_count, &retrainer)?;
    let mut outcome = bench.outcome(&before, measured)?;
    outcome.load = load;
    outcome.warmup_ops = warmup_ops;
    outcome.leaper = leaper.map(|mut t| {
        t.retrains = retrainer.done.into_inner();
        t
    });
    let disk_bytes = dir_size(&dir);
    engine.close()?;
    let peak_rss = peak_rss_bytes();
    if !req.keep_data {
        std::fs::remove_dir_all(&dir).ok();
    }
    let rows = std::mem::take(&mut outcome.rows);
    let result = outcome.into_result(req, started_at_unix, rss_at_open, disk_bytes, peak_rss);
    Ok((result, rows))
}

/// Where the engine's directory goes: `--db-dir`, or a temporary directory (kept alive by
/// the first value) when none is given.
pub(crate) fn data_parent(req: &RunRequest) -> Result<(Option<tempfile::TempDir>, PathBuf)> {
    Ok(match &req.data_dir {
        Some(d) => (None, d.clone()),
        None => {
            let tmp = tempfile::Builder::new().prefix("cairn-bench-").tempdir()?;
            let path = tmp.path().to_path_buf();
            (Some(tmp), path)
        }
    })
}

/// A directory named after the engine that this run owns outright, so clearing it is safe.
pub(crate) fn fresh_engine_dir(parent: &Path, engine: &EngineName) -> Result<PathBuf> {
    let dir = parent.join(format!("cairn-bench-{}", engine.file_stem()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `cairn:oracle`'s view of the whole stream, or None for every other engine.
fn oracle_source(
    req: &RunRequest,
    plan: &Plan,
    keyspace: &KeySpace,
    clock: &Arc<PausableClock>,
) -> Result<Option<Arc<OracleSource>>> {
    if !req.engine.is_oracle() {
        return Ok(None);
    }
    if req.spec.warmup_secs.is_some() {
        bail!(
            "cairn:oracle reads the whole stream up front, so its warm-up must be a fixed \
             count: give --warmup-ops, or list another engine first in `compare` (which pins \
             the first engine's count)"
        );
    }
    Ok(Some(Arc::new(OracleSource::new(
        plan,
        &req.spec,
        keyspace,
        req.config.leaper_slot_ms,
        clock.clone(),
    ))))
}

/// The load phase's order: every record, seeded random unless the workload is fillseq.
fn load_order(spec: &WorkloadSpec) -> Vec<u64> {
    let mut order: Vec<u64> = (0..spec.records).collect();
    if spec.workload != WorkloadName::FillSeq {
        Rng::derive(spec.seed, 0x10AD).shuffle(&mut order);
    }
    order
}

/// One run's fixed parts, shared by its phases.
struct Bench<'a> {
    req: &'a RunRequest,
    spec: &'a WorkloadSpec,
    plan: &'a Plan,
    /// The access statistics' clock.
    clock: &'a PausableClock,
    /// Where the engine's directory and the learner's work directories go.
    parent: &'a Path,
    /// The engine's name in progress lines and the result.
    name: String,
    ctx: Ctx<'a>,
}

/// Periodic retraining of Leaper's learner during the measured phase.
struct Retrainer {
    /// Every this many measured ops; None when the run does not retrain.
    every: Option<u64>,
    settings: LeaperSettings,
    done: parking_lot::Mutex<Vec<crate::leaper::train::Retrain>>,
}

impl Retrainer {
    /// Whether the learner retrains after `at_op` measured ops.
    fn due(&self, at_op: u64) -> bool {
        self.every.is_some_and(|n| at_op.is_multiple_of(n))
    }
}

/// The engine's gauges when the measured phase starts.
struct Before {
    /// Counters at the start of the load, for the whole life's write amplification.
    c_start: EngineCounters,
    counters: EngineCounters,
    read_cache: Option<crate::engines::ReadCacheGauges>,
    prefetch: Option<crate::engines::PrefetchCounters>,
    block_trace: Option<Arc<crate::measure::belady::BlockTrace>>,
    io: ProcIo,
    cpu: CpuTime,
}

impl Before {
    fn take(engine: &dyn Engine, c_start: EngineCounters) -> Before {
        let prefetch = engine.prefetch();
        let block_trace = engine.block_trace();
        if let Some(t) = &block_trace {
            t.start();
        }
        Before {
            c_start,
            counters: engine.counters(),
            read_cache: engine.read_cache(),
            prefetch,
            block_trace,
            io: ProcIo::now(),
            cpu: CpuTime::now(),
        }
    }
}

/// What the measured phase's request loop returns.
struct Measured<'a> {
    lat: OpLatencies,
    /// readwhilewriting's writer.
    bg: Option<OpLatencies>,
    rows: Vec<TimelineRow>,
    t0: Instant,
    last_op: Instant,
    /// When the background work of a write-only run settled.
    settled: Option<Instant>,
    period: Duration,
    missions: Option<Missions<'a>>,
    mission_ops: Option<u64>,
}

impl<'a> Bench<'a> {
    fn engine(&self) -> &'a dyn Engine {
        self.ctx.engine
    }

    /// Waits until the engine's background work is done: on the virtual clock by running
    /// it, on the wall clock by watching for quiet.
    fn settle(&self) -> Result<Instant> {
        match self.ctx.virt {
            Some(v) => v.settle(self.engine()),
            None => Ok(settle(self.engine())),
        }
    }

    /// The load phase: every record in `order` (fills are the measured phase instead).
    fn load(&self, order: &[u64], c_start: &EngineCounters) -> Result<LoadPhase> {
        let spec = self.spec;
        if spec.workload.is_fill() {
            return Ok(LoadPhase::default());
        }
        let load_start = clock::now();
        let pb = progress(spec.records, format!("{} load", self.name));
        let mut kbuf = vec![0u8; spec.key_size];
        let mut vrng = Rng::derive(spec.seed, 0x5123);
        for (i, &idx) in order.iter().enumerate() {
            self.ctx.keys.encode_into(idx, &mut kbuf);
            let len = spec.value_size.draw(&mut vrng);
            self.ctx.put(&kbuf, idx, 0, len)?;
            self.ctx.op_done()?;
            if (i as u64).is_multiple_of(PROGRESS_BATCH) {
                pb.set_position(i as u64);
            }
        }
        self.engine().flush()?;
        if spec.settle {
            self.settle()?;
        }
        pb.finish_and_clear();
        Ok(LoadPhase {
            records: spec.records,
            seconds: clock::now().duration_since(load_start).as_secs_f64(),
            storage: storage(&self.engine().counters().since(c_start)),
        })
    }

    /// One op generator per worker, shared by the warm-up and the measured part.
    fn generators(&self, key_count: &'a KeyCounter) -> Vec<OpGen<'a>> {
        let spec = self.spec;
        if spec.workload.is_fill() {
            return Vec::new();
        }
        (0..spec.threads)
            .map(|t| {
                self.plan
                    .stream(spec.seed, t, spec.threads, spec.value_size, key_count)
            })
            .collect()
    }

    /// Runs the warm-up part, then trains Leaper's learner on its access trace while the
    /// access clock stands still, and lets every engine's background work finish so all
    /// measure from a quiet tree. Returns the warm-up's op count and the training.
    fn warm_up_and_train(
        &self,
        gens: &mut [OpGen<'a>],
        oracle: Option<&OracleSource>,
    ) -> Result<(u64, Option<crate::leaper::LeaperTraining>)> {
        if self.plan.warmup == 0 {
            return Ok((0, None));
        }
        if let Some(o) = oracle {
            o.mark();
        }
        let warm_start = clock::now();
        let label = format!("{} warm-up", self.name);
        let warmup_ops = warm_up(
            &self.ctx,
            gens,
            self.spec.key_size,
            self.spec.warmup_secs,
            &label,
        )?;
        self.clock.pause();
        let warm_jobs: Vec<f64> = self
            .engine()
            .jobs()
            .iter()
            .filter(|j| j.kind != JobKind::Move && j.start >= warm_start)
            .filter_map(|j| Some(j.end?.duration_since(j.start).as_secs_f64()))
            .collect();
        let trained = self.train("", &self.req.leaper, &warm_jobs);
        // Without a model the Leaper engine runs on its fallback; the JSON says why.
        let mut trained = trained.unwrap_or_else(|e| {
            eprintln!(
                "warning: {}: no Leaper model, measuring without one: {e:#}",
                self.name
            );
            Some(crate::leaper::LeaperTraining {
                slot_ms: self.req.config.leaper_slot_ms,
                error: Some(format!("{e:#}")),
                ..Default::default()
            })
        });
        if let Some(t) = &mut trained {
            t.warmup_ops = warmup_ops;
        }
        self.settle()?;
        self.clock.resume();
        Ok((warmup_ops, trained))
    }

    /// Trains Leaper's learner on the access trace so far, in a work directory named
    /// with `suffix` (removed afterwards unless the run keeps its data).
    fn train(
        &self,
        suffix: &str,
        settings: &LeaperSettings,
        warm_jobs: &[f64],
    ) -> Result<Option<crate::leaper::LeaperTraining>> {
        let stem = self.req.engine.file_stem();
        let work = self.parent.join(format!("leaper-{stem}{suffix}"));
        let trained = crate::leaper::train::train(
            self.engine(),
            &work,
            settings,
            self.req.config.leaper_slot_ms,
            self.req.config.window_ms(),
            warm_jobs,
        );
        if !self.req.keep_data {
            std::fs::remove_dir_all(&work).ok();
        }
        trained
    }

    /// Periodic retraining: every N measured ops the learner trains again on the trace
    /// so far (its latest slots) while the access clock stands still; one worker only, so
    /// no op runs meanwhile.
    fn retrainer(&self, leaper: Option<&crate::leaper::LeaperTraining>) -> Result<Retrainer> {
        let every = self
            .req
            .leaper
            .retrain_ops
            .filter(|_| leaper.is_some_and(|t| t.loaded));
        if every.is_some() && self.spec.threads > 1 {
            bail!(
                "--leaper-retrain-ops needs --threads 1 (no op may run while the learner trains)"
            );
        }
        Ok(Retrainer {
            every,
            settings: LeaperSettings {
                k: leaper.map(|t| t.k),
                ..self.req.leaper.clone()
            },
            done: parking_lot::Mutex::new(Vec::new()),
        })
    }

    /// Trains the learner again after `at_op` measured ops while the access clock stands
    /// still.
    fn retrain(&self, r: &Retrainer, at_op: u64) {
        self.clock.pause();
        let trained = self.train(&format!("-{at_op}"), &r.settings, &[]);
        self.clock.resume();
        r.done
            .lock()
            .push(crate::leaper::train::Retrain::from_result(at_op, trained));
    }

    /// The measured phase: the requests (the fill, or the generators' ops with
    /// readwhilewriting's writer beside them) while the timeline samples the engine.
    fn measure(
        &self,
        gens: Vec<OpGen<'a>>,
        order: &[u64],
        key_count: &KeyCounter,
        retrainer: &Retrainer,
    ) -> Result<Measured<'a>> {
        let (spec, engine) = (self.spec, self.engine());
        if let Some(v) = self.ctx.virt {
            v.begin(engine, self.ctx.tally.scanned.load(Ordering::Relaxed));
        }
        let live = Live::default();
        let period = Duration::from_millis(self.req.timeline_period_ms.max(10));
        let total = if spec.workload.is_fill() {
            spec.records
        } else {
            self.plan.total_ops()
        };
        let pb = progress(total, format!("{} {}", self.name, spec.workload.name()));
        // RusKey's per-mission series: for multi-phase workloads, or when a size is given.
        let want_missions = !spec.workload.is_fill()
            && (self.plan.phases.len() > 1 || self.req.config.mission_ops.is_some());
        let mission_ops = want_missions.then(|| self.req.config.mission_ops());
        let t0 = clock::now();
        let missions = mission_ops
            .map(|m| Missions::new(m, Some(engine), t0).with_k_change(self.req.config.set_k_at));
        let requests = Requests {
            bench: self,
            live: &live,
            pb: &pb,
            missions: missions.as_ref(),
        };
        let (lat, bg, rows, last_op, settled) = std::thread::scope(|s| -> Result<_> {
            // On the virtual clock the request loop takes the rows, at virtual times.
            let sampler = match self.ctx.virt {
                Some(_) => {
                    *live.inline.lock() = Some(timeline::Sampler::new(engine, period, t0));
                    None
                }
                None => Some(s.spawn(|| timeline::sample(engine, &live, period, t0))),
            };
            let result = if spec.workload.is_fill() {
                requests.fill(order).map(|lat| (lat, None))
            } else {
                requests.mixed(gens, key_count, retrainer)
            };
            let last_op = clock::now();
            // A write-only run's work is not done at its last write: time the flushes and
            // compactions it caused too (the timeline keeps sampling them).
            let settled = match &result {
                Ok(_) if spec.workload.is_fill() || spec.workload == WorkloadName::Overwrite => {
                    engine.flush().and_then(|()| self.settle().map(Some))
                }
                _ => Ok(None),
            };
            live.stop.store(true, Ordering::Release);
            let rows = match sampler {
                Some(s) => s.join().expect("sampler panicked"),
                None => {
                    let mut inline = live.inline.lock().take().expect("the inline sampler");
                    inline.take(engine, &live, clock::now(), true);
                    inline.rows
                }
            };
            let (lat, bg) = result?;
            Ok((lat, bg, rows, last_op, settled?))
        })?;
        pb.finish_and_clear();
        Ok(Measured {
            lat,
            bg,
            rows,
            t0,
            last_op,
            settled,
            period,
            missions,
            mission_ops,
        })
    }

    /// What the run measured, read from the engine before it closes.
    fn outcome(&self, before: &Before, m: Measured<'a>) -> Result<Outcome> {
        let engine = self.engine();
        let seconds = m.last_op.duration_since(m.t0).as_secs_f64();
        let cpu = CpuTime::now().since(&before.cpu);
        let virtual_clock = self.ctx.virt.map(|v| v.report_with(&m.rows));
        let c1 = engine.counters();
        let g1 = engine.read_cache();
        let p1 = engine.prefetch();
        let engine_stats = engine.extra_stats();
        let background_jobs = match p1 {
            // Engines that report their jobs as they happen.
            Some(_) => windows::from_spans(&engine.jobs(), m.t0, seconds),
            None => windows::from_timeline(&m.rows),
        };
        let d = c1.since(&before.counters);
        let invalidation = self.invalidation(before, &m, &background_jobs, p1, &d);
        let point_reads = ["read", "rmw"]
            .iter()
            .filter_map(|k| m.lat.by_op.get(*k))
            .map(|h| h.len())
            .sum();
        let g0 = before.read_cache.clone().unwrap_or_default();
        let missions = m.missions.map(Missions::finish).transpose()?;
        let tally = self.ctx.tally;
        Ok(Outcome {
            name: self.name.clone(),
            seconds,
            settled_seconds: m.settled.map(|t| t.duration_since(m.t0).as_secs_f64()),
            phases: phase_results(&m.lat, self.plan),
            read_cache: g1.map(|g1| read_cache_summary(&g0, &g1, point_reads)),
            lat: m.lat,
            bg: m.bg,
            rows: m.rows,
            life: c1.since(&before.c_start),
            d,
            cpu,
            io: ProcIo::now().since(&before.io),
            virtual_clock,
            engine_stats,
            invalidation,
            background_jobs,
            missions: missions.unwrap_or_default(),
            mission_ops: m.mission_ops,
            user_bytes: tally.user_bytes.load(Ordering::Relaxed),
            reads_found: tally.found.load(Ordering::Relaxed),
            reads_missing: tally.missing.load(Ordering::Relaxed),
            scan_entries: tally.scanned.load(Ordering::Relaxed),
            load: LoadPhase::default(),
            warmup_ops: 0,
            leaper: None,
        })
    }

    /// Leaper's metrics over the measured phase.
    fn invalidation(
        &self,
        before: &Before,
        m: &Measured<'_>,
        jobs: &[BackgroundJob],
        p1: Option<crate::engines::PrefetchCounters>,
        d: &EngineCounters,
    ) -> InvalidationSummary {
        let cfg = &self.req.config;
        let window_source =
            self.req
                .window_source
                .clone()
                .unwrap_or_else(|| match cfg.invalidation_window_ms {
                    Some(_) => "--invalidation-window-ms".into(),
                    None => "cairn's default".into(),
                });
        let mut invalidation = invalidation_summary(
            &m.rows,
            jobs,
            p1.map(|p1| p1.since(&before.prefetch.unwrap_or_default())),
            cfg.window_ms(),
            window_source,
            m.period.as_secs_f64(),
        );
        // Precision since the engine opened: a block counts as hit once, so hits never
        // exceed the blocks warmed. Counted from a later point, blocks warmed before it
        // (during the load, by warm-all and the oracle) and hit after it put the ratio
        // above 1.
        if let Some(p) = p1 {
            invalidation.precision =
                (p.warmed_blocks > 0).then(|| p.warmed_hits as f64 / p.warmed_blocks as f64);
        }
        if let Some(misses) = d.data_block_misses {
            per_read_misses(&mut invalidation, &m.lat, misses);
        }
        let bounds = before.block_trace.as_ref();
        if let Some(b) = bounds.and_then(|t| t.bounds(cfg.cache_bytes)) {
            let reads = invalidation.reads.unwrap_or(0);
            let per_read = |m: u64| (reads > 0).then(|| m as f64 / reads as f64);
            invalidation.belady_misses_per_read = per_read(b.demand_misses);
            invalidation.belady_warmed_misses_per_read = per_read(b.warmed_misses);
        }
        invalidation
    }
}

/// The measured phase's request workers.
struct Requests<'b, 'a> {
    bench: &'b Bench<'a>,
    live: &'b Live,
    pb: &'b ProgressBar,
    missions: Option<&'b Missions<'a>>,
}

impl Requests<'_, '_> {
    /// A fill: the records in load order, dealt round-robin to the writer threads
    /// (db_bench's --threads: group commit gets concurrent writers).
    fn fill(&self, order: &[u64]) -> Result<OpLatencies> {
        let spec = self.bench.spec;
        let threads = spec.threads.max(1);
        let lens: Vec<usize> = {
            let mut vrng = Rng::derive(spec.seed, 0x5123);
            order
                .iter()
                .map(|_| spec.value_size.draw(&mut vrng))
                .collect()
        };
        std::thread::scope(|s| -> Result<OpLatencies> {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    let lens = &lens;
                    s.spawn(move || self.fill_share(order, lens, t, threads))
                })
                .collect();
            let mut lat = OpLatencies::default();
            for w in workers {
                lat.merge(&w.join().expect("fill worker panicked")?);
            }
            Ok(lat)
        })
    }

    /// Writer `t` of `threads`: every `threads`-th record of the fill from the `t`-th.
    fn fill_share(
        &self,
        order: &[u64],
        lens: &[usize],
        t: usize,
        threads: usize,
    ) -> Result<OpLatencies> {
        let mut lat = OpLatencies::default();
        let mut kbuf = vec![0u8; self.bench.spec.key_size];
        let mine = (t..order.len()).step_by(threads);
        let share = mine.len();
        for (n, i) in mine.enumerate() {
            let op = Op {
                kind: OpKind::Insert,
                key: order[i],
                len: lens[i],
                phase: 0,
            };
            let class = OpClass {
                write: true,
                tail: n >= share / 2,
            };
            let ctx = &self.bench.ctx;
            timed(ctx, &op, &mut kbuf, 0, &mut lat, class, None, self.live)?;
            if (n as u64 + 1).is_multiple_of(PROGRESS_BATCH) {
                self.pb.inc(PROGRESS_BATCH);
            }
        }
        Ok(lat)
    }

    /// The generators' ops, one worker each, with readwhilewriting's writer beside them.
    fn mixed(
        &self,
        gens: Vec<OpGen<'_>>,
        key_count: &KeyCounter,
        retrainer: &Retrainer,
    ) -> Result<(OpLatencies, Option<OpLatencies>)> {
        let spec = self.bench.spec;
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let writer = (spec.workload == WorkloadName::ReadWhileWriting).then(|| {
                let (ctx, done) = (&self.bench.ctx, &done);
                s.spawn(move || background_writer(ctx, spec, key_count, done))
            });
            let workers: Vec<_> = gens
                .into_iter()
                .enumerate()
                .map(|(t, gen)| s.spawn(move || self.worker(t, gen, retrainer)))
                .collect();
            let mut lat = OpLatencies::default();
            let mut first_err = None;
            for w in workers {
                match w.join().expect("worker panicked") {
                    Ok(l) => lat.merge(&l),
                    Err(e) => first_err = first_err.or(Some(e)),
                }
            }
            done.store(true, Ordering::Release);
            let bg = match writer.map(|w| w.join().expect("writer panicked")) {
                Some(Ok(l)) => Some(l),
                Some(Err(e)) => return Err(e),
                None => None,
            };
            match first_err {
                Some(e) => Err(e),
                None => Ok((lat, bg)),
            }
        })
    }

    /// Worker `t`: its generator's ops, timed.
    fn worker(&self, t: usize, gen: OpGen<'_>, retrainer: &Retrainer) -> Result<OpLatencies> {
        let (spec, plan, ctx) = (self.bench.spec, self.bench.plan, &self.bench.ctx);
        let mut lat = OpLatencies::default();
        let mut kbuf = vec![0u8; spec.key_size];
        // This worker's share of each phase and its ops so far there, to tell the phase's
        // last half ("after convergence").
        let threads = spec.threads.max(1) as u64;
        let share: Vec<u64> = plan
            .phases
            .iter()
            .map(|p| p.ops / threads + u64::from((t as u64) < p.ops % threads))
            .collect();
        let mut seen = vec![0u64; share.len()];
        let mut gen = gen.peekable();
        let mut i = 0u64;
        // Generating an op early takes an insert's key early, which other workers would
        // then see before it is written: look ahead only when this is the one worker.
        let look_ahead = threads == 1;
        while let Some(op) = gen.next() {
            if look_ahead {
                if let Some(next) = gen.peek() {
                    ctx.keys.prefetch(next.key);
                }
            }
            let tail = match seen.get_mut(op.phase) {
                Some(k) => {
                    *k += 1;
                    *k > share[op.phase] / 2
                }
                None => false,
            };
            let class = OpClass {
                write: op.kind.writes(),
                tail,
            };
            let salt = op.phase as u64 + 1;
            timed(
                ctx,
                &op,
                &mut kbuf,
                salt,
                &mut lat,
                class,
                self.missions,
                self.live,
            )?;
            i += 1;
            if i.is_multiple_of(PROGRESS_BATCH) {
                self.pb.inc(PROGRESS_BATCH);
            }
            // Not after the last op: nothing would use the model.
            if retrainer.due(i) && gen.peek().is_some() {
                self.bench.retrain(retrainer, i);
            }
        }
        Ok(lat)
    }
}

/// What a run measured, gathered before the engine closes.
struct Outcome {
    name: String,
    seconds: f64,
    settled_seconds: Option<f64>,
    lat: OpLatencies,
    bg: Option<OpLatencies>,
    rows: Vec<TimelineRow>,
    phases: Vec<PhaseResult>,
    /// Counters over the measured phase, and over the engine's life.
    d: EngineCounters,
    life: EngineCounters,
    cpu: CpuTime,
    io: ProcIo,
    virtual_clock: Option<crate::report::json::VirtualClockReport>,
    read_cache: Option<ReadCacheSummary>,
    engine_stats: std::collections::BTreeMap<String, f64>,
    invalidation: InvalidationSummary,
    background_jobs: Vec<BackgroundJob>,
    missions: Vec<crate::report::json::MissionRow>,
    mission_ops: Option<u64>,
    user_bytes: u64,
    reads_found: u64,
    reads_missing: u64,
    scan_entries: u64,
    load: LoadPhase,
    warmup_ops: u64,
    leaper: Option<crate::leaper::LeaperTraining>,
}

impl Outcome {
    fn into_result(
        self,
        req: &RunRequest,
        started_at_unix: u64,
        rss_at_open: u64,
        disk_bytes: u64,
        peak_rss: u64,
    ) -> RunResult {
        let (d, life, lat) = (&self.d, &self.life, &self.lat);
        let mut per_op: std::collections::BTreeMap<_, _> = lat
            .by_op
            .iter()
            .map(|(k, h)| (k.clone(), summarize(h)))
            .collect();
        if let Some(b) = &self.bg {
            per_op.insert("background_update".to_string(), summarize(&b.all));
        }
        let ops = lat.all.len();
        let per_sec = |secs: f64| if secs > 0.0 { ops as f64 / secs } else { 0.0 };
        let lookups = d.cache_hits + d.cache_misses;
        let user_bytes = self.user_bytes;
        RunResult {
            engine: self.name,
            workload: req.spec.workload.name(),
            records: req.spec.records,
            ops,
            seconds: self.seconds,
            ops_per_sec: per_sec(self.seconds),
            settled_seconds: self.settled_seconds,
            settled_ops_per_sec: self.settled_seconds.filter(|s| *s > 0.0).map(per_sec),
            stall_seconds: d.stall_micros as f64 / 1e6,
            counters_source: counters_source(&req.engine, &req.config).to_string(),
            engine_version: req.engine.version(),
            repeats: None,
            latency_us: summarize(&lat.all),
            per_op_latency_us: per_op,
            latency_cdf_us: cdf(&lat.all),
            phases: self.phases,
            storage: storage(d),
            cache: CacheStats {
                hits: d.cache_hits,
                misses: d.cache_misses,
                hit_ratio: (lookups > 0).then(|| d.cache_hits as f64 / lookups as f64),
            },
            write_amplification: (life.write_bytes > 0 && user_bytes > 0)
                .then(|| life.write_bytes as f64 / user_bytes as f64),
            user_bytes_written: user_bytes,
            flush_bytes_written: life.flush_bytes_written,
            compaction_bytes_written: life.compaction_bytes_written,
            load: self.load,
            disk_bytes,
            peak_rss_bytes: peak_rss,
            rss_at_open_bytes: rss_at_open,
            rss_note: "peak RSS of the whole process (VmHWM): harness key tables and value pool \
                       included; per engine only when each engine runs in its own process"
                .to_string(),
            os_io: self.io,
            reads_found: self.reads_found,
            reads_missing: self.reads_missing,
            scan_entries: self.scan_entries,
            background_write_ops: self.bg.as_ref().map_or(0, |b| b.all.len()),
            threads: req.spec.threads,
            spec: req.spec.clone(),
            config: req.config.clone(),
            started_at_unix,
            cpu: self.cpu,
            read_cache: self.read_cache,
            engine_stats: self.engine_stats,
            invalidation: Some(self.invalidation),
            background_jobs: self.background_jobs,
            leaper: self.leaper,
            warmup_ops: self.warmup_ops,
            mission_ops: self.mission_ops,
            missions: self.missions,
            placement: None,
            awpi: None,
            clock: req.config.clock.name().to_string(),
            virtual_clock: self.virtual_clock,
        }
    }
}

/// Per phase of the plan: its ops, time, latency and the means of its converged half.
fn phase_results(lat: &OpLatencies, plan: &Plan) -> Vec<PhaseResult> {
    let mix = |i: usize| {
        plan.phases
            .get(i)
            .map_or("insert=1".to_string(), |ph| ph.mix.to_string())
    };
    phases_of(lat, mix, true)
}

/// Per phase recorded in `lat`: its ops, time, latency and the means of its converged
/// (last) half, `mix` naming it; with `tail_rate`, the converged half's ops/s too.
pub(crate) fn phases_of(
    lat: &OpLatencies,
    mix: impl Fn(usize) -> String,
    tail_rate: bool,
) -> Vec<PhaseResult> {
    lat.phases
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let p = p.as_ref()?;
            let secs = p.end.duration_since(p.start).as_secs_f64();
            let tail_secs = p.tail_span.map(|(a, b)| b.duration_since(a).as_secs_f64());
            Some(PhaseResult {
                index: i,
                mix: mix(i),
                ops: p.hist.len(),
                seconds: secs,
                ops_per_sec: if secs > 0.0 {
                    p.hist.len() as f64 / secs
                } else {
                    0.0
                },
                latency_us: summarize(&p.hist),
                mean_us: p.all.mean_us().unwrap_or(0.0),
                read_ops: p.reads.n,
                read_mean_us: p.reads.mean_us(),
                write_ops: p.writes.n,
                write_mean_us: p.writes.mean_us(),
                converged_ops: p.tail.n,
                converged_mean_us: p.tail.mean_us(),
                converged_ops_per_sec: tail_secs
                    .filter(|s| tail_rate && *s > 0.0)
                    .map(|s| p.tail.n as f64 / s),
            })
        })
        .collect()
}

/// The driver of a run on the virtual clock, or None on the wall clock. Refuses what
/// cannot run there: an engine without a virtual clock (RocksDB), several request
/// threads, a second writer thread.
fn virtual_run(
    req: &RunRequest,
    spec: &WorkloadSpec,
    engine: &dyn Engine,
) -> Result<Option<VirtualRun>> {
    if req.config.clock != crate::engines::ClockKind::Virtual {
        return Ok(None);
    }
    let prices = match &req.config.cpu_prices {
        Some(p) => Some((PriceFile::load(p)?, p.display().to_string())),
        None => None,
    };
    let Some(v) = VirtualRun::of(engine, prices, req.config.bg_every_ops) else {
        bail!(
            "{} cannot run on the virtual clock (cairn's engines only): compare engines on \
             the wall clock",
            req.engine
        );
    };
    if spec.threads != 1 {
        bail!("--clock virtual runs one request thread: give --threads 1");
    }
    if spec.workload == WorkloadName::ReadWhileWriting {
        bail!("--clock virtual runs one thread: readwhilewriting needs a writer beside it");
    }
    Ok(Some(v))
}

/// Where a run's I/O and cache counters come from (RocksDB without statistics has none).
pub fn counters_source(engine: &EngineName, cfg: &BenchConfig) -> &'static str {
    match engine {
        EngineName::Rocksdb if cfg.rocksdb_statistics => "rocksdb statistics (timed with them on)",
        EngineName::Rocksdb => "none: statistics off while timed",
        EngineName::Btree => "none: in memory",
        EngineName::Fjall => "fjall's block metrics (always on)",
        EngineName::Cairn { .. } => "cairn's own counters (always on)",
    }
}

/// Runs each generator's warm-up ops, untimed, one thread per generator, for at most
/// `secs`; returns how many ran.
fn warm_up(
    ctx: &Ctx<'_>,
    gens: &mut [OpGen<'_>],
    key_size: usize,
    secs: Option<f64>,
    label: &str,
) -> Result<u64> {
    let total: u64 = gens.iter().map(|g| g.warmup_left()).sum();
    let pb = progress(total, label.to_string());
    let deadline = secs.map(|s| clock::now() + Duration::from_secs_f64(s.max(0.0)));
    std::thread::scope(|s| {
        let handles: Vec<_> = gens
            .iter_mut()
            .map(|g| {
                let pb = &pb;
                s.spawn(move || -> Result<u64> {
                    let mut kbuf = vec![0u8; key_size];
                    let mut done = 0u64;
                    while g.warmup_left() > 0 {
                        if deadline.is_some_and(|d| clock::now() >= d) {
                            g.end_warmup();
                            break;
                        }
                        let op = g.next().expect("warm-up ops remain");
                        ctx.exec(&op, &mut kbuf, op.phase as u64 + 1)?;
                        done += 1;
                        if done.is_multiple_of(PROGRESS_BATCH) {
                            pb.inc(PROGRESS_BATCH);
                        }
                    }
                    Ok(done)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("warm-up worker panicked"))
            .sum::<Result<u64>>()
    })
    .inspect(|_| pb.finish_and_clear())
}

/// Leaper's primary metric: data-block misses per read (point reads, read-modify-writes
/// and scans) over the measured phase, which no policy wins by caching less.
fn per_read_misses(inv: &mut InvalidationSummary, lat: &OpLatencies, data_misses: u64) {
    let reads: u64 = ["read", "rmw", "scan"]
        .iter()
        .filter_map(|k| lat.by_op.get(*k))
        .map(|h| h.len())
        .sum();
    inv.reads = Some(reads);
    inv.data_block_misses = Some(data_misses);
    inv.misses_per_read = (reads > 0).then(|| data_misses as f64 / reads as f64);
}

/// Leaper's metric from the engine's counters and the timeline split into job windows.
pub fn invalidation_summary(
    rows: &[TimelineRow],
    jobs: &[BackgroundJob],
    p: Option<crate::engines::PrefetchCounters>,
    window_ms: u64,
    window_source: String,
    period_s: f64,
) -> InvalidationSummary {
    let w = windows::windows(jobs, window_ms as f64 / 1000.0);
    let st = windows::stats(rows, &w);
    let rec = windows::recoveries(rows, jobs, period_s);
    let ended = |k: JobKind| {
        jobs.iter()
            .filter(|j| j.kind == k && j.end_s >= 0.0)
            .count() as u64
    };
    InvalidationSummary {
        window_ms,
        window_source,
        misses_per_read: None,
        data_block_misses: None,
        reads: None,
        belady_misses_per_read: None,
        belady_warmed_misses_per_read: None,
        rollbacks: p.map(|p| p.rollbacks),
        model_evals: p.map(|p| p.model_evals),
        inference_ns: p.map(|p| p.inference_ns),
        misses: p.map(|p| p.invalidation_misses),
        window_misses: Some(st.misses_in),
        warmed_blocks: p.map(|p| p.warmed_blocks),
        precision: p.and_then(|p| {
            (p.warmed_blocks > 0).then(|| p.warmed_hits as f64 / p.warmed_blocks as f64)
        }),
        warmed_hits: p.map(|p| p.warmed_hits),
        misses_during_jobs: p.map(|p| p.invalidation_misses_during),
        misses_after_flush: p.map(|p| p.invalidation_misses_flush),
        misses_by_scans: p.map(|p| p.invalidation_misses_scan),
        misses_1s: p.map(|p| p.invalidation_misses_1s),
        misses_60s: p.map(|p| p.invalidation_misses_60s),
        outside_misses: Some(st.misses_out),
        invalidated_blocks: p.map(|p| p.invalidated_blocks),
        evicted_blocks: p.map(|p| p.evicted_blocks),
        model_errors: p.map(|p| p.model_errors),
        jobs_with_model: p.map(|p| p.jobs_with_model),
        alpha_ms_per_block: p.map(|p| p.alpha_ms_per_block),
        beta: p.map(|p| p.beta),
        flushes: ended(JobKind::Flush),
        compactions: ended(JobKind::Compaction),
        window_seconds: st.inside_s,
        outside_seconds: st.outside_s,
        hit_ratio_in_windows: st.hit_in(),
        hit_ratio_outside: st.hit_out(),
        qps_in_windows: st.qps_in(),
        qps_outside: st.qps_out(),
        median_p95_us: st.median_p95_us,
        p95_in_windows_us: st.p95_in_us,
        p99_in_windows_us: st.p99_in_us,
        p95_spike_seconds: st.spike_s,
        p95_spike_seconds_in_windows: st.spike_s_in,
        recovery_ms: windows::median(&rec).map(|s| (s * 1000.0).round() as u64),
        recoveries: rec.len(),
    }
}

/// How long the engine must report no background work to count as settled (a
/// compaction can start right after another ends).
const QUIET: Duration = Duration::from_millis(300);

/// Waits until the engine reports no flush or compaction for [`QUIET`], or 10 minutes
/// pass; returns when the quiet began (when the last job was last seen running), so
/// the wait itself is not counted as work.
pub(crate) fn settle(engine: &dyn Engine) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut quiet_since: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let c = engine.counters();
        if c.flushes_running + c.compactions_running == 0 {
            let since = *quiet_since.get_or_insert(now);
            if now.duration_since(since) >= QUIET {
                return since;
            }
        } else {
            quiet_since = None;
        }
        if now >= deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn read_cache_summary(
    g0: &crate::engines::ReadCacheGauges,
    g1: &crate::engines::ReadCacheGauges,
    point_reads: u64,
) -> ReadCacheSummary {
    let d = |a: u64, b: u64| b.saturating_sub(a);
    let (kv_hits, kp_hits) = (d(g0.kv_hits, g1.kv_hits), d(g0.kp_hits, g1.kp_hits));
    let (bh, bm) = (
        d(g0.block_hits, g1.block_hits),
        d(g0.block_misses, g1.block_misses),
    );
    let per_point = |x: u64| (point_reads > 0).then(|| x as f64 / point_reads as f64);
    ReadCacheSummary {
        policy: g1.policy.clone(),
        capacity: g1.capacity,
        kv_bytes: g1.kv_bytes,
        kp_bytes: g1.kp_bytes,
        block_bytes: g1.block_bytes,
        ghost_bytes: g1.ghost_bytes,
        kv_hits,
        kp_hits,
        block_hits: bh,
        block_misses: bm,
        ghost_hits: d(g0.ghost_hits, g1.ghost_hits),
        foreground_reads: d(g0.foreground_reads, g1.foreground_reads),
        point_reads,
        kv_hit_ratio: per_point(kv_hits),
        kp_hit_ratio: per_point(kp_hits),
        block_hit_ratio: (bh + bm > 0).then(|| bh as f64 / (bh + bm) as f64),
    }
}

#[allow(clippy::too_many_arguments)]
fn timed(
    ctx: &Ctx<'_>,
    op: &Op,
    kbuf: &mut [u8],
    salt: u64,
    lat: &mut OpLatencies,
    class: OpClass,
    missions: Option<&Missions<'_>>,
    live: &Live,
) -> Result<()> {
    let t = clock::now();
    ctx.exec(op, kbuf, salt)?;
    let end = clock::now();
    let nanos = end.duration_since(t).as_nanos() as u64;
    lat.record(op.kind.name(), nanos);
    lat.record_phase(op.phase, t, nanos, class);
    if let Some(m) = missions {
        m.record(op.phase, class.write, nanos);
    }
    live.record(nanos);
    // Only a virtual run (one thread) samples inline: on the wall clock the workers must
    // not share a lock per request.
    if ctx.virt.is_some() {
        if let Some(s) = live.inline.lock().as_mut() {
            s.poll(ctx.engine, live, end);
        }
    }
    Ok(())
}

/// readwhilewriting's writer: uniform overwrites of loaded keys until the readers finish.
fn background_writer(
    ctx: &Ctx<'_>,
    spec: &WorkloadSpec,
    keys: &KeyCounter,
    done: &std::sync::atomic::AtomicBool,
) -> Result<OpLatencies> {
    let mut rng = Rng::derive(spec.seed, 0xB6);
    let mut lat = OpLatencies::default();
    let mut kbuf = vec![0u8; spec.key_size];
    let mut salt = 1u64 << 40;
    while !done.load(Ordering::Acquire) {
        let op = Op {
            kind: OpKind::Update,
            key: rng.below(keys.get().max(1)),
            len: spec.value_size.draw(&mut rng),
            phase: 0,
        };
        salt += 1;
        let t = Instant::now();
        ctx.exec(&op, &mut kbuf, salt)?;
        lat.record("update", t.elapsed().as_nanos() as u64);
    }
    Ok(lat)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value is half redundant, as db_bench's at compression ratio 0.5: a byte
    /// repeats 50 bytes on within its piece, and pieces differ.
    #[test]
    fn values_are_half_redundant() {
        let v = Values::new(7, 4096);
        assert!(v.buf.len() >= VALUE_POOL + 4096);
        for piece in v.buf.chunks_exact(PIECE).take(1000) {
            assert_eq!(piece[..PIECE_RANDOM], piece[PIECE_RANDOM..]);
        }
        assert_ne!(v.buf[..PIECE_RANDOM], v.buf[PIECE..PIECE + PIECE_RANDOM]);
        let a = v.get(1, 2, 1000);
        assert_eq!(a.len(), 1000);
        assert_eq!(a, Values::new(7, 4096).get(1, 2, 1000), "seeded");
    }
}
