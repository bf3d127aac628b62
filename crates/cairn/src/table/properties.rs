//! The properties block: table-wide statistics, read at open.
//!
//! Layout: varints num_entries, num_deletions, num_data_blocks, raw_key_bytes,
//! raw_value_bytes, min_seq, max_seq, then the smallest and largest internal keys, each
//! as a varint length and bytes, then (tables written since repair exists; absent in older
//! ones) the column family: varint id, varint name length and name bytes. The column
//! family lets `Db::repair` rebuild a manifest from tables alone, as RocksDB's RepairDB
//! does from its table properties. Tables holding range deletions (format version 6) then
//! name their range-deletion block: varint count of tombstones, block offset and size.

use super::format::{get_len, get_varint, put_varint};
use crate::ids::CfId;
use crate::{Error, Result};

/// Statistics of one table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableProperties {
    /// Entries (all kinds).
    pub num_entries: u64,
    /// Tombstones.
    pub num_deletions: u64,
    /// Data blocks.
    pub num_data_blocks: u64,
    /// Sum of internal key lengths.
    pub raw_key_bytes: u64,
    /// Sum of value lengths.
    pub raw_value_bytes: u64,
    /// Smallest internal key (empty for an empty table).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty for an empty table).
    pub largest: Vec<u8>,
    /// Smallest sequence number (0 for an empty table).
    pub min_seq: u64,
    /// Largest sequence number (0 for an empty table).
    pub max_seq: u64,
    /// Column family (id, name) the table was written for; `None` in tables written
    /// before the field existed.
    pub column_family: Option<(CfId, String)>,
    /// The range-deletion block: (tombstones held, where it is); `None` without one.
    /// Written only after a column family.
    pub range_dels: Option<(u64, super::format::BlockHandle)>,
}

impl TableProperties {
    /// Encodes the properties block.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.smallest.len() + self.largest.len());
        for v in [
            self.num_entries,
            self.num_deletions,
            self.num_data_blocks,
            self.raw_key_bytes,
            self.raw_value_bytes,
            self.min_seq,
            self.max_seq,
        ] {
            put_varint(&mut b, v);
        }
        for k in [&self.smallest, &self.largest] {
            put_varint(&mut b, k.len() as u64);
            b.extend_from_slice(k);
        }
        if let Some((id, name)) = &self.column_family {
            put_varint(&mut b, u64::from(id.get()));
            put_varint(&mut b, name.len() as u64);
            b.extend_from_slice(name.as_bytes());
            if let Some((n, h)) = &self.range_dels {
                put_varint(&mut b, *n);
                h.encode_to(&mut b);
            }
        }
        b
    }

    /// Decodes a properties block.
    pub fn decode(buf: &[u8], file: &str) -> Result<Self> {
        Self::try_decode(buf).ok_or_else(|| Error::corruption(file, "malformed properties block"))
    }

    fn try_decode(buf: &[u8]) -> Option<Self> {
        let mut pos = 0;
        let mut v = [0u64; 7];
        for x in &mut v {
            *x = get_varint(buf, &mut pos)?;
        }
        let mut key = || {
            let n = get_len(buf, &mut pos)?;
            let k = buf[pos..pos + n].to_vec();
            pos += n;
            Some(k)
        };
        let smallest = key()?;
        let largest = key()?;
        let column_family = if pos < buf.len() {
            let id = CfId::new(u32::try_from(get_varint(buf, &mut pos)?).ok()?);
            let n = get_len(buf, &mut pos)?;
            let name = std::str::from_utf8(&buf[pos..pos + n]).ok()?.to_owned();
            pos += n;
            Some((id, name))
        } else {
            None
        };
        let range_dels = if pos < buf.len() {
            let n = get_varint(buf, &mut pos)?;
            let h = super::format::BlockHandle::decode_from(buf, &mut pos)?;
            if n == 0 || h.size == 0 {
                return None;
            }
            Some((n, h))
        } else {
            None
        };
        if pos != buf.len() || v[1] > v[0] || v[5] > v[6] {
            return None;
        }
        Some(TableProperties {
            num_entries: v[0],
            num_deletions: v[1],
            num_data_blocks: v[2],
            raw_key_bytes: v[3],
            raw_value_bytes: v[4],
            min_seq: v[5],
            max_seq: v[6],
            smallest,
            largest,
            column_family,
            range_dels,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn round_trip() {
        let p = TableProperties {
            num_entries: 10,
            num_deletions: 2,
            num_data_blocks: 3,
            raw_key_bytes: 400,
            raw_value_bytes: 1 << 40,
            smallest: b"aaaaaaaaaaaa".to_vec(),
            largest: b"zzzzzzzzzz".to_vec(),
            min_seq: 4,
            max_seq: 99,
            column_family: None,
            range_dels: None,
        };
        let enc = p.encode();
        assert_eq!(TableProperties::decode(&enc, "t").unwrap(), p);
        assert!(TableProperties::decode(&enc[..enc.len() - 1], "t").is_err());
        let mut longer = enc.clone();
        longer.extend_from_slice(&[0, 5]); // a column family whose name is cut short
        assert!(TableProperties::decode(&longer, "t").is_err());
        let with_cf = TableProperties {
            column_family: Some((CfId::new(7), "logs".into())),
            ..p.clone()
        };
        let enc = with_cf.encode();
        assert_eq!(TableProperties::decode(&enc, "t").unwrap(), with_cf);
        let with_dels = TableProperties {
            column_family: Some((CfId::new(7), "logs".into())),
            range_dels: Some((3, super::super::format::BlockHandle::new(500, 42))),
            ..p.clone()
        };
        let enc_dels = with_dels.encode();
        assert_eq!(TableProperties::decode(&enc_dels, "t").unwrap(), with_dels);
        for cut in 1..enc_dels.len() - enc.len() {
            assert!(TableProperties::decode(&enc_dels[..enc_dels.len() - cut], "t").is_err());
        }
        // Older tables (no column family) still decode.
        assert_eq!(TableProperties::decode(&p.encode(), "t").unwrap(), p);
        for cut in 1..enc.len() - p.encode().len() {
            assert!(TableProperties::decode(&enc[..enc.len() - cut], "t").is_err());
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        for _ in 0..20_000 {
            let n = rng.random_range(0..40);
            let data: Vec<u8> = (0..n).map(|_| rng.random_range(0..4u8) * 60).collect();
            let _ = TableProperties::decode(&data, "t");
        }
    }
}
