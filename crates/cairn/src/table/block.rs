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
}

/// The entry at byte `off` of a layout-1/2 block's entry area `area` as (key suffix,
/// value), if it lies whole inside the area. Entries share the block's first
/// `prefix_len` bytes as their user-key prefix.
#[inline(always)]
fn parse_at(area: &[u8], off: usize, prefix_len: usize) -> Option<(&[u8], &[u8])> {
    if off < prefix_len {
        return None;
    }
    let mut pos = off;
    // The whole key's length: only `klen - prefix_len` bytes follow (bounded below).
    let klen = usize::try_from(get_varint(area, &mut pos)?).ok()?;
    let vlen = get_len(area, &mut pos)?;
    let slen = klen.checked_sub(prefix_len).filter(|&s| s >= TRAILER_LEN)?;
    let vpos = pos.checked_add(slen)?;
    let suffix = area.get(pos..vpos)?;
    let value = area.get(vpos..vpos.checked_add(vlen)?)?;
    Some((suffix, value))
}

/// Whether [`parse_at`] finds an entry at `off`, answered without decoding it where both
/// lengths take one byte each (keys and values under 128 bytes, the common case).
#[inline(always)]
fn entry_fits(area: &[u8], off: usize, prefix_len: usize) -> bool {
    if off >= prefix_len && off.checked_add(2).is_some_and(|e| e <= area.len()) {
        let (k, v) = (area[off], area[off + 1]);
        if (k | v) < 0x80 {
            let (k, v) = (usize::from(k), usize::from(v));
            // The suffix then the value end inside the area (which implies each lies in it).
            return k >= prefix_len + TRAILER_LEN && off + 2 + (k - prefix_len) + v <= area.len();
        }
    }
    parse_at(area, off, prefix_len).is_some()
}

impl Drop for Block {
    /// The buffer goes back to this thread's spares for the next block read
    /// (`block_buffers`).
    fn drop(&mut self) {
        super::block_buffers::give(std::mem::take(&mut self.data));
    }
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
        };
        if !block.all_entries_parse() {
            // The slow pass names the entry.
            block.validate(0..count, file)?;
            return Err(bad("block entries are malformed".into()));
        }
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
        let area = self.data.get(..self.offsets_at)?;
        parse_at(area, off, self.prefix_len)
    }

    /// Whether every entry of a layout-1/2 block parses: [`parse`](Self::parse) of each,
    /// with the offsets read in one pass and the bounds derived once (checking entry by
    /// entry through `parse` was 16% of a cached readrandom's instructions).
    fn all_entries_parse(&self) -> bool {
        let Some(area) = self.data.get(..self.offsets_at) else {
            return false;
        };
        let end = self.offsets_at + self.count * self.offset_width;
        let Some(offsets) = self.data.get(self.offsets_at..end) else {
            return false;
        };
        let ok = |off: usize| entry_fits(area, off, self.prefix_len);
        match self.offset_width {
            2 => offsets
                .chunks_exact(2)
                .all(|c| ok(usize::from(u16::from_le_bytes([c[0], c[1]])))),
            _ => offsets
                .chunks_exact(4)
                .all(|c| ok(u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize)),
        }
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
#[path = "block_tests.rs"]
mod tests;
