//! Write batches: a group of updates applied atomically, and their encoding in the WAL.
//!
//! A batch keeps its operations already encoded in the WAL record format, so logging a
//! batch is one copy and group commit is a concatenation. Encoded batch:
//! `[first seq: u64 LE][count: u32 LE]` then per operation
//! `[kind: u8][cf: varint][key len: varint][key][value len: varint][value]`.
//! Operation `i` gets sequence number `first_seq + i`.

use crate::coding::put_varint;
use crate::ids::CfId;
use crate::types::{check_key, check_value, SeqNo, MAX_KEY_SIZE, MAX_SEQ, MAX_VALUE_SIZE};
use crate::{Error, Result};

/// Length of the encoded batch header (first sequence number and count).
pub const BATCH_HEADER_LEN: usize = 12;

/// The column family used by the operations without a `_cf` suffix.
pub const DEFAULT_CF: CfId = CfId::DEFAULT;

/// What a batch operation does. The discriminants are the kind bytes in the WAL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BatchOpKind {
    /// Removes a key.
    Delete = 0,
    /// Sets a key to a value.
    Put = 1,
    /// Removes the keys in `[key, value)`.
    DeleteRange = 2,
}

impl BatchOpKind {
    fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(BatchOpKind::Delete),
            1 => Some(BatchOpKind::Put),
            2 => Some(BatchOpKind::DeleteRange),
            _ => None,
        }
    }
}

/// One operation of a batch, borrowed from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchOp<'a> {
    /// Column family id ([`CfId::DEFAULT`] is the default one).
    pub cf: CfId,
    /// What the operation does.
    pub kind: BatchOpKind,
    /// The key (the start key of a range).
    pub key: &'a [u8],
    /// The value; the exclusive end key for `DeleteRange`; empty for `Delete`.
    pub value: &'a [u8],
}

/// A group of updates applied atomically, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteBatch {
    /// The encoded operations (the encoding without its header).
    rep: Vec<u8>,
    count: u32,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value` in the default column family.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_cf(DEFAULT_CF, key, value)
    }

    /// Sets `key` to `value` in column family `cf`.
    pub fn put_cf(&mut self, cf: CfId, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        self.push(BatchOpKind::Put, cf, key, value)
    }

    /// Removes `key` from the default column family.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.delete_cf(DEFAULT_CF, key)
    }

    /// Removes `key` from column family `cf`.
    pub fn delete_cf(&mut self, cf: CfId, key: &[u8]) -> Result<()> {
        check_key(key)?;
        self.push(BatchOpKind::Delete, cf, key, &[])
    }

    /// Removes the keys in `[start, end)` from the default column family.
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) -> Result<()> {
        self.delete_range_cf(DEFAULT_CF, start, end)
    }

    /// Removes the keys in `[start, end)` from column family `cf`. `start > end` is an
    /// invalid argument; `start == end` is an empty range.
    pub fn delete_range_cf(&mut self, cf: CfId, start: &[u8], end: &[u8]) -> Result<()> {
        check_key(start)?;
        check_key(end)?;
        if start > end {
            return Err(Error::InvalidArgument(
                "delete_range start key is after its end key".into(),
            ));
        }
        self.push(BatchOpKind::DeleteRange, cf, start, end)
    }

    fn push(&mut self, kind: BatchOpKind, cf: CfId, key: &[u8], value: &[u8]) -> Result<()> {
        let Some(count) = self.count.checked_add(1) else {
            return Err(Error::InvalidArgument(
                "write batch holds too many operations".into(),
            ));
        };
        self.rep.push(kind as u8);
        put_varint(&mut self.rep, u64::from(cf.get()));
        put_varint(&mut self.rep, key.len() as u64);
        self.rep.extend_from_slice(key);
        put_varint(&mut self.rep, value.len() as u64);
        self.rep.extend_from_slice(value);
        self.count = count;
        Ok(())
    }

    /// Number of operations (and of sequence numbers the batch consumes).
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True if the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.count = 0;
    }

    /// Size of the encoded batch in bytes.
    pub fn approximate_size(&self) -> usize {
        BATCH_HEADER_LEN + self.rep.len()
    }

    /// The operations, in order.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            rest: &self.rep,
            left: self.count,
        }
    }

    /// Appends the operations of `other` after this batch's.
    ///
    /// # Panics
    /// If the combined batch would hold more than `u32::MAX` operations.
    pub fn append(&mut self, other: &WriteBatch) {
        self.count = self
            .count
            .checked_add(other.count)
            .expect("write batch holds more than u32::MAX operations");
        self.rep.extend_from_slice(&other.rep);
    }

    /// Encodes the batch for the WAL, its operations numbered from `first_seq`.
    pub fn encode(&self, first_seq: SeqNo) -> Vec<u8> {
        Self::encode_all(&[self], first_seq)
    }

    /// Encodes `batches` as one record, as [`encode`](Self::encode) encodes them appended
    /// to each other (a commit group's record), without building that batch.
    ///
    /// # Panics
    /// If they hold more than `u32::MAX` operations together.
    pub(crate) fn encode_all(batches: &[&WriteBatch], first_seq: SeqNo) -> Vec<u8> {
        let count = batches
            .iter()
            .try_fold(0u32, |n, b| n.checked_add(b.count))
            .expect("write batches hold more than u32::MAX operations");
        let size = BATCH_HEADER_LEN + batches.iter().map(|b| b.rep.len()).sum::<usize>();
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&first_seq.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
        for b in batches {
            out.extend_from_slice(&b.rep);
        }
        out
    }

    /// Decodes a batch written by [`encode`](Self::encode), checking every field; returns
    /// the first sequence number and the batch. Never allocates more than `data.len()`.
    pub fn decode(data: &[u8]) -> Result<(SeqNo, WriteBatch)> {
        let corrupt = |detail: String| Error::corruption("write batch", detail);
        if data.len() < BATCH_HEADER_LEN {
            return Err(corrupt(format!(
                "{} bytes is shorter than the header",
                data.len()
            )));
        }
        let (header, rep) = data.split_at(BATCH_HEADER_LEN);
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&header[..8]);
        let first_seq = u64::from_le_bytes(seq);
        let count = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        if first_seq
            .checked_add(count as u64)
            .is_none_or(|end| end > MAX_SEQ + 1)
        {
            return Err(corrupt(format!(
                "sequence numbers {first_seq}+{count} exceed the maximum"
            )));
        }
        let mut rest = rep;
        let mut found: u64 = 0;
        while !rest.is_empty() {
            parse_op(&mut rest).map_err(|e| corrupt(format!("operation {found}: {e}")))?;
            found += 1;
        }
        if found != count as u64 {
            return Err(corrupt(format!(
                "header says {count} operations, found {found}"
            )));
        }
        Ok((
            first_seq,
            WriteBatch {
                rep: rep.to_vec(),
                count,
            },
        ))
    }
}

impl<'a> IntoIterator for &'a WriteBatch {
    type Item = BatchOp<'a>;
    type IntoIter = BatchIter<'a>;
    fn into_iter(self) -> BatchIter<'a> {
        self.iter()
    }
}

/// Iterator over the operations of a [`WriteBatch`].
pub struct BatchIter<'a> {
    rest: &'a [u8],
    left: u32,
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = BatchOp<'a>;

    fn next(&mut self) -> Option<BatchOp<'a>> {
        if self.left == 0 {
            return None;
        }
        // A batch's encoding is built by `push` or checked by `decode`, so it parses.
        let op = parse_op(&mut self.rest).ok();
        debug_assert!(op.is_some(), "unparsable write batch");
        self.left = if op.is_some() { self.left - 1 } else { 0 };
        op
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left as usize))
    }
}

/// Parses one operation off the front of `buf`, checking kinds and size limits.
fn parse_op<'a>(buf: &mut &'a [u8]) -> Result<BatchOp<'a>, String> {
    let (&kind_byte, rest) = buf.split_first().ok_or("missing kind")?;
    *buf = rest;
    let kind = BatchOpKind::from_u8(kind_byte).ok_or(format!("unknown kind {kind_byte}"))?;
    let cf = u32::try_from(get_varint(buf)?).map_err(|_| "column family id too large")?;
    let cf = CfId::new(cf);
    let key = get_slice(buf, MAX_KEY_SIZE, "key")?;
    let value_limit = match kind {
        BatchOpKind::Put => MAX_VALUE_SIZE,
        BatchOpKind::DeleteRange => MAX_KEY_SIZE,
        BatchOpKind::Delete => 0,
    };
    let value = get_slice(buf, value_limit, "value")?;
    if kind == BatchOpKind::DeleteRange && key > value {
        return Err("range start after its end".into());
    }
    Ok(BatchOp {
        cf,
        kind,
        key,
        value,
    })
}

fn get_slice<'a>(buf: &mut &'a [u8], limit: usize, what: &str) -> Result<&'a [u8], String> {
    let len = get_varint(buf)?;
    if len > limit as u64 {
        return Err(format!("{what} length {len} over the limit {limit}"));
    }
    let len = len as usize;
    if buf.len() < len {
        return Err(format!("{what} of {len} bytes runs past the end"));
    }
    let (s, rest) = buf.split_at(len);
    *buf = rest;
    Ok(s)
}

/// Reads a canonical varint (so a decoded batch re-encodes to the same bytes).
fn get_varint(buf: &mut &[u8]) -> Result<u64, String> {
    let mut pos = 0;
    let v = crate::coding::get_varint(buf, &mut pos)
        .ok_or_else(|| "bad, overlong or truncated varint".to_string())?;
    *buf = &buf[pos..];
    Ok(v)
}

#[cfg(test)]
mod tests;
