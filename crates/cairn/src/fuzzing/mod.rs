//! Fuzz entry points: one function per decoder of bytes that come from disk, for the
//! cargo-fuzz targets in `fuzz/` and the stable replay test `tests/fuzz_corpus.rs`.
//!
//! Every function takes arbitrary bytes, runs a decoder on them and, when the decoder
//! accepts them, exercises the result (iterates a block, seeks, probes a filter, reads
//! every entry of a table, evaluates a model...). The engine's rule is that bad bytes give
//! a typed error and never a panic, an out-of-memory blowup or an endless loop, so any
//! panic here is a bug. The functions also panic on a broken invariant that the format
//! promises for accepted input:
//!
//! * a decode error is [`Error::Corruption`] or [`Error::UnsupportedVersion`] (an I/O error
//!   is allowed only where a file is read);
//! * formats with one encoding per value re-encode to the bytes they were decoded from
//!   (write batch, value pointer, table properties), or at least to an equal value
//!   (version edit, access trace);
//! * a learned index, however wrong its model, answers like the fence pointers.
//!
//! Checksums would stop a fuzzer at the first check, so the targets of checksummed
//! formats (table, log, value-log record, model files, trace) also run on a *resealed*
//! copy of the input: the same bytes with every checksum recomputed, which reaches the
//! structure behind the checksum.
//!
//! Not part of the API: it may change with the formats.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};

use crate::batch::WriteBatch;
use crate::cache::{BlockCache, LruBlockCache};
use crate::coding::{get_varint, put_varint};
use crate::compression::{compress, decompress, Compression};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::learned::gbdt::GbdtModel;
use crate::learned::leaper_model::{LeaperMeta, LeaperModel, FEATURE_NAMES, NUM_FEATURES};
use crate::log::{LogReader, LogWriter, BLOCK_SIZE, HEADER_LEN};
use crate::options::IndexPolicy;
use crate::storage::{FileKind, RandomAccessFile, StorageEnv};
use crate::table::block::{Block, BlockBuilder};
use crate::table::bloom::{BloomBuilder, BloomFilter};
use crate::table::index::{FenceIndex, IndexEntry};
use crate::table::properties::TableProperties;
use crate::table::{
    model_file, LearnedIndex, LearnedLookup, ReadTrace, Table, TableBuildOptions, TableBuilder,
    FOOTER_LEN,
};
use crate::types::{
    cmp_internal, make_internal_key, make_lookup_key, ValueKind, MAX_SEQ, TRAILER_LEN,
};
use crate::version::{FileDesc, PolicyState, VersionEdit};
use crate::vlog::format as vlog_format;
use crate::vlog::ValuePointer;

/// The file name decoders put in their errors.
const NAME: &str = "fuzz input";

/// A fuzz target: decodes and exercises one input.
pub type Target = fn(&[u8]);

/// Every target, by name (the name of its `fuzz/fuzz_targets/<name>.rs` and of its corpus
/// directory).
pub const TARGETS: &[(&str, Target)] = &[
    ("block", block),
    ("compressed_block", compressed_block),
    ("index_block", index_block),
    ("bloom", bloom),
    ("table", table),
    ("log_reader", log_reader),
    ("write_batch", write_batch),
    ("version_edit", version_edit),
    ("vlog_record", vlog_record),
    ("value_pointer", value_pointer),
    ("table_properties", table_properties),
    ("range_del_block", range_del_block),
    ("plr_model", plr_model),
    ("leaper_bundle", leaper_bundle),
    ("gbdt_text", gbdt_text),
    ("access_trace", access_trace),
    ("record_trace", record_trace),
    ("cold_set", cold_set),
];

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// The decoded value, `None` for a corruption error; any other error is a bug (corrupt
/// bytes must be reported as corruption).
fn typed<T>(what: &str, r: Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) if e.is_corruption() => None,
        Err(e) => panic!("{what}: corrupt input gave a non-corruption error: {e}"),
    }
}

/// As [`typed`], also accepting I/O errors (targets that read files).
fn typed_io<T>(what: &str, r: Result<T>) -> Option<T> {
    match r {
        Err(Error::Io { .. }) => None,
        r => typed(what, r),
    }
}

fn u64_le(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// A few user keys taken from the input, to probe decoded structures with.
fn keys_from(data: &[u8]) -> Vec<Vec<u8>> {
    let mut keys = vec![Vec::new(), b"k".to_vec(), vec![0xff; 9]];
    keys.extend(data.chunks(9).take(4).map(<[u8]>::to_vec));
    keys
}

mod logs;
mod models;
mod parts;
mod seeds;
mod tables;
mod traces;
mod vlog;

pub use logs::*;
pub use models::*;
pub use parts::*;
pub use seeds::*;
pub use tables::*;
pub use traces::*;
pub use vlog::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_pass_their_targets() {
        for (name, f) in TARGETS {
            let seeds = seeds(name);
            assert!(!seeds.is_empty(), "{name} has no seeds");
            for s in &seeds {
                f(s);
            }
        }
    }

    #[test]
    fn reseal_makes_checksums_match() {
        for s in seeds("table") {
            let mut bad = s.clone();
            let n = bad.len();
            bad[n - 20] ^= 1; // a footer handle byte, then its checksum is stale
            assert_eq!(reseal_table(&s), s);
            assert_ne!(reseal_table(&bad), bad);
        }
        for s in seeds("log_reader") {
            assert_eq!(reseal_log(&s), s);
        }
        for s in seeds("leaper_bundle") {
            assert_eq!(reseal_bundle(&s), s);
        }
        for s in seeds("plr_model") {
            let fx = plr_fixture();
            assert_eq!(pin_model(&s, fx.entries.len() as u64, fx.file_size), s);
        }
    }
}
