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

// ---------------------------------------------------------------------------------------
// Table parts: data block, index block, bloom filter, properties.

/// A data block's contents (trailer stripped): decode, read every entry, seek.
pub fn block(data: &[u8]) {
    for allow_empty in [false, true] {
        let Some(b) = typed(
            "block",
            Block::decode_with(data.to_vec(), NAME, allow_empty),
        ) else {
            continue;
        };
        let n = b.entry_count();
        assert!(n > 0 || allow_empty, "empty block accepted");
        assert!(2 * n + 4 <= b.size(), "{n} entries in {} bytes", b.size());
        let mut targets = Vec::new();
        for i in 0..n {
            let (k, v) = b.entry(i);
            let (prefix, suffix) = k.parts();
            assert!(prefix.len() + suffix.len() + v.len() <= b.size());
            assert!(suffix.len() >= TRAILER_LEN, "suffix shorter than a trailer");
            if i < 16 || i + 1 == n {
                let key = k.to_vec();
                // The prefix-split comparison agrees with the whole key's.
                assert_eq!(k.cmp_internal(&key), Ordering::Equal);
                targets.push(key);
            }
        }
        for k in keys_from(data) {
            targets.push(make_lookup_key(&k, MAX_SEQ));
            // Lookup keys shorter than the prefix, and ones sharing part of it.
            let p = b.prefix();
            targets.push(make_lookup_key(&p[..p.len().min(k.len())], MAX_SEQ));
            targets.push([p, &k].concat());
        }
        // In a sorted block, seek (prefix compared once, then suffixes) agrees with a scan
        // of whole keys.
        let keys: Vec<Vec<u8>> = (0..n).map(|i| b.key(i).to_vec()).collect();
        let sorted = keys
            .windows(2)
            .all(|w| cmp_internal(&w[0], &w[1]) == Ordering::Less);
        for t in &targets {
            let pos = b.seek(t);
            assert!(pos <= n);
            if sorted {
                let want = keys.partition_point(|k| cmp_internal(k, t) == Ordering::Less);
                assert_eq!(pos, want, "seek disagrees with a scan");
            }
        }
        let _ = (b.charge(), b.take_warmed());
        b.mark_warmed();
        assert!(b.take_warmed());
    }
}

/// `[codec][payload]`: a compressed block's stored bytes (the codec as a trailer's high
/// half names it). Whatever decodes is read as a data block; and the input's own bytes
/// compressed by each codec must decode back to themselves.
pub fn compressed_block(data: &[u8]) {
    let Some((&codec, payload)) = data.split_first() else {
        return;
    };
    if let Some(contents) = typed("decompress", decompress(codec & 0x0f, payload, NAME, 0)) {
        block(&contents);
    }
    for c in [Compression::Lz4, Compression::ZSTD] {
        if let Some(packed) = compress(c, payload) {
            let back = decompress(c.code(), &packed, NAME, 0).expect("own output decodes");
            assert_eq!(back, payload, "{c:?} round trip");
        }
    }
}

/// `[varint data_end][varint num_entries][index block contents]`: decode the index of a
/// table whose data blocks end at `data_end`, then locate keys and ordinals in it.
pub fn index_block(data: &[u8]) {
    let mut pos = 0;
    let (Some(data_end), Some(num_entries)) =
        (get_varint(data, &mut pos), get_varint(data, &mut pos))
    else {
        return;
    };
    let contents = data[pos..].to_vec();
    let Some(idx) = typed(
        "index block",
        FenceIndex::decode(contents, NAME, data_end, num_entries),
    ) else {
        return;
    };
    let n = idx.num_blocks();
    let mut total = 0u64;
    let mut probes = Vec::new();
    for i in 0..n {
        let e = idx.block(i);
        assert!(e
            .handle
            .end_with_trailer()
            .is_some_and(|end| end <= data_end));
        total += idx.block_entries(i);
        assert_eq!(idx.block_for_ordinal(e.first_ordinal), Some(i));
        if i < 16 || i + 1 == n {
            probes.push(e.last_key.clone());
        }
    }
    assert_eq!(total, num_entries);
    for k in keys_from(data) {
        probes.push(make_lookup_key(&k, MAX_SEQ));
    }
    for p in &probes {
        if let Some(i) = idx.locate(p) {
            assert!(i < n);
        }
    }
    for o in [
        0,
        num_entries / 2,
        num_entries.saturating_sub(1),
        num_entries,
    ] {
        if let Some(i) = idx.block_for_ordinal(o) {
            assert!(i < n);
        }
    }
    let _ = idx.memory();
}

/// A filter block: decode, probe with a few keys and hashes.
pub fn bloom(data: &[u8]) {
    let Some(f) = typed("bloom filter", BloomFilter::decode(data.to_vec(), NAME)) else {
        return;
    };
    assert!((1..=30).contains(&f.num_probes()));
    // The trailer: k, and the cache-local layout's marker.
    let trailer = if f.is_cache_local() { 2 } else { 1 };
    assert_eq!(f.size() + trailer, data.len());
    for k in keys_from(data) {
        let _ = f.may_contain(&k);
    }
    for h in data.chunks_exact(8).take(8) {
        let _ = f.may_contain_hash(u64::from_le_bytes(h.try_into().expect("8 bytes")));
    }
    let _ = f.may_contain_hash(u64::MAX);
}

/// A properties block: decode; an accepted block re-encodes to the same bytes.
pub fn table_properties(data: &[u8]) {
    let Some(p) = typed("properties", TableProperties::decode(data, NAME)) else {
        return;
    };
    assert!(p.num_deletions <= p.num_entries && p.min_seq <= p.max_seq);
    assert_eq!(
        p.encode(),
        data,
        "properties do not re-encode to their bytes"
    );
}

/// A range-deletion block: decode; an accepted block is fragmented (sorted, disjoint,
/// sequence numbers descending), re-encodes to its bytes, and answers lookups as its
/// fragments say.
pub fn range_del_block(data: &[u8]) {
    let Some(d) = crate::range_del::RangeDels::decode(data) else {
        return;
    };
    assert_eq!(
        d.encode(),
        data,
        "range deletions do not re-encode to their bytes"
    );
    let frags = d.fragments();
    for w in frags.windows(2) {
        assert!(w[0].end <= w[1].start, "fragments overlap");
    }
    for f in frags {
        assert!(f.start < f.end && !f.seqs.is_empty());
        assert!(
            f.seqs.windows(2).all(|w| w[0] > w[1]),
            "sequence numbers not descending"
        );
        assert_eq!(d.max_cover(&f.start, MAX_SEQ), f.seqs[0]);
    }
    for k in keys_from(data) {
        let want = frags
            .iter()
            .find(|f| f.start <= k && k < f.end)
            .map_or(0, |f| f.seqs[0]);
        assert_eq!(d.max_cover(&k, MAX_SEQ), want);
    }
    assert_eq!(crate::range_del::RangeDels::new(d.tombstones()), d);
}

// ---------------------------------------------------------------------------------------
// Whole tables, opened from a scratch file.

/// A per-thread scratch directory for the targets that need files; removed with the
/// thread.
struct Scratch {
    dir: PathBuf,
    env: StorageEnv,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static SCRATCH_NO: AtomicU64 = AtomicU64::new(0);

fn new_scratch() -> Scratch {
    let dir = std::env::temp_dir().join(format!(
        "cairn-fuzz-{}-{}",
        std::process::id(),
        SCRATCH_NO.fetch_add(1, AtomicOrdering::Relaxed)
    ));
    let env = StorageEnv::new(&dir, &[], 0.0).expect("scratch directory for fuzzing");
    Scratch { dir, env }
}

thread_local! {
    static SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

/// Writes `data` to a scratch file and opens it for reads `n` times; the file is unlinked
/// before this returns (the open descriptors keep its contents).
fn scratch_files(data: &[u8], n: usize) -> Vec<RandomAccessFile> {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        let s = s.get_or_insert_with(new_scratch);
        let path = s.dir.join("000001.sst");
        std::fs::write(&path, data).expect("write scratch table");
        let files = (0..n)
            .map(|_| {
                s.env
                    .open_read(&path, FileKind::Table, 0, Some(0), false)
                    .expect("open scratch table")
            })
            .collect();
        let _ = std::fs::remove_file(&path);
        files
    })
}

/// A table file: open it (fence pointers with a block cache, and a learned index trained
/// at open), read every entry forwards and a few backwards, seek and get keys. When its
/// keys are in order, the learned index must answer like the fence pointers.
pub fn table(data: &[u8]) {
    table_once(data);
    let sealed = reseal_table(data);
    if sealed != data {
        table_once(&sealed);
    }
}

fn table_once(data: &[u8]) {
    let mut files = scratch_files(data, 2);
    let learned_file = files.pop().expect("two files");
    let fence_file = files.pop().expect("two files");
    let cache: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(1 << 20, 1));
    let Some(t) = typed_io("table open", Table::open(fence_file, 1, Some(cache))) else {
        return;
    };
    let t = Arc::new(t);
    let props = t.properties().clone();
    let _ = (
        t.pinned_memory(),
        t.file_size(),
        t.name(),
        t.usage().snapshot(),
    );

    // Every entry, in order. A table cannot hold more entries than 10-byte slices.
    let mut it = t.iter();
    it.seek_to_first();
    let (mut n, mut sorted) = (0u64, true);
    let mut sample: Vec<Vec<u8>> = Vec::new();
    let mut prev: Option<Vec<u8>> = None;
    while it.valid() {
        n += 1;
        assert!(n <= data.len() as u64 / 10 + 1, "iterator does not end");
        let k = it.key().to_vec();
        let _ = it.value();
        if let Some(p) = &prev {
            sorted &= cmp_internal(p, &k) == std::cmp::Ordering::Less;
        }
        if sample.len() < 24 || n % 17 == 0 {
            sample.push(k.clone());
        }
        prev = Some(k);
        it.next();
    }
    let complete = typed_io("table iterator", it.status()).is_some();
    assert!(
        !complete || n == props.num_entries,
        "{n} entries read, {props:?}"
    );
    it.seek_to_last();
    for _ in 0..8 {
        if !it.valid() {
            break;
        }
        it.prev();
    }
    let _ = (it.status(), it.trace().data_misses);
    for k in keys_from(data) {
        sample.push(make_lookup_key(&k, MAX_SEQ));
    }
    // Whether each block ends with the key the index says (a forged table may differ;
    // then the two index paths may differ too).
    let mut trace = ReadTrace::default();
    let mut consistent = true;
    let index = t.index().expect("opened tables keep their index");
    for i in 0..index.num_blocks() {
        match typed_io("table block", t.read_block(i, &mut trace)) {
            Some(b) => consistent &= b.key(b.entry_count() - 1) == index.block(i).last_key[..],
            None => consistent = false,
        }
    }
    let mut fence_answers = Vec::new();
    for k in &sample {
        let mut it = t.iter();
        it.seek(k);
        it.seek_for_prev(k);
        let _ = it.status();
        let _ = typed_io("filter", t.may_contain(crate::types::user_key(k)));
        fence_answers.push(typed_io("table get", t.get(k, &mut trace)));
    }

    // Learned index trained at open (reads and checks every block again).
    let Some(l) = typed_io(
        "learned table open",
        Table::open_with(learned_file, 2, None, IndexPolicy::learn_all(2)),
    ) else {
        return;
    };
    assert!(l.is_learned());
    for (k, fence) in sample.iter().zip(&fence_answers) {
        let learned = typed_io("learned get", l.get(k, &mut trace));
        if let (true, Some(a), Some(b)) = (complete && sorted && consistent, fence, &learned) {
            assert_eq!(a, b, "learned index answers differently for key {k:?}");
        }
    }
}

/// Block checksum as the trailer stores it: CRC32C of contents then the type byte.
fn block_crc(contents: &[u8], ty: u8) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(contents), &[ty])
}

/// Rewrites the trailer checksum of the block `[off, off + size)` (type byte kept).
fn reseal_block(b: &mut [u8], off: u64, size: u64, limit: usize) -> Option<Vec<u8>> {
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    // A size of 0 is the handle of an absent filter.
    if size == 0 || end.checked_add(5)? > limit {
        return None;
    }
    let crc = block_crc(&b[start..end], b[end]);
    b[end + 1..end + 5].copy_from_slice(&crc.to_le_bytes());
    Some(b[start..end].to_vec())
}

/// The table with its footer, meta-block and data-block checksums recomputed.
fn reseal_table(data: &[u8]) -> Vec<u8> {
    let mut b = data.to_vec();
    let Some(footer_at) = b.len().checked_sub(FOOTER_LEN) else {
        return b;
    };
    let f = &b[footer_at..];
    let crc = crc32c::crc32c_append(crc32c::crc32c(&f[..48]), &f[52..]);
    // Handles: index, filter, properties (offset and size each).
    let h: Vec<u64> = (0..6).map(|i| u64_le(f, 8 * i).unwrap_or(0)).collect();
    b[footer_at + 48..footer_at + 52].copy_from_slice(&crc.to_le_bytes());
    for i in [1, 2] {
        reseal_block(&mut b, h[2 * i], h[2 * i + 1], footer_at);
    }
    let Some(index) = reseal_block(&mut b, h[0], h[1], footer_at) else {
        return b;
    };
    if let Ok(ib) = Block::decode_with(index, NAME, true) {
        for i in 0..ib.entry_count().min(4096) {
            let mut pos = 0;
            let v = ib.entry(i).1;
            if let (Some(off), Some(size)) = (get_varint(v, &mut pos), get_varint(v, &mut pos)) {
                reseal_block(&mut b, off, size, footer_at);
            }
        }
    }
    b
}

// ---------------------------------------------------------------------------------------
// Logs: WAL and manifest records, write batches, version edits.

/// A log file (WAL or manifest): read every record, strictly and skipping damage, and
/// decode each record as a write batch and as a version edit. Also run on the input with
/// every fragment checksum recomputed.
pub fn log_reader(data: &[u8]) {
    log_once(data);
    let sealed = reseal_log(data);
    if sealed != data {
        log_once(&sealed);
    }
}

fn log_once(data: &[u8]) {
    for skip in [false, true] {
        let mut r = LogReader::new(data.to_vec(), NAME, skip);
        let mut records = 0usize;
        while let Some(rec) = typed("log record", r.next_record()).flatten() {
            records += 1;
            // Every record takes at least a fragment header.
            assert!(
                records * HEADER_LEN <= data.len(),
                "log reader does not end"
            );
            if let Some((seq, b)) = typed("write batch in log", WriteBatch::decode(&rec)) {
                assert_eq!(b.iter().count(), b.len());
                let _ = seq;
            }
            let _ = typed("version edit in log", VersionEdit::decode(&rec));
        }
        assert!(typed("log end", r.next_record()).flatten().is_none());
        let _ = (r.tail(), r.tail_is_torn_write(), r.skipped());
    }
}

/// The log with the checksum of every fragment that parses recomputed.
fn reseal_log(data: &[u8]) -> Vec<u8> {
    let mut b = data.to_vec();
    let mut pos = 0;
    while pos + HEADER_LEN <= b.len() {
        let room = BLOCK_SIZE - pos % BLOCK_SIZE;
        if room < HEADER_LEN {
            pos += room;
            continue;
        }
        let len = u16::from_le_bytes([b[pos + 4], b[pos + 5]]) as usize;
        let end = pos + HEADER_LEN + len;
        let ty = b[pos + 6];
        if !(1..=4).contains(&ty) || len + HEADER_LEN > room || end > b.len() {
            pos += 1;
            continue;
        }
        let crc = crate::log::fragment_crc(ty, &b[pos + HEADER_LEN..end]);
        b[pos..pos + 4].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
    b
}

/// An encoded write batch (a WAL record): decode, walk the operations; an accepted batch
/// re-encodes to the same bytes.
pub fn write_batch(data: &[u8]) {
    let Some((seq, b)) = typed("write batch", WriteBatch::decode(data)) else {
        return;
    };
    let mut n = 0;
    for op in &b {
        assert!(op.kind != crate::batch::BatchOpKind::DeleteRange || op.key <= op.value);
        n += 1;
    }
    assert_eq!(n, b.len());
    assert_eq!(
        b.encode(seq),
        data,
        "write batch does not re-encode to its bytes"
    );
    let mut twice = b.clone();
    twice.append(&b);
    assert_eq!(twice.len(), 2 * b.len());
}

/// A manifest record: decode; an accepted edit re-encodes to an edit that decodes equal.
pub fn version_edit(data: &[u8]) {
    let Some(e) = typed("version edit", VersionEdit::decode(data)) else {
        return;
    };
    let _ = e.is_empty();
    match VersionEdit::decode(&e.encode()) {
        Ok(again) => assert_eq!(again, e, "version edit changes through a re-encode"),
        // A format-version tag is checked only where it comes first; encode() puts it
        // first, so a too-new version accepted in another position is refused here.
        Err(Error::UnsupportedVersion { .. }) => {}
        Err(err) => panic!("re-encoded version edit does not decode: {err}"),
    }
}

// ---------------------------------------------------------------------------------------
// Value log.

/// Length of the record starting at `rec[0]` if its header parses: checksum (4), key and
/// value lengths, key, value; and its key.
fn vlog_record_span(rec: &[u8]) -> Option<(usize, &[u8])> {
    let mut pos = 4;
    let klen = usize::try_from(get_varint(rec, &mut pos)?).ok()?;
    let vlen = usize::try_from(get_varint(rec, &mut pos)?).ok()?;
    let kend = pos.checked_add(klen)?;
    let key = rec.get(pos..kend)?;
    let end = kend.checked_add(vlen)?;
    (end <= rec.len()).then_some((end, key))
}

/// A value-log record as read through a pointer (also with its checksum recomputed), or a
/// whole value-log file (header, then records read one after the other).
pub fn vlog_record(data: &[u8]) {
    let _ = typed(
        "value-log header",
        vlog_format::check_header(NAME, &data[..data.len().min(12)]),
    );
    let mut sealed = data.to_vec();
    if sealed.len() >= 4 {
        let crc = crc32c::crc32c(&sealed[4..]);
        sealed[..4].copy_from_slice(&crc.to_le_bytes());
    }
    for rec in [data, &sealed[..]] {
        let key = vlog_record_span(rec).map_or(&b""[..], |(_, k)| k);
        for k in [key, b"", b"other key"] {
            if let Some(v) = typed("value-log record", vlog_format::decode_record(NAME, rec, k)) {
                assert!(v.len() < rec.len());
            }
        }
    }
    // A file: records back to back after the header.
    if data.starts_with(vlog_format::MAGIC) {
        let mut pos = vlog_format::HEADER_LEN as usize;
        while let Some((len, key)) = data.get(pos..).and_then(vlog_record_span) {
            let _ = typed(
                "value-log record",
                vlog_format::decode_record(NAME, &data[pos..pos + len], key),
            );
            pos += len.max(1);
        }
    }
}

/// A value pointer (the value of a separated entry); an accepted pointer re-encodes to the
/// same bytes.
pub fn value_pointer(data: &[u8]) {
    if let Some(p) = typed("value pointer", ValuePointer::decode(data)) {
        assert_eq!(
            p.encode(),
            data,
            "value pointer does not re-encode to its bytes"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Model files: Bourbon's `.plr`, Leaper's bundle and its LightGBM text models.

/// An entry: internal key and value.
type Entry = (Vec<u8>, Vec<u8>);

/// A table built once per process, with a cache, for the learned-index targets.
struct PlrFixture {
    table: Arc<Table>,
    entries: Vec<Entry>,
    file_size: u64,
    /// Lookup keys and the fence pointers' answer (first entry >= the key).
    lookups: Vec<(Vec<u8>, Option<Entry>)>,
}

/// Entries of the fixture table, in internal order: 8-byte big-endian numbers with
/// growing gaps, short keys, a run of keys sharing their first 8 bytes (they collide in
/// the model), versions and tombstones.
fn fixture_entries() -> Vec<Entry> {
    let mut users: Vec<Vec<u8>> = (0..400u64)
        .map(|i| (i * i * 13 + i).to_be_bytes().to_vec())
        .collect();
    users.extend((0..40u32).map(|i| [&b"collide!"[..], &i.to_be_bytes()].concat()));
    users.extend((1..20u8).map(|i| vec![i]));
    users.push(b"\xff\xff\xff\xff\xff\xff\xff\xffz".to_vec());
    users.sort();
    users.dedup();
    let mut out = Vec::new();
    for (i, u) in users.iter().enumerate() {
        let versions = if i % 7 == 0 { 3 } else { 1 };
        for v in (0..versions).rev() {
            let seq = (i * 3 + v + 1) as u64;
            let kind = if i % 11 == 5 && v == 0 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let value = match kind {
                ValueKind::Deletion => Vec::new(),
                _ => format!("value-{i}-{v}").into_bytes(),
            };
            out.push((make_internal_key(u, seq, kind), value));
        }
    }
    out
}

/// Builds a table of `entries` in a fresh scratch directory and returns its bytes.
fn build_table(entries: &[Entry], opts: TableBuildOptions) -> Vec<u8> {
    build_table_with(entries, opts, None)
}

/// A table of `entries`, holding the range deletions `dels` too when given.
fn build_table_with(
    entries: &[Entry],
    opts: TableBuildOptions,
    dels: Option<&crate::range_del::RangeDels>,
) -> Vec<u8> {
    let s = new_scratch();
    let path = s.dir.join("000001.sst");
    let f = s
        .env
        .create(&path, FileKind::Table, 0, Some(0))
        .expect("create fixture table");
    let mut b = TableBuilder::new(f, opts);
    for (k, v) in entries {
        b.add(k, v).expect("fixture entries are in order");
    }
    if let Some(d) = dels {
        b.set_column_family(0, "default");
        b.add_range_dels(d);
    }
    b.finish().expect("finish fixture table");
    std::fs::read(&path).expect("read fixture table")
}

/// Range deletions over the fixture's keys, overlapping one another.
fn sample_range_dels(small: &[Entry]) -> crate::range_del::RangeDels {
    let k = |i: usize| crate::types::user_key(&small[i % small.len()].0).to_vec();
    crate::range_del::RangeDels::new([
        crate::range_del::RangeTombstone {
            start: k(2),
            end: k(9),
            seq: 70,
        },
        crate::range_del::RangeTombstone {
            start: k(5),
            end: k(20),
            seq: 30,
        },
        crate::range_del::RangeTombstone {
            start: k(30),
            end: vec![0xff; 3],
            seq: 90,
        },
    ])
}

fn plr_fixture() -> &'static PlrFixture {
    static FIXTURE: OnceLock<PlrFixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let entries = fixture_entries();
        let bytes = build_table(
            &entries,
            TableBuildOptions {
                block_size: 256,
                bloom_bits_per_key: 10.0,
                fixed_width_entries: false,
                cache_local_filter: true,
                compression: Compression::None,
            },
        );
        let file = scratch_files(&bytes, 1).pop().expect("one file");
        let cache: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(4 << 20, 1));
        let table = Arc::new(Table::open(file, 1, Some(cache)).expect("open fixture table"));
        let answer = |k: &[u8]| {
            let i = entries.partition_point(|(e, _)| cmp_internal(e, k).is_lt());
            entries.get(i).cloned()
        };
        let mut lookups = Vec::new();
        for (i, (k, _)) in entries.iter().enumerate().step_by(9) {
            let u = crate::types::user_key(k);
            let seq = match i % 3 {
                0 => MAX_SEQ,
                1 => (i * 3) as u64,
                _ => 0,
            };
            for l in [
                make_lookup_key(u, seq),
                make_lookup_key(&[u, &[0]].concat(), MAX_SEQ),
            ] {
                lookups.push((l.clone(), answer(&l)));
            }
        }
        for u in [
            &b""[..],
            &[0xff; 12][..],
            b"collide!",
            b"collide!\0\0\0\x07\0",
        ] {
            let l = make_lookup_key(u, MAX_SEQ);
            lookups.push((l.clone(), answer(&l)));
        }
        PlrFixture {
            file_size: bytes.len() as u64,
            table,
            entries,
            lookups,
        }
    })
}

/// The model file with its table-identity fields set to the fixture's and its checksum
/// recomputed.
fn pin_model(data: &[u8], num_entries: u64, file_size: u64) -> Vec<u8> {
    let mut b = data.to_vec();
    if b.len() >= 8 + 4 + 8 + 8 + 4 {
        b[12..20].copy_from_slice(&num_entries.to_le_bytes());
        b[20..28].copy_from_slice(&file_size.to_le_bytes());
        let n = b.len() - 4;
        let crc = crc32c::crc32c(&b[..n]);
        b[n..].copy_from_slice(&crc.to_le_bytes());
    }
    b
}

/// A Bourbon model file (`NNNNNN.plr`) for a fixed table: decode it (as is, and with its
/// table fields and checksum fixed up) and look keys up through it; whatever the model
/// says, every answer must be the fence pointers' one.
pub fn plr_model(data: &[u8]) {
    // As a model of whatever table it names (no lookups).
    if let (Some(n), Some(size)) = (u64_le(data, 12), u64_le(data, 20)) {
        if let Some(m) = typed("model file", model_file::decode(data, n, size, NAME)) {
            for k in keys_from(data) {
                let _ = m.window(&make_lookup_key(&k, MAX_SEQ));
            }
        }
    }
    let fx = plr_fixture();
    let n = fx.entries.len() as u64;
    for bytes in [data.to_vec(), pin_model(data, n, fx.file_size)] {
        let Some(m) = typed(
            "model file",
            model_file::decode(&bytes, n, fx.file_size, NAME),
        ) else {
            continue;
        };
        check_learned(fx, &m, data);
    }
}

fn check_learned(fx: &PlrFixture, m: &LearnedIndex, data: &[u8]) {
    let mut trace = ReadTrace::default();
    let fence = fx.table.index().expect("opened tables keep their index");
    let mut read = |b, _| fx.table.read_block(b, &mut trace);
    for (k, want) in &fx.lookups {
        match m.lookup(&fence, k, &mut read) {
            Ok(LearnedLookup::Found(got)) => {
                assert_eq!(
                    &got.map(|p| p.to_entry()),
                    want,
                    "learned lookup of {k:?} differs from the fence's"
                );
            }
            Ok(LearnedLookup::Fallback) => {}
            Err(e) => panic!("learned lookup failed on a sound table: {e}"),
        }
    }
    for k in keys_from(data) {
        let l = make_lookup_key(&k, MAX_SEQ);
        let i = fx
            .entries
            .partition_point(|(e, _)| cmp_internal(e, &l).is_lt());
        let want = fx.entries.get(i).cloned();
        if let Ok(LearnedLookup::Found(got)) = m.lookup(&fence, &l, &mut read) {
            assert_eq!(
                got.map(|p| p.to_entry()),
                want,
                "learned lookup of {l:?} differs from the fence's"
            );
        }
        if let Some((lo, hi)) = m.window(&l) {
            assert!(lo <= hi && hi < m.num_entries().max(1));
        }
    }
    let _ = (m.num_segments(), m.memory(), m.lookups(), m.fallbacks());
}

/// The bundle with its CRC32C line replaced (or added).
fn reseal_bundle(data: &[u8]) -> Vec<u8> {
    const CRC_LINE: usize = "CRC32C ".len() + 8 + 1;
    let body = match data.len().checked_sub(CRC_LINE) {
        Some(n) if data[n..].starts_with(b"CRC32C ") => &data[..n],
        _ => data,
    };
    let mut b = body.to_vec();
    let crc = crc32c::crc32c(&b);
    b.extend_from_slice(format!("CRC32C {crc:08x}\n").as_bytes());
    b
}

/// Feature rows to evaluate a model on: zeros, NaN, infinities, values near LightGBM's
/// zero threshold, negative and category-like values, and values taken from the input.
fn rows(n: usize, data: &[u8]) -> Vec<Vec<f64>> {
    let mut rows: Vec<Vec<f64>> = [0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-36, -3.5]
        .iter()
        .map(|&v| vec![v; n])
        .collect();
    rows.push((0..n).map(|i| (i % 40) as f64).collect());
    rows.push(
        (0..n)
            .map(|i| {
                let b = data.get(i % data.len().max(1)).copied().unwrap_or(0);
                f64::from(b) - 64.0
            })
            .collect(),
    );
    rows
}

/// A Leaper model bundle (as is and resealed): parse, read the metadata, evaluate every
/// model on a few rows.
pub fn leaper_bundle(data: &[u8]) {
    for bytes in [data.to_vec(), reseal_bundle(data)] {
        let Some(m) = typed("leaper bundle", LeaperModel::parse(&bytes, NAME)) else {
            continue;
        };
        assert_eq!(m.models().len(), m.meta().k as usize);
        for model in m.models() {
            assert_eq!(model.num_features(), NUM_FEATURES);
            for row in rows(NUM_FEATURES, data) {
                let _ = model.predict(&row);
            }
        }
        let ranges: Vec<u64> = m.meta().precursors.keys().take(8).copied().collect();
        for r in ranges.into_iter().chain([0, u64::MAX]) {
            assert!(m.precursors(r).len() <= m.meta().gamma as usize);
        }
    }
}

/// A LightGBM text model: parse (bytes that are not UTF-8 are read lossily), evaluate on
/// a few rows.
pub fn gbdt_text(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Some(m) = typed("gbdt model", GbdtModel::parse(&text)) else {
        return;
    };
    assert_eq!(m.feature_names().len(), m.num_features());
    let _ = (m.num_trees(), m.objective());
    for row in rows(m.num_features(), data) {
        let _ = m.predict_raw(&row);
        let _ = m.predict(&row);
    }
}

/// An access trace (as is and with its checksum recomputed): decode; an accepted trace
/// re-encodes to a trace that decodes equal.
pub fn access_trace(data: &[u8]) {
    let mut sealed = data.to_vec();
    if let Some(n) = sealed.len().checked_sub(4) {
        let crc = crc32c::crc32c(&sealed[..n]);
        sealed[n..].copy_from_slice(&crc.to_le_bytes());
    }
    for bytes in [data, &sealed[..]] {
        let Some((h, rows, transfers)) =
            typed("access trace", crate::access::trace::decode(bytes, NAME))
        else {
            continue;
        };
        let again = crate::access::trace::encode(&h, &rows, &transfers);
        assert_eq!(again.len(), bytes.len());
        let back = crate::access::trace::decode(&again, NAME).expect("re-encoded trace decodes");
        assert_eq!(
            back,
            (h, rows, transfers),
            "trace changes through a re-encode"
        );
    }
}

/// SA-LSM's record trace (`CAIRNRTR`): decodes, and an accepted trace re-encodes to the
/// same bytes and resumes a query store without panicking.
pub fn record_trace(data: &[u8]) {
    use crate::access::record_trace::{decode, encode, RECORD_TRACE_VERSION};
    let mut sealed = data.to_vec();
    if let Some(n) = sealed.len().checked_sub(4) {
        let crc = crc32c::crc32c(&sealed[..n]);
        sealed[n..].copy_from_slice(&crc.to_le_bytes());
    }
    for bytes in [data, &sealed[..]] {
        let Some((h, records)) = typed("record trace", decode(bytes, NAME)) else {
            continue;
        };
        let again = encode(&h, &records);
        if bytes.get(8..12) == Some(&RECORD_TRACE_VERSION.to_le_bytes()[..]) {
            assert_eq!(again, bytes, "record trace changes through a re-encode");
        } else {
            // An older version is converted on reading and written as the current one.
            let back = decode(&again, NAME).expect("a re-encoded trace reads back");
            assert_eq!(
                back,
                (h.clone(), records.clone()),
                "converted trace changes"
            );
        }
        let store = crate::access::RecordStore::resume(
            h.cf_id,
            crate::access::RecordOptions::default(),
            &h,
            records,
        );
        let _ = store.snapshot();
    }
}

/// SA-LSM's cold-key set (`CAIRNCLD`): decodes, re-encodes to the same bytes, and
/// answers membership for every key it holds.
pub fn cold_set(data: &[u8]) {
    use crate::learned::ColdSet;
    let mut sealed = data.to_vec();
    if let Some(n) = sealed.len().checked_sub(4) {
        let crc = crc32c::crc32c(&sealed[..n]);
        sealed[n..].copy_from_slice(&crc.to_le_bytes());
    }
    for bytes in [data, &sealed[..]] {
        let Some(set) = typed("cold-key set", ColdSet::decode(bytes, NAME)) else {
            continue;
        };
        assert_eq!(
            set.encode(),
            bytes,
            "cold-key set changes through a re-encode"
        );
        assert!(set.keys().iter().all(|k| set.contains(k)));
    }
}

// ---------------------------------------------------------------------------------------
// Seeds: small valid inputs made with the engine's own encoders.

/// A LightGBM text model over Leaper's 18 features: a stump on `r1` (categorical when
/// `categorical`) and a constant tree.
fn stump_text(leaf: f64, categorical: bool) -> String {
    let (num_cat, dt, threshold, cats) = if categorical {
        (1, 1, "0", "cat_boundaries=0 1\ncat_threshold=10\n")
    } else {
        (0, 2, "0.5", "")
    };
    format!(
        "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n\
         max_feature_idx=17\nobjective=binary sigmoid:1\nfeature_names={}\n\
         feature_infos={}\ntree_sizes=1 1\n\n\
         Tree=0\nnum_leaves=2\nnum_cat={num_cat}\nsplit_feature=0\nsplit_gain=1\n\
         threshold={threshold}\ndecision_type={dt}\nleft_child=-1\nright_child=-2\n\
         leaf_value=-2 {leaf}\n{cats}is_linear=0\nshrinkage=1\n\n\
         Tree=1\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nthreshold=\ndecision_type=\n\
         left_child=\nright_child=\nleaf_value=0.5\nis_linear=0\nshrinkage=0.05\n\n\
         end of trees\n\nfeature_importances:\nr1=1\n",
        FEATURE_NAMES.join(" "),
        ["none"; 18].join(" ")
    )
}

fn leaper_meta(k: u32) -> LeaperMeta {
    LeaperMeta {
        version: 1,
        range_width: 40,
        fine_range_width: 10,
        key_offset: 0,
        slot_ms: 1000,
        k,
        threshold: 0.5,
        history_slots: 6,
        gamma: 3,
        features: FEATURE_NAMES.iter().map(|s| s.to_string()).collect(),
        precursors: [(7, vec![3, 9, 1]), (12, vec![7])].into_iter().collect(),
        trained_unix_ms: 1_700_000_000_000,
        trace_rows: 1234,
        report: serde_json::json!({"auc": [0.9, 0.8]}),
    }
}

fn sample_edit() -> VersionEdit {
    VersionEdit {
        format_version: Some(1),
        log_number: Some(7),
        next_file_no: Some(99),
        last_seq: Some(1 << 40),
        next_run_id: Some(3),
        cf_added: vec![(1, "users".into())],
        cf_dropped: vec![4],
        deleted: vec![(0, 1, 12)],
        added: vec![(
            0,
            2,
            5,
            FileDesc {
                file_no: 13,
                tier: 1,
                size: 4096,
                smallest: make_internal_key(b"a", 1, ValueKind::Value),
                largest: make_internal_key(b"z", 9, ValueKind::Value),
                num_entries: 10,
                min_seq: 1,
                max_seq: 9,
                vlog_refs: vec![(3, 1000), (8, 20)],
                range_dels: 3,
            },
        )],
        sealed: vec![(0, 2, 4)],
        policies: vec![(
            0,
            2,
            PolicyState {
                k: 3,
                pending_k: Some(1),
                draining: true,
            },
        )],
        compact_pointers: vec![(0, 1, b"m".to_vec())],
    }
}

fn sample_batch() -> WriteBatch {
    let mut b = WriteBatch::new();
    b.put(b"alpha", b"one").expect("small key");
    b.put_cf(3, b"beta", &[7u8; 40]).expect("small key");
    b.delete(b"gamma").expect("small key");
    b.delete_range(b"d", b"f").expect("ordered range");
    b
}

/// Log bytes holding `records`, written by the engine's log writer.
fn log_bytes(records: &[Vec<u8>]) -> Vec<u8> {
    let s = new_scratch();
    let path = s.dir.join("000001.log");
    let f = s
        .env
        .create(&path, FileKind::Wal, 0, None)
        .expect("create scratch log");
    let mut w = LogWriter::new(f);
    for r in records {
        w.add_record(r).expect("append to scratch log");
    }
    w.flush().expect("flush scratch log");
    std::fs::read(&path).expect("read scratch log")
}

/// Small valid inputs for `target`, made with the engine's encoders (the replay test
/// mutates them, and `fuzz/corpus` starts from them). Empty for an unknown target.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    let entries = fixture_entries();
    let small: Vec<_> = entries.iter().step_by(7).take(60).cloned().collect();
    match target {
        "block" => block_seeds(&small),
        "index_block" => index_block_seeds(&small),
        "bloom" => {
            let mut b = BloomBuilder::new(10.0, false);
            let mut local = BloomBuilder::new(10.0, true);
            for (k, _) in &small {
                b.add(crate::types::user_key(k));
                local.add(crate::types::user_key(k));
            }
            vec![
                b.finish(),
                local.finish(),
                BloomBuilder::new(3.0, false).finish(),
            ]
        }
        "table" => vec![
            build_table(&small, seed_table_opts(128, 10.0)),
            build_table(&small[..5], seed_table_opts(4096, 0.0)),
            build_table(&[], seed_table_opts(4096, 10.0)),
            build_table(
                &small,
                TableBuildOptions {
                    compression: Compression::Lz4,
                    ..seed_table_opts(512, 10.0)
                },
            ),
            build_table(
                &small,
                TableBuildOptions {
                    compression: Compression::ZSTD,
                    ..seed_table_opts(512, 10.0)
                },
            ),
            build_table_with(
                &small,
                seed_table_opts(512, 10.0),
                Some(&sample_range_dels(&small)),
            ),
            build_table_with(
                &[],
                seed_table_opts(512, 10.0),
                Some(&sample_range_dels(&small)),
            ),
        ],
        "compressed_block" => compressed_block_seeds(&small),
        "range_del_block" => vec![
            sample_range_dels(&small).encode(),
            crate::range_del::RangeDels::default().encode(),
        ],
        "log_reader" => {
            let records = vec![
                sample_batch().encode(42),
                sample_edit().encode(),
                Vec::new(),
            ];
            let mut spanning = records.clone();
            spanning.push(vec![0x5a; BLOCK_SIZE + 100]);
            vec![log_bytes(&records), log_bytes(&spanning)]
        }
        "write_batch" => vec![
            sample_batch().encode(42),
            WriteBatch::new().encode(0),
            sample_batch().encode(MAX_SEQ - 3),
        ],
        "version_edit" => vec![
            sample_edit().encode(),
            VersionEdit {
                format_version: Some(1),
                next_file_no: Some(2),
                cf_added: vec![(0, "default".into())],
                ..Default::default()
            }
            .encode(),
        ],
        "vlog_record" => {
            let mut file = vlog_format::header().to_vec();
            for (k, v) in small.iter().take(4) {
                file.extend_from_slice(&vlog_format::encode_record(k, v));
            }
            vec![
                vlog_format::encode_record(b"key", b"some value"),
                vlog_format::encode_record(b"", &[9; 300]),
                file,
            ]
        }
        "value_pointer" => vec![
            ValuePointer {
                file_no: 7,
                offset: 12345,
                len: 300,
            }
            .encode(),
            ValuePointer {
                file_no: u64::MAX,
                offset: 12,
                len: u32::MAX,
            }
            .encode(),
        ],
        "table_properties" => table_properties_seeds(&small),
        "plr_model" => {
            let fx = plr_fixture();
            let users: Vec<&[u8]> = fx
                .entries
                .iter()
                .map(|(k, _)| crate::types::user_key(k))
                .collect();
            [1, 4, 32]
                .into_iter()
                .map(|delta| model_file::encode(&LearnedIndex::train(&users, delta), fx.file_size))
                .collect()
        }
        "leaper_bundle" => vec![
            LeaperModel::encode(&leaper_meta(1), &[stump_text(1.0, false)]),
            LeaperModel::encode(
                &leaper_meta(2),
                &[stump_text(3.0, true), stump_text(-1.0, false)],
            ),
        ],
        "gbdt_text" => vec![stump_text(1.0, false), stump_text(2.0, true)]
            .into_iter()
            .map(String::into_bytes)
            .collect(),
        "access_trace" => access_trace_seeds(),
        "record_trace" => record_trace_seeds(),
        "cold_set" => {
            use crate::learned::ColdSet;
            let keys = (0..6).map(|i| format!("user{i:04}").into_bytes()).collect();
            vec![
                ColdSet::new(0, 5000, 2.5e6, "rsf", keys).encode(),
                ColdSet::new(3, 0, 0.0, "lru", Vec::new()).encode(),
            ]
        }
        _ => Vec::new(),
    }
}

/// The build options of the seed tables.
fn seed_table_opts(block_size: usize, bloom_bits_per_key: f64) -> TableBuildOptions {
    TableBuildOptions {
        block_size,
        bloom_bits_per_key,
        fixed_width_entries: false,
        cache_local_filter: true,
        compression: Compression::None,
    }
}

/// Blocks: the current layout, one entry, and layout 1 (whole keys, u32 offsets).
fn block_seeds(small: &[Entry]) -> Vec<Vec<u8>> {
    let mut b = BlockBuilder::default();
    for (k, v) in small.iter().take(20) {
        b.add(k, v);
    }
    let mut one = BlockBuilder::default();
    one.add(&small[0].0, b"");
    // Layout 1, as tables written before key prefixes hold: entries with whole
    // keys, u32 offsets, a plain count.
    let mut v1 = Vec::new();
    let mut offsets = Vec::new();
    for (k, v) in small.iter().take(8) {
        offsets.extend_from_slice(&(v1.len() as u32).to_le_bytes());
        put_varint(&mut v1, k.len() as u64);
        put_varint(&mut v1, v.len() as u64);
        v1.extend_from_slice(k);
        v1.extend_from_slice(v);
    }
    v1.extend_from_slice(&offsets);
    v1.extend_from_slice(&8u32.to_le_bytes());
    vec![b.finish(), one.finish(), v1]
}

/// The block seeds compressed by each codec, behind their codec byte.
fn compressed_block_seeds(small: &[Entry]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for raw in block_seeds(small) {
        for c in [Compression::Lz4, Compression::ZSTD] {
            if let Some(p) = compress(c, &raw) {
                out.push([&[c.code()][..], &p].concat());
            }
        }
    }
    out
}

/// Index blocks of a small table, with the data end and entry count before them.
fn index_block_seeds(small: &[Entry]) -> Vec<Vec<u8>> {
    let bytes = build_table(small, seed_table_opts(128, 0.0));
    let file = scratch_files(&bytes, 1).pop().expect("one file");
    let t = Table::open(file, 1, None).expect("open seed table");
    let idx = t.index().expect("a pinned index");
    let list: Vec<IndexEntry> = (0..idx.num_blocks())
        .map(|i| idx.block(i).clone())
        .collect();
    let data_end = list
        .last()
        .and_then(|e| e.handle.end_with_trailer())
        .unwrap_or(0);
    let with_prefix = |entries: &[IndexEntry], end: u64, n: u64| {
        let mut out = Vec::new();
        put_varint(&mut out, end);
        put_varint(&mut out, n);
        out.extend_from_slice(&FenceIndex::encode(entries));
        out
    };
    vec![
        with_prefix(&list, data_end, t.properties().num_entries),
        with_prefix(&[], 0, 0),
    ]
}

/// Table properties, without and with a column family.
fn table_properties_seeds(small: &[Entry]) -> Vec<Vec<u8>> {
    let p = TableProperties {
        num_entries: 10,
        num_deletions: 2,
        num_data_blocks: 3,
        raw_key_bytes: 400,
        raw_value_bytes: 1 << 40,
        smallest: small[0].0.clone(),
        largest: small[5].0.clone(),
        min_seq: 4,
        max_seq: 99,
        column_family: None,
        range_dels: None,
    };
    let cf = TableProperties {
        column_family: Some((7, "logs".into())),
        ..p.clone()
    };
    let dels = TableProperties {
        range_dels: Some((2, crate::table::BlockHandle::new(300, 40))),
        ..cf.clone()
    };
    vec![p.encode(), cf.encode(), dels.encode()]
}

/// An access trace with rows and transfers, and an empty one.
fn access_trace_seeds() -> Vec<Vec<u8>> {
    use crate::access::{TraceHeader, TraceRow, TransferRow};
    let h = TraceHeader {
        cf_id: 3,
        key_offset: 2,
        range_width: 10,
        slot_ms: 1000,
        sample_p: 0.25,
        start_unix_ms: 1_700_000_000_000,
    };
    let rows: Vec<TraceRow> = (0..6)
        .map(|i| TraceRow {
            range: i % 3,
            slot: i / 3,
            reads: i as u32 * 2,
            writes: 1,
        })
        .collect();
    let transfers = vec![TransferRow {
        to: 1,
        from: 0,
        count: 4,
    }];
    vec![
        crate::access::trace::encode(&h, &rows, &transfers),
        crate::access::trace::encode(&h, &[], &[]),
    ]
}

/// A record trace of four records, and an empty one.
fn record_trace_seeds() -> Vec<Vec<u8>> {
    use crate::access::record_trace::{
        encode, tag_time, RecordEntry, RecordTraceHeader, FLAG_INSERT_SEEN,
    };
    let h = RecordTraceHeader {
        cf_id: 1,
        sample_rate: 1.0,
        day_ms: 1000,
        start_ms: 0,
        end_ms: 5000,
        max_times: 4,
        point_reads: 9,
        writes: 4,
        scans: 1,
    };
    let records: Vec<RecordEntry> = (0..4u64)
        .map(|i| RecordEntry {
            key: format!("user{i:04}").into_bytes(),
            insert_ms: i * 100,
            flags: FLAG_INSERT_SEEN,
            last_update_ms: i * 100 + 50,
            times: vec![
                tag_time(i * 100, true, None),
                tag_time(i * 100 + 50, true, Some(i as u8)),
                tag_time(2000, false, None),
            ],
            days: vec![(0, 0, 2), (2, 1, 0)],
        })
        .collect();
    vec![encode(&h, &records), encode(&h, &[])]
}

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
