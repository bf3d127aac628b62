//! SA-LSM's plan (section 4) on the AWPI lifecycle streams (synthetic, shaped like the
//! paper's Table 2 and Fig. 13):
//! 1. traces: per profile, `salsm-trace` replays the trace days (20 feature days and the
//!    30-day horizon) and the service's `evaluate` scores every method on held-out
//!    records (Table 3's c-indexes, Fig. 12's cold_fir, the cold-tier reads curve, the
//!    Kaplan-Meier curve), then Figs. 13-14's sweeps (labelling window, sample share);
//! 2. the cold count: per compared profile and seed, RSF applies Algorithm 3 (alpha days)
//!    to the same stream at the compare scale; the share it migrates is every placement's
//!    budget (equal counts);
//! 3. compare: every engine replays the days, places at that budget and replays 3 more
//!    days on the tiers' devices (Figs. 15-17, the engine-side cold_fir, Table 5); with
//!    `--open-load`, again with the ops arriving at one offered rate (the rate at which
//!    sa-gbdt-naive's busiest device would be busy that share of the time);
//! 4. `salsm-summary` over it all, with the goals.
//!
//! The virtual clock is the default (ssd hot, hdd cold; a rerun repeats exactly); the
//! wall clock writes under OUT-wall. The service runs in Python (`CAIRN_PYTHON`, default
//! target/pyenv/bin/python) with numpy, scikit-survival and lightgbm.

use super::plan::{strings, Common, Plan};
use crate::cli::{Cli, Command};
use crate::engines::{ClockKind, Device};
use anyhow::{bail, Context, Result};
use clap::{Args, Parser};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Every setting; unset ones take `--quick`'s or the default.
#[derive(Args, Debug)]
pub struct SaLsmArgs {
    #[command(flatten)]
    pub common: Common,
    /// Smaller streams, one seed.
    #[arg(long)]
    pub quick: bool,
    /// The traces' --awpi-scale [default: 0.3; --quick 0.1].
    #[arg(long)]
    pub trace_scale: Option<f64>,
    /// The compare runs' --awpi-scale [default: 0.5; --quick 0.2].
    #[arg(long)]
    pub scale: Option<f64>,
    /// The compare runs' seeds [default: "42 43 44"; --quick 42].
    #[arg(long)]
    pub seeds: Option<String>,
    /// Profiles traced and evaluated ("" for none).
    #[arg(long, default_value = "auction dispute funds logistics order pay")]
    pub traces: String,
    /// Profiles compared on the engine ("" for none).
    #[arg(long, default_value = "logistics order")]
    pub compare: String,
    #[arg(
        long,
        default_value = "cairn:passive,cairn:age-tier,cairn:sa-random,cairn:sa-lru,cairn:sa-gbdt-naive,cairn:sa-gbdt,cairn:sa-oracle,cairn:sa-lsm"
    )]
    pub engines: String,
    /// The open-loop replays' engines [default: --engines].
    #[arg(long)]
    pub open_engines: Option<String>,
    /// Device latency multiplier of the replays.
    #[arg(long, default_value_t = 1.0)]
    pub scale_lat: f64,
    /// The traces' seed.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Algorithm 3's alpha, in days.
    #[arg(long, default_value_t = 30.0)]
    pub alpha: f64,
    /// The AWPI generator (lifecycle; decay is the control).
    #[arg(long, default_value = "lifecycle")]
    pub generator: String,
    /// A lifecycle ingredient switched off (output under OUT-no-INGREDIENT).
    #[arg(long)]
    pub ablate: Option<String>,
    /// Figs. 13-14's sweeps after each trace.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub sweeps: bool,
    /// The open loop's load on sa-gbdt-naive's busiest device, within (0, 1); 0 skips it
    /// (it runs on the virtual clock only).
    #[arg(long, default_value_t = 0.8)]
    pub open_load: f64,
    /// Flags for the service's `train` (and the engines' service calls).
    #[arg(long, allow_hyphen_values = true, default_value = "")]
    pub service_args: String,
    /// tau candidates for cross-validation on the training window, in days.
    #[arg(long, default_value = "0.5,1,3,7,30")]
    pub taus: String,
    /// Flags for the service's `evaluate`.
    #[arg(long, allow_hyphen_values = true, default_value = "")]
    pub eval_args: String,
}

struct SaLsm<'a> {
    a: &'a SaLsmArgs,
    plan: Plan,
    py: String,
    trace_scale: f64,
    scale: f64,
    seeds: String,
    times: Vec<String>,
}

pub fn run(a: &SaLsmArgs) -> Result<()> {
    let clock = a.common.clock.unwrap_or(ClockKind::Virtual);
    let mut out = a
        .common
        .out
        .clone()
        .unwrap_or_else(|| "bench-out/sa-lsm".into());
    if let Some(ab) = &a.ablate {
        out = suffixed(&out, &format!("-no-{}", ab.replace(',', "-")));
    }
    if a.generator != "lifecycle" {
        out = suffixed(&out, &format!("-{}", a.generator));
    }
    let device = match clock {
        ClockKind::Wall => {
            out = suffixed(&out, "-wall");
            Device::None
        }
        ClockKind::Virtual => Device::Ssd,
    };
    let plan = Plan::at("sa-lsm", &a.common, clock, device, out)?;
    plan.runnable("--engines", &a.engines)?;
    let py = std::env::var("CAIRN_PYTHON").unwrap_or_else(|_| "target/pyenv/bin/python".into());
    check_service(&py)?;
    let mut s = SaLsm {
        a,
        plan,
        py,
        trace_scale: a.trace_scale.unwrap_or(if a.quick { 0.1 } else { 0.3 }),
        scale: a.scale.unwrap_or(if a.quick { 0.2 } else { 0.5 }),
        seeds: a
            .seeds
            .clone()
            .unwrap_or_else(|| (if a.quick { "42" } else { "42 43 44" }).into()),
        times: Vec::new(),
    };
    for p in a.traces.split_whitespace() {
        s.trace(p)?;
    }
    s.km_plot();
    for p in a.compare.split_whitespace() {
        for seed in s.seeds.clone().split_whitespace() {
            s.compare(p, seed)?;
        }
    }
    let md = s.summary()?;
    s.plan.finish(md)
}

/// `dir` with `suffix` added once.
fn suffixed(dir: &Path, suffix: &str) -> PathBuf {
    let d = dir.display().to_string();
    PathBuf::from(if d.ends_with(suffix) { d } else { d + suffix })
}

/// The service's packages must import before hours of runs start.
fn check_service(py: &str) -> Result<()> {
    let ok = std::process::Command::new(py)
        .args(["-c", "import numpy, sksurv, lightgbm"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        bail!(
            "SA-LSM's service needs numpy, scikit-survival and lightgbm in {py} \
             (scripts/test.sh makes target/pyenv; or set CAIRN_PYTHON)"
        );
    }
    Ok(())
}

/// A field of a JSON file.
fn json_field(path: &Path, field: &str) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    v.get(field)
        .cloned()
        .with_context(|| format!("{} has no {field}", path.display()))
}

/// The offered rate (ops/s) at which sa-gbdt-naive's busiest device would be busy `load`
/// of the time: its device time (foreground and background) per measured op, from its
/// closed-loop run's virtual-clock report in `dir`.
pub fn open_rate(dir: &Path, load: f64) -> Result<f64> {
    const REFERENCE: &str = "cairn:sa-gbdt-naive";
    let list = std::fs::read_to_string(dir.join("runs.list"))?;
    for stem in list.split_whitespace() {
        let text = std::fs::read_to_string(dir.join(format!("{stem}.json")))?;
        let run: Value = serde_json::from_str(&text)?;
        if run["engine"] != REFERENCE {
            continue;
        }
        let report = &run["virtual_clock"];
        let report = report.get("run").unwrap_or(report);
        let devices = report["measured"]["devices"]
            .as_array()
            .context("no devices in the report")?;
        let busy = devices.iter().map(|d| {
            let times = |k: &str| {
                d[k].as_array().map_or(0.0, |v| {
                    v.iter()
                        .map(|t| t["service_ns"].as_f64().unwrap_or(0.0))
                        .sum()
                })
            };
            times("foreground") + times("background")
        });
        let ops = run["ops"].as_f64().context("no ops")?;
        let per_op = busy.fold(0.0, f64::max) / ops;
        return Ok(load * 1e9 / per_op);
    }
    bail!(
        "no {REFERENCE} run in {} (the open loop's rate is set from it)",
        dir.display()
    )
}

impl SaLsm<'_> {
    fn gen_args(&self) -> Vec<String> {
        let mut v = vec!["--salsm-generator".to_string(), self.a.generator.clone()];
        if let Some(ab) = &self.a.ablate {
            v.extend(["--salsm-ablate".into(), ab.clone()]);
        }
        v
    }

    fn extra(&self) -> Vec<String> {
        self.a
            .common
            .extra
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    /// `cairn-bench salsm-trace` on awpi-`profile`.
    fn salsm_trace(
        &self,
        profile: &str,
        scale: f64,
        seed: &str,
        out: &Path,
        more: &[String],
    ) -> Result<()> {
        let mut argv = strings(&["cairn-bench", "salsm-trace", "--workload"]);
        argv.push(format!("awpi-{profile}"));
        argv.extend([
            "--awpi-scale".into(),
            scale.to_string(),
            "--seed".into(),
            seed.into(),
        ]);
        argv.extend(self.gen_args());
        argv.extend([
            "--python".into(),
            self.py.clone(),
            "--out".into(),
            out.display().to_string(),
        ]);
        argv.extend(more.iter().cloned());
        argv.extend(self.extra());
        let cli = Cli::try_parse_from(&argv).map_err(|e| anyhow::anyhow!("{e}"))?;
        let Command::SalsmTrace(t) = cli.command else {
            unreachable!("parsed a salsm-trace command line");
        };
        crate::salsm::run::trace_cmd(&t)
    }

    /// `python -m cairn.learn.salsm ARGS` (the package from python/), its output on stderr.
    fn service(&self, args: &[String]) -> Result<()> {
        let path = match std::env::var("PYTHONPATH") {
            Ok(p) if !p.is_empty() => format!("python:{p}"),
            _ => "python".into(),
        };
        let status = std::process::Command::new(&self.py)
            .args(["-m", "cairn.learn.salsm"])
            .args(args)
            .env("PYTHONPATH", path)
            .stdout(std::io::stderr())
            .status()
            .with_context(|| format!("running {}", self.py))?;
        anyhow::ensure!(
            status.success(),
            "cairn.learn.salsm {} failed: {status}",
            args.join(" ")
        );
        Ok(())
    }

    fn log(&mut self, what: String, started: Instant) {
        self.times
            .push(format!("{what}: {} s", started.elapsed().as_secs()));
    }

    /// Step 1 for one profile: its trace, the evaluation and the sweeps.
    fn trace(&mut self, p: &str) -> Result<()> {
        let t = Instant::now();
        eprintln!("== trace + evaluate awpi-{p}");
        let dir = self.plan.out.join("traces").join(p);
        let mut eval = format!(
            "--alpha-days {} --tau-days auto --tau-candidates {}",
            self.a.alpha, self.a.taus
        );
        if !self.a.eval_args.is_empty() {
            eval = format!("{eval} {}", self.a.eval_args);
        }
        let more = vec![
            "--evaluate".to_string(),
            "--km-plot".into(),
            format!("--eval-args={eval}"),
        ];
        self.salsm_trace(p, self.trace_scale, &self.a.seed.to_string(), &dir, &more)?;
        if self.a.sweeps {
            let tau = json_field(&dir.join("eval.json"), "tau_days")?;
            for (kind, values) in [
                ("label-window", "10,20,30"),
                ("sample-share", "0.1,0.3,1.0"),
            ] {
                let args = [
                    "sweep".to_string(),
                    "--trace".into(),
                    dir.join("trace.rtr").display().to_string(),
                    "--kind".into(),
                    kind.into(),
                    "--values".into(),
                    values.into(),
                    "--tau-days".into(),
                    tau.to_string(),
                    "--store-times".into(),
                    crate::salsm::run::engine_store_times().to_string(),
                    "--out".into(),
                    dir.join(format!("sweep-{kind}.json")).display().to_string(),
                ];
                self.service(&args)?;
            }
        }
        self.log(format!("trace {p}"), t);
        Ok(())
    }

    /// Fig. 11: every traced profile's Kaplan-Meier curve in one plot (best effort).
    fn km_plot(&self) {
        let reports: Vec<String> = self
            .a
            .traces
            .split_whitespace()
            .map(|p| (p, self.plan.out.join("traces").join(p).join("eval.json")))
            .filter(|(_, f)| f.is_file())
            .map(|(p, f)| format!("{p}={}", f.display()))
            .collect();
        if reports.is_empty() {
            return;
        }
        let mut args = vec![
            "km".to_string(),
            "--out".into(),
            self.plan.out.join("km.png").display().to_string(),
        ];
        args.extend(reports);
        if let Err(e) = self.service(&args) {
            eprintln!("the Kaplan-Meier plot was not drawn: {e:#}");
        }
    }

    /// Steps 2 and 3 for one profile and seed.
    fn compare(&mut self, p: &str, seed: &str) -> Result<()> {
        let t = Instant::now();
        let dir = self
            .plan
            .out
            .join("compare")
            .join(format!("{p}-seed{seed}"));
        let (budget, tau) = self.alpha_rule(p, seed, &dir)?;
        eprintln!(
            "== compare awpi-{p} seed {seed} at B = {budget} (RSF, alpha {} days, tau {tau} days): {}",
            self.a.alpha, self.a.engines
        );
        let args = self.replay_args(p, seed, &budget, &tau, &self.a.engines);
        self.plan.compare(&dir, &args)?;
        self.log(format!("compare {p} seed {seed}"), t);
        if self.a.open_load > 0.0 && self.plan.is_virtual() {
            let rate = match open_rate(&dir, self.a.open_load) {
                Ok(rate) => rate,
                Err(e) => {
                    eprintln!("open loop of {p} seed {seed} skipped: {e:#}");
                    return Ok(());
                }
            };
            let t = Instant::now();
            let odir = self.plan.out.join("open").join(format!("{p}-seed{seed}"));
            eprintln!(
                "== open loop awpi-{p} seed {seed} at {rate:.1} ops/s (load {} of sa-gbdt-naive's busiest device)",
                self.a.open_load
            );
            let engines = self
                .a
                .open_engines
                .clone()
                .unwrap_or_else(|| self.a.engines.clone());
            let mut args = self.replay_args(p, seed, &budget, &tau, &engines);
            args.extend([
                "--salsm-no-table5".into(),
                "--salsm-arrival-rate".into(),
                format!("{rate:.1}"),
            ]);
            self.plan.compare(&odir, &args)?;
            self.log(format!("open loop {p} seed {seed}"), t);
        }
        Ok(())
    }

    /// Algorithm 3 decides the count: RSF's alpha rule on this stream's trace; returns
    /// the migrated share (every placement's budget) and the tau it chose.
    fn alpha_rule(&self, p: &str, seed: &str, dir: &Path) -> Result<(String, String)> {
        let alpha = dir.join("alpha");
        self.salsm_trace(p, self.scale, seed, &alpha, &[])?;
        let mut args: Vec<String> = vec![
            "train".into(),
            "--trace".into(),
            alpha.join("trace.rtr").display().to_string(),
            "--method".into(),
            "rsf".into(),
            "--alpha-days".into(),
            self.a.alpha.to_string(),
            "--tau-days".into(),
            "auto".into(),
            "--tau-candidates".into(),
            self.a.taus.clone(),
            "--out".into(),
            alpha.join("cold.cld").display().to_string(),
            "--report".into(),
            alpha.join("alpha.json").display().to_string(),
            // The engine's store, as the replays' own service calls see it.
            "--store-times".into(),
            crate::salsm::run::engine_store_times().to_string(),
        ];
        args.extend(self.a.service_args.split_whitespace().map(str::to_string));
        self.service(&args)?;
        let report = alpha.join("alpha.json");
        let share = json_field(&report, "migrated_share")?.to_string();
        let tau = json_field(&report, "tau_days")?.to_string();
        Ok((share, tau))
    }

    fn replay_args(
        &self,
        p: &str,
        seed: &str,
        budget: &str,
        tau: &str,
        engines: &str,
    ) -> Vec<String> {
        let mut service = format!("--tau-days {tau}");
        if !self.a.service_args.is_empty() {
            service = format!("{service} {}", self.a.service_args);
        }
        let mut v = vec![
            "--engines".to_string(),
            engines.into(),
            "--workload".into(),
            format!("awpi-{p}"),
            "--awpi-scale".into(),
            self.scale.to_string(),
            "--seed".into(),
            seed.into(),
        ];
        v.extend(self.gen_args());
        v.extend([
            "--python".into(),
            self.py.clone(),
            "--salsm-budget".into(),
            budget.into(),
            "--salsm-latency-scale".into(),
            self.a.scale_lat.to_string(),
            "--timeline-ms".into(),
            "250".into(),
            format!("--salsm-service-args={service}"),
        ]);
        v
    }

    /// `salsm-summary` over the output, with the settings and times.
    fn summary(&self) -> Result<String> {
        let out = self.plan.out.display().to_string();
        let cli = Cli::try_parse_from(["cairn-bench", "salsm-summary", "--dir", &out])
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let Command::SalsmSummary(s) = cli.command else {
            unreachable!("parsed a salsm-summary command line");
        };
        let mut md = crate::salsm::summary::write_summary(&s)?;
        let a = self.a;
        let _ =
            write!(
            md,
            "\nSettings: generator {}{}, traces at --awpi-scale {}\n(seed {}), compare runs at {} \
             (seeds {}) on the {} clock, device latency x {:?},\nalpha {} days, service args '{}', \
             open-loop load {}. Times:\n\n",
            a.generator,
            a.ablate.as_ref().map_or(String::new(), |x| format!(" without {x}")),
            self.trace_scale,
            a.seed,
            self.scale,
            self.seeds,
            self.plan.clock.name(),
            a.scale_lat,
            a.alpha,
            a.service_args,
            if a.open_load > 0.0 { a.open_load.to_string() } else { "none".into() },
        );
        for t in &self.times {
            let _ = writeln!(md, "    {t}");
        }
        let _ = write!(md, "\nTotal: {} s.\n", self.plan.elapsed_s());
        Ok(md)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_rate_loads_the_naive_gbdts_busiest_device() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("runs.list"), "cairn-sa-lru\ncairn-sa-gbdt-naive\n").unwrap();
        let run = |engine: &str, hot: u64, cold: u64| {
            let dev = |fg: u64, bg: u64| serde_json::json!({"foreground": [{"service_ns": fg}], "background": [{"service_ns": bg}]});
            serde_json::json!({"engine": engine, "ops": 1000,
                "virtual_clock": {"measured": {"devices": [dev(hot, 0), dev(cold / 2, cold / 2)]}}})
            .to_string()
        };
        std::fs::write(d.join("cairn-sa-lru.json"), run("cairn:sa-lru", 1, 1)).unwrap();
        // The cold device is busiest: 4 ms per 1,000 ops, 4 us an op, so 250k ops/s at 100%.
        std::fs::write(
            d.join("cairn-sa-gbdt-naive.json"),
            run("cairn:sa-gbdt-naive", 1_000_000, 4_000_000),
        )
        .unwrap();
        let rate = open_rate(d, 0.8).unwrap();
        assert!((rate - 200_000.0).abs() < 1e-6, "{rate}");
        std::fs::write(d.join("runs.list"), "cairn-sa-lru\n").unwrap();
        assert!(open_rate(d, 0.8).is_err());
    }

    #[test]
    fn output_suffixes_are_added_once() {
        assert_eq!(
            suffixed(Path::new("out"), "-wall"),
            PathBuf::from("out-wall")
        );
        assert_eq!(
            suffixed(Path::new("out-wall"), "-wall"),
            PathBuf::from("out-wall")
        );
    }
}
