//! Readahead for iterators that walk a table in order (RocksDB's automatic readahead):
//! once two data blocks in a row came from storage, the next miss reads 8 KiB ahead in
//! one request, and each later one twice as much, up to 256 KiB. A seek or a step
//! backward starts over. The blocks read ahead are kept here, not in the block cache,
//! until the iterator reaches them (each is still checksummed and cached when read).

use super::read_trace::ReadTrace;
use crate::storage::RandomAccessFile;
use crate::Result;

/// The first readahead, in bytes.
pub const INITIAL_READAHEAD: u64 = 8 << 10;
/// The largest readahead, in bytes.
pub const MAX_READAHEAD: u64 = 256 << 10;
/// Blocks read from storage in a row before reading ahead.
const SEQUENTIAL_READS: u32 = 2;

/// One iterator's readahead state.
#[derive(Default)]
pub struct Readahead {
    /// The last block the iterator asked for.
    last: Option<usize>,
    /// Blocks in a row, ending at `last`, that came from storage.
    misses_in_row: u32,
    /// The next readahead, in bytes (0: not started).
    size: u64,
    /// Bytes read ahead and the file offset they start at.
    buf: Option<(u64, Vec<u8>)>,
}

impl Readahead {
    /// Notes that the iterator asks for block `i`; a jump resets the sequence.
    pub fn visit(&mut self, i: usize) {
        if self.last.is_none_or(|l| l + 1 != i) {
            self.misses_in_row = 0;
            self.size = 0;
            self.buf = None;
        }
        self.last = Some(i);
    }

    /// Notes that block `last` was found in the cache: the run of storage reads ends and
    /// the next readahead starts again from 8 KiB (as RocksDB's buffer for direct reads
    /// counts only reads that reach the file).
    pub fn hit(&mut self) {
        self.misses_in_row = 0;
        self.size = 0;
    }

    /// Notes a seek that landed in block `i`, read from storage or not: the sequence starts
    /// over there.
    pub fn seeked(&mut self, i: usize, from_storage: bool) {
        self.buf = None;
        self.size = 0;
        self.last = Some(i);
        self.misses_in_row = u32::from(from_storage);
    }

    /// Frees the bytes read ahead (the iterator ran off the table).
    pub fn release(&mut self) {
        self.buf = None;
        self.last = None;
    }

    /// Hands the `len` bytes at `offset` (a block the cache did not hold) to `then`: in
    /// the readahead buffer, in place, or read from storage, reading ahead up to
    /// `data_end` once the reads run in sequence. In place, a block is checked and
    /// decompressed straight out of the buffer, with no copy of it made first.
    pub fn read<T>(
        &mut self,
        file: &RandomAccessFile,
        offset: u64,
        len: usize,
        data_end: u64,
        trace: &mut ReadTrace,
        then: impl FnOnce(RawBlock<'_>) -> Result<T>,
    ) -> Result<T> {
        let end = offset + len as u64;
        if let Some((at, buf)) = &self.buf {
            if offset >= *at && end <= at + buf.len() as u64 {
                let from = (offset - at) as usize;
                let used_up = end == at + buf.len() as u64;
                let out = then(RawBlock::InBuffer(&buf[from..from + len]));
                if used_up {
                    self.buf = None; // no memory held until the next read
                }
                return out;
            }
        }
        self.misses_in_row += 1;
        let span = if self.misses_in_row > SEQUENTIAL_READS {
            self.size = if self.size == 0 {
                INITIAL_READAHEAD
            } else {
                (self.size * 2).min(MAX_READAHEAD)
            };
            self.size
                .min(data_end.saturating_sub(offset))
                .max(len as u64) as usize
        } else {
            len
        };
        let bytes = file.read_at(offset, span)?;
        trace.storage_reads += 1;
        trace.storage_bytes += span as u64;
        if span == len {
            return then(RawBlock::Owned(bytes));
        }
        let out = then(RawBlock::InBuffer(&bytes[..len]));
        self.buf = Some((offset, bytes));
        out
    }
}

/// A block's bytes as [`Readahead::read`] hands them over.
pub enum RawBlock<'a> {
    /// Read for this block alone: the decoder may keep the buffer.
    Owned(Vec<u8>),
    /// Part of the readahead buffer.
    InBuffer(&'a [u8]),
}
