//! Value-log file format.
//!
//! A file starts with a 12-byte header (8-byte magic, 4-byte little-endian format version)
//! followed by records, each `crc32c (4 bytes LE, over the rest) | varint key length |
//! varint value length | key | value`. A [`ValuePointer`] names one record by file number,
//! offset and length, so a read fetches exactly the record's bytes. The key is kept in the
//! record so that a read can check that the pointer led to the record it expects.

use crate::coding::{put_varint, Reader};
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
    pub file_no: u64,
    /// Offset of the record in the file.
    pub offset: u64,
    /// Length of the whole record (checksum, lengths, key and value).
    pub len: u32,
}

impl ValuePointer {
    /// Encodes the pointer (the value of a `ValueKind::ValuePointer` table entry).
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(16);
        put_varint(&mut o, self.file_no);
        put_varint(&mut o, self.offset);
        put_varint(&mut o, self.len as u64);
        o
    }

    /// Decodes a pointer; anything but exactly one well-formed pointer is corruption.
    pub fn decode(buf: &[u8]) -> Result<ValuePointer> {
        let mut r = Reader::new(buf);
        let p = (|| {
            Some(ValuePointer {
                file_no: r.varint()?,
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
    let bad = |d: &str| Err(Error::corruption(file, d.to_string()));
    if rec.len() < 6 {
        return bad("value-log record too short");
    }
    let crc = u32::from_le_bytes(rec[..4].try_into().expect("4 bytes"));
    if crc32c::crc32c(&rec[4..]) != crc {
        return bad("value-log record checksum mismatch");
    }
    let mut r = Reader::new(&rec[4..]);
    let parsed = (|| {
        let klen = usize::try_from(r.varint()?).ok()?;
        let vlen = usize::try_from(r.varint()?).ok()?;
        Some((klen, vlen))
    })();
    let Some((klen, vlen)) = parsed else {
        return bad("undecodable value-log record");
    };
    // Varints are canonical, so their width follows from their values.
    let head = varint_len(klen as u64) + varint_len(vlen as u64);
    if klen.checked_add(vlen).and_then(|n| n.checked_add(head)) != Some(rec.len() - 4) {
        return bad("value-log record length does not match its pointer");
    }
    let start = 4 + head;
    if &rec[start..start + klen] != expected_key {
        return bad("value-log record holds another key than its pointer's entry");
    }
    Ok(rec[start + klen..].to_vec())
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
            file_no: 7,
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
        check_header("f", &header()).unwrap();
        assert!(check_header("f", b"cairnVLX\x01\0\0\0").is_err());
    }
}
