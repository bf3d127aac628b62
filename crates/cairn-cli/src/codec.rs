//! Key and value encodings on the command line, after `ldb`: `0x`-prefixed hex with
//! `--hex`, else UTF-8 text in which C-style escapes (`\x00`, `\n`, `\\`) stand for the
//! bytes that are not printable. Output escapes exactly what input unescapes, so whatever
//! `get` or `scan` prints can be passed back as a key.

use anyhow::Result;

/// How one kind of datum (keys or values) is written on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 text with C-style escapes.
    #[default]
    Escaped,
    /// `0x`-prefixed hexadecimal.
    Hex,
}

impl Encoding {
    pub fn from_flag(hex: bool) -> Self {
        if hex {
            Encoding::Hex
        } else {
            Encoding::Escaped
        }
    }

    /// Parses an argument into bytes.
    pub fn decode(self, s: &str) -> Result<Vec<u8>> {
        match self {
            Encoding::Hex => Ok(decode_hex(s)?),
            Encoding::Escaped => Ok(unescape(s)?),
        }
    }

    /// Formats bytes for output.
    pub fn encode(self, b: &[u8]) -> String {
        match self {
            Encoding::Hex => encode_hex(b),
            Encoding::Escaped => escape(b),
        }
    }
}

pub use cairn::key_text::{decode_hex, encode_hex, escape, unescape};
