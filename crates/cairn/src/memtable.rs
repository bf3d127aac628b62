//! The memtable: recent writes in a lock-free skip list keyed by internal key.
//!
//! One writer at a time inserts (the DB serialises writers); any number of readers get and
//! iterate concurrently without locks. Entries are never removed: a memtable is dropped
//! whole after it has been flushed.

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_skiplist::SkipMap;

use crate::iter::InternalIterator;
use crate::types::{
    make_lookup_key, parse_internal_key, InternalKey, SeqNo, ValueKind, MAX_SEQ, TRAILER_LEN,
};
use crate::Result;

/// Estimated bytes per entry beyond its key and value: the skip-list node and tower, the
/// key and value headers, and allocator slack.
pub const ENTRY_OVERHEAD: usize = 80;

/// An in-memory sorted table of recent writes.
pub struct Memtable {
    id: u64,
    map: SkipMap<InternalKey, Box<[u8]>>,
    memory: AtomicUsize,
    entries: AtomicUsize,
    /// `u64::MAX` while empty.
    min_seq: AtomicU64,
    max_seq: AtomicU64,
}

impl Memtable {
    /// An empty memtable; `id` identifies it to the DB (for example its WAL number).
    pub fn new(id: u64) -> Self {
        Memtable {
            id,
            map: SkipMap::new(),
            memory: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            min_seq: AtomicU64::new(u64::MAX),
            max_seq: AtomicU64::new(0),
        }
    }

    /// The id given at creation.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Inserts an entry. Callers must not insert concurrently with each other, and each
    /// `(user_key, seq)` must be new (sequence numbers are unique per write).
    pub fn add(&self, seq: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        debug_assert!(seq <= MAX_SEQ);
        let size = user_key.len() + TRAILER_LEN + value.len() + ENTRY_OVERHEAD;
        self.map
            .insert(InternalKey::new(user_key, seq, kind), value.into());
        self.min_seq.fetch_min(seq, Ordering::Relaxed);
        self.max_seq.fetch_max(seq, Ordering::Relaxed);
        self.entries.fetch_add(1, Ordering::Relaxed);
        self.memory.fetch_add(size, Ordering::Relaxed);
    }

    /// The newest version of `user_key` with a sequence number <= `snapshot_seq`, as its
    /// kind and value (a `Deletion` is returned as such, for the caller to interpret).
    pub fn get(&self, user_key: &[u8], snapshot_seq: SeqNo) -> Option<(ValueKind, Vec<u8>)> {
        let lookup = InternalKey(make_lookup_key(user_key, snapshot_seq.min(MAX_SEQ)));
        let entry = self.map.lower_bound(Bound::Included(&lookup))?;
        let parsed = parse_internal_key(&entry.key().0)?;
        if parsed.user_key != user_key {
            return None;
        }
        Some((parsed.value_kind()?, entry.value().to_vec()))
    }

    /// Estimated memory held by the entries, in bytes.
    pub fn approximate_memory_usage(&self) -> usize {
        self.memory.load(Ordering::Relaxed)
    }

    /// Number of entries.
    pub fn num_entries(&self) -> usize {
        self.entries.load(Ordering::Relaxed)
    }

    /// True if nothing has been added.
    pub fn is_empty(&self) -> bool {
        self.num_entries() == 0
    }

    /// Smallest sequence number added, `None` while empty.
    pub fn min_seq(&self) -> Option<SeqNo> {
        let s = self.min_seq.load(Ordering::Relaxed);
        (s != u64::MAX).then_some(s)
    }

    /// Largest sequence number added, `None` while empty.
    pub fn max_seq(&self) -> Option<SeqNo> {
        self.min_seq()?;
        Some(self.max_seq.load(Ordering::Relaxed))
    }

    /// An iterator over all entries in internal order. It sees entries added while it
    /// is in use when it moves past their position.
    pub fn iter(self: &Arc<Self>) -> MemtableIterator {
        MemtableIterator {
            mem: Arc::clone(self),
            key: InternalKey(Vec::new()),
            value: Vec::new(),
            valid: false,
        }
    }
}

/// Where to position a [`MemtableIterator`] relative to its current key.
#[derive(Clone, Copy)]
enum Target {
    First,
    Last,
    AtOrAfter,
    After,
    AtOrBefore,
    Before,
}

/// A cursor over a memtable. Skip-list entries borrow the map, so the cursor keeps a copy
/// of the current entry and re-seeks from its key on each move (O(log n) per step).
pub struct MemtableIterator {
    mem: Arc<Memtable>,
    /// The current key when valid; the seek target while positioning.
    key: InternalKey,
    value: Vec<u8>,
    valid: bool,
}

impl MemtableIterator {
    fn position(&mut self, target: Target) {
        let map = &self.mem.map;
        let entry = match target {
            Target::First => map.front(),
            Target::Last => map.back(),
            Target::AtOrAfter => map.lower_bound(Bound::Included(&self.key)),
            Target::After => map.lower_bound(Bound::Excluded(&self.key)),
            Target::AtOrBefore => map.upper_bound(Bound::Included(&self.key)),
            Target::Before => map.upper_bound(Bound::Excluded(&self.key)),
        };
        self.valid = entry.is_some();
        if let Some(e) = entry {
            self.key.0.clear();
            self.key.0.extend_from_slice(&e.key().0);
            self.value.clear();
            self.value.extend_from_slice(e.value());
        }
    }

    fn seek_target(&mut self, ikey: &[u8], target: Target) {
        self.key.0.clear();
        self.key.0.extend_from_slice(ikey);
        self.position(target);
    }
}

impl InternalIterator for MemtableIterator {
    fn valid(&self) -> bool {
        self.valid
    }

    fn seek_to_first(&mut self) {
        self.position(Target::First);
    }

    fn seek_to_last(&mut self) {
        self.position(Target::Last);
    }

    fn seek(&mut self, ikey: &[u8]) {
        self.seek_target(ikey, Target::AtOrAfter);
    }

    fn seek_for_prev(&mut self, ikey: &[u8]) {
        self.seek_target(ikey, Target::AtOrBefore);
    }

    fn next(&mut self) {
        if self.valid {
            self.position(Target::After);
        }
    }

    fn prev(&mut self) {
        if self.valid {
            self.position(Target::Before);
        }
    }

    fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.key.0
    }

    fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.value
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
