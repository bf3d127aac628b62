//! AWPI workloads for SA-LSM's experiments (archival write, point read intensive, §2.2.1):
//! six synthetic profiles *shaped like* the paper's Table 2 (its read/write ratios and
//! censored shares); the paper's traces are not public, and nothing here is derived from
//! them beyond those two columns.
//!
//! Records are inserted day by day (keys in insert order, as auto-increment order ids are)
//! on a simulated clock. Each record draws a lifetime class: its popularity decays after
//! its insert, exponentially with a heterogeneous, long-tailed lifetime (many records are
//! touched for about a day, some for weeks), a few stay hot (a constant rate), and some come
//! back once after a dormant stretch (a dispute, a return). So a record's access history
//! says something about its next access, and a survival model has something to learn.
//! Accesses are point reads and updates; a small share of short scans start at an accessed
//! record (under 5% of the ops, so the workload stays AWPI).
//!
//! The stream covers `trace_days` (the query store's observation window, 20 by default)
//! and then `replay_days` (3) that are replayed and measured after the placement. The
//! generator also reports what the experiments need from the ground truth: the records
//! not accessed in the replay days (the default cold budget), the censored share of the
//! paper's labels on the trace window (tau-events, tau = 1 day, 10 pivots), the realised
//! read/write ratio and popularity decay.

use crate::rng::Rng;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Milliseconds in a simulated day (the query store's `day_ms`).
pub const DAY_MS: u64 = 86_400_000;
/// Pivots per record and tau of the paper's labels (§4.1, Def. 2.1).
pub const PIVOTS: usize = 10;
pub const TAU_MS: u64 = DAY_MS;

/// A kind of record life: `weight` of the records; popularity `rate_per_day` accesses a
/// day at the insert, decaying as exp(-age / life) (median `life_days`, lognormal spread);
/// `life_days` infinite: the rate stays (a record that stays hot). Consecutive accesses
/// are at least `gap_days` apart (0: bursts; 1 or more: accesses that never make a
/// tau-event, as a record touched once per settlement cycle).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LifeClass {
    pub weight: f64,
    pub life_days: f64,
    pub rate_per_day: f64,
    pub gap_days: f64,
}

/// One AWPI profile (shaped like a row of Table 2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AwpiProfile {
    pub name: &'static str,
    /// Table 2's read/write ratio, which the stream matches (reads: point reads and scans;
    /// writes: inserts and updates).
    pub table2_rw: f64,
    /// Table 2's censored share (for the report; the classes are tuned to land near it).
    pub table2_censored: f64,
    /// Records inserted over the trace and replay days at scale 1.
    pub records: u64,
    pub classes: &'static [LifeClass],
    /// Probability that a record comes back once, 2-12 days after its insert, with a short
    /// burst of accesses.
    pub revival: f64,
    /// Scans per access (each a short range starting at the accessed record).
    pub scan_share: f64,
}

const fn c(weight: f64, life_days: f64, rate_per_day: f64, gap_days: f64) -> LifeClass {
    LifeClass {
        weight,
        life_days,
        rate_per_day,
        gap_days,
    }
}

const INF: f64 = f64::INFINITY;

pub const AUCTION: AwpiProfile = AwpiProfile {
    name: "auction",
    table2_rw: 3.7,
    table2_censored: 0.552,
    records: 50_000,
    classes: &[
        c(0.30, 0.25, 4.0, 0.0),
        c(0.25, 1.5, 2.0, 0.0),
        c(0.30, 6.0, 0.6, 1.05),
        c(0.10, 15.0, 1.0, 1.0),
        c(0.05, INF, 3.0, 0.0),
    ],
    revival: 0.06,
    scan_share: 0.02,
};

pub const DISPUTE: AwpiProfile = AwpiProfile {
    name: "dispute",
    table2_rw: 42.5,
    table2_censored: 0.716,
    records: 12_000,
    classes: &[
        c(0.30, 0.2, 5.0, 0.0),
        c(0.65, 6.0, 0.6, 1.05),
        c(0.05, 8.0, 150.0, 0.0),
    ],
    revival: 0.05,
    scan_share: 0.02,
};

pub const FUNDS: AwpiProfile = AwpiProfile {
    name: "funds",
    table2_rw: 1.9,
    table2_censored: 0.918,
    records: 100_000,
    classes: &[
        c(0.40, 0.2, 1.5, 0.0),
        c(0.37, 4.0, 1.2, 1.05),
        c(0.20, 12.0, 1.1, 1.0),
        c(0.03, 1.0, 3.0, 0.0),
    ],
    revival: 0.02,
    scan_share: 0.02,
};

pub const LOGISTICS: AwpiProfile = AwpiProfile {
    name: "logistics",
    table2_rw: 16.8,
    table2_censored: 0.678,
    records: 30_000,
    classes: &[
        c(0.30, 0.3, 3.0, 0.0),
        c(0.62, 6.0, 0.7, 1.05),
        c(0.08, 8.0, 35.0, 0.0),
    ],
    revival: 0.05,
    scan_share: 0.02,
};

pub const ORDER: AwpiProfile = AwpiProfile {
    name: "order",
    table2_rw: 3.6,
    table2_censored: 0.819,
    records: 60_000,
    classes: &[
        c(0.45, 0.2, 0.8, 0.0),
        c(0.48, 5.0, 0.9, 1.05),
        c(0.03, 1.0, 3.0, 0.0),
        c(0.04, 8.0, 12.0, 0.0),
    ],
    revival: 0.03,
    scan_share: 0.02,
};

pub const PAY: AwpiProfile = AwpiProfile {
    name: "pay",
    table2_rw: 13.8,
    table2_censored: 0.450,
    records: 30_000,
    classes: &[
        c(0.45, 0.4, 4.0, 0.0),
        c(0.42, 6.0, 0.6, 1.05),
        c(0.13, 6.0, 25.0, 0.0),
    ],
    revival: 0.06,
    scan_share: 0.02,
};

pub const PROFILES: [AwpiProfile; 6] = [AUCTION, DISPUTE, FUNDS, LOGISTICS, ORDER, PAY];

/// Everything that defines an AWPI stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AwpiSpec {
    pub profile: String,
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
/// `len` is the value length of a write or the entries of a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AwpiOp {
    pub t_ms: u64,
    pub rec: u32,
    pub kind: AwpiKind,
    pub len: u16,
}

/// The ground truth and shape of a generated stream (the run JSON's `awpi` section).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AwpiStats {
    pub profile: String,
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
    /// The paper's labels on the trace window (tau = 1 day, 10 pivots per record, Alg. 1's
    /// intervals after each access, the last one open to the window's end): the expected
    /// share of censored samples; Table 2's figure beside it.
    pub censored_share: f64,
    pub table2_censored: f64,
    /// Of the trace's records, the share not accessed (point access or inside a scan) in
    /// the replay days: the default cold budget B.
    pub true_cold_share: f64,
    /// Of the trace's records, the share accessed in the replay days.
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
    /// Per record of the trace (index < trace_records): accessed in the replay days.
    pub replay_accessed: Vec<bool>,
    /// Per record of the trace: its last write (insert or update) before the trace's end.
    pub last_write_ms: Vec<u64>,
    pub stats: AwpiStats,
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
    generate_with(spec, &spec.profile()?)
}

/// [`generate`] with explicit profile parameters (tuning).
pub fn generate_with(spec: &AwpiSpec, p: &AwpiProfile) -> Result<AwpiStream> {
    let p = *p;
    if spec.records == 0 || spec.records > u32::MAX as u64 {
        bail!("AWPI records must be in 1..2^32, got {}", spec.records);
    }
    if spec.trace_days == 0 || spec.replay_days == 0 {
        bail!("AWPI needs at least one trace day and one replay day");
    }
    if spec.value_min == 0 || spec.value_min > spec.value_max || spec.value_max > u16::MAX as usize
    {
        bail!(
            "AWPI value sizes must satisfy 1 <= min <= max <= 65535, got {}..{}",
            spec.value_min,
            spec.value_max
        );
    }
    let n = spec.records;
    let end = spec.end_ms();
    let trace_end = spec.trace_end_ms();
    let day = DAY_MS as f64;
    let total_w: f64 = p.classes.iter().map(|c| c.weight).sum();
    let mut rng = Rng::derive(spec.seed, 0xA3F1);
    // (time, record, is_insert); kinds of the other accesses are drawn afterwards.
    let mut ev: Vec<(u64, u32, bool)> = Vec::with_capacity(n as usize * 8);
    let mut insert_ms = Vec::with_capacity(n as usize);
    for i in 0..n {
        // Inserts spread evenly over the days, in key order.
        let t0 = (((i as f64 + rng.next_f64()) / n as f64) * end as f64) as u64;
        let t0 = t0.clamp(1, end - 1);
        insert_ms.push(t0);
        ev.push((t0, i as u32, true));
        let mut x = rng.next_f64() * total_w;
        let class = p
            .classes
            .iter()
            .find(|c| {
                x -= c.weight;
                x < 0.0
            })
            .unwrap_or(&p.classes[p.classes.len() - 1]);
        let rate = class.rate_per_day * (0.5 * rng.normal()).exp();
        // An inhomogeneous Poisson process of rate `rate * exp(-age / life)` by time change
        // (unit-exponential steps of the cumulative intensity, `rate * life` in all), each
        // access then pushed `gap_days` after the previous one.
        let life = class.life_days * (0.6 * rng.normal()).exp();
        let total = rate * life;
        let (mut lambda, mut shift, mut prev) = (0.0, 0.0, 0.0f64);
        loop {
            lambda += exp(&mut rng, 1.0);
            let age = if life.is_finite() {
                if lambda >= total {
                    break;
                }
                -life * (1.0 - lambda / total).ln()
            } else {
                lambda / rate
            };
            shift += class.gap_days;
            let age = (age + shift).max(prev);
            prev = age;
            let t = t0 as f64 + age * day;
            if t >= end as f64 {
                break;
            }
            ev.push((t as u64, i as u32, false));
        }
        if rng.next_f64() < p.revival {
            let back = t0 as f64 + (2.0 + 10.0 * rng.next_f64()) * day;
            for _ in 0..1 + poisson(&mut rng, 2.0) {
                let t = back + exp(&mut rng, 0.2) * day;
                if t < end as f64 {
                    ev.push((t as u64, i as u32, false));
                }
            }
        }
    }
    // Inserts first among equal times, so no access precedes its record.
    ev.sort_unstable_by_key(|&(t, r, ins)| (t, r, !ins));
    let accesses = ev.iter().filter(|e| !e.2).count() as f64;
    let scans = accesses * p.scan_share;
    // The update share that makes reads / writes the profile's ratio in expectation.
    let r = p.table2_rw;
    let u = ((accesses + scans - r * n as f64) / (accesses * (r + 1.0))).clamp(0.0, 0.9);
    let mut krng = Rng::derive(spec.seed, 0xA3F2);
    let mut ops = Vec::with_capacity(ev.len() + scans as usize + 16);
    for (t, rec, ins) in ev {
        let vlen =
            |rng: &mut Rng| rng.range_inclusive(spec.value_min as u64, spec.value_max as u64);
        if ins {
            let len = vlen(&mut krng) as u16;
            ops.push(AwpiOp {
                t_ms: t,
                rec,
                kind: AwpiKind::Insert,
                len,
            });
            continue;
        }
        let (kind, len) = if krng.next_f64() < u {
            (AwpiKind::Update, vlen(&mut krng) as u16)
        } else {
            (AwpiKind::Read, 0)
        };
        ops.push(AwpiOp {
            t_ms: t,
            rec,
            kind,
            len,
        });
        if krng.next_f64() < p.scan_share {
            ops.push(AwpiOp {
                t_ms: t,
                rec,
                kind: AwpiKind::Scan,
                len: krng.range_inclusive(2, 10) as u16,
            });
        }
    }
    let replay_start = ops.partition_point(|o| o.t_ms < trace_end);
    let trace_records = insert_ms.partition_point(|&t| t < trace_end) as u64;
    let mut s = stats(spec, &p, &ops, replay_start, trace_records, &insert_ms);
    let (replay_accessed, last_write_ms) = truth(&ops, replay_start, trace_records, &insert_ms);
    let hot = replay_accessed.iter().filter(|&&h| h).count() as f64;
    let tr = trace_records.max(1) as f64;
    s.replay_hot_share = hot / tr;
    s.true_cold_share = 1.0 - hot / tr;
    Ok(AwpiStream {
        spec: spec.clone(),
        ops,
        replay_start,
        replay_accessed,
        last_write_ms,
        stats: s,
    })
}

/// Records of the trace touched in the replay days (point accesses and the records a scan
/// covers), and each trace record's last write before the trace's end.
fn truth(
    ops: &[AwpiOp],
    replay_start: usize,
    trace_records: u64,
    insert_ms: &[u64],
) -> (Vec<bool>, Vec<u64>) {
    let n = trace_records as usize;
    let mut hot = vec![false; n];
    for o in &ops[replay_start..] {
        let r = o.rec as usize;
        let last = match o.kind {
            // A scan reads the `len` records from its start that exist by then.
            AwpiKind::Scan => {
                let exist = insert_ms.partition_point(|&t| t <= o.t_ms);
                (r + o.len as usize).min(exist)
            }
            AwpiKind::Insert => continue,
            _ => r + 1,
        };
        for h in hot.iter_mut().take(last.min(n)).skip(r) {
            *h = true;
        }
    }
    let mut last_write = insert_ms[..n].to_vec();
    for o in &ops[..replay_start] {
        if o.kind == AwpiKind::Update {
            last_write[o.rec as usize] = o.t_ms;
        }
    }
    (hot, last_write)
}

fn stats(
    spec: &AwpiSpec,
    p: &AwpiProfile,
    ops: &[AwpiOp],
    replay_start: usize,
    trace_records: u64,
    insert_ms: &[u64],
) -> AwpiStats {
    let count = |k: AwpiKind| ops.iter().filter(|o| o.kind == k).count() as u64;
    let (reads, scans, inserts, updates) = (
        count(AwpiKind::Read),
        count(AwpiKind::Scan),
        count(AwpiKind::Insert),
        count(AwpiKind::Update),
    );
    let writes = inserts + updates;
    let trace_end = spec.trace_end_ms();
    // Per record: its access times (insert, reads, updates; scans are not traced per
    // record by the query store either).
    let n = spec.records as usize;
    let mut times: Vec<Vec<u64>> = vec![Vec::new(); n];
    for o in ops.iter().filter(|o| o.kind != AwpiKind::Scan) {
        times[o.rec as usize].push(o.t_ms);
    }
    // Censored share of the labels on the trace window, in expectation over the pivots:
    // a record with k accesses in the window has k candidate intervals (after each access,
    // the last open to the window's end); min(10, k) are drawn without replacement, so each
    // is drawn with probability min(10, k) / k, and a pivot in interval j is censored when
    // no later access (index > j, by the window's end) follows its previous one within tau.
    let (mut cens, mut samples) = (0.0, 0.0);
    for t in times.iter().take(trace_records as usize) {
        let w: Vec<u64> = t.iter().copied().filter(|&x| x <= trace_end).collect();
        let k = w.len();
        if k == 0 {
            continue;
        }
        // Intervals with zero length cannot hold a pivot (two accesses in one ms).
        let mut valid = Vec::with_capacity(k);
        for j in 0..k {
            let hi = if j + 1 < k { w[j + 1] } else { trace_end };
            valid.push(hi > w[j]);
        }
        let kv = valid.iter().filter(|&&v| v).count();
        if kv == 0 {
            continue;
        }
        let drawn = PIVOTS.min(kv) as f64;
        // short_after[j]: some access with index > j is a tau-event.
        let mut any_short_later = false;
        let mut c = 0usize;
        for j in (0..k).rev() {
            if valid[j] && !any_short_later {
                c += 1;
            }
            if j >= 1 && w[j] - w[j - 1] < TAU_MS {
                any_short_later = true;
            }
        }
        cens += drawn * c as f64 / kv as f64;
        samples += drawn;
    }
    // Lifetimes (last access - insert) of records inserted in the first half of the trace.
    let half = trace_end / 2;
    let early: Vec<&Vec<u64>> = times
        .iter()
        .zip(insert_ms)
        .filter(|(_, &i)| i < half)
        .map(|(t, _)| t)
        .collect();
    let life = |d: f64| {
        early
            .iter()
            .filter(|t| {
                let (a, b) = (t[0], *t.last().expect("the insert"));
                ((b - a) as f64) <= d * DAY_MS as f64
            })
            .count() as f64
            / early.len().max(1) as f64
    };
    let (l1, l7) = (life(1.0), life(7.0));
    let mut per_day = [0u64; 15];
    for t in &early {
        for &x in t.iter().skip(1) {
            let d = ((x - t[0]) / DAY_MS) as usize;
            if d < per_day.len() {
                per_day[d] += 1;
            }
        }
    }
    let d0 = per_day[0].max(1) as f64;
    let mut value = vec![0u16; trace_records as usize];
    for o in &ops[..replay_start] {
        if o.kind.writes() {
            value[o.rec as usize] = o.len;
        }
    }
    let live_bytes = value
        .iter()
        .map(|&v| (spec.key_size + v as usize) as u64)
        .sum();
    AwpiStats {
        profile: p.name.to_string(),
        records: spec.records,
        trace_records,
        trace_ops: replay_start as u64,
        replay_ops: (ops.len() - replay_start) as u64,
        reads,
        scans,
        writes,
        inserts,
        updates,
        rw_ratio: (reads + scans) as f64 / writes.max(1) as f64,
        table2_rw: p.table2_rw,
        point_share: (reads + writes) as f64 / ops.len().max(1) as f64,
        censored_share: if samples > 0.0 { cens / samples } else { 0.0 },
        table2_censored: p.table2_censored,
        true_cold_share: 0.0,
        replay_hot_share: 0.0,
        lifetime_1d: l1,
        lifetime_7d: l7 - l1,
        lifetime_longer: 1.0 - l7,
        decay: per_day.iter().map(|&x| x as f64 / d0).collect(),
        live_bytes,
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
mod tests {
    use super::*;

    fn spec(profile: &str, records: u64, seed: u64) -> AwpiSpec {
        AwpiSpec {
            profile: profile.into(),
            records,
            trace_days: 20,
            replay_days: 3,
            seed,
            key_size: 16,
            value_min: 200,
            value_max: 500,
        }
    }

    #[test]
    fn same_seed_same_stream() {
        let a = generate(&spec("order", 3000, 7)).unwrap();
        let b = generate(&spec("order", 3000, 7)).unwrap();
        assert_eq!(a.ops, b.ops);
        assert_eq!(a.stats, b.stats);
        let c = generate(&spec("order", 3000, 8)).unwrap();
        assert_ne!(a.ops, c.ops);
        assert!(generate(&spec("nope", 10, 1)).is_err());
    }

    #[test]
    fn ops_are_ordered_awpi_and_inserts_come_first() {
        let s = generate(&spec("logistics", 4000, 1)).unwrap();
        assert!(s.ops.windows(2).all(|w| w[0].t_ms <= w[1].t_ms));
        let mut seen = vec![false; 4000];
        for o in &s.ops {
            if o.kind == AwpiKind::Insert {
                assert!(!seen[o.rec as usize]);
                seen[o.rec as usize] = true;
            } else {
                assert!(seen[o.rec as usize], "access before insert");
            }
        }
        assert!(seen.iter().all(|&x| x));
        // Keys are inserted in key order.
        let ins: Vec<u32> = s
            .ops
            .iter()
            .filter(|o| o.kind == AwpiKind::Insert)
            .map(|o| o.rec)
            .collect();
        assert!(ins.windows(2).all(|w| w[0] < w[1]));
        assert!(s.stats.point_share > 0.95, "{}", s.stats.point_share);
        assert!(s.stats.scans > 0);
        assert!(s.replay().iter().all(|o| o.t_ms >= s.spec.trace_end_ms()));
        assert!(s.trace().iter().all(|o| o.t_ms < s.spec.trace_end_ms()));
    }

    #[test]
    fn read_write_ratio_is_near_the_profile() {
        for p in PROFILES {
            let s = generate(&spec(p.name, 6000, 3)).unwrap();
            let r = s.stats.rw_ratio;
            assert!(
                (r / p.table2_rw - 1.0).abs() < 0.12,
                "{}: r/w {r} vs {}",
                p.name,
                p.table2_rw
            );
        }
    }

    #[test]
    fn popularity_decays_after_insert() {
        for p in PROFILES {
            let s = generate(&spec(p.name, 6000, 5)).unwrap();
            let d = &s.stats.decay;
            assert_eq!(d[0], 1.0);
            // After the first days (where spaced-out records get their first access), the
            // population's accesses fall day by day.
            let peak = d[..3].iter().copied().fold(0.0, f64::max);
            assert!(
                d[7] < 0.8 * peak && d[14] < 0.6 * peak && d[14] < d[7],
                "{}: {d:?}",
                p.name
            );
            // Long-tailed lifetimes: many records live about a day, some much longer.
            assert!(s.stats.lifetime_1d > 0.25, "{}: {:?}", p.name, s.stats);
            assert!(s.stats.lifetime_longer > 0.05, "{}: {:?}", p.name, s.stats);
        }
    }

    #[test]
    fn truth_and_age_rule() {
        let s = generate(&spec("order", 5000, 9)).unwrap();
        let b = s.stats.true_cold_share;
        assert!(b > 0.3 && b < 0.98, "{b}");
        let age = s.age_for_share(b).unwrap();
        let end = s.spec.trace_end_ms();
        let cold = s.last_write_ms.iter().filter(|&&t| t + age <= end).count() as f64
            / s.last_write_ms.len() as f64;
        assert!((cold - b).abs() < 0.01, "{cold} vs {b}");
        assert!(s.age_for_share(0.0).is_none());
    }

    /// `cargo test -p cairn-bench --release --lib awpi -- --ignored --nocapture`: every
    /// profile's shape against Table 2 (for tuning the classes).
    #[test]
    #[ignore]
    fn print_profiles() {
        let only = std::env::var("AWPI_PROFILE").ok();
        // AWPI_CLASSES="w,life,rate;w,life,rate;..." (life inf: stays hot), AWPI_REVIVAL=p
        let classes: Option<Vec<LifeClass>> = std::env::var("AWPI_CLASSES").ok().map(|v| {
            v.split(';')
                .map(|c| {
                    let f: Vec<f64> = c.split(',').map(|x| x.trim().parse().unwrap()).collect();
                    LifeClass {
                        weight: f[0],
                        life_days: f[1],
                        rate_per_day: f[2],
                        gap_days: f.get(3).copied().unwrap_or(0.0),
                    }
                })
                .collect()
        });
        let leaked: Option<&'static [LifeClass]> =
            classes.map(|c| &*Box::leak(c.into_boxed_slice()));
        for mut p in PROFILES {
            if only.as_deref().is_some_and(|o| o != p.name) {
                continue;
            }
            if let Some(c) = leaked {
                p.classes = c;
            }
            if let Ok(r) = std::env::var("AWPI_REVIVAL") {
                p.revival = r.parse().unwrap();
            }
            let t = std::time::Instant::now();
            let s = generate_with(&spec(p.name, p.records, 42), &p).unwrap();
            let st = &s.stats;
            println!(
                "{:10} ops {:>8} (replay {:>7}) r/w {:5.1} ({:4.1}) censored {:.3} ({:.3}) cold {:.3} life 1d/7d/more {:.2}/{:.2}/{:.2} decay {:?} MB {:.1} gen {:.1}s",
                p.name,
                s.ops.len(),
                st.replay_ops,
                st.rw_ratio,
                p.table2_rw,
                st.censored_share,
                p.table2_censored,
                st.true_cold_share,
                st.lifetime_1d,
                st.lifetime_7d,
                st.lifetime_longer,
                st.decay.iter().step_by(2).map(|d| (d * 100.0).round() / 100.0).collect::<Vec<_>>(),
                st.live_bytes as f64 / 1e6,
                t.elapsed().as_secs_f64()
            );
        }
    }
}
