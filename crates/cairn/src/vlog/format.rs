//! Value-log file format.
//!
//! A file starts with a 12-byte header (8-byte magic, 4-byte little-endian format version)
//! followed by records, each `crc32c (4 bytes LE, over the rest) | varint key length |
//! varint value length | key | value`. A [`ValuePointer`] names one record by file number,
//! offset and length, so a read fetches exactly the record's bytes. The key is kept in the
//! record so that a read can check that the pointer led to the record it expects.

use crate::coding::{put_varint, Reader};
use crate::ids::FileNo;
use crate::{Error, Result};

/// Magic bytes at the start of every value-log file.
pub const MAGIC: &[u8; 8] = b"cairnVLG";
/// Format version written by this build.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of the file header.
pub const HEADER_LEN: u64 = 12;

/// Where a separated value lives: one record of one value-log file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValuePointer {
    /// Value-log file number.
    pub file_no: FileNo,
    /// Offset of the record in the file.
    pub offset: u64,
    /// Length of the whole record (checksum, lengths, key and value).
    pub len: u32,
}

impl ValuePointer {
    /// Encodes the pointer (the value of a `ValueKind::ValuePointer` table entry).
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(16);
        put_varint(&mut o, self.file_no.get());
        put_varint(&mut o, self.offset);
        put_varint(&mut o, self.len as u64);
        o
    }

    /// Decodes a pointer; anything but exactly one well-formed pointer is corruption.
    pub fn decode(buf: &[u8]) -> Result<ValuePointer> {
        let mut r = Reader::new(buf);
        let p = (|| {
            Some(ValuePointer {
                file_no: FileNo::new(r.varint()?),
                offset: r.varint()?,
                len: r.varint32()?,
            })
        })();
        match p {
            Some(p) if r.is_empty() && p.offset >= HEADER_LEN && p.len >= 6 => Ok(p),
            _ => Err(Error::corruption(
                "value pointer",
                "undecodable value pointer",
            )),
        }
    }
}

/// The file header.
pub fn header() -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h
}

/// Checks a file header read from `file`.
pub fn check_header(file: &str, h: &[u8]) -> Result<()> {
    if h.len() != HEADER_LEN as usize || &h[..8] != MAGIC {
        return Err(Error::corruption(file, "not a value-log file (bad magic)"));
    }
    let v = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
    if v > FORMAT_VERSION {
        return Err(Error::UnsupportedVersion {
            file: file.into(),
            found: v,
            supported: FORMAT_VERSION,
        });
    }
    Ok(())
}

/// Encodes one record.
pub fn encode_record(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut o = Vec::with_capacity(4 + 10 + key.len() + value.len());
    o.extend_from_slice(&[0u8; 4]);
    put_varint(&mut o, key.len() as u64);
    put_varint(&mut o, value.len() as u64);
    o.extend_from_slice(key);
    o.extend_from_slice(value);
    let crc = crc32c::crc32c(&o[4..]);
    o[..4].copy_from_slice(&crc.to_le_bytes());
    o
}

/// Decodes a record read through a pointer: checks the checksum, that the record fills
/// the bytes read exactly, and that it holds `expected_key`. Returns the value.
pub fn decode_record(file: &str, rec: &[u8], expected_key: &[u8]) -> Result<Vec<u8>> {
    record_value(rec, expected_key)
        .map(<[u8]>::to_vec)
        .map_err(|d| Error::corruption(file, d.to_string()))
}

/// The value of record `rec` (as [`decode_record`], borrowed), or what is wrong with it.
pub(crate) fn record_value<'a>(
    rec: &'a [u8],
    expected_key: &[u8],
) -> std::result::Result<&'a [u8], &'static str> {
    if rec.len() < 6 {
        return Err("value-log record too short");
    }
    let crc = u32::from_le_bytes(rec[..4].try_into().expect("4 bytes"));
    if crc32c::crc32c(&rec[4..]) != crc {
        return Err("value-log record checksum mismatch");
    }
    let mut r = Reader::new(&rec[4..]);
    let parsed = (|| {
        let klen = usize::try_from(r.varint()?).ok()?;
        let vlen = usize::try_from(r.varint()?).ok()?;
        Some((klen, vlen))
    })();
    let Some((klen, vlen)) = parsed else {
        return Err("undecodable value-log record");
    };
    // Varints are canonical, so their width follows from their values.
    let head = varint_len(klen as u64) + varint_len(vlen as u64);
    if klen.checked_add(vlen).and_then(|n| n.checked_add(head)) != Some(rec.len() - 4) {
        return Err("value-log record length does not match its pointer");
    }
    let start = 4 + head;
    if &rec[start..start + klen] != expected_key {
        return Err("value-log record holds another key than its pointer's entry");
    }
    Ok(&rec[start + klen..])
}

/// Walks every record of a whole value-log file (`data`, header included), checking the
/// header and each record's checksum and framing. Returns the number of records. Used by
/// `Db::check`; reads go through [`decode_record`] instead, one record at a time.
pub fn check_file(file: &str, data: &[u8]) -> Result<u64> {
    let head = data.get(..HEADER_LEN as usize).unwrap_or(data);
    check_header(file, head)?;
    let mut pos = HEADER_LEN as usize;
    let mut records = 0u64;
    while pos < data.len() {
        let bad = |d: &str| Err(Error::corruption(file, format!("{d} at offset {pos}")));
        let Some(body) = data.get(pos + 4..) else {
            return bad("truncated value-log record");
        };
        let mut r = Reader::new(body);
        let lens = (|| Some((r.varint()?, r.varint()?)))();
        let Some((klen, vlen)) = lens else {
            return bad("undecodable value-log record");
        };
        let len = (varint_len(klen) as u64)
            .checked_add(varint_len(vlen) as u64)
            .and_then(|n| n.checked_add(klen))
            .and_then(|n| n.checked_add(vlen))
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n <= body.len());
        let Some(len) = len else {
            return bad("value-log record runs past the end of the file");
        };
        let crc = u32::from_le_bytes(data[pos..pos + 4].try_into().expect("4 bytes"));
        if crc32c::crc32c(&body[..len]) != crc {
            return bad("value-log record checksum mismatch");
        }
        pos += 4 + len;
        records += 1;
    }
    Ok(records)
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_round_trip_and_garbage() {
        let p = ValuePointer {
            file_no: FileNo::new(7),
            offset: 12345,
            len: 300,
        };
        assert_eq!(ValuePointer::decode(&p.encode()).unwrap(), p);
        let b = p.encode();
        for cut in 0..b.len() {
            assert!(ValuePointer::decode(&b[..cut]).is_err());
        }
        let mut long = b.clone();
        long.push(0);
        assert!(ValuePointer::decode(&long).is_err());
    }

    #[test]
    fn record_round_trip_and_damage() {
        let rec = encode_record(b"key", b"some value");
        assert_eq!(decode_record("f", &rec, b"key").unwrap(), b"some value");
        assert!(decode_record("f", &rec, b"other")
            .unwrap_err()
            .is_corruption());
        for i in 0..rec.len() {
            let mut bad = rec.clone();
            bad[i] ^= 0x40;
            assert!(decode_record("f", &bad, b"key")
                .unwrap_err()
                .is_corruption());
        }
        for cut in 0..rec.len() {
            assert!(decode_record("f", &rec[..cut], b"key").is_err());
        }
        let big = vec![9u8; 70_000];
        let rec = encode_record(b"", &big);
        assert_eq!(decode_record("f", &rec, b"").unwrap(), big);
        let mut file = header().to_vec();
        file.extend_from_slice(&encode_record(b"a", b"1"));
        file.extend_from_slice(&encode_record(b"bb", &[7u8; 300]));
        assert_eq!(check_file("f", &file).unwrap(), 2);
        // (Bytes 8..12 are the format version: an older version is legitimately accepted.)
        for i in (0..8).chain(12..file.len()) {
            let mut bad = file.clone();
            bad[i] ^= 0x01;
            assert!(check_file("f", &bad).is_err(), "flip at {i}");
        }
        assert!(check_file("f", &file[..file.len() - 1]).is_err());
        check_header("f", &header()).unwrap();
        assert!(check_header("f", b"cairnVLX\x01\0\0\0").is_err());
    }
}
