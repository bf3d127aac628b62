//! A cursor over one table, loading data blocks lazily (through the block cache).

use std::cmp::Ordering;
use std::sync::Arc;

use super::block::Block;
use super::reader::{ReadTrace, Table};
use crate::iter::InternalIterator;
use crate::types::cmp_internal;
use crate::{Error, Result};

/// Iterates a table in internal-key order. Errors are sticky: after one, `valid()` is
/// false and `status()` returns it.
pub struct TableIterator {
    table: Arc<Table>,
    /// The current block and its index; `None` when not positioned.
    block: Option<(usize, Arc<Block>)>,
    pos: usize,
    err: Option<Error>,
    trace: ReadTrace,
}

impl TableIterator {
    pub(crate) fn new(table: Arc<Table>) -> Self {
        TableIterator {
            table,
            block: None,
            pos: 0,
            err: None,
            trace: ReadTrace::default(),
        }
    }

    /// Block reads this iterator has done so far.
    pub fn trace(&self) -> &ReadTrace {
        &self.trace
    }

    /// Positions at entry `pos` of block `i` (`pos == usize::MAX` means the last entry),
    /// or invalidates if `i` is past the end.
    fn load(&mut self, i: usize, pos: usize) {
        self.block = None;
        if self.err.is_some() || i >= self.table.index().num_blocks() {
            return;
        }
        match self.table.read_block(i, &mut self.trace) {
            Ok(b) => {
                self.pos = pos.min(b.entry_count() - 1);
                self.block = Some((i, b));
            }
            Err(e) => self.err = Some(e),
        }
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        let (_, b) = self.block.as_ref()?;
        Some(b.entry(self.pos))
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
        let n = self.table.index().num_blocks();
        if n == 0 {
            self.block = None;
        } else {
            self.load(n - 1, usize::MAX);
        }
    }

    fn seek(&mut self, ikey: &[u8]) {
        let Some(mut i) = self.table.index().locate(ikey) else {
            self.block = None;
            return;
        };
        loop {
            self.load(i, 0);
            let Some((_, b)) = &self.block else { return };
            let pos = b.seek(ikey);
            if pos < b.entry_count() {
                self.pos = pos;
                return;
            }
            i += 1; // only if the index undershot; the next block starts past `ikey`
        }
    }

    fn seek_for_prev(&mut self, ikey: &[u8]) {
        self.seek(ikey);
        if self.err.is_some() {
            return;
        }
        match self.current() {
            Some((k, _)) if cmp_internal(k, ikey) == Ordering::Equal => {}
            Some(_) => self.prev(),
            None => self.seek_to_last(),
        }
    }

    fn next(&mut self) {
        let Some((i, b)) = &self.block else { return };
        if self.pos + 1 < b.entry_count() {
            self.pos += 1;
        } else {
            let i = *i;
            self.load(i + 1, 0);
        }
    }

    fn prev(&mut self) {
        let Some((i, _)) = &self.block else { return };
        if self.pos > 0 {
            self.pos -= 1;
        } else if *i == 0 {
            self.block = None;
        } else {
            let i = *i;
            self.load(i - 1, usize::MAX);
        }
    }

    fn key(&self) -> &[u8] {
        self.current().map_or(&[], |(k, _)| k)
    }

    fn value(&self) -> &[u8] {
        self.current().map_or(&[], |(_, v)| v)
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
