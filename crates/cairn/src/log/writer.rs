use std::path::Path;

use super::{fragment_crc, BLOCK_SIZE, FIRST, FULL, HEADER_LEN, LAST, MIDDLE};
use crate::storage::WritableFile;
use crate::Result;

/// Appends records to a log file (always a new file, starting at offset 0).
///
/// After any error the file's contents are unknown (part of a record may have reached it):
/// the caller must stop using this writer and start a new file.
pub struct LogWriter {
    file: WritableFile,
    /// Offset within the current block.
    block_offset: usize,
}

impl LogWriter {
    /// Wraps a freshly created, empty file.
    pub fn new(file: WritableFile) -> Self {
        let block_offset = (file.len() % BLOCK_SIZE as u64) as usize;
        LogWriter { file, block_offset }
    }

    /// Appends one record (buffered; see [`flush`](Self::flush) and [`sync`](Self::sync)).
    /// Empty records are allowed.
    pub fn add_record(&mut self, data: &[u8]) -> Result<()> {
        let mut left = data;
        let mut first = true;
        // Loop at least once so that an empty record still writes a fragment.
        loop {
            let room = BLOCK_SIZE - self.block_offset;
            if room < HEADER_LEN {
                // Too small for a header: pad so the next fragment starts a block.
                self.file.append(&[0u8; HEADER_LEN][..room])?;
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_LEN;
            let n = left.len().min(avail);
            let last = n == left.len();
            let ty = match (first, last) {
                (true, true) => FULL,
                (true, false) => FIRST,
                (false, true) => LAST,
                (false, false) => MIDDLE,
            };
            self.emit(ty, &left[..n])?;
            left = &left[n..];
            first = false;
            if last {
                return Ok(());
            }
        }
    }

    fn emit(&mut self, ty: u8, payload: &[u8]) -> Result<()> {
        debug_assert!(payload.len() <= BLOCK_SIZE - HEADER_LEN);
        let mut header = [0u8; HEADER_LEN];
        header[..4].copy_from_slice(&fragment_crc(ty, payload).to_le_bytes());
        header[4..6].copy_from_slice(&(payload.len() as u16).to_le_bytes());
        header[6] = ty;
        self.file.append(&header)?;
        self.file.append(payload)?;
        self.block_offset += HEADER_LEN + payload.len();
        Ok(())
    }

    /// Hands buffered bytes to the OS.
    pub fn flush(&mut self) -> Result<()> {
        self.file.flush()
    }

    /// Flushes and makes the appended records durable.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// Syncs what reached the file, not the buffered rest (see
    /// [`WritableFile::sync_written`](crate::storage::WritableFile::sync_written)).
    pub fn sync_written(&mut self) -> Result<()> {
        self.file.sync_written()
    }

    /// Cuts the log back to `len` bytes, dropping buffered ones: a failed write's record,
    /// whole or torn, is gone from the file (see `WritableFile::cut_to`).
    pub fn cut_to(&mut self, len: u64) -> Result<()> {
        self.file.cut_to(len)
    }

    /// Bytes known to have reached the file (see `WritableFile::reached_file`).
    pub fn reached_file(&self) -> Option<u64> {
        self.file.reached_file()
    }

    /// Bytes written to the file so far (including buffered ones).
    pub fn len(&self) -> u64 {
        self.file.len()
    }

    /// True if nothing was written.
    pub fn is_empty(&self) -> bool {
        self.file.is_empty()
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.file.path()
    }
}
