//! Operation mixes (`read=0.5,scan=0.1,...`) and request distributions (which key an op hits).

use super::zipf::{Latest, ScrambledZipfian, Zipfian, ZIPFIAN_CONSTANT};
use crate::rng::Rng;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// Operation types; also the keys of per-op latency histograms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Read,
    Scan,
    Update,
    Insert,
    Rmw,
}

impl OpKind {
    pub const ALL: [OpKind; 5] = [
        OpKind::Read,
        OpKind::Scan,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Rmw,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Scan => "scan",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Rmw => "rmw",
        }
    }

    pub fn parse(s: &str) -> Result<OpKind> {
        Ok(match s.trim() {
            "read" | "get" | "lookup" => OpKind::Read,
            "scan" => OpKind::Scan,
            "update" | "write" | "put" => OpKind::Update,
            "insert" => OpKind::Insert,
            "rmw" | "readmodifywrite" => OpKind::Rmw,
            other => bail!("unknown op `{other}` (expected read, scan, update, insert, rmw)"),
        })
    }

    pub fn writes(self) -> bool {
        matches!(self, OpKind::Update | OpKind::Insert | OpKind::Rmw)
    }
}

/// Proportions of each op kind; they sum to 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mix {
    /// (kind, proportion) with proportion > 0, in OpKind order.
    pub parts: Vec<(OpKind, f64)>,
}

impl Mix {
    pub fn new(parts: &[(OpKind, f64)]) -> Result<Mix> {
        let mut v: Vec<(OpKind, f64)> = Vec::new();
        for &(k, p) in parts {
            if !(0.0..=1.0).contains(&p) || p.is_nan() {
                bail!("proportion for {} must be within [0, 1], got {p}", k.name());
            }
            if v.iter().any(|(x, _)| *x == k) {
                bail!("op {} given twice", k.name());
            }
            if p > 0.0 {
                v.push((k, p));
            }
        }
        let sum: f64 = v.iter().map(|(_, p)| p).sum();
        if (sum - 1.0).abs() > 1e-6 {
            bail!("mix proportions must sum to 1, got {sum}");
        }
        v.sort_by_key(|(k, _)| *k);
        Ok(Mix { parts: v })
    }

    /// Parses `read=0.5,scan=0.1,update=0.3,insert=0.1,rmw=0`.
    pub fn parse(s: &str) -> Result<Mix> {
        let mut parts = Vec::new();
        for item in s.split(',').filter(|x| !x.trim().is_empty()) {
            let (k, v) = item
                .split_once('=')
                .with_context(|| format!("mix item `{item}` is not op=proportion"))?;
            let p: f64 = v
                .trim()
                .parse()
                .with_context(|| format!("bad proportion in `{item}`"))?;
            parts.push((OpKind::parse(k)?, p));
        }
        Mix::new(&parts).with_context(|| format!("in mix `{s}`"))
    }

    pub fn pick(&self, rng: &mut Rng) -> OpKind {
        let mut u = rng.next_f64();
        for &(k, p) in &self.parts {
            if u < p {
                return k;
            }
            u -= p;
        }
        self.parts.last().expect("mix is never empty").0
    }

    pub fn proportion(&self, k: OpKind) -> f64 {
        self.parts
            .iter()
            .find(|(x, _)| *x == k)
            .map_or(0.0, |(_, p)| *p)
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s: Vec<String> = self
            .parts
            .iter()
            .map(|(k, p)| format!("{}={p}", k.name()))
            .collect();
        write!(f, "{}", s.join(","))
    }
}

/// Request distribution over the existing keys (YCSB `requestdistribution`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Every existing key equally likely.
    Uniform,
    /// YCSB's scrambled zipfian (constant --zipf, default 0.99; hot keys spread by FNV hash).
    Zipfian,
    /// Zipfian without the scramble, as SysBench's `--rand-type=zipfian` (Leaper's
    /// synthetic workloads): key index 0 is the hottest, so hot keys sit in few blocks.
    #[serde(rename = "zipfian-clustered")]
    ZipfianClustered,
    /// YCSB's skewed-latest: the most recently inserted keys are the hottest.
    Latest,
    /// Walks the keys in order, wrapping around.
    Sequential,
    /// YCSB hotspot: 80% of ops on 20% of the keys.
    Hotspot,
    /// YCSB exponential: 95% of ops on the newest 85.7% of keys, skewed toward the newest.
    Exponential,
    /// AC-Key's skew: the hottest --hot-keys fraction of keys takes --hot-ops of the ops
    /// (default 1% / 99%); hot keys are scattered over the key space as db_bench does.
    Hotset,
    /// The same shares from db_bench's exponential generator (`--read_random_exp_range`),
    /// as AC-Key's paper drew them: skewed inside the hot set too, the hottest keys taking
    /// most of it (rank density ~ 1/rank).
    #[serde(rename = "hotset-exp")]
    #[value(name = "hotset-exp")]
    HotsetExp,
    /// Hot windows that move and recur (Leaper's Fig. 4 structure): --hot-keys of the
    /// keys, in a few contiguous windows, take --hot-ops of the accesses; every
    /// --hot-phase-ops draws each window steps along its lane of the key space, and after
    /// a cycle of positions it starts over. A window's next position is hot right after
    /// its current one (correlated ranges).
    #[serde(rename = "moving-hot")]
    #[value(name = "moving-hot")]
    MovingHot,
}

/// YCSB hotspot defaults: 80% of ops on 20% of keys.
const HOTSPOT_SET_FRACTION: f64 = 0.2;
const HOTSPOT_OP_FRACTION: f64 = 0.8;
/// YCSB exponential defaults: 95% of ops within the newest 85.7% of keys.
const EXP_PERCENTILE: f64 = 95.0;
const EXP_FRACTION: f64 = 0.857_142_857_1;

/// Picks key indices in [0, current key count) for reads/updates/scans.
#[derive(Clone, Debug)]
pub enum KeyChooser {
    Uniform,
    /// Scrambled over records + expected inserts; draws beyond the current count are
    /// redrawn, as YCSB's CoreWorkload does.
    Zipfian(ScrambledZipfian),
    /// Unscrambled over the current key count (grown incrementally as inserts arrive).
    ZipfianClustered(Zipfian),
    Latest(Latest),
    Sequential {
        next: u64,
    },
    Hotspot,
    Exponential {
        gamma: f64,
    },
    Hotset(Hotset),
    MovingHot(MovingHot),
}

impl KeyChooser {
    pub fn new(dist: Distribution, theta: f64, records: u64, expected_inserts: u64) -> Self {
        let records = records.max(1);
        match dist {
            Distribution::Uniform => KeyChooser::Uniform,
            Distribution::Zipfian => {
                KeyChooser::Zipfian(ScrambledZipfian::new(records + expected_inserts, theta))
            }
            Distribution::ZipfianClustered => {
                KeyChooser::ZipfianClustered(Zipfian::new(records, theta))
            }
            Distribution::Latest => KeyChooser::Latest(Latest::new(records, theta)),
            Distribution::Sequential => KeyChooser::Sequential { next: 0 },
            Distribution::Hotspot => KeyChooser::Hotspot,
            Distribution::Exponential => KeyChooser::Exponential {
                gamma: -(1.0 - EXP_PERCENTILE / 100.0).ln() / (records as f64 * EXP_FRACTION),
            },
            Distribution::Hotset => KeyChooser::Hotset(Hotset::default()),
            Distribution::HotsetExp => KeyChooser::Hotset(Hotset {
                exponential: true,
                ..Hotset::default()
            }),
            Distribution::MovingHot => KeyChooser::MovingHot(MovingHot::default()),
        }
    }

    pub fn next(&mut self, rng: &mut Rng, count: u64) -> u64 {
        let count = count.max(1);
        match self {
            KeyChooser::Uniform => rng.below(count),
            KeyChooser::Zipfian(z) => loop {
                let v = z.next(rng);
                if v < count {
                    return v;
                }
            },
            KeyChooser::ZipfianClustered(z) => z.next(rng, count),
            KeyChooser::Latest(l) => l.next(rng, count),
            KeyChooser::Sequential { next } => {
                let v = *next % count;
                *next = v + 1;
                v
            }
            KeyChooser::Hotspot => {
                let hot = ((count as f64 * HOTSPOT_SET_FRACTION) as u64).max(1);
                if rng.next_f64() < HOTSPOT_OP_FRACTION || hot == count {
                    rng.below(hot)
                } else {
                    hot + rng.below(count - hot)
                }
            }
            KeyChooser::Exponential { gamma } => loop {
                let back = (-(1.0 - rng.next_f64()).ln() / *gamma) as u64;
                if back < count {
                    return count - 1 - back;
                }
            },
            KeyChooser::Hotset(h) => h.next(rng, count),
            KeyChooser::MovingHot(m) => m.next(rng, count),
        }
    }
}

/// Windows on the move at once (each in its own lane, a quarter of the key space).
const MOVING_LANES: u64 = 4;
/// Positions a window visits in its lane before it recurs.
const MOVING_CYCLE: u64 = 6;

/// The `moving-hot` distribution's state: how many keys it has drawn (its clock).
#[derive(Clone, Debug, PartialEq)]
pub struct MovingHot {
    /// Share of the keys hot at a time, and of the accesses they take.
    pub keys: f64,
    pub ops: f64,
    /// Draws per position.
    pub phase_draws: u64,
    draws: u64,
}

impl Default for MovingHot {
    fn default() -> Self {
        MovingHot {
            keys: 0.02,
            ops: 0.9,
            phase_draws: 50_000,
            draws: 0,
        }
    }
}

impl MovingHot {
    pub fn new(keys: f64, ops: f64, phase_draws: u64) -> MovingHot {
        MovingHot {
            keys,
            ops,
            phase_draws: phase_draws.max(1),
            draws: 0,
        }
    }

    /// The hot windows (first key, length) among `count` keys at position `phase`.
    pub fn windows(&self, phase: u64, count: u64) -> Vec<(u64, u64)> {
        let lane = count / MOVING_LANES;
        let len = ((count as f64 * self.keys) as u64 / MOVING_LANES).clamp(1, lane.max(1));
        let step = lane.saturating_sub(len) / (MOVING_CYCLE - 1);
        (0..MOVING_LANES)
            .map(|l| (l * lane + (phase % MOVING_CYCLE) * step, len))
            .collect()
    }

    pub fn next(&mut self, rng: &mut Rng, count: u64) -> u64 {
        let phase = self.draws / self.phase_draws.max(1);
        self.draws += 1;
        if count < MOVING_LANES || rng.next_f64() >= self.ops {
            return rng.below(count);
        }
        let w = self.windows(phase, count);
        let (start, len) = w[rng.below(w.len() as u64) as usize];
        start + rng.below(len)
    }
}

/// Two-level skew: a fraction `keys` of the keys (the hot set) takes a fraction `ops` of
/// the accesses, uniform within each set, or (`exponential`) as db_bench's exponential
/// generator spreads them. `keys == ops` is uniform.
#[derive(Clone, Debug, PartialEq)]
pub struct Hotset {
    pub keys: f64,
    pub ops: f64,
    pub exponential: bool,
}

impl Default for Hotset {
    fn default() -> Self {
        Hotset::new(0.01, 0.99)
    }
}

impl Hotset {
    pub fn new(keys: f64, ops: f64) -> Hotset {
        Hotset {
            keys,
            ops,
            exponential: false,
        }
    }

    /// db_bench's `--read_random_exp_range` R for these shares: it draws rank
    /// `count * e^(-u R)` with u uniform in [0, 1), so the hottest fraction f of the keys
    /// gets `1 + ln(f) / R` of the accesses; R = -ln(keys) / (1 - ops) gives them `ops`.
    /// 0 (uniform) when the hot set gets no more than its share.
    pub fn exp_range(&self) -> f64 {
        let (keys, ops) = (self.keys.clamp(1e-12, 1.0), self.ops.clamp(0.0, 1.0 - 1e-9));
        if ops <= keys {
            0.0
        } else {
            -keys.ln() / (1.0 - ops)
        }
    }

    /// Number of hot keys among `count`.
    pub fn hot_count(&self, count: u64) -> u64 {
        ((count as f64 * self.keys).round() as u64).clamp(1, count.max(1))
    }

    /// The key index of rank `r` (ranks below `hot_count` are hot). A pseudo-random
    /// permutation of [0, count), as db_bench scatters its hot keys, so a data block holds
    /// about as many hot keys as chance gives rather than a contiguous run of them.
    pub fn key_of_rank(&self, r: u64, count: u64) -> u64 {
        permute(r, count.max(1))
    }

    pub fn next(&mut self, rng: &mut Rng, count: u64) -> u64 {
        let count = count.max(1);
        if self.exponential {
            let r = self.exp_range();
            let rank = if r > 0.0 {
                ((count as f64 * (-rng.next_f64() * r).exp()) as u64).min(count - 1)
            } else {
                rng.below(count)
            };
            return self.key_of_rank(rank, count);
        }
        let hot = self.hot_count(count);
        let rank = if hot == count || rng.next_f64() < self.ops {
            rng.below(hot)
        } else {
            hot + rng.below(count - hot)
        };
        self.key_of_rank(rank, count)
    }
}

/// A bijection of [0, n): a 4-round Feistel network over the smallest even number of bits
/// covering n, cycle-walking until the value falls below n (under 4 steps on average).
fn permute(x: u64, n: u64) -> u64 {
    let bits = (64 - (n - 1).leading_zeros()).max(2);
    let half = bits.div_ceil(2);
    let mask = (1u64 << half) - 1;
    let mut v = x;
    loop {
        let (mut l, mut r) = (v >> half, v & mask);
        for round in 0..4u64 {
            let mut st = r ^ (round << 56) ^ 0xAC4E_7000;
            let f = crate::rng::splitmix64(&mut st) & mask;
            (l, r) = (r, l ^ f);
        }
        v = (l << half) | r;
        if v < n {
            return v;
        }
    }
}

pub fn default_theta() -> f64 {
    ZIPFIAN_CONSTANT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_mix_and_reject_bad_sums() {
        let m = Mix::parse("read=0.5,scan=0.1,update=0.3,insert=0.1,rmw=0").unwrap();
        assert_eq!(m.parts.len(), 4);
        assert_eq!(m.proportion(OpKind::Scan), 0.1);
        assert!(Mix::parse("read=0.5,update=0.4").is_err());
        assert!(Mix::parse("read=0.5,frobnicate=0.5").is_err());
        assert!(Mix::parse("read=1.5,update=-0.5").is_err());
    }

    #[test]
    fn hotspot_puts_80_percent_on_20_percent() {
        let mut c = KeyChooser::new(Distribution::Hotspot, 0.99, 1000, 0);
        let mut rng = Rng::new(5);
        let hot = (0..100_000)
            .filter(|_| c.next(&mut rng, 1000) < 200)
            .count();
        assert!((hot as f64 / 100_000.0 - 0.8).abs() < 0.01);
    }

    #[test]
    fn hotset_respects_skew_and_scatters_hot_keys() {
        let count = 10_000u64;
        let h = Hotset::new(0.01, 0.99);
        let all: std::collections::HashSet<u64> =
            (0..count).map(|r| h.key_of_rank(r, count)).collect();
        assert_eq!(
            all.len() as u64,
            count,
            "the rank -> key map is a bijection"
        );
        assert!(all.iter().all(|&k| k < count));
        let hot: std::collections::HashSet<u64> = (0..h.hot_count(count))
            .map(|r| h.key_of_rank(r, count))
            .collect();
        assert_eq!(hot.len(), 100);
        // Scattered: the 100 hot keys fall into many distinct 35-key (one block) ranges.
        let blocks: std::collections::HashSet<u64> = hot.iter().map(|k| k / 35).collect();
        assert!(blocks.len() > 80, "{}", blocks.len());
        let mut c = KeyChooser::Hotset(Hotset::new(0.01, 0.99));
        let mut rng = Rng::new(9);
        let n = 100_000;
        let on_hot = (0..n)
            .filter(|_| hot.contains(&c.next(&mut rng, count)))
            .count();
        assert!((on_hot as f64 / n as f64 - 0.99).abs() < 0.003, "{on_hot}");
        // keys == ops: uniform, hot keys get their share only.
        let mut c = KeyChooser::Hotset(Hotset::new(0.01, 0.01));
        let on_hot = (0..n)
            .filter(|_| hot.contains(&c.next(&mut rng, count)))
            .count();
        assert!((on_hot as f64 / n as f64 - 0.01).abs() < 0.003, "{on_hot}");
    }

    #[test]
    fn exponential_hotset_gives_the_shares_and_skews_inside_the_hot_set() {
        let count = 100_000u64;
        let h = Hotset {
            exponential: true,
            ..Hotset::new(0.01, 0.99)
        };
        assert!((h.exp_range() - 460.517).abs() < 0.01);
        let hot: std::collections::HashSet<u64> = (0..h.hot_count(count))
            .map(|r| h.key_of_rank(r, count))
            .collect();
        let hottest = h.key_of_rank(0, count);
        let mut c = KeyChooser::Hotset(h.clone());
        let mut rng = Rng::new(3);
        let n = 200_000;
        let keys: Vec<u64> = (0..n).map(|_| c.next(&mut rng, count)).collect();
        let share =
            |f: &dyn Fn(u64) -> bool| keys.iter().filter(|&&k| f(k)).count() as f64 / n as f64;
        assert!((share(&|k| hot.contains(&k)) - 0.99).abs() < 0.003);
        // Inside the hot set: rank 0 takes 1 - ln(count) / R of all accesses.
        let want = 1.0 - (count as f64).ln() / h.exp_range();
        assert!((share(&|k| k == hottest) - want).abs() < 0.005, "{want}");
        assert!(keys.iter().all(|&k| k < count));
        // Shares at or below the hot set's size: uniform.
        let mut c = KeyChooser::Hotset(Hotset {
            exponential: true,
            ..Hotset::new(0.01, 0.01)
        });
        let on_hot = (0..n)
            .filter(|_| hot.contains(&c.next(&mut rng, count)))
            .count();
        assert!((on_hot as f64 / n as f64 - 0.01).abs() < 0.003, "{on_hot}");
    }

    #[test]
    fn moving_hot_windows_move_each_phase_and_recur_after_a_cycle() {
        let count = 100_000;
        let mut m = MovingHot::new(0.02, 0.9, 1000);
        let mut rng = Rng::new(5);
        let in_windows = |w: &[(u64, u64)], k: u64| w.iter().any(|&(a, n)| a <= k && k < a + n);
        for phase in 0..MOVING_CYCLE + 1 {
            let w = m.windows(phase, count);
            assert_eq!(w.len(), MOVING_LANES as usize);
            assert_eq!(w.iter().map(|x| x.1).sum::<u64>(), 2000);
            let hits = (0..1000)
                .filter(|_| in_windows(&w, m.next(&mut rng, count)))
                .count();
            assert!((880..=930).contains(&hits), "phase {phase}: {hits}");
        }
        // Each position differs from the last, and the cycle comes back to the start.
        let at = |p| m.windows(p, count);
        assert!(at(0).iter().zip(at(1)).all(|(a, b)| b.0 > a.0));
        assert_eq!(at(0), at(MOVING_CYCLE));
        assert!(at(MOVING_CYCLE - 1).iter().all(|&(a, n)| a + n <= count));
    }

    #[test]
    fn every_chooser_stays_in_range() {
        for d in [
            Distribution::Uniform,
            Distribution::Zipfian,
            Distribution::ZipfianClustered,
            Distribution::Latest,
            Distribution::Sequential,
            Distribution::Hotspot,
            Distribution::Exponential,
            Distribution::Hotset,
            Distribution::HotsetExp,
            Distribution::MovingHot,
        ] {
            let mut c = KeyChooser::new(d, 0.99, 500, 100);
            let mut rng = Rng::new(11);
            for i in 0..5000u64 {
                let count = 500 + i / 50;
                assert!(c.next(&mut rng, count) < count, "{d:?}");
            }
        }
    }
}
