//! `cairn-bench paper <name>`: one entry point per paper. Each paper's module holds its
//! experiment plan (the runs, with the settings of its `scripts/<paper>-bench.sh` as flags
//! and defaults) and ends in its summary tables, written to `OUT/summary.md` with the
//! command, commit and machine on top and, with `--publish`, into the generated section of
//! `docs/results/<paper>.md`. The scripts build the binary, prepare what a plan needs
//! outside Rust (the Python learners) and map their environment variables to these flags.

pub mod ac_key;
pub mod bourbon;
pub mod leaper;
pub mod plan;
pub mod publish;
pub mod ruskey;
pub mod sa_lsm;

use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct PaperArgs {
    #[command(subcommand)]
    pub paper: Paper,
}

/// The papers, each with its plan's settings.
#[derive(Subcommand, Debug)]
pub enum Paper {
    /// AC-Key (paper section 5): the fixed-split search, Figs. 7-13 and Table 2, every
    /// point with every cache policy (`cairn-bench sweep` underneath).
    AcKey(Box<ac_key::AcKeyArgs>),
    /// Bourbon: datasets, real key sets, request distributions, YCSB and write-heavy
    /// mixes, learned index against fence pointers, with the lookup breakdown.
    Bourbon(Box<bourbon::BourbonArgs>),
    /// Leaper: Table 2's workloads with every prefetch policy, Figs. 13-14's sweeps and
    /// Table 5's collector cost.
    Leaper(Box<leaper::LeaperArgs>),
    /// RusKey: dynamic sessions, static mixes, greedy thresholds, Monkey blooms, YCSB and
    /// transitions, every learned engine once per tuner seed.
    Ruskey(Box<ruskey::RuskeyArgs>),
    /// SA-LSM: traces scored by the survival service (Table 3, Figs. 11-14), then the
    /// engine's placements at Algorithm 3's count replayed on the tiers (Figs. 15-17,
    /// Table 5), closed and open loop.
    SaLsm(Box<sa_lsm::SaLsmArgs>),
}

pub fn paper_cmd(a: &PaperArgs) -> Result<()> {
    match &a.paper {
        Paper::AcKey(p) => ac_key::run(p),
        Paper::Bourbon(p) => bourbon::run(p),
        Paper::Leaper(p) => leaper::run(p),
        Paper::Ruskey(p) => ruskey::run(p),
        Paper::SaLsm(p) => sa_lsm::run(p),
    }
}
