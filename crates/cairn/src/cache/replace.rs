//! Block replacement at compaction (AC-Key section 4.1.2): each cached data block of a
//! compaction's input tables is replaced by the output block whose keys overlap its key
//! range most, taken from the compaction's writer as the block is written (no storage
//! read). Overlap is the number of the new block's entries whose user key falls within
//! the old block's first..=last user key.

use std::sync::Arc;

use parking_lot::Mutex;

use super::BlockKey;
use crate::ids::FileNo;
use crate::table::{Block, BlockHandle};

struct Old {
    key: BlockKey,
    first: Vec<u8>,
    last: Vec<u8>,
}

struct Best {
    overlap: usize,
    key: BlockKey,
    block: Arc<Block>,
}

/// Collects, for each cached block of the inputs, its best replacement so far.
pub struct BlockReplacer {
    /// Sorted by first key.
    olds: Vec<Old>,
    best: Mutex<Vec<Option<Best>>>,
}

impl BlockReplacer {
    /// For cached blocks `(key, block)` of the compaction's inputs; `None` if there are none.
    pub(crate) fn new(cached: Vec<(BlockKey, Arc<Block>)>) -> Option<BlockReplacer> {
        let mut olds: Vec<Old> = cached
            .into_iter()
            .filter(|(_, b)| b.entry_count() > 0)
            .map(|(key, b)| Old {
                key,
                first: b.key(0).user_key_vec(),
                last: b.key(b.entry_count() - 1).user_key_vec(),
            })
            .collect();
        if olds.is_empty() {
            return None;
        }
        olds.sort_by(|a, b| a.first.cmp(&b.first));
        let n = olds.len();
        Some(BlockReplacer {
            olds,
            best: Mutex::new((0..n).map(|_| None).collect()),
        })
    }

    /// A new data block of table `file_no`, with its first and last user keys.
    pub fn offer(
        &self,
        file_no: FileNo,
        handle: BlockHandle,
        first: &[u8],
        last: &[u8],
        contents: &[u8],
    ) {
        // Old blocks whose range meets first..=last (olds are sorted by first key).
        let end = self.olds.partition_point(|o| o.first.as_slice() <= last);
        let hits: Vec<usize> = (0..end)
            .filter(|&i| self.olds[i].last.as_slice() >= first)
            .collect();
        if hits.is_empty() {
            return;
        }
        let Ok(block) = Block::decode(contents.to_vec(), "compaction output") else {
            return; // a cache hint only: a block that does not decode is not offered
        };
        let block = Arc::new(block);
        let mut best = self.best.lock();
        for i in hits {
            let o = &self.olds[i];
            let overlap = (0..block.entry_count())
                .map(|j| block.key(j))
                .filter(|k| k.cmp_user_key(&o.first).is_ge() && k.cmp_user_key(&o.last).is_le())
                .count();
            if best[i].as_ref().is_none_or(|b| overlap > b.overlap) {
                best[i] = Some(Best {
                    overlap,
                    key: BlockKey {
                        file_no,
                        offset: handle.offset,
                    },
                    block: block.clone(),
                });
            }
        }
    }

    /// `(old block, new block key, new block)` for every old block that found one.
    pub(crate) fn into_replacements(self) -> Vec<(BlockKey, BlockKey, Arc<Block>)> {
        self.olds
            .into_iter()
            .zip(self.best.into_inner())
            .filter_map(|(o, b)| b.map(|b| (o.key, b.key, b.block)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::block::BlockBuilder;
    use crate::types::{make_internal_key, ValueKind};

    fn k(i: u32) -> Vec<u8> {
        format!("k{i:04}").into_bytes()
    }

    fn block(keys: std::ops::RangeInclusive<u32>) -> Vec<u8> {
        let mut b = BlockBuilder::default();
        for i in keys {
            b.add(&make_internal_key(&k(i), 1, ValueKind::Value), b"v");
        }
        b.finish()
    }

    fn offer(r: &BlockReplacer, file_no: u64, at: u64, a: u32, z: u32) {
        r.offer(
            FileNo::new(file_no),
            BlockHandle::new(at, 10),
            &k(a),
            &k(z),
            &block(a..=z),
        );
    }

    #[test]
    fn each_old_block_takes_the_new_block_overlapping_it_most() {
        let old = |n: u64, a, z| {
            let c = block(a..=z);
            let key = BlockKey {
                file_no: FileNo::new(n),
                offset: 0,
            };
            (key, Arc::new(Block::decode(c, "t").unwrap()))
        };
        let r = BlockReplacer::new(vec![old(1, 10, 20), old(2, 100, 110)]).unwrap();
        offer(&r, 9, 0, 0, 12); // 3 keys in 10..=20
        offer(&r, 9, 4096, 13, 30); // 8 keys in 10..=20
        offer(&r, 9, 8192, 31, 99); // overlaps neither
        offer(&r, 10, 0, 105, 200); // 6 keys in 100..=110
        offer(&r, 10, 4096, 95, 104); // written later, 5 keys: not better
        let mut got = r.into_replacements();
        got.sort_by_key(|(o, _, _)| o.file_no);
        let pick: Vec<(u64, u64, u64)> = got
            .iter()
            .map(|(o, n, _)| (o.file_no.get(), n.file_no.get(), n.offset))
            .collect();
        assert_eq!(pick, vec![(1, 9, 4096), (2, 10, 0)]);
        assert_eq!(got[0].2.entry_count(), 18);
        assert!(BlockReplacer::new(Vec::new()).is_none());
    }
}
