//! `summary`: one table over many `compare` directories (scripts/bench.sh's workloads,
//! thread counts and direct-I/O runs), each row an engine against the first engine listed:
//! median throughput with its range over the repeated runs, and the machine-independent
//! counts (storage bytes read per op, write amplification, disk size, peak RSS).

use crate::leaper::summary::read_dir;
use crate::report::json::RunResult;
use anyhow::{bail, Result};
use clap::Args;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SummaryArgs {
    /// `compare` output directories (each with runs.list and ENGINE.json).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Also write the table to this file.
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Head the output with this command, the commit, the machine and the date (a
    /// results page under docs/results/).
    #[arg(long, value_name = "COMMAND")]
    pub provenance: Option<String>,
}

fn range(r: &RunResult) -> String {
    match &r.repeats {
        Some(rep) => {
            let (lo, hi) = rep.range();
            format!("{lo:.0}-{hi:.0}")
        }
        None => "-".into(),
    }
}

fn per_op(bytes: u64, ops: u64) -> String {
    if ops == 0 {
        "-".into()
    } else {
        format!("{:.0}", bytes as f64 / ops as f64)
    }
}

/// Where reads come from, and the compression when there is one.
fn io_setting(c: &crate::engines::BenchConfig) -> String {
    let io = if c.direct_io { "direct" } else { "page cache" };
    match c.compression {
        cairn::Compression::None => io.into(),
        z => format!("{io}, {}", z.name()),
    }
}

fn pair(a: String, b: String) -> String {
    format!("{a} / {b}")
}

/// The markdown table: one row per directory and engine after the first.
pub fn table(dirs: &[(PathBuf, Vec<(String, RunResult)>)]) -> Result<String> {
    let mut s = String::from(
        "| workload | threads | I/O | base | base ops/s (range) | engine | ops/s (range) | ratio | fill to settled: ratio | read B/op base / engine | write amp | disk MiB | peak RSS MiB | stall s |\n\
         |---|---:|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (dir, runs) in dirs {
        let Some((_, base)) = runs.first() else {
            bail!("{} holds no runs", dir.display());
        };
        for (_, r) in &runs[1..] {
            let mib = |b: u64| format!("{:.1}", b as f64 / (1 << 20) as f64);
            let wa = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.2}"));
            let settled = match (r.settled_ops_per_sec, base.settled_ops_per_sec) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
                _ => "-".into(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:.0} ({}) | {} | {:.0} ({}) | **{:.2}x** | {} | {} | {} | {} | {} | {} |",
                r.workload,
                r.threads,
                io_setting(&r.config),
                base.engine,
                base.ops_per_sec,
                range(base),
                r.engine,
                r.ops_per_sec,
                range(r),
                if base.ops_per_sec > 0.0 { r.ops_per_sec / base.ops_per_sec } else { 0.0 },
                settled,
                pair(per_op(base.storage.read_bytes, base.ops), per_op(r.storage.read_bytes, r.ops)),
                pair(wa(base.write_amplification), wa(r.write_amplification)),
                pair(mib(base.disk_bytes), mib(r.disk_bytes)),
                pair(mib(base.peak_rss_bytes), mib(r.peak_rss_bytes)),
                pair(format!("{:.2}", base.stall_seconds), format!("{:.2}", r.stall_seconds)),
            );
        }
    }
    s.push_str(
        "\nops/s: the median of the repeated runs (order alternated), to the last operation; \
         fills also to the end of the flushes and compactions they caused. Storage bytes are \
         the engines' own counts (RocksDB's from an untimed pass with statistics on).\n",
    );
    let mut versions: Vec<String> = Vec::new();
    for (_, r) in dirs.iter().flat_map(|(_, runs)| runs) {
        let v = format!("{}: {}", r.engine, r.engine_version);
        if !r.engine_version.is_empty() && !versions.contains(&v) {
            versions.push(v);
        }
    }
    if !versions.is_empty() {
        let _ = writeln!(s, "\nVersions: {}.", versions.join("; "));
    }
    Ok(s)
}

pub fn summary_cmd(a: &SummaryArgs) -> Result<()> {
    let dirs = a
        .dirs
        .iter()
        .map(|d| Ok((d.clone(), read_dir(d)?)))
        .collect::<Result<Vec<_>>>()?;
    let mut t = table(&dirs)?;
    if let Some(command) = &a.provenance {
        t = crate::report::provenance::with_provenance(t, command);
    }
    print!("{t}");
    if let Some(p) = &a.out {
        std::fs::write(p, &t)?;
    }
    Ok(())
}
