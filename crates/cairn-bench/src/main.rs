use anyhow::Result;
use cairn_bench::cli::{Cli, Command};
use cairn_bench::compare;
use clap::Parser;

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Run(a) => compare::run_cmd(&a),
        Command::Compare(a) => compare::compare_cmd(&a),
        Command::Sweep(a) => cairn_bench::sweep::sweep_cmd(&a),
        Command::LeaperSummary(a) => cairn_bench::leaper::summary::summary_cmd(&a),
        Command::RuskeySummary(a) => cairn_bench::ruskey::summary_cmd(&a),
        Command::Child {
            request,
            json,
            timeline,
        } => compare::child_cmd(&request, &json, &timeline),
    }
}
