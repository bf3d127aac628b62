//! Data blocks (and the index block, which uses the same layout).
//!
//! Every entry is addressable by its index, so a learned model that predicts a position can
//! jump straight to it, and binary search needs no restart points. Two layouts decode; the
//! last u32 of the block says which.
//!
//! Layout 2 (written now): the longest common prefix of the block's user keys, once, then
//! entries that store only the rest of their internal key:
//!
//! ```text
//! [prefix: p bytes]
//! [entry 0] ... [entry n-1]     entry = [varint key_len][varint value_len][key[p..]][value]
//! [offset 0] ... [offset n-1]   u16 LE, or u32 LE if W; from the start of the block
//! [p: u16 LE]
//! [n | 1 << 31 | W << 30: u32 LE]
//! ```
//!
//! `key_len` is the whole internal key's length, so an entry's size does not depend on `p`
//! and the builder knows the block's size exactly as entries arrive; `key[p..]` is at least
//! a trailer long. The prefix never covers trailer bytes, so suffixes order as whole keys
//! do. Offsets are u16 (W clear) when the prefix and entries take at most 64 KiB.
//!
//! Layout 1 (older tables, still read): entries `[varint key_len][varint value_len][key]
//! [value]`, then the u32-LE offset of every entry, then the u32-LE entry count (always
//! below 2^30, so its top bit is clear).
//!
//! Layout 3, fixed width (Bourbon's key + pointer entries, written when
//! `TableBuildOptions::fixed_width_entries` is set and the block's keys and values are
//! short): every entry takes the same `2 + kw + vw` bytes, so entry `i`'s place is
//! arithmetic and a reader can fetch a few entries without the rest of the block. Entries
//! come in chunks of [`CHUNK_ENTRIES`], each followed by its own checksum, so such a
//! partial read is verified on its own:
//!
//! ```text
//! [chunk 0: entries 0..4][crc 0] ... [chunk c: the last 1..=4 entries][crc c]
//!                               entry = [key_len u8][key, zero-padded to kw][value_len u8][value, padded to vw]
//!                               crc j = CRC32C of the chunk's bytes, seeded with j
//! [kw: u8][vw: u8]
//! [n | 1 << 31 | 1 << 29: u32 LE]
//! ```
//!
//! No key prefix is shared, so an entry's bytes alone give its whole internal key.

use std::cmp::Ordering;

use super::format::{get_len, get_u16, get_u32, get_varint, put_varint};
use crate::types::{cmp_internal, trailer, user_key, SeqNo, ValueKind, TRAILER_LEN};
use crate::{Error, Result};

/// Count-word flag: layout 2.
const PREFIXED: u32 = 1 << 31;
/// Count-word flag (layout 2): u32 entry offsets.
const WIDE: u32 = 1 << 30;
/// Count-word flag (with `PREFIXED`): layout 3, fixed-width entries. Layout 2's counts
/// never reach it: a block under 1 GiB holds fewer than 2^27 entries.
const FIXED: u32 = 1 << 29;
/// Count-word bits holding the entry count (layout 2).
const COUNT_MASK: u32 = WIDE - 1;
/// Count-word bits holding the entry count (layout 3).
const FIXED_COUNT_MASK: u32 = FIXED - 1;
/// Entries per checksummed chunk of a fixed-width block.
pub const CHUNK_ENTRIES: usize = 4;
/// Bytes of a chunk's checksum.
const CHUNK_CRC_LEN: usize = 4;
/// Longest internal key and value a fixed-width entry holds.
const FIXED_MAX_FIELD: usize = u8::MAX as usize;
/// Largest prefix-plus-entries area whose offsets all fit in a u16.
const NARROW_AREA: usize = 1 << 16;
/// Bytes after the offsets in layout 2: prefix length and count word.
const TAIL_LEN: usize = 6;
/// Largest entry buffer a builder keeps for the next block.
const RETAIN_LIMIT: usize = 1 << 20;

/// The widths of a fixed-width block (layout 3): every internal key is padded to `kw`
/// bytes and every value to `vw`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FixedLayout {
    /// Width of the key field (the longest internal key of the block).
    pub kw: u8,
    /// Width of the value field (the longest value of the block).
    pub vw: u8,
}

impl FixedLayout {
    /// Bytes of one entry: the two length bytes and both fields.
    pub fn entry_len(&self) -> usize {
        2 + usize::from(self.kw) + usize::from(self.vw)
    }

    /// Bytes of a full chunk with its checksum.
    fn chunk_len(&self) -> usize {
        CHUNK_ENTRIES * self.entry_len() + CHUNK_CRC_LEN
    }

    /// Bytes of the chunks of a block of `n` entries (everything before its tail).
    fn chunks_len(&self, n: usize) -> Option<usize> {
        n.checked_mul(self.entry_len())?
            .checked_add(n.div_ceil(CHUNK_ENTRIES).checked_mul(CHUNK_CRC_LEN)?)
    }

    /// Bytes of a whole block of `n` entries.
    pub fn block_size(&self, n: usize) -> Option<usize> {
        self.chunks_len(n)?.checked_add(TAIL_LEN)
    }

    /// The chunks holding entries `[from, to)` of a block of `n` entries
    /// (`from < to <= n`): their byte range in the block and the first chunk's number.
    pub fn chunk_span(&self, n: usize, from: usize, to: usize) -> (std::ops::Range<usize>, usize) {
        debug_assert!(from < to && to <= n);
        let (c0, c1) = (from / CHUNK_ENTRIES, (to - 1) / CHUNK_ENTRIES);
        let start = c0 * self.chunk_len();
        let end = ((c1 + 1) * self.chunk_len()).min(self.chunks_len(n).unwrap_or(usize::MAX));
        (start..end, c0)
    }

    /// The layout as an index entry stores it (never 0).
    pub(crate) fn to_code(self) -> u64 {
        1 + (u64::from(self.kw) << 8 | u64::from(self.vw))
    }

    /// The layout an index entry names; `None` if the code is not one.
    pub(crate) fn from_code(code: u64) -> Option<Self> {
        let c = code.checked_sub(1)?;
        (c < 1 << 16).then_some(FixedLayout {
            kw: (c >> 8) as u8,
            vw: c as u8,
        })
    }
}

/// The checksum of chunk `j`: CRC32C of its bytes seeded with its number, so a chunk read
/// from the wrong place fails even when its bytes are another chunk's.
fn chunk_crc(bytes: &[u8], j: usize) -> u32 {
    crc32c::crc32c_append(j as u32, bytes)
}

/// Builds one block in memory. Entries are kept until [`finish`](Self::finish), which needs
/// the common prefix of all of them.
#[derive(Default)]
pub(crate) struct BlockBuilder {
    /// Keys and values of the pending entries, concatenated; the first key comes first.
    buf: Vec<u8>,
    /// (key length, value length) of each pending entry.
    lens: Vec<(u32, u32)>,
    /// Bytes of the pending entries' two varint lengths.
    header_bytes: usize,
    /// Length of the pending user keys' common prefix (at most `u16::MAX`).
    prefix_len: usize,
    /// Scratch for the offsets `finish` writes.
    offsets: Vec<u32>,
    /// Write layout 3 when the entries fit it (see [`fixed_layout`](Self::fixed_layout)).
    fixed_width: bool,
    /// Longest internal key and value pending.
    max_klen: usize,
    max_vlen: usize,
    /// Tests: write layout 1, as older builds did.
    #[cfg(test)]
    v1: bool,
}

impl BlockBuilder {
    /// A builder writing layout 1 (tests of reading older tables).
    #[cfg(test)]
    pub(crate) fn v1() -> Self {
        BlockBuilder {
            v1: true,
            ..Self::default()
        }
    }

    /// A builder writing fixed-width blocks (layout 3) whenever the entries fit.
    pub(crate) fn fixed_width() -> Self {
        BlockBuilder {
            fixed_width: true,
            ..Self::default()
        }
    }

    /// The fixed-width layout the pending entries would be written in: when asked for,
    /// when every key and value is at most 255 bytes, and when padding would not more than
    /// double the block (a few long keys among short ones write layout 2 instead).
    fn fixed_layout(&self) -> Option<FixedLayout> {
        if !self.fixed_width
            || self.lens.is_empty()
            || self.max_klen > FIXED_MAX_FIELD
            || self.max_vlen > FIXED_MAX_FIELD
        {
            return None;
        }
        let layout = FixedLayout {
            kw: self.max_klen as u8,
            vw: self.max_vlen as u8,
        };
        let fixed = layout.block_size(self.lens.len())?;
        (fixed <= 2 * self.variable_size()).then_some(layout)
    }

    #[cfg(test)]
    fn prefixed(&self) -> bool {
        !self.v1
    }

    #[cfg(not(test))]
    fn prefixed(&self) -> bool {
        true
    }

    /// Appends an entry; the caller keeps keys in order, fewer than 2^30 of them, and the
    /// block under 1 GiB plus one entry.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        let uk = user_key(key);
        self.prefix_len = if self.lens.is_empty() {
            uk.len().min(u16::MAX as usize)
        } else {
            // The buffer starts with the first key, so with the prefix so far.
            common_prefix_len(&self.buf[..self.prefix_len], uk)
        };
        self.header_bytes += varint_len(key.len()) + varint_len(value.len());
        self.max_klen = self.max_klen.max(key.len());
        self.max_vlen = self.max_vlen.max(value.len());
        self.lens.push((key.len() as u32, value.len() as u32));
        self.buf.extend_from_slice(key);
        self.buf.extend_from_slice(value);
    }

    /// Bytes of prefix and entries (everything before the offsets) if finished now.
    fn area_len(&self) -> usize {
        let p = if self.prefixed() { self.prefix_len } else { 0 };
        // Every key is at least `p` long, so this does not underflow.
        p + self.header_bytes + self.buf.len() - p * self.lens.len()
    }

    /// Size of the block if finished now (exact).
    pub(crate) fn estimated_size(&self) -> usize {
        match self.fixed_layout() {
            Some(l) => l.block_size(self.lens.len()).unwrap_or(usize::MAX),
            None => self.variable_size(),
        }
    }

    /// Size of the block in layout 2 (or 1).
    fn variable_size(&self) -> usize {
        let (area, n) = (self.area_len(), self.lens.len());
        if !self.prefixed() {
            return area + 4 * n + 4;
        }
        let width = if area <= NARROW_AREA { 2 } else { 4 };
        area + width * n + TAIL_LEN
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    /// Returns the encoded block and resets the builder.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        self.finish_with_layout().0
    }

    /// As [`finish`](Self::finish), also saying whether the block is fixed-width.
    pub(crate) fn finish_with_layout(&mut self) -> (Vec<u8>, Option<FixedLayout>) {
        let layout = self.fixed_layout();
        let out = match layout {
            Some(l) => self.write_fixed(l),
            None => self.write_variable(),
        };
        if self.buf.capacity() > RETAIN_LIMIT {
            self.buf = Vec::new(); // a block of huge values: do not hold its memory on
        }
        self.buf.clear();
        self.lens.clear();
        self.header_bytes = 0;
        self.prefix_len = 0;
        self.max_klen = 0;
        self.max_vlen = 0;
        (out, layout)
    }

    fn write_fixed(&self, l: FixedLayout) -> Vec<u8> {
        let (kw, vw) = (usize::from(l.kw), usize::from(l.vw));
        let mut out = Vec::with_capacity(self.estimated_size());
        let mut at = 0;
        for (j, chunk) in self.lens.chunks(CHUNK_ENTRIES).enumerate() {
            let start = out.len();
            for &(k, v) in chunk {
                let (k, v) = (k as usize, v as usize);
                out.push(k as u8);
                out.extend_from_slice(&self.buf[at..at + k]);
                out.resize(out.len() + kw - k, 0);
                out.push(v as u8);
                out.extend_from_slice(&self.buf[at + k..at + k + v]);
                out.resize(out.len() + vw - v, 0);
                at += k + v;
            }
            let crc = chunk_crc(&out[start..], j);
            out.extend_from_slice(&crc.to_le_bytes());
        }
        out.push(l.kw);
        out.push(l.vw);
        let n = self.lens.len() as u32;
        out.extend_from_slice(&(n | PREFIXED | FIXED).to_le_bytes());
        debug_assert_eq!(out.len(), self.estimated_size());
        out
    }

    fn write_variable(&mut self) -> Vec<u8> {
        let size = self.variable_size();
        let p = if self.prefixed() { self.prefix_len } else { 0 };
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&self.buf[..p]);
        self.offsets.clear();
        let mut at = 0;
        for &(k, v) in &self.lens {
            let (k, v) = (k as usize, v as usize);
            self.offsets.push(out.len() as u32);
            put_varint(&mut out, k as u64);
            put_varint(&mut out, v as u64);
            out.extend_from_slice(&self.buf[at + p..at + k + v]);
            at += k + v;
        }
        let n = self.lens.len() as u32;
        if self.prefixed() {
            let wide = out.len() > NARROW_AREA;
            for &o in &self.offsets {
                if wide {
                    out.extend_from_slice(&o.to_le_bytes());
                } else {
                    out.extend_from_slice(&(o as u16).to_le_bytes());
                }
            }
            out.extend_from_slice(&(p as u16).to_le_bytes());
            let flags = PREFIXED | if wide { WIDE } else { 0 };
            out.extend_from_slice(&(n | flags).to_le_bytes());
        } else {
            for &o in &self.offsets {
                out.extend_from_slice(&o.to_le_bytes());
            }
            out.extend_from_slice(&n.to_le_bytes());
        }
        debug_assert_eq!(out.len(), size);
        out
    }
}

fn varint_len(v: usize) -> usize {
    let bits = usize::BITS - (v | 1).leading_zeros();
    bits.div_ceil(7) as usize
}

fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n && a[i..i + 8] == b[i..i + 8] {
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Orders `a1 ++ a2` against `b` without joining them.
fn cmp_concat(a1: &[u8], a2: &[u8], b: &[u8]) -> Ordering {
    let n = a1.len().min(b.len());
    match a1[..n].cmp(&b[..n]) {
        Ordering::Equal if a1.len() > b.len() => Ordering::Greater,
        Ordering::Equal => a2.cmp(&b[a1.len()..]),
        o => o,
    }
}

/// Splits internal key `target` for comparison against keys whose user keys all start
/// with `prefix`: `Ok(rest)` if the target's user key starts with it too (then a key
/// `prefix ++ s` orders against the target as `s` does against `rest`), else `Err(o)`, how
/// every such key orders against the target.
fn split_target<'t>(prefix: &[u8], target: &'t [u8]) -> std::result::Result<&'t [u8], Ordering> {
    let u = user_key(target);
    let n = prefix.len().min(u.len());
    match prefix[..n].cmp(&u[..n]) {
        // The target's user key is a strict prefix of every key's.
        Ordering::Equal if u.len() < prefix.len() => Err(Ordering::Greater),
        Ordering::Equal => Ok(&target[prefix.len()..]),
        o => Err(o),
    }
}

/// An entry's internal key as a block stores it: the block's shared prefix (user-key bytes
/// only) and the entry's suffix (the rest of the user key and the trailer).
#[derive(Clone, Copy, Debug)]
pub struct KeyRef<'a> {
    prefix: &'a [u8],
    suffix: &'a [u8],
}

impl<'a> KeyRef<'a> {
    /// (shared prefix, suffix); the internal key is their concatenation.
    pub fn parts(&self) -> (&'a [u8], &'a [u8]) {
        (self.prefix, self.suffix)
    }

    /// Appends the internal key to `out`.
    pub fn append_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.prefix.len() + self.suffix.len());
        out.extend_from_slice(self.prefix);
        out.extend_from_slice(self.suffix);
    }

    /// The internal key.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.append_to(&mut v);
        v
    }

    /// The suffix's user-key part (a decoded block's suffixes are at least a trailer long).
    fn user_suffix(&self) -> &'a [u8] {
        &self.suffix[..self.suffix.len().saturating_sub(TRAILER_LEN)]
    }

    /// The user key.
    pub fn user_key_vec(&self) -> Vec<u8> {
        [self.prefix, self.user_suffix()].concat()
    }

    /// Orders the user key against `other` (a user key).
    pub fn cmp_user_key(&self, other: &[u8]) -> Ordering {
        cmp_concat(self.prefix, self.user_suffix(), other)
    }

    /// Whether the user key is `other`.
    pub fn user_key_eq(&self, other: &[u8]) -> bool {
        let s = self.user_suffix();
        other.len() == self.prefix.len() + s.len()
            && other.starts_with(self.prefix)
            && &other[self.prefix.len()..] == s
    }

    /// Orders the internal key against `target` (an internal key), as [`cmp_internal`].
    pub fn cmp_internal(&self, target: &[u8]) -> Ordering {
        match split_target(self.prefix, target) {
            Ok(rest) => cmp_internal(self.suffix, rest),
            Err(o) => o,
        }
    }

    /// The sequence number.
    pub fn seq(&self) -> SeqNo {
        trailer(self.suffix) >> 8
    }

    /// The entry kind, if the kind byte is a valid one.
    pub fn value_kind(&self) -> Option<ValueKind> {
        ValueKind::from_u8((trailer(self.suffix) & 0xff) as u8)
    }
}

impl PartialEq<[u8]> for KeyRef<'_> {
    fn eq(&self, other: &[u8]) -> bool {
        other.len() == self.prefix.len() + self.suffix.len()
            && other.starts_with(self.prefix)
            && &other[self.prefix.len()..] == self.suffix
    }
}

/// A decoded, validated block. Shared as `Arc<Block>` through the block cache.
///
/// Every entry is bounds-checked once when the block is decoded, so [`Block::entry`] is
/// infallible afterwards.
pub struct Block {
    data: Vec<u8>,
    count: usize,
    /// Length of the shared key prefix at the start of the block (0 in layout 1).
    prefix_len: usize,
    /// Bytes per entry offset: 2 or 4.
    offset_width: usize,
    /// Start of the offset array (= end of the entry area; of the chunks in layout 3).
    offsets_at: usize,
    /// Layout 3: the widths, and which chunks `data` holds.
    fixed: Option<FixedView>,
    /// Put in the cache by a prefetcher and not read since (Leaper's precision counts
    /// the warmed blocks a read later finds).
    warmed: std::sync::atomic::AtomicBool,
}

/// How a fixed-width block (or part of one) is laid out in `Block::data`.
#[derive(Clone, Copy, Debug)]
struct FixedView {
    layout: FixedLayout,
    entry_len: usize,
    chunk_len: usize,
    /// Number of the first chunk held: 0 for a whole block.
    first_chunk: usize,
    /// Only some chunks are held (a learned lookup's read): never cached or iterated.
    partial: bool,
}

impl FixedView {
    fn new(layout: FixedLayout, first_chunk: usize, partial: bool) -> Self {
        FixedView {
            layout,
            entry_len: layout.entry_len(),
            chunk_len: layout.chunk_len(),
            first_chunk,
            partial,
        }
    }
}

/// Bytes a cached block costs beyond its contents: the `Block` itself and the `Arc` counts.
const BLOCK_OVERHEAD: usize = std::mem::size_of::<Block>() + 2 * std::mem::size_of::<usize>();

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("bytes", &self.data.len())
            .field("entries", &self.count)
            .field("prefix", &self.prefix_len)
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
        let too_short = || bad(format!("block of {len} bytes too short"));
        let word = len
            .checked_sub(4)
            .and_then(|p| get_u32(&data, p))
            .ok_or_else(too_short)?;
        if word & PREFIXED != 0 && word & FIXED != 0 {
            return Self::decode_fixed(data, word, file, allow_empty);
        }
        let (count, prefix_len, offset_width, tail) = if word & PREFIXED == 0 {
            (word as usize, 0, 4, 4)
        } else {
            let p = len
                .checked_sub(TAIL_LEN)
                .and_then(|at| get_u16(&data, at))
                .ok_or_else(too_short)?;
            let width = if word & WIDE != 0 { 4 } else { 2 };
            (
                (word & COUNT_MASK) as usize,
                usize::from(p),
                width,
                TAIL_LEN,
            )
        };
        let offsets_at = count
            .checked_mul(offset_width)
            .and_then(|n| n.checked_add(tail))
            .and_then(|n| len.checked_sub(n))
            .ok_or_else(|| {
                bad(format!(
                    "block entry count {count} does not fit {len} bytes"
                ))
            })?;
        if prefix_len > offsets_at {
            return Err(bad(format!(
                "block key prefix of {prefix_len} bytes does not fit {len} bytes"
            )));
        }
        if count == 0 && !allow_empty {
            return Err(bad("empty block".into()));
        }
        let block = Block {
            data,
            count,
            prefix_len,
            offset_width,
            offsets_at,
            fixed: None,
            warmed: std::sync::atomic::AtomicBool::new(false),
        };
        block.validate(0..count, file)?;
        Ok(block)
    }

    /// Checks that entries `range` parse (so [`entry`](Self::entry) cannot fail on them).
    fn validate(&self, range: std::ops::Range<usize>, file: &str) -> Result<()> {
        let count = self.count;
        for i in range {
            if self.parse(i).is_none() {
                return Err(Error::corruption(
                    file,
                    format!("block entry {i} of {count} is malformed"),
                ));
            }
        }
        Ok(())
    }

    /// Decodes a whole layout-3 block (the block trailer's checksum covers its chunks).
    fn decode_fixed(data: Vec<u8>, word: u32, file: &str, allow_empty: bool) -> Result<Block> {
        let len = data.len();
        if len < TAIL_LEN {
            return Err(Error::corruption(
                file,
                format!("block of {len} bytes too short"),
            ));
        }
        if word & WIDE != 0 {
            return Err(Error::corruption(
                file,
                "fixed-width block with offset flags",
            ));
        }
        let count = (word & FIXED_COUNT_MASK) as usize;
        let layout = FixedLayout {
            kw: data[len - TAIL_LEN],
            vw: data[len - TAIL_LEN + 1],
        };
        if layout.block_size(count) != Some(len) {
            return Err(Error::corruption(
                file,
                format!("fixed-width block of {count} entries ({layout:?}) is not {len} bytes"),
            ));
        }
        if count == 0 && !allow_empty {
            return Err(Error::corruption(file, "empty block"));
        }
        let block = Block {
            data,
            count,
            prefix_len: 0,
            offset_width: 0,
            offsets_at: len - TAIL_LEN,
            fixed: Some(FixedView::new(layout, 0, false)),
            warmed: std::sync::atomic::AtomicBool::new(false),
        };
        block.validate(0..count, file)?;
        Ok(block)
    }

    /// Decodes the chunks of a fixed-width block of `count` entries that hold entries
    /// `[from, to)`, as read from the block's bytes [`FixedLayout::chunk_span`] names.
    /// Every chunk's checksum is verified. The result answers [`entry`](Self::entry) for
    /// those entries only (others of the chunks read are not checked): a learned
    /// lookup's window, never cached or iterated.
    pub(crate) fn decode_chunks(
        data: Vec<u8>,
        layout: FixedLayout,
        count: usize,
        from: usize,
        to: usize,
        file: &str,
        at: u64,
    ) -> Result<Block> {
        let (span, first_chunk) = layout.chunk_span(count, from, to);
        if data.len() != span.len() {
            return Err(Error::corruption(
                file,
                format!(
                    "entry chunks at {at}: read {} bytes of {}",
                    data.len(),
                    span.len()
                ),
            ));
        }
        let view = FixedView::new(layout, first_chunk, true);
        let mut start = 0;
        let mut j = first_chunk;
        while start < data.len() {
            let entries = (count - j * CHUNK_ENTRIES).min(CHUNK_ENTRIES);
            let end = start + entries * view.entry_len;
            let stored = get_u32(&data, end).unwrap_or(0);
            let computed = chunk_crc(&data[start..end], j);
            if stored != computed {
                return Err(Error::corruption(
                    file,
                    format!(
                        "entry chunk {j} of the block at {at}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
                    ),
                ));
            }
            start = end + CHUNK_CRC_LEN;
            j += 1;
        }
        let block = Block {
            offsets_at: data.len(),
            data,
            count,
            prefix_len: 0,
            offset_width: 0,
            fixed: Some(view),
            warmed: std::sync::atomic::AtomicBool::new(false),
        };
        // Only the entries asked for are checked: a lookup reads no others.
        block.validate(from..to, file)?;
        Ok(block)
    }

    /// Whether this holds only some chunks of a fixed-width block.
    pub fn is_partial(&self) -> bool {
        self.fixed.is_some_and(|f| f.partial)
    }

    /// The fixed-width layout, for layout-3 blocks.
    pub fn fixed_layout(&self) -> Option<FixedLayout> {
        self.fixed.map(|f| f.layout)
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

    /// Entry `i` as (key suffix, value), if well formed.
    #[inline]
    fn parse(&self, i: usize) -> Option<(&[u8], &[u8])> {
        if let Some(f) = &self.fixed {
            return self.parse_fixed(f, i);
        }
        let at = self.offsets_at + self.offset_width * i;
        let off = if self.offset_width == 2 {
            usize::from(get_u16(&self.data, at)?)
        } else {
            get_u32(&self.data, at)? as usize
        };
        if off < self.prefix_len {
            return None;
        }
        let area = self.data.get(..self.offsets_at)?;
        let mut pos = off;
        // The whole key's length: only `klen - prefix_len` bytes follow (bounded below).
        let klen = usize::try_from(get_varint(area, &mut pos)?).ok()?;
        let vlen = get_len(area, &mut pos)?;
        let slen = klen
            .checked_sub(self.prefix_len)
            .filter(|&s| s >= TRAILER_LEN)?;
        let vpos = pos.checked_add(slen)?;
        let suffix = area.get(pos..vpos)?;
        let value = area.get(vpos..vpos.checked_add(vlen)?)?;
        Some((suffix, value))
    }

    /// Entry `i` of a layout-3 block, if held and well formed.
    #[inline]
    fn parse_fixed(&self, f: &FixedView, i: usize) -> Option<(&[u8], &[u8])> {
        let chunk = (i / CHUNK_ENTRIES).checked_sub(f.first_chunk)?;
        let at = chunk * f.chunk_len + (i % CHUNK_ENTRIES) * f.entry_len;
        let e = self
            .data
            .get(..self.offsets_at)?
            .get(at..at + f.entry_len)?;
        let kw = usize::from(f.layout.kw);
        let klen = usize::from(e[0]);
        let vlen = usize::from(e[1 + kw]);
        if klen < TRAILER_LEN || klen > kw || vlen > usize::from(f.layout.vw) {
            return None;
        }
        Some((&e[1..1 + klen], &e[2 + kw..2 + kw + vlen]))
    }

    /// Number of entries (at least 1 in a data block).
    pub fn entry_count(&self) -> usize {
        self.count
    }

    /// The user-key prefix all entries share (empty in layout 1).
    pub fn prefix(&self) -> &[u8] {
        // decode() checked prefix_len <= offsets_at <= data.len().
        &self.data[..self.prefix_len]
    }

    /// The `i`-th entry as (internal key, value). Panics only if `i >= entry_count()`.
    pub fn entry(&self, i: usize) -> (KeyRef<'_>, &[u8]) {
        assert!(i < self.count, "block entry {i} out of {}", self.count);
        // Validated in decode(); the fallback is unreachable.
        let (suffix, value) = self.parse(i).unwrap_or((&[], &[]));
        let key = KeyRef {
            prefix: self.prefix(),
            suffix,
        };
        (key, value)
    }

    /// The internal key of entry `i`.
    pub fn key(&self, i: usize) -> KeyRef<'_> {
        self.entry(i).0
    }

    /// The value of entry `i`.
    pub fn value(&self, i: usize) -> &[u8] {
        self.entry(i).1
    }

    /// Replaces the contents of `out` with the internal key of entry `i`.
    pub fn key_into(&self, i: usize, out: &mut Vec<u8>) {
        out.clear();
        self.key(i).append_to(out);
    }

    /// Index of the first entry whose internal key is >= `target` (`entry_count()` if none).
    pub fn seek(&self, target: &[u8]) -> usize {
        debug_assert!(
            !self.is_partial(),
            "a partial block is searched by its window"
        );
        // Compare the prefix once; then suffixes against the rest of the target.
        let rest = match split_target(self.prefix(), target) {
            Ok(rest) => rest,
            Err(Ordering::Less) => return self.count,
            Err(_) => return 0,
        };
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let suffix = self.parse(mid).map_or(&[][..], |e| e.0);
            if cmp_internal(suffix, rest) == Ordering::Less {
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
    use crate::types::{make_internal_key, make_lookup_key, ValueKind, MAX_SEQ};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    type Entry = (Vec<u8>, Vec<u8>);

    fn ikey(i: u32) -> Vec<u8> {
        make_internal_key(format!("key{i:06}").as_bytes(), 1, ValueKind::Value)
    }

    fn build(entries: &[Entry], v1: bool) -> Vec<u8> {
        let mut b = if v1 {
            BlockBuilder::v1()
        } else {
            BlockBuilder::default()
        };
        for (k, v) in entries {
            b.add(k, v);
        }
        let est = b.estimated_size();
        let data = b.finish();
        assert_eq!(data.len(), est, "estimated size is exact");
        assert!(b.is_empty());
        data
    }

    /// Whether the count word flags layout 2.
    fn prefixed(data: &[u8]) -> bool {
        data[data.len() - 1] & 0x80 != 0
    }

    /// Everything a decoded block answers agrees with `entries`.
    fn check_entries(blk: &Block, entries: &[Entry]) {
        assert_eq!(blk.entry_count(), entries.len());
        let mut buf = Vec::new();
        for (i, (k, v)) in entries.iter().enumerate() {
            let (key, value) = blk.entry(i);
            assert_eq!(key.to_vec(), *k);
            assert!(key == k[..]);
            assert_eq!(value, &v[..]);
            assert_eq!(blk.value(i), &v[..]);
            blk.key_into(i, &mut buf);
            assert_eq!(buf, *k);
            let pk = crate::types::parse_internal_key(k).unwrap();
            assert_eq!(key.user_key_vec(), pk.user_key);
            assert!(key.user_key_eq(pk.user_key));
            assert_eq!((key.seq(), key.value_kind()), (pk.seq, pk.value_kind()));
            assert!(key.parts().1.len() >= TRAILER_LEN);
        }
    }

    /// Random internal keys in order: user keys over a small alphabet after a shared head
    /// of random length (so blocks share prefixes of every length), several versions of
    /// some, values of random length.
    fn random_entries(rng: &mut SmallRng, n: usize, max_value: usize) -> Vec<Entry> {
        let head: Vec<u8> = (0..rng.random_range(0..12)).map(|_| rng.random()).collect();
        let mut out: Vec<Entry> = Vec::new();
        for _ in 0..n {
            let mut uk = head[..rng.random_range(0..=head.len())].to_vec();
            let tail = rng.random_range(0..6);
            uk.extend((0..tail).map(|_| rng.random_range(b'a'..=b'c')));
            let seq = rng.random_range(0..1000);
            let kind = [
                ValueKind::Deletion,
                ValueKind::Value,
                ValueKind::ValuePointer,
            ][rng.random_range(0..3)];
            let v: Vec<u8> = (0..rng.random_range(0..=max_value))
                .map(|_| rng.random())
                .collect();
            out.push((make_internal_key(&uk, seq, kind), v));
        }
        out.sort_by(|a, b| cmp_internal(&a.0, &b.0));
        out.dedup_by(|a, b| cmp_internal(&a.0, &b.0) == Ordering::Equal);
        out
    }

    /// Seek targets around `entries`: their keys and neighbouring sequence numbers, user
    /// keys cut inside and before the block's prefix, extended past it, keys before and
    /// after everything, and targets shorter than a trailer.
    fn targets(rng: &mut SmallRng, entries: &[Entry], prefix: &[u8]) -> Vec<Vec<u8>> {
        let mut t = vec![
            Vec::new(),
            b"a".to_vec(),
            make_lookup_key(b"", MAX_SEQ),
            make_lookup_key(b"", 0),
            make_lookup_key(&[0xff; 20], 0),
            prefix.to_vec(),
            make_lookup_key(prefix, MAX_SEQ),
            make_lookup_key(prefix, 0),
            [prefix, b"\xff"].concat(),
        ];
        let p = prefix.len();
        let cuts: Vec<usize> = if p <= 32 {
            (0..=p).collect()
        } else {
            vec![0, 1, p / 2, p - 1, p]
        };
        for l in cuts {
            t.push(make_lookup_key(&prefix[..l], MAX_SEQ));
            t.push(make_lookup_key(&prefix[..l], 0));
            t.push(prefix[..l].to_vec());
            if let Some((&last, head)) = prefix[..l].split_last() {
                for d in [1u8, 255] {
                    let bumped = [head, &[last.wrapping_add(d)]].concat();
                    t.push(make_lookup_key(&bumped, MAX_SEQ));
                }
            }
        }
        for (k, _) in entries {
            let pk = crate::types::parse_internal_key(k).unwrap();
            t.push(k.clone());
            for seq in [pk.seq.saturating_sub(1), pk.seq + 1, 0, MAX_SEQ] {
                t.push(make_lookup_key(pk.user_key, seq));
            }
            let cut = rng.random_range(0..=pk.user_key.len());
            t.push(make_lookup_key(&pk.user_key[..cut], MAX_SEQ));
            t.push(pk.user_key[..cut.min(7)].to_vec());
            t.push(make_lookup_key(&[pk.user_key, b"a"].concat(), 0));
        }
        for _ in 0..20 {
            let n = rng.random_range(0..20);
            t.push((0..n).map(|_| rng.random()).collect());
        }
        t
    }

    fn check_seeks(rng: &mut SmallRng, blk: &Block, entries: &[Entry]) {
        for t in targets(rng, entries, blk.prefix()) {
            let want = entries.partition_point(|(k, _)| cmp_internal(k, &t) == Ordering::Less);
            assert_eq!(
                blk.seek(&t),
                want,
                "seek {t:?} in a block with prefix {:?}",
                blk.prefix()
            );
            for i in [want.saturating_sub(1), want.min(entries.len() - 1)] {
                let key = blk.key(i);
                assert_eq!(key.cmp_internal(&t), cmp_internal(&entries[i].0, &t));
                let u = user_key(&t);
                assert_eq!(key.cmp_user_key(u), user_key(&entries[i].0).cmp(u));
                assert_eq!(key.user_key_eq(u), user_key(&entries[i].0) == u);
            }
        }
    }

    #[test]
    fn build_decode_seek() {
        for v1 in [false, true] {
            let entries: Vec<Entry> = (0..100)
                .map(|i| (ikey(i * 2), format!("v{i}").into_bytes()))
                .collect();
            let data = build(&entries, v1);
            assert_eq!(prefixed(&data), !v1);
            let blk = Block::decode(data, "t").unwrap();
            assert_eq!(blk.prefix(), if v1 { &b""[..] } else { b"key000" });
            check_entries(&blk, &entries);
            assert_eq!(blk.seek(&ikey(14)), 7);
            assert_eq!(blk.seek(&ikey(15)), 8);
            assert_eq!(blk.seek(&ikey(0)), 0);
            assert_eq!(blk.seek(&ikey(1000)), 100);
        }
    }

    /// The exact bytes of both layouts, so that a change to either is deliberate.
    #[test]
    fn layouts_byte_for_byte() {
        let entries = vec![
            (
                make_internal_key(b"ab1", 1, ValueKind::Value),
                b"x".to_vec(),
            ),
            (
                make_internal_key(b"ab2", 2, ValueKind::Deletion),
                Vec::new(),
            ),
        ];
        let t1 = [1, 1, 0, 0, 0, 0, 0, 0];
        let t2 = [0, 2, 0, 0, 0, 0, 0, 0];
        let mut v2 = b"ab".to_vec();
        v2.extend([11, 1, b'1']);
        v2.extend(t1);
        v2.push(b'x');
        v2.extend([11, 0, b'2']);
        v2.extend(t2);
        v2.extend([2, 0, 14, 0]); // u16 offsets
        v2.extend([2, 0]); // prefix length
        v2.extend([2, 0, 0, 0x80]); // count | PREFIXED
        assert_eq!(build(&entries, false), v2);
        let mut v1 = vec![11, 1, b'a', b'b', b'1'];
        v1.extend(t1);
        v1.push(b'x');
        v1.extend([11, 0, b'a', b'b', b'2']);
        v1.extend(t2);
        v1.extend([0, 0, 0, 0, 14, 0, 0, 0]); // u32 offsets
        v1.extend([2, 0, 0, 0]); // count
        assert_eq!(build(&entries, true), v1);
        for data in [v1, v2] {
            check_entries(&Block::decode(data, "t").unwrap(), &entries);
        }
    }

    #[test]
    fn random_blocks_round_trip_in_both_layouts() {
        let mut rng = SmallRng::seed_from_u64(5);
        for round in 0..300 {
            let n = rng.random_range(1..80);
            let entries = random_entries(&mut rng, n, 40);
            let mut sizes = [0; 2];
            for (j, v1) in [false, true].into_iter().enumerate() {
                let data = build(&entries, v1);
                sizes[j] = data.len();
                let blk = Block::decode(data, "t").unwrap();
                check_entries(&blk, &entries);
                check_seeks(&mut rng, &blk, &entries);
                let users = || entries.iter().map(|(k, _)| user_key(k));
                if v1 {
                    assert!(blk.prefix().is_empty());
                } else {
                    // The prefix is the longest one all user keys share.
                    let p = blk.prefix();
                    assert!(users().all(|u| u.starts_with(p)), "round {round}");
                    assert!(
                        users().any(|u| u.len() == p.len())
                            || users().any(|u| u[p.len()] != users().next().unwrap()[p.len()])
                    );
                }
            }
            // Layout 2 adds a prefix-length word and saves at least 2 bytes an entry (u16
            // offsets; the prefix is stored once instead of in every key).
            assert!(
                sizes[0] + 2 * entries.len() <= sizes[1] + 2,
                "round {round}"
            );
        }
    }

    #[test]
    fn keys_with_no_common_prefix() {
        let entries: Vec<Entry> = [&b""[..], b"a", b"b\x00", b"zz"]
            .iter()
            .map(|u| (make_internal_key(u, 3, ValueKind::Value), u.to_vec()))
            .collect();
        let blk = Block::decode(build(&entries, false), "t").unwrap();
        assert!(blk.prefix().is_empty());
        check_entries(&blk, &entries);
        check_seeks(&mut SmallRng::seed_from_u64(1), &blk, &entries);
    }

    /// Versions of one user key share all of it; the prefix stops before the trailers.
    #[test]
    fn versions_of_one_key_share_the_whole_user_key() {
        let entries: Vec<Entry> = (0..20u64)
            .rev()
            .map(|s| {
                (
                    make_internal_key(b"same", s, ValueKind::Value),
                    vec![s as u8],
                )
            })
            .collect();
        let blk = Block::decode(build(&entries, false), "t").unwrap();
        assert_eq!(blk.prefix(), b"same");
        check_entries(&blk, &entries);
        check_seeks(&mut SmallRng::seed_from_u64(2), &blk, &entries);
        // One entry: the prefix is its whole user key.
        let blk = Block::decode(build(&entries[..1], false), "t").unwrap();
        assert_eq!(blk.prefix(), b"same");
        check_seeks(&mut SmallRng::seed_from_u64(3), &blk, &entries[..1]);
        // The longest user keys share more than a u16 length can say: the prefix is capped.
        let long = vec![7u8; crate::types::MAX_KEY_SIZE];
        let entries: Vec<Entry> = (0..3u64)
            .rev()
            .map(|s| (make_internal_key(&long, s, ValueKind::Value), Vec::new()))
            .collect();
        let blk = Block::decode(build(&entries, false), "t").unwrap();
        assert_eq!(blk.prefix().len(), u16::MAX as usize);
        check_entries(&blk, &entries);
        check_seeks(&mut SmallRng::seed_from_u64(4), &blk, &entries);
    }

    /// Past 64 KiB of entries the offsets widen to u32; up to it they stay u16.
    #[test]
    fn offsets_widen_past_64_kib() {
        let entry = |i: u32, n: usize| (ikey(i), vec![i as u8; n]);
        // Prefix "key00000" (8), then 4 entries of 1 + 2 (lengths) + 9 (suffix) + value.
        let narrow: Vec<Entry> = (0..4)
            .map(|i| entry(i, (NARROW_AREA - 8) / 4 - 12))
            .collect();
        let data = build(&narrow, false);
        assert_eq!(data.len(), NARROW_AREA + 2 * 4 + TAIL_LEN);
        assert_eq!(data[data.len() - 1] & 0x40, 0);
        check_entries(&Block::decode(data, "t").unwrap(), &narrow);

        let mut rng = SmallRng::seed_from_u64(9);
        let mut wide = narrow.clone();
        wide.push(entry(4, 0));
        let data = build(&wide, false);
        assert_eq!(data.len(), NARROW_AREA + 11 + 4 * 5 + TAIL_LEN);
        assert_ne!(data[data.len() - 1] & 0x40, 0);
        let blk = Block::decode(data, "t").unwrap();
        check_entries(&blk, &wide);
        check_seeks(&mut rng, &blk, &wide);

        let big = random_entries(&mut rng, 400, 1000);
        let data = build(&big, false);
        assert!(data.len() > NARROW_AREA);
        let blk = Block::decode(data, "t").unwrap();
        check_entries(&blk, &big);
        check_seeks(&mut rng, &blk, &big);
    }

    /// Prefix compression on the keys the size benchmark uses (16-byte big-endian
    /// integers, 100-byte values): 113 bytes an entry, from 130.
    #[test]
    fn integer_keys_cost_less() {
        let entries: Vec<Entry> = (1024u128..1056)
            .map(|i| {
                (
                    make_internal_key(&i.to_be_bytes(), 9, ValueKind::Value),
                    vec![0; 100],
                )
            })
            .collect();
        assert_eq!(build(&entries, true).len(), 32 * 130 + 4);
        let data = build(&entries, false);
        assert_eq!(data.len(), 15 + 32 * 113 + TAIL_LEN);
        check_entries(&Block::decode(data, "t").unwrap(), &entries);
    }

    #[test]
    fn rejects_malformed() {
        assert!(Block::decode(vec![], "t").is_err());
        assert!(Block::decode(vec![0, 0, 0, 0], "t").is_err()); // empty
        assert!(Block::decode(vec![9, 0, 0, 0], "t").is_err()); // count too big
        let mut b = BlockBuilder::v1();
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
        let mut b = BlockBuilder::v1();
        b.add(b"abc", b"");
        assert!(Block::decode(b.finish(), "t").is_err());
    }

    #[test]
    fn rejects_malformed_prefixed() {
        let entries: Vec<Entry> = (0..3).map(|i| (ikey(i), b"val".to_vec())).collect();
        let good = build(&entries, false);
        let n = good.len();
        // [prefix "key00000" (8)] 3 x [19 3 "i" trailer(8) "val" ] = 14 bytes each
        // [offsets 8 22 36 (u16)] [prefix len 8 (u16)] [count word]
        assert_eq!(n, 8 + 3 * 14 + 6 + 6);
        assert!(Block::decode(good.clone(), "t").is_ok());
        let corrupt = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut d = good.clone();
            f(&mut d);
            Block::decode(d, "t")
        };
        let err = |f: &dyn Fn(&mut Vec<u8>)| corrupt(f).is_err();
        // Too short for the prefix-length word.
        assert!(Block::decode(vec![0, 0, 0, 0x80], "t").is_err());
        assert!(Block::decode(vec![0, 0, 0, 0, 0x80], "t").is_err());
        // Empty, but the prefix-length word is there.
        assert!(Block::decode(vec![0, 0, 0, 0, 0, 0x80], "t").is_err());
        assert!(Block::decode_with(vec![0, 0, 0, 0, 0, 0x80], "t", true).is_ok());
        // Prefix longer than the area before the offsets.
        assert!(err(
            &|d| d[n - 6..n - 4].copy_from_slice(&51u16.to_le_bytes())
        ));
        assert!(err(
            &|d| d[n - 6..n - 4].copy_from_slice(&u16::MAX.to_le_bytes())
        ));
        // Prefix longer than a key's user key: its suffix is shorter than a trailer.
        assert!(err(&|d| d[n - 6] = 12));
        // A shorter prefix makes the stored suffixes too short for their key lengths...
        // unless lengths still fit; either way nothing panics and keys stay trailer-long.
        if let Ok(b) = corrupt(&|d| d[n - 6] = 7) {
            assert!((0..3).all(|i| b.key(i).parts().1.len() >= TRAILER_LEN));
        }
        // Count too big for u16 offsets, and for u32 ones.
        assert!(err(&|d| d[n - 4] = 30));
        assert!(err(&|d| d[n - 1] |= 0x40));
        // All count bits set.
        assert!(err(&|d| d[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes())));
        // An offset into the prefix, even where the prefix bytes parse as an entry.
        let uk = [20, 0, 1, 2, 3, 4, 5, 6, 7, 8, b'x', b'y'];
        let one = build(
            &[(make_internal_key(&uk, 1, ValueKind::Value), Vec::new())],
            false,
        );
        assert!(Block::decode(one.clone(), "t").is_ok());
        let mut bad = one;
        let m = bad.len();
        assert_eq!(bad[m - 8], 12);
        bad[m - 8] = 0;
        assert!(Block::decode(bad, "t").is_err());
        // An offset into the prefix, past the area, or onto a non-entry.
        assert!(err(&|d| d[n - 12] = 3));
        assert!(err(&|d| d[n - 12] = 60));
        assert!(err(
            &|d| d[n - 12..n - 10].copy_from_slice(&u16::MAX.to_le_bytes())
        ));
        // A key length below prefix + trailer, and one past the area.
        assert!(err(&|d| d[8] = 15));
        assert!(err(&|d| d[8] = 100));
        // A value length past the area.
        assert!(err(&|d| d[8 + 28 + 1] = 100));
        // The same block with the layout flag cleared is not a valid layout-1 block.
        assert!(err(&|d| d[n - 1] = 0));
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = SmallRng::seed_from_u64(11);
        for round in 0..40_000 {
            let n = rng.random_range(0..200);
            let mut data: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            let prefixed = round % 2 == 1;
            let tail = if prefixed { TAIL_LEN } else { 4 };
            let width = if prefixed && rng.random_bool(0.5) {
                2
            } else {
                4
            };
            // Make the count plausible often, so that entry parsing is exercised too.
            if n >= tail + 2 * width && rng.random_bool(0.7) {
                let c = rng.random_range(1..=((n - tail) / width) as u32);
                let l = data.len();
                let mut word = c;
                if prefixed {
                    word |= PREFIXED | if width == 4 { WIDE } else { 0 };
                    let area = l - tail - width * c as usize;
                    let p = match rng.random_range(0..4) {
                        0 => 0,
                        1 => rng.random_range(0..=area.min(20)),
                        2 => rng.random_range(0..=area),
                        _ => rng.random::<u16>() as usize,
                    };
                    let p = p as u16;
                    data[l - 6..l - 4].copy_from_slice(&p.to_le_bytes());
                }
                data[l - 4..].copy_from_slice(&word.to_le_bytes());
                if rng.random_bool(0.5) {
                    for j in 0..c as usize {
                        let o: u32 = rng.random_range(0..n as u32);
                        let at = l - tail - width * (c as usize) + width * j;
                        data[at..at + width].copy_from_slice(&o.to_le_bytes()[..width]);
                    }
                }
            }
            let targets: Vec<Vec<u8>> = vec![
                b"somekey\0\0\0\0\0\0\0\0".to_vec(),
                Vec::new(),
                b"s".to_vec(),
                data.iter().take(12).copied().collect(),
            ];
            if let Ok(b) = Block::decode(data, "t") {
                for i in 0..b.entry_count() {
                    let (k, _) = b.entry(i);
                    assert!(k.parts().1.len() >= TRAILER_LEN);
                    let _ = (k.to_vec(), k.user_key_vec(), k.seq(), k.value_kind());
                    for t in &targets {
                        let _ = (k.cmp_internal(t), k.cmp_user_key(t), k.user_key_eq(t));
                    }
                }
                for t in &targets {
                    assert!(b.seek(t) <= b.entry_count());
                }
            }
        }
    }

    fn build_fixed(entries: &[Entry]) -> (Vec<u8>, Option<FixedLayout>) {
        let mut b = BlockBuilder::fixed_width();
        for (k, v) in entries {
            b.add(k, v);
        }
        let est = b.estimated_size();
        let (data, layout) = b.finish_with_layout();
        assert_eq!(data.len(), est, "estimated size is exact");
        assert!(b.is_empty());
        (data, layout)
    }

    /// Layout 3 round-trips random blocks of short entries, seeks as the other layouts do,
    /// and every window's chunks decode on their own to the same entries.
    #[test]
    fn fixed_width_blocks_and_their_chunks() {
        let mut rng = SmallRng::seed_from_u64(31);
        for round in 0..300 {
            let n_entries = rng.random_range(1..120);
            let entries = random_entries(&mut rng, n_entries, 40);
            let (data, layout) = build_fixed(&entries);
            let Some(layout) = layout else {
                // Padding would more than double the block (keys of very mixed lengths).
                let (k, v) = entries
                    .iter()
                    .fold((0, 0), |(k, v), e| (e.0.len().max(k), e.1.len().max(v)));
                let padded = FixedLayout {
                    kw: k as u8,
                    vw: v as u8,
                };
                assert!(
                    padded.block_size(entries.len()).unwrap() > 2 * data.len(),
                    "round {round}"
                );
                assert!(Block::decode(data, "t").unwrap().fixed_layout().is_none());
                continue;
            };
            let longest = entries.iter().map(|e| e.0.len()).max().unwrap();
            assert_eq!(usize::from(layout.kw), longest);
            assert_eq!(layout.block_size(entries.len()), Some(data.len()));
            let blk = Block::decode(data.clone(), "t").unwrap();
            assert_eq!(blk.fixed_layout(), Some(layout));
            assert!(!blk.is_partial());
            check_entries(&blk, &entries);
            check_seeks(&mut rng, &blk, &entries);
            let n = entries.len();
            for _ in 0..20 {
                let from = rng.random_range(0..n);
                let to = rng.random_range(from + 1..=n);
                let (span, c0) = layout.chunk_span(n, from, to);
                assert_eq!(c0, from / CHUNK_ENTRIES);
                let part = data[span.clone()].to_vec();
                let p = Block::decode_chunks(part.clone(), layout, n, from, to, "t", 0).unwrap();
                assert!(p.is_partial());
                assert_eq!(p.entry_count(), n);
                for (i, e) in entries.iter().enumerate().take(to).skip(from) {
                    let (k, v) = p.entry(i);
                    assert_eq!((k.to_vec(), v), (e.0.clone(), &e.1[..]));
                }
                // Any flipped byte fails its chunk's checksum.
                let mut bad = part.clone();
                let at = rng.random_range(0..bad.len());
                bad[at] ^= 1 << rng.random_range(0..8);
                assert!(Block::decode_chunks(bad, layout, n, from, to, "t", 0).is_err());
                // Chunks read from the wrong place fail too, even when whole and intact.
                if n > CHUNK_ENTRIES * 2 && to <= CHUNK_ENTRIES {
                    let (other, _) = layout.chunk_span(n, CHUNK_ENTRIES, CHUNK_ENTRIES + 1);
                    let moved = data[other].to_vec();
                    assert!(Block::decode_chunks(moved, layout, n, from, to, "t", 0).is_err());
                }
                // A short read is refused.
                let short = part[..part.len() - 1].to_vec();
                assert!(Block::decode_chunks(short, layout, n, from, to, "t", 0).is_err());
            }
        }
    }

    #[test]
    fn long_entries_keep_the_variable_layout() {
        let short: Vec<Entry> = (0..50).map(|i| (ikey(i), vec![7; 12])).collect();
        let (_, layout) = build_fixed(&short);
        assert_eq!(
            layout,
            Some(FixedLayout {
                kw: ikey(0).len() as u8,
                vw: 12
            })
        );
        let mut long_value = short.clone();
        long_value[10].1 = vec![1; 256];
        let (data, layout) = build_fixed(&long_value);
        assert_eq!(layout, None);
        check_entries(&Block::decode(data, "t").unwrap(), &long_value);
        // One long key among short ones would more than double the block: layout 2.
        let mut mixed: Vec<Entry> = (0..50)
            .map(|i| {
                (
                    make_internal_key(&[b'k', i as u8], 1, ValueKind::Value),
                    vec![],
                )
            })
            .collect();
        mixed[49].0 = make_internal_key(&[b'k'; 200], 1, ValueKind::Value);
        mixed.sort_by(|a, b| cmp_internal(&a.0, &b.0));
        let (data, layout) = build_fixed(&mixed);
        assert_eq!(layout, None);
        check_entries(&Block::decode(data, "t").unwrap(), &mixed);
        assert_eq!(FixedLayout::from_code(0), None);
        let l = FixedLayout { kw: 255, vw: 0 };
        assert_eq!(FixedLayout::from_code(l.to_code()), Some(l));
    }

    /// Damaged layout-3 blocks (checksums forged, so only structure is checked) decode to
    /// an error or to a block whose every entry can be read.
    #[test]
    fn fixed_width_garbage_never_panics() {
        let mut rng = SmallRng::seed_from_u64(12);
        let entries = random_entries(&mut rng, 60, 20);
        let (good, layout) = build_fixed(&entries);
        assert!(layout.is_some());
        for _ in 0..20_000 {
            let mut data = good.clone();
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..data.len());
                data[i] = rng.random();
            }
            if rng.random_bool(0.1) {
                data.truncate(rng.random_range(0..data.len()));
            }
            if let Ok(b) = Block::decode(data, "t") {
                for i in 0..b.entry_count() {
                    let (k, _) = b.entry(i);
                    let _ = (k.to_vec(), k.seq(), k.value_kind());
                }
                let _ = b.seek(&entries[5].0);
            }
        }
    }
}
