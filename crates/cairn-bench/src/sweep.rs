//! `sweep`: AC-Key's experiments (paper section 5: Figs. 7-13, Table 2, and the `offline`
//! search over fixed splits) as a list of points, each point run with every engine on the
//! same seeded op stream. Writes one compare-style directory per point and a markdown
//! summary per figure (QPS, ratio to the reference engine, storage reads per op).

use crate::cli::{parse_size, BudgetArgs, WorkloadArgs};
use crate::compare::{run_one, summary_line, unique_stems, write_outputs};
use crate::engines::{BenchConfig, ClockKind, EngineName};
use crate::measure::timeline::TimelineRow;
use crate::report::json::RunResult;
use crate::report::markdown;
use crate::runner::RunRequest;
use crate::workload::mix::Distribution;
use crate::workload::{WorkloadName, WorkloadSpec};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::collections::HashMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The experiments of the paper, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Figure {
    /// Every fixed KV-KP-block split (in tenths, --fixed-step) on the default workload: the
    /// paper's `offline`; the best one joins the later figures.
    Fixed,
    /// Cache size sweep (--cache-sizes).
    Fig7,
    /// Skew sweep: share of ops on the hottest --hot-keys keys (--hot-ops-list).
    Fig8,
    /// Scan ratio sweep (--scan-ratios).
    Fig9,
    /// Value size sweep (--value-sizes).
    Fig10,
    /// CPU time on the default workload.
    Fig11,
    /// Two phases, scans then point lookups (1:2), with the cache components over time.
    Fig12,
    /// YCSB A-F.
    Fig13,
    /// Write regression: fillrandom throughput of each policy against the reference.
    Table2,
}

impl Figure {
    pub const ALL: [Figure; 9] = [
        Figure::Fixed,
        Figure::Fig7,
        Figure::Fig8,
        Figure::Fig9,
        Figure::Fig10,
        Figure::Fig11,
        Figure::Fig12,
        Figure::Fig13,
        Figure::Table2,
    ];

    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .expect("no skipped variants")
            .get_name()
            .to_string()
    }

    fn title(self) -> &'static str {
        match self {
            Figure::Fixed => "Fixed splits (offline search, tenths of the budget for KV-KP-block)",
            Figure::Fig7 => "Fig. 7: cache size",
            Figure::Fig8 => "Fig. 8: skew (share of ops on the hottest keys)",
            Figure::Fig9 => "Fig. 9: scan ratio",
            Figure::Fig10 => "Fig. 10: value size",
            Figure::Fig11 => "Fig. 11: CPU time",
            Figure::Fig12 => "Fig. 12: two phases, scans then point lookups",
            Figure::Fig13 => "Fig. 13: YCSB A-F",
            Figure::Table2 => "Table 2: write regression (fillrandom)",
        }
    }

    fn x_label(self) -> &'static str {
        match self {
            Figure::Fixed | Figure::Fig11 | Figure::Fig12 => "workload",
            Figure::Fig7 => "cache",
            Figure::Fig8 => "hot-key share of ops",
            Figure::Fig9 => "scan ratio",
            Figure::Fig10 => "value B",
            Figure::Fig13 => "YCSB",
            Figure::Table2 => "workload",
        }
    }
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Figures to run, in this order; `fixed` runs first so its best split can join the
    /// later figures as the paper's `offline`.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Figure::ALL)]
    pub figures: Vec<Figure>,
    /// Engines run at every point.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cairn:ac-key,cairn:block,cairn:pure-kv,cairn:pure-kp"
    )]
    pub engines: Vec<String>,
    /// Engine the QPS ratios are taken against (the first engine when it is not run).
    #[arg(long, default_value = "cairn:block")]
    pub reference: String,
    /// Extra fixed KV-KP-block splits in tenths run at every point, e.g. `3-2-5,0-5-5`.
    #[arg(long, value_delimiter = ',', value_name = "X-Y-Z")]
    pub fixed: Vec<String>,
    /// Step, in tenths, of the `fixed` grid of splits X+Y+Z=10: 1 = all 66, 2 = 21, 5 = 6.
    #[arg(long, default_value_t = 2)]
    pub fixed_step: u8,
    /// Do not add the best split of `fixed` to the later figures.
    #[arg(long)]
    pub no_offline: bool,
    /// Fig. 7: cache budgets (the point at --cache-bytes is shared with other figures).
    #[arg(long, value_delimiter = ',', value_parser = parse_size,
          default_values = ["512K", "1M", "2M", "4M", "8M"])]
    pub cache_sizes: Vec<usize>,
    /// Fig. 8: shares of ops on the hottest --hot-keys keys (equal to --hot-keys: uniform).
    #[arg(long, value_delimiter = ',', default_values_t = [0.01, 0.5, 0.9, 0.99, 0.999])]
    pub hot_ops_list: Vec<f64>,
    /// Fig. 9: fractions of ops that are scans.
    #[arg(long, value_delimiter = ',', default_values_t = [0.0, 0.2, 0.5, 0.8, 1.0])]
    pub scan_ratios: Vec<f64>,
    /// Fig. 10: value sizes in bytes.
    #[arg(long, value_delimiter = ',', default_values_t = [50, 100, 150, 200])]
    pub value_sizes: Vec<usize>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Output directory: one directory per figure and point, FIGURE.md and summary.md.
    #[arg(long, value_name = "DIR", default_value = "bench-out/ac-key")]
    pub out: PathBuf,
    /// Run engines in this process instead of one child process each.
    #[arg(long)]
    pub in_process: bool,
}

/// One setting of a figure: its label on the x axis and what every engine runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub label: String,
    pub spec: WorkloadSpec,
    pub config: BenchConfig,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FigurePlan {
    pub figure: Figure,
    pub engines: Vec<EngineName>,
    pub points: Vec<Point>,
}

/// Splits (KV, KP, block) in tenths summing to 10, each a multiple of `step`.
pub fn fixed_splits(step: u8) -> Result<Vec<(u8, u8, u8)>> {
    if step == 0 || 10 % step != 0 {
        bail!("--fixed-step must divide 10 (1, 2, 5 or 10), got {step}");
    }
    let mut v = Vec::new();
    for kv in (0..=10).step_by(step as usize) {
        for kp in (0..=10 - kv).step_by(step as usize) {
            v.push((kv, kp, 10 - kv - kp));
        }
    }
    Ok(v)
}

fn fixed_engine(s: &str) -> Result<EngineName> {
    let parts: Vec<u8> = s
        .split('-')
        .map(|p| p.trim().parse::<u8>())
        .collect::<Result<_, _>>()
        .with_context(|| format!("fixed split `{s}` is not X-Y-Z"))?;
    if parts.len() != 3 || parts.iter().map(|&p| p as u32).sum::<u32>() != 10 {
        bail!("fixed split `{s}` must be three tenths summing to 10, e.g. 3-2-5");
    }
    EngineName::parse(&format!("cairn:fixed-{s}"))
}

impl SweepArgs {
    /// The figures to run with their points, without running anything.
    pub fn plan(&self) -> Result<Vec<FigurePlan>> {
        let mut wa = self.workload.clone();
        wa.workload = Some(WorkloadName::AcKeyDefault);
        let base = wa.spec()?;
        let cfg = self.budget.config();
        let mut engines = self
            .engines
            .iter()
            .filter(|e| !e.trim().is_empty())
            .map(|e| EngineName::parse(e))
            .collect::<Result<Vec<_>>>()?;
        for f in &self.fixed {
            engines.push(fixed_engine(f)?);
        }
        if engines.is_empty() {
            bail!("--engines lists no engine");
        }
        let default_point = |label: &str| Point {
            label: label.to_string(),
            spec: base.clone(),
            config: cfg.clone(),
        };
        let with = |label: String, f: &dyn Fn(&mut WorkloadSpec, &mut BenchConfig)| {
            let mut p = default_point(&label);
            f(&mut p.spec, &mut p.config);
            p
        };
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for &figure in &self.figures {
            if seen.contains(&figure) {
                continue;
            }
            seen.push(figure);
            let mut fig_engines = engines.clone();
            let points = match figure {
                Figure::Fixed => {
                    for (x, y, z) in fixed_splits(self.fixed_step)? {
                        let e = fixed_engine(&format!("{x}-{y}-{z}"))?;
                        if !fig_engines.contains(&e) {
                            fig_engines.push(e);
                        }
                    }
                    vec![default_point("ac-key-default")]
                }
                Figure::Fig7 => self
                    .cache_sizes
                    .iter()
                    .map(|&c| with(format!("{}K", c >> 10), &|_, cfg| cfg.cache_bytes = c))
                    .collect(),
                Figure::Fig8 => self
                    .hot_ops_list
                    .iter()
                    .map(|&h| with(format!("{:.1}%", h * 100.0), &|s, _| s.hot_ops = h))
                    .collect(),
                Figure::Fig9 => self
                    .scan_ratios
                    .iter()
                    .map(|&r| with(format!("{:.0}%", r * 100.0), &|s, _| s.scan_ratio = r))
                    .collect(),
                Figure::Fig10 => self
                    .value_sizes
                    .iter()
                    .map(|&v| {
                        with(format!("{v}"), &|s, _| {
                            s.value_size = crate::workload::ValueSize::Fixed(v)
                        })
                    })
                    .collect(),
                Figure::Fig11 => vec![default_point("ac-key-default")],
                Figure::Fig12 => {
                    let scans = base.ops / 3;
                    vec![with("scans-then-points".into(), &|s, _| {
                        s.workload = WorkloadName::Phased;
                        s.phases = Some(format!("scan=1:{scans};read=1:{}", s.ops - scans));
                        // The hot set of either shape (--distribution hotset-exp kept).
                        if s.distribution != Some(Distribution::HotsetExp) {
                            s.distribution = Some(Distribution::Hotset);
                        }
                    })]
                }
                Figure::Fig13 => [
                    WorkloadName::YcsbA,
                    WorkloadName::YcsbB,
                    WorkloadName::YcsbC,
                    WorkloadName::YcsbD,
                    WorkloadName::YcsbE,
                    WorkloadName::YcsbF,
                ]
                .into_iter()
                .map(|w| {
                    with(w.name(), &|s, _| {
                        s.workload = w;
                        s.distribution = None;
                    })
                })
                .collect(),
                Figure::Table2 => vec![with("fillrandom".into(), &|s, _| {
                    s.workload = WorkloadName::FillRandom;
                })],
            };
            for p in &points {
                crate::workload::Plan::build(&p.spec)
                    .with_context(|| format!("{} point {}", figure.name(), p.label))?;
            }
            out.push(FigurePlan {
                figure,
                engines: fig_engines,
                points,
            });
        }
        Ok(out)
    }
}

/// A directory name from a point label.
fn dir_name(label: &str) -> String {
    label
        .replace('%', "pct")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

type Outcome = (RunResult, Vec<TimelineRow>);

/// Runs `sweep`: every figure's points with every engine; a point that recurs in another
/// figure (the default workload) is run once per engine and reused.
pub fn sweep_cmd(a: &SweepArgs) -> Result<()> {
    let summary = sweep(a)?;
    print!("{summary}");
    eprintln!("summary: {}", a.out.join("summary.md").display());
    Ok(())
}

/// Runs the sweep; returns the summary it wrote to OUT/summary.md.
pub fn sweep(a: &SweepArgs) -> Result<String> {
    let plans = a.plan()?;
    // Refuse before running anything.
    for p in &plans {
        for e in &p.engines {
            e.check_available()?;
        }
    }
    std::fs::create_dir_all(&a.out)?;
    let mut done: HashMap<String, Outcome> = HashMap::new();
    let mut offline: Option<EngineName> = None;
    let mut summary = header(a);
    for plan in &plans {
        let mut engines = plan.engines.clone();
        if let Some(o) = offline.as_ref().filter(|o| !engines.contains(o)) {
            engines.push(o.clone());
        }
        let reference = EngineName::parse(&a.reference)
            .ok()
            .filter(|r| engines.contains(r))
            .unwrap_or_else(|| engines[0].clone());
        let mut rows: Vec<(String, Vec<RunResult>)> = Vec::new();
        for point in &plan.points {
            let dir = figure_dir(&a.out, plan.figure, &point.label);
            let stems = unique_stems(&engines.iter().map(|e| e.to_string()).collect::<Vec<_>>());
            let mut results = Vec::new();
            let mut timelines = Vec::new();
            for (engine, stem) in engines.iter().zip(stems) {
                let req = RunRequest {
                    engine: engine.clone(),
                    spec: point.spec.clone(),
                    config: point.config.clone(),
                    data_dir: a.budget.db_dir.clone(),
                    keep_data: a.budget.keep_db,
                    timeline_period_ms: a.workload.timeline_ms(),
                    leaper: Default::default(),
                    window_source: None,
                    salsm: Default::default(),
                };
                let key = serde_json::to_string(&req)?;
                let (r, t) = match done.get(&key) {
                    Some(x) => x.clone(),
                    None => {
                        eprintln!(
                            "{} {}: running {engine} ...",
                            plan.figure.name(),
                            point.label
                        );
                        let x = run_one(&req, &dir, &stem, a.in_process)?;
                        eprintln!("{}", summary_line(&x.0));
                        done.insert(key, x.clone());
                        x
                    }
                };
                timelines.push((r.engine.clone(), t));
                results.push(r);
            }
            write_outputs(&dir, &results, &timelines)?;
            if plan.figure == Figure::Fig12 && dir.join("cache_sizes.png").exists() {
                std::fs::copy(
                    dir.join("cache_sizes.png"),
                    a.out.join("fig12_cache_sizes.png"),
                )?;
            }
            rows.push((point.label.clone(), results));
        }
        if plan.figure == Figure::Fixed && !a.no_offline {
            offline = best_fixed(&rows);
        }
        let md = figure_md(plan.figure, &rows, &reference, offline.as_ref());
        std::fs::write(a.out.join(format!("{}.md", plan.figure.name())), &md)?;
        summary.push_str(&md);
        summary.push('\n');
        std::fs::write(a.out.join("summary.md"), &summary)?;
    }
    Ok(summary)
}

fn header(a: &SweepArgs) -> String {
    let c = a.budget.config();
    let w = &a.workload;
    let timing = match c.clock {
        ClockKind::Wall => {
            "QPS is timed and, on a shared machine, varies between runs by more than the gaps \
             it measures at small --ops."
        }
        ClockKind::Virtual => {
            "Clock: virtual (one request thread; every I/O priced on the device model, CPU \
             priced from counts): QPS is simulated time, and a rerun repeats it exactly."
        }
    };
    format!(
        "# AC-Key experiments (cairn-bench sweep)\n\n\
         Default point: workload ac-key-default, {} records, {} ops per point, key {} B, \
         value {} B, scan length {}, scan ratio {}, hottest {}% of keys taking {}% of ops, \
         seed {}.\n\n\
         Budget: cache {} KiB (shared by all components), write buffer {} KiB, bloom {} bits/key. \
         Storage cost: direct I/O {}, device profile {} (ssd: cairn adds 228 us per 4 KiB \
         read; other engines ignore the profile).\n\n\
         Each point runs every engine on the same seeded op stream after the same load; \
         `vs ref` is the QPS ratio to the reference engine; `reads/op` counts the storage reads \
         of point reads and scans per operation. Reads/op is a count, the same on every run \
         of a seed. {timing}\n\n",
        w.records(),
        w.ops,
        w.key_size,
        w.value_size,
        w.scan_length,
        w.scan_ratio,
        w.hot_keys * 100.0,
        w.hot_ops * 100.0,
        w.seed,
        c.cache_bytes >> 10,
        c.write_buffer_size >> 10,
        c.bloom_bits,
        c.direct_io,
        c.device.name(),
    )
}

/// The fixed split with the fewest storage reads per op at the fixed figure's point (a
/// count, the same on every run of a seed; QPS breaks ties and stands in when a run has
/// no count). Picking by QPS chose by noise: on a shared machine it varies by more than the
/// gaps between splits.
fn best_fixed(rows: &[(String, Vec<RunResult>)]) -> Option<EngineName> {
    let key = |r: &RunResult| {
        (
            r.storage_reads_per_op().unwrap_or(f64::INFINITY),
            -r.ops_per_sec,
        )
    };
    rows.first()?
        .1
        .iter()
        .filter(|r| r.engine.starts_with("cairn:fixed-"))
        .min_by(|a, b| {
            let (a, b) = (key(a), key(b));
            a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1))
        })
        .and_then(|r| EngineName::parse(&r.engine).ok())
}

fn ratio(x: f64, base: Option<f64>) -> String {
    match base {
        Some(b) if b > 0.0 => format!("{:.2}x", x / b),
        _ => "-".into(),
    }
}

/// The markdown section of one figure: QPS with the ratio to `reference`, storage reads per
/// op, and the figure's own extras (CPU, phases, fixed ranking, write regression).
pub fn figure_md(
    figure: Figure,
    rows: &[(String, Vec<RunResult>)],
    reference: &EngineName,
    offline: Option<&EngineName>,
) -> String {
    let mut s = format!("## {}\n\n", figure.title());
    let reference = reference.to_string();
    let engines: Vec<String> = rows
        .first()
        .map(|(_, r)| r.iter().map(|x| x.engine.clone()).collect())
        .unwrap_or_default();
    if let Some(o) = offline.filter(|_| figure != Figure::Fixed) {
        let _ = writeln!(
            s,
            "`offline` = {o}, the best fixed split found by `fixed`.\n"
        );
    }
    let base_of = |rs: &[RunResult]| {
        rs.iter()
            .find(|r| r.engine == reference)
            .map(|r| r.ops_per_sec)
    };
    // QPS table: one row per point, one column per engine.
    let _ = writeln!(
        s,
        "QPS (ratio to {reference}):\n\n| {} | {} |\n|---|{}",
        figure.x_label(),
        engines.join(" | "),
        "---:|".repeat(engines.len())
    );
    for (label, rs) in rows {
        let base = base_of(rs);
        let cells: Vec<String> = rs
            .iter()
            .map(|r| format!("{:.0} ({})", r.ops_per_sec, ratio(r.ops_per_sec, base)))
            .collect();
        let _ = writeln!(s, "| {label} | {} |", cells.join(" | "));
    }
    let _ = writeln!(
        s,
        "\nStorage reads per operation:\n\n| {} | {} |\n|---|{}",
        figure.x_label(),
        engines.join(" | "),
        "---:|".repeat(engines.len())
    );
    for (label, rs) in rows {
        let cells: Vec<String> = rs
            .iter()
            .map(|r| {
                r.storage_reads_per_op()
                    .map_or("-".into(), |x| format!("{x:.3}"))
            })
            .collect();
        let _ = writeln!(s, "| {label} | {} |", cells.join(" | "));
    }
    match figure {
        Figure::Fixed => {
            if let Some((_, rs)) = rows.first() {
                let base = base_of(rs);
                let mut v: Vec<&RunResult> = rs.iter().collect();
                let reads = |r: &RunResult| r.storage_reads_per_op().unwrap_or(f64::INFINITY);
                v.sort_by(|a, b| reads(a).total_cmp(&reads(b)));
                s.push_str(
                    "\nRanked by reads/op:\n\n| engine | ops/s | vs ref | reads/op |\n|---|---:|---:|---:|\n",
                );
                for r in v {
                    let _ = writeln!(
                        s,
                        "| {} | {:.0} | {} | {} |",
                        r.engine,
                        r.ops_per_sec,
                        ratio(r.ops_per_sec, base),
                        r.storage_reads_per_op()
                            .map_or("-".into(), |x| format!("{x:.3}"))
                    );
                }
                if let Some(b) = best_fixed(rows) {
                    let _ = writeln!(s, "\nBest fixed split (`offline`): {b}");
                }
            }
        }
        Figure::Fig11 => {
            if let Some((_, rs)) = rows.first() {
                s.push_str("\nCPU (user + sys of the engine's process over the measured phase) and hits by component:\n\n");
                s.push_str(&markdown::read_cache_table(rs));
            }
        }
        Figure::Fig12 => {
            if let Some((_, rs)) = rows.first() {
                s.push_str(
                    "\nPer phase:\n\n| engine | scans ops/s | points ops/s |\n|---|---:|---:|\n",
                );
                for r in rs {
                    let q = |i: usize| {
                        r.phases
                            .get(i)
                            .map_or("-".into(), |p| format!("{:.0}", p.ops_per_sec))
                    };
                    let _ = writeln!(s, "| {} | {} | {} |", r.engine, q(0), q(1));
                }
                s.push_str("\n![Fig. 12: cache components over time](fig12_cache_sizes.png)\n");
            }
        }
        Figure::Table2 => {
            if let Some((_, rs)) = rows.first() {
                let base = base_of(rs);
                s.push_str(
                    "\n| engine | fillrandom ops/s | regression vs ref |\n|---|---:|---:|\n",
                );
                for r in rs {
                    let reg = base.filter(|b| *b > 0.0).map_or("-".into(), |b| {
                        format!("{:+.1}%", (1.0 - r.ops_per_sec / b) * 100.0)
                    });
                    let _ = writeln!(s, "| {} | {:.0} | {reg} |", r.engine, r.ops_per_sec);
                }
            }
        }
        _ => {}
    }
    s
}

/// Where a point's outputs go.
pub fn figure_dir(out: &Path, figure: Figure, label: &str) -> PathBuf {
    out.join(figure.name()).join(dir_name(label))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(extra: &[&str]) -> SweepArgs {
        let mut v = vec!["cairn-bench", "sweep"];
        v.extend_from_slice(extra);
        match Cli::try_parse_from(v).unwrap().command {
            Command::Sweep(a) => *a,
            _ => panic!("not sweep"),
        }
    }

    #[test]
    fn fixed_splits_are_tenths_summing_to_ten() {
        assert_eq!(fixed_splits(1).unwrap().len(), 66);
        assert_eq!(fixed_splits(2).unwrap().len(), 21);
        let five = fixed_splits(5).unwrap();
        assert_eq!(five.len(), 6);
        assert!(five.contains(&(0, 0, 10)) && five.contains(&(5, 0, 5)));
        assert!(fixed_splits(1)
            .unwrap()
            .iter()
            .all(|&(a, b, c)| a + b + c == 10));
        assert!(fixed_splits(3).is_err() && fixed_splits(0).is_err());
    }

    #[test]
    fn default_sweep_plans_every_figure() {
        let a = args(&["--records", "1000", "--ops", "900"]);
        let plans = a.plan().unwrap();
        let figs: Vec<Figure> = plans.iter().map(|p| p.figure).collect();
        assert_eq!(figs, Figure::ALL.to_vec());
        let main: Vec<String> = plans[1].engines.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            main,
            [
                "cairn:ac-key",
                "cairn:block",
                "cairn:pure-kv",
                "cairn:pure-kp"
            ]
        );
        // fixed: the main engines plus 21 splits (step 2).
        assert_eq!(plans[0].engines.len(), 4 + 21);
        assert!(plans[0]
            .engines
            .contains(&EngineName::parse("cairn:fixed-2-4-4").unwrap()));
        let by = |f: Figure| plans.iter().find(|p| p.figure == f).unwrap();
        let caches: Vec<usize> = by(Figure::Fig7)
            .points
            .iter()
            .map(|p| p.config.cache_bytes)
            .collect();
        assert_eq!(caches, vec![512 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20]);
        let hot: Vec<f64> = by(Figure::Fig8)
            .points
            .iter()
            .map(|p| p.spec.hot_ops)
            .collect();
        assert_eq!(hot, vec![0.01, 0.5, 0.9, 0.99, 0.999]);
        assert!(by(Figure::Fig8)
            .points
            .iter()
            .all(|p| p.spec.workload == WorkloadName::AcKeyDefault));
        let f12 = &by(Figure::Fig12).points[0].spec;
        assert_eq!(f12.phases.as_deref(), Some("scan=1:300;read=1:600"));
        assert_eq!(f12.distribution, Some(Distribution::Hotset));
        assert_eq!(by(Figure::Fig13).points.len(), 6);
        assert_eq!(
            by(Figure::Table2).points[0].spec.workload,
            WorkloadName::FillRandom
        );
        // The default point recurs (Fig. 8 at 99%, Fig. 9 at 50%, Fig. 11): run once, reused.
        let d = &by(Figure::Fig11).points[0];
        let f8 = &by(Figure::Fig8).points[3];
        assert_eq!((&d.spec, &d.config), (&f8.spec, &f8.config));
    }

    #[test]
    fn offline_is_the_split_with_fewest_reads() {
        let run = |engine: &str, qps: f64, reads: u64| RunResult {
            engine: engine.into(),
            ops: 100,
            ops_per_sec: qps,
            storage: crate::report::json::Storage {
                read_ops: reads,
                ..Default::default()
            },
            ..Default::default()
        };
        let rows = vec![(
            "p".to_string(),
            vec![
                run("cairn:block", 9000.0, 10),
                run("cairn:fixed-10-0-0", 1000.0, 300),
                run("cairn:fixed-5-0-5", 900.0, 250),
                run("cairn:fixed-0-0-10", 800.0, 250),
            ],
        )];
        // Fewest reads wins over higher QPS; QPS breaks the tie; non-fixed engines never.
        assert_eq!(
            best_fixed(&rows),
            Some(EngineName::parse("cairn:fixed-5-0-5").unwrap())
        );
    }

    #[test]
    fn sweep_flags_parse_and_bad_ones_fail() {
        let a = args(&[
            "--figures",
            "fig9,fig10",
            "--engines",
            "cairn:baseline,btree",
            "--fixed",
            "3-2-5",
            "--scan-ratios",
            "0,1",
            "--value-sizes",
            "50,200",
            "--device",
            "ssd",
            "--direct-io",
            "--cache-bytes",
            "1M",
        ]);
        let plans = a.plan().unwrap();
        assert_eq!(plans.len(), 2);
        let names: Vec<String> = plans[0].engines.iter().map(|e| e.to_string()).collect();
        assert_eq!(names, ["cairn:baseline", "btree", "cairn:fixed-3-2-5"]);
        let ratios: Vec<f64> = plans[0].points.iter().map(|p| p.spec.scan_ratio).collect();
        assert_eq!(ratios, vec![0.0, 1.0]);
        assert_eq!(plans[0].points[0].label, "0%");
        assert_eq!(
            plans[1].points[1].spec.value_size,
            crate::workload::ValueSize::Fixed(200)
        );
        let c = &plans[1].points[0].config;
        assert!(c.direct_io && c.device == crate::engines::Device::Ssd);
        assert_eq!(c.cache_bytes, 1 << 20);
        assert!(args(&["--fixed", "3-3-3"]).plan().is_err());
        assert!(args(&["--fixed-step", "3"]).plan().is_err());
        assert!(args(&["--scan-ratios", "1.5", "--figures", "fig9"])
            .plan()
            .is_err());
        assert!(Cli::try_parse_from(["cairn-bench", "sweep", "--figures", "fig99"]).is_err());
        assert_eq!(dir_name("99.9%"), "99.9pct");
    }
}
