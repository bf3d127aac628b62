//! What every paper's plan shares: the clock and its output tree, running `compare` in
//! this process and reading its results, the summary's head.

use crate::cli::{Cli, Command};
use crate::engines::{ClockKind, Device};
use crate::report::json::RunResult;
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, ValueEnum};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The flags every paper takes.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// The clock every run is timed on: wall, or virtual (cairn's engines only, one request
    /// thread, every I/O priced on --device; written under OUT-virtual-DEVICE, so wall and
    /// virtual results never mix).
    /// [default: the paper's own, wall for most]
    #[arg(long, value_enum)]
    pub clock: Option<ClockKind>,
    /// The device model [default: the paper's own].
    #[arg(long, value_enum)]
    pub device: Option<Device>,
    /// Output directory [default: bench-out/PAPER].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the summary into the generated section of RESULTS_DIR/PAPER.md.
    #[arg(long)]
    pub publish: bool,
    /// Where `--publish` writes.
    #[arg(long, default_value = "docs/results")]
    pub results_dir: PathBuf,
    /// Flags added to every run (one string, split at whitespace), e.g. "--warmup-ops 1000".
    #[arg(long, allow_hyphen_values = true, default_value = "")]
    pub extra: String,
}

/// A paper's settled run settings: where results go and the flags every run gets.
pub struct Plan {
    pub paper: &'static str,
    pub out: PathBuf,
    pub clock: ClockKind,
    pub device: Device,
    common: Common,
    started: Instant,
}

impl Plan {
    /// Settles the clock (`clock` when none is named), device and output directory
    /// (`wall_device`: the device a wall run gets when none is named; `virtual_device`: a
    /// virtual one's).
    pub fn new(
        paper: &'static str,
        common: &Common,
        clock: ClockKind,
        wall_device: Device,
        virtual_device: Device,
    ) -> Result<Plan> {
        let clock = common.clock.unwrap_or(clock);
        let base = common
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("bench-out/{paper}")));
        let (device, out) = match clock {
            ClockKind::Wall => (common.device.unwrap_or(wall_device), base),
            ClockKind::Virtual => {
                let device = common.device.unwrap_or(virtual_device);
                if device == Device::None {
                    bail!("--clock virtual needs a device model: --device nvme, ssd or hdd");
                }
                (device, virtual_out(&base, device))
            }
        };
        Plan::at(paper, common, clock, device, out)
    }

    /// A plan whose output directory the paper settles itself.
    pub fn at(
        paper: &'static str,
        common: &Common,
        clock: ClockKind,
        device: Device,
        out: PathBuf,
    ) -> Result<Plan> {
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        Ok(Plan {
            paper,
            out,
            clock,
            device,
            common: common.clone(),
            started: Instant::now(),
        })
    }

    pub fn is_virtual(&self) -> bool {
        self.clock == ClockKind::Virtual
    }

    /// The flags that put a run on this plan's clock.
    pub fn clock_flags(&self) -> Vec<String> {
        match self.clock {
            ClockKind::Wall => vec![],
            ClockKind::Virtual => strings(&["--clock", "virtual", "--threads", "1"]),
        }
    }

    /// The device's flag value.
    pub fn device_name(&self) -> String {
        value_name(self.device)
    }

    /// `engines` without those the plan's clock cannot run (on the virtual clock, all but
    /// cairn's), saying which it drops; an error when none is left.
    pub fn runnable(&self, what: &str, engines: &str) -> Result<String> {
        runnable_on(self.clock, what, engines)
    }

    /// Runs `cairn-bench compare ARGS` (plus the device, the clock flags and `--extra`)
    /// into `dir`.
    pub fn compare(&self, dir: &Path, args: &[String]) -> Result<()> {
        std::fs::create_dir_all(dir)?;
        eprintln!("== {} -> {}", args.join(" "), dir.display());
        let mut argv = strings(&["cairn-bench", "compare"]);
        argv.extend(args.iter().cloned());
        argv.extend(["--device".to_string(), self.device_name()]);
        argv.extend(self.clock_flags());
        argv.extend(self.common.extra.split_whitespace().map(str::to_string));
        argv.extend(["--out".to_string(), dir.display().to_string()]);
        let cli = Cli::try_parse_from(&argv).map_err(|e| anyhow::anyhow!("{e}"))?;
        let Command::Compare(a) = cli.command else {
            unreachable!("parsed a compare command line");
        };
        crate::compare::compare_cmd(&a)
    }

    /// Seconds since the plan started.
    pub fn elapsed_s(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// Writes OUT/summary.md (with the command, commit and machine under its heading),
    /// publishes it when asked, and prints it.
    pub fn finish(&self, md: String) -> Result<()> {
        let md = crate::report::provenance::with_provenance(md, &command_line());
        let path = self.out.join("summary.md");
        std::fs::write(&path, &md).with_context(|| format!("writing {}", path.display()))?;
        if self.common.publish {
            let page = self.common.results_dir.join(format!("{}.md", self.paper));
            super::publish::publish(&page, self.paper, &md)?;
            eprintln!("published: {}", page.display());
        }
        print!("{md}");
        eprintln!("summary: {}", path.display());
        Ok(())
    }
}

/// See [`Plan::runnable`].
pub fn runnable_on(clock: ClockKind, what: &str, engines: &str) -> Result<String> {
    let all: Vec<&str> = engines.split(',').filter(|e| !e.is_empty()).collect();
    if clock == ClockKind::Wall {
        return Ok(all.join(","));
    }
    let (kept, dropped): (Vec<&str>, Vec<&str>) = all
        .iter()
        .partition(|e| **e == "cairn" || e.starts_with("cairn:"));
    for e in dropped {
        eprintln!("virtual clock: dropping {e} from {what} (it runs cairn's engines only)");
    }
    if kept.is_empty() {
        bail!("virtual clock: {what} ({engines}) has no cairn engine to run");
    }
    Ok(kept.join(","))
}

/// OUT-virtual-DEVICE, once (a directory already named so keeps its name).
fn virtual_out(base: &Path, device: Device) -> PathBuf {
    let suffix = format!("-virtual-{}", value_name(device));
    let s = base.display().to_string();
    PathBuf::from(match s.strip_suffix(&suffix) {
        Some(stem) => format!("{stem}{suffix}"),
        None => format!("{s}{suffix}"),
    })
}

/// A clap value's name on the command line.
pub fn value_name<T: ValueEnum>(v: T) -> String {
    v.to_possible_value()
        .map_or_else(String::new, |p| p.get_name().to_string())
}

/// This process's command line, as the summary's provenance.
pub fn command_line() -> String {
    let mut args = std::env::args().skip(1).collect::<Vec<_>>();
    args.insert(0, "cairn-bench".into());
    shell_line(&args)
}

/// Arguments joined so a shell would split them back the same way: an empty one, or one
/// holding spaces or shell characters, in single quotes (`--traces 'a b' --compare ''`).
fn shell_line(args: &[String]) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_=.,:/+@%".contains(c);
    let word = |a: &String| {
        if !a.is_empty() && a.chars().all(plain) {
            a.clone()
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    };
    args.iter().map(word).collect::<Vec<_>>().join(" ")
}

pub fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// A run's file stem: its engine name with `:` as `-` (what `compare` writes).
pub fn stem(engine: &str) -> String {
    engine.replace(':', "-")
}

/// One engine's result in a compare directory.
pub fn result(dir: &Path, engine: &str) -> Result<RunResult> {
    let path = dir.join(format!("{}.json", stem(engine)));
    let s =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&s).with_context(|| format!("parsing {}", path.display()))
}

/// An engine-specific figure of a run (0 when the engine did not report it).
pub fn stat(r: &RunResult, name: &str) -> f64 {
    r.engine_stats.get(name).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_quotes_what_a_shell_would_split() {
        let args = strings(&[
            "cairn-bench",
            "paper",
            "--traces",
            "a b",
            "--compare",
            "",
            "--x=1",
            "it's",
        ]);
        assert_eq!(
            shell_line(&args),
            r"cairn-bench paper --traces 'a b' --compare '' --x=1 'it'\''s'"
        );
    }

    #[test]
    fn virtual_runs_keep_cairn_engines_only() {
        let kept = runnable_on(ClockKind::Virtual, "ENGINES", "rocksdb,cairn:lru,cairn").unwrap();
        assert_eq!(kept, "cairn:lru,cairn");
        assert!(runnable_on(ClockKind::Virtual, "ENGINES", "rocksdb,fjall").is_err());
        assert_eq!(
            runnable_on(ClockKind::Wall, "E", "rocksdb,cairn").unwrap(),
            "rocksdb,cairn"
        );
    }

    #[test]
    fn virtual_output_is_suffixed_once() {
        let once = virtual_out(Path::new("bench-out/leaper"), Device::Ssd);
        assert_eq!(once, PathBuf::from("bench-out/leaper-virtual-ssd"));
        assert_eq!(virtual_out(&once, Device::Ssd), once);
    }
}
