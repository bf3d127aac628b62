//! `cairn-bench reprice RUN.json --device hdd`: a finished virtual run priced again under
//! another device model, from the I/O counts its JSON keeps (per window, per mission and
//! for the measured phase), without running it again.
//!
//! A device's time is linear in what it served (per operation of each kind, per byte), so
//! each device's service time reprices exactly. Queue waits and stalls depend on how
//! foreground and background I/O interleaved: they are scaled by the ratio of background
//! device time under the new model to that under the old, an estimate the report names.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use cairn::clock::{DeviceStats, IoOp, VirtualStats};
use cairn::DeviceModel;
use serde::Serialize;

use crate::report::json::RunResult;

#[derive(clap::Args, Debug)]
pub struct RepriceArgs {
    /// A run's JSON written on the virtual clock (`run --json` or a `compare` directory's).
    pub run: PathBuf,
    /// The device model to price it on: nvme, ssd or hdd. It replaces the model of every
    /// device that ran on the run's own model (tiers with their own device keep it).
    #[arg(long)]
    pub device: String,
    /// Write the repriced summary as JSON here.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
}

/// One stretch of a run (the measured phase, a window, a mission) on both models.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Repriced {
    pub what: String,
    pub ops: u64,
    pub seconds: f64,
    pub repriced_seconds: f64,
    pub ops_per_sec: f64,
    pub repriced_ops_per_sec: f64,
    /// Priced CPU, foreground device time, waits and stalls under the new model.
    pub cpu_s: f64,
    pub foreground_io_s: f64,
    pub waits_s: f64,
}

/// Device time of `t` (ops and bytes of `op`) under `m`, nanoseconds.
fn service(m: &DeviceModel, op: IoOp, ops: u64, bytes: u64) -> f64 {
    // cost_ns is an access part per op plus a part linear in bytes.
    let fixed = m.cost_ns(op, 0) as f64;
    let per_mib = m.cost_ns(op, 1 << 20) as f64 - fixed;
    ops as f64 * fixed + bytes as f64 / (1 << 20) as f64 * per_mib
}

fn device_ns(d: &DeviceStats, m: &DeviceModel, background: bool) -> f64 {
    let tallies = if background {
        &d.background
    } else {
        &d.foreground
    };
    IoOp::ALL
        .iter()
        .map(|&op| {
            let t = tallies[op.index()];
            service(m, op, t.ops, t.bytes)
        })
        .sum()
}

/// `v`'s foreground time with every device that ran on `from` priced on `to`.
pub fn reprice(what: &str, ops: u64, v: &VirtualStats, from: &str, to: &DeviceModel) -> Repriced {
    let model_of = |d: &DeviceStats| match &d.model {
        Some(m) if m.name == from => to.clone(),
        Some(m) => m.clone(),
        None => to.clone(),
    };
    let (mut fg, mut bg_old, mut bg_new) = (0.0, 0.0, 0.0);
    for d in &v.devices {
        let m = model_of(d);
        fg += device_ns(d, &m, false);
        bg_new += device_ns(d, &m, true);
        bg_old += d
            .background
            .iter()
            .map(|t| t.service_ns as f64)
            .sum::<f64>();
    }
    let scale = if bg_old > 0.0 { bg_new / bg_old } else { 1.0 };
    let waits = (v.queue_wait_ns + v.stall_ns) as f64 * scale;
    let ns = v.cpu_ns as f64 + fg + waits;
    // Time that is none of these (cannot arise today; kept so the sum stays whole).
    let other = v.now_ns as f64
        - (v.cpu_ns + v.queue_wait_ns + v.stall_ns) as f64
        - v.foreground_io_ns() as f64;
    let total = ns + other.max(0.0);
    let rate = |secs: f64| if secs > 0.0 { ops as f64 / secs } else { 0.0 };
    let seconds = v.now_ns as f64 / 1e9;
    Repriced {
        what: what.to_string(),
        ops,
        seconds,
        repriced_seconds: total / 1e9,
        ops_per_sec: rate(seconds),
        repriced_ops_per_sec: rate(total / 1e9),
        cpu_s: v.cpu_ns as f64 / 1e9,
        foreground_io_s: fg / 1e9,
        waits_s: waits / 1e9,
    }
}

/// The repriced rows of a run: the measured phase, then each window and each mission.
pub fn reprice_run(r: &RunResult, to: &DeviceModel) -> Result<Vec<Repriced>> {
    let Some(v) = &r.virtual_clock else {
        bail!(
            "{} ran on the {} clock: only a virtual run keeps the I/O counts to reprice",
            r.engine,
            r.clock
        );
    };
    let from = r.config.device.name();
    let mut out = vec![reprice("measured phase", r.ops, &v.run.measured, from, to)];
    for w in &v.windows {
        out.push(reprice(
            &format!("window to {:.3} s", w.second),
            w.ops,
            &w.io,
            from,
            to,
        ));
    }
    for m in &r.missions {
        if let Some(io) = &m.io {
            out.push(reprice(
                &format!("mission {}", m.index),
                m.ops,
                io,
                from,
                to,
            ));
        }
    }
    Ok(out)
}

pub fn reprice_cmd(a: &RepriceArgs) -> Result<()> {
    let text =
        std::fs::read_to_string(&a.run).with_context(|| format!("reading {}", a.run.display()))?;
    let r: RunResult =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", a.run.display()))?;
    let to = DeviceModel::parse(&a.device)
        .ok_or_else(|| anyhow::anyhow!("unknown device `{}`: nvme, ssd or hdd", a.device))?;
    let rows = reprice_run(&r, &to)?;
    println!(
        "{} on {}: {} ops, run on `{}`, repriced on `{}` (waits and stalls scaled by the \
         background's device time: an estimate)\n",
        r.engine,
        r.workload,
        r.ops,
        r.config.device.name(),
        to.name
    );
    println!(
        "| stretch | ops | s | ops/s | repriced s | repriced ops/s | CPU s | fg I/O s | waits s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for x in &rows {
        println!(
            "| {} | {} | {:.4} | {:.0} | {:.4} | {:.0} | {:.4} | {:.4} | {:.4} |",
            x.what,
            x.ops,
            x.seconds,
            x.ops_per_sec,
            x.repriced_seconds,
            x.repriced_ops_per_sec,
            x.cpu_s,
            x.foreground_io_s,
            x.waits_s
        );
    }
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_string_pretty(&rows)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn::clock::IoTally;

    fn stats(model: DeviceModel) -> VirtualStats {
        let mut d = DeviceStats {
            model: Some(model.clone()),
            ..Default::default()
        };
        let put = |t: &mut IoTally, op: IoOp, ops: u64, bytes: u64| {
            t.ops = ops;
            t.bytes = bytes;
            t.service_ns = service(&model, op, ops, bytes).round() as u64;
        };
        put(&mut d.foreground[0], IoOp::RandomRead, 100, 409_600);
        put(&mut d.background[2], IoOp::Write, 10, 10 << 20);
        let fg = d.foreground[0].service_ns;
        VirtualStats {
            now_ns: 1_000_000 + fg + 500_000,
            cpu_ns: 1_000_000,
            queue_wait_ns: 500_000,
            devices: vec![d],
            ..Default::default()
        }
    }

    #[test]
    fn the_same_model_reprices_to_itself_and_another_moves_device_time() {
        let v = stats(DeviceModel::nvme());
        let same = reprice("x", 100, &v, "nvme", &DeviceModel::nvme());
        assert!(
            (same.repriced_seconds - same.seconds).abs() < 1e-6,
            "{same:?}"
        );
        let hdd = reprice("x", 100, &v, "nvme", &DeviceModel::hdd());
        // 100 random reads of 4 KiB on the disk: 100 * (5050 us + 4 KiB at 143 MiB/s).
        let want_fg = 100.0 * (5050e-6 + 4096.0 / (150e6));
        assert!((hdd.foreground_io_s - want_fg).abs() < 1e-6, "{hdd:?}");
        // Waits scale with the background's device time (10 MiB of writes).
        let nvme_bg = service(&DeviceModel::nvme(), IoOp::Write, 10, 10 << 20);
        let hdd_bg = service(&DeviceModel::hdd(), IoOp::Write, 10, 10 << 20);
        assert!((hdd.waits_s - 500e-6 * hdd_bg / nvme_bg).abs() < 1e-9);
        assert_eq!(hdd.cpu_s, 0.001);
        // A device on another model (a cold tier) keeps it.
        let kept = reprice(
            "x",
            100,
            &stats(DeviceModel::hdd()),
            "nvme",
            &DeviceModel::ssd(),
        );
        assert!((kept.repriced_seconds - kept.seconds).abs() < 1e-6);
    }
}
