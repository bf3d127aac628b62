//! Leaper's plan: Table 2's workloads with every prefetch policy (each run's warm-up
//! trains the learner, the measured phase counts cache invalidations in and out of the
//! flush and compaction windows), Fig. 10's flush-only run, Figs. 13-14's sweeps on the
//! synthetic workload (range-query ratio, skew, read share, cache size) and Table 5's
//! collector cost. The learner runs in Python: `CAIRN_PYTHON` names the interpreter with
//! its packages (`scripts/leaper-bench.sh` prepares one).
//!
//! Regimes: the default (a quick-to-run setting with the sweeps), `--quick` (smaller, no
//! sweeps), `--regime paper` (the paper's proportions on the virtual ssd: 1M records, a
//! 30 MiB cache, 100 ms slots, every baseline and the oracle) and `--regime peers` (the
//! paper regime's moving workload on the wall clock beside RocksDB, which prepopulates
//! its block cache on flush, and RocksDB as shipped).

use super::plan::{result, Common, Plan};
use crate::engines::{ClockKind, Device};
use anyhow::Result;
use clap::{Args, ValueEnum};
use std::fmt::Write as _;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Regime {
    Paper,
    Peers,
}

/// Every setting; unset ones take the regime's default.
#[derive(Args, Debug)]
pub struct LeaperArgs {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, value_enum)]
    pub regime: Option<Regime>,
    /// Smaller runs, no sweeps (outside a regime).
    #[arg(long)]
    pub quick: bool,
    #[arg(long)]
    pub records: Option<u64>,
    #[arg(long)]
    pub ops: Option<u64>,
    /// Seconds of the stream run as warm-up (the learner trains on it).
    #[arg(long)]
    pub warmup_secs: Option<u64>,
    #[arg(long)]
    pub cache: Option<String>,
    /// The memtable's size.
    #[arg(long)]
    pub wbs: Option<String>,
    #[arg(long)]
    pub level1: Option<String>,
    #[arg(long)]
    pub table: Option<String>,
    #[arg(long)]
    pub slot_ms: Option<u64>,
    #[arg(long)]
    pub max_k: Option<u32>,
    /// The collector's sampling probability.
    #[arg(long)]
    pub sample_p: Option<f64>,
    /// Table 2's workloads (leaper-NAME).
    #[arg(long)]
    pub workloads: Option<String>,
    #[arg(long)]
    pub engines: Option<String>,
    /// The sweeps: range skew mix cache ("" for none).
    #[arg(long)]
    pub sweeps: Option<String>,
    /// Fig. 10's synthetic run with flush-only invalidations.
    #[arg(long)]
    pub fig10: Option<bool>,
    #[arg(long)]
    pub learner_args: Option<String>,
    #[arg(
        long,
        default_value = "--hot-keys 0.02 --hot-ops 0.98 --hot-phase-ops 40000"
    )]
    pub moving_args: String,
    #[arg(long, default_value_t = 250)]
    pub timeline_ms: u64,
    #[arg(long, default_value = "0.2 1.0")]
    pub range_ratios: String,
    #[arg(long, default_value = "0.3 0.9")]
    pub zipfs: String,
    #[arg(long, default_value = "0.9")]
    pub read_shares: String,
    #[arg(long, default_value = "4M 16M")]
    pub cache_sizes: String,
    /// Runs per engine in the peers regime.
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
}

/// The settled settings.
struct Settings {
    records: u64,
    ops: u64,
    warmup_secs: u64,
    cache: String,
    wbs: String,
    level1: Option<String>,
    table: Option<String>,
    slot_ms: u64,
    max_k: u32,
    sample_p: Option<f64>,
    workloads: String,
    engines: String,
    sweeps: String,
    fig10: bool,
    learner_args: String,
}

impl LeaperArgs {
    fn settings(&self) -> Settings {
        let paper = self.regime.is_some();
        let pick = |o: &Option<String>, p: &str, q: &str, d: &str| {
            o.clone().unwrap_or_else(|| {
                (if paper {
                    p
                } else if self.quick {
                    q
                } else {
                    d
                })
                .to_string()
            })
        };
        let num = |o: Option<u64>, p: u64, q: u64, d: u64| {
            o.unwrap_or(if paper {
                p
            } else if self.quick {
                q
            } else {
                d
            })
        };
        let engines = match self.regime {
            Some(Regime::Peers) => "rocksdb,cairn:lru,cairn:eager-evict,cairn:warm-flush,cairn:leaper",
            Some(Regime::Paper) => {
                "cairn:lru,cairn:eager-evict,cairn:warm-flush,cairn:warm-all,cairn:warmup,cairn:leaper,cairn:oracle"
            }
            None => "cairn:lru,cairn:warmup,cairn:leaper",
        };
        let workloads = match self.regime {
            Some(Regime::Peers) => "moving",
            Some(Regime::Paper) => "moving synthetic ecommerce im",
            None => "synthetic ecommerce im",
        };
        Settings {
            records: num(self.records, 1_000_000, 50_000, 100_000),
            ops: num(self.ops, 500_000, 60_000, 100_000),
            warmup_secs: num(self.warmup_secs, 20, 12, 15),
            cache: pick(&self.cache, "30M", "4M", "8M"),
            wbs: pick(&self.wbs, "512K", "512K", "1M"),
            level1: self.level1.clone().or(paper.then(|| "4M".into())),
            table: self.table.clone().or(paper.then(|| "1M".into())),
            slot_ms: self.slot_ms.unwrap_or(if paper { 100 } else { 500 }),
            max_k: self.max_k.unwrap_or(if paper { 8 } else { 6 }),
            sample_p: self.sample_p.or(paper.then_some(1.0)),
            workloads: self.workloads.clone().unwrap_or(workloads.into()),
            engines: self.engines.clone().unwrap_or(engines.into()),
            sweeps: pick(&self.sweeps, "", "", "range skew mix cache"),
            fig10: self.fig10.unwrap_or(!paper && !self.quick),
            learner_args: pick(
                &self.learner_args,
                "--test-share 0.2 --val-share 0.3 --max-multiplier 64 --hot-share 0.3 --recall-target 0.8",
                "--test-share 0.2 --val-share 0.3 --max-multiplier 8 --hot-share 0.3",
                "--test-share 0.2 --val-share 0.3 --max-multiplier 8 --hot-share 0.3",
            ),
        }
    }
}

struct Leaper<'a> {
    a: &'a LeaperArgs,
    s: Settings,
    plan: Plan,
}

pub fn run(a: &LeaperArgs) -> Result<()> {
    let (clock, wall_device) = match a.regime {
        Some(Regime::Paper) => (ClockKind::Virtual, Device::Ssd),
        Some(Regime::Peers) => (ClockKind::Wall, Device::None),
        None => (ClockKind::Wall, Device::Ssd),
    };
    let plan = Plan::new("leaper", &a.common, clock, wall_device, Device::Ssd)?;
    let mut s = a.settings();
    s.engines = plan.runnable("--engines", &s.engines)?;
    let l = Leaper { a, s, plan };
    let mut md = l.header();
    md += &l.main_table()?;
    let window = l.window_ms();
    for sweep in l.s.sweeps.split_whitespace() {
        md += &l.sweep(sweep, &window)?;
    }
    md += &l.collector_cost();
    let _ = write!(
        md,
        "\nSweep points other than `default` use T = {window} ms (the synthetic run's). The \
         `default` point is the synthetic run above (range ratio 0, zipf 0.5, read share 0.75, \
         cache {}). Timelines with jobs marked: */invalidation_timeline.png.\nTotal time: {} s.\n",
        l.s.cache,
        l.plan.elapsed_s()
    );
    l.plan.finish(md)
}

impl Leaper<'_> {
    fn header(&self) -> String {
        let s = &self.s;
        let mut h = format!(
            "# Leaper on cairn (cairn-bench paper leaper)\n\n\
             Engines {}; {} records, warm-up {} s, {} measured ops per run;\n\
             memtable {}, block cache {}, device profile {}; access slots {} ms,\n\
             at most {} models; timeline {} ms. Keys are synthetic in every workload.\n\
             Level 1 {}, tables {}, sampling P {};\nleaper-moving: {}.\n",
            s.engines,
            s.records,
            s.warmup_secs,
            s.ops,
            s.wbs,
            s.cache,
            self.plan.device_name(),
            s.slot_ms,
            s.max_k,
            self.a.timeline_ms,
            s.level1.as_deref().unwrap_or("default"),
            s.table.as_deref().unwrap_or("default"),
            s.sample_p.map_or("0.1".into(), |p| p.to_string()),
            self.a.moving_args
        );
        if self.plan.is_virtual() {
            let _ = write!(
                h,
                "Clock: virtual, device {} (--clock virtual --threads 1): QPS, p95, windows, the\n\
                 warm-up's end and the access statistics' slots are simulated device time plus \
                 priced CPU.\n",
                self.plan.device_name()
            );
        }
        h + "\n"
    }

    /// One compare of `engines` on leaper-`workload` into `dir`, at cache `cache`.
    fn compare(
        &self,
        dir: &Path,
        engines: &str,
        workload: &str,
        cache: &str,
        args: &[String],
    ) -> Result<()> {
        let s = &self.s;
        let mut v: Vec<String> = [
            ("--engines", engines.to_string()),
            ("--workload", format!("leaper-{workload}")),
            ("--records", s.records.to_string()),
            ("--ops", s.ops.to_string()),
            ("--warmup-secs", s.warmup_secs.to_string()),
            ("--write-buffer-size", s.wbs.clone()),
            ("--cache-bytes", cache.to_string()),
            ("--timeline-ms", self.a.timeline_ms.to_string()),
            ("--leaper-slot-ms", s.slot_ms.to_string()),
            ("--leaper-max-k", s.max_k.to_string()),
        ]
        .into_iter()
        .flat_map(|(f, v)| [f.to_string(), v])
        .collect();
        v.push(format!("--learner-args={}", s.learner_args));
        v.extend(["--settle".into(), "--block-trace".into()]);
        for (flag, value) in [
            ("--level1-bytes", s.level1.clone()),
            ("--target-file-size", s.table.clone()),
            ("--leaper-sample-p", s.sample_p.map(|p| p.to_string())),
        ] {
            if let Some(value) = value {
                v.extend([flag.to_string(), value]);
            }
        }
        if workload == "moving" {
            v.extend(self.a.moving_args.split_whitespace().map(str::to_string));
        }
        v.extend(args.iter().cloned());
        self.plan.compare(dir, &v)
    }

    /// Table 2's workloads (and Fig. 10's flush-only run, and RocksDB as shipped beside
    /// the peers regime's prepopulating one).
    fn main_table(&self) -> Result<String> {
        let peers = self.a.regime == Some(Regime::Peers);
        let repeat = vec!["--repeat".to_string(), self.a.repeat.to_string()];
        let mut points = Vec::new();
        for w in self.s.workloads.split_whitespace() {
            let dir = self.plan.out.join("main").join(w);
            let mut args = if peers { repeat.clone() } else { vec![] };
            if peers {
                args.push("--rocksdb-prepopulate".into());
            }
            self.compare(&dir, &self.s.engines, w, &self.s.cache, &args)?;
            points.push(format!("{w}={}", dir.display()));
            if peers {
                let dir = self
                    .plan
                    .out
                    .join("main")
                    .join(format!("{w}-rocksdb-default"));
                self.compare(&dir, "rocksdb", w, &self.s.cache, &repeat)?;
                points.push(format!(
                    "{w} (RocksDB without prepopulate)={}",
                    dir.display()
                ));
            }
        }
        if self.s.fig10 {
            let dir = self.plan.out.join("main/synthetic-flush-only");
            self.compare(
                &dir,
                &self.s.engines,
                "synthetic",
                &self.s.cache,
                &["--flush-only".into()],
            )?;
            points.push(format!("synthetic-flush-only={}", dir.display()));
        }
        let points = crate::leaper::summary::load_points(&points, false)?;
        Ok(crate::leaper::summary::summary(
            &points,
            "Table 2 workloads",
            "workload",
            true,
        ))
    }

    /// The invalidation window the synthetic run chose (the sweeps keep it), or `auto`.
    fn window_ms(&self) -> String {
        let first = self.s.engines.split(',').next().unwrap_or_default();
        result(&self.plan.out.join("main/synthetic"), first)
            .ok()
            .and_then(|r| r.invalidation.map(|i| i.window_ms))
            .map_or("auto".into(), |w| w.to_string())
    }

    /// One of Figs. 13-14's sweeps on the synthetic workload.
    fn sweep(&self, name: &str, window: &str) -> Result<String> {
        let (title, label, flag, values) = match name {
            "range" => (
                "Fig. 13a: range-query ratio (share of reads)",
                "range-ratio",
                "--range-ratio",
                &self.a.range_ratios,
            ),
            "skew" => (
                "Fig. 14: skew (zipf; 0 = uniform)",
                "zipf",
                "--zipf",
                &self.a.zipfs,
            ),
            "mix" => (
                "Fig. 13b: mixture (read share, updates:inserts 4:1)",
                "read-share",
                "--read-share",
                &self.a.read_shares,
            ),
            "cache" => (
                "Fig. 13c: cache size",
                "cache",
                "--cache-bytes",
                &self.a.cache_sizes,
            ),
            _ => anyhow::bail!("unknown sweep {name} (range skew mix cache)"),
        };
        let synthetic = self.plan.out.join("main/synthetic");
        let mut points = Vec::new();
        if synthetic.is_dir() {
            points.push(format!("default={}", synthetic.display()));
        }
        for v in values.split_whitespace() {
            let dir = self.plan.out.join(name).join(v);
            let mut args = vec!["--invalidation-window-ms".to_string(), window.to_string()];
            let mut cache = self.s.cache.as_str();
            match flag {
                "--zipf" if v == "0" => args.extend(["--distribution".into(), "uniform".into()]),
                "--cache-bytes" => cache = v,
                _ => args.extend([flag.to_string(), v.to_string()]),
            }
            self.compare(&dir, &self.s.engines, "synthetic", cache, &args)?;
            points.push(format!("{v}={}", dir.display()));
        }
        let points = crate::leaper::summary::load_points(&points, false)?;
        Ok(format!(
            "\n{}",
            crate::leaper::summary::summary(&points, title, label, false)
        ))
    }

    /// Table 5: the collector's cost per access (cairn's `access_cost` example, timed on
    /// the wall clock).
    fn collector_cost(&self) -> String {
        let mut s = String::from(
            "\n### Table 5: collector cost per access (cairn's access_cost example)\n\n",
        );
        if self.plan.is_virtual() {
            s += "(skipped on the virtual clock: access_cost is a wall-clock measurement; run it with --clock wall)\n";
            return s;
        }
        let out = std::process::Command::new("cargo")
            .args([
                "run",
                "--release",
                "-q",
                "-p",
                "cairn",
                "--example",
                "access_cost",
            ])
            .stderr(std::process::Stdio::null())
            .output();
        match out {
            Ok(o) if o.status.success() => s += &String::from_utf8_lossy(&o.stdout),
            _ => s += "(the access_cost example did not run)\n",
        }
        s
    }
}
