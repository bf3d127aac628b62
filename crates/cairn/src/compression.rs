//! Block compression: the codecs a table's data and index blocks may be stored in (the C
//! libraries liblz4 and libzstd, built from source by their crates, as RocksDB links
//! them), and the rule for when a compressed form is kept.
//!
//! A compressed payload is `varint(uncompressed length) ++ codec bytes`; the codec itself is
//! named outside the payload (in a block's trailer, in a value-log record's flags), so a
//! stored block says how to read it back and tables written under different settings read
//! alike. A payload is kept only when it is at least 1/8 smaller than the raw bytes
//! (RocksDB's rule): below that the decompression on every cache miss costs more than the
//! bytes save.

use std::cell::RefCell;

use crate::coding::{get_varint, put_varint};
use crate::{Error, Result};

/// How blocks are compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Compression {
    /// Stored raw.
    #[default]
    None,
    /// LZ4 (fast; the setting RocksDB recommends for every level but the last).
    Lz4,
    /// Zstandard at `level` (smaller; RocksDB's recommendation for the bottommost level).
    /// Levels run from zstd's fast negative levels to 22; 3 is zstd's default.
    Zstd {
        /// Compression level.
        level: i32,
    },
}

/// The codec code stored with a compressed payload. 0 is "raw".
pub(crate) const CODE_NONE: u8 = 0;
const CODE_LZ4: u8 = 1;
const CODE_ZSTD: u8 = 2;

/// Largest uncompressed length a payload may claim (a claimed length is checked before
/// anything is allocated for it): a block of the largest block size and the largest
/// entry is under 81 MiB. Larger blocks (an index of a huge table) are stored raw.
const MAX_UNCOMPRESSED: u64 = 1 << 28;

impl Compression {
    /// Zstandard at its default level.
    pub const ZSTD: Compression = Compression::Zstd { level: 3 };

    /// The name the CLI, the bench and stats use: `none`, `lz4`, `zstd` (level 3) or
    /// `zstd:N`.
    pub fn name(&self) -> String {
        match self {
            Compression::None => "none".into(),
            Compression::Lz4 => "lz4".into(),
            Compression::Zstd { level: 3 } => "zstd".into(),
            Compression::Zstd { level } => format!("zstd:{level}"),
        }
    }

    /// Parses a [`name`](Self::name).
    pub fn parse(s: &str) -> Option<Compression> {
        match s {
            "none" => Some(Compression::None),
            "lz4" => Some(Compression::Lz4),
            "zstd" => Some(Compression::ZSTD),
            _ => {
                let level = s.strip_prefix("zstd:")?.parse().ok()?;
                Some(Compression::Zstd { level })
            }
        }
    }

    /// Checks the setting: a Zstandard level must be one zstd accepts.
    pub fn validate(&self) -> Result<()> {
        match *self {
            Compression::Zstd { level } if !zstd::compression_level_range().contains(&level) => {
                Err(Error::InvalidArgument(format!(
                    "zstd compression level {level} is outside {:?}",
                    zstd::compression_level_range()
                )))
            }
            _ => Ok(()),
        }
    }

    /// The code stored beside a payload compressed this way.
    pub(crate) fn code(&self) -> u8 {
        match self {
            Compression::None => CODE_NONE,
            Compression::Lz4 => CODE_LZ4,
            Compression::Zstd { .. } => CODE_ZSTD,
        }
    }
}

thread_local! {
    /// zstd contexts are costly to set up (hundreds of KiB): one per thread and level.
    static ZSTD_COMPRESSOR: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { RefCell::new(None) };
    static ZSTD_DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// `raw` compressed as `c`, as a payload, when that saves at least 1/8 of its bytes; `None`
/// when `raw` should be stored as it is (no compression asked, or it does not shrink
/// enough).
pub(crate) fn compress(c: Compression, raw: &[u8]) -> Option<Vec<u8>> {
    if c == Compression::None || raw.is_empty() || raw.len() as u64 > MAX_UNCOMPRESSED {
        return None;
    }
    let mut out = Vec::with_capacity(raw.len() / 2 + 16);
    put_varint(&mut out, raw.len() as u64);
    let prefix = out.len();
    match c {
        Compression::None => return None,
        Compression::Lz4 => {
            out.resize(prefix + lz4::block::compress_bound(raw.len()).ok()?, 0);
            let n = lz4::block::compress_to_buffer(raw, None, false, &mut out[prefix..]).ok()?;
            out.truncate(prefix + n);
        }
        Compression::Zstd { level } => {
            out.resize(prefix + zstd::zstd_safe::compress_bound(raw.len()), 0);
            let n = ZSTD_COMPRESSOR.with(|cell| {
                let mut cell = cell.borrow_mut();
                if cell.as_ref().is_none_or(|(l, _)| *l != level) {
                    *cell = Some((level, zstd::bulk::Compressor::new(level).ok()?));
                }
                let (_, z) = cell.as_mut()?;
                z.compress_to_buffer(raw, &mut out[prefix..]).ok()
            })?;
            out.truncate(prefix + n);
        }
    }
    (out.len() <= raw.len() - raw.len() / 8).then_some(out)
}

/// The raw bytes of `payload`, stored with codec `code`. Any damage (an unknown codec, a
/// length that cannot be, a stream that does not decode to exactly that length) is a
/// corruption error naming `file` and `at`.
pub(crate) fn decompress(code: u8, payload: &[u8], file: &str, at: u64) -> Result<Vec<u8>> {
    decompress_to(code, payload, file, at, false)
}

/// As [`decompress`]; with `spare`, the block is decoded into a dropped data block's
/// buffer when this thread kept one, else into a new buffer of the block's size class
/// (`block_buffers`: only data blocks, which give theirs back).
pub(crate) fn decompress_to(
    code: u8,
    payload: &[u8],
    file: &str,
    at: u64,
    spare: bool,
) -> Result<Vec<u8>> {
    let bad = |what: &str| Error::corruption(file, format!("compressed block at {at}: {what}"));
    let mut pos = 0;
    let len = get_varint(payload, &mut pos)
        .filter(|n| *n <= MAX_UNCOMPRESSED)
        .ok_or_else(|| bad("bad uncompressed length"))? as usize;
    let body = &payload[pos..];
    let decoded = match code {
        CODE_LZ4 => {
            // LZ4 cannot expand a byte of input to more than 255 of output: a longer claim
            // is damage, refused before allocating for it.
            if len > body.len().saturating_mul(255) {
                return Err(bad("length beyond what LZ4 can encode"));
            }
            lz4_decompress(body, len, spare)
        }
        CODE_ZSTD => {
            let framed = zstd::zstd_safe::get_frame_content_size(body).ok().flatten();
            if framed != Some(len as u64) {
                return Err(bad("zstd frame size differs from the stored length"));
            }
            let mut out = match spare {
                true => crate::table::block_buffers::take(len),
                false => Vec::with_capacity(len),
            };
            let n = ZSTD_DECOMPRESSOR.with(|cell| {
                let mut cell = cell.borrow_mut();
                if cell.is_none() {
                    *cell = Some(zstd::bulk::Decompressor::new().map_err(|e| bad(&e.to_string()))?);
                }
                let z = cell.as_mut().expect("set above");
                z.decompress_to_buffer(body, &mut out)
                    .map_err(|e| bad(&format!("zstd: {e}")))
            })?;
            (n == len).then_some(out)
        }
        other => return Err(bad(&format!("unknown compression type {other}"))),
    };
    decoded.ok_or_else(|| bad("decoded to a different length than stored"))
}

/// LZ4 `body` decoded into a buffer of exactly `len` bytes, `None` when it does not decode
/// to that length. The buffer is not zeroed first, as RocksDB's is not: zeroing a block's
/// worth of bytes that LZ4 then overwrites was 4% of a cached-read profile.
/// `take(len)` returns an empty buffer with capacity >= `len`.
fn lz4_decompress(body: &[u8], len: usize, spare: bool) -> Option<Vec<u8>> {
    // `len` <= MAX_UNCOMPRESSED fits an i32; a body that does not is damage.
    let src_len = i32::try_from(body.len()).ok()?;
    let mut out = match spare {
        true => crate::table::block_buffers::take(len),
        false => Vec::with_capacity(len),
    };
    // SAFETY: LZ4_decompress_safe reads `src_len` bytes of `body` and writes at most
    // `len` bytes (its bound) into `out`'s spare capacity, which holds `len`; it returns
    // the count written, or a negative number on malformed input, and never reads or
    // writes outside these bounds whatever the input. Only when exactly `len` bytes were
    // written, so all of them initialised, does `out` take that length.
    unsafe {
        let n = lz4::liblz4::LZ4_decompress_safe(
            body.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            src_len,
            len as i32,
        );
        if usize::try_from(n).ok() != Some(len) {
            return None;
        }
        out.set_len(len);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn text(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| b"key000123value"[i % 14] ^ (i / 97) as u8)
            .collect()
    }

    #[test]
    fn round_trips_and_keeps_only_real_savings() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let noise: Vec<u8> = (0..4096).map(|_| rng.random()).collect();
        for c in [
            Compression::Lz4,
            Compression::ZSTD,
            Compression::Zstd { level: -5 },
        ] {
            for n in [1, 17, 4096, 70_000] {
                let raw = text(n);
                if let Some(p) = compress(c, &raw) {
                    assert!(p.len() <= raw.len() - raw.len() / 8);
                    assert_eq!(decompress(c.code(), &p, "t", 0).unwrap(), raw);
                } else {
                    assert!(n < 100, "{c:?} did not shrink {n} bytes of text");
                }
            }
            assert!(
                compress(c, &noise).is_none(),
                "noise does not shrink by 1/8"
            );
        }
        assert!(compress(Compression::None, &text(4096)).is_none());
    }

    #[test]
    fn damage_is_a_corruption_error() {
        for c in [Compression::Lz4, Compression::ZSTD] {
            let p = compress(c, &text(4096)).unwrap();
            for i in 0..p.len() {
                for flip in [0x01, 0x80] {
                    let mut bad = p.clone();
                    bad[i] ^= flip;
                    match decompress(c.code(), &bad, "t", 0) {
                        Ok(v) => assert_eq!(v.len(), 4096, "{c:?} byte {i}"),
                        Err(e) => assert!(e.is_corruption(), "{e}"),
                    }
                }
            }
            for cut in [0, 1, p.len() / 2, p.len() - 1] {
                assert!(decompress(c.code(), &p[..cut], "t", 0).is_err());
            }
            // The other codec's payload, and an unknown codec.
            let other = if c == Compression::Lz4 {
                CODE_ZSTD
            } else {
                CODE_LZ4
            };
            assert!(decompress(other, &p, "t", 0).is_err());
            assert!(decompress(9, &p, "t", 0).unwrap_err().is_corruption());
        }
        // A claimed length far beyond the payload is refused before allocating.
        let mut huge = Vec::new();
        put_varint(&mut huge, 1 << 30);
        huge.extend_from_slice(&[0u8; 8]);
        assert!(decompress(CODE_LZ4, &huge, "t", 0).is_err());
        assert!(decompress(CODE_ZSTD, &huge, "t", 0).is_err());
    }

    #[test]
    fn names_parse_back_and_levels_are_checked() {
        for c in [
            Compression::None,
            Compression::Lz4,
            Compression::ZSTD,
            Compression::Zstd { level: 19 },
        ] {
            assert_eq!(Compression::parse(&c.name()), Some(c));
            c.validate().unwrap();
        }
        assert_eq!(Compression::parse("snappy"), None);
        assert!(Compression::Zstd { level: 99 }.validate().is_err());
    }
}
