//! The cold-key set SA-LSM's external service writes and the engine loads (`CAIRNCLD`,
//! layout in `docs/design/formats/sa-lsm.md`): whole keys, strictly ascending, so membership is
//! exact (no false positives) and a binary search answers it.

use std::path::Path;

use crate::ids::CfId;
use crate::storage::{FileKind, StorageEnv};
use crate::{Error, Result};

/// File magic.
pub const COLD_SET_MAGIC: &[u8; 8] = b"CAIRNCLD";
/// Format version written and read.
pub const COLD_SET_VERSION: u32 = 1;

/// A loaded cold-key set.
#[derive(Clone, Debug, PartialEq)]
pub struct ColdSet {
    /// Column family the set is for.
    pub cf_id: CfId,
    /// When the service wrote it (trace clock).
    pub created_ms: u64,
    /// End of the trace the prediction was made from.
    pub trace_end_ms: u64,
    /// Time-to-event threshold of Algorithm 3 (ms), or the budget's equivalent.
    pub alpha: f64,
    /// The method that chose the keys (`rsf`, `gbdt`, `lru`, ...).
    pub method: String,
    /// Cold keys, strictly ascending.
    keys: Vec<Vec<u8>>,
}

impl ColdSet {
    /// A set of `keys` (sorted and deduplicated here).
    pub fn new(
        cf_id: CfId,
        trace_end_ms: u64,
        alpha: f64,
        method: &str,
        mut keys: Vec<Vec<u8>>,
    ) -> Self {
        keys.sort_unstable();
        keys.dedup();
        ColdSet {
            cf_id,
            created_ms: trace_end_ms,
            trace_end_ms,
            alpha,
            method: method.to_string(),
            keys,
        }
    }

    /// True if `key` is in the set.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.keys
            .binary_search_by(|k| k.as_slice().cmp(key))
            .is_ok()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when the set is empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The keys, ascending.
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.keys
    }

    /// Encodes the set.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(COLD_SET_MAGIC);
        for v in [COLD_SET_VERSION, self.cf_id.get()] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        for v in [self.created_ms, self.trace_end_ms] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&self.alpha.to_le_bytes());
        b.extend_from_slice(&(self.method.len() as u32).to_le_bytes());
        b.extend_from_slice(self.method.as_bytes());
        b.extend_from_slice(&(self.keys.len() as u64).to_le_bytes());
        for k in &self.keys {
            b.extend_from_slice(&(k.len() as u32).to_le_bytes());
            b.extend_from_slice(k);
        }
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a set; every malformation is a corruption error.
    pub fn decode(b: &[u8], file: &str) -> Result<ColdSet> {
        let bad = |d: &str| Error::corruption(file, format!("cold-key set: {d}"));
        if b.len() < 8 + 4 + 4 + 8 + 8 + 8 + 4 + 8 + 4 {
            return Err(bad("too short"));
        }
        if &b[..8] != COLD_SET_MAGIC {
            return Err(bad("bad magic"));
        }
        let body_len = b.len() - 4;
        let stored = u32::from_le_bytes(b[body_len..].try_into().expect("4 bytes"));
        if crc32c::crc32c(&b[..body_len]) != stored {
            return Err(bad("checksum mismatch"));
        }
        let body = &b[..body_len];
        let mut pos = 8usize;
        let mut take = |n: usize| -> Result<&[u8]> {
            let end = pos.checked_add(n).ok_or_else(|| bad("truncated"))?;
            let s = body.get(pos..end).ok_or_else(|| bad("truncated"))?;
            pos = end;
            Ok(s)
        };
        let u32v = |s: &[u8]| u32::from_le_bytes(s.try_into().expect("4 bytes"));
        let u64v = |s: &[u8]| u64::from_le_bytes(s.try_into().expect("8 bytes"));
        let version = u32v(take(4)?);
        if version != COLD_SET_VERSION {
            return Err(Error::UnsupportedVersion {
                file: file.into(),
                found: version,
                supported: COLD_SET_VERSION,
            });
        }
        let cf_id = CfId::new(u32v(take(4)?));
        let created_ms = u64v(take(8)?);
        let trace_end_ms = u64v(take(8)?);
        let alpha = f64::from_bits(u64v(take(8)?));
        let mlen = u32v(take(4)?) as usize;
        let method = std::str::from_utf8(take(mlen)?)
            .map_err(|_| bad("method name is not UTF-8"))?
            .to_string();
        let n = u64v(take(8)?);
        if n > (body_len / 4) as u64 {
            return Err(bad("key count does not fit the file"));
        }
        let mut keys: Vec<Vec<u8>> = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let klen = u32v(take(4)?) as usize;
            let k = take(klen)?.to_vec();
            if keys.last().is_some_and(|p| *p >= k) {
                return Err(bad("keys not strictly ascending"));
            }
            keys.push(k);
        }
        if pos != body_len {
            return Err(bad("bytes after the last key"));
        }
        Ok(ColdSet {
            cf_id,
            created_ms,
            trace_end_ms,
            alpha,
            method,
            keys,
        })
    }

    /// Reads and checks a set file.
    pub fn read(path: &Path) -> Result<ColdSet> {
        let b = std::fs::read(path).map_err(|e| Error::io(path.display().to_string(), e))?;
        ColdSet::decode(&b, &path.display().to_string())
    }

    /// Writes the set atomically (temporary name, sync, rename).
    pub fn write(&self, env: &StorageEnv, path: &Path) -> Result<()> {
        let path = match path.parent() {
            Some(p) if p.as_os_str().is_empty() => Path::new(".").join(path),
            _ => path.to_path_buf(),
        };
        env.write_atomic(&path, FileKind::Other, &self.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ColdSet {
        ColdSet::new(
            CfId::new(3),
            1_000,
            2.5e6,
            "rsf",
            vec![b"b".to_vec(), b"a".to_vec(), b"ab".to_vec(), b"a".to_vec()],
        )
    }

    #[test]
    fn round_trip_and_membership() {
        let s = sample();
        assert_eq!(s.len(), 3);
        let d = ColdSet::decode(&s.encode(), "t").unwrap();
        assert_eq!(d, s);
        assert!(d.contains(b"ab") && d.contains(b"a") && !d.contains(b"c") && !d.contains(b""));
    }

    #[test]
    fn damage_and_disorder_are_refused() {
        let b = sample().encode();
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x04;
            assert!(ColdSet::decode(&c, "t").is_err(), "byte {i}");
        }
        for n in 0..b.len() {
            assert!(ColdSet::decode(&b[..n], "t").is_err(), "cut at {n}");
        }
        // A well-checksummed file with keys out of order is refused too.
        let mut s = sample();
        s.keys.swap(0, 1);
        assert!(ColdSet::decode(&s.encode(), "t").is_err());
    }
}
