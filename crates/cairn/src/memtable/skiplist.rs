//! The memtable's skip list, laid out in an arena as LevelDB's and RocksDB's are: any
//! number of writers and readers at once, none waiting for another but for the arena's
//! bump allocation (a mutex held for a few instructions).
//!
//! A node is `[key length | height << 24: u32][value length: u32][next: height
//! pointers][key][value]`, padded to 8 bytes, inside an arena chunk. It costs its key and
//! value plus 8 bytes, a pointer per level (1.33 on average) and the padding: about 22
//! bytes, where a node of a general-purpose concurrent map with a key and a value of their
//! own cost about 95.
//!
//! A writer fills a node completely, then links it bottom up, each level with a
//! compare-and-swap (release) on its predecessor's link, as RocksDB's `InsertConcurrently`
//! does: a swap that loses to another writer's finds the level's new neighbours and tries
//! again. A reader loads links with acquire, so every node it reaches is whole. Nodes are
//! never changed (but for their links), moved or freed before the list is dropped.
//!
//! Chunks are mapped from the operating system, not taken from the allocator, so a
//! flushed memtable's memory leaves the process when the list is dropped. glibc keeps
//! freed blocks of this size (below its mmap threshold) in the arena that made them, where
//! any later allocation above them pins them: a database done writing held its memtables'
//! bytes resident (8 MiB more peak RSS on the bench's reads at two 4 MiB memtables).

use std::alloc::{handle_alloc_error, Layout};
use std::cmp::Ordering;
use std::ptr::{self, NonNull};
use std::sync::atomic::AtomicPtr;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use parking_lot::Mutex;

use crate::types::cmp_internal;

/// Most levels a node has.
pub(super) const MAX_HEIGHT: usize = 12;
/// One node in this many rises a level.
const BRANCHING: u64 = 4;
/// Bytes of one arena chunk (a mapping of its own); a node larger than a quarter of it gets
/// a chunk of its own.
const CHUNK: usize = 64 << 10;
const HEADER: usize = 8;
const LINK: usize = std::mem::size_of::<AtomicPtr<u8>>();
/// Node lengths are kept in 24 bits (with the height in the top 8).
const MAX_KEY_LEN: usize = (1 << 24) - 1;

/// A node of one list (only the list that made it hands it out).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Node(NonNull<u8>);

/// The arena and the height generator, shared by the writers under a mutex.
struct Arena {
    /// Unmapped when the list drops (nodes hold raw pointers into them; the mappings do
    /// not move when the vector grows).
    chunks: Vec<memmap2::MmapMut>,
    cur: *mut u8,
    left: usize,
    rng: u64,
}

impl Arena {
    /// `size` bytes, 8-aligned, that nothing else uses.
    fn alloc(&mut self, size: usize) -> *mut u8 {
        let size = size.next_multiple_of(8);
        if size > self.left {
            if size > CHUNK / 4 {
                // The current chunk keeps its room for the nodes after this one.
                return self.chunk(size);
            }
            self.cur = self.chunk(CHUNK);
            self.left = CHUNK;
        }
        let p = self.cur;
        // SAFETY: `size <= left`, so `p + size` stays inside the current chunk.
        self.cur = unsafe { p.add(size) };
        self.left -= size;
        p
    }

    fn chunk(&mut self, size: usize) -> *mut u8 {
        let Ok(mut map) = memmap2::MmapOptions::new().len(size).map_anon() else {
            // As an allocation that fails: the list has no way to report it.
            handle_alloc_error(Layout::from_size_align(size, 8).expect("a chunk's size"))
        };
        let p = map.as_mut_ptr();
        self.chunks.push(map);
        p
    }

    /// 1 + the number of times in a row a draw falls in one of `BRANCHING`.
    fn random_height(&mut self) -> usize {
        let mut h = 1;
        while h < MAX_HEIGHT {
            // xorshift64*
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            if !(self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32).is_multiple_of(BRANCHING) {
                break;
            }
            h += 1;
        }
        h
    }

    /// Room for a node of a random height holding a key of `key_len` and a value of
    /// `value_len` bytes: its address, height and size in bytes.
    fn reserve(&mut self, key_len: usize, value_len: usize) -> (NonNull<u8>, usize, usize) {
        let height = self.random_height();
        let size = (HEADER + height * LINK + key_len + value_len).next_multiple_of(8);
        let p = self.alloc(size);
        // SAFETY: `alloc` never returns null (`handle_alloc_error` does not return).
        (unsafe { NonNull::new_unchecked(p) }, height, size)
    }
}

/// Writes a node of `height` levels holding `key_parts` (concatenated) and `value`, its
/// links empty, into `p`.
///
/// # Safety
/// `p` holds the node's bytes (as [`Arena::reserve`] sized them), 8-aligned, and no one
/// else reads or writes them until the node is linked.
unsafe fn fill(p: NonNull<u8>, height: usize, key_parts: &[&[u8]], value: &[u8]) -> Node {
    let key_len: usize = key_parts.iter().map(|p| p.len()).sum();
    let p = p.as_ptr();
    // SAFETY: the caller's promise; everything written stays inside the node's bytes.
    unsafe {
        p.cast::<u32>()
            .write(key_len as u32 | ((height as u32) << 24));
        p.add(4).cast::<u32>().write(value.len() as u32);
        for l in 0..height {
            p.add(HEADER + l * LINK)
                .cast::<AtomicPtr<u8>>()
                .write(AtomicPtr::new(ptr::null_mut()));
        }
        let mut at = p.add(HEADER + height * LINK);
        for part in key_parts {
            ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
            at = at.add(part.len());
        }
        ptr::copy_nonoverlapping(value.as_ptr(), at, value.len());
        Node(NonNull::new_unchecked(p))
    }
}

/// A sorted list of (internal key, value) pairs, ordered by [`cmp_internal`].
pub(super) struct SkipList {
    head: Node,
    height: AtomicUsize,
    arena: Mutex<Arena>,
}

// SAFETY: the raw pointers are into chunks the list owns and frees only when dropped.
// Shared access reads only nodes already linked, whose header, key and value no one writes
// again; their links are atomics, changed by compare-and-swap (and a node's own links
// above the levels it is published at, by its writer, before it is published there). A
// new node is written by its one writer, in bytes the arena handed it alone, before it is
// linked.
unsafe impl Send for SkipList {}
unsafe impl Sync for SkipList {}

impl SkipList {
    pub(super) fn new(seed: u64) -> SkipList {
        let mut arena = Arena {
            chunks: Vec::new(),
            cur: ptr::null_mut(),
            left: 0,
            rng: seed | 1,
        };
        let size = HEADER + MAX_HEIGHT * LINK;
        // SAFETY: `alloc` returns `size` fresh bytes, never null; the head is filled
        // before the list exists.
        let head = unsafe {
            fill(
                NonNull::new_unchecked(arena.alloc(size)),
                MAX_HEIGHT,
                &[],
                &[],
            )
        };
        SkipList {
            head,
            height: AtomicUsize::new(1),
            arena: Mutex::new(arena),
        }
    }

    fn link(&self, n: Node, level: usize) -> &AtomicPtr<u8> {
        debug_assert!(level < self.height_of(n));
        // SAFETY: `n` is a node of this list (alive as long as `self`) with more than
        // `level` links, each an initialised `AtomicPtr` at this 8-aligned offset.
        unsafe {
            &*n.0
                .as_ptr()
                .add(HEADER + level * LINK)
                .cast::<AtomicPtr<u8>>()
        }
    }

    fn height_of(&self, n: Node) -> usize {
        // SAFETY: `n` is a whole node of this list; its header is never written again.
        (unsafe { n.0.as_ptr().cast::<u32>().read() } >> 24) as usize
    }

    /// The next node at `level`.
    pub(super) fn next(&self, n: Node, level: usize) -> Option<Node> {
        NonNull::new(self.link(n, level).load(Acquire)).map(Node)
    }

    /// Where a node's key starts, its length and its value's length.
    fn layout(&self, n: Node) -> (*const u8, usize, usize) {
        let p = n.0.as_ptr();
        // SAFETY: `n` is a whole node of this list: its header (never written again)
        // gives the lengths, and the key follows the links.
        unsafe {
            let len = (p.cast::<u32>().read() & MAX_KEY_LEN as u32) as usize;
            let vlen = p.add(4).cast::<u32>().read() as usize;
            (p.add(HEADER + self.height_of(n) * LINK), len, vlen)
        }
    }

    /// A node's internal key.
    pub(super) fn key(&self, n: Node) -> &[u8] {
        let (k, len, _) = self.layout(n);
        // SAFETY: the key's bytes are inside the node, never written again while `self`
        // lives.
        unsafe { std::slice::from_raw_parts(k, len) }
    }

    /// A node's value.
    pub(super) fn value(&self, n: Node) -> &[u8] {
        let (k, len, vlen) = self.layout(n);
        // SAFETY: as in `key`; the value follows the key (a pointer derived from the
        // node's, not from the key's slice).
        unsafe { std::slice::from_raw_parts(k.add(len), vlen) }
    }

    /// Inserts a pair (the key given in parts, concatenated); returns the bytes it took.
    /// Any number of threads may insert at once; no key may be inserted twice.
    ///
    /// # Panics
    /// On a key of 16 MiB or more, or a value of 4 GiB or more.
    pub(super) fn insert(&self, key_parts: &[&[u8]], value: &[u8]) -> usize {
        let key_len: usize = key_parts.iter().map(|p| p.len()).sum();
        assert!(key_len <= MAX_KEY_LEN, "memtable key of {key_len} bytes");
        assert!(
            u32::try_from(value.len()).is_ok(),
            "memtable value of 4 GiB or more"
        );
        let (p, height, size) = self.arena.lock().reserve(key_len, value.len());
        // SAFETY: the arena handed these bytes to this call alone, sized for this node.
        let node = unsafe { fill(p, height, key_parts, value) };
        let key = self.key(node);
        // Readers that see the new height before the links find empty head links there
        // and go down: correct either way.
        let top = self.height.fetch_max(height, Relaxed).max(height);
        // The last node before `key` at every level (the head where none is) and the link
        // after it, as the search from the top saw them.
        let mut prev = [self.head; MAX_HEIGHT];
        let mut next = [ptr::null_mut(); MAX_HEIGHT];
        let mut x = self.head;
        for level in (0..top).rev() {
            (prev[level], next[level]) = self.splice(x, level, key);
            x = prev[level];
        }
        for level in 0..height {
            loop {
                self.link(node, level).store(next[level], Relaxed);
                // Publishes the node, whole, at this level, unless another writer linked
                // a node after `prev` since the search.
                let linked = self.link(prev[level], level).compare_exchange(
                    next[level],
                    node.0.as_ptr(),
                    Release,
                    Acquire,
                );
                if linked.is_ok() {
                    break;
                }
                // Nodes are never unlinked, so the place is still after `prev`.
                (prev[level], next[level]) = self.splice(prev[level], level, key);
            }
        }
        size
    }

    /// From `start` (a node whose key is below `key`, or the head), the last node at
    /// `level` whose key is below `key`, and its link there.
    fn splice(&self, start: Node, level: usize, key: &[u8]) -> (Node, *mut u8) {
        let mut x = start;
        loop {
            let n = self.link(x, level).load(Acquire);
            match NonNull::new(n) {
                Some(nn) if cmp_internal(self.key(Node(nn)), key) == Ordering::Less => x = Node(nn),
                _ => return (x, n),
            }
        }
    }

    /// The first node at `level` (tests walk each level).
    #[cfg(test)]
    pub(super) fn first_at(&self, level: usize) -> Option<Node> {
        self.next(self.head, level)
    }

    /// The first node.
    pub(super) fn first(&self) -> Option<Node> {
        self.next(self.head, 0)
    }

    /// The first node whose key is `>= key`.
    pub(super) fn seek(&self, key: &[u8]) -> Option<Node> {
        self.find(key).1
    }

    /// The last node whose key is `< key` (or the head) and the node after it, as one
    /// search saw them. Loading the link again could give a node inserted since, whose
    /// key may be below `key`.
    fn find(&self, key: &[u8]) -> (Node, Option<Node>) {
        let mut x = self.head;
        let mut after = None;
        for level in (0..self.height.load(Relaxed)).rev() {
            after = None;
            while let Some(n) = self.next(x, level) {
                if cmp_internal(self.key(n), key) != Ordering::Less {
                    after = Some(n);
                    break;
                }
                x = n;
            }
        }
        (x, after)
    }

    /// The last node whose key is `< key`.
    pub(super) fn before(&self, key: &[u8]) -> Option<Node> {
        let (x, _) = self.find(key);
        (x != self.head).then_some(x)
    }

    /// The last node whose key is `<= key`.
    pub(super) fn seek_for_prev(&self, key: &[u8]) -> Option<Node> {
        match self.find(key) {
            (_, Some(n)) if cmp_internal(self.key(n), key) == Ordering::Equal => Some(n),
            (x, _) => (x != self.head).then_some(x),
        }
    }

    /// The last node.
    pub(super) fn last(&self) -> Option<Node> {
        let mut x = self.head;
        for level in (0..self.height.load(Relaxed)).rev() {
            while let Some(n) = self.next(x, level) {
                x = n;
            }
        }
        (x != self.head).then_some(x)
    }
}
