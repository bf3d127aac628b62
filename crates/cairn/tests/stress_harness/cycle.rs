//! One cycle on a directory: open with faults, run the actors, end (clean close, drop,
//! power loss or a killed child process), reopen without faults and check the whole state
//! against the oracle, and carry the verified state into the next cycle.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn::storage::FaultInjector;
use cairn::{ColumnFamily, Db, Options};
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::actors::{Chaos, Counts, Journal, Reader, Shared, Writer};
use super::model::{
    self, cf_of, check_recovered, decode_value, key_bytes, parse_key, Durability, Expected, Obs,
    OpRec, Outcome, KEYS, WRITERS,
};
use super::setup::{self, End, Spec};

/// Reader threads of a concurrent cycle.
pub const READERS: usize = 3;
/// Ops a writer makes at most in one cycle (bounds the oracle's memory).
const MAX_WRITER_OPS: usize = 50_000;

/// A directory and the state its last verified reopen found.
pub struct DirCtx {
    /// Temporary root: the database in `db/`, what a preset needs beside it.
    pub root: PathBuf,
    pub dir: PathBuf,
    pub preset: String,
    pub dir_seed: u64,
    pub opts: Options,
    pub base: Vec<Obs>,
    /// Cycles begun on this directory (stamps carry it).
    pub cycle: u32,
}

impl DirCtx {
    /// A new database with its second column family.
    pub fn create(root: &Path, preset: &str, dir_seed: u64) -> Result<DirCtx, String> {
        setup::prepare_root(preset, root);
        let opts = setup::dir_options(preset, root, dir_seed);
        let dir = root.join("db");
        let db = Db::open(
            &dir,
            Options {
                background_work: false,
                ..opts.clone()
            },
        )
        .map_err(|e| format!("create: {e}"))?;
        db.create_cf("b").map_err(|e| format!("create_cf: {e}"))?;
        db.close().map_err(|e| format!("close: {e}"))?;
        Ok(DirCtx {
            root: root.to_path_buf(),
            dir,
            preset: preset.to_string(),
            dir_seed,
            opts,
            base: vec![None; KEYS],
            cycle: 0,
        })
    }

    /// Whether values go to value logs (their files can take faults).
    pub fn vlog(&self) -> bool {
        self.opts.value_threshold.is_some()
    }
}

/// What the engine did in a cycle (from its statistics before the end), to show that
/// the cycles reach flushes, compactions and each preset's own machinery.
#[derive(Clone, Debug, Default)]
pub struct Work {
    pub flushes: u64,
    pub compactions: u64,
    pub subcompactions: u64,
    /// Most compaction jobs seen running at once.
    pub jobs_peak: u64,
    pub background_errors: u64,
    pub learned_tables: u64,
    pub vlog_gc_rewrites: u64,
    pub tuner_missions: u64,
    pub warmed_blocks: u64,
    pub proactive_compactions: u64,
}

impl Work {
    fn of(db: &Db) -> Work {
        let s = db.stats();
        Work {
            flushes: s.flushes,
            compactions: s.compactions,
            subcompactions: s.subcompactions,
            jobs_peak: s.compaction_jobs_peak,
            background_errors: s.background_errors,
            learned_tables: s.learned_tables,
            vlog_gc_rewrites: s.vlog.gc_rewrites,
            tuner_missions: s.tuner.missions,
            warmed_blocks: s.prefetch.warmed_blocks,
            proactive_compactions: s.proactive_compactions,
        }
    }

    pub fn add(&mut self, o: &Work) {
        self.flushes += o.flushes;
        self.compactions += o.compactions;
        self.subcompactions += o.subcompactions;
        self.jobs_peak = self.jobs_peak.max(o.jobs_peak);
        self.background_errors += o.background_errors;
        self.learned_tables += o.learned_tables;
        self.vlog_gc_rewrites += o.vlog_gc_rewrites;
        self.tuner_missions += o.tuner_missions;
        self.warmed_blocks += o.warmed_blocks;
        self.proactive_compactions += o.proactive_compactions;
    }
}

/// What a cycle did and found.
#[derive(Clone, Debug, Default)]
pub struct CycleStats {
    pub work: Work,
    pub ops: u64,
    pub acked: u64,
    pub failed: u64,
    pub faults: u64,
    pub power_losses: u64,
    pub kills: u64,
    pub reopen_checks: u64,
    pub lost_acked: u64,
    pub dropped_unsynced: u64,
    pub wrong: u64,
    pub panics: u64,
    /// Context for failure messages.
    pub note: String,
    /// What went wrong, one line each.
    pub failures: Vec<String>,
}

impl CycleStats {
    /// Adds `o`'s counts and work (not its failure text).
    pub fn add_counts(&mut self, o: &CycleStats) {
        self.work.add(&o.work);
        self.ops += o.ops;
        self.acked += o.acked;
        self.failed += o.failed;
        self.faults += o.faults;
        self.power_losses += o.power_losses;
        self.kills += o.kills;
        self.reopen_checks += o.reopen_checks;
        self.lost_acked += o.lost_acked;
        self.dropped_unsynced += o.dropped_unsynced;
        self.wrong += o.wrong;
        self.panics += o.panics;
    }

    pub fn failed_check(&self) -> bool {
        !self.failures.is_empty()
    }

    fn wrong(&mut self, msg: String) {
        self.wrong += 1;
        self.failures.push(msg);
    }
}

/// How to start a child process that runs a kill cycle (the running binary, re-executed
/// with these arguments).
#[derive(Clone, Debug)]
pub struct ChildCmd {
    pub exe: PathBuf,
    pub args: Vec<String>,
}

pub fn run_cycle(ctx: &mut DirCtx, spec: &Spec, child: Option<&ChildCmd>) -> CycleStats {
    ctx.cycle += 1;
    match (spec.end, child) {
        (End::Kill, Some(c)) => super::child::kill_cycle(ctx, spec, c),
        _ => local_cycle(ctx, spec),
    }
}

/// Opens the directory with this cycle's options and threads; retried while a killed
/// child's lock lingers.
pub fn open_db(dir: &Path, opts: Options) -> cairn::Result<Db> {
    let t = Instant::now();
    loop {
        match Db::open(dir, opts.clone()) {
            Err(cairn::Error::Locked(_)) if t.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            r => return r,
        }
    }
}

/// The manifest `CURRENT` names now.
pub fn current_manifest(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("CURRENT"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

fn families(db: &Db) -> Result<[ColumnFamily; 2], String> {
    let b = db.cf("b").ok_or("column family b is gone")?;
    Ok([db.default_cf(), b])
}

fn local_cycle(ctx: &mut DirCtx, spec: &Spec) -> CycleStats {
    let mut stats = CycleStats::default();
    let faults = Arc::new(FaultInjector::new());
    let run = open_phase(ctx, spec, &faults).and_then(|db| {
        let run = run_actors(ctx, spec, &db, &faults, Journal::Local)?;
        Ok((db, run))
    });
    let (db, run) = match run {
        Ok(r) => r,
        Err(e) => {
            stats.wrong(e);
            return stats;
        }
    };
    stats.ops = run.counts.ops.load(Ordering::Relaxed);
    stats.acked = run.counts.acked.load(Ordering::Relaxed);
    stats.failed = run.counts.failed.load(Ordering::Relaxed);
    for w in &run.wrong {
        stats.wrong(w.clone());
    }
    stats.work = Work::of(&db);
    let durability = end_phase(db, spec, &faults, &run, &mut stats);
    stats.faults = faults.injected();
    if run.panicked {
        // A writer's log died with it: the reopened state cannot be judged.
        stats.failures.push("an actor thread panicked".into());
        return stats;
    }
    verify_phase(ctx, &run.logs, durability, &mut stats);
    stats
}

/// Opens with this cycle's options and plans its faults (and, in a deterministic cycle
/// that ends in a power loss, the cut: after a number of operations).
fn open_phase(ctx: &DirCtx, spec: &Spec, faults: &Arc<FaultInjector>) -> Result<Db, String> {
    let db = open_db(&ctx.dir, spec.options(&ctx.opts, Some(faults.clone())))
        .map_err(|e| format!("open after a verified reopen failed: {e}"))?;
    spec.faults.apply(faults, &current_manifest(&ctx.dir));
    if spec.det && spec.end == End::PowerLoss {
        faults.cut_power_after(spec.cut_after * spec.steps / 200);
    }
    Ok(db)
}

/// What the actors of a cycle left.
pub struct Run {
    pub logs: Vec<Vec<OpRec>>,
    pub counts: Counts,
    pub wrong: Vec<String>,
    pub sync_point: u64,
    pub cut_planned: u64,
    pub panicked: bool,
}

/// Runs the actors on `db`, from the state the directory holds now.
pub fn run_actors(
    ctx: &DirCtx,
    spec: &Spec,
    db: &Db,
    faults: &FaultInjector,
    journal: Journal,
) -> Result<Run, String> {
    let sh = Shared {
        db,
        faults,
        exp: Expected::new(&ctx.base),
        cfs: families(db)?,
        cycle: ctx.cycle,
        preset: &ctx.preset,
        bg: spec.bg,
        det: spec.det,
        journal,
        root: ctx.root.clone(),
        stop: AtomicBool::new(false),
        counts: Counts::default(),
        wrong: Mutex::new(Vec::new()),
        sync_point: AtomicU64::new(0),
        cut_planned: AtomicU64::new(0),
    };
    let (logs, panicked) = if spec.det {
        (run_det(&sh, spec), false)
    } else {
        run_concurrent(&sh, spec, faults)
    };
    let wrong = std::mem::take(&mut *sh.wrong.lock());
    Ok(Run {
        logs,
        wrong,
        sync_point: sh.sync_point.load(Ordering::SeqCst),
        cut_planned: sh.cut_planned.load(Ordering::SeqCst),
        counts: sh.counts,
        panicked,
    })
}

fn actor_rng(spec: &Spec, actor: u64) -> SmallRng {
    SmallRng::seed_from_u64(model::mix(spec.seed ^ (actor << 40)))
}

/// One thread takes every step, the actor chosen by the seed: with background work off
/// the cycle's operations replay exactly.
fn run_det(sh: &Shared, spec: &Spec) -> Vec<Vec<OpRec>> {
    let mut rng = actor_rng(spec, 99);
    let mut writers: Vec<Writer> = (0..WRITERS)
        .map(|w| Writer::new(w, actor_rng(spec, w as u64)))
        .collect();
    let mut readers: Vec<Reader> = (0..READERS)
        .map(|r| Reader::new(actor_rng(spec, 10 + r as u64)))
        .collect();
    let mut chaos = Chaos::new(actor_rng(spec, 20));
    for _ in 0..spec.steps {
        spec.clock.advance(1);
        match rng.random_range(0..100) {
            0..=59 => writers[rng.random_range(0..WRITERS)].step(sh),
            60..=91 => readers[rng.random_range(0..READERS)].step(sh),
            _ => chaos.step(sh),
        }
    }
    writers.into_iter().map(|w| w.log).collect()
}

/// Every actor on its own thread for the cycle's time; a power cut planned on the way.
/// Returns the writers' logs and whether a thread panicked.
fn run_concurrent(sh: &Shared, spec: &Spec, faults: &FaultInjector) -> (Vec<Vec<OpRec>>, bool) {
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let mut a = Writer::new(w, actor_rng(spec, w as u64));
                s.spawn(move || {
                    while !sh.stop.load(Ordering::Relaxed) && a.log.len() < MAX_WRITER_OPS {
                        a.step(sh);
                    }
                    a.log
                })
            })
            .collect();
        let chaos_threads = if spec.bg { 1 } else { 2 };
        let others: Vec<_> = (0..READERS)
            .map(|r| {
                let mut a = Reader::new(actor_rng(spec, 10 + r as u64));
                s.spawn(move || {
                    while !sh.stop.load(Ordering::Relaxed) {
                        a.step(sh);
                    }
                })
            })
            .chain((0..chaos_threads).map(|c| {
                let mut a = Chaos::new(actor_rng(spec, 20 + c));
                s.spawn(move || {
                    while !sh.stop.load(Ordering::Relaxed) {
                        a.step(sh);
                    }
                })
            }))
            .collect();
        run_clock(sh, spec, faults);
        let mut panicked = false;
        let logs = writers
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    panicked = true;
                    Vec::new()
                })
            })
            .collect();
        for h in others {
            panicked |= h.join().is_err();
        }
        (logs, panicked)
    })
}

/// Lets the actors run for the cycle's time, cutting the power on the way if the cycle
/// ends in a power loss, then stops them.
fn run_clock(sh: &Shared, spec: &Spec, faults: &FaultInjector) {
    let run = Duration::from_millis(spec.run_ms);
    if spec.end == End::PowerLoss {
        let before = run.mul_f64(spec.cut_at);
        std::thread::sleep(before);
        sh.cut_planned.store(sh.exp.tick(), Ordering::SeqCst);
        faults.cut_power_after(spec.cut_after);
        std::thread::sleep(run.saturating_sub(before));
        faults.cut_power_after(0);
    } else {
        std::thread::sleep(run);
    }
    sh.stop.store(true, Ordering::Relaxed);
}

/// Ends the session as the cycle says; returns what recovery must keep.
fn end_phase(
    db: Db,
    spec: &Spec,
    faults: &FaultInjector,
    run: &Run,
    stats: &mut CycleStats,
) -> Durability {
    match spec.end {
        End::Close => {
            stats.ops += 1;
            if db.close().is_err() {
                stats.failed += 1;
            }
            Durability::All
        }
        End::Drop | End::Kill => {
            drop(db);
            Durability::All
        }
        End::PowerLoss => {
            faults.cut_power_after(0);
            drop(db);
            faults
                .apply_power_loss()
                .expect("make the directory what a power loss leaves");
            stats.power_losses += 1;
            // A synced write makes every write acknowledged before it was issued durable.
            let synced = run
                .logs
                .iter()
                .flatten()
                .filter(|o| o.sync && matches!(o.outcome, Outcome::Acked(_)))
                .map(|o| o.issued)
                .max()
                .unwrap_or(0);
            stats.note = format!(
                "sync points: flush {}, synced write {synced}; power cut planned at {}",
                run.sync_point, run.cut_planned
            );
            Durability::SyncedBefore(run.sync_point.max(synced))
        }
    }
}

/// Reopens without faults, reads everything, checks it against the writers' logs, and
/// makes it the next cycle's base.
pub fn verify_phase(
    ctx: &mut DirCtx,
    logs: &[Vec<OpRec>],
    durability: Durability,
    stats: &mut CycleStats,
) {
    let opts = Options {
        background_work: false,
        ..ctx.opts.clone()
    };
    let db = match open_db(&ctx.dir, opts) {
        Ok(db) => db,
        Err(e) => return stats.wrong(format!("reopen failed: {e}")),
    };
    let found = match read_state(&db) {
        Ok(f) => f,
        Err(e) => return stats.wrong(format!("after reopen: {e}")),
    };
    if let Err(e) = db.close() {
        return stats.wrong(format!("close without faults failed: {e}"));
    }
    let v = check_recovered(&ctx.base, logs, &found, durability, ctx.cycle);
    stats.lost_acked += v.lost_acked;
    stats.dropped_unsynced += v.dropped_unsynced;
    if v.errors.is_empty() {
        stats.reopen_checks += 1;
        ctx.base = found;
    }
    let note = std::mem::take(&mut stats.note);
    for e in v.errors {
        stats.wrong(format!("after reopen ({durability:?}; {note}): {e}"));
    }
}

/// Every key by a get, checked against full scans of both column families.
pub fn read_state(db: &Db) -> Result<Vec<Obs>, String> {
    let cfs = families(db)?;
    let mut found = vec![None; KEYS];
    for (g, slot) in found.iter_mut().enumerate() {
        let v = db
            .get_cf(&cfs[cf_of(g)], &key_bytes(g))
            .map_err(|e| format!("get failed: {e}"))?;
        if let Some(v) = v {
            *slot = Some(decode_value(g, &v)?);
        }
    }
    let mut scanned = 0;
    for (c, cf) in cfs.iter().enumerate() {
        let scan = db
            .scan_opt::<&[u8], _>(&Default::default(), cf, .., false)
            .map_err(|e| format!("scan failed: {e}"))?;
        for item in scan {
            let (k, v) = item.map_err(|e| format!("scan failed: {e}"))?;
            let g = parse_key(&k)
                .filter(|&g| cf_of(g) == c)
                .ok_or_else(|| format!("scan of family {c} found key {k:?}, never written"))?;
            if found[g] != Some(decode_value(g, &v)?) {
                return Err(format!(
                    "scan and get disagree on {}",
                    String::from_utf8_lossy(&k)
                ));
            }
            scanned += 1;
        }
    }
    let present = found.iter().filter(|o| o.is_some()).count();
    if scanned != present {
        return Err(format!("gets find {present} keys, scans {scanned}"));
    }
    Ok(found)
}
