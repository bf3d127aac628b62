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
            cur: None,
            mem: Arc::clone(self),
            target: InternalKey(Vec::new()),
        }
    }
}

type MapEntry<'a> = crossbeam_skiplist::map::Entry<'a, InternalKey, Box<[u8]>>;

/// A cursor over a memtable. It holds the current skip-list entry, reference-counted, so
/// a move is one step along the list (not a new search from the head) and the key and
/// value are read in place.
pub struct MemtableIterator {
    // Declared first so it is dropped first: it borrows `mem`'s map.
    cur: Option<MapEntry<'static>>,
    mem: Arc<Memtable>,
    /// The seek target (kept to reuse its allocation).
    target: InternalKey,
}

impl MemtableIterator {
    /// Extends an entry's borrow of `self.mem.map` to the iterator's own lifetime.
    fn hold(&self, e: Option<MapEntry<'_>>) -> Option<MapEntry<'static>> {
        // SAFETY: the entry borrows the skip list inside `self.mem`, an `Arc` this
        // iterator owns and never replaces, and `cur` is dropped before `mem` (field
        // order), so the list outlives every entry held. Entries are reference-counted
        // nodes, valid until released, and the memtable never removes entries.
        e.map(|e| unsafe { std::mem::transmute::<MapEntry<'_>, MapEntry<'static>>(e) })
    }

    fn seek_target(&mut self, ikey: &[u8], forward: bool) {
        self.target.0.clear();
        self.target.0.extend_from_slice(ikey);
        let map = &self.mem.map;
        let e = if forward {
            map.lower_bound(Bound::Included(&self.target))
        } else {
            map.upper_bound(Bound::Included(&self.target))
        };
        // Release the old entry before taking the new one.
        self.cur = None;
        self.cur = self.hold(e);
    }
}

impl InternalIterator for MemtableIterator {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }

    fn seek_to_first(&mut self) {
        self.cur = None;
        self.cur = self.hold(self.mem.map.front());
    }

    fn seek_to_last(&mut self) {
        self.cur = None;
        self.cur = self.hold(self.mem.map.back());
    }

    fn seek(&mut self, ikey: &[u8]) {
        self.seek_target(ikey, true);
    }

    fn seek_for_prev(&mut self, ikey: &[u8]) {
        self.seek_target(ikey, false);
    }

    fn next(&mut self) {
        if let Some(e) = self.cur.take() {
            self.cur = e.next();
        }
    }

    fn prev(&mut self) {
        if let Some(e) = self.cur.take() {
            self.cur = e.prev();
        }
    }

    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |e| &e.key().0)
    }

    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |e| e.value())
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
