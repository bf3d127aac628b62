//! A merging iterator over several internal iterators (memtables, tables, runs), in
//! internal order, both directions. Children are few (memtables + level-0 runs + runs of
//! deeper levels), so a linear scan for the smallest is as fast as a heap and simpler when
//! the direction changes.

use crate::iter::InternalIterator;
use crate::types::cmp_internal;
use crate::Result;
use std::cmp::Ordering;

#[derive(PartialEq, Eq, Clone, Copy)]
enum Direction {
    Forward,
    Reverse,
}

/// See the module comment.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    direction: Direction,
    /// A child reported an error: the merge stops (an errored child is invalid, and
    /// merging on without it would skip its entries). Checked after each move of the
    /// children moved, so `valid` need not ask every child on every step.
    failed: bool,
}

impl MergingIterator {
    /// Merges `children`; for equal keys (which do not occur between distinct sources) the
    /// earlier child wins.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            children,
            current: None,
            direction: Direction::Forward,
            failed: false,
        }
    }

    /// Notes an error of any child (after moves of them all).
    fn check_all(&mut self) {
        self.failed = self.children.iter().any(|c| c.status().is_err());
    }

    /// Notes an error of child `i` (after a move of it alone).
    fn check(&mut self, i: usize) {
        if !self.children[i].valid() && self.children[i].status().is_err() {
            self.failed = true;
        }
    }

    fn find_smallest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if c.valid()
                && best
                    .is_none_or(|b| cmp_internal(c.key(), self.children[b].key()) == Ordering::Less)
            {
                best = Some(i);
            }
        }
        self.current = best;
    }

    fn find_largest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate().rev() {
            if c.valid()
                && best.is_none_or(|b| {
                    cmp_internal(c.key(), self.children[b].key()) == Ordering::Greater
                })
            {
                best = Some(i);
            }
        }
        self.current = best;
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some() && !self.failed
    }
    fn seek_to_first(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_first());
        self.direction = Direction::Forward;
        self.check_all();
        self.find_smallest();
    }
    fn seek_to_last(&mut self) {
        self.children.iter_mut().for_each(|c| c.seek_to_last());
        self.direction = Direction::Reverse;
        self.check_all();
        self.find_largest();
    }
    fn seek(&mut self, ikey: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek(ikey));
        self.direction = Direction::Forward;
        self.check_all();
        self.find_smallest();
    }
    fn seek_for_prev(&mut self, ikey: &[u8]) {
        self.children.iter_mut().for_each(|c| c.seek_for_prev(ikey));
        self.direction = Direction::Reverse;
        self.check_all();
        self.find_largest();
    }
    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Forward {
            // Put every other child just after the current key.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek(&key);
                    if c.valid() && cmp_internal(c.key(), &key) == Ordering::Equal {
                        c.next();
                    }
                }
            }
            self.direction = Direction::Forward;
            self.check_all();
        }
        self.children[cur].next();
        self.check(cur);
        self.find_smallest();
    }
    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Reverse {
            // Put every other child just before the current key.
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i != cur {
                    c.seek_for_prev(&key);
                    if c.valid() && cmp_internal(c.key(), &key) == Ordering::Equal {
                        c.prev();
                    }
                }
            }
            self.direction = Direction::Reverse;
            self.check_all();
        }
        self.children[cur].prev();
        self.check(cur);
        self.find_largest();
    }
    fn key(&self) -> &[u8] {
        self.children[self.current.expect("valid iterator")].key()
    }
    fn value(&self) -> &[u8] {
        self.children[self.current.expect("valid iterator")].value()
    }
    fn status(&self) -> Result<()> {
        for c in &self.children {
            c.status()?;
        }
        Ok(())
    }
}

/// An iterator over a `Vec` of sorted internal entries (tests and small sources).
pub struct VecIterator {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: Option<usize>,
}

impl VecIterator {
    /// Sorts `entries` in internal order and iterates them.
    pub fn new(mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
        entries.sort_by(|a, b| cmp_internal(&a.0, &b.0));
        VecIterator { entries, pos: None }
    }
}

impl InternalIterator for VecIterator {
    fn valid(&self) -> bool {
        self.pos.is_some()
    }
    fn seek_to_first(&mut self) {
        self.pos = (!self.entries.is_empty()).then_some(0);
    }
    fn seek_to_last(&mut self) {
        self.pos = self.entries.len().checked_sub(1);
    }
    fn seek(&mut self, ikey: &[u8]) {
        let i = self
            .entries
            .partition_point(|e| cmp_internal(&e.0, ikey) == Ordering::Less);
        self.pos = (i < self.entries.len()).then_some(i);
    }
    fn seek_for_prev(&mut self, ikey: &[u8]) {
        let i = self
            .entries
            .partition_point(|e| cmp_internal(&e.0, ikey) != Ordering::Greater);
        self.pos = i.checked_sub(1);
    }
    fn next(&mut self) {
        self.pos = self.pos.map(|p| p + 1).filter(|&p| p < self.entries.len());
    }
    fn prev(&mut self) {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
    }
    fn key(&self) -> &[u8] {
        &self.entries[self.pos.expect("valid iterator")].0
    }
    fn value(&self) -> &[u8] {
        &self.entries[self.pos.expect("valid iterator")].1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{make_internal_key, ValueKind};

    fn ik(k: &str, s: u64) -> Vec<u8> {
        make_internal_key(k.as_bytes(), s, ValueKind::Value)
    }

    #[test]
    fn merges_both_directions() {
        let a = VecIterator::new(vec![(ik("a", 1), vec![]), (ik("c", 3), vec![])]);
        let b = VecIterator::new(vec![(ik("b", 2), vec![]), (ik("c", 5), vec![])]);
        let mut m = MergingIterator::new(vec![Box::new(a), Box::new(b)]);
        m.seek_to_first();
        let mut fwd = Vec::new();
        while m.valid() {
            fwd.push(m.key().to_vec());
            m.next();
        }
        assert_eq!(fwd, vec![ik("a", 1), ik("b", 2), ik("c", 5), ik("c", 3)]);
        m.seek_to_last();
        let mut back = Vec::new();
        while m.valid() {
            back.push(m.key().to_vec());
            m.prev();
        }
        fwd.reverse();
        assert_eq!(back, fwd);
        // Direction switch in the middle.
        m.seek(&ik("b", 9));
        assert_eq!(m.key(), ik("b", 2));
        m.prev();
        assert_eq!(m.key(), ik("a", 1));
        m.next();
        assert_eq!(m.key(), ik("b", 2));
        m.next();
        assert_eq!(m.key(), ik("c", 5));
    }
}
