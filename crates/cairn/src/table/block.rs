//! Data blocks (and the index block, which uses the same layout).
//!
//! Layout: entries `[varint key_len][varint value_len][key][value]` with no prefix
//! compression, then the u32-LE offset of every entry, then the u32-LE entry count. Every
//! entry is addressable by its index, so a learned model that predicts a position can jump
//! straight to it, and binary search needs no restart points.

use std::cmp::Ordering;

use super::format::{get_len, get_u32, put_varint};
use crate::types::{cmp_internal, TRAILER_LEN};
use crate::{Error, Result};

/// Builds one block in memory.
#[derive(Default)]
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    offsets: Vec<u32>,
}

impl BlockBuilder {
    /// Appends an entry; the caller keeps keys in order and the block under 4 GiB.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        self.offsets.push(self.buf.len() as u32);
        put_varint(&mut self.buf, key.len() as u64);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(key);
        self.buf.extend_from_slice(value);
    }

    /// Size of the block if finished now.
    pub(crate) fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.offsets.len() + 4
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Returns the encoded block and resets the builder.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        out.reserve(4 * self.offsets.len() + 4);
        for o in &self.offsets {
            out.extend_from_slice(&o.to_le_bytes());
        }
        out.extend_from_slice(&(self.offsets.len() as u32).to_le_bytes());
        self.offsets.clear();
        out
    }
}

/// A decoded, validated block. Shared as `Arc<Block>` through the block cache.
///
/// Every entry is bounds-checked once when the block is decoded, so [`Block::entry`] is
/// infallible afterwards.
pub struct Block {
    data: Vec<u8>,
    count: usize,
    /// Start of the offset array (= end of the entry area).
    offsets_at: usize,
    /// Put in the cache by a prefetcher and not read since (Leaper's precision counts
    /// the warmed blocks a read later finds).
    warmed: std::sync::atomic::AtomicBool,
}

/// Bytes a cached block costs beyond its contents: the `Block` itself and the `Arc` counts.
const BLOCK_OVERHEAD: usize = std::mem::size_of::<Block>() + 2 * std::mem::size_of::<usize>();

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("bytes", &self.data.len())
            .field("entries", &self.count)
            .finish()
    }
}

impl Block {
    /// Decodes block contents (trailer already stripped and verified). Keys must be at
    /// least an internal-key trailer long. `file` names the file in errors.
    pub fn decode(data: Vec<u8>, file: &str) -> Result<Block> {
        Self::decode_with(data, file, false)
    }

    /// As [`decode`](Self::decode); the index block of an empty table has no entries.
    pub(crate) fn decode_with(data: Vec<u8>, file: &str, allow_empty: bool) -> Result<Block> {
        let bad = |d: String| Error::corruption(file, d);
        let len = data.len();
        let count = len
            .checked_sub(4)
            .and_then(|p| get_u32(&data, p))
            .ok_or_else(|| bad(format!("block of {len} bytes too short")))?
            as usize;
        let offsets_at = count
            .checked_mul(4)
            .and_then(|n| len.checked_sub(n + 4))
            .ok_or_else(|| {
                bad(format!(
                    "block entry count {count} does not fit {len} bytes"
                ))
            })?;
        if count == 0 && !allow_empty {
            return Err(bad("empty block".into()));
        }
        let block = Block {
            data,
            count,
            offsets_at,
            warmed: std::sync::atomic::AtomicBool::new(false),
        };
        for i in 0..count {
            if block.parse(i).is_none() {
                return Err(bad(format!("block entry {i} of {count} is malformed")));
            }
        }
        Ok(block)
    }

    /// Marks the block as put in the cache by a prefetcher.
    pub fn mark_warmed(&self) {
        self.warmed
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// True the first time a warmed block is read (and clears the mark).
    pub fn take_warmed(&self) -> bool {
        self.warmed.load(std::sync::atomic::Ordering::Relaxed)
            && self
                .warmed
                .swap(false, std::sync::atomic::Ordering::Relaxed)
    }

    fn parse(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let off = get_u32(&self.data, self.offsets_at + 4 * i)? as usize;
        let area = self.data.get(..self.offsets_at)?;
        let mut pos = off;
        let klen = get_len(area, &mut pos)?;
        let vlen = get_len(area, &mut pos)?;
        if klen < TRAILER_LEN {
            return None;
        }
        let key = area.get(pos..pos + klen)?;
        let value = area.get(pos + klen..pos.checked_add(klen)?.checked_add(vlen)?)?;
        Some((key, value))
    }

    /// Number of entries (at least 1 in a data block).
    pub fn entry_count(&self) -> usize {
        self.count
    }

    /// The `i`-th entry as (internal key, value). Panics only if `i >= entry_count()`.
    pub fn entry(&self, i: usize) -> (&[u8], &[u8]) {
        assert!(i < self.count, "block entry {i} out of {}", self.count);
        // Validated in decode(); the fallback is unreachable.
        self.parse(i).unwrap_or((&[], &[]))
    }

    /// The internal key of entry `i`.
    pub fn key(&self, i: usize) -> &[u8] {
        self.entry(i).0
    }

    /// Index of the first entry whose internal key is >= `target` (`entry_count()` if none).
    pub fn seek(&self, target: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if cmp_internal(self.key(mid), target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Encoded size of the block contents.
    pub fn size(&self) -> usize {
        self.data.len()
    }

    /// Memory this block holds, for cache budgets.
    pub fn charge(&self) -> usize {
        self.data.capacity() + BLOCK_OVERHEAD
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{make_internal_key, ValueKind};
    use rand::{Rng, SeedableRng};

    fn ikey(i: u32) -> Vec<u8> {
        make_internal_key(format!("key{i:06}").as_bytes(), 1, ValueKind::Value)
    }

    #[test]
    fn build_decode_seek() {
        let mut b = BlockBuilder::default();
        for i in 0..100 {
            b.add(&ikey(i * 2), format!("v{i}").as_bytes());
        }
        let est = b.estimated_size();
        let data = b.finish();
        assert_eq!(data.len(), est);
        assert!(b.is_empty());
        let blk = Block::decode(data, "t").unwrap();
        assert_eq!(blk.entry_count(), 100);
        assert_eq!(blk.entry(7), (&ikey(14)[..], &b"v7"[..]));
        assert_eq!(blk.seek(&ikey(14)), 7);
        assert_eq!(blk.seek(&ikey(15)), 8);
        assert_eq!(blk.seek(&ikey(0)), 0);
        assert_eq!(blk.seek(&ikey(1000)), 100);
    }

    #[test]
    fn rejects_malformed() {
        assert!(Block::decode(vec![], "t").is_err());
        assert!(Block::decode(vec![0, 0, 0, 0], "t").is_err()); // empty
        assert!(Block::decode(vec![9, 0, 0, 0], "t").is_err()); // count too big
        let mut b = BlockBuilder::default();
        b.add(&ikey(1), b"value");
        let good = b.finish();
        // Key length pointing past the entry area.
        let mut bad = good.clone();
        bad[0] = 100;
        assert!(Block::decode(bad, "t").is_err());
        // Offset pointing past the entry area.
        let mut bad = good.clone();
        let n = bad.len();
        bad[n - 8] = 200;
        assert!(Block::decode(bad, "t").is_err());
        // Key shorter than a trailer.
        let mut b = BlockBuilder::default();
        b.add(b"abc", b"");
        assert!(Block::decode(b.finish(), "t").is_err());
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        for _ in 0..20_000 {
            let n = rng.random_range(0..200);
            let mut data: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            // Make the count plausible often, so that entry parsing is exercised too.
            if n >= 8 && rng.random_bool(0.7) {
                let c = rng.random_range(1..=((n - 4) / 4) as u32);
                let l = data.len();
                data[l - 4..].copy_from_slice(&c.to_le_bytes());
                if rng.random_bool(0.5) {
                    for j in 0..c as usize {
                        let o: u32 = rng.random_range(0..n as u32);
                        let at = l - 4 - 4 * (c as usize) + 4 * j;
                        data[at..at + 4].copy_from_slice(&o.to_le_bytes());
                    }
                }
            }
            if let Ok(b) = Block::decode(data, "t") {
                for i in 0..b.entry_count() {
                    let _ = b.entry(i);
                }
                let _ = b.seek(b"somekey\0\0\0\0\0\0\0\0");
            }
        }
    }
}
