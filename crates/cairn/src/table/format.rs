//! Low-level encodings shared by every part of a table: varints, block handles, the block
//! trailer (type + checksum) and the footer.

use crate::compression::{decompress_to, CODE_NONE};
use crate::{Error, Result};

/// Bytes after every block on disk: 1 type byte + 4-byte CRC32C of contents and type.
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Size of the footer at the end of every table file.
pub const FOOTER_LEN: usize = 64;
/// Identifies a cairn table ("cairnTBL" as little-endian bytes).
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"cairnTBL");
/// The newest table format version this build writes and reads. Version 2 may hold
/// prefix-compressed blocks (see `block.rs`), which builds that read only version 1 would
/// take for corruption; version 3 may hold fixed-width blocks and index entries that name
/// them; version 4 may hold a cache-local bloom filter (see `bloom.rs`); version 5 may hold
/// compressed blocks (the codec in the high half of the trailer's type byte); version 6 may
/// hold a range-deletion block named by the properties. This build reads all six (each
/// block says its own layout) and writes the oldest version that covers the layouts a
/// table holds, so tables without the newer ones stay readable by older builds.
pub const FORMAT_VERSION: u32 = 6;

/// The version of tables with a compressed block and no range deletion.
pub(crate) const COMPRESSED_FORMAT_VERSION: u32 = 5;

/// The version of tables with a cache-local filter and no compressed block.
pub(crate) const LOCAL_FILTER_FORMAT_VERSION: u32 = 4;

/// The version of tables with fixed-width blocks and a classic filter (or none).
pub(crate) const FIXED_FORMAT_VERSION: u32 = 3;

/// The version of tables without fixed-width blocks or a cache-local filter.
pub(crate) const PREFIXED_FORMAT_VERSION: u32 = 2;

/// The oldest table format version this build reads.
pub const OLDEST_FORMAT_VERSION: u32 = 1;

/// What a block holds; stored in its trailer so a handle pointing at the wrong block is
/// caught even when the checksum matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum BlockType {
    Data = 0,
    Index = 1,
    Filter = 2,
    Properties = 3,
    RangeDel = 4,
}

pub(crate) use crate::coding::{get_varint, put_varint};

/// A varint that must fit in `usize` and in what is left of `buf` after `*pos`: used for
/// lengths, so a corrupt length can never drive an allocation or a slice past the end.
#[inline]
pub(crate) fn get_len(buf: &[u8], pos: &mut usize) -> Option<usize> {
    let v = usize::try_from(get_varint(buf, pos)?).ok()?;
    (v <= buf.len().saturating_sub(*pos)).then_some(v)
}

/// Reads a little-endian u16 at `pos`, if in bounds.
pub(crate) fn get_u16(buf: &[u8], pos: usize) -> Option<u16> {
    let b = buf.get(pos..pos.checked_add(2)?)?;
    Some(u16::from_le_bytes(b.try_into().ok()?))
}

/// Reads a little-endian u32 at `pos`, if in bounds.
pub(crate) fn get_u32(buf: &[u8], pos: usize) -> Option<u32> {
    let b = buf.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

/// Reads a little-endian u64 at `pos`, if in bounds.
pub(crate) fn get_u64(buf: &[u8], pos: usize) -> Option<u64> {
    let b = buf.get(pos..pos.checked_add(8)?)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// Where a block lives in its file. `size` excludes the 5-byte trailer. Together with a
/// file number this is all a key-pointer cache needs to fetch the block again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockHandle {
    /// Offset of the block's first byte.
    pub offset: u64,
    /// Length of the block's contents (without trailer).
    pub size: u64,
}

impl BlockHandle {
    /// Longest varint encoding of a handle.
    pub const MAX_ENCODED_LEN: usize = 20;

    /// Builds a handle.
    pub fn new(offset: u64, size: u64) -> Self {
        BlockHandle { offset, size }
    }

    /// Appends the varint encoding.
    pub fn encode_to(&self, buf: &mut Vec<u8>) {
        put_varint(buf, self.offset);
        put_varint(buf, self.size);
    }

    /// Decodes a handle at `*pos`, advancing it; `None` if malformed.
    pub fn decode_from(buf: &[u8], pos: &mut usize) -> Option<Self> {
        let offset = get_varint(buf, pos)?;
        let size = get_varint(buf, pos)?;
        Some(BlockHandle { offset, size })
    }

    /// Offset just past the block's trailer; `None` on overflow.
    pub fn end_with_trailer(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// The trailer for a block's stored bytes: its type in the low four bits of the first
/// byte, the codec of a compressed block in the high four (0: stored raw), then the
/// checksum of the stored bytes and that byte.
pub(crate) fn block_trailer(contents: &[u8], ty: BlockType, codec: u8) -> [u8; BLOCK_TRAILER_LEN] {
    let tag = ty as u8 | codec << 4;
    let crc = crc32c::crc32c_append(crc32c::crc32c(contents), &[tag]);
    let mut t = [0u8; BLOCK_TRAILER_LEN];
    t[0] = tag;
    t[1..].copy_from_slice(&crc.to_le_bytes());
    t
}

/// Verifies the trailer of `raw` (stored bytes followed by trailer) and returns the stored
/// length and the codec (0: raw). Any mismatch is a corruption error naming `file`.
pub(crate) fn verify_block(raw: &[u8], ty: BlockType, file: &str, at: u64) -> Result<(usize, u8)> {
    let Some(n) = raw.len().checked_sub(BLOCK_TRAILER_LEN) else {
        return Err(Error::corruption(file, format!("block at {at} too short")));
    };
    let (contents, trailer) = raw.split_at(n);
    let want = get_u32(trailer, 1).unwrap_or(0);
    let got = crc32c::crc32c_append(crc32c::crc32c(contents), &trailer[..1]);
    if got != want {
        return Err(Error::corruption(
            file,
            format!("block checksum mismatch at offset {at} (stored {want:#010x}, computed {got:#010x})"),
        ));
    }
    if trailer[0] & 0x0f != ty as u8 {
        return Err(Error::corruption(
            file,
            format!(
                "block at offset {at} has type {} where {:?} was expected",
                trailer[0] & 0x0f,
                ty
            ),
        ));
    }
    Ok((n, trailer[0] >> 4))
}

/// The contents of a block read with its trailer: verified, then decompressed when the
/// trailer names a codec (a stored-raw block is truncated in place, without a copy).
pub(crate) fn block_contents(
    mut raw: Vec<u8>,
    ty: BlockType,
    file: &str,
    at: u64,
) -> Result<Vec<u8>> {
    let (n, codec) = verify_block(&raw, ty, file, at)?;
    if codec == CODE_NONE {
        raw.truncate(n);
        return Ok(raw);
    }
    decompress_to(codec, &raw[..n], file, at, ty == BlockType::Data)
}

/// As [`block_contents`] for a block inside a larger buffer (copied out).
pub(crate) fn block_contents_in(raw: &[u8], ty: BlockType, file: &str, at: u64) -> Result<Vec<u8>> {
    let (n, codec) = verify_block(raw, ty, file, at)?;
    if codec == CODE_NONE {
        // Only a data block gives its buffer back (`Block`'s drop); a filter kept in a
        // spare's capacity would be charged for less than it holds.
        if ty != BlockType::Data {
            return Ok(raw[..n].to_vec());
        }
        let mut out = super::block_buffers::take(n);
        out.extend_from_slice(&raw[..n]);
        return Ok(out);
    }
    decompress_to(codec, &raw[..n], file, at, ty == BlockType::Data)
}

/// The fixed-size last bytes of a table file.
///
/// Layout (64 bytes): index, filter and properties handles as fixed u64 LE pairs (48 bytes),
/// CRC32C of every other footer byte (u32), format version (u32), magic (u64). The version
/// and magic sit at fixed offsets from the end so that a future version can change the rest
/// of the footer and still be recognised (and refused) by this build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    /// The index block.
    pub index: BlockHandle,
    /// The filter block; `size == 0` means the table has no filter.
    pub filter: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
}

impl Footer {
    /// Encodes the footer with the current format version.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        self.encode_as(FORMAT_VERSION)
    }

    /// Encodes the footer as a build writing `version` would (tests of older tables).
    pub(crate) fn encode_as(&self, version: u32) -> [u8; FOOTER_LEN] {
        let mut f = [0u8; FOOTER_LEN];
        for (i, h) in [self.index, self.filter, self.properties]
            .iter()
            .enumerate()
        {
            f[i * 16..i * 16 + 8].copy_from_slice(&h.offset.to_le_bytes());
            f[i * 16 + 8..i * 16 + 16].copy_from_slice(&h.size.to_le_bytes());
        }
        f[52..56].copy_from_slice(&version.to_le_bytes());
        f[56..64].copy_from_slice(&TABLE_MAGIC.to_le_bytes());
        let crc = footer_crc(&f);
        f[48..52].copy_from_slice(&crc.to_le_bytes());
        f
    }

    /// Decodes a footer: magic first (is this a table at all?), then version (can this build
    /// read it?), then the checksum.
    pub fn decode(buf: &[u8], file: &str) -> Result<Footer> {
        if buf.len() != FOOTER_LEN {
            return Err(Error::corruption(
                file,
                format!("footer is {} bytes, expected {FOOTER_LEN}", buf.len()),
            ));
        }
        let word = |pos| get_u64(buf, pos).unwrap_or(0);
        if word(56) != TABLE_MAGIC {
            return Err(Error::corruption(
                file,
                "bad table magic (not a table, or truncated)",
            ));
        }
        let version = get_u32(buf, 52).unwrap_or(0);
        if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion {
                file: file.to_string(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if get_u32(buf, 48).unwrap_or(0) != footer_crc(buf) {
            return Err(Error::corruption(file, "footer checksum mismatch"));
        }
        let h = |i: usize| BlockHandle::new(word(i * 16), word(i * 16 + 8));
        Ok(Footer {
            index: h(0),
            filter: h(1),
            properties: h(2),
        })
    }
}

fn footer_crc(f: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&f[..48]), &f[52..FOOTER_LEN])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn varint_round_trip_and_bounds() {
        let mut buf = Vec::new();
        let vals = [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX];
        for v in vals {
            put_varint(&mut buf, v);
        }
        let mut pos = 0;
        for v in vals {
            assert_eq!(get_varint(&buf, &mut pos), Some(v));
        }
        assert_eq!(pos, buf.len());
        assert_eq!(get_varint(&buf, &mut pos), None);
        // Truncated and overlong encodings.
        assert_eq!(get_varint(&[0x80], &mut 0), None);
        assert_eq!(get_varint(&[0xff; 10], &mut 0), None);
        assert_eq!(
            get_varint(
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                &mut 0
            ),
            None
        );
        // A length larger than what remains is refused.
        assert_eq!(get_len(&[5, 1, 2], &mut 0), None);
        assert_eq!(get_len(&[2, 1, 2], &mut 0), Some(2));
    }

    #[test]
    fn footer_round_trip_and_checks() {
        let f = Footer {
            index: BlockHandle::new(100, 20),
            filter: BlockHandle::new(0, 0),
            properties: BlockHandle::new(125, 40),
        };
        let enc = f.encode();
        assert_eq!(Footer::decode(&enc, "t").unwrap(), f);
        let mut bad = enc;
        bad[60] ^= 1;
        assert!(matches!(
            Footer::decode(&bad, "t"),
            Err(Error::Corruption { .. })
        ));
        let mut bad = enc;
        bad[3] ^= 1;
        assert!(matches!(
            Footer::decode(&bad, "t"),
            Err(Error::Corruption { .. })
        ));
        let mut v7 = enc;
        v7[52] = 7;
        assert!(matches!(
            Footer::decode(&v7, "t"),
            Err(Error::UnsupportedVersion { found: 7, .. })
        ));
        // Version 1 tables (blocks without prefixes) still open.
        let v1 = Footer::decode(&enc, "t").unwrap().encode_as(1);
        assert_eq!(Footer::decode(&v1, "t").unwrap(), f);
        assert!(Footer::decode(&enc[1..], "t").is_err());
    }

    #[test]
    fn block_trailer_detects_flips() {
        let contents = b"hello block".to_vec();
        let mut raw = contents.clone();
        raw.extend_from_slice(&block_trailer(&contents, BlockType::Data, 0));
        assert_eq!(
            verify_block(&raw, BlockType::Data, "t", 0).unwrap(),
            (contents.len(), 0)
        );
        assert!(verify_block(&raw, BlockType::Index, "t", 0).is_err());
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0x10;
            assert!(
                verify_block(&bad, BlockType::Data, "t", 0).is_err(),
                "byte {i}"
            );
        }
        assert!(verify_block(&raw[..4], BlockType::Data, "t", 0).is_err());
    }

    #[test]
    fn garbage_footers_never_panic() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for _ in 0..10_000 {
            let n = rng.random_range(0..80);
            let mut buf: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            if n == FOOTER_LEN && rng.random_bool(0.5) {
                buf[56..64].copy_from_slice(&TABLE_MAGIC.to_le_bytes());
            }
            let _ = Footer::decode(&buf, "t");
            let mut pos = 0;
            let _ = BlockHandle::decode_from(&buf, &mut pos);
        }
    }
}
