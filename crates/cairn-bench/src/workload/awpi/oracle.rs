//! The Bayes oracle of the lifecycle generator: each record's true probability of a read
//! within a horizon, given its hidden state (type, stage, time in the stage, how it ended)
//! at a time, by simulating its chain onward from that state many times. No placement can
//! rank better on average; one that does worse than LRU here says the model, not the
//! workload, is short.

use super::lifecycle::{rngs, Access, Sim};
use super::{lifecycle, AwpiStream};
use anyhow::{bail, Result};

/// Simulated futures per record.
pub const FUTURES: u64 = 256;

/// For each record inserted before `at_ms`, the probability of a read (a point read; the
/// scans of neighbours are left out) in (at_ms, at_ms + horizon_ms].
pub fn read_probability(s: &AwpiStream, at_ms: u64, horizon_ms: u64) -> Result<Vec<f64>> {
    let Some(paths) = &s.paths else {
        bail!(
            "the Bayes oracle needs the lifecycle generator (this stream is `{}`)",
            s.spec.generator
        )
    };
    let Some(p) = lifecycle::profile_named(&s.spec.profile) else {
        bail!("no AWPI profile `{}`", s.spec.profile)
    };
    let ablate = lifecycle::Ablation::parse(&s.spec.ablate)?;
    let n = paths.insert_ms.partition_point(|&t| t < at_ms);
    let (at, until) = (at_ms as f64, (at_ms + horizon_ms) as f64);
    let mut out = Vec::with_capacity(n);
    for rec in 0..n {
        let Some(state) = paths.state_at(rec, at) else {
            out.push(0.0);
            continue;
        };
        let sim = Sim {
            p: &p,
            ty: &p.types[paths.types[rec] as usize],
            read_scale: lifecycle::Scales {
                other: s.stats.read_scale,
                steady: s.stats.steady_read_scale,
            }
            .of(&p.types[paths.types[rec] as usize]),
            ablate,
        };
        let mut hits = 0u64;
        for k in 0..FUTURES {
            let mut r = rngs(s.spec.seed ^ 0x0AC1E, (rec as u64) * FUTURES + k);
            let mut hit = false;
            let mut emit = |_t: f64, a: Access| {
                hit |= a == Access::Read;
                !hit
            };
            sim.run(state, (at, until), &mut r, &mut emit, None);
            hits += hit as u64;
        }
        out.push(hits as f64 / FUTURES as f64);
    }
    Ok(out)
}
