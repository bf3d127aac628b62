//! YCSB's skewed generators: ZipfianGenerator (Gray et al., "Quickly Generating
//! Billion-Record Synthetic Databases", SIGMOD 1994), its FNV-scrambled variant, and
//! "latest". Ported from YCSB's Java so request streams match what papers report.

use crate::rng::Rng;

/// YCSB's default zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// YCSB's ScrambledZipfianGenerator draws over this many items...
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// ...with this precomputed zeta(10^10, 0.99), so construction is instant.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// zeta(n, theta) continued from `sum` = zeta(st, theta): YCSB grows it incrementally
/// as inserts raise the item count instead of recomputing from 1.
pub fn zeta_from(st: u64, n: u64, theta: f64, sum: f64) -> f64 {
    let mut s = sum;
    for i in st..n {
        s += 1.0 / ((i + 1) as f64).powf(theta);
    }
    s
}

pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_from(0, n, theta, 0.0)
}

/// Draws from [0, items) with P(i) ∝ 1/(i+1)^theta; item 0 is the most popular.
#[derive(Clone, Debug)]
pub struct Zipfian {
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    pub fn new(items: u64, theta: f64) -> Self {
        Self::with_zetan(items, theta, zeta(items, theta))
    }

    pub fn with_zetan(items: u64, theta: f64, zetan: f64) -> Self {
        assert!(items >= 1, "zipfian needs at least one item");
        assert!(
            theta > 0.0 && theta != 1.0,
            "zipfian theta must be > 0 and != 1"
        );
        let zeta2theta = zeta(2, theta);
        let mut z = Zipfian {
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: 0.0,
            count_for_zeta: items,
        };
        z.eta = z.eta_for(items);
        z
    }

    fn eta_for(&self, items: u64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan)
    }

    pub fn items(&self) -> u64 {
        self.count_for_zeta
    }

    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    /// Next value in [0, item_count). Growing `item_count` extends zeta incrementally;
    /// shrinking recomputes it (rare: YCSB forbids it by default).
    pub fn next(&mut self, rng: &mut Rng, item_count: u64) -> u64 {
        if item_count != self.count_for_zeta {
            self.zetan = if item_count > self.count_for_zeta {
                zeta_from(self.count_for_zeta, item_count, self.theta, self.zetan)
            } else {
                zeta(item_count, self.theta)
            };
            self.count_for_zeta = item_count;
            self.eta = self.eta_for(item_count);
        }
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(item_count - 1);
        }
        let v = (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        v.min(item_count - 1)
    }
}

/// YCSB's 64-bit FNV-1 over the 8 little-end octets of `val`, absolute value as in Java.
pub fn fnv_hash64(val: u64) -> u64 {
    const OFFSET: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let mut v = val;
    let mut h = OFFSET;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(PRIME);
        v >>= 8;
    }
    (h as i64).unsigned_abs()
}

/// Zipfian popularity spread over the key space by hashing, so hot keys are not
/// clustered at the low end (YCSB's ScrambledZipfianGenerator).
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    gen: Zipfian,
    items: u64,
    /// true when drawing over YCSB's fixed 10^10-item space (theta = 0.99).
    fixed_space: bool,
}

impl ScrambledZipfian {
    pub fn new(items: u64, theta: f64) -> Self {
        if (theta - ZIPFIAN_CONSTANT).abs() < 1e-12 {
            ScrambledZipfian {
                gen: Zipfian::with_zetan(SCRAMBLED_ITEM_COUNT, theta, SCRAMBLED_ZETAN),
                items,
                fixed_space: true,
            }
        } else {
            // YCSB would sum zeta over 10^10 items here (minutes); over `items` the
            // hashed distribution has the same shape, and it is computed once.
            ScrambledZipfian {
                gen: Zipfian::new(items, theta),
                items,
                fixed_space: false,
            }
        }
    }

    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let space = if self.fixed_space {
            SCRAMBLED_ITEM_COUNT
        } else {
            self.items
        };
        let raw = self.gen.next(rng, space);
        fnv_hash64(raw) % self.items
    }
}

/// YCSB's SkewedLatestGenerator: the most recently inserted keys are the most popular.
#[derive(Clone, Debug)]
pub struct Latest {
    gen: Zipfian,
}

impl Latest {
    pub fn new(initial_count: u64, theta: f64) -> Self {
        Latest {
            gen: Zipfian::new(initial_count.max(1), theta),
        }
    }

    /// Index in [0, count): count-1 is the newest key.
    pub fn next(&mut self, rng: &mut Rng, count: u64) -> u64 {
        let count = count.max(1);
        count - 1 - self.gen.next(rng, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipfian_head_matches_theory() {
        let n = 1000;
        let theta = ZIPFIAN_CONSTANT;
        let mut z = Zipfian::new(n, theta);
        let mut rng = Rng::new(42);
        let draws = 400_000;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            counts[z.next(&mut rng, n) as usize] += 1;
        }
        let zn = zeta(n, theta);
        let theory = |i: usize| 1.0 / ((i + 1) as f64).powf(theta) / zn;
        // Gray's method is exact for the two most popular items...
        for (i, &c) in counts.iter().enumerate().take(2) {
            let got = c as f64 / draws as f64;
            assert!(
                (got - theory(i)).abs() / theory(i) < 0.05,
                "item {i}: got {got:.4}, expected {:.4}",
                theory(i)
            );
        }
        // ...and approximates the rest: the head's total mass stays close to theory.
        let head: f64 = counts[..100].iter().sum::<u64>() as f64 / draws as f64;
        let head_theory: f64 = (0..100).map(theory).sum();
        assert!(
            (head - head_theory).abs() / head_theory < 0.05,
            "top-100 mass {head} vs {head_theory}"
        );
        // Popularity is monotone in rank over the head.
        assert!(counts[0] > counts[1] && counts[1] > counts[2] && counts[2] > counts[9]);
    }

    #[test]
    fn incremental_zeta_equals_full_recompute() {
        let a = zeta_from(1000, 5000, 0.99, zeta(1000, 0.99));
        let b = zeta(5000, 0.99);
        assert!((a - b).abs() < 1e-9);
        let mut z = Zipfian::new(1000, 0.99);
        let mut rng = Rng::new(1);
        z.next(&mut rng, 5000);
        assert!((z.zetan() - b).abs() < 1e-9);
    }

    #[test]
    fn scrambled_top_item_frequency_is_one_over_zetan() {
        let items = 100_000;
        let mut s = ScrambledZipfian::new(items, ZIPFIAN_CONSTANT);
        let mut rng = Rng::new(9);
        let draws = 300_000;
        let mut counts = std::collections::HashMap::new();
        for _ in 0..draws {
            let v = s.next(&mut rng);
            assert!(v < items);
            *counts.entry(v).or_insert(0u64) += 1;
        }
        let top = *counts.values().max().unwrap() as f64 / draws as f64;
        let expect = 1.0 / SCRAMBLED_ZETAN;
        assert!(
            (top - expect).abs() / expect < 0.10,
            "top {top}, expected {expect}"
        );
        // The hot key is not simply key 0: scrambling moved it.
        let hottest = counts.iter().max_by_key(|(_, &c)| c).unwrap().0;
        assert_eq!(*hottest, fnv_hash64(0) % items);
    }

    #[test]
    fn latest_prefers_newest() {
        let mut l = Latest::new(1000, ZIPFIAN_CONSTANT);
        let mut rng = Rng::new(3);
        let newest = (0..10_000)
            .filter(|_| l.next(&mut rng, 1000) == 999)
            .count();
        assert!(newest > 10_000 / 10, "newest drawn only {newest} times");
        // Growing the count moves the hot spot to the new newest key.
        let newest = (0..10_000)
            .filter(|_| l.next(&mut rng, 2000) == 1999)
            .count();
        assert!(newest > 10_000 / 10);
    }
}
