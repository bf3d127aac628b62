//! Range tombstones: one `delete_range(start, end)` is one record `[start, end)` at one
//! sequence number, kept beside the point entries (in a memtable's list, in a table's
//! range-deletion block), never expanded into a tombstone per key.
//!
//! Readers see them fragmented, as RocksDB's `FragmentedRangeTombstoneList` does: the
//! tombstones of a source are cut at every start and end into sorted, non-overlapping
//! fragments, each with the sequence numbers of the tombstones that cover it (newest
//! first). A point entry at `s` read at snapshot `snap` is deleted when some fragment
//! holding its key has a sequence number `t` with `s < t <= snap`. Sequence numbers order
//! every write, so the rule holds whichever source the tombstone and the entry sit in.

use crate::coding::{get_varint, put_varint};
use crate::types::{SeqNo, MAX_KEY_SIZE, MAX_SEQ};

/// One range deletion: the user keys in `[start, end)` written before `seq` are gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeTombstone {
    /// First key deleted.
    pub start: Vec<u8>,
    /// First key after the range (exclusive).
    pub end: Vec<u8>,
    /// Sequence number of the deletion.
    pub seq: SeqNo,
}

/// A piece of the key space with the tombstones covering all of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// First key of the piece.
    pub start: Vec<u8>,
    /// First key after the piece (exclusive).
    pub end: Vec<u8>,
    /// Sequence numbers of the tombstones covering it, descending and distinct.
    pub seqs: Vec<SeqNo>,
}

impl Fragment {
    /// The newest tombstone visible at `snapshot`, 0 when none is.
    fn cover_at(&self, snapshot: SeqNo) -> SeqNo {
        self.seqs
            .iter()
            .copied()
            .find(|&s| s <= snapshot)
            .unwrap_or(0)
    }
}

/// A set of range tombstones, fragmented for lookups.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeDels {
    frags: Vec<Fragment>,
}

impl RangeDels {
    /// Fragments `tombstones` (empty ranges are dropped).
    pub fn new(tombstones: impl IntoIterator<Item = RangeTombstone>) -> Self {
        let mut ts: Vec<RangeTombstone> =
            tombstones.into_iter().filter(|t| t.start < t.end).collect();
        if ts.is_empty() {
            return RangeDels::default();
        }
        ts.sort_by(|a, b| a.start.cmp(&b.start));
        let mut bounds: Vec<&[u8]> = ts
            .iter()
            .flat_map(|t| [t.start.as_slice(), t.end.as_slice()])
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut frags: Vec<Fragment> = Vec::new();
        let mut active: Vec<usize> = Vec::new();
        let mut next = 0;
        for w in bounds.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            while next < ts.len() && ts[next].start.as_slice() <= lo {
                active.push(next);
                next += 1;
            }
            // Every boundary is a start or an end, so a tombstone live at `lo` covers
            // all of `[lo, hi)`.
            active.retain(|&i| ts[i].end.as_slice() > lo);
            if active.is_empty() {
                continue;
            }
            let mut seqs: Vec<SeqNo> = active.iter().map(|&i| ts[i].seq).collect();
            seqs.sort_unstable_by(|a, b| b.cmp(a));
            seqs.dedup();
            Self::push(&mut frags, lo, hi, seqs);
        }
        RangeDels { frags }
    }

    /// Appends a fragment, joining it to the last one when they touch and agree.
    fn push(frags: &mut Vec<Fragment>, lo: &[u8], hi: &[u8], seqs: Vec<SeqNo>) {
        if let Some(last) = frags.last_mut() {
            if last.end.as_slice() == lo && last.seqs == seqs {
                last.end = hi.to_vec();
                return;
            }
        }
        frags.push(Fragment {
            start: lo.to_vec(),
            end: hi.to_vec(),
            seqs,
        });
    }

    /// The union of several sets.
    pub fn union<'a>(sets: impl IntoIterator<Item = &'a RangeDels>) -> RangeDels {
        RangeDels::new(sets.into_iter().flat_map(|s| s.tombstones()))
    }

    /// True when the set deletes nothing.
    pub fn is_empty(&self) -> bool {
        self.frags.is_empty()
    }

    /// The fragments, sorted by key and not overlapping.
    pub fn fragments(&self) -> &[Fragment] {
        &self.frags
    }

    /// One tombstone per fragment and sequence number.
    pub fn tombstones(&self) -> impl Iterator<Item = RangeTombstone> + '_ {
        self.frags.iter().flat_map(|f| {
            f.seqs.iter().map(|&seq| RangeTombstone {
                start: f.start.clone(),
                end: f.end.clone(),
                seq,
            })
        })
    }

    fn fragment_for(&self, key: &[u8]) -> Option<&Fragment> {
        let i = self.frags.partition_point(|f| f.end.as_slice() <= key);
        self.frags.get(i).filter(|f| f.start.as_slice() <= key)
    }

    /// The sequence number of the newest tombstone covering `key` visible at `snapshot`;
    /// 0 when none does (an entry at `s` is deleted when `s` is below it).
    pub fn max_cover(&self, key: &[u8], snapshot: SeqNo) -> SeqNo {
        self.fragment_for(key).map_or(0, |f| f.cover_at(snapshot))
    }

    /// The oldest tombstone covering `key` newer than `seq` (the one a compaction weighs
    /// against snapshots), if any.
    pub fn oldest_cover_above(&self, key: &[u8], seq: SeqNo) -> Option<SeqNo> {
        let f = self.fragment_for(key)?;
        f.seqs.iter().rev().copied().find(|&t| t > seq)
    }

    /// The first start and last end, if any.
    pub fn span(&self) -> Option<(&[u8], &[u8])> {
        Some((&self.frags.first()?.start, &self.frags.last()?.end))
    }

    /// Smallest and largest sequence number held.
    pub fn seq_range(&self) -> Option<(SeqNo, SeqNo)> {
        let lo = self.frags.iter().filter_map(|f| f.seqs.last()).min()?;
        let hi = self.frags.iter().filter_map(|f| f.seqs.first()).max()?;
        Some((*lo, *hi))
    }

    /// Number of (fragment, sequence number) pairs: the tombstones a table stores.
    pub fn len(&self) -> usize {
        self.frags.iter().map(|f| f.seqs.len()).sum()
    }

    /// True when some fragment overlaps `[lo, hi]` (inclusive).
    pub fn overlaps(&self, lo: &[u8], hi: &[u8]) -> bool {
        let i = self.frags.partition_point(|f| f.end.as_slice() <= lo);
        self.frags.get(i).is_some_and(|f| f.start.as_slice() <= hi)
    }

    /// The fragments inside `[lo, hi)` (`None`: unbounded), cut at the bounds.
    pub fn clip(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> RangeDels {
        let mut frags: Vec<Fragment> = Vec::new();
        for f in &self.frags {
            let start = lo.map_or(f.start.as_slice(), |l| f.start.as_slice().max(l));
            let end = hi.map_or(f.end.as_slice(), |h| f.end.as_slice().min(h));
            if start < end {
                Self::push(&mut frags, start, end, f.seqs.clone());
            }
        }
        RangeDels { frags }
    }

    /// What a compaction keeps: the newest tombstone of each snapshot stripe (an older one
    /// in the same stripe deletes nothing the newer one does not), none at all in the
    /// oldest stripe when `bottommost` (nothing older lies below for it to delete).
    pub fn collapse(&self, snapshots: &[SeqNo], bottommost: bool) -> RangeDels {
        let mut frags: Vec<Fragment> = Vec::new();
        for f in &self.frags {
            let mut seqs = Vec::new();
            let mut last_stripe = None;
            for &t in &f.seqs {
                let stripe = snapshots.partition_point(|&s| s < t);
                if last_stripe == Some(stripe) || (bottommost && stripe == 0) {
                    continue;
                }
                last_stripe = Some(stripe);
                seqs.push(t);
            }
            if !seqs.is_empty() {
                Self::push(&mut frags, &f.start, &f.end, seqs);
            }
        }
        RangeDels { frags }
    }

    /// Encodes the set (a table's range-deletion block): the fragment count, then per
    /// fragment its start and end (length-prefixed), its count of sequence numbers and
    /// those numbers, all varints.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        put_varint(&mut b, self.frags.len() as u64);
        for f in &self.frags {
            for k in [&f.start, &f.end] {
                put_varint(&mut b, k.len() as u64);
                b.extend_from_slice(k);
            }
            put_varint(&mut b, f.seqs.len() as u64);
            for &s in &f.seqs {
                put_varint(&mut b, s);
            }
        }
        b
    }

    /// Decodes what [`encode`](Self::encode) wrote, checking that it is a fragmented set
    /// (sorted, non-empty, non-overlapping fragments; sequence numbers descending and in
    /// range); `None` if it is not. Allocates no more than `buf` holds.
    pub fn decode(buf: &[u8]) -> Option<RangeDels> {
        let mut pos = 0;
        let n = get_varint(buf, &mut pos)?;
        // A fragment takes at least 5 bytes.
        if n > buf.len() as u64 / 5 {
            return None;
        }
        let mut frags: Vec<Fragment> = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let mut key = || -> Option<Vec<u8>> {
                let len = crate::table::format::get_len(buf, &mut pos)?;
                let k = buf[pos..pos + len].to_vec();
                pos += len;
                (k.len() <= MAX_KEY_SIZE).then_some(k)
            };
            let (start, end) = (key()?, key()?);
            let count = get_varint(buf, &mut pos)?;
            if start >= end || count == 0 || count > (buf.len() - pos) as u64 {
                return None;
            }
            let mut seqs = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let s = get_varint(buf, &mut pos)?;
                if s > MAX_SEQ || seqs.last().is_some_and(|&l| l <= s) {
                    return None;
                }
                seqs.push(s);
            }
            if frags.last().is_some_and(|l| l.end > start) {
                return None;
            }
            frags.push(Fragment { start, end, seqs });
        }
        (pos == buf.len()).then_some(RangeDels { frags })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn t(start: &str, end: &str, seq: SeqNo) -> RangeTombstone {
        RangeTombstone {
            start: start.as_bytes().to_vec(),
            end: end.as_bytes().to_vec(),
            seq,
        }
    }

    /// The rule with no fragmenting: the newest raw tombstone visible at `snap`.
    fn brute(ts: &[RangeTombstone], key: &[u8], snap: SeqNo) -> SeqNo {
        ts.iter()
            .filter(|t| t.start.as_slice() <= key && key < t.end.as_slice() && t.seq <= snap)
            .map(|t| t.seq)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn overlapping_tombstones_fragment_into_disjoint_pieces() {
        let d = RangeDels::new([t("a", "e", 5), t("c", "g", 9), t("x", "x", 3)]);
        let pieces: Vec<(&[u8], &[u8], &[SeqNo])> = d
            .fragments()
            .iter()
            .map(|f| (f.start.as_slice(), f.end.as_slice(), f.seqs.as_slice()))
            .collect();
        assert_eq!(
            pieces,
            vec![
                (&b"a"[..], &b"c"[..], &[5][..]),
                (b"c", b"e", &[9, 5]),
                (b"e", b"g", &[9]),
            ]
        );
        assert_eq!(d.max_cover(b"d", u64::MAX), 9);
        assert_eq!(d.max_cover(b"d", 8), 5);
        assert_eq!(d.max_cover(b"d", 4), 0);
        assert_eq!(d.max_cover(b"g", u64::MAX), 0, "end is exclusive");
        assert_eq!(d.oldest_cover_above(b"d", 1), Some(5));
        assert_eq!(d.oldest_cover_above(b"d", 5), Some(9));
        assert_eq!(d.oldest_cover_above(b"d", 9), None);
        assert_eq!(d.span(), Some((&b"a"[..], &b"g"[..])));
        assert_eq!(d.seq_range(), Some((5, 9)));
        assert!(d.overlaps(b"f", b"z") && !d.overlaps(b"g", b"z") && d.overlaps(b"0", b"a"));
    }

    #[test]
    fn fragments_answer_as_the_raw_tombstones_do() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for _ in 0..300 {
            let ts: Vec<RangeTombstone> = (0..rng.random_range(0..12))
                .map(|_| {
                    let a = rng.random_range(0..30u8);
                    let b = rng.random_range(0..30u8);
                    RangeTombstone {
                        start: vec![a.min(b)],
                        end: vec![a.max(b)],
                        seq: rng.random_range(1..40),
                    }
                })
                .collect();
            let d = RangeDels::new(ts.clone());
            let again = RangeDels::decode(&d.encode()).expect("round trip");
            assert_eq!(again, d);
            assert_eq!(RangeDels::new(d.tombstones()), d, "refragmenting is stable");
            for key in 0..31u8 {
                for snap in [0, 5, 20, 39, u64::MAX] {
                    assert_eq!(d.max_cover(&[key], snap), brute(&ts, &[key], snap));
                }
            }
        }
    }

    #[test]
    fn compaction_keeps_the_newest_tombstone_per_stripe_and_clips() {
        let d = RangeDels::new([t("a", "m", 3), t("a", "m", 6), t("a", "m", 8)]);
        // Snapshot 5 splits {3} from {6, 8}: one survivor each.
        let out = d.clip(Some(b"c"), Some(b"f")).collapse(&[5], false);
        assert_eq!(out.fragments().len(), 1);
        let f = &out.fragments()[0];
        assert_eq!(
            (f.start.as_slice(), f.end.as_slice()),
            (&b"c"[..], &b"f"[..])
        );
        assert_eq!(f.seqs, vec![8, 3]);
        // At the bottom, the oldest stripe has nothing left to delete.
        assert_eq!(d.collapse(&[5], true).fragments()[0].seqs, vec![8]);
        assert!(d.collapse(&[], true).is_empty());
        assert!(d.clip(Some(b"m"), None).is_empty());
        assert_eq!(d.clip(Some(b"b"), None).fragments()[0].seqs, vec![8, 6, 3]);
    }

    #[test]
    fn malformed_blocks_are_refused_without_panicking() {
        let good = RangeDels::new([t("a", "c", 4), t("d", "f", 2)]).encode();
        assert!(RangeDels::decode(&good).is_some());
        for cut in 0..good.len() {
            assert!(RangeDels::decode(&good[..cut]).is_none());
        }
        // Out of order, empty range, ascending seqs.
        let bad = [
            RangeDels {
                frags: vec![
                    Fragment {
                        start: b"d".to_vec(),
                        end: b"f".to_vec(),
                        seqs: vec![1],
                    },
                    Fragment {
                        start: b"a".to_vec(),
                        end: b"c".to_vec(),
                        seqs: vec![1],
                    },
                ],
            },
            RangeDels {
                frags: vec![Fragment {
                    start: b"d".to_vec(),
                    end: b"d".to_vec(),
                    seqs: vec![1],
                }],
            },
            RangeDels {
                frags: vec![Fragment {
                    start: b"a".to_vec(),
                    end: b"d".to_vec(),
                    seqs: vec![1, 2],
                }],
            },
        ];
        for b in bad {
            assert!(RangeDels::decode(&b.encode()).is_none());
        }
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        for _ in 0..20_000 {
            let n = rng.random_range(0..24);
            let data: Vec<u8> = (0..n).map(|_| rng.random_range(0..6u8) * 50).collect();
            let _ = RangeDels::decode(&data);
        }
    }
}
