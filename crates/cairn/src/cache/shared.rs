//! One block cache shared by several databases (`Options::block_cache`). Each database
//! sees it through a [`SharedCacheView`] that marks the file numbers in its keys with a
//! number of its own, so two databases' tables with the same file number (every new
//! database starts counting at the same place) never serve each other's blocks.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{BlockCache, BlockKey, CacheStats, CacheValue, Priority, Staged, SwapOutcome};
use crate::ids::FileNo;
use crate::table::Block;

/// Where a view's number goes in a file number: file numbers stay far below 2^40.
const SPACE_SHIFT: u32 = 40;

/// Views made so far in this process (the next one's number).
static NEXT_SPACE: AtomicU64 = AtomicU64::new(1);

/// A database's view of a shared cache. Its number is XORed into the high bits of every
/// key's file number, a bijection, so within the database keys stay distinct whatever the
/// file numbers, and across databases they differ unless file numbers reach 2^40.
pub struct SharedCacheView {
    inner: Arc<dyn BlockCache>,
    mark: u64,
}

impl SharedCacheView {
    /// A view of `inner` with a number no other view in this process has (until 2^24 of
    /// them were made).
    pub fn new(inner: Arc<dyn BlockCache>) -> Self {
        let space = NEXT_SPACE.fetch_add(1, Ordering::Relaxed) & ((1 << 24) - 1);
        SharedCacheView {
            inner,
            mark: space << SPACE_SHIFT,
        }
    }

    fn file(&self, file_no: FileNo) -> FileNo {
        FileNo::new(file_no.get() ^ self.mark)
    }

    fn key(&self, k: &BlockKey) -> BlockKey {
        BlockKey {
            file_no: self.file(k.file_no),
            offset: k.offset,
        }
    }
}

impl BlockCache for SharedCacheView {
    fn lookup(&self, key: &BlockKey) -> Option<CacheValue> {
        self.inner.lookup(&self.key(key))
    }

    fn insert(&self, key: BlockKey, value: CacheValue, charge: usize) {
        self.inner.insert(self.key(&key), value, charge)
    }

    fn insert_with(&self, key: BlockKey, value: CacheValue, charge: usize, priority: Priority) {
        self.inner
            .insert_with(self.key(&key), value, charge, priority)
    }

    fn swap_in(&self, files: &HashSet<FileNo>, staged: Vec<Staged>) -> SwapOutcome {
        let mine: HashSet<FileNo> = files.iter().map(|&f| self.file(f)).collect();
        let staged = staged
            .into_iter()
            .map(|s| Staged {
                key: self.key(&s.key),
                block: s.block,
            })
            .collect();
        self.inner.swap_in(&mine, staged)
    }

    fn erase(&self, key: &BlockKey) {
        self.inner.erase(&self.key(key))
    }

    fn erase_file(&self, file_no: FileNo) {
        self.inner.erase_file(self.file(file_no))
    }

    /// The whole shared cache's.
    fn usage(&self) -> usize {
        self.inner.usage()
    }

    fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// The whole shared cache's.
    fn stats(&self) -> CacheStats {
        self.inner.stats()
    }

    fn cached_data_blocks(&self, files: &HashSet<FileNo>) -> Vec<(BlockKey, Arc<Block>)> {
        let mine: HashSet<FileNo> = files.iter().map(|&f| self.file(f)).collect();
        self.inner
            .cached_data_blocks(&mine)
            .into_iter()
            .map(|(k, b)| (self.key(&k), b))
            .collect()
    }
}
