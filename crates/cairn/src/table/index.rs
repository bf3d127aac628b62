//! The index inside a table: [`FenceIndex`], the decoded index block (one fence pointer per
//! data block) searched by binary search. Bourbon's learned index
//! ([`LearnedIndex`](super::learned_index::LearnedIndex)) is not a sibling behind a trait
//! but a layer above it: its model predicts entry positions, which it maps to blocks
//! through this index, and a lookup it cannot answer falls back to it
//! (docs/design/decisions/table-index.md).
//!
//! Index block layout: a block in the data-block format whose entries are
//! `last internal key of the data block -> [varint offset][varint size][varint first ordinal]
//! [varint layout]`; the layout varint is present only for fixed-width blocks (see
//! [`FixedLayout`]), so a reader knows where each entry lies before reading the block.

use std::cmp::Ordering;

use super::block::{Block, BlockBuilder, FixedLayout};
use super::format::{get_varint, put_varint, BlockHandle};
use crate::types::cmp_internal;
use crate::{Error, Result};

/// One data block as the index sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    /// The block's last internal key.
    pub last_key: Vec<u8>,
    /// Where the block is.
    pub handle: BlockHandle,
    /// Position (ordinal) in the whole table of the block's first entry.
    pub first_ordinal: u64,
    /// The block's widths when it is fixed-width (layout 3).
    pub fixed: Option<FixedLayout>,
}

/// Fence pointers: the index block decoded into memory, searched by binary search.
#[derive(Debug)]
pub struct FenceIndex {
    entries: Vec<IndexEntry>,
    /// `entries[i].first_ordinal`, packed: the learned index searches it on every lookup.
    first_ordinals: Vec<u64>,
    num_entries: u64,
}

impl FenceIndex {
    /// The data block that may hold the first entry whose internal key is >= `lookup_ikey`;
    /// `None` if every entry of the table is smaller.
    pub fn locate(&self, lookup_ikey: &[u8]) -> Option<usize> {
        let i = self
            .entries
            .partition_point(|e| cmp_internal(&e.last_key, lookup_ikey) == Ordering::Less);
        (i < self.entries.len()).then_some(i)
    }

    /// Number of data blocks.
    pub fn num_blocks(&self) -> usize {
        self.entries.len()
    }

    /// Data block `i` (`i < num_blocks()`).
    pub fn block(&self, i: usize) -> &IndexEntry {
        &self.entries[i]
    }

    /// Encodes index entries as an index block.
    pub(crate) fn encode(entries: &[IndexEntry]) -> Vec<u8> {
        let mut b = BlockBuilder::default();
        let mut v = Vec::with_capacity(32);
        for e in entries {
            v.clear();
            e.handle.encode_to(&mut v);
            put_varint(&mut v, e.first_ordinal);
            if let Some(l) = e.fixed {
                put_varint(&mut v, l.to_code());
            }
            b.add(&e.last_key, &v);
        }
        b.finish()
    }

    /// Decodes and validates an index block: data blocks must tile `[0, data_end)` in order
    /// and ordinals must rise from 0 and stay below `num_entries`.
    pub fn decode(contents: Vec<u8>, file: &str, data_end: u64, num_entries: u64) -> Result<Self> {
        let bad = |d: String| Error::corruption(file, format!("index block: {d}"));
        let block = Block::decode_with(contents, file, true)?;
        let mut entries = Vec::with_capacity(block.entry_count());
        let mut next_offset = 0u64;
        for i in 0..block.entry_count() {
            let (key, val) = block.entry(i);
            let mut pos = 0;
            let handle = BlockHandle::decode_from(val, &mut pos);
            let ord = get_varint(val, &mut pos);
            let (Some(handle), Some(first_ordinal)) = (handle, ord) else {
                return Err(bad(format!("entry {i} is malformed")));
            };
            let fixed = if pos < val.len() {
                let l = get_varint(val, &mut pos).and_then(FixedLayout::from_code);
                match l {
                    Some(l) if pos == val.len() => Some(l),
                    _ => return Err(bad(format!("entry {i} has a malformed layout"))),
                }
            } else {
                None
            };
            if handle.offset != next_offset {
                return Err(bad(format!(
                    "block {i} at {} expected at {next_offset}",
                    handle.offset
                )));
            }
            next_offset = handle
                .end_with_trailer()
                .filter(|&e| e <= data_end)
                .ok_or_else(|| bad(format!("block {i} runs past the data area")))?;
            let expected_min = entries
                .last()
                .map_or(0, |p: &IndexEntry| p.first_ordinal + 1);
            if (i == 0 && first_ordinal != 0)
                || first_ordinal < expected_min
                || first_ordinal >= num_entries
            {
                return Err(bad(format!(
                    "block {i} has bad first ordinal {first_ordinal}"
                )));
            }
            if let Some(p) = entries.last() {
                if key.cmp_internal(&p.last_key) != Ordering::Greater {
                    return Err(bad(format!("block {i} keys out of order")));
                }
            }
            entries.push(IndexEntry {
                last_key: key.to_vec(),
                handle,
                first_ordinal,
                fixed,
            });
        }
        if next_offset != data_end || (entries.is_empty() && num_entries != 0) {
            return Err(bad(format!(
                "data blocks end at {next_offset}, data area at {data_end}"
            )));
        }
        let index = FenceIndex {
            first_ordinals: entries.iter().map(|e| e.first_ordinal).collect(),
            entries,
            num_entries,
        };
        // A fixed-width block's size follows from its entry count: reads of its chunks
        // then stay inside it.
        for (i, e) in index.entries.iter().enumerate() {
            if let Some(l) = e.fixed {
                let n = usize::try_from(index.block_entries(i)).ok();
                if n.and_then(|n| l.block_size(n)) != usize::try_from(e.handle.size).ok() {
                    return Err(bad(format!(
                        "fixed-width block {i} of {} bytes does not hold its {} entries",
                        e.handle.size,
                        index.block_entries(i)
                    )));
                }
            }
        }
        Ok(index)
    }

    /// Number of entries block `i` holds (`i < num_blocks()`).
    pub fn block_entries(&self, i: usize) -> u64 {
        let o = &self.first_ordinals;
        o.get(i + 1).copied().unwrap_or(self.num_entries) - o[i]
    }

    /// Table position of block `i`'s first entry (`i < num_blocks()`), from the packed
    /// array the learned path searches, so it touches no other memory.
    pub fn first_ordinal(&self, i: usize) -> u64 {
        self.first_ordinals[i]
    }

    /// The data block holding the entry at table position `ordinal`, if in range.
    pub fn block_for_ordinal(&self, ordinal: u64) -> Option<usize> {
        if ordinal >= self.num_entries {
            return None;
        }
        let o = &self.first_ordinals;
        // Blocks hold similar numbers of entries (fixed-width ones the same): start from
        // the proportional guess and step to the block, binary searching only if that
        // takes more than a few steps.
        let mut b = ((ordinal as u128 * o.len() as u128) / self.num_entries as u128) as usize;
        b = b.min(o.len() - 1);
        for _ in 0..4 {
            if o[b] > ordinal {
                b -= 1; // o[0] == 0 <= ordinal
            } else if o.get(b + 1).is_some_and(|&next| next <= ordinal) {
                b += 1;
            } else {
                return Some(b);
            }
        }
        Some(o.partition_point(|&f| f <= ordinal) - 1)
    }

    /// Bytes held in memory.
    pub fn memory(&self) -> usize {
        self.entries
            .iter()
            .map(|e| e.last_key.capacity() + std::mem::size_of::<IndexEntry>())
            .sum::<usize>()
            + self.first_ordinals.capacity() * std::mem::size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::format::BLOCK_TRAILER_LEN;
    use crate::types::{make_internal_key, ValueKind};
    use rand::{Rng, SeedableRng};

    fn ik(s: &str) -> Vec<u8> {
        make_internal_key(s.as_bytes(), 5, ValueKind::Value)
    }

    fn sample() -> (Vec<IndexEntry>, u64) {
        let e = vec![
            IndexEntry {
                last_key: ik("c"),
                handle: BlockHandle::new(0, 95),
                first_ordinal: 0,
                fixed: None,
            },
            IndexEntry {
                last_key: ik("f"),
                handle: BlockHandle::new(100, 45),
                first_ordinal: 3,
                fixed: None,
            },
            IndexEntry {
                last_key: ik("k"),
                handle: BlockHandle::new(150, 10),
                first_ordinal: 4,
                fixed: None,
            },
        ];
        (e, 165)
    }

    #[test]
    fn round_trip_and_locate() {
        let (e, end) = sample();
        let idx = FenceIndex::decode(FenceIndex::encode(&e), "t", end, 9).unwrap();
        assert_eq!(idx.num_blocks(), 3);
        assert_eq!(idx.block(1), &e[1]);
        assert_eq!(idx.locate(&ik("a")), Some(0));
        assert_eq!(idx.locate(&ik("c")), Some(0));
        assert_eq!(
            idx.locate(&make_internal_key(b"c", 1, ValueKind::Value)),
            Some(1)
        );
        assert_eq!(idx.locate(&ik("g")), Some(2));
        assert_eq!(idx.locate(&ik("z")), None);
        assert_eq!(idx.block_entries(0), 3);
        assert_eq!(idx.block_entries(2), 5);
        assert_eq!(idx.block_for_ordinal(0), Some(0));
        assert_eq!(idx.block_for_ordinal(3), Some(1));
        assert_eq!(idx.block_for_ordinal(8), Some(2));
        assert_eq!(idx.block_for_ordinal(9), None);
    }

    #[test]
    fn block_for_ordinal_matches_a_search() {
        // Equal blocks (the guess is exact), slightly uneven ones (a step or two) and
        // wildly uneven ones (past the steps: the binary search).
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        for (round, spread) in [(0, 0u64), (1, 3), (2, 400), (3, 5000)] {
            let blocks = 1 + round * 37;
            let counts: Vec<u64> = (0..blocks)
                .map(|_| 1 + 100 + rng.random_range(0..=spread) - spread.min(100))
                .collect();
            let mut entries = Vec::new();
            let (mut first, mut at) = (0u64, 0u64);
            for (i, &c) in counts.iter().enumerate() {
                entries.push(IndexEntry {
                    last_key: ik(&format!("k{i:05}")),
                    handle: BlockHandle::new(at, 10),
                    first_ordinal: first,
                    fixed: None,
                });
                first += c;
                at += 10 + BLOCK_TRAILER_LEN as u64;
            }
            let idx = FenceIndex::decode(FenceIndex::encode(&entries), "t", at, first).unwrap();
            for o in (0..first).step_by(7).chain([first - 1]) {
                let want = entries.partition_point(|e| e.first_ordinal <= o) - 1;
                assert_eq!(idx.block_for_ordinal(o), Some(want), "ordinal {o}");
            }
            assert_eq!(idx.block_for_ordinal(first), None);
        }
    }

    #[test]
    fn rejects_inconsistent_indexes() {
        let (e, end) = sample();
        let enc = FenceIndex::encode(&e);
        assert!(FenceIndex::decode(enc.clone(), "t", end + 1, 9).is_err());
        assert!(FenceIndex::decode(enc.clone(), "t", end, 4).is_err());
        let mut gap = e.clone();
        gap[2].handle.offset += 1;
        assert!(FenceIndex::decode(FenceIndex::encode(&gap), "t", end + 1, 9).is_err());
        let mut ord = e.clone();
        ord[2].first_ordinal = 3;
        assert!(FenceIndex::decode(FenceIndex::encode(&ord), "t", end, 9).is_err());
        let mut order = e;
        order.swap(0, 1);
        assert!(FenceIndex::decode(FenceIndex::encode(&order), "t", end, 9).is_err());
        let empty = FenceIndex::decode(FenceIndex::encode(&[]), "t", 0, 0).unwrap();
        assert_eq!(empty.locate(&ik("a")), None);
    }

    /// Index entries of fixed-width blocks round-trip their layout; a malformed layout
    /// code, bytes after it, or a size that does not hold the block's entries are refused.
    #[test]
    fn fixed_width_layouts() {
        let layout = FixedLayout { kw: 24, vw: 12 };
        // Blocks of 5 and 3 entries: sizes follow from the layout.
        let s0 = layout.block_size(5).unwrap() as u64;
        let s1 = layout.block_size(3).unwrap() as u64;
        let e = vec![
            IndexEntry {
                last_key: ik("c"),
                handle: BlockHandle::new(0, s0),
                first_ordinal: 0,
                fixed: Some(layout),
            },
            IndexEntry {
                last_key: ik("f"),
                handle: BlockHandle::new(s0 + 5, s1),
                first_ordinal: 5,
                fixed: None,
            },
        ];
        let end = s0 + 5 + s1 + 5;
        let idx = FenceIndex::decode(FenceIndex::encode(&e), "t", end, 8).unwrap();
        assert_eq!(idx.block(0).fixed, Some(layout));
        assert_eq!(idx.block(1).fixed, None);
        // The first block's size no longer matches its 5 entries.
        let mut wrong = e.clone();
        wrong[0].fixed = Some(FixedLayout { kw: 25, vw: 12 });
        let err = FenceIndex::decode(FenceIndex::encode(&wrong), "t", end, 8).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        // A second fixed-width block whose count disagrees (3 entries, sized for 4).
        let mut wrong = e.clone();
        wrong[1].fixed = Some(layout);
        wrong[1].handle.size = layout.block_size(4).unwrap() as u64;
        let end4 = s0 + 5 + wrong[1].handle.size + 5;
        assert!(FenceIndex::decode(FenceIndex::encode(&wrong), "t", end4, 8).is_err());
        // Hand-made values: code 0 (no layout) and a trailing byte after a good code.
        for tail in [&[0u8][..], &[0x81, 0x80, 0x04][..], &[1, 0][..]] {
            let mut b = BlockBuilder::default();
            let mut v = Vec::new();
            BlockHandle::new(0, s0).encode_to(&mut v);
            put_varint(&mut v, 0);
            v.extend_from_slice(tail);
            b.add(&ik("c"), &v);
            let r = FenceIndex::decode(b.finish(), "t", s0 + 5, 5);
            assert!(r.is_err(), "{tail:?}");
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        let (e, end) = sample();
        let enc = FenceIndex::encode(&e);
        for _ in 0..20_000 {
            let mut data = enc.clone();
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..data.len());
                data[i] = rng.random();
            }
            if rng.random_bool(0.1) {
                data = (0..rng.random_range(0..64)).map(|_| rng.random()).collect();
            }
            if let Ok(idx) = FenceIndex::decode(data, "t", end, rng.random_range(0..20)) {
                let _ = idx.locate(&ik("d"));
                for i in 0..idx.num_blocks() {
                    let _ = idx.block_entries(i);
                }
                let _ = idx.block_for_ordinal(rng.random_range(0..20));
            }
        }
    }
}
