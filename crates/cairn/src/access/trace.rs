//! The access-trace file Leaper's offline learner reads (layout in
//! `docs/design/formats/leaper.md`): a fixed header, fixed-size little-endian rows (so numpy
//! reads them with one structured dtype), and a CRC32C of everything before it.

use std::path::Path;

use crate::ids::CfId;
use crate::storage::{FileKind, StorageEnv};
use crate::{Error, Result};

/// File magic.
pub const TRACE_MAGIC: &[u8; 8] = b"CAIRNLTR";
/// Format version written and read.
pub const TRACE_VERSION: u32 = 1;
const HEADER_LEN: usize = 72;
const ROW_LEN: usize = 24;

/// What the rows were counted at.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceHeader {
    /// Column family id.
    pub cf_id: CfId,
    /// Bytes skipped before a key's 8 bytes.
    pub key_offset: u32,
    /// Key numbers per range (A0).
    pub range_width: u64,
    /// Slot length in milliseconds.
    pub slot_ms: u64,
    /// Sampling probability P.
    pub sample_p: f64,
    /// Wall-clock start of slot 0 (ms since the epoch).
    pub start_unix_ms: u64,
}

/// Sampled counts of one range in one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRow {
    /// Range id.
    pub range: u64,
    /// Slot number.
    pub slot: u64,
    /// Sampled reads S.
    pub reads: u32,
    /// Sampled writes S.
    pub writes: u32,
}

/// `T[to][from]` of Algorithm 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransferRow {
    /// The range accessed.
    pub to: u64,
    /// A range the same thread accessed just before.
    pub from: u64,
    /// Times seen (sampled).
    pub count: u32,
}

/// Encodes a trace file.
pub fn encode(h: &TraceHeader, rows: &[TraceRow], transfers: &[TransferRow]) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER_LEN + (rows.len() + transfers.len()) * ROW_LEN + 4);
    b.extend_from_slice(TRACE_MAGIC);
    for v in [TRACE_VERSION, h.cf_id.get(), h.key_offset, 0] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for v in [h.range_width, h.slot_ms] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&h.sample_p.to_le_bytes());
    for v in [h.start_unix_ms, rows.len() as u64, transfers.len() as u64] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for r in rows {
        b.extend_from_slice(&r.range.to_le_bytes());
        b.extend_from_slice(&r.slot.to_le_bytes());
        b.extend_from_slice(&r.reads.to_le_bytes());
        b.extend_from_slice(&r.writes.to_le_bytes());
    }
    for t in transfers {
        b.extend_from_slice(&t.to.to_le_bytes());
        b.extend_from_slice(&t.from.to_le_bytes());
        b.extend_from_slice(&t.count.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
    }
    let crc = crc32c::crc32c(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

fn u32_at(b: &[u8], pos: usize) -> u32 {
    u32::from_le_bytes(b[pos..pos + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], pos: usize) -> u64 {
    u64::from_le_bytes(b[pos..pos + 8].try_into().expect("8 bytes"))
}

/// Decodes a trace file; every malformation is a corruption error.
pub fn decode(b: &[u8], file: &str) -> Result<(TraceHeader, Vec<TraceRow>, Vec<TransferRow>)> {
    let bad = |d: &str| Error::corruption(file, format!("access trace: {d}"));
    if b.len() < HEADER_LEN + 4 {
        return Err(bad("too short"));
    }
    if &b[..8] != TRACE_MAGIC {
        return Err(bad("bad magic"));
    }
    let body = b.len() - 4;
    if crc32c::crc32c(&b[..body]) != u32_at(b, body) {
        return Err(bad("checksum mismatch"));
    }
    let version = u32_at(b, 8);
    if version != TRACE_VERSION {
        return Err(Error::UnsupportedVersion {
            file: file.into(),
            found: version,
            supported: TRACE_VERSION,
        });
    }
    let h = TraceHeader {
        cf_id: CfId::new(u32_at(b, 12)),
        key_offset: u32_at(b, 16),
        range_width: u64_at(b, 24),
        slot_ms: u64_at(b, 32),
        sample_p: f64::from_le_bytes(b[40..48].try_into().expect("8 bytes")),
        start_unix_ms: u64_at(b, 48),
    };
    let (n_rows, n_transfers) = (u64_at(b, 56), u64_at(b, 64));
    let expected = n_rows
        .checked_add(n_transfers)
        .and_then(|n| n.checked_mul(ROW_LEN as u64))
        .and_then(|n| n.checked_add(HEADER_LEN as u64));
    if expected != Some(body as u64) {
        return Err(bad("row counts do not match the file size"));
    }
    if h.range_width == 0 || h.slot_ms == 0 || !(h.sample_p > 0.0 && h.sample_p <= 1.0) {
        return Err(bad(
            "range width, slot length or sampling probability out of range",
        ));
    }
    let rows = b[HEADER_LEN..HEADER_LEN + n_rows as usize * ROW_LEN]
        .chunks_exact(ROW_LEN)
        .map(|c| TraceRow {
            range: u64_at(c, 0),
            slot: u64_at(c, 8),
            reads: u32_at(c, 16),
            writes: u32_at(c, 20),
        })
        .collect();
    let transfers = b[HEADER_LEN + n_rows as usize * ROW_LEN..body]
        .chunks_exact(ROW_LEN)
        .map(|c| TransferRow {
            to: u64_at(c, 0),
            from: u64_at(c, 8),
            count: u32_at(c, 16),
        })
        .collect();
    Ok((h, rows, transfers))
}

/// Writes a trace file atomically (temporary name, sync, rename).
pub fn write(
    env: &StorageEnv,
    path: &Path,
    h: &TraceHeader,
    rows: &[TraceRow],
    transfers: &[TransferRow],
) -> Result<()> {
    // A bare file name has an empty parent, which cannot be synced: name the directory.
    let path = match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new(".").join(path),
        _ => path.to_path_buf(),
    };
    env.write_atomic(&path, FileKind::Other, &encode(h, rows, transfers))
}

/// Reads and checks a trace file.
pub fn read(path: &Path) -> Result<(TraceHeader, Vec<TraceRow>, Vec<TransferRow>)> {
    let b = std::fs::read(path).map_err(|e| Error::io(path.display().to_string(), e))?;
    decode(&b, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (TraceHeader, Vec<TraceRow>, Vec<TransferRow>) {
        let h = TraceHeader {
            cf_id: CfId::new(3),
            key_offset: 2,
            range_width: 10,
            slot_ms: 1000,
            sample_p: 0.25,
            start_unix_ms: 1_700_000_000_000,
        };
        let rows = vec![
            TraceRow {
                range: 5,
                slot: 0,
                reads: 3,
                writes: 1,
            },
            TraceRow {
                range: u64::MAX,
                slot: 7,
                reads: u32::MAX,
                writes: 0,
            },
        ];
        let t = vec![TransferRow {
            to: 5,
            from: 9,
            count: 4,
        }];
        (h, rows, t)
    }

    #[test]
    fn round_trip_and_layout() {
        let (h, rows, t) = sample();
        let b = encode(&h, &rows, &t);
        assert_eq!(b.len(), HEADER_LEN + 3 * ROW_LEN + 4);
        assert_eq!(decode(&b, "t").unwrap(), (h, rows, t));
    }

    #[test]
    fn every_flipped_byte_and_cut_is_refused() {
        let (h, rows, t) = sample();
        let b = encode(&h, &rows, &t);
        for i in 0..b.len() {
            for bit in [0x01, 0x80] {
                let mut c = b.clone();
                c[i] ^= bit;
                assert!(decode(&c, "t").is_err(), "byte {i} bit {bit}");
            }
        }
        for n in 0..b.len() {
            assert!(decode(&b[..n], "t").is_err(), "cut at {n}");
        }
    }
}
