//! The memtable: recent writes in a skip list keyed by internal key, laid out in an arena
//! (`skiplist.rs`).
//!
//! Writers insert concurrently (the members of a write group each insert their own
//! batch) and readers get and iterate beside them, none taking a lock but the arena's
//! for its allocation. Entries are never removed: a memtable is dropped whole after it
//! has been flushed.
//!
//! Range deletions live beside the list (`range_del.rs`), one record each; readers take
//! them fragmented, rebuilt after each new one.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use parking_lot::Mutex;

use crate::iter::InternalIterator;
use crate::range_del::{RangeDels, RangeTombstone};
use crate::types::{lookup_key, pack_trailer, parse_internal_key, SeqNo, ValueKind, MAX_SEQ};
use crate::Result;

mod skiplist;

use skiplist::{Node, SkipList};

/// An in-memory sorted table of recent writes.
pub struct Memtable {
    id: u64,
    list: SkipList,
    /// Bytes the entries' nodes take in the arena (key, value, links, header, padding).
    /// The chunks' unused tails are left out (a few hundred bytes per 64 KiB chunk with
    /// small entries): counting whole chunks would call a small write buffer full after
    /// its first entry.
    memory: AtomicUsize,
    entries: AtomicUsize,
    /// `u64::MAX` while empty.
    min_seq: AtomicU64,
    max_seq: AtomicU64,
    /// Range deletions in the order written.
    range_dels: Mutex<Vec<RangeTombstone>>,
    /// How many range deletions were added (read without the lock).
    range_del_count: AtomicUsize,
    /// Their fragmented form as a reader last built it, with the count it holds: read
    /// without a lock while no deletion is added.
    fragments: ArcSwapOption<(usize, Arc<RangeDels>)>,
}

impl Memtable {
    /// An empty memtable; `id` identifies it to the DB (for example its WAL number).
    pub fn new(id: u64) -> Self {
        Memtable {
            id,
            list: SkipList::new(id.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            memory: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            min_seq: AtomicU64::new(u64::MAX),
            max_seq: AtomicU64::new(0),
            range_dels: Mutex::new(Vec::new()),
            range_del_count: AtomicUsize::new(0),
            fragments: ArcSwapOption::empty(),
        }
    }

    /// The id given at creation.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Inserts an entry; threads may insert at once. Each `(user_key, seq)` must be new
    /// (sequence numbers are unique per write).
    ///
    /// # Panics
    ///
    /// On a key of 16 MiB or more, or a value of 4 GiB or more (the database refuses
    /// keys over `MAX_KEY_SIZE` and values over `MAX_VALUE_SIZE` long before).
    pub fn add(&self, seq: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        debug_assert!(seq <= MAX_SEQ);
        let trailer = pack_trailer(seq, kind as u8).to_le_bytes();
        let size = self.list.insert(&[user_key, &trailer], value);
        self.min_seq.fetch_min(seq, Ordering::Relaxed);
        self.max_seq.fetch_max(seq, Ordering::Relaxed);
        self.entries.fetch_add(1, Ordering::Relaxed);
        self.memory.fetch_add(size, Ordering::Relaxed);
    }

    /// Adds the deletion of the keys in `[start, end)` at `seq` (an empty range is kept
    /// too: it is in the WAL, and costs nothing to read).
    pub fn add_range_del(&self, seq: SeqNo, start: &[u8], end: &[u8]) {
        debug_assert!(seq <= MAX_SEQ);
        let mut list = self.range_dels.lock();
        list.push(RangeTombstone {
            start: start.to_vec(),
            end: end.to_vec(),
            seq,
        });
        self.min_seq.fetch_min(seq, Ordering::Relaxed);
        self.max_seq.fetch_max(seq, Ordering::Relaxed);
        // Counted once in the list: a reader that sees the count finds it there.
        self.range_del_count.fetch_add(1, Ordering::Release);
        drop(list);
        // Two copies of the keys: the record and its fragments.
        let size = 2 * (start.len() + end.len()) + 64;
        self.memory.fetch_add(size, Ordering::Relaxed);
    }

    /// The range deletions, fragmented; `None` when there are none. Takes no lock unless
    /// one was added since the last reader built them.
    pub fn range_dels(&self) -> Option<Arc<RangeDels>> {
        let count = self.range_del_count.load(Ordering::Acquire);
        if count == 0 {
            return None;
        }
        let built = match self.fragments.load_full() {
            Some(b) if b.0 >= count => b,
            _ => {
                let list = self.range_dels.lock();
                let b = Arc::new((list.len(), Arc::new(RangeDels::new(list.iter().cloned()))));
                drop(list);
                // A deletion added meanwhile leaves the count above this one's: the next
                // reader builds again.
                self.fragments.store(Some(b.clone()));
                b
            }
        };
        Some(built.1.clone()).filter(|d| !d.is_empty())
    }

    /// Number of range deletions added.
    pub fn num_range_dels(&self) -> usize {
        self.range_del_count.load(Ordering::Acquire)
    }

    /// The newest version of `user_key` with a sequence number <= `snapshot_seq`, as its
    /// kind, value and sequence number (a `Deletion` is returned as such, for the caller
    /// to interpret; range deletions are not applied).
    pub fn get(&self, user_key: &[u8], snapshot_seq: SeqNo) -> Option<(ValueKind, Vec<u8>, SeqNo)> {
        // As RocksDB's memtable, an empty one answers at once. Every entry a read at
        // `snapshot_seq` may see was counted before its number was published.
        if self.num_entries() == 0 {
            return None;
        }
        let lookup = lookup_key(user_key, snapshot_seq.min(MAX_SEQ));
        let node = self.list.seek(&lookup)?;
        let parsed = parse_internal_key(self.list.key(node))?;
        if parsed.user_key != user_key {
            return None;
        }
        Some((
            parsed.value_kind()?,
            self.list.value(node).to_vec(),
            parsed.seq,
        ))
    }

    /// Memory held by the entries, in bytes (their nodes in the arena).
    pub fn approximate_memory_usage(&self) -> usize {
        self.memory.load(Ordering::Relaxed)
    }

    /// Number of point entries (range deletions not counted).
    pub fn num_entries(&self) -> usize {
        self.entries.load(Ordering::Relaxed)
    }

    /// True if nothing has been added (no entry, no range deletion).
    pub fn is_empty(&self) -> bool {
        self.num_entries() == 0 && self.num_range_dels() == 0
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

    /// The smallest and largest user key, `None` while empty; a range deletion counts
    /// its start and its (exclusive) end.
    pub fn user_key_span(self: &Arc<Self>) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut it = self.iter();
        it.seek_to_first();
        let mut span = it.valid().then(|| {
            let lo = crate::types::user_key(it.key()).to_vec();
            it.seek_to_last();
            (lo, crate::types::user_key(it.key()).to_vec())
        });
        if let Some(d) = self.range_dels() {
            if let Some((a, b)) = d.span() {
                span = Some(match span {
                    Some((lo, hi)) => (lo.min(a.to_vec()), hi.max(b.to_vec())),
                    None => (a.to_vec(), b.to_vec()),
                });
            }
        }
        span
    }

    /// An iterator over all entries in internal order. It sees entries added while it
    /// is in use when it moves past their position.
    pub fn iter(self: &Arc<Self>) -> MemtableIterator {
        MemtableIterator {
            cur: None,
            mem: Arc::clone(self),
        }
    }
}

/// A cursor over a memtable: the node it stands on, so a move forward is one step along
/// the list and the key and value are read in place; a move back searches from the head.
pub struct MemtableIterator {
    cur: Option<Node>,
    /// Keeps the list, and so every node, alive.
    mem: Arc<Memtable>,
}

// SAFETY: a node is an address inside the memtable this iterator holds an `Arc` to; the
// list is `Sync` and its nodes are immutable once reachable.
unsafe impl Send for MemtableIterator {}
unsafe impl Sync for MemtableIterator {}

impl InternalIterator for MemtableIterator {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }

    fn seek_to_first(&mut self) {
        self.cur = self.mem.list.first();
    }

    fn seek_to_last(&mut self) {
        self.cur = self.mem.list.last();
    }

    fn seek(&mut self, ikey: &[u8]) {
        self.cur = self.mem.list.seek(ikey);
    }

    fn seek_for_prev(&mut self, ikey: &[u8]) {
        self.cur = self.mem.list.seek_for_prev(ikey);
    }

    fn next(&mut self) {
        if let Some(n) = self.cur {
            self.cur = self.mem.list.next(n, 0);
        }
    }

    fn prev(&mut self) {
        if let Some(n) = self.cur {
            self.cur = self.mem.list.before(self.mem.list.key(n));
        }
    }

    fn key(&self) -> &[u8] {
        self.cur.map_or(&[], |n| self.mem.list.key(n))
    }

    fn value(&self) -> &[u8] {
        self.cur.map_or(&[], |n| self.mem.list.value(n))
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
