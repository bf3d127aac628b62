//! `cairn check` (the engine's `Db::check`, with a progress bar), `cairn repair` and
//! `cairn checkpoint`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use cairn::{CheckIssue, CheckReport, Db, RepairMethod};
use serde::Serialize;

use crate::OpenArgs;

/// Exit code of a check that found damage (1 stays "could not check").
const DAMAGED: u8 = 2;

#[derive(Serialize)]
struct IssueOut<'a> {
    file: &'a str,
    detail: &'a str,
}

#[derive(Serialize)]
struct CheckOut<'a> {
    ok: bool,
    manifest: Option<&'a str>,
    column_families: Vec<(u32, &'a str)>,
    tables: usize,
    entries: u64,
    value_logs: usize,
    value_log_records: u64,
    wals: usize,
    wal_records: u64,
    problems: Vec<IssueOut<'a>>,
    warnings: Vec<IssueOut<'a>>,
}

fn issues(v: &[CheckIssue]) -> Vec<IssueOut<'_>> {
    v.iter()
        .map(|i| IssueOut {
            file: &i.file,
            detail: &i.detail,
        })
        .collect()
}

pub fn run(path: &Path, args: &OpenArgs, json: bool) -> Result<ExitCode> {
    let opts = crate::open::options(path, args)?;
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} files  {msg}")
            .expect("static template"),
    );
    let report = Db::check_with_progress(path, &opts, &mut |file, done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(
            file.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
    });
    bar.finish_and_clear();
    let r = report.with_context(|| format!("cannot check database {}", path.display()))?;
    if json {
        let out = CheckOut {
            ok: r.is_ok(),
            manifest: r.manifest.as_deref(),
            column_families: r
                .column_families
                .iter()
                .map(|(id, name)| (id.get(), name.as_str()))
                .collect(),
            tables: r.tables,
            entries: r.entries,
            value_logs: r.value_logs,
            value_log_records: r.value_log_records,
            wals: r.wals,
            wal_records: r.wal_records,
            problems: issues(&r.problems),
            warnings: issues(&r.warnings),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_text(path, &r);
    }
    Ok(if r.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(DAMAGED)
    })
}

fn print_text(path: &Path, r: &CheckReport) {
    println!(
        "checked {}: {}",
        path.display(),
        match &r.manifest {
            Some(m) => format!("{m}, {}", plural(r.column_families.len(), "column family")),
            None => "no readable manifest (every file on disk read instead)".into(),
        }
    );
    println!(
        "  {} tables ({} entries), {} value logs ({} records), {} write-ahead logs ({} records)",
        r.tables, r.entries, r.value_logs, r.value_log_records, r.wals, r.wal_records
    );
    if !r.warnings.is_empty() {
        println!("warnings ({}):", r.warnings.len());
        for w in &r.warnings {
            println!("  {}: {}", w.file, w.detail);
        }
    }
    if r.is_ok() {
        println!("OK");
    } else {
        println!("CORRUPT: {}", plural(r.problems.len(), "problem"));
        for p in &r.problems {
            println!("  {}: {}", p.file, p.detail);
        }
        println!("(`cairn repair` rebuilds a lost or damaged CURRENT or manifest)");
    }
}

fn plural(n: usize, what: &str) -> String {
    match (n, what.strip_suffix('y')) {
        (1, _) => format!("1 {what}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {what}s"),
    }
}

pub fn repair(path: &Path, args: &OpenArgs) -> Result<ExitCode> {
    let opts = crate::open::options(path, args)?;
    let r = Db::repair(path, opts)
        .with_context(|| format!("cannot repair database {}", path.display()))?;
    match r.method {
        RepairMethod::Manifest(no) => {
            println!("repaired: CURRENT now names MANIFEST-{no:06}, which was intact")
        }
        RepairMethod::Rebuilt => println!(
            "repaired: manifest rebuilt from {} tables and {} write-ahead log entries ({} entries written)",
            r.tables_merged, r.wal_entries, r.entries
        ),
    }
    let cfs: Vec<String> = r
        .column_families
        .iter()
        .map(|(id, n)| format!("{n:?} (id {id})"))
        .collect();
    println!("column families: {}", cfs.join(", "));
    if !r.lost.is_empty() {
        println!("moved to lost/ ({}):", r.lost.len());
        for (p, why) in &r.lost {
            println!("  {}: {why}", p.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `cairn checkpoint DB DIR`: opens the database, copies it to `dir`, closes it.
pub fn checkpoint(db: &Path, dir: &Path, open: &OpenArgs) -> Result<ExitCode> {
    let d = crate::open::open(db, open, false)?;
    let t = std::time::Instant::now();
    d.checkpoint(dir)
        .with_context(|| format!("cannot make a checkpoint in {}", dir.display()))?;
    let took = t.elapsed();
    d.close()?;
    println!(
        "checkpoint of {} in {} ({:.3} s)",
        db.display(),
        dir.display(),
        took.as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
