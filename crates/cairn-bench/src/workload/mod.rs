//! What to run: workload names, the seeded op stream, key and value shapes.

pub mod awpi;
pub mod dataset;
pub mod key_file;
pub mod leaper;
pub mod mix;
pub mod phases;
pub mod ycsb;
pub mod zipf;

use crate::rng::Rng;
use anyhow::{bail, Context, Result};
use dataset::Dataset;
use mix::{Distribution, KeyChooser, Mix, MovingHot, OpKind};
use phases::Phase;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum WorkloadName {
    /// Load --records keys in key order (the fill is the measured phase).
    #[value(name = "fillseq")]
    #[serde(rename = "fillseq")]
    FillSeq,
    /// Load --records keys in random order (the fill is the measured phase).
    #[value(name = "fillrandom")]
    #[serde(rename = "fillrandom")]
    FillRandom,
    /// Overwrite uniformly random existing keys.
    #[value(name = "overwrite")]
    #[serde(rename = "overwrite")]
    Overwrite,
    /// Point lookups of uniformly random existing keys.
    #[value(name = "readrandom")]
    #[serde(rename = "readrandom")]
    ReadRandom,
    /// Sequential scans of --scan-length entries walking the key space in order.
    #[value(name = "readseq")]
    #[serde(rename = "readseq")]
    ReadSeq,
    /// Seek to a uniformly random key and read --scan-length entries.
    #[value(name = "seekrandom")]
    #[serde(rename = "seekrandom")]
    SeekRandom,
    /// --threads readers of random keys while one background thread overwrites.
    #[value(name = "readwhilewriting")]
    #[serde(rename = "readwhilewriting")]
    ReadWhileWriting,
    /// YCSB A: 50% reads, 50% updates, zipfian.
    #[value(name = "ycsb-a")]
    #[serde(rename = "ycsb-a")]
    YcsbA,
    /// YCSB B: 95% reads, 5% updates, zipfian.
    #[value(name = "ycsb-b")]
    #[serde(rename = "ycsb-b")]
    YcsbB,
    /// YCSB C: 100% reads, zipfian.
    #[value(name = "ycsb-c")]
    #[serde(rename = "ycsb-c")]
    YcsbC,
    /// YCSB D: 95% reads, 5% inserts, latest.
    #[value(name = "ycsb-d")]
    #[serde(rename = "ycsb-d")]
    YcsbD,
    /// YCSB E: 95% scans (length uniform 1..=100), 5% inserts, zipfian.
    #[value(name = "ycsb-e")]
    #[serde(rename = "ycsb-e")]
    YcsbE,
    /// YCSB F: 50% reads, 50% read-modify-writes, zipfian.
    #[value(name = "ycsb-f")]
    #[serde(rename = "ycsb-f")]
    YcsbF,
    /// The mix given by --mix, with --distribution/--zipf.
    #[value(name = "mix")]
    #[serde(rename = "mix")]
    Mix,
    /// The phases given by --phases.
    #[value(name = "phased")]
    #[serde(rename = "phased")]
    Phased,
    /// RusKey sessions: lookup/update 90/10, 50/50, 10/90, 30/70, 70/30, --ops split evenly.
    #[value(name = "ruskey-sessions")]
    #[serde(rename = "ruskey-sessions")]
    RuskeySessions,
    /// AC-Key two phases: scans, then point lookups, --ops split evenly.
    #[value(name = "ac-key-two-phase")]
    #[serde(rename = "ac-key-two-phase")]
    AcKeyTwoPhase,
    /// AC-Key's default mix: point lookups and scans of --scan-length (1:1, --scan-ratio),
    /// hottest --hot-keys of the keys taking --hot-ops of the ops (1% / 99%).
    #[value(name = "ac-key-default")]
    #[serde(rename = "ac-key-default")]
    AcKeyDefault,
    /// Leaper's default synthetic workload (Table 2): 75% point lookups, 20% updates,
    /// 5% inserts, Zipf 0.5 with hot keys clustered (SysBench's zipfian); a warm-up part
    /// (--warmup-ops) runs first, unmeasured.
    #[value(name = "leaper-synthetic")]
    #[serde(rename = "leaper-synthetic")]
    LeaperSynthetic,
    /// Shaped like Leaper's e-commerce workload (Table 2; synthetic keys): 75% point, 10%
    /// range lookups, 10% updates, 5% inserts, Zipf 0.3 clustered; warm-up part first.
    #[value(name = "leaper-ecommerce")]
    #[serde(rename = "leaper-ecommerce")]
    LeaperEcommerce,
    /// Shaped like Leaper's instant-messaging workload (Table 2; synthetic keys): 40% point
    /// lookups, 35% updates, 25% inserts, Zipf 0.9 over recency (newest keys hottest);
    /// warm-up part first.
    #[value(name = "leaper-im")]
    #[serde(rename = "leaper-im")]
    LeaperIm,
    /// Leaper's synthetic mix (75% point, 20% updates, 5% inserts) over hot windows that
    /// move and recur (`moving-hot`: --hot-keys of the keys take --hot-ops of the ops, a
    /// step every --hot-phase-ops); warm-up part first.
    #[value(name = "leaper-moving")]
    #[serde(rename = "leaper-moving")]
    LeaperMoving,
    /// SA-LSM (synthetic, shaped like Table 2's auction: r/w 3.7, 55% censored): records
    /// inserted day by day on a simulated clock, popularity decaying after the insert; 20
    /// trace days, a placement, 3 measured replay days (see `workload::awpi`).
    #[value(name = "awpi-auction")]
    #[serde(rename = "awpi-auction")]
    AwpiAuction,
    /// SA-LSM, shaped like Table 2's dispute (r/w 42.5, 72% censored).
    #[value(name = "awpi-dispute")]
    #[serde(rename = "awpi-dispute")]
    AwpiDispute,
    /// SA-LSM, shaped like Table 2's funds (r/w 1.9, 92% censored).
    #[value(name = "awpi-funds")]
    #[serde(rename = "awpi-funds")]
    AwpiFunds,
    /// SA-LSM, shaped like Table 2's logistics (r/w 16.8, 68% censored).
    #[value(name = "awpi-logistics")]
    #[serde(rename = "awpi-logistics")]
    AwpiLogistics,
    /// SA-LSM, shaped like Table 2's order (r/w 3.6, 82% censored).
    #[value(name = "awpi-order")]
    #[serde(rename = "awpi-order")]
    AwpiOrder,
    /// SA-LSM, shaped like Table 2's pay (r/w 13.8, 45% censored).
    #[value(name = "awpi-pay")]
    #[serde(rename = "awpi-pay")]
    AwpiPay,
}

impl WorkloadName {
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .expect("no skipped variants")
            .get_name()
            .to_string()
    }

    pub fn all() -> &'static [WorkloadName] {
        clap::ValueEnum::value_variants()
    }

    pub fn is_fill(self) -> bool {
        matches!(self, WorkloadName::FillSeq | WorkloadName::FillRandom)
    }

    /// The Leaper workload's shape (Table 2), for `leaper-*`.
    pub fn leaper_shape(self) -> Option<leaper::LeaperShape> {
        match self {
            WorkloadName::LeaperSynthetic => Some(leaper::SYNTHETIC),
            WorkloadName::LeaperEcommerce => Some(leaper::ECOMMERCE),
            WorkloadName::LeaperIm => Some(leaper::IM),
            WorkloadName::LeaperMoving => Some(leaper::MOVING),
            _ => None,
        }
    }

    pub fn is_leaper(self) -> bool {
        self.leaper_shape().is_some()
    }

    /// The AWPI profile (SA-LSM's Table 2 shapes), for `awpi-*`.
    pub fn awpi_profile(self) -> Option<awpi::AwpiProfile> {
        Some(match self {
            WorkloadName::AwpiAuction => awpi::AUCTION,
            WorkloadName::AwpiDispute => awpi::DISPUTE,
            WorkloadName::AwpiFunds => awpi::FUNDS,
            WorkloadName::AwpiLogistics => awpi::LOGISTICS,
            WorkloadName::AwpiOrder => awpi::ORDER,
            WorkloadName::AwpiPay => awpi::PAY,
            _ => return None,
        })
    }

    pub fn is_awpi(self) -> bool {
        self.awpi_profile().is_some()
    }

    /// The zipfian constant used when --zipf is not given.
    pub fn default_theta(self) -> f64 {
        self.leaper_shape()
            .map_or(mix::default_theta(), |s| s.theta)
    }
}

/// How many entries a scan reads.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum ScanLen {
    Fixed(usize),
    /// Uniform in 1..=max.
    Uniform(usize),
}

impl ScanLen {
    fn draw(self, rng: &mut Rng) -> usize {
        match self {
            ScanLen::Fixed(n) => n,
            ScanLen::Uniform(max) => rng.range_inclusive(1, max.max(1) as u64) as usize,
        }
    }
}

/// Value length distribution: `N` or `uniform:MIN:MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum ValueSize {
    Fixed(usize),
    Uniform(usize, usize),
}

impl ValueSize {
    pub fn parse(s: &str) -> Result<ValueSize> {
        if let Some(rest) = s.strip_prefix("uniform:") {
            let (a, b) = rest.split_once(':').context("expected uniform:MIN:MAX")?;
            let (a, b): (usize, usize) = (a.parse()?, b.parse()?);
            if a > b {
                bail!("uniform:MIN:MAX needs MIN <= MAX");
            }
            Ok(ValueSize::Uniform(a, b))
        } else {
            Ok(ValueSize::Fixed(
                s.parse().context("value size is N or uniform:MIN:MAX")?,
            ))
        }
    }

    pub fn max(self) -> usize {
        match self {
            ValueSize::Fixed(n) => n,
            ValueSize::Uniform(_, b) => b,
        }
    }

    pub fn draw(self, rng: &mut Rng) -> usize {
        match self {
            ValueSize::Fixed(n) => n,
            ValueSize::Uniform(a, b) => rng.range_inclusive(a as u64, b as u64) as usize,
        }
    }
}

/// Everything that defines the op stream; serialized to hand it to a child process and
/// into the result JSON so a run can be reproduced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    pub workload: WorkloadName,
    pub records: u64,
    pub ops: u64,
    pub seed: u64,
    pub key_size: usize,
    pub value_size: ValueSize,
    pub dataset: Dataset,
    /// Overrides the workload's own request distribution.
    pub distribution: Option<Distribution>,
    pub zipf_theta: f64,
    pub mix: Option<String>,
    pub phases: Option<String>,
    pub scan_length: usize,
    pub threads: usize,
    /// Hotset distribution: fraction of keys that are hot.
    #[serde(default = "default_hot_keys")]
    pub hot_keys: f64,
    /// Hotset distribution: fraction of ops on the hot keys.
    #[serde(default = "default_hot_ops")]
    pub hot_ops: f64,
    /// moving-hot distribution: draws between two steps of the hot windows.
    #[serde(default = "default_hot_phase_ops")]
    pub hot_phase_ops: u64,
    /// ac-key-default: fraction of ops that are scans (the rest are point lookups).
    #[serde(default = "default_scan_ratio")]
    pub scan_ratio: f64,
    /// After the load, wait for the engine's flushes and compactions to finish.
    #[serde(default)]
    pub settle: bool,
    /// Ops of the stream run before the measured part, unmeasured (Leaper workloads: the
    /// part the learner trains on). The measured part is `ops` after them.
    #[serde(default)]
    pub warmup_ops: u64,
    /// End the warm-up after this many seconds when sooner than `warmup_ops` (the run
    /// reports how many warm-up ops it ran; `compare` pins that count for the engines after
    /// the first so every engine runs the same stream).
    #[serde(default)]
    pub warmup_secs: Option<f64>,
    /// Leaper workloads: share of reads (point + range) among the ops, the rest writes in
    /// the workload's update:insert ratio (Fig. 13b). None: the workload's own.
    #[serde(default)]
    pub read_share: Option<f64>,
    /// Leaper workloads: share of the reads that are range lookups (Fig. 13a).
    #[serde(default)]
    pub range_ratio: Option<f64>,
}

/// AC-Key's default skew: the hottest 1% of keys take 99% of the accesses.
pub fn default_hot_keys() -> f64 {
    0.01
}
pub fn default_hot_ops() -> f64 {
    0.99
}
pub fn default_hot_phase_ops() -> u64 {
    50_000
}
/// AC-Key's default point lookup : scan ratio is 1:1.
pub fn default_scan_ratio() -> f64 {
    0.5
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            workload: WorkloadName::ReadRandom,
            records: 100_000,
            ops: 100_000,
            seed: 42,
            key_size: 16,
            value_size: ValueSize::Fixed(100),
            dataset: Dataset::Sequential,
            distribution: None,
            zipf_theta: mix::default_theta(),
            mix: None,
            phases: None,
            scan_length: 100,
            threads: 1,
            hot_keys: default_hot_keys(),
            hot_ops: default_hot_ops(),
            hot_phase_ops: default_hot_phase_ops(),
            scan_ratio: default_scan_ratio(),
            settle: false,
            warmup_ops: 0,
            warmup_secs: None,
            read_share: None,
            range_ratio: None,
        }
    }
}

/// The resolved stream definition for the measured phase.
#[derive(Clone, Debug)]
pub struct Plan {
    pub phases: Vec<Phase>,
    pub distribution: Distribution,
    pub theta: f64,
    pub scan: ScanLen,
    /// Start of a sequential chooser advances by this much (readseq walks by scan length).
    pub seq_step: u64,
    pub records: u64,
    /// (hot key fraction, hot op fraction) of the hotset distribution.
    pub hot: (f64, f64),
    /// Draws between two steps of the moving-hot windows.
    pub hot_phase_ops: u64,
    /// Ops run before the measured phases (with the first phase's mix), unmeasured.
    pub warmup: u64,
}

impl Plan {
    pub fn build(spec: &WorkloadSpec) -> Result<Plan> {
        use WorkloadName as W;
        let one = |k: OpKind| Mix::new(&[(k, 1.0)]).expect("sums to 1");
        let ops = spec.ops;
        let fixed = ScanLen::Fixed(spec.scan_length.max(1));
        let mut seq_step = 1;
        let (phases, dist, scan) = match spec.workload {
            W::FillSeq | W::FillRandom => {
                // The fill is driven by the runner's load loop, not by the op stream.
                (Vec::new(), Distribution::Sequential, fixed)
            }
            W::Overwrite => (
                vec![Phase {
                    mix: one(OpKind::Update),
                    ops,
                }],
                Distribution::Uniform,
                fixed,
            ),
            W::ReadRandom | W::ReadWhileWriting => (
                vec![Phase {
                    mix: one(OpKind::Read),
                    ops,
                }],
                Distribution::Uniform,
                fixed,
            ),
            W::ReadSeq => {
                seq_step = spec.scan_length.max(1) as u64;
                (
                    vec![Phase {
                        mix: one(OpKind::Scan),
                        ops,
                    }],
                    Distribution::Sequential,
                    fixed,
                )
            }
            W::SeekRandom => (
                vec![Phase {
                    mix: one(OpKind::Scan),
                    ops,
                }],
                Distribution::Uniform,
                fixed,
            ),
            W::YcsbA | W::YcsbB | W::YcsbC | W::YcsbD | W::YcsbE | W::YcsbF => {
                let letter = spec.workload.name().chars().last().expect("ycsb-x");
                let p = ycsb::preset(letter);
                (vec![Phase { mix: p.mix, ops }], p.distribution, p.scan)
            }
            W::Mix => {
                let m = spec.mix.as_deref().context("workload `mix` needs --mix")?;
                (
                    vec![Phase {
                        mix: Mix::parse(m)?,
                        ops,
                    }],
                    Distribution::Zipfian,
                    fixed,
                )
            }
            W::Phased => {
                let p = spec
                    .phases
                    .as_deref()
                    .context("workload `phased` needs --phases")?;
                (phases::parse(p)?, Distribution::Zipfian, fixed)
            }
            W::RuskeySessions => (phases::ruskey_sessions(ops), Distribution::Zipfian, fixed),
            W::AcKeyTwoPhase => (phases::ac_key_two_phase(ops), Distribution::Zipfian, fixed),
            W::AcKeyDefault => {
                let s = spec.scan_ratio;
                if !(0.0..=1.0).contains(&s) {
                    bail!("--scan-ratio must be within [0, 1], got {s}");
                }
                let mix = Mix::new(&[(OpKind::Read, 1.0 - s), (OpKind::Scan, s)])?;
                (vec![Phase { mix, ops }], Distribution::Hotset, fixed)
            }
            W::LeaperSynthetic | W::LeaperEcommerce | W::LeaperIm | W::LeaperMoving => {
                let shape = spec.workload.leaper_shape().expect("a leaper workload");
                let mix = shape.mix(spec.read_share, spec.range_ratio)?;
                (vec![Phase { mix, ops }], shape.distribution, fixed)
            }
            W::AwpiAuction
            | W::AwpiDispute
            | W::AwpiFunds
            | W::AwpiLogistics
            | W::AwpiOrder
            | W::AwpiPay => bail!(
                "{} is a day-by-day stream (workload::awpi), run by SA-LSM's runner",
                spec.workload.name()
            ),
        };
        if spec.warmup_ops > 0 && spec.workload.is_fill() {
            bail!("--warmup-ops does not apply to fill workloads");
        }
        let hot = (spec.hot_keys, spec.hot_ops);
        if !(hot.0 > 0.0 && hot.0 <= 1.0 && (0.0..=1.0).contains(&hot.1)) {
            bail!(
                "--hot-keys must be within (0, 1] and --hot-ops within [0, 1], got {} and {}",
                hot.0,
                hot.1
            );
        }
        if spec.threads == 0 {
            bail!("--threads must be at least 1");
        }
        let warmup = if phases.is_empty() {
            0
        } else {
            spec.warmup_ops
        };
        Ok(Plan {
            phases,
            distribution: spec.distribution.unwrap_or(dist),
            theta: spec.zipf_theta,
            scan,
            seq_step,
            records: spec.records,
            hot,
            hot_phase_ops: spec.hot_phase_ops.max(1),
            warmup,
        })
    }

    pub fn total_ops(&self) -> u64 {
        self.phases.iter().map(|p| p.ops).sum()
    }

    /// YCSB sizes its zipfian key space for records + 2x the expected inserts (of the
    /// measured phases only, so the stream does not depend on the warm-up's length).
    fn expected_inserts(&self) -> u64 {
        self.phases
            .iter()
            .map(|p| (p.ops as f64 * p.mix.proportion(OpKind::Insert) * 2.0) as u64)
            .sum()
    }

    /// The op stream of worker `thread` out of `threads`, sharing the key counter.
    pub fn stream<'a>(
        &'a self,
        seed: u64,
        thread: usize,
        threads: usize,
        value_size: ValueSize,
        keys: &'a KeyCounter,
    ) -> OpGen<'a> {
        let threads = threads.max(1) as u64;
        let t = thread as u64;
        // Each worker runs its share of every phase, so phases stay aligned in time.
        let budgets = self
            .phases
            .iter()
            .map(|p| p.ops / threads + u64::from(t < p.ops % threads))
            .collect();
        let mut chooser = KeyChooser::new(
            self.distribution,
            self.theta,
            self.records,
            self.expected_inserts(),
        );
        if let KeyChooser::Sequential { next } = &mut chooser {
            // Threads walk disjoint stretches of the key space.
            *next = self.records / threads * t;
        }
        if let KeyChooser::Hotset(h) = &mut chooser {
            (h.keys, h.ops) = self.hot;
        }
        if let KeyChooser::MovingHot(m) = &mut chooser {
            *m = MovingHot::new(self.hot.0, self.hot.1, self.hot_phase_ops / threads);
        }
        OpGen {
            plan: self,
            rng: Rng::derive(seed, 1 + t),
            chooser,
            warmup_left: self.warmup / threads + u64::from(t < self.warmup % threads),
            budgets,
            phase: 0,
            value_size,
            keys,
        }
    }
}

/// Number of keys that exist (loaded + inserted); inserts claim the next index.
#[derive(Debug)]
pub struct KeyCounter(AtomicU64);

impl KeyCounter {
    pub fn new(n: u64) -> Self {
        KeyCounter(AtomicU64::new(n))
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    fn claim(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

/// One operation on key index `key`; `len` is a value length or a scan length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    pub kind: OpKind,
    pub key: u64,
    pub len: usize,
    pub phase: usize,
}

pub struct OpGen<'a> {
    plan: &'a Plan,
    rng: Rng,
    chooser: KeyChooser,
    /// Warm-up ops still to come (they precede the phases, with phase 0's mix).
    warmup_left: u64,
    budgets: Vec<u64>,
    phase: usize,
    value_size: ValueSize,
    keys: &'a KeyCounter,
}

impl Iterator for OpGen<'_> {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        let phase = if self.warmup_left > 0 {
            self.warmup_left -= 1;
            0
        } else {
            while self.phase < self.budgets.len() && self.budgets[self.phase] == 0 {
                self.phase += 1;
            }
            let budget = self.budgets.get_mut(self.phase)?;
            *budget -= 1;
            self.phase
        };
        let kind = self.plan.phases[phase].mix.pick(&mut self.rng);
        let (key, len) = match kind {
            OpKind::Insert => (self.keys.claim(), self.value_size.draw(&mut self.rng)),
            OpKind::Scan => {
                let k = self.choose();
                (k, self.plan.scan.draw(&mut self.rng))
            }
            OpKind::Read => (self.choose(), 0),
            OpKind::Update | OpKind::Rmw => {
                let k = self.choose();
                (k, self.value_size.draw(&mut self.rng))
            }
        };
        Some(Op {
            kind,
            key,
            len,
            phase,
        })
    }
}

impl OpGen<'_> {
    /// Warm-up ops this generator yields before its measured ones.
    pub fn warmup_left(&self) -> u64 {
        self.warmup_left
    }

    /// Ends the warm-up now: the next op is the first measured one (the stream is the one
    /// a run with that many warm-up ops gets, since warm-up ops draw like phase 0's).
    pub fn end_warmup(&mut self) {
        self.warmup_left = 0;
    }

    fn choose(&mut self) -> u64 {
        let count = self.keys.get();
        let k = self.chooser.next(&mut self.rng, count);
        if let KeyChooser::Sequential { next } = &mut self.chooser {
            *next = k + self.plan.seq_step;
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops_of(spec: &WorkloadSpec) -> Vec<Op> {
        let plan = Plan::build(spec).unwrap();
        let keys = KeyCounter::new(spec.records);
        plan.stream(spec.seed, 0, 1, spec.value_size, &keys)
            .collect()
    }

    fn spec(w: WorkloadName) -> WorkloadSpec {
        WorkloadSpec {
            workload: w,
            records: 10_000,
            ops: 100_000,
            ..Default::default()
        }
    }

    #[test]
    fn ycsb_proportions_within_tolerance() {
        use OpKind::*;
        let expect: [(WorkloadName, &[(OpKind, f64)]); 6] = [
            (WorkloadName::YcsbA, &[(Read, 0.5), (Update, 0.5)]),
            (WorkloadName::YcsbB, &[(Read, 0.95), (Update, 0.05)]),
            (WorkloadName::YcsbC, &[(Read, 1.0)]),
            (WorkloadName::YcsbD, &[(Read, 0.95), (Insert, 0.05)]),
            (WorkloadName::YcsbE, &[(Scan, 0.95), (Insert, 0.05)]),
            (WorkloadName::YcsbF, &[(Read, 0.5), (Rmw, 0.5)]),
        ];
        for (w, parts) in expect {
            let ops = ops_of(&spec(w));
            assert_eq!(ops.len(), 100_000);
            for k in OpKind::ALL {
                let want = parts.iter().find(|(x, _)| *x == k).map_or(0.0, |p| p.1);
                let got = ops.iter().filter(|o| o.kind == k).count() as f64 / ops.len() as f64;
                // 5 sigma of a binomial proportion at n = 100k is < 0.008.
                assert!((got - want).abs() < 0.008, "{w:?} {k:?}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn ycsb_e_scan_lengths_are_uniform_1_to_100() {
        let ops = ops_of(&spec(WorkloadName::YcsbE));
        let lens: Vec<usize> = ops
            .iter()
            .filter(|o| o.kind == OpKind::Scan)
            .map(|o| o.len)
            .collect();
        assert_eq!(*lens.iter().min().unwrap(), 1);
        assert_eq!(*lens.iter().max().unwrap(), 100);
        let mean = lens.iter().sum::<usize>() as f64 / lens.len() as f64;
        assert!((mean - 50.5).abs() < 1.0, "{mean}");
    }

    #[test]
    fn ycsb_d_reads_favor_recent_inserts() {
        let ops = ops_of(&spec(WorkloadName::YcsbD));
        let inserts: Vec<u64> = ops
            .iter()
            .filter(|o| o.kind == OpKind::Insert)
            .map(|o| o.key)
            .collect();
        // Inserts claim consecutive new indices.
        assert!(inserts.windows(2).all(|w| w[1] == w[0] + 1));
        assert_eq!(inserts[0], 10_000);
        let reads_of_new = ops
            .iter()
            .filter(|o| o.kind == OpKind::Read && o.key >= 10_000)
            .count();
        assert!(
            reads_of_new > ops.len() / 4,
            "latest should hit inserted keys: {reads_of_new}"
        );
    }

    #[test]
    fn same_seed_same_stream_different_seed_different() {
        for w in WorkloadName::all()
            .iter()
            .copied()
            .filter(|w| !w.is_fill() && !w.is_awpi())
        {
            let mut s = spec(w);
            s.ops = 2000;
            s.mix = Some("read=0.5,scan=0.1,update=0.3,insert=0.1".into());
            s.phases = Some("read=0.9,update=0.1:1000;scan=0.5,rmw=0.5:1000".into());
            let a = ops_of(&s);
            let b = ops_of(&s);
            assert_eq!(a, b, "{w:?}");
            s.seed += 1;
            let c = ops_of(&s);
            if w != WorkloadName::ReadSeq {
                assert_ne!(a, c, "{w:?}");
            }
        }
    }

    #[test]
    fn phases_run_in_order_with_their_counts() {
        let mut s = spec(WorkloadName::Phased);
        s.phases = Some("read=1:300;update=1:200;scan=1:100".into());
        let ops = ops_of(&s);
        assert_eq!(ops.len(), 600);
        assert!(ops[..300]
            .iter()
            .all(|o| o.kind == OpKind::Read && o.phase == 0));
        assert!(ops[300..500]
            .iter()
            .all(|o| o.kind == OpKind::Update && o.phase == 1));
        assert!(ops[500..]
            .iter()
            .all(|o| o.kind == OpKind::Scan && o.phase == 2));
    }

    #[test]
    fn ac_key_default_mix_and_skew() {
        let mut s = spec(WorkloadName::AcKeyDefault);
        s.ops = 50_000;
        let ops = ops_of(&s);
        assert_eq!(ops.len(), 50_000);
        let scans: Vec<&Op> = ops.iter().filter(|o| o.kind == OpKind::Scan).collect();
        let reads = ops.iter().filter(|o| o.kind == OpKind::Read).count();
        assert_eq!(scans.len() + reads, ops.len(), "only points and scans");
        let frac = scans.len() as f64 / ops.len() as f64;
        assert!((frac - 0.5).abs() < 0.012, "point:scan 1:1, got {frac}");
        assert!(scans.iter().all(|o| o.len == 100));
        // 1% of 10k keys = 100 hot keys take 99% of points and scan starts alike.
        let h = mix::Hotset::new(0.01, 0.99);
        let hot: std::collections::HashSet<u64> =
            (0..100).map(|r| h.key_of_rank(r, 10_000)).collect();
        let on_hot = ops.iter().filter(|o| hot.contains(&o.key)).count();
        let f = on_hot as f64 / ops.len() as f64;
        assert!((f - 0.99).abs() < 0.004, "hot share {f}");
        // Knobs: scan ratio and skew.
        s.scan_ratio = 0.0;
        s.hot_ops = 0.5;
        let ops = ops_of(&s);
        assert!(ops.iter().all(|o| o.kind == OpKind::Read));
        let f = ops.iter().filter(|o| hot.contains(&o.key)).count() as f64 / ops.len() as f64;
        assert!((f - 0.5).abs() < 0.012, "hot share {f}");
        s.scan_ratio = 1.5;
        assert!(Plan::build(&s).is_err());
        s.scan_ratio = 0.5;
        s.hot_keys = 0.0;
        assert!(Plan::build(&s).is_err());
    }

    #[test]
    fn readseq_walks_in_scan_length_steps() {
        let mut s = spec(WorkloadName::ReadSeq);
        s.scan_length = 10;
        s.records = 35;
        let ops = ops_of(&s);
        let starts: Vec<u64> = ops.iter().take(5).map(|o| o.key).collect();
        assert_eq!(starts, vec![0, 10, 20, 30, 5]);
    }

    #[test]
    fn threads_split_ops_exactly() {
        let s = spec(WorkloadName::YcsbA);
        let plan = Plan::build(&s).unwrap();
        let keys = KeyCounter::new(s.records);
        let total: usize = (0..3)
            .map(|t| plan.stream(1, t, 3, s.value_size, &keys).count())
            .sum();
        assert_eq!(total as u64, s.ops);
    }

    #[test]
    fn value_size_parsing() {
        assert_eq!(ValueSize::parse("100").unwrap(), ValueSize::Fixed(100));
        assert_eq!(
            ValueSize::parse("uniform:10:20").unwrap(),
            ValueSize::Uniform(10, 20)
        );
        assert!(ValueSize::parse("uniform:20:10").is_err());
        assert!(ValueSize::parse("big").is_err());
    }
}
