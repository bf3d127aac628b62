//! `cairn-bench clock-summary`: the virtual device clock's results page
//! (`docs/results/virtual-clock.md`): the CPU calibration and how close it comes, the
//! accounting's overhead, reruns checked field by field (on this machine and on another),
//! and the static sweep of K over RusKey's read-heavy and write-heavy sessions.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::leaper::summary::read_dir;
use crate::measure::cpu_price::PriceFile;
use crate::report::json::{json_differences, strip_wall_fields, RunResult};
use crate::report::provenance;

#[derive(clap::Args, Debug)]
pub struct ClockSummaryArgs {
    /// The CPU price file to report.
    #[arg(long, default_value = "crates/cairn-bench/calibration/cpu-prices.json")]
    pub prices: PathBuf,
    /// A `compare` directory of the K sweep, one session each (named by the directory).
    #[arg(long = "sweep", value_name = "DIR")]
    pub sweeps: Vec<PathBuf>,
    /// The same sweep run again (same order): every run must match field by field.
    #[arg(long = "rerun", value_name = "DIR")]
    pub reruns: Vec<PathBuf>,
    /// The same sweep run on another machine (same order), labelled by `--other-label`.
    #[arg(long = "other", value_name = "DIR")]
    pub others: Vec<PathBuf>,
    /// How the page names the machine of `--other`.
    #[arg(long, default_value = "another machine")]
    pub other_label: String,
    /// The command that produced the directories (for the page's header).
    #[arg(long)]
    pub command: String,
    /// Where to write the page (markdown).
    #[arg(long)]
    pub out: PathBuf,
}

/// K of a static preset (by name).
fn k_label(engine: &str) -> String {
    match engine.strip_prefix("cairn:").unwrap_or("default") {
        "default" | "baseline" => "1 (leveling)".into(),
        "moderate" => "5".into(),
        "tiering" => "10 (tiering)".into(),
        "lazy-leveling" => "lazy-leveling".into(),
        p => match p.strip_prefix("k-") {
            Some(k) => k.to_string(),
            None => p.to_string(),
        },
    }
}

fn calibration(md: &mut String, path: &Path) -> Result<()> {
    let f = PriceFile::load(path)?;
    md.push_str(&format!(
        "## CPU prices\n\n`{}`: measured on {}, commit `{}`, by `{}`.\n\n",
        path.display(),
        f.measured_on,
        f.commit,
        f.command
    ));
    md.push_str("| unit | ns |\n|---|---:|\n");
    let p = serde_json::to_value(f.prices)?;
    if let Some(m) = p.as_object() {
        for (k, v) in m {
            md.push_str(&format!("| {k} | {:.0} |\n", v.as_f64().unwrap_or(0.0)));
        }
    }
    md.push_str(
        "\nPriced against measured CPU of the request thread (fixed-point background work \
         excluded) on the calibration workloads, and the clock's own bookkeeping as a share \
         of each run's wall time:\n\n| workload | measured ns/op | priced ns/op | priced / \
         measured | accounting / wall |\n|---|---:|---:|---:|---:|\n",
    );
    for r in &f.fit {
        md.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:.2} | {} |\n",
            r.workload,
            r.measured_ns_per_op,
            r.priced_ns_per_op,
            r.priced_ns_per_op / r.measured_ns_per_op,
            r.accounting_share
                .map_or("-".into(), |s| format!("{:.1}%", s * 100.0))
        ));
    }
    md.push_str(
        "\nOn runs the fit did not see (another seed, twice the records):\n\n| workload | \
         measured ns/op | priced ns/op | priced / measured |\n|---|---:|---:|---:|\n",
    );
    for r in &f.validation {
        md.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:.2} |\n",
            r.workload,
            r.measured_ns_per_op,
            r.priced_ns_per_op,
            r.priced_ns_per_op / r.measured_ns_per_op
        ));
    }
    let worst = f
        .validation
        .iter()
        .chain(
            f.fit
                .iter()
                .filter(|r| ["fillrandom", "readrandom", "ycsb-a"].contains(&r.workload.as_str())),
        )
        .map(|r| (r.priced_ns_per_op / r.measured_ns_per_op - 1.0).abs())
        .fold(0.0f64, f64::max);
    let overhead = f
        .fit
        .iter()
        .filter_map(|r| r.accounting_share)
        .fold(0.0f64, f64::max);
    md.push_str(&format!(
        "\n- Goal: priced CPU within 20% of measured on fillrandom, readrandom and ycsb-a: \
         worst {:.0}% ({}).\n- Goal: the accounting under 5% of wall time: at most {:.1}% \
         ({}).\n\n",
        worst * 100.0,
        if worst <= 0.2 { "met" } else { "not met" },
        overhead * 100.0,
        if overhead < 0.05 { "met" } else { "not met" }
    ));
    Ok(())
}

fn load(dir: &Path) -> Result<Vec<(String, serde_json::Value, RunResult)>> {
    read_dir(dir)?
        .into_iter()
        .map(|(stem, r)| {
            let p = dir.join(format!("{stem}.json"));
            let mut v: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(&p).with_context(|| format!("{}", p.display()))?,
            )?;
            strip_wall_fields(&mut v);
            Ok((stem, v, r))
        })
        .collect()
}

/// Runs matched field by field between two sets of directories.
fn reruns(md: &mut String, what: &str, a: &[PathBuf], b: &[PathBuf]) -> Result<()> {
    if b.is_empty() {
        return Ok(());
    }
    if a.len() != b.len() {
        bail!("{what}: {} sweep directories against {}", a.len(), b.len());
    }
    let (mut same, mut all, mut notes) = (0, 0, Vec::new());
    for (x, y) in a.iter().zip(b) {
        let (xs, ys) = (load(x)?, load(y)?);
        for ((stem, va, _), (_, vb, _)) in xs.iter().zip(&ys) {
            all += 1;
            let d = json_differences(va, vb);
            if d.is_empty() {
                same += 1;
            } else {
                notes.push(format!(
                    "{}/{stem}: {} fields differ, first {}",
                    x.display(),
                    d.len(),
                    d[0]
                ));
            }
        }
    }
    md.push_str(&format!(
        "- {what}: {same} of {all} runs identical in every count and virtual time (wall-time \
         fields aside: CPU, RSS, OS counters, sampled step timings).\n"
    ));
    for n in notes {
        md.push_str(&format!("  - {n}\n"));
    }
    Ok(())
}

fn sweep(md: &mut String, dirs: &[PathBuf]) -> Result<()> {
    md.push_str(
        "## Static K over RusKey's sessions, on virtual time\n\nEach session is one `compare` \
         directory; throughput and latency are virtual (device time on the run's model, \
         queue waits and stalls, priced CPU). Device time is split into the foreground's own \
         I/O, its waits behind background I/O, and stalls at memtable switches.\n\n",
    );
    let mut bests = Vec::new();
    let mut tables: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    for dir in dirs {
        let session = dir
            .file_name()
            .map_or("session".into(), |s| s.to_string_lossy().into_owned());
        let runs = load(dir)?;
        let best = runs
            .iter()
            .map(|(_, _, r)| r.ops_per_sec)
            .fold(0.0f64, f64::max);
        md.push_str(&format!(
            "### {session}\n\n| K | engine | ops/s | vs best | mean us | fg I/O s | waits s | \
             stalls s | CPU s | write amp |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        ));
        let mut ranked: Vec<&RunResult> = runs.iter().map(|(_, _, r)| r).collect();
        ranked.sort_by(|a, b| b.ops_per_sec.total_cmp(&a.ops_per_sec));
        tables.push((
            session.clone(),
            ranked
                .iter()
                .map(|r| (r.engine.clone(), r.ops_per_sec))
                .collect(),
        ));
        for r in &ranked {
            let m = r.virtual_clock.as_ref().map(|v| &v.run.measured);
            let s = |ns: Option<u64>| ns.map_or("-".into(), |n| format!("{:.3}", n as f64 / 1e9));
            md.push_str(&format!(
                "| {} | {} | {:.0} | {:.2} | {:.1} | {} | {} | {} | {} | {} |\n",
                k_label(&r.engine),
                r.engine,
                r.ops_per_sec,
                r.ops_per_sec / best,
                r.latency_us.mean,
                s(m.map(|m| m.foreground_io_ns())),
                s(m.map(|m| m.queue_wait_ns)),
                s(m.map(|m| m.stall_ns)),
                s(m.map(|m| m.cpu_ns)),
                r.write_amplification
                    .map_or("-".into(), |w| format!("{w:.2}"))
            ));
        }
        md.push('\n');
        if let Some(first) = ranked.first() {
            let runner_up = ranked
                .get(1)
                .map_or(1.0, |r| first.ops_per_sec / r.ops_per_sec);
            bests.push((
                session,
                k_label(&first.engine),
                first.engine.clone(),
                runner_up,
            ));
        }
    }
    md.push_str("| session | best K | engine | ahead of the next by |\n|---|---|---|---:|\n");
    for (s, k, e, by) in &bests {
        md.push_str(&format!(
            "| {s} | {k} | {e} | {:.1}% |\n",
            (by - 1.0) * 100.0
        ));
    }
    md.push('\n');
    goal(md, &tables);
    Ok(())
}

/// The goal: a read-heavy and a write-heavy session (names alike but for `read`/`write`)
/// have different best K, each ahead in its own session of the other's best by >= 10%.
fn goal(md: &mut String, tables: &[(String, Vec<(String, f64)>)]) {
    let best = |t: &[(String, f64)]| t.first().cloned();
    let rate = |t: &[(String, f64)], e: &str| t.iter().find(|(x, _)| x == e).map(|(_, r)| *r);
    for (name, read) in tables.iter().filter(|(n, _)| n.contains("read-heavy")) {
        let other = name.replace("read-heavy", "write-heavy");
        let Some((_, write)) = tables.iter().find(|(n, _)| *n == other) else {
            continue;
        };
        let (Some((rb, rr)), Some((wb, wr))) = (best(read), best(write)) else {
            continue;
        };
        if rb == wb {
            md.push_str(&format!(
                "- Goal, {name} against {other}: the same best K ({}) in both: not met.
",
                k_label(&rb)
            ));
            continue;
        }
        let in_read = rate(read, &wb).map_or(f64::NAN, |x| rr / x - 1.0);
        let in_write = rate(write, &rb).map_or(f64::NAN, |x| wr / x - 1.0);
        let met = in_read >= 0.1 && in_write >= 0.1;
        md.push_str(&format!(
            "- Goal, {name} against {other}: best K {} and {}; in {name}, K {} is {:.1}% ahead of K {}; in {other}, K {} is {:.1}% ahead of K {}: {}.
",
            k_label(&rb),
            k_label(&wb),
            k_label(&rb),
            in_read * 100.0,
            k_label(&wb),
            k_label(&wb),
            in_write * 100.0,
            k_label(&rb),
            if met {
                "met"
            } else {
                "not met (>= 10% in both)"
            }
        ));
    }
    md.push('\n');
}

pub fn clock_summary_cmd(a: &ClockSummaryArgs) -> Result<()> {
    let mut md = format!(
        "# The virtual device clock\n\n- command: `{}`\n- commit: `{}`\n- machine: {}\n- date: \
         {}\n\n",
        a.command,
        provenance::commit(),
        provenance::machine(),
        provenance::date()
    );
    calibration(&mut md, &a.prices)?;
    md.push_str("## Reruns\n\n");
    reruns(&mut md, "rerun on this machine", &a.sweeps, &a.reruns)?;
    reruns(
        &mut md,
        &format!("rerun on {}", a.other_label),
        &a.sweeps,
        &a.others,
    )?;
    md.push('\n');
    sweep(&mut md, &a.sweeps)?;
    if let Some(p) = a.out.parent() {
        std::fs::create_dir_all(p)?;
    }
    std::fs::write(&a.out, &md).with_context(|| format!("writing {}", a.out.display()))?;
    print!("{md}");
    Ok(())
}
