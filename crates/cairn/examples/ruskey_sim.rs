//! Lerp on the cost-model simulator (no disk): pretrains, then runs RusKey's five
//! sessions (read-heavy, balanced, write-heavy, write-inclined, read-inclined) and prints,
//! per session, the K vector Lerp settled on, the model's optimum, and the cost of both.
//!
//! `cargo run --release -p cairn --example ruskey_sim -- [PRETRAIN] [MISSIONS] [monkey]`

use cairn::policy::cost_model::{CostModel, SplitMix64};
use cairn::policy::{CompactionTuner, Lerp, LerpParams, Propagation};
use cairn::{BloomAllocation, Options};

fn main() -> cairn::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let pretrain: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(400);
    let per_session: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(300);
    let monkey = args.get(3).is_some_and(|s| s == "monkey");
    let levels = 4;
    let opts = Options {
        bloom_allocation: if monkey {
            BloomAllocation::Monkey
        } else {
            BloomAllocation::Uniform
        },
        ..Options::default()
    };
    let model = CostModel::for_options(&opts, levels);
    let params = LerpParams {
        propagation: if monkey {
            Propagation::Monkey
        } else {
            Propagation::Uniform
        },
        ..Default::default()
    };
    let mut lerp = Lerp::new(params, levels + 1);
    let t = std::time::Instant::now();
    let mut ks = lerp.pretrain(&model, pretrain)?;
    println!(
        "pretrained {pretrain} missions in {:.2} s, K = {ks:?}",
        t.elapsed().as_secs_f64()
    );
    let mut rng = SplitMix64(99);
    let mut prev = 0.9;
    let mut mission = 0;
    println!("| session | lookups | K after | converged at mission | optimum K | cost / optimum |");
    println!("|---|---|---|---|---|---|");
    for (name, gamma) in [
        ("read-heavy", 0.9),
        ("balanced", 0.5),
        ("write-heavy", 0.1),
        ("write-inclined", 0.3),
        ("read-inclined", 0.7),
    ] {
        let mut history = Vec::new();
        let t = std::time::Instant::now();
        for _ in 0..per_session {
            mission += 1;
            let m = model.mission(mission, 50_000, gamma, prev, &ks, &mut rng);
            prev = gamma;
            for (level, k) in lerp.decide(&m)? {
                ks[level - 1] = k;
            }
            history.push(ks.clone());
            if std::env::var("LERP_TRACE").is_ok() {
                print!("{} ", ks[0]);
            }
        }
        let train_ms = t.elapsed().as_secs_f64() * 1e3 / per_session as f64;
        let last = history.last().cloned().unwrap_or_default();
        let settled = history
            .iter()
            .rposition(|k| k != &last)
            .map_or(0, |i| i + 1);
        let opt: Vec<usize> = (1..=levels).map(|l| model.optimum(l, gamma)).collect();
        println!(
            "| {name} | {:.0}% | {last:?} | {settled} | {opt:?} | {:.3} | ({train_ms:.2} ms/mission)",
            gamma * 100.0,
            model.cost(&last, gamma) / model.cost(&opt, gamma),
        );
    }
    Ok(())
}
