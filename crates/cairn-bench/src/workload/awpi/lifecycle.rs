//! The lifecycle AWPI generator (the default, `--salsm-generator lifecycle`).
//!
//! A record is a business object with a life: each record type is a semi-Markov chain of
//! stages (an order is created, paid, shipped, delivered, confirmed) whose sojourns are
//! Weibull, not exponential, so how long a record has sat in its stage says when it moves
//! on. Entering a stage updates one column (the insert writes them all), is followed by a
//! burst of reads, and active stages are polled. A record may end early (cancelled). Once
//! dormant it sees rare one-off reads (noise, which makes no tau-event) and status writes
//! (reconciliation, archiving flags: blind updates of one column that read nothing), and with a
//! probability that depends on its type and on how it ended it comes back 3-30 days later
//! (a return, a dispute) for a short second chain. Periodic records (a settlement cycle)
//! and steadily polled ones are in the mix too: structures where recency alone does well.
//! Inserts follow a daily and a weekly season.
//!
//! So late activity is predictable from what a record's history shows (how many updates,
//! how long since the last, how it ended), which a survival model can learn and LRU cannot
//! see. The read intensities are scaled so reads / writes matches the profile's Table 2
//! ratio. The chain's hidden state (stage, entry time) is kept per record, so
//! [`super::oracle`] can compute the Bayes-optimal probability of a read within a horizon.

use super::{exp, finish, poisson, AwpiKind, AwpiOp, AwpiSpec, AwpiStream, Targets, DAY_MS};
use crate::rng::Rng;
use anyhow::{bail, Result};

/// One stage of a chain. Its sojourn is Weibull(`scale_days`, `shape`); on entry `column`
/// is updated and Poisson(`burst`) reads follow, each Exp(burst hours) after the entry;
/// while in it, reads come at `poll_per_day`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    pub scale_days: f64,
    pub shape: f64,
    pub burst: f64,
    pub poll_per_day: f64,
    pub column: u8,
}

/// A kind of record: its chain, how it ends and whether it comes back.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecordType {
    pub name: &'static str,
    pub weight: f64,
    /// The main chain (empty for a periodic type).
    pub stages: &'static [Stage],
    /// After each stage but the last, the chance the record ends there (cancelled).
    pub cancel: f64,
    /// Chance of coming back once after completing the chain, and after a cancel.
    pub revive_done: f64,
    pub revive_cancelled: f64,
    /// Delay of the comeback after the record went dormant, uniform in days.
    pub revive_days: (f64, f64),
    /// The second chain a comeback runs.
    pub revival: &'static [Stage],
    /// Periodic records: a cycle every `period_days` (0: none), each an update of column 0
    /// and Poisson(`period_burst`) reads within hours.
    pub period_days: f64,
    pub period_burst: f64,
    /// Its reads are scaled to meet the profile's read/write ratio (the steady types).
    pub absorbs: bool,
}

/// One lifecycle profile: a mix of record types, shaped like a row of Table 2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LifecycleProfile {
    pub targets: Targets,
    pub records: u64,
    pub types: &'static [RecordType],
    /// One-off reads per day of a dormant record.
    pub noise_per_day: f64,
    /// Status writes per day of a dormant record (column [`STATUS_COLUMN`]).
    pub status_per_day: f64,
    /// Mean hours between a stage's entry and its burst's reads.
    pub burst_hours: f64,
    /// Scans per read (each a short range starting at the read record).
    pub scan_share: f64,
}

/// What a generator can switch off, one ingredient at a time (`--salsm-ablate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ablation {
    pub no_revival: bool,
    pub no_periodic: bool,
    pub no_noise: bool,
    pub no_polling: bool,
    pub no_bursts: bool,
    pub no_season: bool,
    /// No status writes on dormant records.
    pub no_status: bool,
    /// Exponential sojourns (shape 1) instead of the stages' Weibull shapes.
    pub memoryless: bool,
}

impl Ablation {
    pub fn parse(list: &str) -> Result<Ablation> {
        let mut a = Ablation::default();
        for w in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "revival" => a.no_revival = true,
                "periodic" => a.no_periodic = true,
                "noise" => a.no_noise = true,
                "polling" => a.no_polling = true,
                "bursts" => a.no_bursts = true,
                "season" => a.no_season = true,
                "status" => a.no_status = true,
                "memoryless" => a.memoryless = true,
                _ => bail!(
                    "unknown AWPI ablation `{w}` (revival, periodic, noise, polling, bursts, season, status, memoryless)"
                ),
            }
        }
        Ok(a)
    }
}

/// The column a dormant record's status writes update (the chains use 0-7).
pub const STATUS_COLUMN: u8 = 8;

const fn st(scale_days: f64, shape: f64, burst: f64, poll_per_day: f64, column: u8) -> Stage {
    Stage {
        scale_days,
        shape,
        burst,
        poll_per_day,
        column,
    }
}

/// A purchase: created, paid, shipped (tracked), delivered, then weeks of settling (the
/// warranty and payout period: reads days apart, as reports and reconciliations look it up).
const PURCHASE: &[Stage] = &[
    st(0.05, 1.5, 1.0, 0.0, 0),
    st(1.0, 2.0, 0.4, 0.1, 1),
    st(2.5, 3.0, 0.4, 0.3, 2),
    st(1.5, 2.0, 0.6, 0.1, 3),
    st(14.0, 1.5, 0.0, 0.2, 4),
];
/// A return or a dispute: opened, handled, refunded.
const RETURN: &[Stage] = &[
    st(2.0, 2.0, 2.0, 0.8, 5),
    st(3.0, 2.5, 1.0, 0.5, 6),
    st(0.5, 1.5, 1.0, 0.0, 7),
];
/// A digital good: created, paid, delivered within the hour, then settling.
const INSTANT: &[Stage] = &[
    st(0.02, 1.5, 0.5, 0.0, 0),
    st(0.05, 1.5, 0.2, 0.0, 1),
    st(7.0, 1.5, 0.0, 0.15, 2),
];
/// A shipment: picked up, in transit (tracked), out for delivery, signed, then settling.
const SHIPMENT: &[Stage] = &[
    st(0.3, 1.5, 0.5, 0.0, 0),
    st(2.5, 2.5, 0.4, 0.4, 1),
    st(0.3, 2.0, 1.0, 0.0, 2),
    st(12.0, 1.5, 0.2, 0.2, 3),
];
/// A case (a dispute, an auction lot): opened, argued over days, decided, closed.
const CASE: &[Stage] = &[
    st(0.5, 1.5, 1.0, 0.0, 0),
    st(6.0, 2.0, 0.5, 0.3, 1),
    st(2.0, 2.0, 1.0, 0.2, 2),
    st(10.0, 1.5, 0.0, 0.15, 3),
];
/// A steadily used record (an account, a shop): polled for months.
const STEADY: &[Stage] = &[st(90.0, 3.0, 1.0, 4.0, 0)];

const fn ty(
    name: &'static str,
    weight: f64,
    stages: &'static [Stage],
    cancel: f64,
    revive_done: f64,
    revive_cancelled: f64,
) -> RecordType {
    RecordType {
        name,
        weight,
        stages,
        cancel,
        revive_done,
        revive_cancelled,
        revive_days: (3.0, 30.0),
        revival: RETURN,
        period_days: 0.0,
        period_burst: 0.0,
        absorbs: false,
    }
}

/// A heavily read variant of a chain: it absorbs the reads the profile's ratio asks for
/// beyond what the other types make (they stay young: popularity still decays).
const fn hot(name: &'static str, weight: f64, stages: &'static [Stage]) -> RecordType {
    let mut t = ty(name, weight, stages, 0.05, 0.40, 0.06);
    t.absorbs = true;
    t
}

const fn periodic(weight: f64, period_days: f64, burst: f64) -> RecordType {
    RecordType {
        name: "periodic",
        weight,
        stages: &[],
        cancel: 0.0,
        revive_done: 0.0,
        revive_cancelled: 0.0,
        revive_days: (3.0, 30.0),
        revival: RETURN,
        period_days,
        period_burst: burst,
        absorbs: false,
    }
}

const fn profile(
    name: &'static str,
    rw: f64,
    censored: f64,
    records: u64,
    types: &'static [RecordType],
    noise_per_day: f64,
    status_per_day: f64,
) -> LifecycleProfile {
    LifecycleProfile {
        targets: Targets::of(name, rw, censored),
        records,
        types,
        noise_per_day,
        status_per_day,
        burst_hours: 2.0,
        // Few scans: a scan also reads the records after its start, which no record's own
        // life explains (the oracle adds them from its neighbours' simulated reads).
        scan_share: 0.002,
    }
}

pub const PROFILES: [LifecycleProfile; 6] = [
    profile(
        "auction",
        3.7,
        0.552,
        50_000,
        &[
            ty("lot", 0.45, CASE, 0.3, 0.40, 0.06),
            hot("watched lot", 0.05, CASE),
            ty("bid", 0.40, INSTANT, 0.1, 0.10, 0.0),
            ty("seller", 0.02, STEADY, 0.0, 0.0, 0.0),
            periodic(0.08, 7.0, 2.0),
        ],
        0.004,
        0.06,
    ),
    profile(
        "dispute",
        42.5,
        0.716,
        12_000,
        &[
            ty("case", 0.55, CASE, 0.2, 0.50, 0.10),
            hot("escalated case", 0.05, CASE),
            ty("claim", 0.38, INSTANT, 0.2, 0.10, 0.0),
            ty("merchant", 0.02, STEADY, 0.0, 0.0, 0.0),
        ],
        0.004,
        0.42,
    ),
    profile(
        "funds",
        1.9,
        0.918,
        100_000,
        &[
            ty("transfer", 0.85, INSTANT, 0.05, 0.06, 0.0),
            ty("payout", 0.09, PURCHASE, 0.2, 0.20, 0.02),
            hot("flagged payout", 0.02, PURCHASE),
            ty("account", 0.01, STEADY, 0.0, 0.0, 0.0),
            periodic(0.03, 7.0, 1.5),
        ],
        0.004,
        2.5,
    ),
    profile(
        "logistics",
        16.8,
        0.678,
        30_000,
        &[
            ty("parcel", 0.55, SHIPMENT, 0.05, 0.40, 0.06),
            hot("tracked parcel", 0.08, SHIPMENT),
            ty("letter", 0.25, INSTANT, 0.05, 0.10, 0.0),
            ty("depot", 0.02, STEADY, 0.0, 0.0, 0.0),
            periodic(0.10, 7.0, 2.0),
        ],
        0.004,
        1.6,
    ),
    profile(
        "order",
        3.6,
        0.819,
        60_000,
        &[
            ty("purchase", 0.40, PURCHASE, 0.15, 0.40, 0.06),
            hot("big purchase", 0.04, PURCHASE),
            ty("digital", 0.50, INSTANT, 0.05, 0.06, 0.0),
            ty("shop", 0.01, STEADY, 0.0, 0.0, 0.0),
            periodic(0.05, 7.0, 1.5),
        ],
        0.004,
        1.4,
    ),
    profile(
        "pay",
        13.8,
        0.450,
        30_000,
        &[
            ty("payment", 0.55, PURCHASE, 0.1, 0.30, 0.06),
            hot("merchant payment", 0.08, PURCHASE),
            ty("instant", 0.25, INSTANT, 0.05, 0.10, 0.0),
            ty("wallet", 0.02, STEADY, 0.0, 0.0, 0.0),
            periodic(0.10, 3.5, 2.0),
        ],
        0.004,
        0.065,
    ),
];

pub fn profile_named(name: &str) -> Option<LifecycleProfile> {
    PROFILES.iter().find(|p| p.targets.name == name).copied()
}

/// Where a record's chain is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// In stage `stage` of the main chain, or of the revival chain.
    Chain {
        revival: bool,
        stage: u8,
    },
    /// Done with its chains; `cancelled`: it ended early; `revived`: it came back once.
    Dormant {
        revived: bool,
        cancelled: bool,
    },
    Periodic,
}

/// A record's hidden state from `since_ms` on (the oracle resumes the chain from here).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct State {
    pub phase: Phase,
    pub since_ms: f64,
}

/// Each record's type and the states its chain went through, in time order.
#[derive(Clone, Debug, Default)]
pub struct Paths {
    pub types: Vec<u8>,
    pub insert_ms: Vec<u64>,
    pub states: Vec<Vec<State>>,
}

impl Paths {
    /// The state record `rec` is in at `t_ms` (None before its insert).
    pub fn state_at(&self, rec: usize, t_ms: f64) -> Option<State> {
        let s = &self.states[rec];
        let i = s.partition_point(|x| x.since_ms <= t_ms);
        (i > 0).then(|| s[i - 1])
    }
}

/// An access the simulation emits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Access {
    Read,
    Update(u8),
}

/// A record's random streams: the structure (sojourns, transitions) and the reads apart,
/// so the read intensity can be rescaled without changing the structure.
pub struct Rngs {
    pub structure: Rng,
    pub reads: Rng,
    /// Dormant records' status writes (apart, so their rate leaves the reads unchanged).
    pub writes: Rng,
}

/// The stretch a step of the chain covers: the state began at `since`, the step starts at
/// `now` (later when resumed) and the run ends at `until`.
#[derive(Clone, Copy)]
struct Span {
    since: f64,
    now: f64,
    until: f64,
}

/// Runs one record's chain from a state (resumed at a time, conditioned on what is known
/// then) until a time.
pub struct Sim<'a> {
    pub p: &'a LifecycleProfile,
    pub ty: &'a RecordType,
    pub read_scale: f64,
    pub ablate: Ablation,
}

const HOUR_MS: f64 = 3_600_000.0;

impl Sim<'_> {
    /// Emits the accesses in [from_ms, until_ms) (until `emit` returns false); `path`
    /// collects the states entered.
    pub fn run(
        &self,
        mut state: State,
        (from_ms, until_ms): (f64, f64),
        rngs: &mut Rngs,
        emit: &mut dyn FnMut(f64, Access) -> bool,
        mut path: Option<&mut Vec<State>>,
    ) {
        let mut resume = from_ms > state.since_ms;
        let mut now = from_ms.max(state.since_ms);
        while now < until_ms {
            let span = Span {
                since: state.since_ms,
                now,
                until: until_ms,
            };
            let next = match state.phase {
                Phase::Chain { revival, stage } => {
                    self.chain_stage(revival, stage, span, resume, rngs, emit)
                }
                Phase::Dormant { revived, cancelled } => {
                    self.dormant(revived, cancelled, span, rngs, emit)
                }
                Phase::Periodic => {
                    self.periodic(span, &mut rngs.reads, emit);
                    None
                }
            };
            let Some(n) = next else { return };
            if n.since_ms < 0.0 {
                return; // the emitter asked to stop
            }
            state = n;
            now = n.since_ms;
            resume = false;
            if let Some(p) = path.as_deref_mut() {
                p.push(n);
            }
        }
    }

    fn stages(&self, revival: bool) -> &'static [Stage] {
        if revival {
            self.ty.revival
        } else {
            self.ty.stages
        }
    }

    /// One stage: its entry update and burst (unless resumed inside it), its polls, and
    /// where the chain goes when the sojourn ends.
    fn chain_stage(
        &self,
        revival: bool,
        stage: u8,
        Span { since, now, until }: Span,
        resume: bool,
        rngs: &mut Rngs,
        emit: &mut dyn FnMut(f64, Access) -> bool,
    ) -> Option<State> {
        let (srng, rrng) = (&mut rngs.structure, &mut rngs.reads);
        let stages = self.stages(revival);
        let s = &stages[stage as usize];
        let shape = if self.ablate.memoryless { 1.0 } else { s.shape };
        let scale = s.scale_days * DAY_MS as f64;
        let end = since + weibull_after(srng, scale, shape, now - since);
        // Entering the main chain's first stage is the insert itself.
        let entry = !resume && (stage != 0 || revival);
        if entry && !emit(since, Access::Update(s.column)) {
            return Some(stop());
        }
        if !self.ablate.no_bursts && !self.burst(s.burst, since, now, until, rrng, emit) {
            return Some(stop());
        }
        if !self.ablate.no_polling {
            let rate = s.poll_per_day * self.read_scale / DAY_MS as f64;
            if !poisson_events(rrng, rate, (now, end.min(until)), Access::Read, emit) {
                return Some(stop());
            }
        }
        if end >= until {
            return None;
        }
        let last = stage as usize + 1 == stages.len();
        let phase = if last {
            Phase::Dormant {
                revived: revival,
                cancelled: false,
            }
        } else if !revival && srng.next_f64() < self.ty.cancel {
            Phase::Dormant {
                revived: false,
                cancelled: true,
            }
        } else {
            Phase::Chain {
                revival,
                stage: stage + 1,
            }
        };
        Some(State {
            phase,
            since_ms: end,
        })
    }

    /// The reads of a burst that follows an entry at `since`, those after `now` (by
    /// thinning, the remaining ones of a burst with exponential offsets are again Poisson).
    fn burst(
        &self,
        mean: f64,
        since: f64,
        now: f64,
        until: f64,
        rrng: &mut Rng,
        emit: &mut dyn FnMut(f64, Access) -> bool,
    ) -> bool {
        let bh = self.p.burst_hours * HOUR_MS;
        let left = mean * self.read_scale * (-(now - since).max(0.0) / bh).exp();
        let mut times: Vec<f64> = (0..poisson(rrng, left))
            .map(|_| now + exp(rrng, bh))
            .filter(|&t| t < until)
            .collect();
        times.sort_by(f64::total_cmp);
        times.into_iter().all(|t| emit(t, Access::Read))
    }

    /// Dormant: noise reads and status writes until the comeback (if any) or `until`.
    fn dormant(
        &self,
        revived: bool,
        cancelled: bool,
        Span { since, now, until }: Span,
        rngs: &mut Rngs,
        emit: &mut dyn FnMut(f64, Access) -> bool,
    ) -> Option<State> {
        let (srng, rrng, wrng) = (&mut rngs.structure, &mut rngs.reads, &mut rngs.writes);
        let p = if revived || self.ablate.no_revival {
            0.0
        } else if cancelled {
            self.ty.revive_cancelled
        } else {
            self.ty.revive_done
        };
        let back = comeback(srng, p, self.ty.revive_days, now - since).map(|d| since + d);
        let stop_at = back.unwrap_or(until).min(until);
        if !self.ablate.no_noise {
            let rate = self.p.noise_per_day * self.read_scale / DAY_MS as f64;
            if !poisson_events(rrng, rate, (now, stop_at), Access::Read, emit) {
                return Some(stop());
            }
        }
        if !self.ablate.no_status {
            let rate = self.p.status_per_day / DAY_MS as f64;
            let status = Access::Update(STATUS_COLUMN);
            if !poisson_events(wrng, rate, (now, stop_at), status, emit) {
                return Some(stop());
            }
        }
        match back {
            Some(t) if t < until => Some(State {
                phase: Phase::Chain {
                    revival: true,
                    stage: 0,
                },
                since_ms: t,
            }),
            _ => None,
        }
    }

    /// A periodic record: a cycle every period from `since` on (jittered by an hour).
    fn periodic(
        &self,
        Span { since, now, until }: Span,
        rrng: &mut Rng,
        emit: &mut dyn FnMut(f64, Access) -> bool,
    ) {
        let period = self.ty.period_days * DAY_MS as f64;
        let mut k = ((now - since) / period).ceil().max(1.0);
        loop {
            let t = since + k * period + rrng.normal() * HOUR_MS;
            if t >= until {
                return;
            }
            if t > now {
                if !emit(t, Access::Update(0)) {
                    return;
                }
                if !self.ablate.no_bursts
                    && !self.burst(self.ty.period_burst, t, t, until, rrng, emit)
                {
                    return;
                }
            }
            k += 1.0;
        }
    }
}

fn stop() -> State {
    State {
        phase: Phase::Periodic,
        since_ms: -1.0,
    }
}

/// A Weibull(scale, shape) sojourn given that `elapsed` of it has passed: the rest, by
/// inverting the conditional survival exp((e/l)^k - (x/l)^k).
fn weibull_after(rng: &mut Rng, scale: f64, shape: f64, elapsed: f64) -> f64 {
    let e = (elapsed.max(0.0) / scale).powf(shape);
    let u = 1.0 - rng.next_f64(); // (0, 1]
    let x = scale * (e - u.ln()).powf(1.0 / shape);
    (x - elapsed.max(0.0)).max(1.0) + elapsed.max(0.0)
}

/// Whether and when (days after going dormant, as ms) a record comes back, given that it
/// has not by `elapsed`: draws until the draw agrees with what is known.
fn comeback(rng: &mut Rng, p: f64, days: (f64, f64), elapsed: f64) -> Option<f64> {
    if p <= 0.0 {
        return None;
    }
    for _ in 0..1000 {
        if rng.next_f64() >= p {
            return None;
        }
        let d = (days.0 + rng.next_f64() * (days.1 - days.0)) * DAY_MS as f64;
        if d > elapsed {
            return Some(d);
        }
    }
    None
}

/// Accesses `a` of a Poisson process of `rate` per ms over [from, to).
fn poisson_events(
    rng: &mut Rng,
    rate: f64,
    (from, to): (f64, f64),
    a: Access,
    emit: &mut dyn FnMut(f64, Access) -> bool,
) -> bool {
    if rate <= 0.0 {
        return true;
    }
    let mut t = from;
    loop {
        t += exp(rng, 1.0 / rate);
        if t >= to {
            return true;
        }
        if !emit(t, a) {
            return false;
        }
    }
}

/// Insert intensity relative to its mean: busier by day than by night, and at weekends.
fn season(t_ms: f64) -> f64 {
    const WEEK: [f64; 7] = [1.0, 1.0, 1.0, 1.0, 1.05, 1.3, 1.2];
    let day = t_ms / DAY_MS as f64;
    let hour = (day.fract() * 24.0 - 8.0) / 24.0 * std::f64::consts::TAU;
    (1.0 + 0.5 * hour.sin()) * WEEK[(day as usize) % 7] / 1.3
}

/// `n` insert times over [0, end), seasonal, ascending (keys follow insert order).
fn insert_times(rng: &mut Rng, n: u64, end: u64, flat: bool) -> Vec<u64> {
    let mut t: Vec<u64> = Vec::with_capacity(n as usize);
    while (t.len() as u64) < n {
        let x = rng.next_f64() * end as f64;
        if flat || rng.next_f64() * 1.5 < season(x) {
            t.push((x as u64).clamp(1, end - 1));
        }
    }
    t.sort_unstable();
    t
}

/// A record's streams under `seed`.
pub(super) fn rngs(seed: u64, rec: u64) -> Rngs {
    Rngs {
        structure: Rng::derive(seed ^ 0x5EED_0001, rec),
        reads: Rng::derive(seed ^ 0x5EED_0002, rec),
        writes: Rng::derive(seed ^ 0x5EED_0003, rec),
    }
}

fn pick_type(rng: &mut Rng, types: &[RecordType], ablate: Ablation) -> usize {
    let w = |t: &RecordType| {
        if ablate.no_periodic && t.period_days > 0.0 {
            0.0
        } else {
            t.weight
        }
    };
    let total: f64 = types.iter().map(w).sum();
    let mut x = rng.next_f64() * total;
    for (i, t) in types.iter().enumerate() {
        x -= w(t);
        if x < 0.0 {
            return i;
        }
    }
    types.len() - 1
}

/// The raw accesses of every record at `read_scale`: (time, record, access) sorted, and
/// each record's path.
fn simulate_all(
    spec: &AwpiSpec,
    p: &LifecycleProfile,
    ablate: Ablation,
    scales: Scales,
) -> (Vec<(u64, u32, Option<Access>)>, Paths) {
    let end = spec.end_ms() as f64;
    let mut trng = Rng::derive(spec.seed, 0x11FE);
    let inserts = insert_times(&mut trng, spec.records, spec.end_ms(), ablate.no_season);
    let mut ev = Vec::with_capacity(spec.records as usize * 12);
    let mut paths = Paths::default();
    for (i, &t0) in inserts.iter().enumerate() {
        let mut r = rngs(spec.seed, i as u64);
        let k = pick_type(&mut r.structure, p.types, ablate);
        let ty = &p.types[k];
        let phase = if ty.period_days > 0.0 {
            Phase::Periodic
        } else {
            Phase::Chain {
                revival: false,
                stage: 0,
            }
        };
        let start = State {
            phase,
            since_ms: t0 as f64,
        };
        let mut states = vec![start];
        ev.push((t0, i as u32, None));
        let sim = Sim {
            p,
            ty,
            read_scale: scales.of(ty),
            ablate,
        };
        let mut emit = |t: f64, a: Access| {
            ev.push((t as u64, i as u32, Some(a)));
            true
        };
        sim.run(
            start,
            (t0 as f64, end),
            &mut r,
            &mut emit,
            Some(&mut states),
        );
        paths.types.push(k as u8);
        paths.states.push(states);
    }
    paths.insert_ms = inserts;
    // Inserts first among equal times, so no access precedes its record.
    ev.sort_unstable_by_key(|&(t, r, a)| (t, r, a.is_some()));
    (ev, paths)
}

/// The factors on read intensities that meet the profile's read/write ratio: the hot
/// types absorb what the chains do not make, down to a fifth of their design rate; below
/// that every type is scaled down.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scales {
    pub other: f64,
    pub steady: f64,
}

impl Scales {
    pub fn of(&self, ty: &RecordType) -> f64 {
        if ty.absorbs {
            self.steady
        } else {
            self.other
        }
    }

    fn fit(p: &LifecycleProfile, ev: &[(u64, u32, Option<Access>)], paths: &Paths) -> Scales {
        let absorbs = |rec: u32| p.types[paths.types[rec as usize] as usize].absorbs;
        let (mut r_other, mut r_steady, mut writes) = (0.0, 0.0, 0.0);
        for &(_, rec, a) in ev {
            match (a, absorbs(rec)) {
                (Some(Access::Read), true) => r_steady += 1.0,
                (Some(Access::Read), false) => r_other += 1.0,
                _ => writes += 1.0,
            }
        }
        let want = p.targets.table2_rw * writes / (1.0 + p.scan_share);
        let floor = 0.2;
        if r_steady > 0.0 && want - r_other >= floor * r_steady {
            return Scales {
                other: 1.0,
                steady: (want - r_other) / r_steady,
            };
        }
        let steady = if r_steady > 0.0 { floor } else { 0.0 };
        Scales {
            other: ((want - steady * r_steady) / r_other.max(1.0)).max(0.01),
            steady,
        }
    }
}

/// Generates a lifecycle stream; the read intensities are scaled (a second pass with the
/// same structure) so reads / writes is the profile's ratio.
pub fn generate(spec: &AwpiSpec, p: &LifecycleProfile, ablate: Ablation) -> Result<AwpiStream> {
    spec.validate()?;
    let one = Scales {
        other: 1.0,
        steady: 1.0,
    };
    let (ev, paths) = simulate_all(spec, p, ablate, one);
    let scales = Scales::fit(p, &ev, &paths);
    let (ev, paths) = simulate_all(spec, p, ablate, scales);
    let mut krng = Rng::derive(spec.seed, 0xA3F3);
    let mut ops = Vec::with_capacity(ev.len() + ev.len() / 32);
    let vlen =
        |rng: &mut Rng| rng.range_inclusive(spec.value_min as u64, spec.value_max as u64) as u16;
    for (t, rec, a) in ev {
        let (kind, len, col) = match a {
            None => (AwpiKind::Insert, vlen(&mut krng), 0),
            Some(Access::Update(c)) => (AwpiKind::Update, vlen(&mut krng), c),
            Some(Access::Read) => (AwpiKind::Read, 0, 0),
        };
        ops.push(AwpiOp {
            t_ms: t,
            rec,
            kind,
            len,
            col,
        });
        if kind == AwpiKind::Read && krng.next_f64() < p.scan_share {
            ops.push(AwpiOp::scan(t, rec, &mut krng));
        }
    }
    let insert_ms = paths.insert_ms.clone();
    let mut s = finish(spec, p.targets, ops, insert_ms, Some(paths));
    s.stats.read_scale = scales.other;
    s.stats.steady_read_scale = scales.steady;
    Ok(s)
}
