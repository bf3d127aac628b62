//! Long db_stress-style runs (the harness is in `tests/stress_harness/`, shared with the
//! CI test `tests/stress.rs`):
//!
//! ```text
//! cargo run --release -p cairn --example db_stress -- --cycles 10000 --seed 1 \
//!     --presets all --out docs/results/reliability.md
//! ```
//!
//! Flags: `--cycles N` (in all, split evenly over the presets), `--seed S`, `--presets
//! all|a,b,...`, `--out FILE` (a markdown report), `--cycles-per-dir N` (default 10),
//! `--run-ms A-B` (a concurrent cycle's length, default 150-400), `--steps A-B` (a
//! deterministic cycle's, default 1000-3000), `--kill-every N` (default 10; 0: no
//! kills), `--watchdog-secs N` (default 60), `--dir-seed S` (replay one directory: the
//! command a failure prints), `--deterministic` (every cycle on one thread without
//! background work or kills, so a directory replays exactly), `--verbose`.
//!
//! Environment: `CAIRN_STRESS_TRACE=1` prints every failed call and wrong answer as it happens.

#[path = "../tests/stress_harness/mod.rs"]
mod harness;

use std::process::Command;
use std::time::Duration;

fn usage(msg: &str) -> ! {
    eprintln!("db_stress: {msg}\nsee the comment at the top of examples/db_stress.rs");
    std::process::exit(2);
}

fn num(flag: &str, v: &str) -> u64 {
    v.parse()
        .unwrap_or_else(|_| usage(&format!("{flag} takes a number, not {v:?}")))
}

fn range(flag: &str, v: &str) -> (u64, u64) {
    match v.split_once('-') {
        Some((a, b)) if num(flag, a) <= num(flag, b) => (num(flag, a), num(flag, b)),
        _ => usage(&format!("{flag} takes A-B, not {v:?}")),
    }
}

/// The run's configuration, the total cycles asked for, and the report's path.
fn parse_args() -> (harness::Config, u64, Option<String>) {
    let mut cfg = harness::Config {
        seed: 1,
        presets: harness::available_presets(),
        cycles: 0,
        cycles_per_dir: 10,
        knobs: harness::Knobs {
            run_ms: (150, 400),
            steps: (1000, 3000),
            deterministic: false,
        },
        kill_every: 10,
        child: Some(harness::ChildCmd {
            exe: std::env::current_exe().expect("own path"),
            args: Vec::new(),
        }),
        watchdog: Duration::from_secs(60),
        dir_seed: None,
        verbose: false,
    };
    let (mut total, mut out) = (400, None);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--verbose" || flag == "--deterministic" {
            cfg.verbose |= flag == "--verbose";
            cfg.knobs.deterministic |= flag == "--deterministic";
            continue;
        }
        let v = it
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--cycles" => total = num(flag, v),
            "--seed" => cfg.seed = num(flag, v),
            "--presets" if v == "all" => {}
            "--presets" => cfg.presets = v.split(',').map(String::from).collect(),
            "--out" => out = Some(v.clone()),
            "--cycles-per-dir" => cfg.cycles_per_dir = num(flag, v).max(1),
            "--run-ms" => cfg.knobs.run_ms = range(flag, v),
            "--steps" => cfg.knobs.steps = range(flag, v),
            "--kill-every" => cfg.kill_every = num(flag, v),
            "--watchdog-secs" => cfg.watchdog = Duration::from_secs(num(flag, v)),
            "--dir-seed" => cfg.dir_seed = Some(num(flag, v)),
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    for p in &cfg.presets {
        if cairn::presets::by_name(p).is_none() {
            usage(&format!("unknown preset {p}"));
        }
    }
    let n = cfg.presets.len() as u64;
    cfg.cycles = match cfg.dir_seed {
        Some(_) => total,
        None => total.div_ceil(n.max(1)),
    };
    (cfg, total, out)
}

/// A command's trimmed output, if it ran.
fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let o = Command::new(cmd).args(args).output().ok()?;
    let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !s.is_empty()).then_some(s)
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores, {}", std::env::consts::ARCH)
}

fn main() {
    if harness::child_main_if_requested() {
        return;
    }
    let (cfg, total, out) = parse_args();
    eprintln!(
        "db_stress: {} cycles ({} per preset) over {}, seed {}",
        total,
        cfg.cycles,
        cfg.presets.join(","),
        cfg.seed
    );
    let report = harness::run(&cfg);
    println!("{}\n{}", report.table(), report.work_table());
    if let Some(path) = out {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let command = format!(
            "cargo run --release -p cairn --example db_stress -- {}",
            args.join(" ")
        );
        let commit = output("git", &["rev-parse", "--short", "HEAD"]).unwrap_or("unknown".into());
        let date = output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or("unknown".into());
        let md = report.markdown(&command, &commit, &machine(), &date);
        if let Some(dir) = std::path::Path::new(&path).parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(&path, md).unwrap_or_else(|e| usage(&format!("write {path}: {e}")));
        eprintln!("db_stress: report in {path}");
    }
    if !report.clean() {
        eprintln!("db_stress: {} failures", report.failures.len());
        std::process::exit(1);
    }
}
