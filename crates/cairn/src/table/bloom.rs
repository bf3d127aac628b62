//! The table's bloom filter over user keys, in one of two layouts.
//!
//! - **Classic** (LevelDB's): the bit array, then one byte holding the number of probes
//!   `k` (1..=30). Probes use double hashing of one xxh3 hash: `h1 = xxh3(key)`,
//!   `h2 = mix(h1) | 1`, bit `i = (h1 + i * h2) mod m`. A key's `k` bits lie anywhere in
//!   the array: up to `k` cache misses and `k` divisions per probe of a present key.
//! - **Cache-local** (table format version 4; the layout of RocksDB's newer filters): the
//!   bits are lines of 512 (one 64-byte cache line each); `h1` picks a key's line
//!   (multiply-shift, no division) and all its `k` bits lie in that line, drawn 9 bits at a
//!   time from `mix(h1)` and its remixes. One cache miss per probe, for a slightly higher
//!   false-positive rate at equal bits per key. Layout: the lines, then `k`, then
//!   `LOCAL_MARKER`.

use xxhash_rust::xxh3::xxh3_64;

use crate::{Error, Result};

/// Smallest filter, so that tiny tables do not get a useless few-bit filter.
const MIN_BITS: usize = 64;
/// Bits per key above this are clamped: beyond it the false-positive rate is already ~0.
const MAX_BITS_PER_KEY: f64 = 100.0;
/// Bytes of one line of a cache-local filter.
const LINE_BYTES: usize = 64;
/// Last byte of a cache-local filter block (a classic block ends in `k` <= 30 instead).
const LOCAL_MARKER: u8 = 0xC1;

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
pub struct BloomBuilder {
    bits_per_key: f64,
    cache_local: bool,
    /// The keys' hashes in chunks of `HASH_CHUNK` (as RocksDB keeps them in a deque): a
    /// vector doubling to a table's 200k keys reallocates up to 2 MiB and leaves the blocks
    /// it outgrew free in the background thread's arena.
    hashes: Vec<Vec<u64>>,
}

/// Hashes per chunk (32 KiB: below glibc's mmap threshold, reused from job to job).
const HASH_CHUNK: usize = 4096;

impl BloomBuilder {
    /// A builder of a filter in the classic layout, or the cache-local one.
    pub fn new(bits_per_key: f64, cache_local: bool) -> Self {
        BloomBuilder {
            bits_per_key: bits_per_key.min(MAX_BITS_PER_KEY),
            cache_local,
            hashes: Vec::new(),
        }
    }

    /// Adds a user key (callers skip repeats of the same user key).
    pub fn add(&mut self, user_key: &[u8]) {
        match self.hashes.last_mut() {
            Some(c) if c.len() < HASH_CHUNK => c.push(bloom_hash(user_key)),
            _ => {
                let mut c = Vec::with_capacity(HASH_CHUNK);
                c.push(bloom_hash(user_key));
                self.hashes.push(c);
            }
        }
    }

    /// Whether the filter is written in the cache-local layout.
    pub fn is_cache_local(&self) -> bool {
        self.cache_local
    }

    /// Encodes the filter block.
    pub fn finish(&self) -> Vec<u8> {
        let keys: usize = self.hashes.iter().map(Vec::len).sum();
        let bits = ((keys as f64 * self.bits_per_key).ceil() as usize).max(MIN_BITS);
        let k = num_probes(self.bits_per_key);
        if self.cache_local {
            let lines = bits.div_ceil(LINE_BYTES * 8);
            let mut out = vec![0u8; lines * LINE_BYTES + 2];
            for &h in self.hashes.iter().flatten() {
                let line = line_of(h, lines) * LINE_BYTES;
                for bit in local_probes(h, k) {
                    out[line + bit / 8] |= 1 << (bit % 8);
                }
            }
            out[lines * LINE_BYTES] = k as u8;
            out[lines * LINE_BYTES + 1] = LOCAL_MARKER;
            return out;
        }
        let bytes = bits.div_ceil(8);
        let m = (bytes * 8) as u64;
        let mut out = vec![0u8; bytes + 1];
        for &h in self.hashes.iter().flatten() {
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

/// The line of hash `h` among `lines` (multiply-shift: uniform, no division).
fn line_of(h: u64, lines: usize) -> usize {
    ((h as u128 * lines as u128) >> 64) as usize
}

/// The `k` bits (0..512) of hash `h` inside its line: 9 bits at a time from `mix(h)`,
/// remixed every 7 probes.
fn local_probes(h: u64, k: u32) -> impl Iterator<Item = usize> {
    let mut g = mix(h);
    (0..k).map(move |i| {
        if i > 0 && i % 7 == 0 {
            g = mix(g ^ u64::from(i));
        }
        let bit = (g & 511) as usize;
        g >>= 9;
        bit
    })
}

/// One cache line of a cache-local filter, aligned so that a probe touches one line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Line([u64; 8]);

/// A filter's bits, in its layout.
#[derive(Debug)]
enum Bits {
    Classic(Vec<u8>),
    Local(Vec<Line>),
}

/// A decoded filter, held in memory by its table (or in the block cache).
#[derive(Debug)]
pub struct BloomFilter {
    bits: Bits,
    k: u32,
}

impl BloomFilter {
    /// Decodes a filter block of either layout; `file` names the file in errors.
    pub fn decode(mut contents: Vec<u8>, file: &str) -> Result<BloomFilter> {
        let malformed = || Error::corruption(file, "malformed filter block");
        if contents.last() == Some(&LOCAL_MARKER) {
            contents.pop();
            let k = match contents.pop() {
                Some(k @ 1..=30) => k as u32,
                _ => return Err(malformed()),
            };
            if contents.is_empty() || !contents.len().is_multiple_of(LINE_BYTES) {
                return Err(malformed());
            }
            // Copied into aligned lines once, when the filter is loaded.
            let lines = contents
                .chunks_exact(LINE_BYTES)
                .map(|c| {
                    Line(std::array::from_fn(|w| {
                        u64::from_le_bytes(c[w * 8..w * 8 + 8].try_into().expect("8 bytes"))
                    }))
                })
                .collect();
            return Ok(BloomFilter {
                bits: Bits::Local(lines),
                k,
            });
        }
        let k = match contents.pop() {
            Some(k @ 1..=30) if !contents.is_empty() => k as u32,
            _ => return Err(malformed()),
        };
        Ok(BloomFilter {
            bits: Bits::Classic(contents),
            k,
        })
    }

    /// False if `user_key` is certainly absent.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(bloom_hash(user_key))
    }

    /// Same as [`may_contain`](Self::may_contain) with a precomputed [`bloom_hash`].
    pub fn may_contain_hash(&self, h: u64) -> bool {
        match &self.bits {
            Bits::Classic(bits) => {
                let m = bits.len() as u64 * 8;
                probes(h, self.k, m).all(|bit| bits[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
            }
            Bits::Local(lines) => {
                let line = &lines[line_of(h, lines.len())].0;
                // Byte `b` of the line is byte `b % 8` of word `b / 8` (little-endian), so
                // bit `i` of the block is bit `i % 64` of word `i / 64`.
                local_probes(h, self.k).all(|bit| line[bit / 64] & (1 << (bit % 64)) != 0)
            }
        }
    }

    /// Number of probes.
    pub fn num_probes(&self) -> u32 {
        self.k
    }

    /// Whether the filter is in the cache-local layout.
    pub fn is_cache_local(&self) -> bool {
        matches!(self.bits, Bits::Local(_))
    }

    /// Bytes held.
    pub fn size(&self) -> usize {
        match &self.bits {
            Bits::Classic(b) => b.len(),
            Bits::Local(l) => l.len() * LINE_BYTES,
        }
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

    /// False-positive rate of a filter of `n` keys at `bits` bits per key; panics on a
    /// false negative.
    fn fp_rate(bits: f64, cache_local: bool, n: usize) -> f64 {
        let mut b = BloomBuilder::new(bits, cache_local);
        for i in 0..n {
            b.add(format!("present-{i}").as_bytes());
        }
        let f = BloomFilter::decode(b.finish(), "t").unwrap();
        assert_eq!(f.num_probes(), num_probes(bits));
        assert_eq!(f.is_cache_local(), cache_local);
        for i in 0..n {
            assert!(
                f.may_contain(format!("present-{i}").as_bytes()),
                "false negative {i} (bits {bits}, local {cache_local})"
            );
        }
        let fp = (0..n)
            .filter(|i| f.may_contain(format!("absent-{i}").as_bytes()))
            .count();
        fp as f64 / n as f64
    }

    #[test]
    fn no_false_negatives_and_low_fp_rate() {
        // Theory at 10 bits per key and 7 probes: 0.82% spread over the array; a little
        // more when every key's bits share one 512-bit line.
        let classic = fp_rate(10.0, false, 100_000);
        assert!((0.004..0.012).contains(&classic), "classic {classic}");
        let local = fp_rate(10.0, true, 100_000);
        assert!((0.004..0.016).contains(&local), "cache-local {local}");
        // More probes than one mix has 9-bit draws for (k = 21): remixed, still sound.
        let dense = fp_rate(30.0, true, 20_000);
        assert!(dense < 0.001, "cache-local at 30 bits per key {dense}");
        // Few keys: one line of the minimum size, nearly empty.
        let few = fp_rate(10.0, true, 3);
        assert!(few < 0.01, "cache-local with 3 keys {few}");
    }

    #[test]
    fn cache_local_bits_stay_in_one_line() {
        let mut b = BloomBuilder::new(10.0, true);
        b.add(b"only");
        let block = b.finish();
        assert_eq!(block.len() % LINE_BYTES, 2);
        let lines = (block.len() - 2) / LINE_BYTES;
        let set: Vec<usize> = (0..lines)
            .filter(|l| {
                block[l * LINE_BYTES..(l + 1) * LINE_BYTES]
                    .iter()
                    .any(|&x| x != 0)
            })
            .collect();
        assert_eq!(set, vec![line_of(bloom_hash(b"only"), lines)]);
        let ones: u32 = block[..lines * LINE_BYTES]
            .iter()
            .map(|x| x.count_ones())
            .sum();
        assert!((1..=7).contains(&ones), "{ones} bits set");
    }

    #[test]
    fn empty_filter_rejects_everything() {
        for local in [false, true] {
            let f = BloomFilter::decode(BloomBuilder::new(10.0, local).finish(), "t").unwrap();
            assert!(!f.may_contain(b"x"));
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        assert!(BloomFilter::decode(vec![], "t").is_err());
        assert!(BloomFilter::decode(vec![5], "t").is_err());
        assert!(BloomFilter::decode(vec![0xff, 31], "t").is_err());
        // Cache-local blocks: no lines, a partial line, a bad k.
        assert!(BloomFilter::decode(vec![7, LOCAL_MARKER], "t").is_err());
        let mut bad = vec![0u8; 65];
        bad.extend([7, LOCAL_MARKER]);
        assert!(BloomFilter::decode(bad, "t").is_err());
        let mut bad = vec![0u8; 63];
        bad.extend([7, LOCAL_MARKER]);
        assert!(BloomFilter::decode(bad, "t").is_err());
        let mut bad = vec![0u8; 64];
        bad.extend([0, LOCAL_MARKER]);
        assert!(BloomFilter::decode(bad, "t").is_err());
        for _ in 0..10_000 {
            let n = rng.random_range(0..200);
            let mut data: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            if rng.random_bool(0.5) {
                data.push(LOCAL_MARKER);
            }
            if let Ok(f) = BloomFilter::decode(data, "t") {
                let _ = f.may_contain(b"k");
            }
        }
    }
}
