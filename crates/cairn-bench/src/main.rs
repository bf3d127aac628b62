use anyhow::Result;
use cairn_bench::cli::{Cli, Command};
use cairn_bench::compare;
use clap::Parser;

fn main() -> Result<()> {
    // candle (RusKey's DDPG agents) runs its small matmuls on rayon and, without this
    // variable, counts the CPUs again on every matmul; the tuner trains in one background
    // thread anyway. Set before any thread starts (children inherit it).
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", "1");
    }
    match Cli::parse().command {
        Command::Run(a) => compare::run_cmd(&a),
        Command::Compare(a) => compare::compare_cmd(&a),
        Command::Summary(a) => cairn_bench::summary::summary_cmd(&a),
        Command::Sweep(a) => cairn_bench::sweep::sweep_cmd(&a),
        Command::LeaperSummary(a) => cairn_bench::leaper::summary::summary_cmd(&a),
        Command::RuskeySummary(a) => cairn_bench::ruskey::summary_cmd(&a),
        Command::SalsmSummary(a) => cairn_bench::salsm::summary::summary_cmd(&a),
        Command::Calibrate(a) => cairn_bench::calibrate::calibrate_cmd(&a),
        Command::RangeDelete(a) => cairn_bench::range_delete::range_delete_cmd(&a),
        Command::ClockSummary(a) => cairn_bench::clock_summary::clock_summary_cmd(&a),
        Command::Reprice(a) => cairn_bench::reprice::reprice_cmd(&a),
        Command::SalsmTrace(a) => cairn_bench::salsm::run::trace_cmd(&a),
        Command::Paper(a) => cairn_bench::paper::paper_cmd(&a),
        Command::Child {
            request,
            json,
            timeline,
        } => compare::child_cmd(&request, &json, &timeline),
    }
}
