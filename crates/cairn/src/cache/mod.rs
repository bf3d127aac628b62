//! The read-cache seam (DESIGN.md). [`BlockCache`] is what tables read data blocks
//! through; [`LruBlockCache`] is the baseline (one sharded LRU block cache). Key-value and
//! key-pointer caches (AC-Key) are siblings in [`ReadCache`], which implements
//! [`BlockCache`] for its block component and chosen by `Options::read_cache`.

mod component;
pub mod efficiency;
pub mod ghost;
mod lru_cache;
pub(crate) mod open_files;
pub mod read_cache;
pub mod read_cache_policy;
pub mod replace;
mod shared;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

pub use lru_cache::{LruBlockCache, DEFAULT_HOT_SHARE, DEFAULT_SHARDS};
pub use read_cache::{KpPointer, PointLookup, ReadCache};
pub use replace::BlockReplacer;
pub use shared::SharedCacheView;

use crate::ids::FileNo;
use crate::table::{Block, BloomFilter, FenceIndex};

/// Identifies a cached block: the table's file number and the block's offset in it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct BlockKey {
    /// The table's file number.
    pub file_no: FileNo,
    /// The block's offset in the file.
    pub offset: u64,
}

/// What a cached block holds; kept so that statistics separate kinds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BlockKind {
    /// A data block.
    Data,
    /// An index block.
    Index,
    /// A filter block.
    Filter,
}

impl BlockKind {
    /// All kinds, in index order.
    pub const ALL: [BlockKind; 3] = [BlockKind::Data, BlockKind::Index, BlockKind::Filter];

    /// Dense index, for per-kind arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What the cache holds under a key: a data block, or a table's index or filter, decoded
/// (`Options::cache_index_and_filter_blocks`: then they compete with data blocks for the
/// budget, as in RocksDB).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum CacheValue {
    /// A data block.
    Data(Arc<Block>),
    /// A data block a prefetcher put in the cache (Leaper and its baselines).
    Warmed(Arc<WarmedBlock>),
    /// A table's fence-pointer index.
    Index(Arc<FenceIndex>),
    /// A table's bloom filter.
    Filter(Arc<BloomFilter>),
}

impl CacheValue {
    /// The kind of block it came from.
    pub fn kind(&self) -> BlockKind {
        match self {
            CacheValue::Data(_) | CacheValue::Warmed(_) => BlockKind::Data,
            CacheValue::Index(_) => BlockKind::Index,
            CacheValue::Filter(_) => BlockKind::Filter,
        }
    }

    /// The data block, if it is one.
    pub fn into_data(self) -> Option<Arc<Block>> {
        match self {
            CacheValue::Data(b) => Some(b),
            CacheValue::Warmed(w) => Some(w.block.clone()),
            _ => None,
        }
    }

    /// The data block, if it is one.
    pub fn data(&self) -> Option<&Arc<Block>> {
        match self {
            CacheValue::Data(b) => Some(b),
            CacheValue::Warmed(w) => Some(&w.block),
            _ => None,
        }
    }
}

impl CacheValue {
    /// A data block put in the cache by a prefetcher, not read yet.
    pub fn warmed(block: Arc<Block>) -> CacheValue {
        CacheValue::Warmed(Arc::new(WarmedBlock {
            block,
            unread: AtomicBool::new(true),
        }))
    }

    /// The data block a read finds under a key, and whether it is the first read of a
    /// prefetched block (Leaper's precision counts the warmed blocks reads find).
    pub fn read_data(self) -> Option<(Arc<Block>, bool)> {
        match self {
            CacheValue::Data(b) => Some((b, false)),
            CacheValue::Warmed(w) => {
                let first = w.unread.load(Relaxed) && w.unread.swap(false, Relaxed);
                Some((w.block.clone(), first))
            }
            _ => None,
        }
    }
}

/// A prefetched data block and whether a read has found it since it was put in the
/// cache. The mark lives with the cache entry, not in the block: only a prefetcher's
/// entries carry it. The entry is charged as its block (the wrapper's 32 bytes are not),
/// so a staged block replaces a cached one of its size one for one.
#[derive(Debug)]
pub struct WarmedBlock {
    block: Arc<Block>,
    unread: AtomicBool,
}

/// Counters for one kind of block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindStats {
    /// Lookups that found a block of this kind.
    pub hits: u64,
    /// Blocks of this kind inserted.
    pub inserts: u64,
    /// Blocks of this kind evicted to make room (not erased).
    pub evictions: u64,
}

/// Cache counters. Misses are not split by kind: a lookup does not say what it looks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found the block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Blocks inserted (not counting ones too large to fit).
    pub inserts: u64,
    /// Inserts refused because the block alone exceeds a shard's budget.
    pub rejected: u64,
    /// Blocks evicted to make room.
    pub evictions: u64,
    /// The same counters per [`BlockKind`] (indexed by [`BlockKind::index`]).
    pub by_kind: [KindStats; 3],
}

impl CacheStats {
    /// Counters of one kind.
    pub fn kind(&self, kind: BlockKind) -> KindStats {
        self.by_kind[kind.index()]
    }

    /// Adds another set of counters (used to sum shards).
    pub fn add(&mut self, o: &CacheStats) {
        self.hits += o.hits;
        self.misses += o.misses;
        self.inserts += o.inserts;
        self.rejected += o.rejected;
        self.evictions += o.evictions;
        for (a, b) in self.by_kind.iter_mut().zip(o.by_kind.iter()) {
            a.hits += b.hits;
            a.inserts += b.inserts;
            a.evictions += b.evictions;
        }
    }
}

/// Where an inserted block enters the recency order (RocksDB's cache priorities).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Priority {
    /// Below the blocks read again, above the coldest: a new block's usual place (the
    /// cold part's head; RocksDB's LOW).
    #[default]
    Low,
    /// Last in line for eviction's first pick: the cold part's tail (RocksDB's BOTTOM,
    /// which `prepopulate_block_cache` gives compaction output).
    Bottom,
}

/// A block to swap in when a compaction installs (see [`BlockCache::swap_in`]): a
/// prefetcher's, so it goes in as [`CacheValue::Warmed`].
#[derive(Clone, Debug)]
pub struct Staged {
    /// Its key (an output table's file number and offset).
    pub key: BlockKey,
    /// The decoded block.
    pub block: Arc<Block>,
}

impl Staged {
    /// What the cache charges for the block (before its own per-entry overhead).
    pub fn block_charge(&self) -> usize {
        self.block.charge()
    }
}

/// What a [`BlockCache::swap_in`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwapOutcome {
    /// Cached data blocks of the given files taken out.
    pub erased: usize,
    /// Staged blocks put in.
    pub inserted: usize,
    /// Bytes the erased blocks were charged (the budget).
    pub freed: usize,
    /// Bytes the inserted blocks are charged.
    pub charged: usize,
}

/// A cache of decoded blocks shared by all tables of a database.
pub trait BlockCache: Send + Sync {
    /// The block, if cached (and marks it recently used).
    fn lookup(&self, key: &BlockKey) -> Option<CacheValue>;
    /// Caches a block, charging `charge` bytes against the budget (replaces any block
    /// under the same key). A block larger than the budget is not cached.
    fn insert(&self, key: BlockKey, value: CacheValue, charge: usize);
    /// As [`insert`](Self::insert), at a given place in the recency order. A cache
    /// without priorities inserts as usual.
    fn insert_with(&self, key: BlockKey, value: CacheValue, charge: usize, priority: Priority) {
        let _ = priority;
        self.insert(key, value, charge)
    }
    /// Takes every cached data block of `files` out and puts the `staged` blocks (best
    /// first) in, within the bytes the taken-out blocks were charged: the cache's charge
    /// does not grow (Leaper §6.2's warming at install, Incremental Warmup's swap). The
    /// i-th staged block takes the place of the i-th most valuable block taken out where
    /// the cache keeps places (its segment); a cache without them inserts as usual.
    fn swap_in(
        &self,
        files: &std::collections::HashSet<FileNo>,
        staged: Vec<Staged>,
    ) -> SwapOutcome {
        let olds = self.cached_data_blocks(files);
        let mut out = SwapOutcome {
            erased: olds.len(),
            freed: olds.iter().map(|(_, b)| b.charge()).sum(),
            ..SwapOutcome::default()
        };
        for (k, _) in &olds {
            self.erase(k);
        }
        for s in staged {
            let c = s.block_charge();
            if out.charged + c > out.freed {
                break;
            }
            out.charged += c;
            out.inserted += 1;
            self.insert(s.key, CacheValue::warmed(s.block), c);
        }
        out
    }
    /// Drops one block.
    fn erase(&self, key: &BlockKey);
    /// Drops every block of a file (called when the table is deleted).
    fn erase_file(&self, file_no: FileNo);
    /// Bytes charged now.
    fn usage(&self) -> usize;
    /// The byte budget.
    fn capacity(&self) -> usize;
    /// Counters since creation.
    fn stats(&self) -> CacheStats;
    /// The cached data blocks of the given files, without touching their recency (the
    /// prefetchers around compaction look at what a job will invalidate). A cache that
    /// cannot list its blocks returns none: the prefetchers then do less, never wrong.
    fn cached_data_blocks(
        &self,
        _files: &std::collections::HashSet<FileNo>,
    ) -> Vec<(BlockKey, Arc<Block>)> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::block_for_tests;

    #[test]
    fn a_warmed_block_counts_its_first_read_only() {
        let b = block_for_tests(3);
        let warmed = CacheValue::warmed(b.clone());
        // Lookups hand out clones of the entry: the mark is shared between them.
        let reads: Vec<bool> = (0..3)
            .map(|_| warmed.clone().read_data().unwrap().1)
            .collect();
        assert_eq!(reads, [true, false, false]);
        let (got, first) = CacheValue::Data(b.clone()).read_data().unwrap();
        assert!(Arc::ptr_eq(&got, &b) && !first);
        assert_eq!(warmed.kind(), BlockKind::Data);
        assert!(Arc::ptr_eq(warmed.data().unwrap(), &b));
    }
}
