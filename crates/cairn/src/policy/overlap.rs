//! Leaper's overlap check (Algorithm 3): which blocks of a flush or compaction intersect
//! the predicted hot key ranges. Blocks and ranges are inclusive intervals of key numbers
//! ([`key_number`](crate::access::key_number)); both lists are sorted by start, blocks
//! are disjoint (a table's blocks), and so are the hot ranges.
//!
//! Two ways, as in the paper: *binary search* (for each hot range, find the first block
//! that can meet it, then walk; O(n log m)) suits few hot ranges or blocks that arrive one
//! at a time during the merge; *sort-merge* (one pass over both; O(m + n)) suits the end
//! of a job. [`overlapping_blocks`] picks the cheaper by the sizes at hand (the hybrid).

/// An inclusive interval of key numbers.
pub type Interval = (u64, u64);

fn meets(a: Interval, b: Interval) -> bool {
    a.0.max(b.0) <= a.1.min(b.1)
}

/// Indices of the blocks that meet a hot range, by binary search per hot range.
pub fn by_binary_search(blocks: &[Interval], hot: &[Interval]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut start = 0;
    for &h in hot {
        // The first block not entirely before the hot range.
        let mut i = start + blocks[start..].partition_point(|b| b.1 < h.0);
        while i < blocks.len() && blocks[i].0 <= h.1 {
            if out.last() != Some(&i) {
                out.push(i);
            }
            i += 1;
        }
        // A block may also meet the next hot range: restart from the last one met.
        start = i.saturating_sub(1).max(start);
    }
    out
}

/// Indices of the blocks that meet a hot range, by one merge pass over both lists.
pub fn by_sort_merge(blocks: &[Interval], hot: &[Interval]) -> Vec<usize> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < blocks.len() && j < hot.len() {
        if meets(blocks[i], hot[j]) && out.last() != Some(&i) {
            out.push(i);
        }
        // Advance whichever interval ends first; on a tie, both.
        match blocks[i].1.cmp(&hot[j].1) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// The hybrid: binary search when n log2 m is below m + n, else sort-merge.
pub fn overlapping_blocks(blocks: &[Interval], hot: &[Interval]) -> Vec<usize> {
    let (m, n) = (blocks.len(), hot.len());
    let log_m = usize::BITS - m.max(1).leading_zeros();
    if n.saturating_mul(log_m as usize) < m + n {
        by_binary_search(blocks, hot)
    } else {
        by_sort_merge(blocks, hot)
    }
}

/// Whether one block (written while a job streams) meets a hot range: binary search.
pub fn block_is_hot(block: Interval, hot: &[Interval]) -> bool {
    let i = hot.partition_point(|h| h.1 < block.0);
    hot.get(i).is_some_and(|&h| meets(block, h))
}

/// The best score of the hot ranges one block meets (`hot` sorted by start, disjoint),
/// or `None` if it meets none: the block's expected reads, for warming best-first.
pub fn block_score(block: Interval, hot: &[(Interval, f64)]) -> Option<f64> {
    let i = hot.partition_point(|h| h.0 .1 < block.0);
    hot[i..]
        .iter()
        .take_while(|h| h.0 .0 <= block.1)
        .map(|h| h.1)
        .reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn brute(blocks: &[Interval], hot: &[Interval]) -> Vec<usize> {
        (0..blocks.len())
            .filter(|&i| hot.iter().any(|&h| meets(blocks[i], h)))
            .collect()
    }

    #[test]
    fn the_papers_merge_task() {
        // Figure 5's shape: blocks [1,150], [201,350], [300..] and hot ranges.
        let blocks = [(1, 150), (151, 200), (201, 350), (351, 500)];
        let hot = [(160, 170), (300, 320), (600, 700)];
        for f in [by_binary_search, by_sort_merge, overlapping_blocks] {
            assert_eq!(f(&blocks, &hot), vec![1, 2]);
        }
        assert!(block_is_hot((201, 350), &hot));
        assert!(!block_is_hot((1, 150), &hot));
        assert!(!block_is_hot((701, 800), &hot));
        assert!(block_is_hot((700, 700), &hot));
        let scored = [((160, 170), 2.0), ((300, 320), 0.5), ((340, 345), 3.0)];
        assert_eq!(block_score((201, 350), &scored), Some(3.0));
        assert_eq!(block_score((1, 150), &scored), None);
        assert_eq!(block_score((165, 305), &scored), Some(2.0));
        assert!(by_sort_merge(&[], &hot).is_empty());
        assert!(by_binary_search(&blocks, &[]).is_empty());
    }

    #[test]
    fn one_block_spanning_many_hot_ranges_and_the_reverse() {
        let blocks = [(0, 1000)];
        let hot = [(5, 6), (10, 20), (990, 2000)];
        assert_eq!(by_binary_search(&blocks, &hot), vec![0]);
        assert_eq!(by_sort_merge(&blocks, &hot), vec![0]);
        let blocks = [(0, 9), (10, 19), (20, 29), (30, 39)];
        let hot = [(15, 31)];
        assert_eq!(by_binary_search(&blocks, &hot), vec![1, 2, 3]);
        assert_eq!(by_sort_merge(&blocks, &hot), vec![1, 2, 3]);
    }

    fn disjoint(rng: &mut rand::rngs::SmallRng, n: usize, gap: u64, len: u64) -> Vec<Interval> {
        let mut at = rng.random_range(0..gap);
        (0..n)
            .map(|_| {
                let s = at + rng.random_range(0..gap);
                let e = s + rng.random_range(0..len);
                at = e + 1;
                (s, e)
            })
            .collect()
    }

    #[test]
    fn all_three_agree_with_brute_force() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        for _ in 0..2000 {
            let (m, n) = (rng.random_range(0..40), rng.random_range(0..40));
            let blocks = disjoint(&mut rng, m, 20, 30);
            let hot = disjoint(&mut rng, n, 40, 15);
            let want = brute(&blocks, &hot);
            assert_eq!(by_binary_search(&blocks, &hot), want, "{blocks:?} {hot:?}");
            assert_eq!(by_sort_merge(&blocks, &hot), want, "{blocks:?} {hot:?}");
            assert_eq!(overlapping_blocks(&blocks, &hot), want);
            for (i, &b) in blocks.iter().enumerate() {
                assert_eq!(block_is_hot(b, &hot), want.contains(&i));
            }
        }
    }
}
