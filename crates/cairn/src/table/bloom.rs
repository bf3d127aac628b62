//! The table's bloom filter over user keys.
//!
//! Block layout: the bit array, then one byte holding the number of probes `k`. Probes use
//! double hashing of one xxh3 hash: `h1 = xxh3(key)`, `h2 = mix(h1) | 1`, bit
//! `i = (h1 + i * h2) mod m`.

use xxhash_rust::xxh3::xxh3_64;

use crate::{Error, Result};

/// Smallest filter, so that tiny tables do not get a useless few-bit filter.
const MIN_BITS: usize = 64;
/// Bits per key above this are clamped: beyond it the false-positive rate is already ~0.
const MAX_BITS_PER_KEY: f64 = 100.0;

/// The hash of a user key that the filter is built from.
pub fn bloom_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

/// A second, roughly independent hash derived from the first (splitmix64 finaliser).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Number of probes for a bits-per-key budget: `round(bits_per_key * ln 2)` in 1..=30.
pub fn num_probes(bits_per_key: f64) -> u32 {
    ((bits_per_key * std::f64::consts::LN_2).round()).clamp(1.0, 30.0) as u32
}

/// True if `bits_per_key` asks for a filter at all.
pub(crate) fn filter_enabled(bits_per_key: f64) -> bool {
    bits_per_key.is_finite() && bits_per_key > 0.0
}

/// Collects key hashes while a table is built.
pub(crate) struct BloomBuilder {
    bits_per_key: f64,
    hashes: Vec<u64>,
}

impl BloomBuilder {
    pub(crate) fn new(bits_per_key: f64) -> Self {
        BloomBuilder {
            bits_per_key: bits_per_key.min(MAX_BITS_PER_KEY),
            hashes: Vec::new(),
        }
    }

    /// Adds a user key (callers skip repeats of the same user key).
    pub(crate) fn add(&mut self, user_key: &[u8]) {
        self.hashes.push(bloom_hash(user_key));
    }

    /// Encodes the filter block.
    pub(crate) fn finish(&self) -> Vec<u8> {
        let bits = ((self.hashes.len() as f64 * self.bits_per_key).ceil() as usize).max(MIN_BITS);
        let bytes = bits.div_ceil(8);
        let m = (bytes * 8) as u64;
        let k = num_probes(self.bits_per_key);
        let mut out = vec![0u8; bytes + 1];
        for &h in &self.hashes {
            for bit in probes(h, k, m) {
                out[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        out[bytes] = k as u8;
        out
    }
}

fn probes(h: u64, k: u32, m: u64) -> impl Iterator<Item = u64> {
    let delta = mix(h) | 1;
    (0..k as u64).map(move |i| h.wrapping_add(i.wrapping_mul(delta)) % m)
}

/// A decoded filter, held in memory by its table (or in the block cache).
#[derive(Debug)]
pub struct BloomFilter {
    bits: Vec<u8>,
    k: u32,
}

impl BloomFilter {
    /// Decodes a filter block; `file` names the file in errors.
    pub fn decode(mut contents: Vec<u8>, file: &str) -> Result<BloomFilter> {
        let k = match contents.pop() {
            Some(k @ 1..=30) if !contents.is_empty() => k as u32,
            _ => {
                return Err(Error::corruption(file, "malformed filter block"));
            }
        };
        Ok(BloomFilter { bits: contents, k })
    }

    /// False if `user_key` is certainly absent.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(bloom_hash(user_key))
    }

    /// Same as [`may_contain`](Self::may_contain) with a precomputed [`bloom_hash`].
    pub fn may_contain_hash(&self, h: u64) -> bool {
        let m = self.bits.len() as u64 * 8;
        probes(h, self.k, m).all(|bit| self.bits[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
    }

    /// Number of probes.
    pub fn num_probes(&self) -> u32 {
        self.k
    }

    /// Bytes held.
    pub fn size(&self) -> usize {
        self.bits.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn probes_follow_bits_per_key() {
        assert_eq!(num_probes(10.0), 7);
        assert_eq!(num_probes(0.1), 1);
        assert_eq!(num_probes(1000.0), 30);
        assert!(!filter_enabled(0.0));
        assert!(!filter_enabled(f64::NAN));
        assert!(filter_enabled(0.5));
    }

    #[test]
    fn no_false_negatives_and_low_fp_rate() {
        let n = 100_000;
        let mut b = BloomBuilder::new(10.0);
        for i in 0..n {
            b.add(format!("present-{i}").as_bytes());
        }
        let f = BloomFilter::decode(b.finish(), "t").unwrap();
        assert_eq!(f.num_probes(), 7);
        for i in 0..n {
            assert!(
                f.may_contain(format!("present-{i}").as_bytes()),
                "false negative {i}"
            );
        }
        let fp = (0..n)
            .filter(|i| f.may_contain(format!("absent-{i}").as_bytes()))
            .count();
        let rate = fp as f64 / n as f64;
        assert!(rate < 0.02, "false-positive rate {rate}");
        assert!(rate > 0.0001, "suspiciously low false-positive rate {rate}");
    }

    #[test]
    fn empty_filter_rejects_everything() {
        let f = BloomFilter::decode(BloomBuilder::new(10.0).finish(), "t").unwrap();
        assert!(!f.may_contain(b"x"));
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        assert!(BloomFilter::decode(vec![], "t").is_err());
        assert!(BloomFilter::decode(vec![5], "t").is_err());
        assert!(BloomFilter::decode(vec![0xff, 31], "t").is_err());
        for _ in 0..10_000 {
            let n = rng.random_range(0..40);
            let data: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            if let Ok(f) = BloomFilter::decode(data, "t") {
                let _ = f.may_contain(b"k");
            }
        }
    }
}
