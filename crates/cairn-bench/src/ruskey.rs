//! `cairn-bench ruskey-summary`: RusKey's evaluation (section 7) from `compare` output
//! directories: per session each method's mean latency per op once converged, ranks
//! (Table 3, Fig. 12), the best and worst static policies, the paper's goals, and when
//! RusKey's run limits and latency settled in each session. `scripts/ruskey-bench.sh`
//! prints every part with it.
//!
//! Methods are classified by name: `cairn:ruskey*` and `cairn:greedy*` adapt K (adaptive);
//! every other engine is a static policy (cairn:default = K 1, cairn:moderate, cairn:tiering,
//! cairn:lazy-leveling, rocksdb, ...). `--ruskey ENGINE` names the method the goals are
//! about (default: cairn:ruskey, else the first adaptive engine); that engine counts as
//! adaptive whatever its name.

use crate::leaper::summary::read_dir;
use crate::report::json::{MissionRow, RunResult};
use crate::workload::mix::{Mix, OpKind};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::fmt::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct RuskeySummaryArgs {
    /// A `compare` output directory; repeat for more. Directories whose runs share the
    /// workload (same stream: workload, mix/phases, records, ops, seed) are merged, so
    /// greedy runs in their own directory rank against the statics of another; the others
    /// add their sessions (e.g. the read-heavy, balanced and write-heavy static workloads
    /// as three sessions of one table).
    #[arg(long = "dir", required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Share of each session, at its end, that counts as converged (by missions when the
    /// runs have them, else the phase's last half as the run recorded it).
    #[arg(long, default_value_t = 0.5, value_name = "FRACTION")]
    pub converged_fraction: f64,
    /// The method the goals are about [default, and when no run has this engine:
    /// cairn:ruskey, else the first cairn:ruskey* or cairn:greedy* engine].
    #[arg(long, value_name = "ENGINE")]
    pub ruskey: Option<String>,
    /// Latencies within this relative difference tie in the ranks (a method's rank is 1 +
    /// the methods faster than it by more than this).
    #[arg(long, default_value_t = 0.02, value_name = "FRACTION")]
    pub tie_tolerance: f64,
    /// Convergence of latency: the smoothed per-mission latency stays within this
    /// relative distance of the session's converged mean.
    #[arg(long, default_value_t = 0.05, value_name = "FRACTION")]
    pub latency_tolerance: f64,
    /// Missions in the trailing mean that smooths the per-mission latency for the
    /// convergence check (compactions make single missions spiky) [default: a tenth of
    /// the session's missions].
    #[arg(long, value_name = "MISSIONS")]
    pub smooth_missions: Option<usize>,
    /// Heading of the summary.
    #[arg(long, default_value = "RusKey")]
    pub title: String,
    /// Write the markdown here [default: ruskey-summary.md in the first --dir].
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Do not draw ruskey_missions.png into the directories.
    #[arg(long)]
    pub no_plot: bool,
    /// Head the page with this command, the commit, the machine and the date (a
    /// `docs/results` page).
    #[arg(long, value_name = "COMMAND")]
    pub provenance: Option<String>,
}

/// Whether a method adapts its run limits (by name; see the module docs).
pub fn is_adaptive(engine: &str) -> bool {
    engine.starts_with("cairn:ruskey") || engine.starts_with("cairn:greedy")
}

/// The method the goals are about: `wanted`, else cairn:ruskey, else the first adaptive.
pub fn primary<'a>(engines: &[&'a str], wanted: Option<&str>) -> Option<&'a str> {
    match wanted {
        Some(w) => engines.iter().copied().find(|e| *e == w),
        None => engines
            .iter()
            .copied()
            .find(|e| *e == "cairn:ruskey")
            .or_else(|| engines.iter().copied().find(|e| is_adaptive(e))),
    }
}

/// Ops-weighted mean latency (microseconds) of the last `fraction` of `rows` (at least
/// one mission).
pub fn converged_mean_us(rows: &[&MissionRow], fraction: f64) -> Option<f64> {
    if rows.is_empty() {
        return None;
    }
    let n = rows.len();
    let take = ((n as f64 * fraction.clamp(0.0, 1.0)).ceil() as usize).clamp(1, n);
    weighted_us(&rows[n - take..])
}

fn weighted_us(rows: &[&MissionRow]) -> Option<f64> {
    let ops: u64 = rows.iter().map(|r| r.ops).sum();
    (ops > 0).then(|| rows.iter().map(|r| r.mean_ns * r.ops as f64).sum::<f64>() / ops as f64 / 1e3)
}

/// Ranks of `values` (lower is better; None: not ranked): 1 + the number of others faster
/// by more than `tol` (relative). Ties share a rank and the next rank is skipped, as in
/// RusKey's Table 3.
pub fn ranks(values: &[Option<f64>], tol: f64) -> Vec<Option<usize>> {
    values
        .iter()
        .map(|v| {
            let v = (*v)?;
            Some(
                1 + values
                    .iter()
                    .flatten()
                    .filter(|o| **o * (1.0 + tol) < v)
                    .count(),
            )
        })
        .collect()
}

/// Mean of the ranks that exist; None when none does.
pub fn mean_rank(r: &[Option<usize>]) -> Option<f64> {
    let v: Vec<f64> = r.iter().flatten().map(|x| *x as f64).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The first mission (0-based within `ks`) from which every K vector to the end is within
/// `tol` of the last one at every level both have (tol 0: equal; the tree growing a level
/// is no change of K). None when no K was recorded.
pub fn k_settled(ks: &[Option<&Vec<usize>>], tol: usize) -> Option<usize> {
    let last = (*ks.last()?)?;
    let close = |k: Option<&Vec<usize>>| {
        k.is_some_and(|k| k.iter().zip(last).all(|(a, b)| a.abs_diff(*b) <= tol))
    };
    let mut first = ks.len() - 1;
    while first > 0 && close(ks[first - 1]) {
        first -= 1;
    }
    Some(first)
}

/// The first mission (0-based within `rows`) from which the trailing mean over `window`
/// missions (None: a tenth of the session's) stays within `tol` (relative) of `target`
/// to the end. None: it never does (the last one is outside).
pub fn latency_settled(
    rows: &[&MissionRow],
    target: f64,
    tol: f64,
    window: Option<usize>,
) -> Option<usize> {
    let w = window.unwrap_or(rows.len() / 10).max(1);
    let smooth = |j: usize| weighted_us(&rows[(j + 1).saturating_sub(w)..=j]);
    let ok = |j: usize| smooth(j).is_some_and(|v| (v / target - 1.0).abs() <= tol);
    if rows.is_empty() || target <= 0.0 || !ok(rows.len() - 1) {
        return None;
    }
    let mut first = rows.len() - 1;
    while first > 0 && ok(first - 1) {
        first -= 1;
    }
    Some(first)
}

/// A session's name: RusKey's for its lookup shares (Table 3), else the lookup share.
pub fn session_name(mix: &str) -> String {
    let Ok(m) = Mix::parse(mix) else {
        return mix.to_string();
    };
    let look = m.proportion(OpKind::Read) + m.proportion(OpKind::Scan);
    let pct = (look * 100.0).round() as i64;
    let name = match pct {
        90 => "Read-H",
        50 => "Balanced",
        10 => "Write-H",
        30 => "Write-I",
        70 => "Read-I",
        _ => "",
    };
    if name.is_empty() {
        format!("{pct}% lookups")
    } else {
        format!("{name} ({pct}% lookups)")
    }
}

/// One session of one workload: the methods' converged latencies and RusKey's series.
#[derive(Clone, Debug, Default)]
pub struct Session {
    pub label: String,
    pub mix: String,
    /// Missions of the primary method in the session (0: no series).
    pub missions: usize,
    /// Converged mean latency per op (us) per method, in `Table::methods` order.
    pub latency: Vec<Option<f64>>,
    /// Of the primary: missions to a fixed K / K within +-1 / latency within tolerance,
    /// and its K at the session's end.
    pub k_fixed: Option<usize>,
    pub k_within1: Option<usize>,
    pub latency_settled: Option<usize>,
    pub k_end: Option<Vec<usize>>,
}

#[derive(Clone, Debug, Default)]
pub struct Table {
    pub methods: Vec<String>,
    pub sessions: Vec<Session>,
    pub primary: Option<String>,
    /// Whether the runs have per-mission series (else the phases' last halves count).
    pub by_missions: bool,
}

impl Table {
    fn is_static(&self, m: &str) -> bool {
        !is_adaptive(m) && self.primary.as_deref() != Some(m)
    }

    fn statics(&self) -> Vec<usize> {
        (0..self.methods.len())
            .filter(|&i| self.is_static(&self.methods[i]))
            .collect()
    }

    fn primary_index(&self) -> Option<usize> {
        let p = self.primary.as_deref()?;
        self.methods.iter().position(|m| m == p)
    }

    /// Table 3 / Fig. 12 ranks per method and session: a static ranks among the statics
    /// and the primary method; an adaptive method among the statics and itself (so each
    /// greedy variant gets the rank it would have in Table 3 in RusKey's place).
    pub fn table3_ranks(&self, tol: f64) -> Vec<Vec<Option<usize>>> {
        let statics = self.statics();
        let prim = self.primary_index();
        let mut out = vec![Vec::new(); self.methods.len()];
        for s in &self.sessions {
            for (m, row) in out.iter_mut().enumerate() {
                let mut pool: Vec<usize> = statics.clone();
                if self.is_static(&self.methods[m]) {
                    pool.extend(prim);
                } else {
                    pool.push(m);
                }
                let vals: Vec<Option<f64>> = pool.iter().map(|&i| s.latency[i]).collect();
                let r = ranks(&vals, tol);
                let me = pool.iter().position(|&i| i == m).expect("in its pool");
                row.push(r[me]);
            }
        }
        out
    }

    /// Best and worst static method per session (index, latency).
    pub fn best_worst(&self, s: &Session) -> Option<((usize, f64), (usize, f64))> {
        let st: Vec<(usize, f64)> = self
            .statics()
            .into_iter()
            .filter_map(|i| Some((i, s.latency[i]?)))
            .collect();
        let best = st.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))?;
        let worst = st.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
        Some((best, worst))
    }
}

/// What ruskey-summary reads: per workload group, its runs (merged across directories).
pub struct Group {
    pub label: String,
    pub runs: Vec<RunResult>,
}

fn stream_key(r: &RunResult) -> String {
    let s = &r.spec;
    format!(
        "{} {:?} {:?} {} {} {} {:?} {:?}",
        s.workload.name(),
        s.mix,
        s.phases,
        s.records,
        s.ops,
        s.seed,
        s.distribution,
        s.value_size
    )
}

/// Merges directories' runs into groups of one stream each (first directory's order).
pub fn group(dirs: &[(String, Vec<RunResult>)]) -> Vec<Group> {
    let mut groups: Vec<(String, Group)> = Vec::new();
    for (label, runs) in dirs {
        for r in runs {
            let key = stream_key(r);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, g)) => {
                    if !g.runs.iter().any(|x| x.engine == r.engine) {
                        g.runs.push(r.clone());
                    }
                }
                None => groups.push((
                    key,
                    Group {
                        label: label.clone(),
                        runs: vec![r.clone()],
                    },
                )),
            }
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// Settings of the analysis.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub fraction: f64,
    pub latency_tol: f64,
    /// Trailing window of the latency check; None: a tenth of the session.
    pub smooth: Option<usize>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            fraction: 0.5,
            latency_tol: 0.05,
            smooth: None,
        }
    }
}

/// A method's converged latency in session `phase`: from its missions when it has them,
/// else the phase's recorded last half, else the phase mean.
fn session_latency(r: &RunResult, phase: usize, fraction: f64) -> Option<f64> {
    let rows: Vec<&MissionRow> = r.missions.iter().filter(|m| m.phase == phase).collect();
    if !rows.is_empty() {
        return converged_mean_us(&rows, fraction);
    }
    let p = r.phases.iter().find(|p| p.index == phase)?;
    p.converged_mean_us
        .or((p.mean_us > 0.0).then_some(p.mean_us))
        .or((p.latency_us.count > 0).then_some(p.latency_us.mean))
}

/// Builds the table: methods in first-seen order, one session per phase of each group.
pub fn build(groups: &[Group], wanted: Option<&str>, set: Settings) -> Table {
    let mut methods: Vec<String> = Vec::new();
    for g in groups {
        for r in &g.runs {
            if !methods.contains(&r.engine) {
                methods.push(r.engine.clone());
            }
        }
    }
    let names: Vec<&str> = methods.iter().map(String::as_str).collect();
    let primary = primary(&names, wanted).map(str::to_string);
    let mut sessions = Vec::new();
    for g in groups {
        let phases = g.runs.iter().map(|r| r.phases.len()).max().unwrap_or(0);
        let prim = g.runs.iter().find(|r| Some(&r.engine) == primary.as_ref());
        for p in 0..phases.max(1) {
            let mix = g
                .runs
                .iter()
                .find_map(|r| r.phases.iter().find(|x| x.index == p))
                .map_or(String::new(), |x| x.mix.clone());
            let label = match (groups.len() > 1, phases > 1) {
                (true, true) => format!("{} {}", g.label, session_name(&mix)),
                (true, false) => g.label.clone(),
                (false, true) => format!("{} {}", p + 1, session_name(&mix)),
                (false, false) => session_name(&mix),
            };
            let latency = methods
                .iter()
                .map(|m| {
                    let r = g.runs.iter().find(|r| &r.engine == m)?;
                    session_latency(r, p, set.fraction)
                })
                .collect();
            let mut s = Session {
                label,
                mix,
                latency,
                ..Default::default()
            };
            if let Some(r) = prim {
                let rows: Vec<&MissionRow> = r.missions.iter().filter(|m| m.phase == p).collect();
                s.missions = rows.len();
                let ks: Vec<Option<&Vec<usize>>> = rows.iter().map(|m| m.ks.as_ref()).collect();
                s.k_fixed = k_settled(&ks, 0);
                s.k_within1 = k_settled(&ks, 1);
                s.k_end = rows.last().and_then(|m| m.ks.clone());
                if let Some(target) = converged_mean_us(&rows, set.fraction) {
                    s.latency_settled = latency_settled(&rows, target, set.latency_tol, set.smooth);
                }
            }
            sessions.push(s);
        }
    }
    Table {
        methods,
        sessions,
        primary,
        by_missions: groups
            .iter()
            .any(|g| g.runs.iter().any(|r| !r.missions.is_empty())),
    }
}

fn opt(x: Option<f64>, d: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.d$}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn ks_str(k: &Option<Vec<usize>>) -> String {
    k.as_ref().map_or("-".into(), |k| {
        k.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    })
}

fn at(x: Option<usize>, n: usize) -> String {
    match x {
        _ if n == 0 => "-".into(),
        Some(i) => format!("{i} of {n}"),
        None => format!("never (of {n})"),
    }
}

/// The markdown: sessions, Table 3, goals, convergence.
pub fn render(t: &Table, title: &str, tie_tol: f64, set: Settings, sources: &str) -> String {
    let mut s = format!("## {title}\n\n{sources}\n");
    let kind = |m: &str| {
        if t.primary.as_deref() == Some(m) {
            "RusKey"
        } else if t.is_static(m) {
            "static"
        } else {
            "adaptive"
        }
    };
    let _ = writeln!(
        s,
        "Methods: {}. Converged = the last {:.0}% of each session ({}); ranks tie within \
         {:.0}%.\n",
        t.methods
            .iter()
            .map(|m| format!("{m} ({})", kind(m)))
            .collect::<Vec<_>>()
            .join(", "),
        set.fraction * 100.0,
        if t.by_missions {
            "by missions"
        } else {
            "by ops: the phases' last halves"
        },
        tie_tol * 100.0
    );
    let prim = t.primary_index();
    // (a) per session.
    let _ = writeln!(
        s,
        "### Per session: mean latency per op once converged\n\n\
         | session | method | kind | us/op | rank (all) | vs best static |\n\
         |---|---|---|---:|---:|---:|"
    );
    for sess in &t.sessions {
        let all = ranks(&sess.latency, tie_tol);
        let best = t.best_worst(sess).map(|(b, _)| b.1);
        for (i, m) in t.methods.iter().enumerate() {
            if sess.latency[i].is_none() {
                continue;
            }
            let _ = writeln!(
                s,
                "| {} | {m} | {} | {} | {} | {} |",
                sess.label,
                kind(m),
                opt(sess.latency[i], 2),
                all[i].map_or("-".into(), |r| r.to_string()),
                ratio(sess.latency[i], best).map_or("-".into(), |r| format!("{r:.3}x")),
            );
        }
    }
    let _ = writeln!(
        s,
        "\n| session | best static | us/op | {p} us/op | {p} / best static | worst static | us/op | worst static / {p} |\n\
         |---|---|---:|---:|---:|---|---:|---:|",
        p = t.primary.as_deref().unwrap_or("RusKey")
    );
    for sess in &t.sessions {
        let pl = prim.and_then(|i| sess.latency[i]);
        match t.best_worst(sess) {
            Some(((bi, b), (wi, w))) => {
                let _ = writeln!(
                    s,
                    "| {} | {} | {b:.2} | {} | {} | {} | {w:.2} | {} |",
                    sess.label,
                    t.methods[bi],
                    opt(pl, 2),
                    opt(ratio(pl, Some(b)), 3),
                    t.methods[wi],
                    opt(ratio(Some(w), pl), 2),
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "| {} | - | - | {} | - | - | - | - |",
                    sess.label,
                    opt(pl, 2)
                );
            }
        }
    }
    // (b) Table 3.
    let t3 = t.table3_ranks(tie_tol);
    let _ = write!(
        s,
        "\n### Table 3: rank per session\n\n| method | {} | avg |\n|---|{}---:|\n",
        t.sessions
            .iter()
            .map(|x| x.label.as_str())
            .collect::<Vec<_>>()
            .join(" | "),
        "---:|".repeat(t.sessions.len())
    );
    for (i, m) in t.methods.iter().enumerate() {
        let _ = writeln!(
            s,
            "| {m} | {} | {} |",
            t3[i]
                .iter()
                .map(|r| r.map_or("-".into(), |r| r.to_string()))
                .collect::<Vec<_>>()
                .join(" | "),
            opt(mean_rank(&t3[i]), 2)
        );
    }
    s.push_str(
        "\nA static method ranks among the statics and RusKey; an adaptive method among the \
         statics and itself (Table 3, and Fig. 12's table for the greedy variants).\n",
    );
    // (c) goals.
    let Some(pi) = prim else {
        s.push_str("\nNo RusKey method among the runs (cairn:ruskey*, cairn:greedy* or --ruskey): no goals.\n");
        return s;
    };
    let p = &t.methods[pi];
    let avg = mean_rank(&t3[pi]);
    let vs_best: Vec<(String, Option<f64>)> = t
        .sessions
        .iter()
        .map(|x| {
            let b = t.best_worst(x).map(|(b, _)| b.1);
            (x.label.clone(), ratio(x.latency[pi], b))
        })
        .collect();
    let worst_best = vs_best
        .iter()
        .filter_map(|(l, r)| Some((l, (*r)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let over_5: Vec<String> = vs_best
        .iter()
        .filter(|(_, r)| r.is_some_and(|r| r > 1.05))
        .map(|(l, r)| format!("{l} {:.2}x", r.unwrap_or(0.0)))
        .collect();
    let over_worst = t
        .sessions
        .iter()
        .filter_map(|x| {
            let w = t.best_worst(x)?.1;
            Some((
                x.label.clone(),
                t.methods[w.0].clone(),
                w.1 / x.latency[pi]?,
            ))
        })
        .max_by(|a, b| a.2.total_cmp(&b.2));
    let yes = |b: bool| if b { "yes" } else { "no" };
    let _ = writeln!(
        s,
        "\n### Goals ({p})\n\n| goal | target | measured | met |\n|---|---|---|---|"
    );
    let _ = writeln!(
        s,
        "| average rank (Table 3) | <= 1.2 | {} | {} |",
        opt(avg, 2),
        avg.map_or("-", |a| yes(a <= 1.2 + 1e-9))
    );
    let _ = writeln!(
        s,
        "| latency vs best static, every session | <= 1.05x | worst {} | {} |",
        worst_best.map_or("-".into(), |(l, r)| format!("{r:.3}x ({l})")),
        match worst_best {
            None => "-".into(),
            Some(_) if over_5.is_empty() => "yes".to_string(),
            Some(_) => format!("no: {}", over_5.join(", ")),
        }
    );
    let _ = writeln!(
        s,
        "| worst static / {p}, best session | up to 4x (paper) | {} | {} |",
        over_worst
            .as_ref()
            .map_or("-".into(), |(l, m, r)| format!("{r:.2}x ({m}, {l})")),
        over_worst
            .as_ref()
            .map_or("-", |(_, _, r)| if *r >= 4.0 { "yes" } else { "below" })
    );
    // Convergence.
    if t.sessions.iter().any(|x| x.missions > 0) {
        let _ = writeln!(
            s,
            "\n### Convergence of {p} per session (missions from the session's start)\n\n\
             | session | missions | K at end (L1..) | K fixed from | K within +-1 from | latency within {:.0}% from | {p} us/op |\n\
             |---|---:|---|---:|---:|---:|---:|",
            set.latency_tol * 100.0
        );
        for x in &t.sessions {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} |",
                x.label,
                x.missions,
                ks_str(&x.k_end),
                at(x.k_fixed, x.missions),
                at(x.k_within1, x.missions),
                at(x.latency_settled, x.missions),
                opt(x.latency[pi], 2),
            );
        }
        let _ = writeln!(
            s,
            "\nK fixed from m: K_i at the end of every mission from m to the session's end \
             equals its value at the end (+-1: within one at every level; levels the tree \
             grows meanwhile are not a change). Latency: the mean over the trailing {} \
             stays within {:.0}% of the converged mean from m on. \
             The paper: about 300 missions of 50,000 ops to converge (600 on the balanced \
             workload).",
            set.smooth
                .map_or("tenth of the session's missions".into(), |w| format!(
                    "{w} missions"
                )),
            set.latency_tol * 100.0
        );
    }
    s
}

pub fn summary_cmd(a: &RuskeySummaryArgs) -> Result<()> {
    if !(a.converged_fraction > 0.0 && a.converged_fraction <= 1.0) {
        bail!("--converged-fraction must be within (0, 1]");
    }
    let mut dirs = Vec::new();
    for d in &a.dirs {
        let runs: Vec<RunResult> = read_dir(d)?.into_iter().map(|(_, r)| r).collect();
        if runs.is_empty() {
            bail!("{} holds no run", d.display());
        }
        let label = d.file_name().map_or(d.display().to_string(), |n| {
            n.to_string_lossy().into_owned()
        });
        dirs.push((label, runs));
    }
    let set = Settings {
        fraction: a.converged_fraction,
        latency_tol: a.latency_tolerance,
        smooth: a.smooth_missions,
    };
    let groups = group(&dirs);
    let mut table = build(&groups, a.ruskey.as_deref(), set);
    if let (Some(w), None) = (&a.ruskey, &table.primary) {
        eprintln!("warning: --ruskey {w}: no such engine here; the default choice instead");
        table = build(&groups, None, set);
    }
    let mut sources = String::new();
    for (d, (_, runs)) in a.dirs.iter().zip(&dirs) {
        let r = &runs[0];
        let _ = writeln!(
            sources,
            "- `{}`: {} ({} records, {} ops, {} missions of {} ops{}), engines {}",
            d.display(),
            r.workload,
            r.records,
            r.ops,
            r.missions.len(),
            r.mission_ops.map_or("-".into(), |m| m.to_string()),
            r.spec
                .distribution
                .map_or(String::new(), |x| format!(", {x:?}").to_lowercase()),
            runs.iter()
                .map(|r| r.engine.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut md = render(&table, &a.title, a.tie_tolerance, set, &sources);
    md.push_str(&tuner_cost(&dirs));
    if let Some(command) = &a.provenance {
        use crate::report::provenance;
        let head = format!(
            "- command: `{command}`\n- commit: `{}`\n- machine: {}\n- date: {}\n\n",
            provenance::commit(),
            provenance::machine(),
            provenance::date()
        );
        // After the page's first heading.
        md = match md.split_once('\n') {
            Some((h, rest)) if h.starts_with('#') => format!("{h}\n\n{head}{rest}"),
            _ => head + &md,
        };
    }
    print!("{md}");
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| a.dirs[0].join("ruskey-summary.md"));
    std::fs::write(&out, &md).with_context(|| format!("writing {}", out.display()))?;
    if !a.no_plot {
        for (d, (_, runs)) in a.dirs.iter().zip(&dirs) {
            plot_dir(d, runs, table.primary.as_deref())?;
        }
    }
    eprintln!("summary: {}", out.display());
    Ok(())
}

/// Fig. 13: the tuners' training CPU against their missions' operation time, from the
/// engine statistics cairn reports at the end of each run (empty when no run tuned).
pub fn tuner_cost(dirs: &[(String, Vec<RunResult>)]) -> String {
    let mut rows = String::new();
    for (label, runs) in dirs {
        for r in runs {
            let st = |k: &str| r.engine_stats.get(k).copied();
            if !st("tuner_missions").is_some_and(|m| m > 0.0) {
                continue;
            }
            let f = |k: &str, d: usize| opt(st(k), d);
            let _ = writeln!(
                rows,
                "| {label} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.engine,
                f("tuner_missions", 0),
                f("tuner_changes", 0),
                f("tuner_missions_skipped", 0),
                f("tuner_train_cpu_ms", 0),
                f("tuner_mission_op_ms", 0),
                f("tuner_train_share_pct", 2),
                f("tuner_pretrain_cpu_ms", 0),
            );
        }
    }
    if rows.is_empty() {
        return rows;
    }
    format!(
        "\n### Tuner cost (Fig. 13)\n\n\
         | run | method | missions | K changes | missions skipped | train CPU ms | missions' op ms | train / op time % | pretrain CPU ms |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n{rows}\n\
         Missions counted by the engine include the load's writes. The paper: model updates at \
         most about 1% of the operation time.\n"
    )
}

/// ruskey_missions.png in `dir` when its runs have missions.
fn plot_dir(dir: &Path, runs: &[RunResult], primary: Option<&str>) -> Result<()> {
    if runs.iter().any(|r| !r.missions.is_empty()) {
        crate::report::plots::missions(runs, primary, &dir.join("ruskey_missions.png"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::json::PhaseResult;

    fn row(index: usize, phase: usize, mean_ns: f64, ks: &[usize]) -> MissionRow {
        MissionRow {
            index,
            phase,
            ops: 100,
            mean_ns,
            ks: (!ks.is_empty()).then(|| ks.to_vec()),
            ..Default::default()
        }
    }

    #[test]
    fn classification_is_by_name_and_primary_prefers_ruskey() {
        assert!(is_adaptive("cairn:ruskey"));
        assert!(is_adaptive("cairn:ruskey-monkey"));
        assert!(is_adaptive("cairn:greedy-33-67"));
        assert!(!is_adaptive("cairn:default"));
        assert!(!is_adaptive("cairn:lazy-leveling"));
        assert!(!is_adaptive("rocksdb"));
        let e = ["cairn:default", "cairn:greedy", "cairn:ruskey"];
        assert_eq!(primary(&e, None), Some("cairn:ruskey"));
        assert_eq!(primary(&e[..2], None), Some("cairn:greedy"));
        assert_eq!(primary(&e[..1], None), None);
        assert_eq!(primary(&e, Some("cairn:default")), Some("cairn:default"));
        assert_eq!(primary(&e, Some("nope")), None);
    }

    #[test]
    fn ranks_tie_within_tolerance_and_skip() {
        let v = [Some(10.0), Some(10.1), Some(20.0), None, Some(15.0)];
        assert_eq!(
            ranks(&v, 0.02),
            vec![Some(1), Some(1), Some(4), None, Some(3)]
        );
        assert_eq!(
            ranks(&v, 0.0),
            vec![Some(1), Some(2), Some(4), None, Some(3)]
        );
        assert_eq!(mean_rank(&[Some(1), None, Some(2)]), Some(1.5));
        assert_eq!(mean_rank(&[None]), None);
    }

    #[test]
    fn converged_mean_takes_the_last_fraction_weighted_by_ops() {
        let mut rows: Vec<MissionRow> = (0..4)
            .map(|i| row(i, 0, 1000.0 * (i + 1) as f64, &[]))
            .collect();
        rows[3].ops = 300;
        let r: Vec<&MissionRow> = rows.iter().collect();
        // Last half: missions 2 (100 ops at 3 us) and 3 (300 ops at 4 us).
        assert!((converged_mean_us(&r, 0.5).unwrap() - 3.75).abs() < 1e-9);
        assert!((converged_mean_us(&r, 0.01).unwrap() - 4.0).abs() < 1e-9);
        // All: (100 + 200 + 300 + 1200) / 600 ops.
        assert!((converged_mean_us(&r, 1.0).unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(converged_mean_us(&[], 0.5), None);
    }

    #[test]
    fn k_settles_when_it_stops_changing() {
        let ks = [
            vec![1, 1],
            vec![3, 1],
            vec![6, 2],
            vec![5, 2],
            vec![6, 2],
            vec![6, 2],
        ];
        let k: Vec<Option<&Vec<usize>>> = ks.iter().map(Some).collect();
        assert_eq!(k_settled(&k, 0), Some(4));
        assert_eq!(k_settled(&k, 1), Some(2));
        assert_eq!(k_settled(&k, 10), Some(0));
        // A level appearing is no change; a missing K is.
        let grown = [vec![6], vec![6, 2], vec![6, 2]];
        let g: Vec<Option<&Vec<usize>>> = grown.iter().map(Some).collect();
        assert_eq!(k_settled(&g, 0), Some(0));
        let gap = [Some(&grown[0]), None, Some(&grown[1])];
        assert_eq!(k_settled(&gap, 0), Some(2));
        assert_eq!(k_settled(&[None, None], 0), None);
        assert_eq!(k_settled(&[], 0), None);
    }

    #[test]
    fn latency_settles_on_the_smoothed_series() {
        let mut means = vec![50.0, 40.0, 30.0, 20.9, 20.0, 19.5, 20.5, 20.0];
        // 20 missions, so a window of 2 (a tenth) is allowed.
        means.resize(20, 20.0);
        let rows: Vec<MissionRow> = means
            .iter()
            .enumerate()
            .map(|(i, m)| row(i, 0, m * 1000.0, &[]))
            .collect();
        let r: Vec<&MissionRow> = rows.iter().collect();
        assert_eq!(latency_settled(&r, 20.0, 0.05, Some(1)), Some(3));
        // A trailing mean of 2 reaches 20.45 at mission 4.
        assert_eq!(latency_settled(&r, 20.0, 0.05, Some(2)), Some(4));
        // Never within 1% of 25.
        assert_eq!(latency_settled(&r, 25.0, 0.01, Some(1)), None);
        // A spike late resets it.
        let mut spiky = rows.clone();
        spiky[6].mean_ns = 40_000.0;
        let s: Vec<&MissionRow> = spiky.iter().collect();
        assert_eq!(latency_settled(&s, 20.0, 0.05, Some(1)), Some(7));
        // By default the window is a tenth of the session: 2 of 20 missions, 1 of 8.
        assert_eq!(latency_settled(&r, 20.0, 0.05, None), Some(4));
        assert_eq!(latency_settled(&r[..8], 20.0, 0.05, None), Some(3));
    }

    fn run(engine: &str, sessions: &[&[f64]], ks: &[&[usize]]) -> RunResult {
        let mut r = RunResult {
            engine: engine.into(),
            ..Default::default()
        };
        let mut i = 0;
        for (p, lats) in sessions.iter().enumerate() {
            r.phases.push(PhaseResult {
                index: p,
                mix: ["read=0.9,update=0.1", "read=0.1,update=0.9"][p % 2].into(),
                ..Default::default()
            });
            for (j, l) in lats.iter().enumerate() {
                let k = ks.get(p).map_or(&[][..], |k| &k[j..=j]);
                r.missions.push(row(i, p, l * 1000.0, k));
                i += 1;
            }
        }
        r
    }

    #[test]
    fn table3_and_goals_on_hand_made_series() {
        // Two sessions of 4 missions: read-heavy (leveling best) then write-heavy.
        let runs = vec![
            run("cairn:default", &[&[10.0; 4], &[40.0; 4]], &[]),
            run("cairn:tiering", &[&[20.0; 4], &[10.0; 4]], &[]),
            run("cairn:moderate", &[&[15.0; 4], &[20.0; 4]], &[]),
            run(
                "cairn:ruskey",
                &[&[30.0, 20.0, 10.1, 10.0], &[40.0, 20.0, 10.2, 10.0]],
                &[&[1, 1, 1, 1], &[3, 8, 10, 10]],
            ),
            run("cairn:greedy", &[&[15.0; 4], &[10.0; 4]], &[]),
        ];
        let groups = group(&[("sessions".into(), runs)]);
        assert_eq!(groups.len(), 1);
        let t = build(&groups, None, Settings::default());
        assert_eq!(t.primary.as_deref(), Some("cairn:ruskey"));
        assert_eq!(t.sessions.len(), 2);
        assert_eq!(t.sessions[0].label, "1 Read-H (90% lookups)");
        let s0 = &t.sessions[0];
        assert!((s0.latency[3].unwrap() - 10.05).abs() < 1e-9);
        let ((b, _), (w, _)) = t.best_worst(&t.sessions[1]).unwrap();
        assert_eq!(
            (t.methods[b].as_str(), t.methods[w].as_str()),
            ("cairn:tiering", "cairn:default")
        );
        let r = t.table3_ranks(0.02);
        // Statics among statics + RusKey; ruskey and greedy among statics + themselves.
        assert_eq!(r[0], vec![Some(1), Some(4)]);
        assert_eq!(r[1], vec![Some(4), Some(1)]);
        assert_eq!(r[2], vec![Some(3), Some(3)]);
        assert_eq!(r[3], vec![Some(1), Some(1)]);
        assert_eq!(r[4], vec![Some(2), Some(1)]);
        assert_eq!(t.sessions[1].k_fixed, Some(2));
        assert_eq!(t.sessions[1].k_within1, Some(2));
        assert_eq!(t.sessions[1].k_end, Some(vec![10]));
        assert_eq!(t.sessions[0].k_fixed, Some(0));
        let md = render(&t, "test", 0.02, Settings::default(), "");
        assert!(
            md.contains("| average rank (Table 3) | <= 1.2 | 1.00 | yes |"),
            "{md}"
        );
        assert!(
            md.contains("3.96x (cairn:default, 2 Write-H (10% lookups))"),
            "{md}"
        );
        assert!(md.contains("| cairn:greedy | 2 | 1 | 1.50 |"), "{md}");
    }

    #[test]
    fn directories_of_one_stream_merge_and_others_add_sessions() {
        let mut a = run("cairn:default", &[&[10.0]], &[]);
        let mut b = run("cairn:greedy-50-50", &[&[12.0]], &[]);
        let mut c = run("cairn:default", &[&[30.0]], &[]);
        a.spec.seed = 1;
        b.spec.seed = 1;
        c.spec.seed = 1;
        c.spec.mix = Some("read=0.5,update=0.5".into());
        let g = group(&[
            ("main".into(), vec![a]),
            ("greedy".into(), vec![b]),
            ("balanced".into(), vec![c]),
        ]);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].runs.len(), 2);
        assert_eq!(g[0].label, "main");
        let t = build(&g, None, Settings::default());
        assert_eq!(t.sessions.len(), 2);
        assert_eq!(t.sessions[1].label, "balanced");
        assert_eq!(t.sessions[1].latency, vec![Some(30.0), None]);
        assert_eq!(t.primary.as_deref(), Some("cairn:greedy-50-50"));
    }

    #[test]
    fn tuner_cost_lists_only_runs_that_tuned() {
        let mut a = RunResult {
            engine: "cairn:ruskey".into(),
            ..Default::default()
        };
        for (k, v) in [
            ("tuner_missions", 120.0),
            ("tuner_changes", 7.0),
            ("tuner_train_share_pct", 0.8),
        ] {
            a.engine_stats.insert(k.into(), v);
        }
        let b = RunResult {
            engine: "cairn:default".into(),
            ..Default::default()
        };
        let s = tuner_cost(&[("sessions".into(), vec![a, b.clone()])]);
        assert!(
            s.contains("| sessions | cairn:ruskey | 120 | 7 | - | - | - | 0.80 | - |"),
            "{s}"
        );
        assert!(!s.contains("cairn:default"));
        assert_eq!(tuner_cost(&[("x".into(), vec![b])]), "");
    }

    #[test]
    fn session_names_follow_the_paper() {
        assert_eq!(session_name("read=0.9,update=0.1"), "Read-H (90% lookups)");
        assert_eq!(session_name("read=0.3,update=0.7"), "Write-I (30% lookups)");
        assert_eq!(session_name("read=0.95,insert=0.05"), "95% lookups");
        assert_eq!(session_name("garbage"), "garbage");
    }

    #[test]
    fn falls_back_to_the_phase_figures_without_missions() {
        let mut r = RunResult::default();
        r.phases.push(PhaseResult {
            index: 0,
            mean_us: 9.0,
            converged_mean_us: Some(7.0),
            ..Default::default()
        });
        assert_eq!(session_latency(&r, 0, 0.5), Some(7.0));
        r.phases[0].converged_mean_us = None;
        assert_eq!(session_latency(&r, 0, 0.5), Some(9.0));
        assert_eq!(session_latency(&r, 1, 0.5), None);
    }
}
