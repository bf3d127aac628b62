//! AWPI workloads for SA-LSM's experiments (archival write, point read intensive, §2.2.1):
//! six synthetic profiles *shaped like* the paper's Table 2 (its read/write ratios and
//! censored shares) and, for logistics and order, Fig. 13's fall in censoring as the
//! labelling window grows; the paper's traces are not public, and nothing here is derived
//! from them beyond those published shapes.
//!
//! Two generators share the profiles' names: [`lifecycle`] (the default: records that move
//! through the stages of a business object's life, with predictable late activity) and
//! [`decay`] (the control: popularity that decays after the insert). [`oracle`] gives the
//! lifecycle's Bayes-optimal probability of a read within a horizon.
//!
//! The stream covers `trace_days` (the query store's observation window: 20 feature days
//! and a 30-day horizon by default) and then `replay_days` (3) that are replayed and
//! measured after the placement. The generator also reports what the experiments need from
//! the ground truth: the records not read in the replay days, the censored share of the
//! paper's labels (tau-events over reads, tau = 1 day, 10 pivots), the realised read/write
//! ratio, popularity decay and lifetimes.

pub mod decay;
pub mod lifecycle;
pub mod oracle;
mod stats;

pub use decay::{AwpiProfile, LifeClass, AUCTION, DISPUTE, FUNDS, LOGISTICS, ORDER, PAY, PROFILES};

use crate::rng::Rng;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Milliseconds in a simulated day (the query store's `day_ms`).
pub const DAY_MS: u64 = 86_400_000;
/// Pivots per record and tau of the paper's labels (§4.1, Def. 2.1).
pub const PIVOTS: usize = 10;
pub const TAU_MS: u64 = DAY_MS;

/// The published shapes a profile is fitted to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Targets {
    pub name: &'static str,
    /// Table 2's read/write ratio (reads: point reads and scans; writes: inserts, updates).
    pub table2_rw: f64,
    /// Table 2's censored share.
    pub table2_censored: f64,
}

impl Targets {
    pub const fn of(name: &'static str, table2_rw: f64, table2_censored: f64) -> Targets {
        Targets {
            name,
            table2_rw,
            table2_censored,
        }
    }
}

fn lifecycle_default() -> String {
    "decay".into() // what a run JSON written before the lifecycle generator meant
}

/// Everything that defines an AWPI stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AwpiSpec {
    pub profile: String,
    /// `lifecycle` or `decay`.
    #[serde(default = "lifecycle_default")]
    pub generator: String,
    /// Lifecycle ingredients switched off (comma-separated, see `lifecycle::Ablation`).
    #[serde(default)]
    pub ablate: String,
    /// Records inserted over trace + replay days.
    pub records: u64,
    pub trace_days: u32,
    pub replay_days: u32,
    pub seed: u64,
    pub key_size: usize,
    /// Value lengths, uniform in [min, max] (each insert and update draws one).
    pub value_min: usize,
    pub value_max: usize,
}

impl AwpiSpec {
    pub fn validate(&self) -> Result<()> {
        if self.records == 0 || self.records > u32::MAX as u64 {
            bail!("AWPI records must be in 1..2^32, got {}", self.records);
        }
        if self.trace_days == 0 || self.replay_days == 0 {
            bail!("AWPI needs at least one trace day and one replay day");
        }
        if self.value_min == 0
            || self.value_min > self.value_max
            || self.value_max > u16::MAX as usize
        {
            bail!(
                "AWPI value sizes must satisfy 1 <= min <= max <= 65535, got {}..{}",
                self.value_min,
                self.value_max
            );
        }
        Ok(())
    }
    /// The control generator's profile.
    pub fn profile(&self) -> Result<AwpiProfile> {
        match PROFILES.iter().find(|p| p.name == self.profile) {
            Some(p) => Ok(*p),
            None => bail!("no AWPI profile `{}`", self.profile),
        }
    }
    pub fn days(&self) -> u32 {
        self.trace_days + self.replay_days
    }
    /// When the trace window ends (the placement happens here), in ms on the clock.
    pub fn trace_end_ms(&self) -> u64 {
        self.trace_days as u64 * DAY_MS
    }
    pub fn end_ms(&self) -> u64 {
        self.days() as u64 * DAY_MS
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AwpiKind {
    Insert,
    Update,
    Read,
    /// A short range read starting at the record (`len` entries).
    Scan,
}

impl AwpiKind {
    pub fn name(self) -> &'static str {
        match self {
            AwpiKind::Insert => "insert",
            AwpiKind::Update => "update",
            AwpiKind::Read => "read",
            AwpiKind::Scan => "scan",
        }
    }
    pub fn writes(self) -> bool {
        matches!(self, AwpiKind::Insert | AwpiKind::Update)
    }
}

/// One op of the stream: at `t_ms` on the simulated clock, on record `rec` (the key index);
/// `len` is the value length of a write or the entries of a scan; `col` the column an
/// update writes (the lifecycle's stage; 0 otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AwpiOp {
    pub t_ms: u64,
    pub rec: u32,
    pub kind: AwpiKind,
    pub len: u16,
    pub col: u8,
}

/// Records a scan covers, its start included: uniform in this range (both ends).
pub const SCAN_LEN: (u64, u64) = (2, 10);

impl AwpiOp {
    /// A scan of `SCAN_LEN` records from `rec` (both generators follow a read with one at
    /// the profile's scan share); draws its length from `rng`.
    pub fn scan(t_ms: u64, rec: u32, rng: &mut crate::rng::Rng) -> AwpiOp {
        AwpiOp {
            t_ms,
            rec,
            kind: AwpiKind::Scan,
            len: rng.range_inclusive(SCAN_LEN.0, SCAN_LEN.1) as u16,
            col: 0,
        }
    }
}

/// The ground truth and shape of a generated stream (the run JSON's `awpi` section).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AwpiStats {
    pub profile: String,
    #[serde(default)]
    pub generator: String,
    /// Lifecycle: the factor on every read intensity that met Table 2's ratio.
    #[serde(default)]
    pub read_scale: f64,
    /// Lifecycle: the same for the steady types, which absorb the ratio's extra reads.
    #[serde(default)]
    pub steady_read_scale: f64,
    pub records: u64,
    /// Records inserted by the end of the trace window (those the placement decides on).
    pub trace_records: u64,
    pub trace_ops: u64,
    pub replay_ops: u64,
    pub reads: u64,
    pub scans: u64,
    pub writes: u64,
    pub inserts: u64,
    pub updates: u64,
    /// Reads (point reads and scans) per write, whole stream; Table 2's figure beside it.
    pub rw_ratio: f64,
    pub table2_rw: f64,
    /// Point reads and writes among all ops (AWPI: above 90%).
    pub point_share: f64,
    /// The paper's labels on the trace window (tau-events over reads, tau = 1 day, 10
    /// pivots per record, Alg. 1's intervals after each access, the last one open to the
    /// window's end): the expected share of censored samples; Table 2's figure beside it.
    pub censored_share: f64,
    pub table2_censored: f64,
    /// Fig. 13's setting: pivots in the first 20 days, labels over the next 10 and 65 days
    /// (None when the stream is shorter than 85 days).
    #[serde(default)]
    pub censored_label10: Option<f64>,
    #[serde(default)]
    pub censored_label65: Option<f64>,
    /// Of the trace's records, the share not read (point read or inside a scan) in the
    /// replay days.
    pub true_cold_share: f64,
    /// Of the trace's records, the share read in the replay days.
    pub replay_hot_share: f64,
    /// Share of records (inserted in the first half of the trace) whose last access came
    /// within 1 day of the insert, within 7 days, and later (Fig. 7's long tail).
    pub lifetime_1d: f64,
    pub lifetime_7d: f64,
    pub lifetime_longer: f64,
    /// Accesses per day since insert, normalised by the insert day's (Fig. 6), days 0-14.
    pub decay: Vec<f64>,
    /// Key + value bytes of the trace's records at the trace's end (newest values).
    pub live_bytes: u64,
}

/// A generated stream with its ground truth.
pub struct AwpiStream {
    pub spec: AwpiSpec,
    pub ops: Vec<AwpiOp>,
    /// Index of the first op of the replay days.
    pub replay_start: usize,
    /// Per record of the trace (index < trace_records): read in the replay days (point
    /// reads and scan coverage; a blind update never reads the cold tier).
    pub replay_accessed: Vec<bool>,
    /// Per record of the trace: its last write (insert or update) before the trace's end.
    pub last_write_ms: Vec<u64>,
    pub stats: AwpiStats,
    /// Lifecycle: each record's hidden chain (the oracle's input).
    pub paths: Option<lifecycle::Paths>,
}

fn poisson(rng: &mut Rng, mean: f64) -> u64 {
    if mean <= 0.0 {
        return 0;
    }
    if mean > 30.0 {
        return (mean + mean.sqrt() * rng.normal()).round().max(0.0) as u64;
    }
    let l = (-mean).exp();
    let (mut k, mut p) = (0u64, 1.0);
    loop {
        p *= rng.next_f64();
        if p <= l {
            return k;
        }
        k += 1;
    }
}

fn exp(rng: &mut Rng, mean: f64) -> f64 {
    -(1.0 - rng.next_f64()).ln() * mean
}

/// Generates the stream of `spec` (deterministic in it).
pub fn generate(spec: &AwpiSpec) -> Result<AwpiStream> {
    match spec.generator.as_str() {
        "lifecycle" => {
            let Some(p) = lifecycle::profile_named(&spec.profile) else {
                bail!("no AWPI profile `{}`", spec.profile)
            };
            lifecycle::generate(spec, &p, lifecycle::Ablation::parse(&spec.ablate)?)
        }
        "decay" => {
            if !spec.ablate.is_empty() {
                bail!("--salsm-ablate applies to the lifecycle generator only");
            }
            decay::generate_with(spec, &spec.profile()?)
        }
        g => bail!("no AWPI generator `{g}` (lifecycle, decay)"),
    }
}

/// The stream with its ground truth and statistics, from its ops (time-ordered) and its
/// records' insert times (ascending: keys follow insert order).
fn finish(
    spec: &AwpiSpec,
    t: Targets,
    ops: Vec<AwpiOp>,
    insert_ms: Vec<u64>,
    paths: Option<lifecycle::Paths>,
) -> AwpiStream {
    let trace_end = spec.trace_end_ms();
    let replay_start = ops.partition_point(|o| o.t_ms < trace_end);
    let trace_records = insert_ms.partition_point(|&t| t < trace_end) as u64;
    let mut s = stats::stats(spec, t, &ops, replay_start, trace_records, &insert_ms);
    let (replay_accessed, last_write_ms) =
        stats::truth(&ops, replay_start, trace_records, &insert_ms);
    let hot = replay_accessed.iter().filter(|&&h| h).count() as f64;
    let tr = trace_records.max(1) as f64;
    s.replay_hot_share = hot / tr;
    s.true_cold_share = 1.0 - hot / tr;
    s.generator = spec.generator.clone();
    AwpiStream {
        spec: spec.clone(),
        ops,
        replay_start,
        replay_accessed,
        last_write_ms,
        stats: s,
        paths,
    }
}

impl AwpiStream {
    /// The age threshold of the age rule (RocksDB's time-aware tiering) that makes `share`
    /// of the trace's records cold at the trace's end: a record is cold when its newest
    /// write is at least this old. None when no positive age does it.
    pub fn age_for_share(&self, share: f64) -> Option<u64> {
        let end = self.spec.trace_end_ms();
        let mut ages: Vec<u64> = self
            .last_write_ms
            .iter()
            .map(|&t| end.saturating_sub(t))
            .collect();
        let n = ages.len();
        let k = ((share.clamp(0.0, 1.0) * n as f64).round() as usize).min(n);
        if k == 0 {
            return None;
        }
        ages.sort_unstable_by(|a, b| b.cmp(a));
        // The k oldest have age >= ages[k - 1].
        Some(ages[k - 1].max(1))
    }

    /// Ops of the trace days.
    pub fn trace(&self) -> &[AwpiOp] {
        &self.ops[..self.replay_start]
    }

    /// Ops of the replay days.
    pub fn replay(&self) -> &[AwpiOp] {
        &self.ops[self.replay_start..]
    }
}

#[cfg(test)]
mod tests;
