//! Users' own keys for `--dataset file:PATH`: the key set a user wants to benchmark on,
//! read once per process.
//!
//! Formats, told apart by their bytes:
//! - **binary u64** (the learned-index benchmarks' format, SOSD's): a little-endian u64
//!   count, then that many little-endian u64 keys; recognised when the file's length is
//!   exactly 8 + 8 x count;
//! - **text integers**: one key per line, every line a decimal u64 or a `0x` hex u64;
//! - **text bytes**: anything else, one key per line written as the CLI writes keys
//!   (UTF-8 with C-style escapes, `cairn::key_text`), so string keys such as words.
//!
//! Keys are de-duplicated and sorted (integer order or byte order); blank lines are skipped.

use anyhow::{bail, Context, Result};
use std::path::Path;

/// The keys of one file, sorted and unique.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileKeys {
    /// Integer keys (encoded big-endian, so byte order is integer order).
    Ints(Vec<u64>),
    /// Byte-string keys.
    Bytes(Vec<Vec<u8>>),
}

impl FileKeys {
    pub fn len(&self) -> usize {
        match self {
            FileKeys::Ints(v) => v.len(),
            FileKeys::Bytes(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys at `picked` (indices into the sorted keys, in order).
    pub fn keep(self, picked: &[usize]) -> FileKeys {
        match self {
            FileKeys::Ints(v) => FileKeys::Ints(picked.iter().map(|&i| v[i]).collect()),
            FileKeys::Bytes(mut v) => {
                FileKeys::Bytes(picked.iter().map(|&i| std::mem::take(&mut v[i])).collect())
            }
        }
    }
}

/// Reads `path` in whichever of the formats it is.
pub fn load(path: &Path) -> Result<FileKeys> {
    let raw =
        std::fs::read(path).with_context(|| format!("reading key file {}", path.display()))?;
    let keys = match binary_u64(&raw) {
        Some(v) => FileKeys::Ints(v),
        None => {
            let text = std::str::from_utf8(&raw).with_context(|| {
                format!(
                    "{}: neither a binary u64 key file (count, then keys) nor UTF-8 text",
                    path.display()
                )
            })?;
            parse_text(text).with_context(|| format!("key file {}", path.display()))?
        }
    };
    if keys.is_empty() {
        bail!("key file {} holds no keys", path.display());
    }
    Ok(keys)
}

/// The keys of a binary u64 file, or None when `raw` is not one.
fn binary_u64(raw: &[u8]) -> Option<Vec<u64>> {
    let count = u64::from_le_bytes(raw.get(..8)?.try_into().ok()?);
    if count.checked_mul(8)?.checked_add(8)? != raw.len() as u64 {
        return None;
    }
    let mut v: Vec<u64> = raw[8..]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8-byte chunk")))
        .collect();
    v.sort_unstable();
    v.dedup();
    Some(v)
}

fn parse_int(line: &str) -> Option<u64> {
    match line.strip_prefix("0x").or_else(|| line.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None if line.bytes().all(|b| b.is_ascii_digit()) => line.parse().ok(),
        None => None,
    }
}

/// One key per line: integers when every line is one, else escaped bytes.
fn parse_text(text: &str) -> Result<FileKeys> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty())
        .collect();
    if let Some(mut v) = lines
        .iter()
        .map(|l| parse_int(l))
        .collect::<Option<Vec<u64>>>()
    {
        v.sort_unstable();
        v.dedup();
        return Ok(FileKeys::Ints(v));
    }
    let mut v = lines
        .iter()
        .enumerate()
        .map(|(i, l)| cairn::key_text::unescape(l).with_context(|| format!("line {}", i + 1)))
        .collect::<Result<Vec<Vec<u8>>>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(FileKeys::Bytes(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, bytes).unwrap();
        f
    }

    #[test]
    fn decimal_and_hex_lines_are_integers_sorted_and_unique() {
        let f = write(b"30\n0x0a\r\n\n20\n30\n");
        assert_eq!(load(f.path()).unwrap(), FileKeys::Ints(vec![10, 20, 30]));
    }

    #[test]
    fn other_lines_are_escaped_bytes() {
        let f = write("pear\napple\n12\nk\\x00\\xff\nh\u{e9}\napple\n".as_bytes());
        let want: Vec<Vec<u8>> = vec![
            b"12".to_vec(),
            b"apple".to_vec(),
            "h\u{e9}".as_bytes().to_vec(),
            b"k\x00\xff".to_vec(),
            b"pear".to_vec(),
        ];
        assert_eq!(load(f.path()).unwrap(), FileKeys::Bytes(want));
    }

    #[test]
    fn binary_u64_files_are_recognised_by_their_length() {
        let mut raw = 3u64.to_le_bytes().to_vec();
        for k in [9u64, u64::MAX - 1, 7] {
            raw.extend_from_slice(&k.to_le_bytes());
        }
        let f = write(&raw);
        assert_eq!(
            load(f.path()).unwrap(),
            FileKeys::Ints(vec![7, 9, u64::MAX - 1])
        );
        // One byte short: not binary, and not UTF-8 text either.
        let f = write(&raw[..raw.len() - 1]);
        assert!(load(f.path()).is_err());
    }

    #[test]
    fn bad_files_are_errors() {
        assert!(load(write(b"").path()).is_err());
        assert!(load(write(b"\n\n").path()).is_err());
        assert!(load(write(b"ok\nbad\\q\n").path()).is_err());
        assert!(load(Path::new("/nonexistent/cairn-keys")).is_err());
    }
}
