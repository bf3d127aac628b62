//! The record trace SA-LSM's external service reads (`CAIRNRTR`, layout in
//! `docs/design/formats/sa-lsm.md`): a fixed header with the window's request counts, then one
//! variable-length entry per tracked record (key, insert and update times, the newest
//! access times, per-day counts), then a CRC-32C of everything before it. The query store
//! also persists itself in this format, so a restart resumes the trace.
//!
//! An access time is `(ms << 4) | tag`: tag 0 a read, 1 a write that named no column,
//! 2 + c a write of column c (the paper's per-column counts, at every point in time, so a
//! feature at a pivot counts only what came before it). Version 1 stored `(ms << 1) |
//! is_write`; it still reads, converted.

use std::path::Path;

use crate::ids::CfId;
use crate::storage::{FileKind, StorageEnv};
use crate::{Error, Result};

/// File magic.
pub const RECORD_TRACE_MAGIC: &[u8; 8] = b"CAIRNRTR";
/// Format version written (and the newest read).
pub const RECORD_TRACE_VERSION: u32 = 2;
/// Low bits of an access time that tag its kind.
pub const TIME_TAG_BITS: u32 = 4;
/// Columns a write can name (every 4-bit tag is used); higher ones count as the last.
pub const RECORD_COLUMNS: u8 = 14;

/// An access time as stored: `ms`, a read or a write, the column a write named.
pub fn tag_time(ms: u64, write: bool, column: Option<u8>) -> u64 {
    let tag = match (write, column) {
        (false, _) => 0,
        (true, None) => 1,
        (true, Some(c)) => 2 + c.min(RECORD_COLUMNS - 1) as u64,
    };
    (ms << TIME_TAG_BITS) | tag
}

/// The milliseconds of a stored access time.
pub fn time_ms(t: u64) -> u64 {
    t >> TIME_TAG_BITS
}

/// Whether a stored access time is a write.
pub fn time_is_write(t: u64) -> bool {
    t & ((1 << TIME_TAG_BITS) - 1) != 0
}
const HEADER_LEN: usize = 88;

/// Record flag: the insert happened while the store was collecting.
pub const FLAG_INSERT_SEEN: u32 = 1;
/// Record flag: older access times were dropped by the cap.
pub const FLAG_TRUNCATED: u32 = 2;
/// Record flag: the newest write was a delete.
pub const FLAG_DELETED: u32 = 4;

/// The window a record trace covers.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordTraceHeader {
    /// Column family id.
    pub cf_id: CfId,
    /// Share of records tracked.
    pub sample_rate: f64,
    /// Length of a day in milliseconds.
    pub day_ms: u64,
    /// Start of collection (T_s).
    pub start_ms: u64,
    /// Export time (T_e).
    pub end_ms: u64,
    /// Access times kept per record.
    pub max_times: u32,
    /// Point reads served in the window (every record).
    pub point_reads: u64,
    /// Writes in the window (every record).
    pub writes: u64,
    /// Range queries in the window.
    pub scans: u64,
}

/// One tracked record.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RecordEntry {
    /// The user key.
    pub key: Vec<u8>,
    /// First write seen (or first sighting when the insert predates collection).
    pub insert_ms: u64,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// Newest write after the insert (0: none).
    pub last_update_ms: u64,
    /// Access times, ascending, each [`tag_time`]`(ms, is_write, column)`.
    pub times: Vec<u64>,
    /// `(day, reads, writes)`, ascending by day.
    pub days: Vec<(u32, u32, u32)>,
}

/// Encodes a record trace.
pub fn encode(h: &RecordTraceHeader, records: &[RecordEntry]) -> Vec<u8> {
    let body: usize = records
        .iter()
        .map(|r| 32 + r.key.len() + 8 * r.times.len() + 12 * r.days.len())
        .sum();
    let mut b = Vec::with_capacity(HEADER_LEN + body + 4);
    b.extend_from_slice(RECORD_TRACE_MAGIC);
    for v in [RECORD_TRACE_VERSION, h.cf_id.get()] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&h.sample_rate.to_le_bytes());
    for v in [h.day_ms, h.start_ms, h.end_ms] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for v in [h.max_times, 0] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for v in [h.point_reads, h.writes, h.scans, records.len() as u64] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for r in records {
        b.extend_from_slice(&(r.key.len() as u32).to_le_bytes());
        b.extend_from_slice(&r.key);
        b.extend_from_slice(&r.insert_ms.to_le_bytes());
        b.extend_from_slice(&r.flags.to_le_bytes());
        b.extend_from_slice(&(r.times.len() as u32).to_le_bytes());
        b.extend_from_slice(&r.last_update_ms.to_le_bytes());
        for t in &r.times {
            b.extend_from_slice(&t.to_le_bytes());
        }
        b.extend_from_slice(&(r.days.len() as u32).to_le_bytes());
        for &(d, rd, wr) in &r.days {
            for v in [d, rd, wr] {
                b.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    let crc = crc32c::crc32c(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// A bounds-checked little-endian reader.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.b.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// Decodes a record trace; every malformation is a corruption error.
pub fn decode(b: &[u8], file: &str) -> Result<(RecordTraceHeader, Vec<RecordEntry>)> {
    let bad = |d: &str| Error::corruption(file, format!("record trace: {d}"));
    if b.len() < HEADER_LEN + 4 {
        return Err(bad("too short"));
    }
    if &b[..8] != RECORD_TRACE_MAGIC {
        return Err(bad("bad magic"));
    }
    let body_len = b.len() - 4;
    let stored = u32::from_le_bytes(b[body_len..].try_into().expect("4 bytes"));
    if crc32c::crc32c(&b[..body_len]) != stored {
        return Err(bad("checksum mismatch"));
    }
    let mut c = Cursor {
        b: &b[..body_len],
        pos: 8,
    };
    let short = || bad("truncated");
    let version = c.u32().ok_or_else(short)?;
    if !(1..=RECORD_TRACE_VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion {
            file: file.into(),
            found: version,
            supported: RECORD_TRACE_VERSION,
        });
    }
    let cf_id = CfId::new(c.u32().ok_or_else(short)?);
    let sample_rate = f64::from_bits(c.u64().ok_or_else(short)?);
    let (day_ms, start_ms, end_ms) = (
        c.u64().ok_or_else(short)?,
        c.u64().ok_or_else(short)?,
        c.u64().ok_or_else(short)?,
    );
    let max_times = c.u32().ok_or_else(short)?;
    if c.u32().ok_or_else(short)? != 0 {
        return Err(bad("reserved field is not zero"));
    }
    let h = RecordTraceHeader {
        cf_id,
        sample_rate,
        day_ms,
        start_ms,
        end_ms,
        max_times,
        point_reads: c.u64().ok_or_else(short)?,
        writes: c.u64().ok_or_else(short)?,
        scans: c.u64().ok_or_else(short)?,
    };
    if !(h.sample_rate > 0.0 && h.sample_rate <= 1.0) || h.day_ms == 0 || h.end_ms < h.start_ms {
        return Err(bad("sample rate, day length or window out of range"));
    }
    let n = c.u64().ok_or_else(short)?;
    // Each record takes at least 32 bytes: a count beyond that is a lie, not an allocation.
    if n > (body_len / 32) as u64 {
        return Err(bad("record count does not fit the file"));
    }
    let mut records = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let klen = c.u32().ok_or_else(short)? as usize;
        let key = c.take(klen).ok_or_else(short)?.to_vec();
        let insert_ms = c.u64().ok_or_else(short)?;
        let flags = c.u32().ok_or_else(short)?;
        let nt = c.u32().ok_or_else(short)? as usize;
        let last_update_ms = c.u64().ok_or_else(short)?;
        if nt > h.max_times as usize {
            return Err(bad("more access times than the cap"));
        }
        let raw = c
            .take(nt.checked_mul(8).ok_or_else(short)?)
            .ok_or_else(short)?;
        let times: Vec<u64> = raw
            .chunks_exact(8)
            .map(|x| u64::from_le_bytes(x.try_into().expect("8 bytes")))
            .map(|t| match version {
                1 => tag_time(t >> 1, t & 1 == 1, None),
                _ => t,
            })
            .collect();
        if version == 1 && raw.chunks_exact(8).any(|x| x[7] >> 5 != 0) {
            return Err(bad("a version-1 access time too large to convert"));
        }
        if times.windows(2).any(|w| time_ms(w[0]) > time_ms(w[1])) {
            return Err(bad("access times out of order"));
        }
        let nd = c.u32().ok_or_else(short)? as usize;
        let raw = c
            .take(nd.checked_mul(12).ok_or_else(short)?)
            .ok_or_else(short)?;
        let days: Vec<(u32, u32, u32)> = raw
            .chunks_exact(12)
            .map(|x| {
                let v = |i: usize| u32::from_le_bytes(x[i..i + 4].try_into().expect("4 bytes"));
                (v(0), v(4), v(8))
            })
            .collect();
        if days.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(bad("day rows out of order"));
        }
        records.push(RecordEntry {
            key,
            insert_ms,
            flags,
            last_update_ms,
            times,
            days,
        });
    }
    if c.pos != body_len {
        return Err(bad("bytes after the last record"));
    }
    Ok((h, records))
}

/// Writes a record trace atomically (temporary name, sync, rename).
pub fn write(
    env: &StorageEnv,
    path: &Path,
    h: &RecordTraceHeader,
    records: &[RecordEntry],
) -> Result<()> {
    let path = match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new(".").join(path),
        _ => path.to_path_buf(),
    };
    env.write_atomic(&path, FileKind::Other, &encode(h, records))
}

/// Reads and checks a record trace.
pub fn read(path: &Path) -> Result<(RecordTraceHeader, Vec<RecordEntry>)> {
    let b = std::fs::read(path).map_err(|e| Error::io(path.display().to_string(), e))?;
    decode(&b, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (RecordTraceHeader, Vec<RecordEntry>) {
        let h = RecordTraceHeader {
            cf_id: CfId::new(2),
            sample_rate: 0.5,
            day_ms: 86_400_000,
            start_ms: 1000,
            end_ms: 9_000_000,
            max_times: 4,
            point_reads: 10,
            writes: 5,
            scans: 1,
        };
        let r = vec![
            RecordEntry {
                key: b"a".to_vec(),
                insert_ms: 1000,
                flags: FLAG_INSERT_SEEN,
                last_update_ms: 0,
                times: vec![
                    tag_time(1000, true, None),
                    tag_time(2000, false, None),
                    tag_time(2500, true, Some(3)),
                ],
                days: vec![(0, 2, 1)],
            },
            RecordEntry {
                key: vec![0xff; 40],
                insert_ms: 5,
                flags: FLAG_TRUNCATED | FLAG_DELETED,
                last_update_ms: 8_000_000,
                times: vec![tag_time(8_000_000, true, Some(200))],
                days: vec![(0, 0, 3), (7, 1, 1)],
            },
        ];
        (h, r)
    }

    #[test]
    fn round_trip() {
        let (h, r) = sample();
        let b = encode(&h, &r);
        assert_eq!(decode(&b, "t").unwrap(), (h, r));
    }

    #[test]
    fn tags_name_reads_writes_and_columns() {
        let t = tag_time(5, true, Some(200));
        assert_eq!((time_ms(t), time_is_write(t)), (5, true));
        assert_eq!(t & 0xf, 1 + RECORD_COLUMNS as u64); // folded into the last column
        assert!(!time_is_write(tag_time(5, false, Some(1))));
    }

    /// A version-1 file (`(ms << 1) | is_write`) still reads, converted to tags.
    #[test]
    fn version_one_times_are_converted() {
        let (h, r) = sample();
        let mut b = encode(&h, &r);
        b.truncate(b.len() - 4);
        b[8..12].copy_from_slice(&1u32.to_le_bytes());
        // The first record's times start after the header, key length, key and the
        // record's fixed fields.
        let at = HEADER_LEN + 4 + 1 + 8 + 4 + 4 + 8;
        for (i, v1) in [1000u64 << 1 | 1, 2000 << 1, 2500 << 1 | 1]
            .iter()
            .enumerate()
        {
            b[at + 8 * i..at + 8 * i + 8].copy_from_slice(&v1.to_le_bytes());
        }
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        let (_, got) = decode(&b, "t").unwrap();
        let want = vec![
            tag_time(1000, true, None),
            tag_time(2000, false, None),
            tag_time(2500, true, None),
        ];
        assert_eq!(got[0].times, want);
        let mut v3 = encode(&h, &r);
        v3.truncate(v3.len() - 4);
        v3[8..12].copy_from_slice(&3u32.to_le_bytes());
        let crc = crc32c::crc32c(&v3);
        v3.extend_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            decode(&v3, "t"),
            Err(Error::UnsupportedVersion { found: 3, .. })
        ));
    }

    #[test]
    fn every_flipped_byte_and_cut_is_refused() {
        let (h, r) = sample();
        let b = encode(&h, &r);
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x10;
            assert!(decode(&c, "t").is_err(), "byte {i}");
        }
        for n in 0..b.len() {
            assert!(decode(&b[..n], "t").is_err(), "cut at {n}");
        }
    }
}
