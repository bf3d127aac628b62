use std::ops::Range;

use super::{fragment_crc, BLOCK_SIZE, FIRST, FULL, HEADER_LEN, LAST, MIDDLE};
use crate::{Error, Result};

/// How a log ended, known once [`LogReader::next_record`] has returned `Ok(None)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TailState {
    /// The file ended at a record boundary (possibly after block padding).
    Clean,
    /// The file ended in a torn write: an incomplete or damaged record with no valid
    /// record after it. Recovery may truncate the file to `valid_up_to`.
    Truncated {
        /// Offset where the torn region starts; every record before it was returned.
        valid_up_to: u64,
        /// Bytes from `valid_up_to` to the end of the file.
        dropped_bytes: u64,
    },
}

/// What a reader built with `skip_corrupt` stepped over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SkipStats {
    /// Bytes skipped.
    pub bytes: u64,
    /// Damaged regions skipped; each may have held several records.
    pub regions: u64,
}

/// Reads records from a whole log file held in memory.
///
/// Damage is classified by what follows it. A bad fragment (bad checksum, impossible type
/// or length, cut short by the end of the file) or a broken fragment sequence with no
/// complete valid record anywhere after it is a torn tail: reading stops cleanly and
/// [`tail`](Self::tail) reports it. Damage followed by a valid record cannot come from a
/// crash during an append, so it is [`Error::Corruption`], or, with `skip_corrupt`, is
/// skipped and counted in [`skipped`](Self::skipped).
///
/// The search for a following record tries every offset, not just block starts, because
/// a damaged length field loses the position of the next fragment within the block. It
/// could in principle match a record embedded inside a damaged payload; the CRC makes an
/// accidental match negligible.
pub struct LogReader {
    data: Vec<u8>,
    file: String,
    skip_corrupt: bool,
    pos: usize,
    done: bool,
    tail: TailState,
    skipped: SkipStats,
}

impl LogReader {
    /// A reader over the contents of `file` (the name is used in error messages).
    pub fn new(data: Vec<u8>, file: impl Into<String>, skip_corrupt: bool) -> Self {
        LogReader {
            data,
            file: file.into(),
            skip_corrupt,
            pos: 0,
            done: false,
            tail: TailState::Clean,
            skipped: SkipStats::default(),
        }
    }

    /// The next record, `Ok(None)` at the end of the log (including a torn tail).
    /// An error is sticky: later calls return `Ok(None)`.
    pub fn next_record(&mut self) -> Result<Option<Vec<u8>>> {
        let mut rec = Vec::new();
        // Offset of the FIRST fragment of the record being assembled.
        let mut rec_start: Option<usize> = None;
        loop {
            if self.done {
                return Ok(None);
            }
            let pos = skip_trailer(self.pos, self.data.len());
            if pos >= self.data.len() {
                self.pos = self.data.len();
                match rec_start {
                    Some(s) => self.truncate_at(s),
                    None => self.done = true,
                }
                continue;
            }
            let (ty, payload) = match parse_fragment(&self.data, pos) {
                Ok(f) => f,
                Err(reason) => {
                    self.resync(rec_start.take().unwrap_or(pos), pos + 1, reason)?;
                    rec.clear();
                    continue;
                }
            };
            match (ty, rec_start) {
                (FULL | FIRST, Some(s)) => {
                    self.resync(s, pos, "record cut off before its last fragment")?;
                    rec_start = None;
                    rec.clear();
                }
                (MIDDLE | LAST, None) => {
                    self.resync(pos, payload.end, "fragment without a first fragment")?;
                }
                (FULL, None) => {
                    self.pos = payload.end;
                    return Ok(Some(self.data[payload].to_vec()));
                }
                (FIRST, None) => {
                    rec_start = Some(pos);
                    self.pos = payload.end;
                    rec.extend_from_slice(&self.data[payload]);
                }
                (MIDDLE, Some(_)) => {
                    self.pos = payload.end;
                    rec.extend_from_slice(&self.data[payload]);
                }
                (LAST, Some(_)) => {
                    self.pos = payload.end;
                    rec.extend_from_slice(&self.data[payload]);
                    return Ok(Some(rec));
                }
                _ => unreachable!("parse_fragment accepts only known types"),
            }
        }
    }

    /// How the log ended; `Clean` until the end has been reached.
    pub fn tail(&self) -> TailState {
        self.tail
    }

    /// False if the log ended in a truncated tail that cannot be a write cut short by a
    /// crash (see [`is_torn_write`]): a damaged record that was written whole.
    pub(crate) fn tail_is_torn_write(&self) -> bool {
        match self.tail {
            TailState::Clean => true,
            TailState::Truncated { valid_up_to, .. } => {
                is_torn_write(&self.data, valid_up_to as usize)
            }
        }
    }

    /// What was skipped so far (only with `skip_corrupt`).
    pub fn skipped(&self) -> SkipStats {
        self.skipped
    }

    /// Handles damage starting at `start`: a torn tail if no complete record starts at or
    /// after `scan_from`, otherwise skipped or reported. Scanning starts after the
    /// fragments already verified, since no record starts inside a valid payload.
    fn resync(&mut self, start: usize, scan_from: usize, reason: &str) -> Result<()> {
        match find_complete_record(&self.data, scan_from) {
            None => {
                self.truncate_at(start);
                Ok(())
            }
            Some(next) if self.skip_corrupt => {
                self.skipped.bytes += (next - start) as u64;
                self.skipped.regions += 1;
                self.pos = next;
                Ok(())
            }
            Some(next) => {
                self.done = true;
                Err(Error::corruption(
                    self.file.clone(),
                    format!("{reason} at offset {start}; a valid record follows at offset {next}"),
                ))
            }
        }
    }

    fn truncate_at(&mut self, start: usize) {
        self.done = true;
        self.tail = TailState::Truncated {
            valid_up_to: start as u64,
            dropped_bytes: (self.data.len() - start) as u64,
        };
    }
}

/// Moves past block padding: a header never starts in the last `HEADER_LEN - 1` bytes.
fn skip_trailer(pos: usize, len: usize) -> usize {
    let room = BLOCK_SIZE - pos % BLOCK_SIZE;
    if room < HEADER_LEN {
        (pos + room).min(len)
    } else {
        pos
    }
}

/// Parses the fragment whose header starts at `pos` (not in a block trailer); returns
/// its type and payload range.
fn parse_fragment(data: &[u8], pos: usize) -> Result<(u8, Range<usize>), &'static str> {
    let Some(header) = data.get(pos..pos + HEADER_LEN) else {
        return Err("incomplete fragment header");
    };
    let ty = header[6];
    if !(FULL..=LAST).contains(&ty) {
        return Err("invalid fragment type");
    }
    let len = u16::from_le_bytes([header[4], header[5]]) as usize;
    if pos % BLOCK_SIZE + HEADER_LEN + len > BLOCK_SIZE {
        return Err("fragment crosses a block boundary");
    }
    let payload = pos + HEADER_LEN..pos + HEADER_LEN + len;
    let Some(bytes) = data.get(payload.clone()) else {
        return Err("incomplete fragment payload");
    };
    let crc = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    if crc != fragment_crc(ty, bytes) {
        return Err("fragment checksum mismatch");
    }
    Ok((ty, payload))
}

/// True if the bytes from `start` (where a reader found a torn tail) to the end of `data`
/// can be a write cut short by a crash: valid fragments, then either zeros or one fragment
/// cut off by the end of the file whose checksum does not match the bytes present. A
/// complete fragment with a bad checksum, or a "cut off" one whose payload still matches
/// its checksum (a damaged length field), is damage rather than a torn write.
pub(crate) fn is_torn_write(data: &[u8], start: usize) -> bool {
    let mut pos = start;
    loop {
        pos = skip_trailer(pos, data.len());
        if data[pos.min(data.len())..].iter().all(|&b| b == 0) {
            return true;
        }
        let Some(header) = data.get(pos..pos + HEADER_LEN) else {
            return true; // header cut off
        };
        let ty = header[6];
        let len = u16::from_le_bytes([header[4], header[5]]) as usize;
        if !(FULL..=LAST).contains(&ty) || pos % BLOCK_SIZE + HEADER_LEN + len > BLOCK_SIZE {
            return false;
        }
        let crc = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let end = pos + HEADER_LEN + len;
        if end > data.len() {
            return crc != fragment_crc(ty, &data[pos + HEADER_LEN..]);
        }
        if crc != fragment_crc(ty, &data[pos + HEADER_LEN..end]) {
            return false;
        }
        pos = end;
    }
}

/// The first offset >= `from` where a complete, valid record (a FULL fragment, or FIRST,
/// MIDDLE*, LAST in sequence) starts.
fn find_complete_record(data: &[u8], from: usize) -> Option<usize> {
    let mut p = from;
    while p + HEADER_LEN <= data.len() {
        let room = BLOCK_SIZE - p % BLOCK_SIZE;
        if room < HEADER_LEN {
            p += room;
            continue;
        }
        // Cheap filter before the checksum.
        let ty = data[p + 6];
        if (ty == FULL || ty == FIRST) && complete_record_at(data, p) {
            return Some(p);
        }
        p += 1;
    }
    None
}

fn complete_record_at(data: &[u8], start: usize) -> bool {
    let mut pos = start;
    let mut first = true;
    loop {
        match parse_fragment(data, pos) {
            Ok((FULL, _)) if first => return true,
            Ok((FIRST, r)) if first => pos = r.end,
            Ok((MIDDLE, r)) if !first => pos = r.end,
            Ok((LAST, _)) if !first => return true,
            _ => return false,
        }
        first = false;
        pos = skip_trailer(pos, data.len());
    }
}
