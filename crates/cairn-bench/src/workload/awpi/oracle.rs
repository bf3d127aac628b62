//! The Bayes oracle of the lifecycle generator: each record's true probability of a read
//! within a horizon, given the hidden states (type, stage, time in the stage, how it
//! ended) at a time, by simulating the chains onward from those states many times. No
//! placement can rank better on average; one that does worse than LRU here says the model,
//! not the workload, is short.
//!
//! A read is what the query store counts as one: a point read of the record, or a scan
//! that covers it. Scans start at a read record and run `SCAN_LEN` records on in key order
//! (record order), so a record's neighbours' reads make it read too. Records' chains are
//! independent given their states, so the two combine by multiplying the chances of no
//! read: a busy record's successors are warmer than their own chains say.

use super::lifecycle::{rngs, Access, Sim};
use super::{lifecycle, AwpiStream, SCAN_LEN};
use anyhow::{bail, Result};

/// Simulated futures per record.
pub const FUTURES: u64 = 256;

/// One record's simulated futures over the horizon: its point reads in each.
struct Futures {
    reads: Vec<u32>,
}

impl Futures {
    /// Probability of at least one point read.
    fn p_read(&self) -> f64 {
        let hit = self.reads.iter().filter(|&&n| n > 0).count();
        hit as f64 / self.reads.len().max(1) as f64
    }

    /// Probability that none of its scans (each read starts one with probability
    /// `per_read`) covers a record `d` places after it.
    fn p_no_cover(&self, per_read: f64, d: u64) -> f64 {
        let (lo, hi) = SCAN_LEN;
        let longer = (hi + 1).saturating_sub((d + 1).max(lo)) as f64 / (hi - lo + 1) as f64;
        let miss = 1.0 - per_read * longer;
        let sum: f64 = self.reads.iter().map(|&n| miss.powi(n as i32)).sum();
        sum / self.reads.len().max(1) as f64
    }
}

/// For each record inserted before `at_ms`, the probability of a read (a point read, or a
/// scan of a record before it reaching it) in (at_ms, at_ms + horizon_ms].
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
    let futures: Vec<Futures> = (0..n)
        .map(|rec| {
            let Some(state) = paths.state_at(rec, at) else {
                return Futures { reads: vec![0] };
            };
            let ty = &p.types[paths.types[rec] as usize];
            let sim = Sim {
                p: &p,
                ty,
                read_scale: lifecycle::Scales {
                    other: s.stats.read_scale,
                    steady: s.stats.steady_read_scale,
                }
                .of(ty),
                ablate,
            };
            let reads = (0..FUTURES)
                .map(|k| {
                    let mut r = rngs(s.spec.seed ^ 0x0AC1E, (rec as u64) * FUTURES + k);
                    let mut reads = 0u32;
                    let mut emit = |_t: f64, a: Access| {
                        reads += (a == Access::Read) as u32;
                        true
                    };
                    sim.run(state, (at, until), &mut r, &mut emit, None);
                    reads
                })
                .collect();
            Futures { reads }
        })
        .collect();
    let reach = SCAN_LEN.1 - 1;
    Ok((0..n)
        .map(|rec| {
            let own_miss = 1.0 - futures[rec].p_read();
            let scans_miss: f64 = (1..=reach.min(rec as u64))
                .map(|d| futures[rec - d as usize].p_no_cover(p.scan_share, d))
                .product();
            1.0 - own_miss * scans_miss
        })
        .collect())
}
