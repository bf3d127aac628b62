//! AC-Key's plan (paper section 5): the fixed-split search (the paper's `offline`), Figs.
//! 7-13 and Table 2, each point run with every cache policy on the same seeded op stream
//! (`cairn-bench sweep`), one summary section per figure: QPS, its ratio to the reference,
//! storage reads per op (a count, the same on every run of a seed).
//!
//! Storage reads cost what they would on an SSD: the `ssd` device profile on top of direct
//! I/O (cairn falls back to buffered reads where the filesystem refuses O_DIRECT, and its
//! stats say so).

use super::plan::{strings, Common, Plan};
use crate::cli::{Cli, Command};
use crate::engines::{ClockKind, Device};
use anyhow::Result;
use clap::{Args, Parser};

#[derive(Args, Debug)]
pub struct AcKeyArgs {
    #[command(flatten)]
    pub common: Common,
    /// Records loaded (about 13 MiB of data at 100k).
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Measured ops per point. At 10k each hot key is read about five times, so AC-Key's
    /// key-pointer stage (one extra read per hot key) weighs more than in the paper's
    /// million-op runs.
    #[arg(long, default_value_t = 10_000)]
    pub ops: u64,
    #[arg(
        long,
        default_value = "cairn:ac-key,cairn:block,cairn:pure-kv,cairn:pure-kp"
    )]
    pub engines: String,
    /// The engine every QPS is divided by.
    #[arg(long, default_value = "cairn:block")]
    pub reference: String,
    #[arg(
        long,
        default_value = "fixed,fig7,fig8,fig9,fig10,fig11,fig12,fig13,table2"
    )]
    pub figures: String,
    /// The cache shared by all components: a few percent of the data.
    #[arg(long, default_value = "512K")]
    pub cache: String,
    /// Fig. 12's cache sizes.
    #[arg(long, default_value = "128K,256K,512K,1M,2M")]
    pub cache_sizes: String,
    /// The fixed-split search's step (tenths of the cache).
    #[arg(long, default_value_t = 5)]
    pub fixed_step: u32,
    /// Buffered reads instead of direct I/O.
    #[arg(long)]
    pub buffered: bool,
    #[arg(long, default_value_t = 500)]
    pub timeline_ms: u64,
}

pub fn run(a: &AcKeyArgs) -> Result<()> {
    let plan = Plan::new(
        "ac-key",
        &a.common,
        ClockKind::Wall,
        Device::Ssd,
        Device::Ssd,
    )?;
    let engines = plan.runnable("--engines", &a.engines)?;
    let mut argv = strings(&["cairn-bench", "sweep"]);
    for (flag, value) in [
        ("--figures", a.figures.clone()),
        ("--engines", engines),
        ("--reference", a.reference.clone()),
        ("--records", a.records.to_string()),
        ("--ops", a.ops.to_string()),
        ("--cache-bytes", a.cache.clone()),
        ("--cache-sizes", a.cache_sizes.clone()),
        ("--fixed-step", a.fixed_step.to_string()),
        ("--write-buffer-size", "4M".into()),
        ("--device", plan.device_name()),
        ("--timeline-ms", a.timeline_ms.to_string()),
        ("--out", plan.out.display().to_string()),
    ] {
        argv.extend([flag.to_string(), value]);
    }
    argv.push("--settle".into());
    if !a.buffered {
        argv.push("--direct-io".into());
    }
    argv.extend(plan.clock_flags());
    argv.extend(a.common.extra.split_whitespace().map(str::to_string));
    let cli = Cli::try_parse_from(&argv).map_err(|e| anyhow::anyhow!("{e}"))?;
    let Command::Sweep(s) = cli.command else {
        unreachable!("parsed a sweep command line");
    };
    let summary = crate::sweep::sweep(&s)?;
    plan.finish(summary)
}
