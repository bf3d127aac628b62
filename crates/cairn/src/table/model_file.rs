//! A table's learned model saved beside it (`NNNNNN.plr`), so a restart does not relearn.
//!
//! ```text
//! magic "cairnPLR" (8) | version u32 (= 2) | table entries u64 | table file size u64
//! | delta u32 | last key number u64 | segment count u32
//! | prefix length u32 | prefix (the key space's dropped bytes)
//! | segments: (start u64, slope f64, intercept f64) * count | CRC32C u32 of all before
//! ```
//!
//! Version 1 (no prefix fields; keys numbered from their first byte) is still read.
//!
//! All little-endian. A model is used only if it checks out (magic, version, CRC, and the
//! table's entry count and size); otherwise it is ignored and the table relearned. Even a
//! model that checks out but is wrong cannot change answers: lookups verify the window and
//! fall back to the fence pointers.

use super::learned_index::LearnedIndex;
use crate::learned::{KeySpace, Plr, Segment};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"cairnPLR";
const VERSION: u32 = 2;
/// The version before the key space's prefix was saved (read as an empty prefix).
const VERSION_NO_PREFIX: u32 = 1;
const HEADER: usize = 8 + 4 + 8 + 8 + 4 + 8 + 4;
const SEGMENT: usize = 24;

/// Encodes `model`, learned on a table of `file_size` bytes.
pub fn encode(model: &LearnedIndex, file_size: u64) -> Vec<u8> {
    let plr = model.plr();
    let segs = plr.segments();
    let prefix = model.space().prefix();
    let mut b = Vec::with_capacity(HEADER + 4 + prefix.len() + SEGMENT * segs.len() + 4);
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&VERSION.to_le_bytes());
    b.extend_from_slice(&model.num_entries().to_le_bytes());
    b.extend_from_slice(&file_size.to_le_bytes());
    b.extend_from_slice(&plr.delta().to_le_bytes());
    b.extend_from_slice(&plr.last_x().to_le_bytes());
    b.extend_from_slice(&(segs.len() as u32).to_le_bytes());
    b.extend_from_slice(&(prefix.len() as u32).to_le_bytes());
    b.extend_from_slice(prefix);
    for s in segs {
        b.extend_from_slice(&s.start.to_le_bytes());
        b.extend_from_slice(&s.slope.to_bits().to_le_bytes());
        b.extend_from_slice(&s.intercept.to_bits().to_le_bytes());
    }
    let crc = crc32c::crc32c(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// Decodes a model for a table of `num_entries` entries and `file_size` bytes; any
/// mismatch or damage is a corruption error naming `file`.
pub fn decode(b: &[u8], num_entries: u64, file_size: u64, file: &str) -> Result<LearnedIndex> {
    let bad = |d: &str| Error::corruption(file, format!("model file: {d}"));
    let body_len = b.len().checked_sub(4).ok_or_else(|| bad("too short"))?;
    let (body, crc) = b.split_at(body_len);
    let u32_at = |p: usize| {
        body.get(p..p + 4)
            .map(|x| u32::from_le_bytes(x.try_into().expect("4 bytes")))
    };
    let u64_at = |p: usize| {
        body.get(p..p + 8)
            .map(|x| u64::from_le_bytes(x.try_into().expect("8 bytes")))
    };
    if body.len() < HEADER || &body[..8] != MAGIC {
        return Err(bad("bad magic"));
    }
    if crc32c::crc32c(body).to_le_bytes() != crc {
        return Err(bad("checksum mismatch"));
    }
    let field = |v: Option<u64>| v.ok_or_else(|| bad("truncated"));
    let version = field(u32_at(8).map(u64::from))? as u32;
    if version != VERSION && version != VERSION_NO_PREFIX {
        return Err(bad("unsupported version"));
    }
    if field(u64_at(12))? != num_entries || field(u64_at(20))? != file_size {
        return Err(bad("made for another table"));
    }
    let delta = field(u32_at(28).map(u64::from))? as u32;
    let last_x = field(u64_at(32))?;
    let count = field(u32_at(40).map(u64::from))? as usize;
    let (prefix, segs_at) = if version == VERSION_NO_PREFIX {
        (Vec::new(), HEADER)
    } else {
        let len = field(u32_at(HEADER).map(u64::from))? as usize;
        let at = HEADER + 4;
        let p = body
            .get(at..at.saturating_add(len))
            .ok_or_else(|| bad("truncated prefix"))?;
        (p.to_vec(), at + len)
    };
    if count
        .checked_mul(SEGMENT)
        .and_then(|n| n.checked_add(segs_at))
        != Some(body.len())
    {
        return Err(bad("segment count does not match the size"));
    }
    if delta == 0 || delta > crate::options::MAX_LEARNED_DELTA {
        return Err(bad("bad error bound"));
    }
    let mut segs = Vec::with_capacity(count);
    for i in 0..count {
        let p = segs_at + i * SEGMENT;
        let (start, slope, intercept) = (
            field(u64_at(p))?,
            f64::from_bits(field(u64_at(p + 8))?),
            f64::from_bits(field(u64_at(p + 16))?),
        );
        if !slope.is_finite() || !intercept.is_finite() {
            return Err(bad("non-finite segment"));
        }
        if segs.last().is_some_and(|s: &Segment| s.start >= start) {
            return Err(bad("segments out of order"));
        }
        segs.push(Segment {
            start,
            slope,
            intercept,
        });
    }
    Ok(LearnedIndex::from_plr(
        Plr::from_parts(segs, delta, last_x),
        KeySpace::with_prefix(prefix),
        num_entries,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> LearnedIndex {
        let keys: Vec<Vec<u8>> = (0..5000u64)
            .map(|i| format!("k{}", 1_000_000 + i * i / 7 + i).into_bytes())
            .collect();
        let keys: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        LearnedIndex::train(&keys, 4)
    }

    #[test]
    fn round_trip() {
        let m = model();
        let b = encode(&m, 1234);
        let back = decode(&b, m.num_entries(), 1234, "t").unwrap();
        assert_eq!(back.plr().segments(), m.plr().segments());
        assert_eq!(back.plr().delta(), 4);
        assert_eq!(back.plr().last_x(), m.plr().last_x());
        assert_eq!(back.num_entries(), m.num_entries());
        assert_eq!(back.space(), m.space());
        assert_eq!(m.space().prefix(), b"k");
    }

    #[test]
    fn version_1_models_read_with_an_empty_prefix() {
        let m = model();
        let v2 = encode(&m, 1234);
        // Version 1: the same fields without the prefix's.
        let plen = m.space().prefix().len();
        let mut v1 = v2[..HEADER].to_vec();
        v1[8..12].copy_from_slice(&VERSION_NO_PREFIX.to_le_bytes());
        v1.extend_from_slice(&v2[HEADER + 4 + plen..v2.len() - 4]);
        let crc = crc32c::crc32c(&v1);
        v1.extend_from_slice(&crc.to_le_bytes());
        let back = decode(&v1, m.num_entries(), 1234, "t").unwrap();
        assert_eq!(back.space().prefix(), b"");
        assert_eq!(back.plr().segments(), m.plr().segments());
    }

    #[test]
    fn damage_and_mismatch_are_refused() {
        let m = model();
        let b = encode(&m, 1234);
        assert!(decode(&b, m.num_entries() + 1, 1234, "t").is_err());
        assert!(decode(&b, m.num_entries(), 1235, "t").is_err());
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x10;
            assert!(
                decode(&c, m.num_entries(), 1234, "t").is_err(),
                "flip at {i}"
            );
        }
        for n in 0..b.len() {
            assert!(
                decode(&b[..n], m.num_entries(), 1234, "t").is_err(),
                "cut at {n}"
            );
        }
    }
}
