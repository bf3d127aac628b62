//! The checksummed record log shared by the WAL and the manifest.
//!
//! The file is a sequence of 32 KiB blocks. A record is split into fragments that never
//! cross a block boundary; each fragment is a physical record
//! `[masked crc32c: 4][len: u16 LE][type: u8][payload]`, where the CRC covers the type byte
//! and the payload. When fewer than [`HEADER_LEN`] bytes remain in a block they are zero
//! padding. Block alignment lets a reader resynchronise after damage, and the per-fragment
//! CRC tells a torn tail (a crash mid-write) from real corruption; see [`LogReader`].
//!
//! The format knows nothing about what the records mean.

mod reader;
mod writer;

#[cfg(test)]
pub(crate) use reader::is_torn_write;
pub use reader::{LogReader, SkipStats, TailState};
pub use writer::LogWriter;

/// Size of a block.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// Size of a physical record header: crc (4) + length (2) + type (1).
pub const HEADER_LEN: usize = 7;

/// Fragment types. 0 is reserved so that zeroed regions never parse as a record.
pub(crate) const FULL: u8 = 1;
pub(crate) const FIRST: u8 = 2;
pub(crate) const MIDDLE: u8 = 3;
pub(crate) const LAST: u8 = 4;

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC of a fragment, masked (as in LevelDB) because a CRC computed over data that itself
/// contains CRCs is weak.
pub(crate) fn fragment_crc(ty: u8, payload: &[u8]) -> u32 {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&[ty]), payload);
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

#[cfg(test)]
mod tests;
