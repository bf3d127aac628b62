//! Keys and values written as text, as `ldb` writes them: `0x`-prefixed hex, or UTF-8 in
//! which C-style escapes (`\x00`, `\n`, `\\`) stand for the bytes that are not printable.
//! [`escape`] writes exactly what [`unescape`] reads, so whatever a tool prints can be
//! passed back as a key. The CLI and the benchmark's key files share this one codec.

use crate::{Error, Result};

/// `0x` followed by two lowercase hex digits a byte (`0x` alone is the empty string).
pub fn encode_hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(2 + 2 * b.len());
    s.push_str("0x");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// Hex with or without the `0x` prefix, in either case.
pub fn decode_hex(s: &str) -> Result<Vec<u8>> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if !digits.len().is_multiple_of(2) {
        return Err(bad(format!("hex {s:?} has an odd number of digits")));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| bad(format!("{s:?} is not hex (expected digits 0-9, a-f)")))
        })
        .collect()
}

/// Printable UTF-8 as is; `\\`, `\n`, `\r`, `\t`, and `\xHH` for every other byte.
pub fn escape(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => s.push_str("\\\\"),
                '\n' => s.push_str("\\n"),
                '\r' => s.push_str("\\r"),
                '\t' => s.push_str("\\t"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for x in c.encode_utf8(&mut buf).bytes() {
                        s.push_str(&format!("\\x{x:02x}"));
                    }
                }
                c => s.push(c),
            }
        }
        for x in chunk.invalid() {
            s.push_str(&format!("\\x{x:02x}"));
        }
    }
    s
}

/// The inverse of [`escape`]; also accepts `\0`, `\"` and `\'`. An unknown escape is an
/// error rather than a guess.
pub fn unescape(s: &str) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next().map(|(_, c)| c) {
            Some('\\') => out.push(b'\\'),
            Some('n') => out.push(b'\n'),
            Some('r') => out.push(b'\r'),
            Some('t') => out.push(b'\t'),
            Some('0') => out.push(0),
            Some('"') => out.push(b'"'),
            Some('\'') => out.push(b'\''),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).map(|(_, c)| c).collect();
                let b = (hex.len() == 2)
                    .then(|| u8::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .ok_or_else(|| {
                        bad(format!(
                            "bad escape at byte {i} of {s:?}: \\x needs two hex digits"
                        ))
                    })?;
                out.push(b);
            }
            Some(other) => {
                return Err(bad(format!(
                    "unknown escape \\{other} at byte {i} of {s:?}"
                )))
            }
            None => {
                return Err(bad(format!(
                    "{s:?} ends in a lone backslash (write \\\\ for one)"
                )))
            }
        }
    }
    Ok(out)
}

fn bad(detail: String) -> Error {
    Error::InvalidArgument(detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255u8).collect();
        assert_eq!(unescape(&escape(&all)).unwrap(), all);
        assert_eq!(decode_hex(&encode_hex(&all)).unwrap(), all);
        assert_eq!(escape(b"a\x00b\n\\"), "a\\x00b\\n\\\\");
        assert_eq!(escape("héllo".as_bytes()), "héllo");
        assert_eq!(unescape("k\\x00\\x7f").unwrap(), b"k\x00\x7f");
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(unescape("\\q").is_err());
        assert!(unescape("\\x4").is_err());
        assert!(unescape("\\xzz").is_err());
        assert!(unescape("end\\").is_err());
        assert!(decode_hex("0x123").is_err());
        assert!(decode_hex("0xgg").is_err());
        assert_eq!(decode_hex("0XAB").unwrap(), vec![0xab]);
        assert_eq!(decode_hex("0x").unwrap(), Vec::<u8>::new());
    }
}
