//! The options file (RocksDB's `OPTIONS-NNNNNN`): every open that may write saves the
//! options it runs with in the database directory, so that tools and later sessions can
//! open the database without being told them ([`Options::load_latest`]).
//!
//! Format: the options as JSON (their field names, the format version on top), then a
//! last line `crc32c 0x........` over every byte before it, so that a damaged file is a
//! corruption error, never options that silently differ. Runtime-only parts are not kept:
//! listeners, a shared block cache, fault injection, a bench's oracle prefetch source,
//! `create_if_missing` and `error_if_exists`. The two newest files are kept.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::options::Options;
use crate::storage::{FileKind, StorageEnv};
use crate::{Error, Result};

/// The format this build writes and reads.
pub const OPTIONS_FORMAT_VERSION: u32 = 1;

/// Files kept: the newest and the one before it.
const KEPT: usize = 2;

#[derive(Serialize, Deserialize)]
struct OptionsFile {
    format_version: u32,
    options: Options,
}

use crate::filenames::{options as file_name, options_no};

/// Whether the database at `dir` has an options file.
pub fn has_options_file(dir: &Path) -> bool {
    files(dir).is_ok_and(|f| !f.is_empty())
}

/// The options files in `dir`, oldest first.
fn files(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::NotFound(dir.to_path_buf()))
        }
        Err(e) => return Err(Error::io(dir.display().to_string(), e)),
    };
    let mut v: Vec<(u64, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let no = options_no(name.to_str()?)?;
            Some((no, e.path()))
        })
        .collect();
    v.sort();
    Ok(v)
}

/// The bytes of an options file holding `opts`.
fn encode(opts: &Options) -> Result<Vec<u8>> {
    let file = OptionsFile {
        format_version: OPTIONS_FORMAT_VERSION,
        options: opts.clone(),
    };
    let mut out = serde_json::to_vec_pretty(&file)
        .map_err(|e| Error::InvalidArgument(format!("options cannot be saved: {e}")))?;
    out.push(b'\n');
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(format!("crc32c {crc:#010x}\n").as_bytes());
    Ok(out)
}

/// The options in the bytes of file `name`.
fn decode(data: &[u8], name: &str) -> Result<Options> {
    let corrupt = |d: String| Error::corruption(name, d);
    let body_end = data
        .strip_suffix(b"\n")
        .and_then(|d| d.iter().rposition(|&b| b == b'\n'))
        .map(|i| i + 1)
        .ok_or_else(|| corrupt("no checksum line".into()))?;
    let (body, trailer) = data.split_at(body_end);
    let want = std::str::from_utf8(trailer)
        .ok()
        .and_then(|t| t.trim_end().strip_prefix("crc32c 0x"))
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(|| corrupt("bad checksum line".into()))?;
    if crc32c::crc32c(body) != want {
        return Err(corrupt("checksum mismatch".into()));
    }
    #[derive(Deserialize)]
    struct Version {
        format_version: u32,
    }
    let v: Version =
        serde_json::from_slice(body).map_err(|e| corrupt(format!("not an options file: {e}")))?;
    if v.format_version != OPTIONS_FORMAT_VERSION {
        return Err(Error::UnsupportedVersion {
            file: name.to_string(),
            found: v.format_version,
            supported: OPTIONS_FORMAT_VERSION,
        });
    }
    let f: OptionsFile = serde_json::from_slice(body).map_err(|e| {
        Error::InvalidArgument(format!("{name}: options this build does not know: {e}"))
    })?;
    Ok(f.options)
}

/// The options saved in the newest options file of the database at `dir`, if it has one.
pub(crate) fn latest(dir: &Path) -> Result<Option<Options>> {
    let Some((no, path)) = files(dir)?.pop() else {
        return Ok(None);
    };
    let data = std::fs::read(&path).map_err(|e| Error::io(path.display().to_string(), e))?;
    decode(&data, &file_name(no)).map(Some)
}

/// Refuses options that do not describe the database the saved ones describe: where its
/// files are (tiers), and fewer levels than it had (more are fine: the tree grows).
pub(crate) fn check_compatible(saved: &Options, opts: &Options) -> Result<()> {
    if opts.num_levels < saved.num_levels {
        return Err(Error::InvalidArgument(format!(
            "the database has {} levels (its options file) but num_levels is {}: levels \
             cannot shrink",
            saved.num_levels, opts.num_levels
        )));
    }
    let tiers = |o: &Options| -> Vec<(PathBuf, usize)> {
        o.tiers
            .iter()
            .map(|t| (t.dir.clone(), t.first_level))
            .collect()
    };
    if tiers(saved) != tiers(opts) {
        return Err(Error::InvalidArgument(format!(
            "the database keeps its levels in tiers {:?} (its options file), not {:?}: \
             open it with the same tiers (Options::load_latest reads them)",
            tiers(saved),
            tiers(opts)
        )));
    }
    Ok(())
}

/// Saves `opts` as the newest options file of the database at `dir` (atomically), and
/// removes all but the newest [`KEPT`].
pub(crate) fn save(env: &StorageEnv, dir: &Path, opts: &Options) -> Result<()> {
    let existing = files(dir)?;
    let no = existing.last().map_or(1, |(n, _)| n + 1);
    env.write_atomic(&dir.join(file_name(no)), FileKind::Other, &encode(opts)?)?;
    let stale = existing.len().saturating_sub(KEPT - 1);
    for (_, path) in existing.iter().take(stale) {
        let _ = env.remove(path);
    }
    Ok(())
}

impl Options {
    /// The options the database at `path` last ran with, from its newest options file
    /// (written by every open that may write; RocksDB's `LoadLatestOptions`). Listeners,
    /// a shared block cache and fault injection are not kept: set them again. A database
    /// without an options file (made before they existed) is an `InvalidArgument` error;
    /// a damaged file a corruption error.
    pub fn load_latest(path: impl AsRef<Path>) -> Result<Options> {
        let path = path.as_ref();
        latest(path)?.ok_or_else(|| {
            Error::InvalidArgument(format!("{} holds no options file", path.display()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_survive_the_file_and_damage_is_corruption() {
        let mut o = crate::presets::by_name("bourbon").expect("preset");
        o.write_buffer_size = 12345;
        let bytes = encode(&o).unwrap();
        let back = decode(&bytes, "OPTIONS-000001").unwrap();
        assert_eq!(encode(&back).unwrap(), bytes, "every kept field comes back");
        assert_eq!(back.write_buffer_size, 12345);
        for at in (0..bytes.len()).step_by(7) {
            let mut d = bytes.clone();
            d[at] ^= 0x04;
            match decode(&d, "OPTIONS-000001") {
                Err(e) if e.is_corruption() => {}
                other => panic!("a flip at {at} gave {:?}", other.map(|_| "options")),
            }
        }
        assert!(decode(b"", "x").is_err_and(|e| e.is_corruption()));
        assert!(
            crate::filenames::is_options_file("OPTIONS-000012")
                && crate::filenames::is_options_file("OPTIONS-000012.tmp")
        );
        assert!(
            !crate::filenames::is_options_file("OPTIONS-")
                && !crate::filenames::is_options_file("OPTIONS-x")
        );
    }
}
