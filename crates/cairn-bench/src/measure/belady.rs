//! Leaper's bound (issue 32): the fewest data-block misses any cache of the run's size
//! could have had on the run's own block lookups, by Belady's MIN (evict the block used
//! farthest ahead, or do not keep the block at all). The run records every block-cache
//! lookup of its measured phase through [`TracingCache`]; on the virtual clock jobs fall
//! at fixed points, so every policy looks up the same blocks in the same order.
//!
//! Two bounds: demand caching (every first use of a block misses), and "warmed at write"
//! (the first use of a block of a table written during the measured phase is free, as if
//! a flush or compaction had put it in the cache exactly when needed): no warming policy
//! that only keeps what writers hand it can beat the second.

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use cairn::cache::{BlockCache, BlockKey, CacheStats, CacheValue, Priority, Staged, SwapOutcome};
use cairn::table::Block;
use cairn::FileNo;
use parking_lot::Mutex;

/// The lookups of a run's measured phase.
#[derive(Default)]
pub struct BlockTrace {
    recording: AtomicBool,
    /// The highest file number looked up before recording began (older tables).
    old_files_up_to: AtomicU64,
    lookups: Mutex<Vec<BlockKey>>,
    /// Bytes and count of data blocks inserted, for the mean block charge.
    inserted_bytes: AtomicU64,
    inserted: AtomicU64,
}

impl BlockTrace {
    /// Starts recording (the measured phase begins).
    pub fn start(&self) {
        self.recording.store(true, Relaxed);
    }

    /// The bounds, for a cache of `capacity` bytes, over the recorded lookups.
    pub fn bounds(&self, capacity: usize) -> Option<BeladyBounds> {
        let n = self.inserted.load(Relaxed);
        if n == 0 {
            return None;
        }
        let block = (self.inserted_bytes.load(Relaxed) / n).max(1) as usize;
        let blocks = capacity / block;
        let lookups = self.lookups.lock();
        let old = self.old_files_up_to.load(Relaxed);
        let ids = dense_ids(&lookups);
        let new: HashSet<u32> = lookups
            .iter()
            .zip(&ids)
            .filter(|(k, _)| k.file_no.get() > old)
            .map(|(_, &i)| i)
            .collect();
        Some(BeladyBounds {
            lookups: lookups.len() as u64,
            capacity_blocks: blocks as u64,
            demand_misses: min_misses(&ids, blocks, |_| false),
            warmed_misses: min_misses(&ids, blocks, |i| new.contains(&i)),
        })
    }
}

/// What [`BlockTrace::bounds`] found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BeladyBounds {
    pub lookups: u64,
    pub capacity_blocks: u64,
    pub demand_misses: u64,
    pub warmed_misses: u64,
}

/// A block cache that records its lookups into a [`BlockTrace`] and forwards everything.
pub struct TracingCache {
    inner: Arc<dyn BlockCache>,
    trace: Arc<BlockTrace>,
}

impl TracingCache {
    pub fn new(inner: Arc<dyn BlockCache>, trace: Arc<BlockTrace>) -> Self {
        TracingCache { inner, trace }
    }

    fn inserted(&self, value: &CacheValue, charge: usize) {
        if value.data().is_some() {
            self.trace.inserted.fetch_add(1, Relaxed);
            self.trace.inserted_bytes.fetch_add(charge as u64, Relaxed);
        }
    }
}

impl BlockCache for TracingCache {
    fn lookup(&self, key: &BlockKey) -> Option<CacheValue> {
        let t = &self.trace;
        if t.recording.load(Relaxed) {
            t.lookups.lock().push(*key);
        } else {
            t.old_files_up_to.fetch_max(key.file_no.get(), Relaxed);
        }
        self.inner.lookup(key)
    }

    fn insert(&self, key: BlockKey, value: CacheValue, charge: usize) {
        self.inserted(&value, charge);
        self.inner.insert(key, value, charge)
    }

    fn insert_with(&self, key: BlockKey, value: CacheValue, charge: usize, priority: Priority) {
        self.inserted(&value, charge);
        self.inner.insert_with(key, value, charge, priority)
    }

    fn swap_in(&self, files: &HashSet<FileNo>, staged: Vec<Staged>) -> SwapOutcome {
        self.inner.swap_in(files, staged)
    }

    fn erase(&self, key: &BlockKey) {
        self.inner.erase(key)
    }

    fn erase_file(&self, file_no: FileNo) {
        self.inner.erase_file(file_no)
    }

    fn usage(&self) -> usize {
        self.inner.usage()
    }

    fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    fn stats(&self) -> CacheStats {
        self.inner.stats()
    }

    fn cached_data_blocks(&self, files: &HashSet<FileNo>) -> Vec<(BlockKey, Arc<Block>)> {
        self.inner.cached_data_blocks(files)
    }
}

/// Each lookup's block as a small dense number.
fn dense_ids(keys: &[BlockKey]) -> Vec<u32> {
    let mut ids: HashMap<(u64, u64), u32> = HashMap::new();
    keys.iter()
        .map(|k| {
            let n = ids.len() as u32;
            *ids.entry((k.file_no.get(), k.offset)).or_insert(n)
        })
        .collect()
}

/// Belady's MIN over `trace` with room for `capacity` blocks: the fewest misses any
/// cache of that size could have. A first use for which `free` holds costs nothing (the
/// block was put in the cache by whoever wrote it).
pub fn min_misses(trace: &[u32], capacity: usize, free: impl Fn(u32) -> bool) -> u64 {
    const NEVER: usize = usize::MAX;
    // next[i]: the index of the next use of trace[i]'s block.
    let mut next = vec![NEVER; trace.len()];
    let mut last: HashMap<u32, usize> = HashMap::new();
    for (i, &b) in trace.iter().enumerate().rev() {
        next[i] = last.insert(b, i).unwrap_or(NEVER);
    }
    // Cached blocks with their next use; the heap holds (next use, block), stale
    // entries skipped when popped.
    let mut cached: HashMap<u32, usize> = HashMap::new();
    let mut heap: BinaryHeap<(usize, u32)> = BinaryHeap::new();
    let mut seen: HashSet<u32> = HashSet::new();
    let mut misses = 0;
    for (i, &b) in trace.iter().enumerate() {
        let first = seen.insert(b);
        let hit = cached.contains_key(&b) || (first && free(b));
        if !hit {
            misses += 1;
        }
        cached.remove(&b);
        if capacity == 0 || next[i] == NEVER {
            continue;
        }
        if cached.len() >= capacity {
            // The block used farthest ahead goes; the new one if it is that block.
            let farthest = loop {
                match heap.peek() {
                    Some(&(n, v)) if cached.get(&v) == Some(&n) => break Some((n, v)),
                    Some(_) => {
                        heap.pop();
                    }
                    None => break None,
                }
            };
            match farthest {
                Some((n, v)) if n > next[i] => {
                    heap.pop();
                    cached.remove(&v);
                }
                _ => continue,
            }
        }
        cached.insert(b, next[i]);
        heap.push((next[i], b));
    }
    misses
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subset of at most `capacity` blocks kept at each step, by brute force.
    fn brute(trace: &[u32], capacity: usize) -> u64 {
        fn go(trace: &[u32], cap: usize, cache: Vec<u32>) -> u64 {
            let Some((&b, rest)) = trace.split_first() else {
                return 0;
            };
            let miss = u64::from(!cache.contains(&b));
            let mut with: Vec<u32> = cache.clone();
            if !with.contains(&b) {
                with.push(b);
            }
            // Keep any subset of what is there now, of at most `cap` blocks.
            let n = with.len();
            (0u32..1 << n)
                .filter(|m| m.count_ones() as usize <= cap)
                .map(|m| {
                    let kept = (0..n)
                        .filter(|i| m & (1 << i) != 0)
                        .map(|i| with[i])
                        .collect();
                    go(rest, cap, kept)
                })
                .min()
                .unwrap_or(0)
                + miss
        }
        go(trace, capacity, Vec::new())
    }

    #[test]
    fn min_matches_brute_force_on_small_traces() {
        let mut x: u64 = 7;
        for _ in 0..40 {
            let trace: Vec<u32> = (0..9)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((x >> 33) % 5) as u32
                })
                .collect();
            for cap in 0..3 {
                assert_eq!(
                    min_misses(&trace, cap, |_| false),
                    brute(&trace, cap),
                    "{trace:?} {cap}"
                );
            }
        }
    }

    #[test]
    fn free_first_uses_and_the_classic_example() {
        // 1 2 3 4 1 2 5 1 2 3 4 5 with 3 frames: MIN has 7 misses.
        let t = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5];
        assert_eq!(min_misses(&t, 3, |_| false), 7);
        // Blocks 4 and 5 were written during the run: their first uses are free.
        assert_eq!(min_misses(&t, 3, |b| b >= 4), 5);
        assert_eq!(min_misses(&t, 0, |_| false), 12);
    }

    #[test]
    fn the_trace_records_only_the_measured_phase() {
        let inner: Arc<dyn BlockCache> = Arc::new(cairn::cache::LruBlockCache::new(1 << 20, 1));
        let trace = Arc::new(BlockTrace::default());
        let c = TracingCache::new(inner, trace.clone());
        let key = |file_no, offset| BlockKey {
            file_no: FileNo::new(file_no),
            offset,
        };
        // One data block of 4,000 bytes went in (the mean charge); file 3 is read before.
        trace.inserted.fetch_add(1, Relaxed);
        trace.inserted_bytes.fetch_add(4000, Relaxed);
        c.lookup(&key(3, 0));
        trace.start();
        for k in [key(3, 0), key(9, 0), key(3, 0), key(9, 0)] {
            c.lookup(&k);
        }
        let bounds = trace.bounds(8000).unwrap();
        assert_eq!(bounds.lookups, 4);
        assert_eq!(bounds.capacity_blocks, 2);
        // Two first uses; file 9 is newer than any looked up before: free when warmed.
        assert_eq!((bounds.demand_misses, bounds.warmed_misses), (2, 1));
    }
}
