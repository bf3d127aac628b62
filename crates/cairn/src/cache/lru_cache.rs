//! The baseline block cache: LRU over a byte budget with RocksDB's midpoint insertion,
//! split into shards by key hash so that concurrent readers rarely contend on one lock.
//!
//! Midpoint insertion (RocksDB's LRU cache with `high_pri_pool_ratio` 0.5, its default):
//! a block comes in at the head of the cold part of the list, below the hot part, and moves
//! to the hot part's head when it is hit. The hot part holds at most its share of the
//! budget; what overflows it goes back to the cold part's head. Eviction takes the cold
//! part's tail first, so blocks read once (a scan, a uniform miss) leave before blocks read
//! again.

use std::collections::HashSet;
use std::sync::Arc;

use lru::LruCache;
use parking_lot::Mutex;

use super::{
    BlockCache, BlockKey, BlockKind, CacheStats, CacheValue, Priority, Staged, SwapOutcome,
};
use crate::ids::FileNo;
use crate::table::Block;

/// Number of shards [`LruBlockCache::with_default_shards`] uses.
pub const DEFAULT_SHARDS: usize = 16;

/// Share of the budget for blocks hit since they came in (RocksDB's default
/// `high_pri_pool_ratio`).
pub const DEFAULT_HOT_SHARE: f64 = 0.5;

/// Blocks an insert pushed out, freed once the shard's lock is released.
type Evicted = smallvec::SmallVec<[Entry; 2]>;

struct Entry {
    value: CacheValue,
    kind: BlockKind,
    charge: usize,
}

struct Shard {
    /// Blocks hit since they came in, most recent first.
    hot: LruCache<BlockKey, Entry>,
    /// Blocks not hit since they came in (or pushed out of `hot`), most recent first.
    cold: LruCache<BlockKey, Entry>,
    hot_usage: usize,
    usage: usize,
    capacity: usize,
    hot_capacity: usize,
    stats: CacheStats,
}

impl Shard {
    /// Takes a block out, if it is in.
    fn take(&mut self, key: &BlockKey) -> Option<Entry> {
        if let Some(e) = self.hot.pop(key) {
            self.hot_usage -= e.charge;
            self.usage -= e.charge;
            Some(e)
        } else {
            let e = self.cold.pop(key)?;
            self.usage -= e.charge;
            Some(e)
        }
    }

    fn len(&self) -> usize {
        self.hot.len() + self.cold.len()
    }

    fn entries(&self) -> impl Iterator<Item = (&BlockKey, &Entry)> {
        self.hot.iter().chain(self.cold.iter())
    }

    /// A hit: the block moves to the hot part's head; the hot part's overflow goes to the
    /// cold part's head.
    fn hit(&mut self, key: &BlockKey) -> Option<&Entry> {
        if self.hot.contains(key) {
            return self.hot.get(key);
        }
        let e = self.cold.pop(key)?;
        self.hot_usage += e.charge;
        self.hot.push(*key, e);
        self.overflow_hot();
        // The block may itself have overflowed (a hot share smaller than it).
        self.hot.peek(key).or_else(|| self.cold.peek(key))
    }

    /// Puts a block in at the head of the hot or the cold part, evicting to make room into
    /// `evicted`; the hot part's overflow goes to the cold part's head. False if it alone
    /// exceeds the shard's budget.
    fn admit(&mut self, key: BlockKey, entry: Entry, hot: bool, evicted: &mut Evicted) -> bool {
        if let Some(old) = self.take(&key) {
            evicted.push(old);
        }
        let (kind, charge) = (entry.kind, entry.charge);
        if charge > self.capacity {
            self.stats.rejected += 1;
            evicted.push(entry);
            return false;
        }
        while self.usage + charge > self.capacity {
            let Some(old) = self.evict_one() else {
                break;
            };
            self.stats.evictions += 1;
            self.stats.by_kind[old.kind.index()].evictions += 1;
            evicted.push(old);
        }
        self.usage += charge;
        if hot {
            self.hot_usage += charge;
            self.hot.push(key, entry);
            self.overflow_hot();
        } else {
            self.cold.push(key, entry);
        }
        self.stats.inserts += 1;
        self.stats.by_kind[kind.index()].inserts += 1;
        true
    }

    /// Moves the hot part's least recent blocks to the cold part's head until it fits
    /// its share.
    fn overflow_hot(&mut self) {
        while self.hot_usage > self.hot_capacity {
            let Some((k, old)) = self.hot.pop_lru() else {
                break;
            };
            self.hot_usage -= old.charge;
            self.cold.push(k, old);
        }
    }

    /// Takes out the data blocks of `files`, each with its place: (hot part?, position
    /// from the part's head as a share of its length).
    fn take_data_of(&mut self, files: &HashSet<FileNo>) -> Vec<Place> {
        let mut out = Vec::new();
        for (hot, part) in [(true, &self.hot), (false, &self.cold)] {
            let n = part.len().max(1) as f64;
            out.extend(
                part.iter()
                    .enumerate()
                    .filter(|(_, (k, e))| files.contains(&k.file_no) && e.kind == BlockKind::Data)
                    .map(|(i, (k, e))| Place {
                        key: *k,
                        hot,
                        depth: i as f64 / n,
                        charge: e.charge,
                    }),
            );
        }
        for p in &out {
            self.take(&p.key);
        }
        out
    }

    /// Takes the least valuable block out: the cold part's tail, else the hot part's.
    fn evict_one(&mut self) -> Option<Entry> {
        let e = match self.cold.pop_lru() {
            Some((_, e)) => e,
            None => {
                let (_, e) = self.hot.pop_lru()?;
                self.hot_usage -= e.charge;
                e
            }
        };
        self.usage -= e.charge;
        Some(e)
    }
}

/// Where a block sat before a swap took it out.
struct Place {
    key: BlockKey,
    hot: bool,
    depth: f64,
    charge: usize,
}

/// A sharded block cache with a byte budget, LRU with midpoint insertion (see the module).
///
/// Each entry is charged the caller's `charge` plus [`LruBlockCache::ENTRY_OVERHEAD`]
/// (the LRU node and hash slot). The budget is split evenly over the shards, so one shard
/// evicts when its own share is full even if others have room.
pub struct LruBlockCache {
    shards: Box<[Mutex<Shard>]>,
    capacity: usize,
}

impl LruBlockCache {
    /// Bytes charged per entry on top of the block's own charge.
    pub const ENTRY_OVERHEAD: usize = 64;

    /// A cache of `capacity_bytes` split into `shards` shards (at least 1), with
    /// [`DEFAULT_HOT_SHARE`] of it for blocks hit since they came in. A capacity of 0
    /// caches nothing.
    pub fn new(capacity_bytes: usize, shards: usize) -> Self {
        Self::with_hot_share(capacity_bytes, shards, DEFAULT_HOT_SHARE)
    }

    /// As [`new`](Self::new) with `hot_share` (clamped to 0..=1) of the budget for blocks
    /// hit since they came in: 0 is plain LRU.
    pub fn with_hot_share(capacity_bytes: usize, shards: usize, hot_share: f64) -> Self {
        let n = shards.max(1);
        let share = if hot_share.is_finite() {
            hot_share.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let shards = (0..n)
            .map(|i| {
                // Spread the remainder so that shard budgets sum to the capacity.
                let cap = capacity_bytes / n + usize::from(i < capacity_bytes % n);
                Mutex::new(Shard {
                    hot: LruCache::unbounded(),
                    cold: LruCache::unbounded(),
                    hot_usage: 0,
                    usage: 0,
                    capacity: cap,
                    hot_capacity: (cap as f64 * share) as usize,
                    stats: CacheStats::default(),
                })
            })
            .collect();
        LruBlockCache {
            shards,
            capacity: capacity_bytes,
        }
    }

    /// A cache with [`DEFAULT_SHARDS`] shards.
    pub fn with_default_shards(capacity_bytes: usize) -> Self {
        Self::new(capacity_bytes, DEFAULT_SHARDS)
    }

    /// Number of shards.
    pub fn num_shards(&self) -> usize {
        self.shards.len()
    }

    /// The shard a key lives in.
    pub fn shard_of(&self, key: &BlockKey) -> usize {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&key.file_no.get().to_le_bytes());
        b[8..].copy_from_slice(&key.offset.to_le_bytes());
        (xxhash_rust::xxh3::xxh3_64(&b) % self.shards.len() as u64) as usize
    }

    /// Number of cached blocks.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    /// True if nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard(&self, key: &BlockKey) -> &Mutex<Shard> {
        &self.shards[self.shard_of(key)]
    }

    fn entry(value: CacheValue, charge: usize) -> Entry {
        Entry {
            kind: value.kind(),
            value,
            charge: charge.saturating_add(Self::ENTRY_OVERHEAD),
        }
    }
}

impl BlockCache for LruBlockCache {
    fn lookup(&self, key: &BlockKey) -> Option<CacheValue> {
        let mut s = self.shard(key).lock();
        match s.hit(key) {
            Some(e) => {
                let (block, kind) = (e.value.clone(), e.kind);
                s.stats.hits += 1;
                s.stats.by_kind[kind.index()].hits += 1;
                Some(block)
            }
            None => {
                s.stats.misses += 1;
                None
            }
        }
    }

    fn insert(&self, key: BlockKey, value: CacheValue, charge: usize) {
        self.insert_with(key, value, charge, Priority::Low)
    }

    fn insert_with(&self, key: BlockKey, value: CacheValue, charge: usize, priority: Priority) {
        let mut evicted = Evicted::new();
        let mut s = self.shard(&key).lock();
        if s.admit(key, Self::entry(value, charge), false, &mut evicted)
            && priority == Priority::Bottom
        {
            s.cold.demote(&key);
        }
        // The evicted blocks are freed after the lock is released (as RocksDB's LRU
        // cache does): freeing a block is a call into the allocator that other readers
        // of the shard need not wait on.
        drop(s);
        drop(evicted);
    }

    /// Places are kept per part: the best staged block goes where the most recent of the
    /// taken-out blocks was (hot part before cold, nearer the head first), at the head of
    /// that part in its own shard, and the staged blocks keep that order among
    /// themselves. Shards keep separate lists, so a place is a part and an order, not the
    /// exact position.
    fn swap_in(&self, files: &HashSet<FileNo>, staged: Vec<Staged>) -> SwapOutcome {
        let mut places: Vec<Place> = self
            .shards
            .iter()
            .flat_map(|s| s.lock().take_data_of(files))
            .collect();
        places.sort_by(|a, b| b.hot.cmp(&a.hot).then(a.depth.total_cmp(&b.depth)));
        let mut out = SwapOutcome {
            erased: places.len(),
            freed: places.iter().map(|p| p.charge).sum(),
            ..SwapOutcome::default()
        };
        let mut chosen = Vec::new();
        for (s, place) in staged.into_iter().zip(&places) {
            let charge = s.block_charge();
            let entry = Self::entry(CacheValue::warmed(s.block), charge);
            if out.charged + entry.charge > out.freed {
                break;
            }
            out.charged += entry.charge;
            chosen.push((s.key, entry, place.hot));
        }
        // The least valuable place first, so that each part's best ends at its head.
        let mut evicted = Evicted::new();
        for (key, entry, hot) in chosen.into_iter().rev() {
            if self.shard(&key).lock().admit(key, entry, hot, &mut evicted) {
                out.inserted += 1;
            }
            evicted.clear();
        }
        out
    }

    fn erase(&self, key: &BlockKey) {
        let taken = self.shard(key).lock().take(key);
        drop(taken);
    }

    fn erase_file(&self, file_no: FileNo) {
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            let keys: Vec<BlockKey> = s
                .entries()
                .filter(|(k, _)| k.file_no == file_no)
                .map(|(k, _)| *k)
                .collect();
            for k in &keys {
                s.take(k);
            }
        }
    }

    fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().usage).sum()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn cached_data_blocks(&self, files: &HashSet<FileNo>) -> Vec<(BlockKey, Arc<Block>)> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let s = shard.lock();
            out.extend(
                s.entries()
                    .filter(|(k, _)| files.contains(&k.file_no))
                    .filter_map(|(k, e)| Some((*k, e.value.data()?.clone()))),
            );
        }
        out
    }

    fn stats(&self) -> CacheStats {
        let mut total = CacheStats::default();
        for s in self.shards.iter() {
            total.add(&s.lock().stats);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{block_for_tests, filter_for_tests};

    const OV: usize = LruBlockCache::ENTRY_OVERHEAD;

    fn key(file_no: u64, offset: u64) -> BlockKey {
        BlockKey {
            file_no: FileNo::new(file_no),
            offset,
        }
    }

    /// (hot part, cold part), each most recent first (one shard).
    fn parts(c: &LruBlockCache) -> (Vec<BlockKey>, Vec<BlockKey>) {
        let s = c.shards[0].lock();
        (
            s.hot.iter().map(|(k, _)| *k).collect(),
            s.cold.iter().map(|(k, _)| *k).collect(),
        )
    }

    fn staged(file_no: u64, n: u64) -> Vec<Staged> {
        (0..n)
            .map(|off| Staged {
                key: key(file_no, off),
                block: block_for_tests(4),
            })
            .collect()
    }

    #[test]
    fn a_swap_keeps_the_charge_and_each_blocks_part() {
        let b = block_for_tests(4);
        let charge = b.charge();
        let c = LruBlockCache::with_hot_share(10 * (charge + OV), 1, 0.5);
        for off in 0..4 {
            c.insert(key(1, off), CacheValue::Data(b.clone()), charge);
            c.insert(key(2, off), CacheValue::Data(b.clone()), charge);
        }
        // Blocks 1/0 and 1/1 are read again: hot part, 1/1 the most recent.
        c.lookup(&key(1, 0));
        c.lookup(&key(1, 1));
        let before = c.usage();
        let out = c.swap_in(&HashSet::from([FileNo::new(1)]), staged(9, 6));
        assert_eq!(out.erased, 4);
        assert_eq!(
            out.inserted, 4,
            "one for one: the budget is what the job frees"
        );
        assert_eq!(out.freed, out.charged);
        assert_eq!(c.usage(), before, "the cache's charge is unchanged");
        let (hot, cold) = parts(&c);
        // The two best staged blocks take the two hot places, best at the head.
        assert_eq!(hot, vec![key(9, 0), key(9, 1)]);
        // The next two take the cold places of 1/3 and 1/2, in that order, above the
        // blocks that were there.
        assert_eq!(&cold[..2], &[key(9, 2), key(9, 3)]);
        assert!(cold[2..].iter().all(|k| k.file_no == FileNo::new(2)));
        assert_eq!(c.stats().evictions, 0);
    }

    #[test]
    fn a_swap_with_fewer_staged_blocks_shrinks_the_charge() {
        let b = block_for_tests(4);
        let charge = b.charge();
        let c = LruBlockCache::new(10 * (charge + OV), 1);
        for off in 0..3 {
            c.insert(key(1, off), CacheValue::Data(b.clone()), charge);
        }
        c.insert(key(1, 99), CacheValue::Filter(filter_for_tests()), 10);
        let out = c.swap_in(&HashSet::from([FileNo::new(1)]), staged(9, 1));
        assert_eq!((out.erased, out.inserted), (3, 1));
        assert_eq!(
            c.len(),
            2,
            "the filter of file 1 stays: a swap is for data blocks"
        );
        assert!(c.lookup(&key(9, 0)).is_some());
        assert!(c.lookup(&key(1, 0)).is_none());
    }

    #[test]
    fn bottom_priority_is_evicted_first() {
        let b = block_for_tests(1);
        let c = LruBlockCache::new(3 * (100 + OV), 1);
        c.insert(key(1, 0), CacheValue::Data(b.clone()), 100);
        c.insert(key(1, 1), CacheValue::Data(b.clone()), 100);
        c.insert_with(
            key(2, 0),
            CacheValue::Data(b.clone()),
            100,
            Priority::Bottom,
        );
        c.insert(key(1, 2), CacheValue::Data(b.clone()), 100);
        assert!(
            c.lookup(&key(2, 0)).is_none(),
            "the bottom block went first"
        );
        assert!(c.lookup(&key(1, 0)).is_some());
    }

    #[test]
    fn byte_budget_and_lru_order_single_shard() {
        let c = LruBlockCache::new(3 * (100 + OV), 1);
        let b = block_for_tests(1);
        for off in 0..3 {
            c.insert(key(1, off), CacheValue::Data(b.clone()), 100);
        }
        assert_eq!(c.usage(), 3 * (100 + OV));
        assert_eq!(c.len(), 3);
        // Touch 0 so that 1 becomes least recently used.
        assert!(c.lookup(&key(1, 0)).is_some());
        c.insert(key(1, 3), CacheValue::Data(b.clone()), 100);
        assert!(
            c.lookup(&key(1, 1)).is_none(),
            "LRU victim must be offset 1"
        );
        assert!(c.lookup(&key(1, 0)).is_some());
        assert!(c.lookup(&key(1, 2)).is_some());
        assert!(c.lookup(&key(1, 3)).is_some());
        assert!(c.usage() <= c.capacity());
        // A big block evicts several.
        c.insert(
            key(1, 9),
            CacheValue::Filter(filter_for_tests()),
            2 * 100 + OV,
        );
        assert!(c.usage() <= c.capacity());
        assert_eq!(c.len(), 2);
        let s = c.stats();
        assert_eq!(s.inserts, 5);
        assert_eq!(s.evictions, 3);
        assert_eq!(s.kind(BlockKind::Data).evictions, 3);
        assert_eq!(s.kind(BlockKind::Filter).inserts, 1);
        assert_eq!(s.misses, 1);
        assert_eq!(s.hits, 4);
        // Re-inserting a key replaces it without double charging.
        let before = c.usage();
        c.insert(
            key(1, 9),
            CacheValue::Filter(filter_for_tests()),
            2 * 100 + OV,
        );
        assert_eq!(c.usage(), before);
        // Too large for the budget: not cached.
        c.insert(key(2, 0), CacheValue::Data(b), 10_000);
        assert!(c.lookup(&key(2, 0)).is_none());
        assert_eq!(c.stats().rejected, 1);
    }

    #[test]
    fn blocks_hit_again_outlive_a_scan_of_blocks_read_once() {
        let run = |share: f64| {
            let c = LruBlockCache::with_hot_share(10 * (100 + OV), 1, share);
            let b = block_for_tests(1);
            // Three hot blocks, each read twice.
            for off in 0..3 {
                c.insert(key(1, off), CacheValue::Data(b.clone()), 100);
                assert!(c.lookup(&key(1, off)).is_some());
            }
            // A scan of 20 blocks read once.
            for off in 100..120 {
                c.insert(key(2, off), CacheValue::Data(b.clone()), 100);
            }
            assert!(c.usage() <= c.capacity());
            (0..3)
                .filter(|&off| c.lookup(&key(1, off)).is_some())
                .count()
        };
        assert_eq!(run(DEFAULT_HOT_SHARE), 3, "midpoint insertion keeps them");
        assert_eq!(run(0.0), 0, "plain LRU lets the scan push them out");
    }

    #[test]
    fn the_hot_part_overflows_into_the_cold_part_not_out() {
        let c = LruBlockCache::with_hot_share(4 * (100 + OV), 1, 0.5);
        let b = block_for_tests(1);
        for off in 0..4 {
            c.insert(key(1, off), CacheValue::Data(b.clone()), 100);
            assert!(c.lookup(&key(1, off)).is_some());
        }
        // Only two fit in the hot half; the other two went back to the cold part, and all
        // four are still cached.
        assert_eq!(c.len(), 4);
        assert_eq!(c.stats().evictions, 0);
        // A new block evicts the oldest overflow (offset 0), not a hot one.
        c.insert(key(1, 9), CacheValue::Data(b.clone()), 100);
        assert!(c.lookup(&key(1, 0)).is_none());
        for off in 1..4 {
            assert!(c.lookup(&key(1, off)).is_some(), "offset {off}");
        }
    }

    #[test]
    fn capacity_zero_caches_nothing() {
        let c = LruBlockCache::new(0, 4);
        c.insert(key(1, 0), CacheValue::Data(block_for_tests(1)), 0);
        assert!(c.lookup(&key(1, 0)).is_none());
        assert_eq!(c.usage(), 0);
        assert_eq!(c.capacity(), 0);
        assert!(c.is_empty());
    }

    #[test]
    fn sharding_spreads_keys_and_respects_budget() {
        let c = LruBlockCache::with_default_shards(64 * 1024);
        assert_eq!(c.num_shards(), DEFAULT_SHARDS);
        let b = block_for_tests(3);
        let mut per_shard = [0usize; DEFAULT_SHARDS];
        for f in 0..20u64 {
            for off in 0..50u64 {
                let k = key(f, off * 4096);
                per_shard[c.shard_of(&k)] += 1;
                c.insert(k, CacheValue::Data(b.clone()), 1000);
                assert!(c.usage() <= c.capacity());
            }
        }
        assert!(
            per_shard.iter().all(|&n| n > 20),
            "uneven shards {per_shard:?}"
        );
        // Shards fill independently: 4096 bytes per shard holds 3 entries of 1064.
        assert_eq!(c.len(), 3 * DEFAULT_SHARDS);
        assert_eq!(c.usage(), 3 * DEFAULT_SHARDS * (1000 + OV));
        // The most recent inserts survive.
        assert!(c.lookup(&key(19, 49 * 4096)).is_some());
        assert!(c.lookup(&key(0, 0)).is_none());
        c.erase_file(FileNo::new(19));
        assert!(c.lookup(&key(19, 49 * 4096)).is_none());
        assert_eq!(c.usage(), c.len() * (1000 + OV));
        for off in 0..50 {
            assert!(c.lookup(&key(19, off * 4096)).is_none());
        }
        c.insert(key(7, 7), CacheValue::Data(b.clone()), 1000);
        c.erase(&key(7, 7));
        assert!(c.lookup(&key(7, 7)).is_none());
        assert_eq!(c.usage(), c.len() * (1000 + OV));
        let s = c.stats();
        assert_eq!(s.inserts, 1001);
        assert!(s.evictions >= 1000 - 3 * DEFAULT_SHARDS as u64);
    }

    #[test]
    fn concurrent_use() {
        let c = Arc::new(LruBlockCache::new(100 * (100 + OV), 8));
        let b = block_for_tests(2);
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let (c, b) = (c.clone(), b.clone());
                std::thread::spawn(move || {
                    for i in 0..2000u64 {
                        let k = key(t, i % 300);
                        if c.lookup(&k).is_none() {
                            c.insert(k, CacheValue::Data(b.clone()), 100);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(c.usage() <= c.capacity());
        let s = c.stats();
        assert_eq!(s.hits + s.misses, 8000);
    }
}
