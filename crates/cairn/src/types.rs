//! Internal keys: a user key followed by an 8-byte trailer `(seq << 8) | kind`, stored
//! little-endian. Internal keys sort by user key ascending, then by trailer descending, so
//! the newest version of a key comes first. The same encoding is used in memtables, the WAL
//! replay path and SSTables.

use std::cmp::Ordering;

/// A sequence number: every write gets the next one; snapshots are sequence numbers.
pub type SeqNo = u64;

/// The largest sequence number that fits in a trailer (56 bits).
pub const MAX_SEQ: SeqNo = (1 << 56) - 1;

/// Longest user key accepted, in bytes.
pub const MAX_KEY_SIZE: usize = 64 * 1024;
/// Longest value accepted, in bytes.
pub const MAX_VALUE_SIZE: usize = 64 * 1024 * 1024;

/// Length of the trailer appended to a user key.
pub const TRAILER_LEN: usize = 8;

/// What an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone.
    Deletion = 0,
    /// A value stored inline.
    Value = 1,
    /// A pointer into a value log (key-value separation); the entry's value is the pointer.
    ValuePointer = 2,
}

/// Kind byte used in lookup keys: the highest kind, so a lookup key sorts before every
/// entry with the same user key and sequence number.
pub const KIND_FOR_SEEK: u8 = 0xff;

impl ValueKind {
    /// Decodes a kind byte.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(ValueKind::Deletion),
            1 => Some(ValueKind::Value),
            2 => Some(ValueKind::ValuePointer),
            _ => None,
        }
    }
}

/// Packs a trailer.
#[inline]
pub fn pack_trailer(seq: SeqNo, kind: u8) -> u64 {
    debug_assert!(seq <= MAX_SEQ);
    (seq << 8) | kind as u64
}

/// Builds an internal key.
pub fn make_internal_key(user_key: &[u8], seq: SeqNo, kind: ValueKind) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    k.extend_from_slice(user_key);
    k.extend_from_slice(&pack_trailer(seq, kind as u8).to_le_bytes());
    k
}

/// A lookup key held inline for user keys up to 56 bytes: a point read builds one for
/// each memtable and one for the tables, and allocating them was about 1% of a cached get.
pub enum LookupKey {
    /// The key in the first `.1` bytes.
    Inline([u8; 64], u8),
    /// A longer key.
    Heap(Vec<u8>),
}

impl std::ops::Deref for LookupKey {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            LookupKey::Inline(b, n) => &b[..usize::from(*n)],
            LookupKey::Heap(v) => v,
        }
    }
}

/// [`make_lookup_key`] without a heap allocation for short keys.
pub fn lookup_key(user_key: &[u8], seq: SeqNo) -> LookupKey {
    let n = user_key.len() + TRAILER_LEN;
    if n > 64 {
        return LookupKey::Heap(make_lookup_key(user_key, seq));
    }
    let mut b = [0u8; 64];
    b[..user_key.len()].copy_from_slice(user_key);
    b[user_key.len()..n].copy_from_slice(&pack_trailer(seq, KIND_FOR_SEEK).to_le_bytes());
    LookupKey::Inline(b, n as u8)
}

/// Builds the key to seek to for the newest version of `user_key` visible at `seq`.
pub fn make_lookup_key(user_key: &[u8], seq: SeqNo) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    k.extend_from_slice(user_key);
    k.extend_from_slice(&pack_trailer(seq, KIND_FOR_SEEK).to_le_bytes());
    k
}

/// The trailer of a table bound set by a range deletion rather than an entry: the
/// highest trailer, so the bound sorts before every entry of its user key. As a table's
/// largest key it marks that user key as excluded (a deletion's end is exclusive); as its
/// smallest, as included.
pub const RANGE_BOUND_TRAILER: u64 = (MAX_SEQ << 8) | KIND_FOR_SEEK as u64;

/// A table bound at user key `k` set by a range deletion (see [`RANGE_BOUND_TRAILER`]).
pub fn range_bound_key(k: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(k.len() + TRAILER_LEN);
    b.extend_from_slice(k);
    b.extend_from_slice(&RANGE_BOUND_TRAILER.to_le_bytes());
    b
}

/// True when `ikey` is a range deletion's bound (see [`RANGE_BOUND_TRAILER`]).
pub fn is_range_bound(ikey: &[u8]) -> bool {
    ikey.len() >= TRAILER_LEN && trailer(ikey) == RANGE_BOUND_TRAILER
}

/// A decoded view of an internal key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The user key.
    pub user_key: &'a [u8],
    /// The sequence number.
    pub seq: SeqNo,
    /// The kind byte (may be `KIND_FOR_SEEK` in lookup keys).
    pub kind: u8,
}

impl ParsedKey<'_> {
    /// The entry kind, if the kind byte is a valid one.
    pub fn value_kind(&self) -> Option<ValueKind> {
        ValueKind::from_u8(self.kind)
    }
}

/// Splits an internal key; `None` if it is shorter than a trailer.
#[inline]
pub fn parse_internal_key(ikey: &[u8]) -> Option<ParsedKey<'_>> {
    if ikey.len() < TRAILER_LEN {
        return None;
    }
    let (user_key, t) = ikey.split_at(ikey.len() - TRAILER_LEN);
    let trailer = u64::from_le_bytes(t.try_into().ok()?);
    Some(ParsedKey {
        user_key,
        seq: trailer >> 8,
        kind: (trailer & 0xff) as u8,
    })
}

/// The user-key part of an internal key (the whole slice if it is too short).
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    if ikey.len() < TRAILER_LEN {
        ikey
    } else {
        &ikey[..ikey.len() - TRAILER_LEN]
    }
}

/// The trailer of an internal key (0 if it is shorter than a trailer).
#[inline]
pub(crate) fn trailer(ikey: &[u8]) -> u64 {
    if ikey.len() < TRAILER_LEN {
        return 0;
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&ikey[ikey.len() - TRAILER_LEN..]);
    u64::from_le_bytes(b)
}

/// Orders internal keys: user key ascending, then trailer (sequence) descending.
#[inline]
pub fn cmp_internal(a: &[u8], b: &[u8]) -> Ordering {
    match user_key(a).cmp(user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// An owned internal key with the internal ordering, for ordered containers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InternalKey(pub Vec<u8>);

impl InternalKey {
    /// Builds one.
    pub fn new(user_key: &[u8], seq: SeqNo, kind: ValueKind) -> Self {
        InternalKey(make_internal_key(user_key, seq, kind))
    }
    /// The user key.
    pub fn user_key(&self) -> &[u8] {
        user_key(&self.0)
    }
    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_internal(&self.0, &other.0)
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Checks a key against the documented limits.
pub fn check_key(key: &[u8]) -> crate::Result<()> {
    if key.len() > MAX_KEY_SIZE {
        return Err(crate::Error::TooLarge {
            what: "key",
            len: key.len(),
            limit: MAX_KEY_SIZE,
        });
    }
    Ok(())
}

/// Checks a value against the documented limits.
pub fn check_value(value: &[u8]) -> crate::Result<()> {
    if value.len() > MAX_VALUE_SIZE {
        return Err(crate::Error::TooLarge {
            what: "value",
            len: value.len(),
            limit: MAX_VALUE_SIZE,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_version_sorts_first() {
        let a = make_internal_key(b"k", 5, ValueKind::Value);
        let b = make_internal_key(b"k", 9, ValueKind::Value);
        let c = make_internal_key(b"l", 1, ValueKind::Value);
        assert_eq!(cmp_internal(&b, &a), Ordering::Less);
        assert_eq!(cmp_internal(&a, &c), Ordering::Less);
        let look = make_lookup_key(b"k", 9);
        assert_eq!(&*lookup_key(b"k", 9), look.as_slice());
        let long = vec![7u8; 57];
        assert_eq!(&*lookup_key(&long, 9), make_lookup_key(&long, 9).as_slice());
        assert!(matches!(lookup_key(&long[..56], 9), LookupKey::Inline(..)));
        assert_eq!(cmp_internal(&look, &b), Ordering::Less);
        let p = parse_internal_key(&b).unwrap();
        assert_eq!((p.user_key, p.seq, p.kind), (&b"k"[..], 9, 1));
    }
}
