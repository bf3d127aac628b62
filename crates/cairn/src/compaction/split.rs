//! Subcompactions (RocksDB's `max_subcompactions`): one merge cut into disjoint user-key
//! ranges that run on threads of their own. The cuts are user keys, so every version of a
//! key falls in one range and the outputs of consecutive ranges do not overlap.

use crate::iter::InternalIterator;
use crate::types::{make_lookup_key, user_key, MAX_SEQ};
use crate::Result;

/// One input table as the cut estimate sees it: for each data block, in order, the last
/// user key it holds and the table's bytes up to the block's end (from its index).
pub type BlockEnds<'a> = Vec<(&'a [u8], u64)>;

/// Candidate cut keys taken from each table's index: at most this many, evenly spaced.
const CANDIDATES_PER_TABLE: usize = 128;

/// Up to `n - 1` cut keys, increasing, that split the inputs into ranges of about equal
/// bytes, none estimated below `min_bytes`, as RocksDB cuts subcompactions at approximate
/// offsets. The candidates are block boundaries from the tables' indexes, so files that
/// each span the whole key space (flushes of random keys) still split evenly. The bytes
/// below a cut are those of the blocks that end below it. Empty when the merge should not
/// be split.
pub fn boundaries(tables: &[BlockEnds<'_>], n: usize, min_bytes: u64) -> Vec<Vec<u8>> {
    let total: u64 = tables.iter().filter_map(|t| t.last()).map(|b| b.1).sum();
    let n = n.min(usize::try_from(total / min_bytes.max(1)).unwrap_or(usize::MAX));
    if n < 2 {
        return Vec::new();
    }
    let mut candidates: Vec<&[u8]> = tables
        .iter()
        .flat_map(|t| {
            let step = t.len().div_ceil(CANDIDATES_PER_TABLE).max(1);
            t.iter().step_by(step).map(|b| b.0)
        })
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    let below = |c: &[u8]| -> u64 {
        tables
            .iter()
            .map(|t| match t.partition_point(|b| b.0 < c) {
                0 => 0,
                i => t[i - 1].1,
            })
            .sum()
    };
    let below: Vec<u64> = candidates.iter().map(|c| below(c)).collect();
    let mut cuts: Vec<Vec<u8>> = Vec::new();
    let mut last = 0u64;
    let mut start = 0;
    for k in 1..n as u64 {
        let want = total * k / n as u64;
        // The first candidate at or past the share, unless the one before is closer.
        let Some(off) = below[start..].iter().position(|&b| b >= want) else {
            break;
        };
        let mut i = start + off;
        if i > start && want - below[i - 1] < below[i] - want {
            i -= 1;
        }
        start = i + 1;
        // Each range keeps at least the minimum; a cut that would not is skipped.
        if below[i] - last >= min_bytes && total - below[i] >= min_bytes {
            last = below[i];
            cuts.push(candidates[i].to_vec());
        }
        if start >= candidates.len() {
            break;
        }
    }
    cuts
}

/// A user-key range `[lo, hi)`; `None` is unbounded on that side.
pub type KeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The user-key ranges `[cut_{i-1}, cut_i)` that `cuts` make.
pub fn ranges(cuts: &[Vec<u8>]) -> Vec<KeyRange> {
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut lo = None;
    for c in cuts {
        out.push((lo.take(), Some(c.clone())));
        lo = Some(c.clone());
    }
    out.push((lo, None));
    out
}

/// An iterator over the entries of `inner` whose user keys lie in `[lo, hi)`.
pub struct Bounded<I> {
    inner: I,
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
}

impl<I: InternalIterator> Bounded<I> {
    /// Bounds `inner` to `[lo, hi)` (`None`: unbounded on that side).
    pub fn new(inner: I, lo: Option<Vec<u8>>, hi: Option<Vec<u8>>) -> Self {
        Bounded { inner, lo, hi }
    }
}

impl<I: InternalIterator> InternalIterator for Bounded<I> {
    fn valid(&self) -> bool {
        if !self.inner.valid() {
            return false;
        }
        let k = user_key(self.inner.key());
        self.lo.as_deref().is_none_or(|lo| k >= lo) && self.hi.as_deref().is_none_or(|hi| k < hi)
    }
    fn seek_to_first(&mut self) {
        match &self.lo {
            Some(lo) => self.inner.seek(&make_lookup_key(lo, MAX_SEQ)),
            None => self.inner.seek_to_first(),
        }
    }
    fn seek_to_last(&mut self) {
        match &self.hi {
            // The smallest internal key of `hi`: the last entry before it is below `hi`.
            Some(hi) => self.inner.seek_for_prev(&make_lookup_key(hi, MAX_SEQ)),
            None => self.inner.seek_to_last(),
        }
    }
    fn seek(&mut self, ikey: &[u8]) {
        match &self.lo {
            Some(lo) if user_key(ikey) < lo.as_slice() => self.seek_to_first(),
            _ => self.inner.seek(ikey),
        }
    }
    fn seek_for_prev(&mut self, ikey: &[u8]) {
        match &self.hi {
            Some(hi) if user_key(ikey) >= hi.as_slice() => self.seek_to_last(),
            _ => self.inner.seek_for_prev(ikey),
        }
    }
    fn next(&mut self) {
        self.inner.next();
    }
    fn prev(&mut self) {
        self.inner.prev();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::merging::VecIterator;
    use crate::types::{make_internal_key, ValueKind};

    /// A table of `blocks` blocks of `bytes` each, whose keys run from `first` in steps of
    /// `step` (one key per block boundary).
    fn table(first: u32, step: u32, blocks: u32, bytes: u64) -> Vec<(Vec<u8>, u64)> {
        (0..blocks)
            .map(|i| {
                (
                    format!("k{:06}", first + (i + 1) * step).into_bytes(),
                    (i as u64 + 1) * bytes,
                )
            })
            .collect()
    }

    fn view(t: &[(Vec<u8>, u64)]) -> BlockEnds<'_> {
        t.iter().map(|(k, b)| (k.as_slice(), *b)).collect()
    }

    /// Bytes of each range the cuts make (blocks counted whole, by their last key).
    fn shares(tables: &[Vec<(Vec<u8>, u64)>], cuts: &[Vec<u8>]) -> Vec<u64> {
        let mut out = vec![0u64; cuts.len() + 1];
        for t in tables {
            let mut prev = 0;
            for (k, end) in t {
                out[cuts.partition_point(|c| c <= k)] += end - prev;
                prev = *end;
            }
        }
        out
    }

    #[test]
    fn wide_overlapping_tables_split_evenly() {
        // Four flushes of random keys: each spans the whole key space.
        let tables: Vec<_> = (0..4).map(|i| table(i, 10, 400, 4096)).collect();
        let views: Vec<_> = tables.iter().map(|t| view(t)).collect();
        let total = 4 * 400 * 4096u64;
        for n in [2, 3, 4, 8] {
            let cuts = boundaries(&views, n, 1);
            assert_eq!(cuts.len(), n - 1, "n = {n}");
            for s in shares(&tables, &cuts) {
                let even = total / n as u64;
                assert!(
                    s.abs_diff(even) <= even / 10,
                    "n = {n}: a range of {s} bytes where {even} is even"
                );
            }
        }
    }

    #[test]
    fn a_narrow_input_over_a_wide_level_splits_by_bytes() {
        // One level-1 file holding most of the bytes in few keys, plus a level-0 file.
        let tables = [table(0, 1, 1000, 1000), table(0, 5, 200, 100)];
        let views: Vec<_> = tables.iter().map(|t| view(t)).collect();
        let cuts = boundaries(&views, 2, 1);
        let s = shares(&tables, &cuts);
        assert_eq!(s.len(), 2);
        assert!(s[0].abs_diff(s[1]) <= (s[0] + s[1]) / 10, "{s:?}");
    }

    #[test]
    fn small_merges_are_not_split() {
        let tables = [table(0, 1, 10, 100)];
        let views: Vec<_> = tables.iter().map(|t| view(t)).collect();
        assert!(boundaries(&views, 4, 1000).is_empty(), "below 2 x minimum");
        assert_eq!(boundaries(&views, 4, 500).len(), 1, "room for two ranges");
        assert!(boundaries(&views, 1, 1).is_empty());
        assert!(boundaries(&[], 4, 1).is_empty());
        // One key for everything: nowhere to cut.
        let one = vec![(b"k".as_slice(), 1u64 << 30)];
        assert!(boundaries(&[one], 4, 1).is_empty());
    }

    fn entries() -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut e = Vec::new();
        for k in ["a", "b", "c", "d"] {
            for seq in [3, 7] {
                e.push((
                    make_internal_key(k.as_bytes(), seq, ValueKind::Value),
                    format!("{k}{seq}").into_bytes(),
                ));
            }
        }
        e
    }

    fn forward(it: &mut dyn InternalIterator) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push(it.value().to_vec());
            it.next();
        }
        out
    }

    fn backward(it: &mut dyn InternalIterator) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        it.seek_to_last();
        while it.valid() {
            out.push(it.value().to_vec());
            it.prev();
        }
        out
    }

    #[test]
    fn bounded_keeps_every_version_of_the_keys_in_range() {
        let v = |s: &[&str]| s.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        let mut it = Bounded::new(
            VecIterator::new(entries()),
            Some(b"b".to_vec()),
            Some(b"d".to_vec()),
        );
        assert_eq!(forward(&mut it), v(&["b7", "b3", "c7", "c3"]));
        assert_eq!(backward(&mut it), v(&["c3", "c7", "b3", "b7"]));
        it.seek(&make_internal_key(b"a", 9, ValueKind::Value));
        assert_eq!(it.value(), b"b7", "a seek below the range starts at it");
        it.seek_for_prev(&make_internal_key(b"z", 0, ValueKind::Value));
        assert_eq!(it.value(), b"c3", "a seek above the range ends at it");
        let mut all = Bounded::new(VecIterator::new(entries()), None, None);
        assert_eq!(forward(&mut all).len(), 8);
        let mut head = Bounded::new(VecIterator::new(entries()), None, Some(b"b".to_vec()));
        assert_eq!(backward(&mut head), v(&["a3", "a7"]));
        let mut tail = Bounded::new(VecIterator::new(entries()), Some(b"d".to_vec()), None);
        assert_eq!(forward(&mut tail), v(&["d7", "d3"]));
        let mut empty = Bounded::new(
            VecIterator::new(entries()),
            Some(b"bb".to_vec()),
            Some(b"bc".to_vec()),
        );
        assert!(forward(&mut empty).is_empty());
        assert!(backward(&mut empty).is_empty());
    }

    #[test]
    fn ranges_cover_the_key_space_once() {
        let r = ranges(&[b"e".to_vec(), b"m".to_vec()]);
        assert_eq!(
            r,
            vec![
                (None, Some(b"e".to_vec())),
                (Some(b"e".to_vec()), Some(b"m".to_vec())),
                (Some(b"m".to_vec()), None),
            ]
        );
        assert_eq!(ranges(&[]), vec![(None, None)]);
    }
}
