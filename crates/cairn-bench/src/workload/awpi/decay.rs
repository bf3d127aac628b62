//! The control AWPI generator (`--salsm-generator decay`): popularity that decays after the
//! insert, exponentially with a long-tailed lifetime per class, a few records that stay hot,
//! "gap" classes whose accesses are 1.0-1.05 days apart, and revivals independent of
//! anything observable. Kept to show what the lifecycle generator changes: here recency is
//! all there is to learn, and the gap classes never make a tau-event.

use super::{exp, finish, poisson, AwpiKind, AwpiOp, AwpiSpec, AwpiStream, Targets, DAY_MS};
use crate::rng::Rng;
use anyhow::Result;

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

/// [`generate`] with explicit profile parameters (tuning).
pub fn generate_with(spec: &AwpiSpec, p: &AwpiProfile) -> Result<AwpiStream> {
    let p = *p;
    spec.validate()?;
    let n = spec.records;
    let end = spec.end_ms();
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
                col: 0,
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
            col: 0,
        });
        if krng.next_f64() < p.scan_share {
            ops.push(AwpiOp::scan(t, rec, &mut krng));
        }
    }
    Ok(finish(
        spec,
        Targets::of(p.name, p.table2_rw, p.table2_censored),
        ops,
        insert_ms,
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::awpi::*;

    fn spec(profile: &str, records: u64, seed: u64) -> AwpiSpec {
        AwpiSpec {
            profile: profile.into(),
            generator: "decay".into(),
            ablate: String::new(),
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
