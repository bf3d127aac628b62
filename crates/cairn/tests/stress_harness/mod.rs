//! A db_stress-style randomized stress harness (RocksDB's `db_stress` and
//! `db_crashtest.py` are the anchors), shared by `tests/stress.rs` (a short run in CI) and
//! `examples/db_stress.rs` (long runs).
//!
//! Per preset, directories of several cycles each. A cycle opens the directory with a
//! fault injector and random compaction threads, runs writers, readers and a chaos actor
//! (concurrently, or interleaved by the seed on one thread so that it replays exactly),
//! injects the faults its seed chose, ends by a clean close, a drop, a power loss or
//! SIGKILL of a child process, and reopens without faults to check the whole state
//! against the oracle (`model`). The verified state carries into the next cycle.
//!
//! Seeds: a run seed gives each directory its seed, a directory seed each of its cycles
//! theirs; a failure prints the directory seed and the command that replays it.

// A test and an example share this module; each uses part of it.
#![allow(dead_code)]

mod actors;
mod child;
mod cycle;
mod faults;
mod model;
mod report;
mod setup;

use std::sync::mpsc;
use std::time::{Duration, Instant};

pub use child::child_main_if_requested;
pub use cycle::ChildCmd;
pub use report::{PresetStats, Report};
pub use setup::{available_presets, Knobs};

use cycle::{CycleStats, DirCtx};
use model::mix;
use setup::Spec;

/// A run.
#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    pub presets: Vec<String>,
    /// Cycles per preset.
    pub cycles: u64,
    pub cycles_per_dir: u64,
    pub knobs: Knobs,
    /// Every `kill_every`th cycle of a directory ends with SIGKILL of a child (0: none;
    /// also none without `child`).
    pub kill_every: u64,
    pub child: Option<ChildCmd>,
    /// A cycle that runs longer is a hang: the run stops there.
    pub watchdog: Duration,
    /// Replay: run one directory with this seed (`cycles` cycles, every preset given).
    pub dir_seed: Option<u64>,
    /// Print a line per directory.
    pub verbose: bool,
}

/// Runs every preset's cycles; stops at the first hang.
pub fn run(cfg: &Config) -> Report {
    install_panic_hook();
    let mut report = Report::default();
    for (p, preset) in cfg.presets.iter().enumerate() {
        let t = Instant::now();
        let mut st = PresetStats::new(preset);
        let hung = run_preset(cfg, p as u64, preset, &mut st, &mut report.failures);
        st.secs = t.elapsed().as_secs_f64();
        eprintln!("{}", st.line());
        report.presets.push(st);
        if let Some(h) = hung {
            report.aborted = Some(h);
            break;
        }
    }
    report
}

/// The cycles of one preset; returns the hang that stopped them, if one did.
fn run_preset(
    cfg: &Config,
    p: u64,
    preset: &str,
    st: &mut PresetStats,
    failures: &mut Vec<String>,
) -> Option<String> {
    let mut done = 0;
    let mut d = 0;
    while done < cfg.cycles {
        let dir_seed = cfg
            .dir_seed
            .unwrap_or_else(|| mix(cfg.seed ^ mix(p << 32 | d)));
        let n = match cfg.dir_seed {
            Some(_) => cfg.cycles,
            None => cfg.cycles_per_dir.min(cfg.cycles - done),
        };
        let (ran, hung) = run_dir(cfg, preset, dir_seed, n, st, failures);
        if hung.is_some() {
            return hung;
        }
        done += ran.max(1);
        d += 1;
        if cfg.dir_seed.is_some() {
            break; // a replay runs its one directory
        }
    }
    None
}

/// Up to `n` cycles on a new directory; a failed check ends it (its state is unknown).
fn run_dir(
    cfg: &Config,
    preset: &str,
    dir_seed: u64,
    n: u64,
    st: &mut PresetStats,
    failures: &mut Vec<String>,
) -> (u64, Option<String>) {
    let tmp = tempfile::tempdir().expect("temporary directory");
    let mut ctx = match DirCtx::create(tmp.path(), preset, dir_seed) {
        Ok(ctx) => ctx,
        Err(e) => {
            failures.push(format!("{preset} dir seed {dir_seed}: {e}"));
            st.sum.wrong += 1;
            return (1, None);
        }
    };
    for c in 0..n {
        let kill =
            cfg.child.is_some() && cfg.kill_every > 0 && c % cfg.kill_every == cfg.kill_every - 1;
        let spec = Spec::new(mix(dir_seed ^ (c + 1)), &cfg.knobs, kill, ctx.vlog());
        let what = format!(
            "{preset} dir seed {dir_seed} cycle {} ({})",
            c + 1,
            spec.describe()
        );
        let replay = format!(
            "cargo run --release -p cairn --example db_stress -- --presets {preset} \
             --dir-seed {dir_seed} --cycles {} --run-ms {}-{} --steps {}-{} --kill-every {}{}",
            c + 1,
            cfg.knobs.run_ms.0,
            cfg.knobs.run_ms.1,
            cfg.knobs.steps.0,
            cfg.knobs.steps.1,
            if cfg.child.is_some() {
                cfg.kill_every
            } else {
                0
            },
            if cfg.knobs.deterministic {
                " --deterministic"
            } else {
                ""
            }
        );
        let (back, stats) = match guarded(ctx, spec, cfg) {
            Ok(r) => r,
            Err(hang) => {
                st.cycles += 1;
                st.hangs += 1;
                let msg = format!("HANG: {what}: {hang}; replay: {replay}");
                eprintln!("{msg}");
                failures.push(msg.clone());
                return (c + 1, Some(msg));
            }
        };
        st.add(&stats);
        if cfg.verbose {
            eprintln!("{what}: {} ops, {} acked", stats.ops, stats.acked);
        }
        if stats.failed_check() {
            for f in &stats.failures {
                let msg = format!("FAIL: {what}: {f}; replay: {replay}");
                eprintln!("{msg}");
                failures.push(msg);
            }
            return (c + 1, None);
        }
        match back {
            Some(b) => ctx = b,
            None => return (c + 1, None),
        }
    }
    (n, None)
}

/// Runs a cycle on its own thread under the watchdog. Panics are caught and counted.
/// Returns the directory (`None` after a panic: its state is unknown) and the stats, or
/// the hang.
fn guarded(
    mut ctx: DirCtx,
    spec: Spec,
    cfg: &Config,
) -> Result<(Option<DirCtx>, CycleStats), String> {
    let (tx, rx) = mpsc::channel();
    let child = cfg.child.clone();
    std::thread::Builder::new()
        .name("stress-cycle".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                cycle::run_cycle(&mut ctx, &spec, child.as_ref())
            }));
            let _ = tx.send(match r {
                Ok(stats) => (Some(ctx), stats),
                Err(_) => (None, CycleStats::default()),
            });
        })
        .expect("spawn the cycle thread");
    let (ctx, mut stats) = rx
        .recv_timeout(cfg.watchdog)
        .map_err(|_| format!("the cycle ran past the {:?} watchdog", cfg.watchdog))?;
    for p in take_panics() {
        stats.panics += 1;
        stats.failures.push(format!("panic: {p}"));
    }
    if ctx.is_none() && stats.failures.is_empty() {
        stats.failures.push("the cycle panicked".into());
    }
    Ok((ctx, stats))
}

static PANICS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Records every panic of the process (the engine's background threads' too), then
/// lets the previous hook print it.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let name = std::thread::current().name().unwrap_or("?").to_string();
            if let Ok(mut p) = PANICS.lock() {
                p.push(format!("thread {name}: {info}").replace('\n', " "));
            }
            prev(info);
        }));
    });
}

fn take_panics() -> Vec<String> {
    PANICS
        .lock()
        .map(|mut p| std::mem::take(&mut *p))
        .unwrap_or_default()
}
