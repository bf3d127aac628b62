//! A cursor over one table, loading data blocks lazily (through the block cache).

use std::cmp::Ordering;
use std::sync::Arc;

use super::block::Block;
use super::index::FenceIndex;
use super::read_trace::ReadTrace;
use super::readahead::Readahead;
use super::reader::Table;
use crate::iter::InternalIterator;
use crate::types::cmp_internal;
use crate::{Error, Result};

/// Iterates a table in internal-key order. Errors are sticky: after one, `valid()` is
/// false and `status()` returns it.
pub struct TableIterator {
    table: Arc<Table>,
    /// The table's index, held while the iterator lives once it first positions (with
    /// `cache_index_and_filter_blocks`, an eviction cannot take it away mid-scan).
    index: Option<Arc<FenceIndex>>,
    /// The current block and its index; `None` when not positioned.
    block: Option<(usize, Arc<Block>)>,
    pos: usize,
    /// The current entry's internal key: a block stores it split (shared prefix + suffix).
    key: Vec<u8>,
    err: Option<Error>,
    trace: ReadTrace,
    /// Reads ahead once blocks come from storage in sequence.
    readahead: Readahead,
}

impl Table {
    /// A cursor over the table's entries.
    pub fn iter(self: &Arc<Self>) -> TableIterator {
        TableIterator::new(self.clone())
    }
}

impl TableIterator {
    pub(crate) fn new(table: Arc<Table>) -> Self {
        TableIterator {
            table,
            index: None,
            block: None,
            pos: 0,
            key: Vec::new(),
            err: None,
            trace: ReadTrace::default(),
            readahead: Readahead::default(),
        }
    }

    /// Leaves the blocks it reads from storage out of the block cache.
    pub(crate) fn without_filling(mut self) -> Self {
        self.trace.no_fill = true;
        self
    }

    /// Block reads this iterator has done so far.
    pub fn trace(&self) -> &ReadTrace {
        &self.trace
    }

    /// The table's index (fetched on first use); `None` after an error.
    fn index(&mut self) -> Option<Arc<FenceIndex>> {
        if self.index.is_none() && self.err.is_none() {
            match self.table.index_ref(&mut self.trace) {
                Ok(i) => self.index = Some(i.to_arc()),
                Err(e) => self.err = Some(e),
            }
        }
        self.index.clone()
    }

    /// Positions at entry `pos` of block `i` (`pos == usize::MAX` means the last entry),
    /// or invalidates if `i` is past the end.
    fn load(&mut self, i: usize, pos: usize) {
        self.block = None;
        let Some(index) = self.index() else {
            return;
        };
        if self.err.is_some() || i >= index.num_blocks() {
            self.readahead.release();
            return;
        }
        let readahead = self.table.reads_ahead().then_some(&mut self.readahead);
        match self
            .table
            .read_block_in(&index, i, &mut self.trace, readahead)
        {
            Ok(b) => {
                self.pos = pos.min(b.entry_count() - 1);
                self.block = Some((i, b));
                self.fill_key();
            }
            Err(e) => self.err = Some(e),
        }
    }

    /// Copies the current entry's key into `key` (after every move to a valid position).
    fn fill_key(&mut self) {
        if let Some((_, b)) = &self.block {
            b.key_into(self.pos, &mut self.key);
        }
    }
}

impl InternalIterator for TableIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.block.is_some()
    }

    fn seek_to_first(&mut self) {
        self.load(0, 0);
    }

    fn seek_to_last(&mut self) {
        let Some(index) = self.index() else {
            self.block = None;
            return;
        };
        let n = index.num_blocks();
        if n == 0 {
            self.block = None;
        } else {
            self.load(n - 1, usize::MAX);
        }
    }

    /// Seeks as a get searches: through the table's learned index when it has one (a
    /// prediction and a window inside one block), else through the fence pointers.
    fn seek(&mut self, ikey: &[u8]) {
        self.block = None;
        if self.err.is_some() {
            return;
        }
        let Some(index) = self.index() else {
            return;
        };
        let reads = self.trace.storage_reads;
        match self.table.seek_position_in(&index, ikey, &mut self.trace) {
            Ok(Some(p)) => {
                self.readahead
                    .seeked(p.block_no, self.trace.storage_reads > reads);
                self.pos = p.pos;
                self.block = Some((p.block_no, p.block));
                self.fill_key();
            }
            Ok(None) => self.readahead.release(),
            Err(e) => self.err = Some(e),
        }
    }

    fn seek_for_prev(&mut self, ikey: &[u8]) {
        self.seek(ikey);
        if self.err.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
        } else if cmp_internal(&self.key, ikey) != Ordering::Equal {
            self.prev();
        }
    }

    fn next(&mut self) {
        let Some((i, b)) = &self.block else { return };
        if self.pos + 1 < b.entry_count() {
            self.pos += 1;
            self.fill_key();
        } else {
            let i = *i;
            self.load(i + 1, 0);
        }
    }

    fn prev(&mut self) {
        let Some((i, _)) = &self.block else { return };
        if self.pos > 0 {
            self.pos -= 1;
            self.fill_key();
        } else if *i == 0 {
            self.block = None;
        } else {
            let i = *i;
            self.load(i - 1, usize::MAX);
        }
    }

    fn key(&self) -> &[u8] {
        if self.block.is_some() {
            &self.key
        } else {
            &[]
        }
    }

    fn value(&self) -> &[u8] {
        self.block.as_ref().map_or(&[], |(_, b)| b.value(self.pos))
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
