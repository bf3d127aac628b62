//! Key datasets: the integer shapes learned-index papers test against, or a user's own
//! keys from a file, and how a key index becomes key bytes.
//!
//! Loaded keys are indices [0, records) into a sorted table; inserted keys continue past
//! the largest key (at the average gap for integers), as YCSB appends new key numbers.

use super::key_file::{self, FileKeys};
use crate::rng::Rng;
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::str::FromStr;

/// Which keys a run loads. Written as its name (`linear`) or `file:PATH`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Dataset {
    /// 0, 1, 2, ...
    #[default]
    Sequential,
    /// Uniformly random 63-bit integers.
    Uniform,
    /// Evenly spaced with a random start and a random stride.
    Linear,
    /// Drawn from a normal distribution, sorted and de-duplicated.
    Normal,
    /// Dense linear segments; 1% of consecutive gaps are jumps.
    Seg1,
    /// Dense linear segments; 10% of consecutive gaps are jumps.
    Seg10,
    /// Synthetic, real-world-like (in the spirit of OpenStreetMap cell ids): clusters of
    /// very different sizes and densities, with log-normal gaps inside a cluster and large
    /// jumps between clusters. Generated, not real data.
    Clustered,
    /// A user's keys, one file (formats: `key_file`).
    File(PathBuf),
}

const NAMED: [(&str, Dataset); 7] = [
    ("sequential", Dataset::Sequential),
    ("uniform", Dataset::Uniform),
    ("linear", Dataset::Linear),
    ("normal", Dataset::Normal),
    ("seg1", Dataset::Seg1),
    ("seg10", Dataset::Seg10),
    ("clustered", Dataset::Clustered),
];

impl FromStr for Dataset {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(path) = s.strip_prefix("file:") {
            if path.is_empty() {
                return Err("file: needs a path (file:PATH)".into());
            }
            return Ok(Dataset::File(PathBuf::from(path)));
        }
        let lower = s.to_ascii_lowercase();
        NAMED
            .iter()
            .find(|(n, _)| *n == lower)
            .map(|(_, d)| d.clone())
            .ok_or_else(|| {
                let names: Vec<&str> = NAMED.iter().map(|(n, _)| *n).collect();
                format!(
                    "unknown dataset {s:?}: one of {}, or file:PATH",
                    names.join(", ")
                )
            })
    }
}

impl std::fmt::Display for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dataset::File(p) => write!(f, "file:{}", p.display()),
            d => {
                let name = NAMED.iter().find(|(_, n)| n == d).map_or("?", |(n, _)| n);
                f.write_str(name)
            }
        }
    }
}

impl TryFrom<String> for Dataset {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Dataset> for String {
    fn from(d: Dataset) -> String {
        d.to_string()
    }
}

/// Jumps in segN datasets are at least this large; dense strides are far smaller.
pub const SEG_JUMP_MIN: u64 = 1 << 20;
const SEG_JUMP_MAX: u64 = 1 << 30;
const SEG_STRIDE_MAX: u64 = 8;

/// The loaded keys in order.
#[derive(Clone, Debug)]
enum Table {
    /// Key = index (`sequential`).
    Identity,
    Ints(Vec<u64>),
    Bytes(Vec<Vec<u8>>),
}

#[derive(Clone, Debug)]
pub struct KeySpace {
    table: Table,
    records: u64,
    tail_start: u64,
    tail_step: u64,
    key_size: usize,
}

/// Bytes after a byte key's text that inserted keys number (big-endian), so they sort
/// after the largest loaded key.
const TAIL_SUFFIX: usize = 8;

impl KeySpace {
    pub fn new(dataset: &Dataset, records: u64, key_size: usize, seed: u64) -> Result<Self> {
        if key_size < 8 {
            bail!("--key-size must be at least 8 bytes (keys are big-endian u64s, padded)");
        }
        let mut rng = Rng::derive(seed, 0xDA7A);
        let table = match dataset {
            Dataset::File(path) => from_file(path, records, key_size, &mut rng)?,
            d => generate(d, records, &mut rng).map_or(Table::Identity, Table::Ints),
        };
        let (tail_start, tail_step) = match &table {
            Table::Identity => (records, 1),
            Table::Ints(t) if t.is_empty() => (0, 1),
            Table::Ints(t) => {
                let (first, last) = (t[0], t[t.len() - 1]);
                let step = ((last - first) / (t.len() as u64).max(2).saturating_sub(1)).max(1);
                (last.saturating_add(step), step)
            }
            Table::Bytes(_) => (1, 1),
        };
        Ok(KeySpace {
            table,
            records,
            tail_start,
            tail_step,
            key_size,
        })
    }

    pub fn key_size(&self) -> usize {
        self.key_size
    }

    /// The integer key for index `idx` (indices >= records are inserted keys). Byte keys
    /// give their first 8 bytes, big-endian (order-preserving, not one-to-one).
    pub fn int_key(&self, idx: u64) -> u64 {
        if idx >= self.records {
            return self
                .tail_start
                .saturating_add((idx - self.records).saturating_mul(self.tail_step));
        }
        match &self.table {
            Table::Identity => idx,
            Table::Ints(t) => t[idx as usize],
            Table::Bytes(t) => {
                let mut b = [0u8; 8];
                let k = &t[idx as usize];
                let n = k.len().min(8);
                b[..n].copy_from_slice(&k[..n]);
                u64::from_be_bytes(b)
            }
        }
    }

    /// Asks the CPU to fetch the table entry of `idx` into its caches, so that encoding
    /// the key of the next op does not wait on memory: with millions of records the table
    /// is far larger than the caches, and that miss would be timed as the engine's.
    pub fn prefetch(&self, idx: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let p: *const i8 = match &self.table {
                Table::Ints(t) => t
                    .get(idx as usize)
                    .map_or(std::ptr::null(), |e| (e as *const u64).cast()),
                Table::Bytes(t) => t
                    .get(idx as usize)
                    .map_or(std::ptr::null(), |e| e.as_ptr().cast()),
                Table::Identity => std::ptr::null(),
            };
            if !p.is_null() {
                // SAFETY: a prefetch is a hint; it reads nothing and never faults.
                unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = idx;
    }

    /// Writes the key for `idx` into `buf` (len = key_size): big-endian, zero padded after,
    /// so byte order equals integer order.
    /// Byte keys are zero padded, which keeps their order; an inserted key is the largest
    /// loaded key with its last 8 bytes numbering the insert.
    pub fn encode_into(&self, idx: u64, buf: &mut [u8]) {
        if let Table::Bytes(t) = &self.table {
            let (k, tail) = match idx.checked_sub(self.records) {
                None => (t[idx as usize].as_slice(), None),
                // `--records 0` loads none: inserts then number from the empty key.
                Some(i) => (t.last().map_or(&[][..], Vec::as_slice), Some(i + 1)),
            };
            buf[..k.len()].copy_from_slice(k);
            buf[k.len()..].fill(0);
            if let Some(n) = tail {
                let at = buf.len() - TAIL_SUFFIX;
                buf[at..].copy_from_slice(&n.to_be_bytes());
            }
            return;
        }
        buf[..8].copy_from_slice(&self.int_key(idx).to_be_bytes());
        buf[8..].fill(0);
    }

    pub fn key(&self, idx: u64) -> Vec<u8> {
        let mut v = vec![0; self.key_size];
        self.encode_into(idx, &mut v);
        v
    }
}

/// `records` of the file's keys (a seeded sample, sorted, when the file holds more).
fn from_file(
    path: &std::path::Path,
    records: u64,
    key_size: usize,
    rng: &mut Rng,
) -> Result<Table> {
    let keys = key_file::load(path)?;
    let n = keys.len();
    if records > n as u64 {
        bail!(
            "--records {records} but {} holds {n} distinct keys",
            path.display()
        );
    }
    let keys = if (records as usize) < n {
        let mut idx: Vec<usize> = (0..n).collect();
        rng.shuffle(&mut idx);
        idx.truncate(records as usize);
        idx.sort_unstable();
        keys.keep(&idx)
    } else {
        keys
    };
    Ok(match keys {
        FileKeys::Ints(v) => Table::Ints(v),
        FileKeys::Bytes(v) => {
            let longest = v.iter().map(Vec::len).max().unwrap_or(0);
            if key_size < longest + TAIL_SUFFIX {
                bail!(
                    "--key-size {key_size} is too small for {}: its longest key is {longest} \
                     bytes, and inserted keys take {TAIL_SUFFIX} more (use --key-size {})",
                    path.display(),
                    longest + TAIL_SUFFIX
                );
            }
            Table::Bytes(v)
        }
    })
}

/// Sorted unique keys of the dataset's shape; None means identity (sequential) or a file.
pub fn generate(dataset: &Dataset, n: u64, rng: &mut Rng) -> Option<Vec<u64>> {
    let n_us = n as usize;
    match dataset {
        Dataset::Sequential => None,
        Dataset::Uniform => Some(sample_unique(n_us, || rng.next_u64() >> 1)),
        Dataset::Linear => {
            let start = rng.below(1 << 32);
            let stride = rng.range_inclusive(2, 1 << 16);
            Some((0..n).map(|i| start + i * stride).collect())
        }
        Dataset::Normal => {
            let (mean, sd) = ((1u64 << 40) as f64, (1u64 << 36) as f64);
            Some(sample_unique(n_us, || {
                (mean + sd * rng.normal()).max(0.0) as u64
            }))
        }
        Dataset::Seg1 => Some(segmented(n_us, 1.0, rng)),
        Dataset::Seg10 => Some(segmented(n_us, 10.0, rng)),
        Dataset::Clustered => Some(clustered(n_us, rng)),
        Dataset::File(_) => None,
    }
}

/// Mean entries per cluster of the `clustered` dataset.
const CLUSTER_MEAN: f64 = 2000.0;

/// Clusters with log-normal sizes (sigma 1) and per-cluster base gaps of 1..=1024 scaled
/// by log-normal noise (sigma 1), joined by jumps of up to 2^36.
fn clustered(n: usize, rng: &mut Rng) -> Vec<u64> {
    let mut v = Vec::with_capacity(n);
    let mut k = rng.below(1 << 32);
    while v.len() < n {
        let size = ((CLUSTER_MEAN * (rng.normal() - 0.5).exp()).round() as usize).max(1);
        let base = rng.range_inclusive(1, 1024) as f64;
        k += rng.range_inclusive(SEG_JUMP_MIN, 1 << 36);
        for _ in 0..size.min(n - v.len()) {
            k += 1 + (base * rng.normal().exp()) as u64;
            v.push(k);
        }
    }
    v
}

fn sample_unique(n: usize, mut draw: impl FnMut() -> u64) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::with_capacity(n);
    while v.len() < n {
        let need = n - v.len();
        v.extend((0..need).map(|_| draw()));
        v.sort_unstable();
        v.dedup();
    }
    v
}

/// Dense linear runs joined by large jumps; exactly round(pct% of gaps) are jumps.
fn segmented(n: usize, pct: f64, rng: &mut Rng) -> Vec<u64> {
    if n == 0 {
        return Vec::new();
    }
    let gaps = n - 1;
    let jumps = ((gaps as f64) * pct / 100.0).round() as usize;
    let mut is_jump = vec![false; gaps];
    let mut placed = 0;
    while placed < jumps {
        let i = rng.below(gaps as u64) as usize;
        if !is_jump[i] {
            is_jump[i] = true;
            placed += 1;
        }
    }
    let mut stride = rng.range_inclusive(1, SEG_STRIDE_MAX);
    let mut k = rng.below(1 << 32);
    let mut v = Vec::with_capacity(n);
    v.push(k);
    for &jump in &is_jump {
        if jump {
            k += rng.range_inclusive(SEG_JUMP_MIN, SEG_JUMP_MAX);
            stride = rng.range_inclusive(1, SEG_STRIDE_MAX);
        } else {
            k += stride;
        }
        v.push(k);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(d: &Dataset, n: u64) -> Vec<u64> {
        let ks = KeySpace::new(d, n, 16, 77).unwrap();
        (0..n).map(|i| ks.int_key(i)).collect()
    }

    fn assert_sorted_unique(v: &[u64]) {
        assert!(v.windows(2).all(|w| w[0] < w[1]), "not strictly increasing");
    }

    #[test]
    fn every_dataset_is_sorted_unique_and_sized() {
        for d in [
            Dataset::Sequential,
            Dataset::Uniform,
            Dataset::Linear,
            Dataset::Normal,
            Dataset::Seg1,
            Dataset::Seg10,
            Dataset::Clustered,
        ] {
            let v = keys(&d, 20_000);
            assert_eq!(v.len(), 20_000, "{d:?}");
            assert_sorted_unique(&v);
        }
    }

    #[test]
    fn linear_is_evenly_spaced() {
        let v = keys(&Dataset::Linear, 10_000);
        let g = v[1] - v[0];
        assert!(g >= 2);
        assert!(v.windows(2).all(|w| w[1] - w[0] == g));
    }

    #[test]
    fn seg_jump_fraction_matches_name() {
        for (d, pct) in [(Dataset::Seg1, 0.01), (Dataset::Seg10, 0.10)] {
            let v = keys(&d, 100_000);
            let jumps = v.windows(2).filter(|w| w[1] - w[0] >= SEG_JUMP_MIN).count();
            let frac = jumps as f64 / (v.len() - 1) as f64;
            assert!((frac - pct).abs() < pct * 0.05, "{d:?}: {frac}");
        }
    }

    #[test]
    fn clustered_has_clusters_of_uneven_density() {
        let v = keys(&Dataset::Clustered, 100_000);
        let jumps = v.windows(2).filter(|w| w[1] - w[0] >= SEG_JUMP_MIN).count();
        // About 100k / 2000 * e^0 clusters (log-normal mean e^(-0.5 + 0.5) = 1).
        assert!((20..=120).contains(&jumps), "{jumps} clusters");
        let gaps: Vec<u64> = v.windows(2).map(|w| w[1] - w[0]).collect();
        let (lo, hi) = (gaps.iter().min().unwrap(), gaps.iter().max().unwrap());
        assert!(*lo < 100 && *hi >= SEG_JUMP_MIN, "{lo} {hi}");
    }

    #[test]
    fn normal_is_bell_shaped() {
        let v = keys(&Dataset::Normal, 50_000);
        let mean = (1u64 << 40) as f64;
        let sd = (1u64 << 36) as f64;
        let within1 = v
            .iter()
            .filter(|&&k| ((k as f64) - mean).abs() < sd)
            .count() as f64
            / v.len() as f64;
        assert!((within1 - 0.6827).abs() < 0.02, "{within1}");
    }

    #[test]
    fn encoding_preserves_order_and_inserts_extend_past_the_end() {
        let ks = KeySpace::new(&Dataset::Uniform, 1000, 16, 1).unwrap();
        let a = ks.key(10);
        let b = ks.key(11);
        assert_eq!(a.len(), 16);
        assert!(a < b);
        assert!(ks.key(999) < ks.key(1000) && ks.key(1000) < ks.key(1001));
        assert!(KeySpace::new(&Dataset::Uniform, 10, 4, 1).is_err());
    }

    fn key_file(text: &str) -> (tempfile::NamedTempFile, Dataset) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
        let d = Dataset::File(f.path().to_path_buf());
        (f, d)
    }

    #[test]
    fn names_and_files_parse_print_and_serialize_back() {
        for s in ["sequential", "seg10", "clustered", "file:keys/cities.keys"] {
            let d: Dataset = s.parse().unwrap();
            assert_eq!(d.to_string(), s);
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(json, format!("\"{s}\""));
            assert_eq!(serde_json::from_str::<Dataset>(&json).unwrap(), d);
        }
        assert_eq!("Linear".parse::<Dataset>().unwrap(), Dataset::Linear);
        assert!("file:".parse::<Dataset>().is_err());
        assert!("zipf".parse::<Dataset>().unwrap_err().contains("file:PATH"));
    }

    #[test]
    fn integer_files_load_in_order_and_insert_past_the_end() {
        let (_f, d) = key_file("500\n100\n300\n");
        let ks = KeySpace::new(&d, 3, 16, 1).unwrap();
        assert_eq!(
            (0..5).map(|i| ks.int_key(i)).collect::<Vec<_>>(),
            [100, 300, 500, 700, 900]
        );
        assert!(ks.key(2) < ks.key(3));
        // Fewer records: a sample, still sorted; more than the file holds: an error.
        let ks = KeySpace::new(&d, 2, 16, 1).unwrap();
        assert!(ks.int_key(0) < ks.int_key(1) && ks.int_key(1) <= 500);
        let e = KeySpace::new(&d, 4, 16, 1).unwrap_err().to_string();
        assert!(e.contains("holds 3 distinct keys"), "{e}");
    }

    #[test]
    fn byte_files_pad_keys_and_inserts_sort_after_every_loaded_key() {
        let (_f, d) = key_file("zebra\napple\nmango\nzebr\n");
        let e = KeySpace::new(&d, 4, 12, 1).unwrap_err().to_string();
        assert!(e.contains("--key-size 13"), "{e}");
        let ks = KeySpace::new(&d, 4, 13, 1).unwrap();
        let keys: Vec<Vec<u8>> = (0..7).map(|i| ks.key(i)).collect();
        assert_eq!(&keys[0][..6], b"apple\0");
        assert_eq!(keys[3], b"zebra\0\0\0\0\0\0\0\0");
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        assert!(keys.iter().all(|k| k.len() == 13));
    }
}
