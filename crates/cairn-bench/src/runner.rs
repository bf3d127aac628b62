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
use std::sync::atomic::{AtomicU64, Ordering};
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

    let tmp;
    let parent = match &req.data_dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::Builder::new().prefix("cairn-bench-").tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    // A directory named after the engine that this run owns outright, so clearing it is safe.
    let dir = parent.join(format!("cairn-bench-{}", req.engine.file_stem()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    let rss_at_open = current_rss_bytes();
    // The access statistics' clock, stopped while the model trains; the oracle's future.
    let clock = Arc::new(match req.config.clock {
        crate::engines::ClockKind::Virtual => PausableClock::on_virtual_time(),
        crate::engines::ClockKind::Wall => PausableClock::new(),
    });
    if req.engine.is_oracle() && spec.warmup_secs.is_some() {
        bail!(
            "cairn:oracle reads the whole stream up front, so its warm-up must be a fixed \
             count: give --warmup-ops, or list another engine first in `compare` (which pins \
             the first engine's count)"
        );
    }
    let oracle = req.engine.is_oracle().then(|| {
        Arc::new(OracleSource::new(
            &plan,
            spec,
            &keyspace,
            req.config.leaper_slot_ms,
            clock.clone(),
        ))
    });
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
    let ctx = Ctx {
        engine: engine.as_ref(),
        keys: &keyspace,
        values: &values,
        tally: &tally,
        progress: op_count.as_deref(),
        virt: virt.as_ref(),
    };
    let settle = |engine: &dyn Engine| -> Result<Instant> {
        match &virt {
            Some(v) => v.settle(engine),
            None => Ok(settle(engine)),
        }
    };
    let name = req.engine.to_string();

    // Load phase: every record in a seeded random order (fills are the measured phase).
    let mut order: Vec<u64> = (0..spec.records).collect();
    if spec.workload != WorkloadName::FillSeq {
        Rng::derive(spec.seed, 0x10AD).shuffle(&mut order);
    }
    let load_start = clock::now();
    let c_start = engine.counters();
    let mut load = LoadPhase::default();
    if !spec.workload.is_fill() {
        let pb = progress(spec.records, format!("{name} load"));
        let mut kbuf = vec![0u8; spec.key_size];
        let mut vrng = Rng::derive(spec.seed, 0x5123);
        for (i, &idx) in order.iter().enumerate() {
            keyspace.encode_into(idx, &mut kbuf);
            let len = spec.value_size.draw(&mut vrng);
            ctx.put(&kbuf, idx, 0, len)?;
            ctx.op_done()?;
            if (i as u64).is_multiple_of(PROGRESS_BATCH) {
                pb.set_position(i as u64);
            }
        }
        engine.flush()?;
        if spec.settle {
            settle(engine.as_ref())?;
        }
        pb.finish_and_clear();
        load = LoadPhase {
            records: spec.records,
            seconds: clock::now().duration_since(load_start).as_secs_f64(),
            storage: storage(&engine.counters().since(&c_start)),
        };
    }

    // One op generator per worker, shared by the warm-up and the measured part.
    let key_count = KeyCounter::new(spec.records);
    let mut gens: Vec<OpGen> = if spec.workload.is_fill() {
        Vec::new()
    } else {
        (0..spec.threads)
            .map(|t| plan.stream(spec.seed, t, spec.threads, spec.value_size, &key_count))
            .collect()
    };
    let mut warmup_ops = 0;
    let leaper = if plan.warmup > 0 {
        if let Some(o) = &oracle {
            o.mark();
        }
        let warm_start = clock::now();
        warmup_ops = warm_up(
            &ctx,
            &mut gens,
            spec.key_size,
            spec.warmup_secs,
            &format!("{name} warm-up"),
        )?;
        // Train on the warm-up's access trace while the access clock stands still, then
        // let every engine's background work finish so all measure from a quiet tree.
        clock.pause();
        let warm_jobs: Vec<f64> = engine
            .jobs()
            .iter()
            .filter(|j| j.kind != JobKind::Move && j.start >= warm_start)
            .filter_map(|j| Some(j.end?.duration_since(j.start).as_secs_f64()))
            .collect();
        let work = parent.join(format!("leaper-{}", req.engine.file_stem()));
        let trained = crate::leaper::train::train(
            engine.as_ref(),
            &work,
            &req.leaper,
            req.config.leaper_slot_ms,
            req.config.window_ms(),
            &warm_jobs,
        );
        if !req.keep_data {
            std::fs::remove_dir_all(&work).ok();
        }
        // Without a model the Leaper engine runs on its fallback; the JSON says why.
        let mut trained = trained.unwrap_or_else(|e| {
            eprintln!("warning: {name}: no Leaper model, measuring without one: {e:#}");
            Some(crate::leaper::LeaperTraining {
                slot_ms: req.config.leaper_slot_ms,
                error: Some(format!("{e:#}")),
                ..Default::default()
            })
        });
        if let Some(t) = &mut trained {
            t.warmup_ops = warmup_ops;
        }
        settle(engine.as_ref())?;
        clock.resume();
        trained
    } else {
        None
    };

    // Periodic retraining: every N measured ops the learner trains again on the trace so
    // far (its latest slots) while the access clock stands still; one worker only, so no
    // op runs meanwhile.
    let retrain_every = req
        .leaper
        .retrain_ops
        .filter(|_| leaper.as_ref().is_some_and(|t| t.loaded));
    if retrain_every.is_some() && spec.threads > 1 {
        bail!("--leaper-retrain-ops needs --threads 1 (no op may run while the learner trains)");
    }
    let retrain_settings = crate::leaper::LeaperSettings {
        k: leaper.as_ref().map(|t| t.k),
        ..req.leaper.clone()
    };
    let retrains = parking_lot::Mutex::new(Vec::new());
    let retrain = |at_op: u64| {
        clock.pause();
        let work = parent.join(format!("leaper-{}-{at_op}", req.engine.file_stem()));
        let r = crate::leaper::train::train(
            engine.as_ref(),
            &work,
            &retrain_settings,
            req.config.leaper_slot_ms,
            req.config.window_ms(),
            &[],
        );
        if !req.keep_data {
            std::fs::remove_dir_all(&work).ok();
        }
        clock.resume();
        retrains
            .lock()
            .push(crate::leaper::train::Retrain::from_result(at_op, r));
    };

    // Measured phase.
    if let Some(o) = &oracle {
        o.mark();
    }
    let p0 = engine.prefetch();
    let block_trace = engine.block_trace();
    if let Some(t) = &block_trace {
        t.start();
    }
    let c0 = engine.counters();
    let g0 = engine.read_cache();
    let io0 = ProcIo::now();
    let cpu0 = CpuTime::now();
    if let Some(v) = &virt {
        v.begin(engine.as_ref(), tally.scanned.load(Ordering::Relaxed));
    }
    let live = Live::default();
    let period = Duration::from_millis(req.timeline_period_ms.max(10));
    let total = if spec.workload.is_fill() {
        spec.records
    } else {
        plan.total_ops()
    };
    let pb = progress(total, format!("{name} {}", spec.workload.name()));
    // RusKey's per-mission series: for multi-phase workloads, or when a size is given.
    let want_missions =
        !spec.workload.is_fill() && (plan.phases.len() > 1 || req.config.mission_ops.is_some());
    let mission_ops = want_missions.then(|| req.config.mission_ops());
    let t0 = clock::now();
    let tracker = mission_ops
        .map(|m| Missions::new(m, Some(engine.as_ref()), t0).with_k_change(req.config.set_k_at));
    let missions = tracker.as_ref();
    let (lat, bg, rows, last_op, settled) = std::thread::scope(|s| -> Result<_> {
        // On the virtual clock the request loop takes the rows, at virtual times.
        let sampler = match &virt {
            Some(_) => {
                *live.inline.lock() = Some(timeline::Sampler::new(engine.as_ref(), period, t0));
                None
            }
            None => Some(s.spawn(|| timeline::sample(engine.as_ref(), &live, period, t0))),
        };
        let result = (|| -> Result<(OpLatencies, Option<OpLatencies>)> {
            if spec.workload.is_fill() {
                // The records in load order, dealt round-robin to the writer threads
                // (db_bench's --threads: group commit gets concurrent writers).
                let threads = spec.threads.max(1);
                let lens: Vec<usize> = {
                    let mut vrng = Rng::derive(spec.seed, 0x5123);
                    order
                        .iter()
                        .map(|_| spec.value_size.draw(&mut vrng))
                        .collect()
                };
                let lat = std::thread::scope(|s2| -> Result<OpLatencies> {
                    let workers: Vec<_> = (0..threads)
                        .map(|t| {
                            let (ctx, live, pb, order, lens) = (&ctx, &live, &pb, &order, &lens);
                            s2.spawn(move || -> Result<OpLatencies> {
                                let mut lat = OpLatencies::default();
                                let mut kbuf = vec![0u8; spec.key_size];
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
                                    timed(ctx, &op, &mut kbuf, 0, &mut lat, class, None, live)?;
                                    if (n as u64 + 1).is_multiple_of(PROGRESS_BATCH) {
                                        pb.inc(PROGRESS_BATCH);
                                    }
                                }
                                Ok(lat)
                            })
                        })
                        .collect();
                    let mut lat = OpLatencies::default();
                    for w in workers {
                        lat.merge(&w.join().expect("fill worker panicked")?);
                    }
                    Ok(lat)
                })?;
                return Ok((lat, None));
            }
            let done = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s2| {
                let writer = (spec.workload == WorkloadName::ReadWhileWriting).then(|| {
                    let (ctx, done, keys) = (&ctx, &done, &key_count);
                    s2.spawn(move || background_writer(ctx, spec, keys, done))
                });
                let workers: Vec<_> = gens
                    .into_iter()
                    .enumerate()
                    .map(|(t, gen)| {
                        let (ctx, live, pb, plan) = (&ctx, &live, &pb, &plan);
                        s2.spawn(move || -> Result<OpLatencies> {
                            let mut lat = OpLatencies::default();
                            let mut kbuf = vec![0u8; spec.key_size];
                            // This worker's share of each phase and its ops so far there,
                            // to tell the phase's last half ("after convergence").
                            let threads = spec.threads.max(1) as u64;
                            let share: Vec<u64> = plan
                                .phases
                                .iter()
                                .map(|p| p.ops / threads + u64::from((t as u64) < p.ops % threads))
                                .collect();
                            let mut seen = vec![0u64; share.len()];
                            let mut gen = gen.peekable();
                            let mut i = 0u64;
                            // Generating an op early takes an insert's key early, which
                            // other workers would then see before it is written: look
                            // ahead only when this is the one worker.
                            let look_ahead = threads == 1;
                            while let Some(op) = gen.next() {
                                if look_ahead {
                                    if let Some(next) = gen.peek() {
                                        ctx.keys.prefetch(next.key);
                                    }
                                }
                                let k = seen.get_mut(op.phase);
                                let tail = match k {
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
                                timed(
                                    ctx,
                                    &op,
                                    &mut kbuf,
                                    op.phase as u64 + 1,
                                    &mut lat,
                                    class,
                                    missions,
                                    live,
                                )?;
                                i += 1;
                                if i.is_multiple_of(PROGRESS_BATCH) {
                                    pb.inc(PROGRESS_BATCH);
                                }
                                // Not after the last op: nothing would use the model.
                                if retrain_every.is_some_and(|n| i.is_multiple_of(n))
                                    && gen.peek().is_some()
                                {
                                    retrain(i);
                                }
                            }
                            Ok(lat)
                        })
                    })
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
        })();
        let last_op = clock::now();
        // A write-only run's work is not done at its last write: time the flushes and
        // compactions it caused too (the timeline keeps sampling them).
        let settled = match &result {
            Ok(_) if spec.workload.is_fill() || spec.workload == WorkloadName::Overwrite => engine
                .flush()
                .and_then(|()| settle(engine.as_ref()).map(Some)),
            _ => Ok(None),
        };
        live.stop.store(true, std::sync::atomic::Ordering::Release);
        let rows = match sampler {
            Some(s) => s.join().expect("sampler panicked"),
            None => {
                let mut inline = live.inline.lock().take().expect("the inline sampler");
                inline.take(engine.as_ref(), &live, clock::now(), true);
                inline.rows
            }
        };
        let (lat, bg) = result?;
        Ok((lat, bg, rows, last_op, settled?))
    })?;
    let seconds = last_op.duration_since(t0).as_secs_f64();
    let settled_seconds = settled.map(|t| t.duration_since(t0).as_secs_f64());
    pb.finish_and_clear();
    let cpu = CpuTime::now().since(&cpu0);
    let vreport = virt.as_ref().map(|v| v.report_with(&rows));
    let c1 = engine.counters();
    let g1 = engine.read_cache();
    let p1 = engine.prefetch();
    let engine_stats = engine.extra_stats();
    let background_jobs = match p1 {
        // Engines that report their jobs as they happen.
        Some(_) => windows::from_spans(&engine.jobs(), t0, seconds),
        None => windows::from_timeline(&rows),
    };
    let window_source =
        req.window_source
            .clone()
            .unwrap_or_else(|| match req.config.invalidation_window_ms {
                Some(_) => "--invalidation-window-ms".into(),
                None => "cairn's default".into(),
            });
    let mut invalidation = invalidation_summary(
        &rows,
        &background_jobs,
        p1.map(|p1| p1.since(&p0.unwrap_or_default())),
        req.config.window_ms(),
        window_source,
        period.as_secs_f64(),
    );
    // Precision since the engine opened: a block counts as hit once, so hits never exceed
    // the blocks warmed. Counted from a later point, blocks warmed before it (during the
    // load, by warm-all and the oracle) and hit after it put the ratio above 1.
    if let Some(p) = p1 {
        invalidation.precision =
            (p.warmed_blocks > 0).then(|| p.warmed_hits as f64 / p.warmed_blocks as f64);
    }
    let io = ProcIo::now().since(&io0);
    let d = c1.since(&c0);
    let life = c1.since(&c_start);
    if let Some(m) = d.data_block_misses {
        per_read_misses(&mut invalidation, &lat, m);
    }
    if let Some(b) = block_trace.and_then(|t| t.bounds(req.config.cache_bytes)) {
        let reads = invalidation.reads.unwrap_or(0);
        let per_read = |m: u64| (reads > 0).then(|| m as f64 / reads as f64);
        invalidation.belady_misses_per_read = per_read(b.demand_misses);
        invalidation.belady_warmed_misses_per_read = per_read(b.warmed_misses);
    }

    let missions = tracker
        .map(Missions::finish)
        .transpose()?
        .unwrap_or_default();
    let user_bytes = tally.user_bytes.load(Ordering::Relaxed);
    let disk_bytes = dir_size(&dir);
    engine.close()?;
    let peak_rss = peak_rss_bytes();
    if !req.keep_data {
        std::fs::remove_dir_all(&dir).ok();
    }

    let mut per_op: std::collections::BTreeMap<_, _> = lat
        .by_op
        .iter()
        .map(|(k, h)| (k.clone(), summarize(h)))
        .collect();
    let background_write_ops = bg.as_ref().map_or(0, |b| b.all.len());
    if let Some(b) = &bg {
        per_op.insert("background_update".to_string(), summarize(&b.all));
    }
    let ops = lat.all.len();
    let phases = lat
        .phases
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let p = p.as_ref()?;
            let secs = p.end.duration_since(p.start).as_secs_f64();
            let tail_secs = p.tail_span.map(|(a, b)| b.duration_since(a).as_secs_f64());
            Some(PhaseResult {
                index: i,
                mix: plan
                    .phases
                    .get(i)
                    .map_or("insert=1".to_string(), |ph| ph.mix.to_string()),
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
                converged_ops_per_sec: tail_secs.filter(|s| *s > 0.0).map(|s| p.tail.n as f64 / s),
            })
        })
        .collect();
    let lookups = d.cache_hits + d.cache_misses;
    let point_reads = ["read", "rmw"]
        .iter()
        .filter_map(|k| lat.by_op.get(*k))
        .map(|h| h.len())
        .sum();
    let read_cache = g1.map(|g1| read_cache_summary(&g0.unwrap_or_default(), &g1, point_reads));
    Ok((
        RunResult {
            engine: name,
            workload: spec.workload.name(),
            records: spec.records,
            ops,
            seconds,
            ops_per_sec: if seconds > 0.0 {
                ops as f64 / seconds
            } else {
                0.0
            },
            settled_seconds,
            settled_ops_per_sec: settled_seconds.filter(|s| *s > 0.0).map(|s| ops as f64 / s),
            stall_seconds: d.stall_micros as f64 / 1e6,
            counters_source: counters_source(&req.engine, &req.config).to_string(),
            engine_version: req.engine.version(),
            repeats: None,
            latency_us: summarize(&lat.all),
            per_op_latency_us: per_op,
            latency_cdf_us: cdf(&lat.all),
            phases,
            storage: storage(&d),
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
            load,
            disk_bytes,
            peak_rss_bytes: peak_rss,
            rss_at_open_bytes: rss_at_open,
            rss_note: "peak RSS of the whole process (VmHWM): harness key tables and value pool \
                       included; per engine only when each engine runs in its own process"
                .to_string(),
            os_io: io,
            reads_found: tally.found.load(Ordering::Relaxed),
            reads_missing: tally.missing.load(Ordering::Relaxed),
            scan_entries: tally.scanned.load(Ordering::Relaxed),
            background_write_ops,
            threads: spec.threads,
            spec: spec.clone(),
            config: req.config.clone(),
            started_at_unix,
            cpu,
            read_cache,
            engine_stats,
            invalidation: Some(invalidation),
            background_jobs,
            leaper: leaper.map(|mut t| {
                t.retrains = std::mem::take(&mut *retrains.lock());
                t
            }),
            warmup_ops,
            mission_ops,
            missions,
            placement: None,
            awpi: None,
            clock: req.config.clock.name().to_string(),
            virtual_clock: vreport,
        },
        rows,
    ))
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
