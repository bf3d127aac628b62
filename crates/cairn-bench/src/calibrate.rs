//! `cairn-bench calibrate`: measures, on this machine, what each counted unit of the
//! engine's foreground work costs in CPU, and writes the price file the virtual clock
//! charges CPU from (`calibration/cpu-prices.json`, versioned).
//!
//! It runs a fixed set of workloads on the virtual clock (so the counts are those a
//! virtual run makes), takes the request thread's CPU time over each measured phase,
//! background work at the fixed points excluded, and fits non-negative prices per unit
//! by least squares over the runs, each weighted by its relative error. It then prices
//! each workload again and reports priced against measured CPU, and the accounting's own
//! cost (the clock's bookkeeping per I/O and per request) against the runs' wall time.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;

use crate::cli::{Cli, Command};
use crate::measure::cpu_price::{fit_nnls, FitRow, PriceFile, Prices, Units, VERSION};
use crate::report::json::RunResult;

#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// Where to write the price file.
    #[arg(long, default_value = "crates/cairn-bench/calibration/cpu-prices.json")]
    pub out: PathBuf,
    /// Records loaded before each workload.
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Requests in each measured phase.
    #[arg(long, default_value_t = 100_000)]
    pub ops: u64,
    /// Times each workload runs; the fit takes the median CPU of each.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Where this runs, for the file's provenance [default: the CPU model, cores, arch].
    #[arg(long)]
    pub machine: Option<String>,
}

/// The calibration workloads: a name, then `run` flags. Each stresses a different mix of
/// units (memtable hits, cached and uncached block reads, scans, writes).
const CASES: &[(&str, &str)] = &[
    ("fillrandom", "--engine cairn --workload fillrandom"),
    ("overwrite", "--engine cairn --workload overwrite"),
    ("readrandom", "--engine cairn --workload readrandom"),
    (
        "readrandom-big-cache",
        "--engine cairn --workload readrandom --cache-bytes 256M",
    ),
    ("ycsb-a", "--engine cairn --workload ycsb-a"),
    ("ycsb-b", "--engine cairn --workload ycsb-b"),
    (
        "ycsb-c",
        "--engine cairn --workload ycsb-c --cache-bytes 256M",
    ),
    ("ycsb-e", "--engine cairn --workload ycsb-e"),
    ("ycsb-f", "--engine cairn --workload ycsb-f"),
    ("readseq", "--engine cairn --workload readseq"),
    // Many runs per lookup (no compactions; tiering): what each table probed costs.
    (
        "readrandom-flush-only",
        "--engine cairn --workload readrandom --flush-only --cache-bytes 256M",
    ),
    (
        "readrandom-tiering",
        "--engine cairn:tiering --workload readrandom --cache-bytes 256M",
    ),
    (
        "learned",
        "--engine cairn:bourbon-always --workload readrandom",
    ),
];

/// Runs the fit did not see: the goal workloads on another seed and twice the records,
/// priced by the new file.
const VALIDATION: &[(&str, &str)] = &[
    ("fillrandom", "--engine cairn --workload fillrandom"),
    ("readrandom", "--engine cairn --workload readrandom"),
    ("ycsb-a", "--engine cairn --workload ycsb-a"),
    ("ycsb-c", "--engine cairn --workload ycsb-c"),
];

fn run_case(flags: &str, a: &CalibrateArgs, extra: &[&str]) -> Result<RunResult> {
    let mut argv: Vec<String> = ["cairn-bench", "run"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    argv.extend(flags.split_whitespace().map(str::to_string));
    let records = a.records.to_string();
    let ops = a.ops.to_string();
    let defaults = [
        ("--records", records.as_str()),
        ("--ops", &ops),
        ("--threads", "1"),
        ("--write-buffer-size", "1M"),
        ("--clock", "virtual"),
        ("--device", "nvme"),
    ];
    // `extra` (flag, value pairs) replaces a default of the same flag.
    for (flag, value) in defaults {
        if !extra.contains(&flag) {
            argv.extend([flag.to_string(), value.to_string()]);
        }
    }
    argv.extend(extra.iter().map(|s| s.to_string()));
    let Command::Run(args) = Cli::try_parse_from(&argv)?.command else {
        unreachable!("parsed a run command")
    };
    let req = crate::compare::request_of(&args)?;
    Ok(crate::runner::run(&req)?.0)
}

/// Wall nanoseconds the accounting costs: one priced I/O; one request's CPU charge with
/// its read of the engine's counts.
fn accounting_costs() -> Result<(f64, f64)> {
    let dir = tempfile::tempdir()?;
    let db = cairn::Db::open(
        dir.path(),
        cairn::Options {
            create_if_missing: true,
            ..Default::default()
        },
    )?;
    let clock = cairn::VirtualClock::new(vec![cairn::DeviceModel::nvme()]);
    let n = 2_000_000u64;
    let t = Instant::now();
    for i in 0..n {
        clock.io(0, cairn::clock::IoOp::RandomRead, 4096 + (i & 7));
    }
    let per_io = t.elapsed().as_nanos() as f64 / n as f64;
    let prices = PriceFile::built_in().prices;
    let c = cairn::CpuCounts::default();
    let t = Instant::now();
    for i in 0..n {
        let d = db.cpu_counts().since(&c);
        let u = Units::of(1, &d, i & 3);
        clock.charge_cpu(prices.price(&u) as u64);
    }
    let per_op = t.elapsed().as_nanos() as f64 / n as f64;
    Ok((per_io, per_op))
}

fn write(file: &PriceFile, out: &std::path::Path) -> Result<()> {
    let tmp = out.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(file)? + "\n")?;
    std::fs::rename(&tmp, out).with_context(|| format!("writing {}", out.display()))
}

/// Runs [`VALIDATION`] priced by the file just written: measured against priced CPU.
fn validate(a: &CalibrateArgs) -> Result<Vec<FitRow>> {
    let records = (2 * a.records).to_string();
    let prices = a.out.display().to_string();
    let extra = [
        "--seed",
        "7",
        "--records",
        &records,
        "--cpu-prices",
        &prices,
    ];
    VALIDATION
        .iter()
        .map(|(name, flags)| {
            let r = run_case(flags, a, &extra)?;
            let v = r.virtual_clock.context("a virtual run reports its clock")?;
            Ok(FitRow {
                workload: name.to_string(),
                ops: r.ops,
                measured_ns_per_op: v.run.measured_foreground_cpu_ns as f64 / r.ops as f64,
                priced_ns_per_op: v.run.measured.cpu_ns as f64 / r.ops as f64,
                accounting_share: None,
            })
        })
        .collect()
}

pub fn calibrate_cmd(a: &CalibrateArgs) -> Result<()> {
    let mut rows: Vec<(String, Units, f64, u64, f64)> = Vec::new();
    let (per_io, per_charge) = accounting_costs()?;
    let mut overhead = Vec::new();
    for (name, flags) in CASES {
        let mut runs = Vec::new();
        for rep in 0..a.repeats.max(1) {
            let r = run_case(flags, a, &[]).with_context(|| format!("calibration case {name}"))?;
            let v = r
                .virtual_clock
                .clone()
                .context("a virtual run reports its clock")?;
            runs.push((v.run.measured_foreground_cpu_ns as f64, r, v));
            eprintln!("calibrate: {name} run {} done", rep + 1);
        }
        runs.sort_by(|x, y| x.0.total_cmp(&y.0));
        let (cpu, r, v) = &runs[runs.len() / 2];
        let units = Units(v.run.cpu_units.to_vec());
        // The bookkeeping's cost: one charge per request, one priced I/O per device op.
        let ios: u64 = v
            .run
            .measured
            .devices
            .iter()
            .flat_map(|d| d.foreground.iter().chain(&d.background))
            .map(|t| t.ops)
            .sum();
        let acct = r.ops as f64 * per_charge + ios as f64 * per_io;
        overhead.push((name.to_string(), acct / (v.run.wall_seconds * 1e9)));
        rows.push((name.to_string(), units, *cpu, r.ops, v.run.wall_seconds));
    }
    let fit_rows: Vec<(Units, f64)> = rows.iter().map(|(_, u, c, _, _)| (*u, *c)).collect();
    let prices = Prices::from_vec(fit_nnls(&fit_rows));
    let fit: Vec<FitRow> = rows
        .iter()
        .zip(&overhead)
        .map(|((name, u, cpu, ops, _), (_, share))| FitRow {
            workload: name.clone(),
            ops: *ops,
            measured_ns_per_op: cpu / *ops as f64,
            priced_ns_per_op: prices.price(u) / *ops as f64,
            accounting_share: Some(*share),
        })
        .collect();
    let commit = crate::report::provenance::commit();
    let old = PriceFile::built_in();
    let file = PriceFile {
        version: VERSION,
        measured_on: a
            .machine
            .clone()
            .unwrap_or_else(crate::report::provenance::machine),
        commit,
        command: format!(
            "cairn-bench calibrate --records {} --ops {} --repeats {}",
            a.records, a.ops, a.repeats
        ),
        background_ns_per_kib: old.background_ns_per_kib,
        prices,
        fit,
        validation: Vec::new(),
    };
    let mut file = file;
    write(&file, &a.out)?;
    file.validation = validate(a)?;
    write(&file, &a.out)?;
    println!(
        "| workload | measured CPU ns/op | priced ns/op | priced / measured | accounting / wall |"
    );
    println!("|---|---:|---:|---:|---:|");
    for f in &file.fit {
        let o = f.accounting_share.unwrap_or(0.0);
        println!(
            "| {} | {:.0} | {:.0} | {:.2} | {:.1}% |",
            f.workload,
            f.measured_ns_per_op,
            f.priced_ns_per_op,
            f.priced_ns_per_op / f.measured_ns_per_op,
            o * 100.0
        );
    }
    println!("\nruns the fit did not see (seed 7, twice the records):\n");
    println!("| workload | measured CPU ns/op | priced ns/op | priced / measured |");
    println!("|---|---:|---:|---:|");
    for f in &file.validation {
        println!(
            "| {} | {:.0} | {:.0} | {:.2} |",
            f.workload,
            f.measured_ns_per_op,
            f.priced_ns_per_op,
            f.priced_ns_per_op / f.measured_ns_per_op
        );
    }
    println!(
        "\nprices (ns per unit): {}\naccounting: {per_io:.1} ns per priced I/O, {per_charge:.1} ns \
         per request charge\nwritten to {}",
        serde_json::to_string(&file.prices)?,
        a.out.display()
    );
    Ok(())
}
