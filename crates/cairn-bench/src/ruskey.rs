//! `cairn-bench ruskey-summary`: RusKey's evaluation (section 7) from `compare` output
//! directories: per session each method's mean latency per op once converged, ranks
//! (Table 3, Fig. 12), the best and worst static policies, the paper's goals, and when
//! RusKey's run limits and latency settled in each session. `scripts/ruskey-bench.sh`
//! prints every part with it.
//!
//! Every run counts: runs of one engine on one stream (several directories, or
//! `--tuner-seed` repeats in `seed-N` directories) are repeats. A method's value in a
//! session is the median over its repeats, which ranks and goals use; the tables show the
//! number of runs and the worst repeat beside it, and convergence is counted per seed.
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
    /// greedy runs in their own directory rank against the statics of another and an
    /// engine's runs in several directories (tuner seeds) are repeats; the others add
    /// their sessions (e.g. the read-heavy, balanced and write-heavy static workloads as
    /// three sessions of one table).
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
    /// A repeat (seed) of the RusKey method converged after a shift (a session's start)
    /// when its latency settles (--latency-tolerance) within this many missions; the goal
    /// is >= 9 of 10 seeds converged in every session.
    #[arg(long, default_value_t = CONVERGE_WITHIN, value_name = "MISSIONS")]
    pub converge_within: usize,
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

/// Which repeat of a method a value comes from: the tuner seed its run recorded
/// (`--tuner-seed`), else its place among the method's runs of the stream (1-based).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepeatId {
    pub seed: Option<u64>,
    pub run: usize,
}

impl RepeatId {
    /// Runs with one seed are one repeat across streams (the goals count seeds); without
    /// seeds, the n-th runs are.
    fn key(self) -> (Option<u64>, usize) {
        (self.seed, if self.seed.is_some() { 0 } else { self.run })
    }
}

impl std::fmt::Display for RepeatId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.seed {
            Some(s) => write!(f, "seed {s}"),
            None => write!(f, "run {}", self.run),
        }
    }
}

/// A method's converged latency (us/op) in one session, one value per repeat.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Repeated {
    pub values: Vec<(RepeatId, f64)>,
}

impl Repeated {
    pub fn runs(&self) -> usize {
        self.values.len()
    }

    /// The median (the mean of the middle two for an even count): one unlucky seed moves
    /// it less than a mean.
    pub fn median(&self) -> Option<f64> {
        let mut v: Vec<f64> = self.values.iter().map(|x| x.1).collect();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(v[n / 2]),
            _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        }
    }

    /// The slowest repeat (the first of equals: `max_by` keeps the last).
    pub fn worst(&self) -> Option<(RepeatId, f64)> {
        self.values
            .iter()
            .rev()
            .copied()
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// The primary method's convergence in one session, for one repeat.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Convergence {
    pub id: RepeatId,
    /// Missions of the session.
    pub missions: usize,
    /// Missions to a fixed K / K within +-1 / latency within tolerance, and its K at the
    /// session's end.
    pub k_fixed: Option<usize>,
    pub k_within1: Option<usize>,
    pub latency_settled: Option<usize>,
    pub k_end: Option<Vec<usize>>,
    /// This repeat's converged mean latency per op (us).
    pub latency: Option<f64>,
}

impl Convergence {
    /// Whether its latency settled within `within` missions of the session's start (a
    /// workload shift); one that never settles has not converged.
    pub fn converged(&self, within: usize) -> bool {
        self.latency_settled.is_some_and(|m| m <= within)
    }
}

/// One repeat's convergence in session `phase`; None without a per-mission series.
fn convergence(id: RepeatId, r: &RunResult, phase: usize, set: Settings) -> Option<Convergence> {
    let rows: Vec<&MissionRow> = r.missions.iter().filter(|m| m.phase == phase).collect();
    if rows.is_empty() {
        return None;
    }
    let ks: Vec<Option<&Vec<usize>>> = rows.iter().map(|m| m.ks.as_ref()).collect();
    let latency = converged_mean_us(&rows, set.fraction);
    Some(Convergence {
        id,
        missions: rows.len(),
        k_fixed: k_settled(&ks, 0),
        k_within1: k_settled(&ks, 1),
        latency_settled: latency
            .and_then(|t| latency_settled(&rows, t, set.latency_tol, set.smooth)),
        k_end: rows.last().and_then(|m| m.ks.clone()),
        latency,
    })
}

/// One session of one workload: the methods' converged latencies and RusKey's series.
#[derive(Clone, Debug, Default)]
pub struct Session {
    pub label: String,
    pub mix: String,
    /// Per method, in `Table::methods` order: the median over its repeats of its converged
    /// mean latency per op (us). Ranks and goals use it.
    pub latency: Vec<Option<f64>>,
    /// Per method, in `Table::methods` order: every repeat's value.
    pub repeats: Vec<Repeated>,
    /// The primary's convergence, one per repeat with a per-mission series.
    pub convergence: Vec<Convergence>,
}

#[derive(Clone, Debug, Default)]
pub struct Table {
    pub methods: Vec<String>,
    pub sessions: Vec<Session>,
    pub primary: Option<String>,
    /// Whether the runs have per-mission series (else the phases' last halves count).
    pub by_missions: bool,
    /// The primary's largest share of training CPU in its missions' op time (%) over its
    /// runs, and which run ("group, seed 3").
    pub train_share: Option<(String, f64)>,
}

impl Table {
    fn is_static(&self, m: &str) -> bool {
        !is_adaptive(m) && self.primary.as_deref() != Some(m)
    }

    fn kind(&self, m: &str) -> &'static str {
        if self.primary.as_deref() == Some(m) {
            "RusKey"
        } else if self.is_static(m) {
            "static"
        } else {
            "adaptive"
        }
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

/// Whether a directory name is a seed's (`seed-N`, scripts/ruskey-bench.sh's repeats).
fn is_seed_dir(name: &str) -> bool {
    name.strip_prefix("seed-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The directory a seed directory repeats (its parent), else the directory itself.
fn base_dir(d: &Path) -> &Path {
    match d.file_name().and_then(|n| n.to_str()) {
        Some(n) if is_seed_dir(n) => d.parent().unwrap_or(d),
        _ => d,
    }
}

/// A directory's label: its name, `PARENT/seed-N` for a seed directory.
pub fn dir_label(d: &Path) -> String {
    let name = |p: &Path| {
        p.file_name().map_or(p.display().to_string(), |n| {
            n.to_string_lossy().into_owned()
        })
    };
    match base_dir(d) {
        b if b != d && b.file_name().is_some() => format!("{}/{}", name(b), name(d)),
        _ => name(d),
    }
}

/// Merges directories' runs into groups of one stream each (first directory's order).
/// Every run counts: runs of one engine on one stream are repeats (tuner seeds). A group
/// is labelled by its first directory, without a `/seed-N`.
pub fn group(dirs: &[(String, Vec<RunResult>)]) -> Vec<Group> {
    let mut groups: Vec<(String, Group)> = Vec::new();
    for (label, runs) in dirs {
        for r in runs {
            let key = stream_key(r);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, g)) => g.runs.push(r.clone()),
                None => groups.push((
                    key,
                    Group {
                        label: label
                            .rsplit_once("/seed-")
                            .map_or(label.as_str(), |(b, _)| b)
                            .to_string(),
                        runs: vec![r.clone()],
                    },
                )),
            }
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// RusKey's convergence goal: within this many missions of a shift (section 7).
pub const CONVERGE_WITHIN: usize = 300;

/// Settings of the analysis.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub fraction: f64,
    pub latency_tol: f64,
    /// Trailing window of the latency check; None: a tenth of the session.
    pub smooth: Option<usize>,
    /// A repeat converged when its latency settles within this many missions of the
    /// session's start.
    pub converge_within: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            fraction: 0.5,
            latency_tol: 0.05,
            smooth: None,
            converge_within: CONVERGE_WITHIN,
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
    let methods = methods_of(groups);
    let names: Vec<&str> = methods.iter().map(String::as_str).collect();
    let primary = primary(&names, wanted).map(str::to_string);
    let sessions = groups
        .iter()
        .flat_map(|g| group_sessions(g, groups.len() > 1, &methods, primary.as_deref(), set))
        .collect();
    Table {
        train_share: primary
            .as_deref()
            .and_then(|p| worst_train_share(groups, p)),
        methods,
        sessions,
        primary,
        by_missions: groups
            .iter()
            .any(|g| g.runs.iter().any(|r| !r.missions.is_empty())),
    }
}

fn methods_of(groups: &[Group]) -> Vec<String> {
    let mut methods: Vec<String> = Vec::new();
    for r in groups.iter().flat_map(|g| &g.runs) {
        if !methods.contains(&r.engine) {
            methods.push(r.engine.clone());
        }
    }
    methods
}

/// An engine's runs in a group, in order, with their repeat ids.
fn runs_of<'a>(g: &'a Group, engine: &str) -> Vec<(RepeatId, &'a RunResult)> {
    g.runs
        .iter()
        .filter(|r| r.engine == engine)
        .enumerate()
        .map(|(i, r)| {
            let id = RepeatId {
                seed: r.config.tuner_seed,
                run: i + 1,
            };
            (id, r)
        })
        .collect()
}

/// A group's sessions, one per phase: every method's repeats and the primary's
/// convergence per repeat.
fn group_sessions(
    g: &Group,
    many_groups: bool,
    methods: &[String],
    primary: Option<&str>,
    set: Settings,
) -> Vec<Session> {
    let phases = g.runs.iter().map(|r| r.phases.len()).max().unwrap_or(0);
    (0..phases.max(1))
        .map(|p| {
            let mix = g
                .runs
                .iter()
                .find_map(|r| r.phases.iter().find(|x| x.index == p))
                .map_or(String::new(), |x| x.mix.clone());
            let repeats: Vec<Repeated> = methods
                .iter()
                .map(|m| Repeated {
                    values: runs_of(g, m)
                        .into_iter()
                        .filter_map(|(id, r)| Some((id, session_latency(r, p, set.fraction)?)))
                        .collect(),
                })
                .collect();
            let convergence = primary.map_or(Vec::new(), |pm| {
                runs_of(g, pm)
                    .into_iter()
                    .filter_map(|(id, r)| convergence(id, r, p, set))
                    .collect()
            });
            Session {
                label: session_label(&g.label, &mix, p, many_groups, phases > 1),
                mix,
                latency: repeats.iter().map(Repeated::median).collect(),
                repeats,
                convergence,
            }
        })
        .collect()
}

fn session_label(group: &str, mix: &str, p: usize, many_groups: bool, phased: bool) -> String {
    match (many_groups, phased) {
        (true, true) => format!("{group} {}", session_name(mix)),
        (true, false) => group.to_string(),
        (false, true) => format!("{} {}", p + 1, session_name(mix)),
        (false, false) => session_name(mix),
    }
}

/// Training CPU over the missions' op time (%) of a run whose tuner ran.
fn train_share(r: &RunResult) -> Option<f64> {
    let st = |k: &str| r.engine_stats.get(k).copied();
    st("tuner_missions")
        .filter(|m| *m > 0.0)
        .and(st("tuner_train_share_pct"))
}

/// The primary's run that spent the largest share of its op time training.
fn worst_train_share(groups: &[Group], primary: &str) -> Option<(String, f64)> {
    groups
        .iter()
        .flat_map(|g| {
            runs_of(g, primary)
                .into_iter()
                .filter_map(|(id, r)| Some((format!("{}, {id}", g.label), train_share(r)?)))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
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

/// The slowest repeat's value, naming it when there is a seed or more than one run.
fn worst_cell(r: &Repeated) -> String {
    match r.worst() {
        None => "-".into(),
        Some((id, v)) if id.seed.is_some() || r.runs() > 1 => format!("{v:.2} ({id})"),
        Some((_, v)) => format!("{v:.2}"),
    }
}

/// The markdown: sessions, Table 3, goals, convergence.
pub fn render(t: &Table, title: &str, tie_tol: f64, set: Settings, sources: &str) -> String {
    let mut s = render_head(t, title, tie_tol, set, sources);
    s.push_str(&render_sessions(t, tie_tol));
    s.push_str(&render_best_worst(t));
    s.push_str(&render_table3(t, tie_tol));
    let Some(pi) = t.primary_index() else {
        s.push_str("\nNo RusKey method among the runs (cairn:ruskey*, cairn:greedy* or --ruskey): no goals.\n");
        return s;
    };
    s.push_str(&render_goals(t, pi, tie_tol, set));
    s.push_str(&render_convergence(t, &t.methods[pi], set));
    s
}

fn render_head(t: &Table, title: &str, tie_tol: f64, set: Settings, sources: &str) -> String {
    let mut s = format!("## {title}\n\n{sources}\n");
    let _ = writeln!(
        s,
        "Methods: {}. Converged = the last {:.0}% of each session ({}); ranks tie within \
         {:.0}%. Runs of a method on one stream are repeats (tuner seeds): us/op is their \
         median, which ranks and goals use; worst is the slowest repeat.\n",
        t.methods
            .iter()
            .map(|m| format!("{m} ({})", t.kind(m)))
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
    s
}

/// (a) Every method per session: median, runs, worst repeat, rank, ratio to the best static.
fn render_sessions(t: &Table, tie_tol: f64) -> String {
    let mut s = String::from(
        "### Per session: mean latency per op once converged\n\n\
         | session | method | kind | runs | us/op | worst | rank (all) | vs best static |\n\
         |---|---|---|---:|---:|---:|---:|---:|\n",
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
                "| {} | {m} | {} | {} | {} | {} | {} | {} |",
                sess.label,
                t.kind(m),
                sess.repeats[i].runs(),
                opt(sess.latency[i], 2),
                worst_cell(&sess.repeats[i]),
                all[i].map_or("-".into(), |r| r.to_string()),
                ratio(sess.latency[i], best).map_or("-".into(), |r| format!("{r:.3}x")),
            );
        }
    }
    s
}

/// The best and worst static per session against the primary's median.
fn render_best_worst(t: &Table) -> String {
    let prim = t.primary_index();
    let mut s = format!(
        "\n| session | best static | us/op | {p} us/op | {p} runs | {p} worst | {p} / best static | worst static | us/op | worst static / {p} |\n\
         |---|---|---:|---:|---:|---:|---:|---|---:|---:|\n",
        p = t.primary.as_deref().unwrap_or("RusKey")
    );
    for sess in &t.sessions {
        let pl = prim.and_then(|i| sess.latency[i]);
        let (runs, worst) = prim.map_or(("-".into(), "-".into()), |i| {
            let r = &sess.repeats[i];
            (r.runs().to_string(), worst_cell(r))
        });
        let statics = match t.best_worst(sess) {
            Some(((bi, b), (wi, w))) => [
                t.methods[bi].clone(),
                format!("{b:.2}"),
                opt(ratio(pl, Some(b)), 3),
                t.methods[wi].clone(),
                format!("{w:.2}"),
                opt(ratio(Some(w), pl), 2),
            ],
            None => std::array::from_fn(|_| "-".to_string()),
        };
        let [bm, b, pb, wm, w, wp] = statics;
        let _ = writeln!(
            s,
            "| {} | {bm} | {b} | {} | {runs} | {worst} | {pb} | {wm} | {w} | {wp} |",
            sess.label,
            opt(pl, 2),
        );
    }
    s
}

/// (b) Table 3: ranks per method and session, from the medians.
fn render_table3(t: &Table, tie_tol: f64) -> String {
    let t3 = t.table3_ranks(tie_tol);
    let mut s = format!(
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
    s
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// (c) The goals of the primary (index `pi`), on the medians; the worst repeat beside.
fn render_goals(t: &Table, pi: usize, tie_tol: f64, set: Settings) -> String {
    let p = &t.methods[pi];
    let avg = mean_rank(&t.table3_ranks(tie_tol)[pi]);
    let mut s = format!(
        "\n### Goals ({p})\n\n| goal | target | measured | met |\n|---|---|---|---|\n\
         | average rank (Table 3) | <= 1.2 | {} | {} |\n",
        opt(avg, 2),
        avg.map_or("-", |a| yes(a <= 1.2 + 1e-9))
    );
    s.push_str(&goal_vs_best(t, pi));
    s.push_str(&goal_vs_worst(t, pi));
    s.push_str(&goal_converged(t, set.converge_within));
    s.push_str(&goal_training(t));
    s
}

/// Within 5% of the best static in every session (medians); the worst repeat's ratio too.
fn goal_vs_best(t: &Table, pi: usize) -> String {
    let best = |x: &Session| t.best_worst(x).map(|(b, _)| b.1);
    let vs_best: Vec<(&str, Option<f64>)> = t
        .sessions
        .iter()
        .map(|x| (x.label.as_str(), ratio(x.latency[pi], best(x))))
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
    let mut measured = format!(
        "worst {}",
        worst_best.map_or("-".into(), |(l, r)| format!("{r:.3}x ({l})"))
    );
    if t.sessions.iter().any(|x| x.repeats[pi].runs() > 1) {
        let worst_repeat = t
            .sessions
            .iter()
            .filter_map(|x| {
                let (id, v) = x.repeats[pi].worst()?;
                Some((&x.label, id, ratio(Some(v), best(x))?))
            })
            .max_by(|a, b| a.2.total_cmp(&b.2));
        if let Some((l, id, r)) = worst_repeat {
            let _ = write!(measured, "; worst repeat {r:.3}x ({id}, {l})");
        }
    }
    let met = match worst_best {
        None => "-".into(),
        Some(_) if over_5.is_empty() => "yes".to_string(),
        Some(_) => format!("no: {}", over_5.join(", ")),
    };
    format!("| latency vs best static, every session | <= 1.05x | {measured} | {met} |\n")
}

/// The worst static over the primary's median in its best session (the paper: up to 4x).
fn goal_vs_worst(t: &Table, pi: usize) -> String {
    let over_worst = t
        .sessions
        .iter()
        .filter_map(|x| {
            let w = t.best_worst(x)?.1;
            Some((&x.label, &t.methods[w.0], w.1 / x.latency[pi]?))
        })
        .max_by(|a, b| a.2.total_cmp(&b.2));
    format!(
        "| worst static / {}, best session | up to 4x (paper) | {} | {} |\n",
        t.methods[pi],
        over_worst.map_or("-".into(), |(l, m, r)| format!("{r:.2}x ({m}, {l})")),
        over_worst.map_or("-", |(_, _, r)| if r >= 4.0 { "yes" } else { "below" })
    )
}

/// Per repeat (seed), whether it converged in every session with a series: (converged,
/// repeats, those that did not).
pub fn converged_seeds(t: &Table, within: usize) -> (usize, usize, Vec<RepeatId>) {
    let mut seen: Vec<(RepeatId, bool)> = Vec::new();
    for c in t.sessions.iter().flat_map(|s| &s.convergence) {
        let ok = c.converged(within);
        match seen.iter_mut().find(|(id, _)| id.key() == c.id.key()) {
            Some((_, v)) => *v &= ok,
            None => seen.push((c.id, ok)),
        }
    }
    let failed: Vec<RepeatId> = seen.iter().filter(|x| !x.1).map(|x| x.0).collect();
    (seen.len() - failed.len(), seen.len(), failed)
}

/// RusKey's convergence goal: >= 9 of 10 seeds converged after every shift.
fn goal_converged(t: &Table, within: usize) -> String {
    let (ok, n, failed) = converged_seeds(t, within);
    let (measured, met) = match n {
        0 => ("-".to_string(), "-"),
        _ => {
            let not = failed.iter().map(|id| id.to_string()).collect::<Vec<_>>();
            let mut m = format!("{ok} of {n} seeds, every session");
            if !not.is_empty() {
                let _ = write!(m, " (not: {})", not.join(", "));
            }
            (m, yes(ok * 10 >= n * 9))
        }
    };
    format!(
        "| converged within {within} missions of a shift | >= 9 of 10 seeds | {measured} | {met} |\n"
    )
}

/// Fig. 13's bound on the primary's worst run.
fn goal_training(t: &Table) -> String {
    let (measured, met) = match &t.train_share {
        None => ("-".to_string(), "-"),
        Some((run, pct)) => (format!("worst {pct:.2}% ({run})"), yes(*pct <= 1.0)),
    };
    format!("| training / op time, worst run | <= 1% | {measured} | {met} |\n")
}

/// When the primary's K and latency settled, per session and repeat, and how many
/// repeats converged after each shift.
fn render_convergence(t: &Table, p: &str, set: Settings) -> String {
    if t.sessions.iter().all(|x| x.convergence.is_empty()) {
        return String::new();
    }
    let mut s = format!(
        "\n### Convergence of {p} per session (missions from the session's start)\n\n\
         | session | repeat | missions | K at end (L1..) | K fixed from | K within +-1 from | latency within {:.0}% from | {p} us/op |\n\
         |---|---|---:|---|---:|---:|---:|---:|\n",
        set.latency_tol * 100.0
    );
    for x in &t.sessions {
        for c in &x.convergence {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                x.label,
                c.id,
                c.missions,
                ks_str(&c.k_end),
                at(c.k_fixed, c.missions),
                at(c.k_within1, c.missions),
                at(c.latency_settled, c.missions),
                opt(c.latency, 2),
            );
        }
    }
    s.push('\n');
    for x in t.sessions.iter().filter(|x| !x.convergence.is_empty()) {
        let ok = x
            .convergence
            .iter()
            .filter(|c| c.converged(set.converge_within))
            .count();
        let _ = writeln!(
            s,
            "- {}: converged within {} missions of the shift: {ok} of {} seeds",
            x.label,
            set.converge_within,
            x.convergence.len()
        );
    }
    let _ = writeln!(
        s,
        "\nConverged: latency within {tol:.0}% from mission {w} or earlier (a repeat that \
         never settles has not). K fixed from m: K_i at the end of every mission from m to \
         the session's end equals its value at the end (+-1: within one at every level; \
         levels the tree grows meanwhile are not a change). Latency: the mean over the \
         trailing {} stays within {tol:.0}% of the converged mean from m on. \
         The paper: about 300 missions of 50,000 ops to converge (600 on the balanced \
         workload).",
        set.smooth
            .map_or("tenth of the session's missions".into(), |w| format!(
                "{w} missions"
            )),
        tol = set.latency_tol * 100.0,
        w = set.converge_within,
    );
    s
}

pub fn summary_cmd(a: &RuskeySummaryArgs) -> Result<()> {
    let md = summary(a)?;
    print!("{md}");
    Ok(())
}

/// The summary's markdown, written to its `--out` (with the plots, unless `--no-plot`).
pub fn summary(a: &RuskeySummaryArgs) -> Result<String> {
    if !(a.converged_fraction > 0.0 && a.converged_fraction <= 1.0) {
        bail!("--converged-fraction must be within (0, 1]");
    }
    let dirs = read_dirs(&a.dirs)?;
    let set = Settings {
        fraction: a.converged_fraction,
        latency_tol: a.latency_tolerance,
        smooth: a.smooth_missions,
        converge_within: a.converge_within,
    };
    let groups = group(&dirs);
    let mut table = build(&groups, a.ruskey.as_deref(), set);
    if let (Some(w), None) = (&a.ruskey, &table.primary) {
        eprintln!("warning: --ruskey {w}: no such engine here; the default choice instead");
        table = build(&groups, None, set);
    }
    let mut md = render(
        &table,
        &a.title,
        a.tie_tolerance,
        set,
        &sources(&a.dirs, &dirs),
    );
    md.push_str(&tuner_cost(&dirs));
    if let Some(command) = &a.provenance {
        md = crate::report::provenance::with_provenance(md, command);
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| a.dirs[0].join("ruskey-summary.md"));
    std::fs::write(&out, &md).with_context(|| format!("writing {}", out.display()))?;
    if !a.no_plot {
        for (i, d) in a.dirs.iter().enumerate() {
            plot_dir(d, &plot_runs(i, &a.dirs, &dirs), table.primary.as_deref())?;
        }
    }
    eprintln!("summary: {}", out.display());
    Ok(md)
}

/// Every directory's runs, labelled (see [`dir_label`]).
fn read_dirs(paths: &[PathBuf]) -> Result<Vec<(String, Vec<RunResult>)>> {
    let mut dirs = Vec::new();
    for d in paths {
        let runs: Vec<RunResult> = read_dir(d)?.into_iter().map(|(_, r)| r).collect();
        if runs.is_empty() {
            bail!("{} holds no run", d.display());
        }
        dirs.push((dir_label(d), runs));
    }
    Ok(dirs)
}

/// One line per directory: its stream, engines and tuner seed.
fn sources(paths: &[PathBuf], dirs: &[(String, Vec<RunResult>)]) -> String {
    let mut s = String::new();
    for (d, (_, runs)) in paths.iter().zip(dirs) {
        let r = &runs[0];
        let _ = writeln!(
            s,
            "- `{}`: {} ({} records, {} ops, {} missions of {} ops{}), engines {}{}",
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
                .join(", "),
            r.config
                .tuner_seed
                .map_or(String::new(), |s| format!(", tuner seed {s}"))
        );
    }
    s
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
                "| {label} | {}{} | {} | {} | {} | {} | {} | {} | {} |",
                r.engine,
                r.config
                    .tuner_seed
                    .map_or(String::new(), |s| format!(" (seed {s})")),
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

/// The runs to plot in directory `i`: its own, and for each engine it lacks the first
/// run on its stream in a companion directory (`D` and `D/seed-N`), so a seed's runs and
/// the statics run once beside them share one Fig. 7.
fn plot_runs(i: usize, paths: &[PathBuf], dirs: &[(String, Vec<RunResult>)]) -> Vec<RunResult> {
    let mut runs = dirs[i].1.clone();
    let key = stream_key(&runs[0]);
    let companions = paths
        .iter()
        .zip(dirs)
        .enumerate()
        .filter(|(j, (p, _))| *j != i && base_dir(p) == base_dir(&paths[i]));
    for (_, (_, (_, other))) in companions {
        for r in other {
            if stream_key(r) == key && !runs.iter().any(|x| x.engine == r.engine) {
                runs.push(r.clone());
            }
        }
    }
    runs
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
        assert_eq!(t.sessions[1].convergence[0].k_fixed, Some(2));
        assert_eq!(t.sessions[1].convergence[0].k_within1, Some(2));
        assert_eq!(t.sessions[1].convergence[0].k_end, Some(vec![10]));
        assert_eq!(t.sessions[0].convergence[0].k_fixed, Some(0));
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

    fn seeded(mut r: RunResult, seed: u64, train_pct: f64) -> RunResult {
        r.config.tuner_seed = Some(seed);
        r.engine_stats.insert("tuner_missions".into(), 8.0);
        r.engine_stats
            .insert("tuner_train_share_pct".into(), train_pct);
        r
    }

    /// Two statics in `sessions`, cairn:ruskey once per seed in `sessions/seed-N`.
    fn seed_dirs(ruskey: Vec<RunResult>) -> Vec<Group> {
        let statics = vec![
            run("cairn:default", &[&[10.0; 4], &[40.0; 4]], &[]),
            run("cairn:tiering", &[&[20.0; 4], &[10.0; 4]], &[]),
        ];
        let mut dirs = vec![("sessions".to_string(), statics)];
        for r in ruskey {
            let seed = r.config.tuner_seed.unwrap();
            dirs.push((format!("sessions/seed-{seed}"), vec![r]));
        }
        group(&dirs)
    }

    #[test]
    fn a_single_run_gives_the_old_numbers() {
        let runs = vec![
            run("cairn:default", &[&[10.0; 4], &[40.0; 4]], &[]),
            run(
                "cairn:ruskey",
                &[&[30.0, 20.0, 10.1, 10.0], &[40.0, 20.0, 10.2, 10.0]],
                &[&[1, 1, 1, 1], &[3, 8, 10, 10]],
            ),
        ];
        let t = build(
            &group(&[("sessions".into(), runs.clone())]),
            None,
            Settings::default(),
        );
        for (si, sess) in t.sessions.iter().enumerate() {
            for (m, r) in runs.iter().enumerate() {
                assert_eq!(sess.latency[m], session_latency(r, si, 0.5));
                assert_eq!(sess.repeats[m].runs(), 1);
            }
            assert_eq!(sess.convergence.len(), 1);
            assert_eq!(sess.convergence[0].id, RepeatId { seed: None, run: 1 });
        }
        let md = render(&t, "test", 0.02, Settings::default(), "");
        for want in [
            "| 1 Read-H (90% lookups) | cairn:ruskey | RusKey | 1 | 10.05 | 10.05 | 1 | 1.005x |",
            "| 1 Read-H (90% lookups) | cairn:default | 10.00 | 10.05 | 1 | 10.05 | 1.005 |",
            "| 2 Write-H (10% lookups) | run 1 | 4 | 10 | 2 of 4 | 2 of 4 | 2 of 4 | 10.10 |",
            "| converged within 300 missions of a shift | >= 9 of 10 seeds | 1 of 1 seeds, every session | yes |",
            "| training / op time, worst run | <= 1% | - | - |",
        ] {
            assert!(md.contains(want), "{want}\n{md}");
        }
        assert!(!md.contains("worst repeat"), "{md}");
    }

    #[test]
    fn medians_over_three_repeats_with_the_worst_reported() {
        let k: &[&[usize]] = &[&[1; 4], &[10; 4]];
        let groups = seed_dirs(vec![
            seeded(run("cairn:ruskey", &[&[10.0; 4], &[9.0; 4]], k), 1, 0.4),
            seeded(run("cairn:ruskey", &[&[12.0; 4], &[10.0; 4]], k), 2, 0.2),
            seeded(run("cairn:ruskey", &[&[30.0; 4], &[11.0; 4]], k), 3, 0.6),
        ]);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].label, "sessions");
        let t = build(&groups, None, Settings::default());
        let s0 = &t.sessions[0];
        assert_eq!(s0.latency[2], Some(12.0));
        assert_eq!(s0.repeats[2].runs(), 3);
        let (id, v) = s0.repeats[2].worst().unwrap();
        assert_eq!((id.seed, v), (Some(3), 30.0));
        // Ranks use the median: 12 is 20% behind cairn:default's 10, not 3x.
        assert_eq!(t.table3_ranks(0.02)[2], vec![Some(2), Some(1)]);
        let two = Repeated {
            values: vec![(RepeatId::default(), 1.0), (RepeatId::default(), 3.0)],
        };
        assert_eq!(two.median(), Some(2.0));
        assert_eq!(t.train_share, Some(("sessions, seed 3".into(), 0.6)));
        let md = render(&t, "test", 0.02, Settings::default(), "");
        for want in [
            "| 1 Read-H (90% lookups) | cairn:ruskey | RusKey | 3 | 12.00 | 30.00 (seed 3) | 2 | 1.200x |",
            "| 1 Read-H (90% lookups) | cairn:default | static | 1 | 10.00 | 10.00 | 1 | 1.000x |",
            "| 2 Write-H (10% lookups) | cairn:tiering | 10.00 | 10.00 | 3 | 11.00 (seed 3) | 1.000 |",
            "| latency vs best static, every session | <= 1.05x | worst 1.200x (1 Read-H (90% lookups)); \
             worst repeat 3.000x (seed 3, 1 Read-H (90% lookups)) | no: 1 Read-H (90% lookups) 1.20x |",
            "| 1 Read-H (90% lookups) | seed 2 | 4 | 1 | 0 of 4 | 0 of 4 | 0 of 4 | 12.00 |",
            "| training / op time, worst run | <= 1% | worst 0.60% (sessions, seed 3) | yes |",
        ] {
            assert!(md.contains(want), "{want}\n{md}");
        }
    }

    #[test]
    fn a_seed_that_never_converges_is_not_converged() {
        let k: &[&[usize]] = &[&[1; 4], &[10; 4]];
        let groups = seed_dirs(vec![
            seeded(run("cairn:ruskey", &[&[10.0; 4], &[10.0; 4]], k), 1, 0.4),
            // Session 2 ends on a spike: never within 5% of its converged mean.
            seeded(
                run("cairn:ruskey", &[&[10.0; 4], &[10.0, 10.0, 10.0, 30.0]], k),
                2,
                1.3,
            ),
            // Session 1 settles from its third mission.
            seeded(
                run("cairn:ruskey", &[&[30.0, 20.0, 10.0, 10.0], &[10.0; 4]], k),
                3,
                0.2,
            ),
        ]);
        let t = build(&groups, None, Settings::default());
        let s1 = &t.sessions[1];
        assert_eq!(s1.convergence[1].latency_settled, None);
        assert!(!s1.convergence[1].converged(300));
        assert_eq!(t.sessions[0].convergence[2].latency_settled, Some(2));
        let ids = |f: Vec<RepeatId>| f.iter().map(|i| i.seed.unwrap()).collect::<Vec<_>>();
        let (ok, n, failed) = converged_seeds(&t, 300);
        assert_eq!((ok, n, ids(failed)), (2, 3, vec![2]));
        let (ok, n, failed) = converged_seeds(&t, 1);
        assert_eq!((ok, n, ids(failed)), (1, 3, vec![2, 3]));
        let set = Settings {
            converge_within: 1,
            ..Settings::default()
        };
        let md = render(&t, "test", 0.02, set, "");
        for want in [
            "| converged within 1 missions of a shift | >= 9 of 10 seeds | 1 of 3 seeds, every session (not: seed 2, seed 3) | no |",
            "- 1 Read-H (90% lookups): converged within 1 missions of the shift: 2 of 3 seeds",
            "- 2 Write-H (10% lookups): converged within 1 missions of the shift: 2 of 3 seeds",
            "| 2 Write-H (10% lookups) | seed 2 | 4 | 10 | 0 of 4 | 0 of 4 | never (of 4) | 20.00 |",
            "| training / op time, worst run | <= 1% | worst 1.30% (sessions, seed 2) | no |",
        ] {
            assert!(md.contains(want), "{want}\n{md}");
        }
    }

    #[test]
    fn seed_directories_are_labelled_and_plotted_with_their_parent() {
        assert_eq!(dir_label(Path::new("out/sessions")), "sessions");
        assert_eq!(
            dir_label(Path::new("out/sessions/seed-3")),
            "sessions/seed-3"
        );
        assert_eq!(dir_label(Path::new("seed-3")), "seed-3");
        assert_eq!(dir_label(Path::new("out/seed-x")), "seed-x");
        let paths: Vec<PathBuf> = ["s", "s/seed-1", "s/seed-2", "g"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let dirs: Vec<(String, Vec<RunResult>)> = [
            vec![run("cairn:default", &[&[1.0]], &[])],
            vec![seeded(run("cairn:ruskey", &[&[1.0]], &[]), 1, 0.1)],
            vec![seeded(run("cairn:ruskey", &[&[2.0]], &[]), 2, 0.1)],
            vec![run("cairn:greedy", &[&[1.0]], &[])],
        ]
        .into_iter()
        .zip(&paths)
        .map(|(r, p)| (dir_label(p), r))
        .collect();
        let engines = |i: usize| {
            plot_runs(i, &paths, &dirs)
                .iter()
                .map(|r| (r.engine.clone(), r.config.tuner_seed))
                .collect::<Vec<_>>()
        };
        let d = ("cairn:default".to_string(), None);
        let r = |s: u64| ("cairn:ruskey".to_string(), Some(s));
        assert_eq!(engines(0), vec![d.clone(), r(1)]);
        assert_eq!(engines(2), vec![r(2), d]);
        assert_eq!(engines(3).len(), 1);
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
