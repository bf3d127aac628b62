//! RusKey's plan (section 7): a per-level tuner of the run limit K_i against static
//! policies, in parts (each its own directory and `ruskey-summary`):
//! - `sessions`, Fig. 7 / Table 3: five sessions of 90/50/10/30/70% lookups (the rest
//!   updates, uniform keys);
//! - `static`, Fig. 6: read-heavy, balanced and write-heavy mixes, each its own run;
//! - `greedy`, Fig. 12: the greedy thresholds on the sessions, ranked against the
//!   `sessions` part's statics (same stream);
//! - `monkey`, Fig. 8: Monkey blooms at fewer bits per key on the static mixes;
//! - `ycsb`, Fig. 11: YCSB A-F (zipfian);
//! - `transitions`, Fig. 10: the greedy, lazy and flexible transitions under one K change.
//!
//! The learned engines (`cairn:ruskey*`) run once per tuner seed (into `seed-S/`), every
//! other engine once; the summary ranks the median seed with the worst beside it.
//! Regimes: the default, `--quick` (smaller), `--regime paper` (RusKey's tree shape: every
//! flush merged at once, level 1 = T memtables, 256 KiB tables, levels 0..3 with level 3
//! holding most of the data, on the virtual nvme; every static K from 1 to T).

use super::plan::{strings, Common, Plan};
use crate::cli::{Cli, Command};
use crate::engines::{ClockKind, Device};
use anyhow::{bail, Result};
use clap::{Args, Parser, ValueEnum};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Regime {
    Paper,
}

/// Every setting; unset ones take the regime's default (`--regime`, then `--quick`).
#[derive(Args, Debug)]
pub struct RuskeyArgs {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, value_enum)]
    pub regime: Option<Regime>,
    #[arg(long)]
    pub quick: bool,
    /// Parts, in order: sessions static greedy monkey ycsb transitions.
    #[arg(long, default_value = "sessions static greedy monkey ycsb transitions")]
    pub parts: String,
    #[arg(long)]
    pub records: Option<u64>,
    /// Ops per mission (the harness's per-mission series and the tuner's mission size).
    #[arg(long)]
    pub mission_ops: Option<u64>,
    /// Missions per session.
    #[arg(long)]
    pub missions: Option<u64>,
    /// Missions per static workload.
    #[arg(long)]
    pub static_missions: Option<u64>,
    #[arg(long)]
    pub ycsb_ops: Option<u64>,
    #[arg(long, default_value = "a b c d e f")]
    pub ycsb_workloads: String,
    #[arg(long)]
    pub engines: Option<String>,
    #[arg(long)]
    pub ycsb_engines: Option<String>,
    #[arg(
        long,
        default_value = "cairn:greedy-50-50,cairn:greedy-33-67,cairn:greedy-25-75,cairn:greedy-10-90,cairn:greedy-25-50,cairn:greedy-50-75"
    )]
    pub greedy_engines: String,
    #[arg(
        long,
        default_value = "cairn:ruskey-monkey,cairn:lazy-leveling,cairn:monkey"
    )]
    pub monkey_engines: String,
    #[arg(
        long,
        default_value = "cairn:transition-greedy,cairn:transition-lazy,cairn:transition-flexible"
    )]
    pub transition_engines: String,
    #[arg(long, default_value_t = 120)]
    pub transition_missions: u64,
    /// The mission of the K change [default: half of --transition-missions].
    #[arg(long)]
    pub transition_at: Option<u64>,
    /// Tuner seeds of the learned engines.
    #[arg(long, default_value = "1 2 3 4 5")]
    pub seeds: String,
    /// The method the goals are about (ruskey-summary's --ruskey).
    #[arg(long)]
    pub ruskey: Option<String>,
    #[arg(long, default_value_t = 128)]
    pub key_size: u64,
    #[arg(long, default_value_t = 896)]
    pub value_size: u64,
    /// The memtable's size.
    #[arg(long)]
    pub wbs: Option<String>,
    #[arg(long)]
    pub level1: Option<String>,
    /// The size ratio.
    #[arg(long, default_value_t = 10)]
    pub t: u32,
    #[arg(long, default_value = "8M")]
    pub cache: String,
    #[arg(long, default_value_t = 8)]
    pub bloom: u32,
    #[arg(long, default_value_t = 4)]
    pub monkey_bloom: u32,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    #[arg(
        long,
        default_value = "read-heavy:read=0.9,update=0.1 balanced:read=0.5,update=0.5 write-heavy:read=0.1,update=0.9"
    )]
    pub static_mixes: String,
    #[arg(long)]
    pub l0_trigger: Option<u32>,
    #[arg(long)]
    pub num_levels: Option<u32>,
    #[arg(long)]
    pub table: Option<String>,
}

/// The settled settings.
struct Settings {
    records: u64,
    mission_ops: u64,
    missions: u64,
    static_missions: u64,
    ycsb_ops: u64,
    engines: String,
    ycsb_engines: String,
    wbs: String,
    level1: String,
    l0_trigger: Option<u32>,
    num_levels: Option<u32>,
    table: Option<String>,
}

impl RuskeyArgs {
    fn settings(&self) -> Settings {
        let paper = self.regime.is_some();
        // An explicit flag, else the regime's value, else --quick's, else the default.
        let num = |o: Option<u64>, p: u64, q: u64, d: u64| {
            o.unwrap_or(if paper {
                p
            } else if self.quick {
                q
            } else {
                d
            })
        };
        let statics = (1..=10)
            .map(|k| format!("cairn:k-{k}"))
            .collect::<Vec<_>>()
            .join(",");
        let engines = if paper {
            format!("{statics},cairn:lazy-leveling,cairn:monkey,cairn:greedy,cairn:ruskey")
        } else {
            "cairn:ruskey,cairn:default,cairn:moderate,cairn:tiering,cairn:lazy-leveling,cairn:greedy".into()
        };
        let ycsb_engines = if paper {
            "cairn:k-1,cairn:k-2,cairn:k-4,cairn:k-10,cairn:ruskey"
        } else if self.quick {
            "cairn:ruskey,cairn:default,cairn:tiering"
        } else {
            "cairn:ruskey,cairn:default,cairn:moderate,cairn:tiering"
        };
        let pick = |o: &Option<String>, p: &str, d: &str| {
            o.clone()
                .unwrap_or_else(|| (if paper { p } else { d }).to_string())
        };
        Settings {
            records: num(self.records, 300_000, 50_000, 80_000),
            mission_ops: num(self.mission_ops, 5000, 500, 1000),
            missions: num(self.missions, 60, 100, 400),
            static_missions: num(self.static_missions, 100, 80, 400),
            ycsb_ops: num(self.ycsb_ops, 500_000, 20_000, 100_000),
            engines: self.engines.clone().unwrap_or(engines),
            ycsb_engines: self.ycsb_engines.clone().unwrap_or(ycsb_engines.into()),
            wbs: pick(&self.wbs, "256K", "1M"),
            level1: pick(&self.level1, "2560K", "4M"),
            l0_trigger: self.l0_trigger.or(paper.then_some(1)),
            num_levels: self.num_levels.or(paper.then_some(4)),
            table: self.table.clone().or(paper.then(|| "256K".into())),
        }
    }
}

struct Ruskey<'a> {
    a: &'a RuskeyArgs,
    s: Settings,
    plan: Plan,
}

pub fn run(a: &RuskeyArgs) -> Result<()> {
    let clock = if a.regime.is_some() {
        ClockKind::Virtual
    } else {
        ClockKind::Wall
    };
    let plan = Plan::new("ruskey", &a.common, clock, Device::None, Device::Nvme)?;
    let mut s = a.settings();
    s.engines = plan.runnable("--engines", &s.engines)?;
    s.ycsb_engines = plan.runnable("--ycsb-engines", &s.ycsb_engines)?;
    let r = Ruskey { a, s, plan };
    let mut md = r.header();
    for part in a.parts.split_whitespace() {
        eprintln!("### part {part}");
        let started = Instant::now();
        md += &r.part(part)?;
        let _ = writeln!(md, "_Part {part}: {} s._", started.elapsed().as_secs());
    }
    let _ = write!(
        md,
        "\nTotal time: {} s. Per-mission plots: */ruskey_missions.png.\n",
        r.plan.elapsed_s()
    );
    r.plan.finish(md)
}

impl Ruskey<'_> {
    fn header(&self) -> String {
        let (a, s) = (self.a, &self.s);
        let mut h = format!(
            "# RusKey on cairn (cairn-bench paper ruskey)\n\n\
             {} records of {} + {} bytes (uniform keys unless YCSB); memtable {},\n\
             level 1 {}, size ratio {}, block cache {}, {} bloom bits per key; missions of\n\
             {} ops, {} per session ({} ops over five sessions), {} per\n\
             static workload ({} ops); seed {}. Every engine loads the records and waits for\n\
             background work (--settle) before the measured ops. Tuner seeds of cairn:ruskey*: {}\n\
             (one run each; other engines run once). Extra flags: {}.\n",
            s.records,
            a.key_size,
            a.value_size,
            s.wbs,
            s.level1,
            a.t,
            a.cache,
            a.bloom,
            s.mission_ops,
            s.missions,
            self.session_ops(),
            s.static_missions,
            s.static_missions * s.mission_ops,
            a.seed,
            a.seeds,
            if a.common.extra.is_empty() {
                "none"
            } else {
                &a.common.extra
            },
        );
        if self.plan.is_virtual() {
            let _ = write!(
                h,
                "\nClock: virtual, device {} (--clock virtual --threads 1): times and latencies are\n\
                 the simulated device's and priced CPU's, not the wall clock's.\n",
                self.plan.device_name()
            );
        }
        h
    }

    fn session_ops(&self) -> u64 {
        5 * self.s.missions * self.s.mission_ops
    }

    fn part(&self, part: &str) -> Result<String> {
        let (a, s) = (self.a, &self.s);
        let out = &self.plan.out;
        let mut dirs = Vec::new();
        let sessions = |w: &str| -> Vec<String> {
            let ops = self.session_ops().to_string();
            let bloom = a.bloom.to_string();
            let v = [
                "--workload",
                w,
                "--distribution",
                "uniform",
                "--ops",
                &ops,
                "--bloom-bits",
                &bloom,
            ];
            strings(&v)
        };
        let mix = |m: &str, bloom: u32| -> Vec<String> {
            let ops = (s.static_missions * s.mission_ops).to_string();
            let bloom = bloom.to_string();
            let v = [
                "--workload",
                "mix",
                "--mix",
                m,
                "--distribution",
                "uniform",
                "--ops",
                &ops,
                "--bloom-bits",
                &bloom,
            ];
            strings(&v)
        };
        let (title, summary_dir) = match part {
            "sessions" => {
                self.seeded(
                    &out.join("sessions"),
                    &s.engines,
                    &sessions("ruskey-sessions"),
                    &mut dirs,
                )?;
                (
                    "Fig. 7 / Table 3: dynamic sessions".to_string(),
                    out.join("sessions"),
                )
            }
            "static" => {
                for (name, m) in self.static_mixes()? {
                    self.seeded(
                        &out.join("static").join(name),
                        &s.engines,
                        &mix(m, a.bloom),
                        &mut dirs,
                    )?;
                }
                ("Fig. 6: static workloads".to_string(), out.join("static"))
            }
            "greedy" => {
                let engines = self.plan.runnable("--greedy-engines", &a.greedy_engines)?;
                self.seeded(
                    &out.join("greedy"),
                    &engines,
                    &sessions("ruskey-sessions"),
                    &mut dirs,
                )?;
                let sessions = out.join("sessions");
                let seeds = a
                    .seeds
                    .split_whitespace()
                    .map(|s| sessions.join(format!("seed-{s}")));
                dirs.extend(
                    std::iter::once(sessions.clone())
                        .chain(seeds)
                        .filter(|d| d.is_dir()),
                );
                ("Fig. 12: greedy thresholds".to_string(), out.join("greedy"))
            }
            "monkey" => {
                let engines = self.plan.runnable("--monkey-engines", &a.monkey_engines)?;
                for (name, m) in self.static_mixes()? {
                    self.seeded(
                        &out.join("monkey").join(name),
                        &engines,
                        &mix(m, a.monkey_bloom),
                        &mut dirs,
                    )?;
                }
                (
                    format!("Fig. 8: Monkey blooms ({} bits per key)", a.monkey_bloom),
                    out.join("monkey"),
                )
            }
            "ycsb" => {
                for l in a.ycsb_workloads.split_whitespace() {
                    let ops = s.ycsb_ops.to_string();
                    let bloom = a.bloom.to_string();
                    let w = format!("ycsb-{l}");
                    let args = strings(&["--workload", &w, "--ops", &ops, "--bloom-bits", &bloom]);
                    self.seeded(
                        &out.join("ycsb").join(&w),
                        &s.ycsb_engines,
                        &args,
                        &mut dirs,
                    )?;
                }
                ("Fig. 11: YCSB (zipfian)".to_string(), out.join("ycsb"))
            }
            "transitions" => return self.transitions(),
            _ => bail!("unknown part {part} (sessions static greedy monkey ycsb transitions)"),
        };
        self.summary(&title, &summary_dir.join("ruskey-summary.md"), &dirs)
    }

    /// The static mixes as (name, mix).
    fn static_mixes(&self) -> Result<Vec<(&str, &str)>> {
        self.a
            .static_mixes
            .split_whitespace()
            .map(|w| {
                w.split_once(':')
                    .ok_or_else(|| anyhow::anyhow!("--static-mixes: {w} is not NAME:MIX"))
            })
            .collect()
    }

    /// One compare of `engines` into `dir` with the tree's settings.
    fn compare(&self, dir: &Path, engines: &str, args: &[String]) -> Result<()> {
        let (a, s) = (self.a, &self.s);
        let mut v: Vec<String> = [
            ("--engines", engines.to_string()),
            ("--records", s.records.to_string()),
            ("--seed", a.seed.to_string()),
            ("--key-size", a.key_size.to_string()),
            ("--value-size", a.value_size.to_string()),
            ("--write-buffer-size", s.wbs.clone()),
            ("--level1-bytes", s.level1.clone()),
            ("--size-ratio", a.t.to_string()),
            ("--cache-bytes", a.cache.clone()),
            ("--mission-ops", s.mission_ops.to_string()),
        ]
        .into_iter()
        .flat_map(|(f, v)| [f.to_string(), v])
        .collect();
        v.push("--settle".into());
        for (flag, value) in [
            ("--l0-trigger", s.l0_trigger.map(|x| x.to_string())),
            ("--target-file-size", s.table.clone()),
            ("--num-levels", s.num_levels.map(|x| x.to_string())),
        ] {
            if let Some(value) = value {
                v.extend([flag.to_string(), value]);
            }
        }
        v.extend(args.iter().cloned());
        self.plan.compare(dir, &v)
    }

    /// The static engines once into `dir`, each learned one once per tuner seed into
    /// `dir/seed-S`; the directories go to `dirs`.
    fn seeded(
        &self,
        dir: &Path,
        engines: &str,
        args: &[String],
        dirs: &mut Vec<PathBuf>,
    ) -> Result<()> {
        let (learned, others): (Vec<&str>, Vec<&str>) = engines
            .split(',')
            .filter(|e| !e.is_empty())
            .partition(|e| e.starts_with("cairn:ruskey"));
        if !others.is_empty() {
            self.compare(dir, &others.join(","), args)?;
            dirs.push(dir.to_path_buf());
        }
        if !learned.is_empty() {
            for seed in self.a.seeds.split_whitespace() {
                let d = dir.join(format!("seed-{seed}"));
                let mut args = args.to_vec();
                args.extend(["--tuner-seed".to_string(), seed.to_string()]);
                self.compare(&d, &learned.join(","), &args)?;
                dirs.push(d);
            }
        }
        Ok(())
    }

    /// `ruskey-summary` over `dirs`, written to `out`.
    fn summary(&self, title: &str, out: &Path, dirs: &[PathBuf]) -> Result<String> {
        let mut argv = strings(&["cairn-bench", "ruskey-summary", "--title", title]);
        argv.extend(["--out".into(), out.display().to_string()]);
        for d in dirs {
            argv.extend(["--dir".into(), d.display().to_string()]);
        }
        if let Some(r) = &self.a.ruskey {
            argv.extend(["--ruskey".into(), r.clone()]);
        }
        let cli = Cli::try_parse_from(&argv).map_err(|e| anyhow::anyhow!("{e}"))?;
        let Command::RuskeySummary(s) = cli.command else {
            unreachable!("parsed a ruskey-summary command line");
        };
        Ok(format!("\n{}", crate::ruskey::summary(&s)?))
    }

    /// Fig. 10: K = 1 at every level until the change, then K = T everywhere.
    fn transitions(&self) -> Result<String> {
        let (a, s) = (self.a, &self.s);
        let dir = self.plan.out.join("transitions");
        let engines = self
            .plan
            .runnable("--transition-engines", &a.transition_engines)?;
        let at = a.transition_at.unwrap_or(a.transition_missions / 2);
        let args: Vec<String> = [
            "--workload".to_string(),
            "mix".into(),
            "--mix".into(),
            "read=0.5,update=0.5".into(),
            "--distribution".into(),
            "uniform".into(),
            "--ops".into(),
            (a.transition_missions * s.mission_ops).to_string(),
            "--bloom-bits".into(),
            a.bloom.to_string(),
            "--set-k-at".into(),
            format!("{at}:{}", a.t),
        ]
        .into();
        self.compare(&dir, &engines, &args)?;
        let report = std::fs::read_to_string(dir.join("report.md"))?;
        Ok(format!(
            "\n## Fig. 10: transitions ({}/report.md, transition.png)\n\n{}",
            dir.display(),
            k_change_section(&report)
        ))
    }
}

/// The body of a compare report's `## K change` section.
fn k_change_section(report: &str) -> String {
    let mut inside = false;
    let mut s = String::new();
    for line in report.lines() {
        if line.starts_with("## ") {
            inside = line.starts_with("## K change");
            continue;
        }
        if inside {
            s.push_str(line);
            s.push('\n');
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_k_change_section_is_cut_from_the_report() {
        let r = "# Report\n## Runs\nx\n## K change (mission 60)\n| a |\n\n## Later\ny\n";
        assert_eq!(k_change_section(r), "| a |\n\n");
    }

    #[test]
    fn regimes_settle_in_order_flag_regime_quick_default() {
        let parse = |args: &[&str]| {
            let mut v = vec!["cairn-bench", "paper", "ruskey"];
            v.extend(args);
            let Command::Paper(p) = Cli::try_parse_from(v).unwrap().command else {
                panic!()
            };
            let super::super::Paper::Ruskey(r) = p.paper else {
                panic!()
            };
            r.settings()
        };
        assert_eq!(parse(&[]).records, 80_000);
        assert_eq!(parse(&["--quick"]).records, 50_000);
        let paper = parse(&["--regime", "paper", "--quick"]);
        assert_eq!(
            (paper.records, paper.l0_trigger, paper.wbs.as_str()),
            (300_000, Some(1), "256K")
        );
        assert!(paper.engines.starts_with("cairn:k-1,cairn:k-2,"));
        assert_eq!(parse(&["--quick", "--records", "7"]).records, 7);
    }
}
