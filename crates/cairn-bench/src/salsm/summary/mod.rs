//! `cairn-bench salsm-summary --dir DIR`: SA-LSM's tables from `scripts/sa-lsm-bench.sh`'s
//! output: `DIR/traces/PROFILE/` (`salsm-trace --evaluate`: awpi.json, eval.json, the
//! sweeps) and `DIR/compare/PROFILE-seedN/` (`compare` runs of the placements, one
//! directory per seed). Writes `DIR/salsm-summary.md`: the workloads against the shapes
//! they are fitted to, Table 3 (Harrell's and Uno's c-index, gains over the paper's GBDT),
//! Fig. 12 (cold_fir at Algorithm 3's count), the cold-reads curve, Figs. 13-14 (sweeps),
//! Figs. 15-17 (the engine's replays, median and range over seeds; the open-loop replays
//! at an offered rate from `DIR/open/PROFILE-seedN/`), Table 5 and the paper's goals
//! marked met or not met. [`service`] makes the service's tables,
//! [`engine`] the engine's.

mod engine;
mod service;

use crate::leaper::summary::read_dir;
use crate::report::json::RunResult;
use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct SalsmSummaryArgs {
    /// The script's output directory (holding traces/ and compare/).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Write the summary here [default: DIR/salsm-summary.md].
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Head the output with this command, the commit, the machine and the date (a
    /// results page under docs/results/).
    #[arg(long, value_name = "COMMAND")]
    pub provenance: Option<String>,
}

/// The paper's baseline every gain is measured against: its censoring-naive GBDT.
pub const REFERENCE: &str = "gbdt-naive";

/// The service's methods, Table 3's rows (the oracle has no c-index: its probabilities
/// hold at one time only).
pub const METHODS: [&str; 10] = [
    "rsf",
    "gbdt-naive",
    "gbdt-h",
    "cox",
    "lru",
    "lfu",
    "lru2",
    "lirs",
    "random",
    "oracle",
];

/// One profile's `salsm-trace` output.
pub struct TraceDir {
    pub profile: String,
    pub info: Value,
    pub eval: Option<Value>,
    /// `sweep --kind K` reports, by kind.
    pub sweeps: Vec<(String, Value)>,
}

/// One profile's compare runs, one entry per seed.
pub struct ProfileRuns {
    pub profile: String,
    pub seeds: Vec<(String, Vec<(String, RunResult)>)>,
}

/// A goal of the paper: what, met or not (None: nothing to judge), and the detail.
pub type Goal = (String, Option<bool>, String);

fn subdirs(d: &Path) -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(d)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn read_json(p: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

pub fn read_traces(dir: &Path) -> Vec<TraceDir> {
    subdirs(&dir.join("traces"))
        .into_iter()
        .filter_map(|(name, p)| {
            let sweeps = ["label-window", "sample-share"]
                .iter()
                .filter_map(|k| {
                    Some((
                        k.to_string(),
                        read_json(&p.join(format!("sweep-{k}.json")))?,
                    ))
                })
                .collect();
            Some(TraceDir {
                profile: name,
                info: read_json(&p.join("awpi.json"))?,
                eval: read_json(&p.join("eval.json")),
                sweeps,
            })
        })
        .collect()
}

/// `DIR/SUB/PROFILE-seedN/` directories (`compare`: the closed-loop replays, `open`: the
/// open-loop ones) grouped by profile (a directory without a seed suffix is one seed of
/// its own).
pub fn read_runs(dir: &Path, sub: &str) -> Result<Vec<ProfileRuns>> {
    let mut out: Vec<ProfileRuns> = Vec::new();
    for (name, p) in subdirs(&dir.join(sub)) {
        if !p.join("runs.list").exists() {
            continue;
        }
        let (profile, seed) = match name.rsplit_once("-seed") {
            Some((a, b)) => (a.to_string(), b.to_string()),
            None => (name.clone(), "-".to_string()),
        };
        let runs = read_dir(&p)?;
        match out.iter_mut().find(|r| r.profile == profile) {
            Some(r) => r.seeds.push((seed, runs)),
            None => out.push(ProfileRuns {
                profile,
                seeds: vec![(seed, runs)],
            }),
        }
    }
    Ok(out)
}

fn f(x: Option<f64>, d: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.d$}"))
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.1}", v * 100.0))
}

fn met(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "**met**",
        Some(false) => "**not met**",
        None => "n/a",
    }
}

/// `1 - x / base`: how far below the base x is.
fn below(x: Option<f64>, base: Option<f64>) -> Option<f64> {
    match (x, base) {
        (Some(x), Some(b)) if b > 0.0 => Some(1.0 - x / b),
        _ => None,
    }
}

/// All of `v` true (None when empty).
fn all(v: &[bool]) -> Option<bool> {
    (!v.is_empty()).then(|| v.iter().all(|&x| x))
}

fn count(v: &[bool]) -> String {
    format!("{} of {}", v.iter().filter(|&&x| x).count(), v.len())
}

pub fn summary(traces: &[TraceDir], runs: &[ProfileRuns], open: &[ProfileRuns]) -> String {
    let mut s = String::from("# SA-LSM on cairn (cairn-bench, scripts/sa-lsm-bench.sh)\n\n");
    s.push_str(
        "The workloads are synthetic AWPI streams (`crates/cairn-bench/src/workload/awpi/`), \
         only *shaped like* the paper's Table 2 and Fig. 13. The service is `python -m \
         cairn.learn.salsm`; labels are tau-events over reads, tau chosen by cross-validation \
         on the training window. The engine is cairn with a hot ssd tier (levels 0-1) and a \
         cold hdd tier (2+). Every placement migrates the same number of records: the count \
         SA-LSM's Algorithm 3 gives (RSF, alpha = the horizon), as §4.2.2 gives every \
         baseline SA-LSM's count. `oracle` ranks by the generator's true probability of a \
         read (a bound, not a competitor); `random` is a random placement.\n\n",
    );
    let mut goals: Vec<Goal> = Vec::new();
    if !traces.is_empty() {
        service::workloads(&mut s, traces);
        service::table3(&mut s, traces, &mut goals);
        service::fig12(&mut s, traces, &mut goals);
        service::curve(&mut s, traces);
        service::sweeps(&mut s, traces);
    }
    if !runs.is_empty() {
        engine::replays(&mut s, runs, &mut goals);
        engine::table5(&mut s, runs);
    }
    if !open.is_empty() {
        engine::open_replays(&mut s, open, &mut goals);
    }
    s.push_str("## Goals\n\n| goal | status | detail |\n|---|---|---|\n");
    for (g, ok, d) in &goals {
        s.push_str(&format!("| {g} | {} | {d} |\n", met(*ok)));
    }
    s
}

pub fn summary_cmd(a: &SalsmSummaryArgs) -> Result<()> {
    let text = write_summary(a)?;
    print!("{text}");
    Ok(())
}

/// The summary's markdown, written to its `--out`.
pub fn write_summary(a: &SalsmSummaryArgs) -> Result<String> {
    if !a.dir.is_dir() {
        bail!("{} is not a directory", a.dir.display());
    }
    let traces = read_traces(&a.dir);
    let runs = read_runs(&a.dir, "compare")?;
    let open = read_runs(&a.dir, "open")?;
    if traces.is_empty() && runs.is_empty() {
        bail!(
            "{} holds neither traces/PROFILE/awpi.json nor compare/PROFILE/runs.list",
            a.dir.display()
        );
    }
    let mut text = summary(&traces, &runs, &open);
    if let Some(command) = &a.provenance {
        text = crate::report::provenance::with_provenance(text, command);
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| a.dir.join("salsm-summary.md"));
    std::fs::write(&out, &text).with_context(|| format!("writing {}", out.display()))?;
    eprintln!("summary: {}", out.display());
    Ok(text)
}
