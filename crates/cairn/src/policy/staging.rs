//! A compaction's warmed blocks between the merge that writes them and the install that
//! makes them readable (Leaper §6.2, Incremental Warmup): the best candidates by score,
//! within a byte budget, so that a job never holds more than it may swap in.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use crate::cache::{BlockKey, Staged};
use crate::table::Block;

struct Candidate {
    score: f64,
    /// Arrival order: between equal scores the earlier wins (key order for one writer).
    seq: u64,
    key: BlockKey,
    block: Arc<Block>,
}

impl Candidate {
    /// Better candidates compare greater.
    fn rank(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then(other.seq.cmp(&self.seq))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.rank(other).is_eq()
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    /// Reversed: the heap's top is the worst candidate, the first to drop.
    fn cmp(&self, other: &Self) -> Ordering {
        other.rank(self)
    }
}

/// The staged blocks of one job.
pub(crate) struct Staging {
    heap: BinaryHeap<Candidate>,
    bytes: usize,
    budget: usize,
    seq: u64,
}

impl Staging {
    /// Holds at most `budget` bytes of blocks (their cache charge).
    pub(crate) fn new(budget: usize) -> Self {
        Staging {
            heap: BinaryHeap::new(),
            bytes: 0,
            budget,
            seq: 0,
        }
    }

    /// Offers a block; the worst candidates go while the budget is exceeded.
    pub(crate) fn offer(&mut self, score: f64, key: BlockKey, block: Arc<Block>) {
        self.seq += 1;
        self.bytes += block.charge();
        self.heap.push(Candidate {
            score,
            seq: self.seq,
            key,
            block,
        });
        while self.bytes > self.budget {
            let Some(worst) = self.heap.pop() else { break };
            self.bytes -= worst.block.charge();
        }
    }

    /// Blocks held now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// The staged blocks, best first.
    pub(crate) fn into_best_first(self) -> Vec<Staged> {
        // `into_sorted_vec` is ascending by `Ord`, which is reversed: best first.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|c| Staged {
                key: c.key,
                block: c.block,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FileNo;
    use crate::table::block_for_tests;

    fn key(offset: u64) -> BlockKey {
        BlockKey {
            file_no: FileNo::new(7),
            offset,
        }
    }

    #[test]
    fn keeps_the_best_within_the_budget_best_first() {
        let b = block_for_tests(4);
        let mut s = Staging::new(3 * b.charge());
        for (off, score) in [(0, 0.2), (1, 0.9), (2, 0.1), (3, 0.5), (4, 0.9), (5, 0.3)] {
            s.offer(score, key(off), b.clone());
            assert!(s.len() <= 3);
        }
        let got: Vec<u64> = s.into_best_first().iter().map(|s| s.key.offset).collect();
        // 0.9 twice (the earlier first), then 0.5; 0.3, 0.2 and 0.1 did not fit.
        assert_eq!(got, vec![1, 4, 3]);
    }

    #[test]
    fn equal_scores_keep_arrival_order_and_a_zero_budget_holds_nothing() {
        let b = block_for_tests(4);
        let mut s = Staging::new(2 * b.charge());
        for off in 0..5 {
            s.offer(1.0, key(off), b.clone());
        }
        let got: Vec<u64> = s.into_best_first().iter().map(|s| s.key.offset).collect();
        assert_eq!(got, vec![0, 1]);
        let mut none = Staging::new(0);
        none.offer(1.0, key(0), b);
        assert_eq!(none.len(), 0);
    }
}
