//! Reading separated values, the sizes of live value-log files, their reference counts,
//! and the value-log counters.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::format::{check_header, record_value, ValuePointer, HEADER_LEN};
use super::vlog_path;
use crate::cache::open_files::{FileKey, OpenFile, OpenFiles};
use crate::ids::FileNo;
use crate::storage::{FileKind, RandomAccessFile, StorageEnv};
use crate::{Error, Result};

/// A table's hold on a value-log file: the file is deleted only after every hold is gone.
#[derive(Debug)]
pub struct VlogRef {
    file_no: FileNo,
    registry: Arc<VlogRegistry>,
}

impl VlogRef {
    /// The file number held.
    pub fn file_no(&self) -> FileNo {
        self.file_no
    }
}

impl Drop for VlogRef {
    fn drop(&mut self) {
        self.registry.obsolete.lock().push(self.file_no);
    }
}

/// Which value-log files some installed table still references.
#[derive(Debug, Default)]
pub struct VlogRegistry {
    live: Mutex<HashMap<FileNo, Weak<VlogRef>>>,
    obsolete: Mutex<Vec<FileNo>>,
}

impl VlogRegistry {
    /// A hold on `file_no` (shared with every other table referencing it).
    pub fn acquire(self: &Arc<Self>, file_no: FileNo) -> Arc<VlogRef> {
        let mut live = self.live.lock();
        if let Some(r) = live.get(&file_no).and_then(Weak::upgrade) {
            return r;
        }
        let r = Arc::new(VlogRef {
            file_no,
            registry: self.clone(),
        });
        live.insert(file_no, Arc::downgrade(&r));
        r
    }

    /// True while some table holds the file.
    pub fn is_live(&self, file_no: FileNo) -> bool {
        self.live
            .lock()
            .get(&file_no)
            .is_some_and(|w| w.strong_count() > 0)
    }

    /// Every file some table holds.
    pub fn live_files(&self) -> Vec<FileNo> {
        let live = self.live.lock();
        live.iter()
            .filter(|(_, w)| w.strong_count() > 0)
            .map(|(&n, _)| n)
            .collect()
    }

    /// Files whose last hold went away and that no table holds again. A file number may
    /// appear although it is live again; callers check [`is_live`](Self::is_live).
    pub fn take_obsolete(&self) -> Vec<FileNo> {
        let queued = std::mem::take(&mut *self.obsolete.lock());
        if !queued.is_empty() {
            self.live.lock().retain(|_, w| w.strong_count() > 0);
        }
        queued
    }
}

#[derive(Default)]
pub(crate) struct VlogCounters {
    bytes_written: AtomicU64,
    records_written: AtomicU64,
    reads: AtomicU64,
    read_bytes: AtomicU64,
    gc_bytes_relocated: AtomicU64,
    gc_records_relocated: AtomicU64,
    gc_rewrites: AtomicU64,
    files_deleted: AtomicU64,
}

/// Value-log counters and state (all zero when separation was never used).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct VlogStats {
    /// Record bytes written by flushes (new values).
    pub bytes_written: u64,
    /// Records written by flushes.
    pub records_written: u64,
    /// Records read to answer reads (gets and iterators; GC's reads are not counted here
    /// but in the I/O counters of `FileKind::ValueLog`).
    pub reads: u64,
    /// Bytes of those reads.
    pub read_bytes: u64,
    /// Record bytes moved to new files by garbage collection.
    pub gc_bytes_relocated: u64,
    /// Records moved by garbage collection.
    pub gc_records_relocated: u64,
    /// Tables rewritten only to move their values out of files chosen for GC.
    pub gc_rewrites: u64,
    /// Value-log files deleted.
    pub files_deleted: u64,
    /// Live value-log files (referenced by a current table).
    pub files_live: u64,
    /// Record bytes of the live files (their sizes less the headers).
    pub total_bytes: u64,
    /// Bytes of records the current tables reference.
    pub live_bytes: u64,
    /// `total_bytes / live_bytes` (1.0 when nothing is live).
    pub space_amp: f64,
}

/// Reads separated values (one read of exactly a record's bytes, checksum verified) and
/// keeps the sizes of value-log files and the counters. Files are opened on first read
/// and kept in the database's open-file cache, beside its tables: with
/// `Options::max_open_files` set, the least recently read close first and open again
/// when read (their header checked again).
pub struct VlogStore {
    env: StorageEnv,
    files: Arc<OpenFiles>,
    sizes: Mutex<BTreeMap<FileNo, u64>>,
    pub(crate) counters: VlogCounters,
}

impl VlogStore {
    /// A store over the database's directory that keeps every file it opens open.
    pub fn new(env: StorageEnv) -> Self {
        Self::with_open_files(env, Arc::new(OpenFiles::new(None)))
    }

    /// A store that keeps its open files in `files` (shared with the table cache).
    pub(crate) fn with_open_files(env: StorageEnv, files: Arc<OpenFiles>) -> Self {
        VlogStore {
            env,
            files,
            sizes: Mutex::new(BTreeMap::new()),
            counters: VlogCounters::default(),
        }
    }

    fn name(file_no: FileNo) -> String {
        crate::filenames::vlog(file_no)
    }

    fn open(&self, file_no: FileNo) -> Result<Arc<RandomAccessFile>> {
        let key = FileKey::ValueLog(file_no);
        if let Some(OpenFile::ValueLog(f)) = self.files.get(key) {
            return Ok(f);
        }
        let path = vlog_path(self.env.root(), file_no);
        let f = match self
            .env
            .open_read(&path, FileKind::ValueLog, 0, None, false)
        {
            Ok(f) => f,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::corruption(
                    Self::name(file_no),
                    "value-log file referenced by a table is missing",
                ))
            }
            Err(e) => return Err(e),
        };
        if f.size() < HEADER_LEN {
            return Err(Error::corruption(Self::name(file_no), "truncated header"));
        }
        check_header(&Self::name(file_no), &f.read_at(0, HEADER_LEN as usize)?)?;
        match self
            .files
            .insert(key, OpenFile::ValueLog(Arc::new(f)), |_| {})
        {
            OpenFile::ValueLog(f) => Ok(f),
            OpenFile::Table(_) => unreachable!("a value-log key holds a value-log file"),
        }
    }

    /// Resolves a `ValueKind::ValuePointer` entry of `user_key` to its value. The one
    /// function every read path calls.
    pub fn get(&self, user_key: &[u8], pointer: &[u8]) -> Result<Vec<u8>> {
        self.get_decoded(user_key, &ValuePointer::decode(pointer)?)
    }

    /// As [`get`](Self::get), with the pointer already decoded (a KP cache entry keeps it).
    pub fn get_decoded(&self, user_key: &[u8], p: &ValuePointer) -> Result<Vec<u8>> {
        let v = self.read(p, user_key)?;
        self.counters.reads.fetch_add(1, Relaxed);
        self.counters.read_bytes.fetch_add(p.len as u64, Relaxed);
        Ok(v)
    }

    /// Reads the record `p` points to and checks it holds `user_key`.
    pub fn read(&self, p: &ValuePointer, user_key: &[u8]) -> Result<Vec<u8>> {
        let f = self.open(p.file_no)?;
        // Out of a mapping the value is the only copy made; the file's name is formatted
        // only for an error.
        f.read_with(p.offset, p.len as usize, |rec| {
            record_value(rec, user_key)
                .map(<[u8]>::to_vec)
                .map_err(|d| Error::corruption(Self::name(p.file_no), d))
        })
    }

    /// Checks at open that a file the manifest's tables reference is there and whole
    /// enough to read, and records its size.
    pub fn check_present(&self, file_no: FileNo) -> Result<()> {
        let f = self.open(file_no)?;
        self.register(file_no, f.size());
        Ok(())
    }

    /// Records the size of a new (synced) file.
    pub fn register(&self, file_no: FileNo, size: u64) {
        self.sizes.lock().insert(file_no, size);
    }

    /// Forgets a deleted file.
    pub fn forget(&self, file_no: FileNo) {
        self.sizes.lock().remove(&file_no);
        self.files.remove(FileKey::ValueLog(file_no));
    }

    /// Removes a file no table references any more.
    pub fn delete(&self, file_no: FileNo) {
        self.forget(file_no);
        if self
            .env
            .remove(&vlog_path(self.env.root(), file_no))
            .is_ok()
        {
            self.counters.files_deleted.fetch_add(1, Relaxed);
        }
    }

    /// Size of a file, if known.
    pub fn size(&self, file_no: FileNo) -> Option<u64> {
        self.sizes.lock().get(&file_no).copied()
    }

    pub(crate) fn add_written(&self, records: u64, bytes: u64) {
        self.counters.records_written.fetch_add(records, Relaxed);
        self.counters.bytes_written.fetch_add(bytes, Relaxed);
    }

    pub(crate) fn add_relocated(&self, records: u64, bytes: u64) {
        self.counters
            .gc_records_relocated
            .fetch_add(records, Relaxed);
        self.counters.gc_bytes_relocated.fetch_add(bytes, Relaxed);
    }

    pub(crate) fn add_gc_rewrite(&self) {
        self.counters.gc_rewrites.fetch_add(1, Relaxed);
    }

    /// The counters, with the live state filled from `usage` (file, total, live bytes).
    pub fn stats(&self, usage: &[super::gc::VlogUsage]) -> VlogStats {
        let c = &self.counters;
        let total: u64 = usage.iter().map(|u| u.total).sum();
        let live: u64 = usage.iter().map(|u| u.live).sum();
        VlogStats {
            bytes_written: c.bytes_written.load(Relaxed),
            records_written: c.records_written.load(Relaxed),
            reads: c.reads.load(Relaxed),
            read_bytes: c.read_bytes.load(Relaxed),
            gc_bytes_relocated: c.gc_bytes_relocated.load(Relaxed),
            gc_records_relocated: c.gc_records_relocated.load(Relaxed),
            gc_rewrites: c.gc_rewrites.load(Relaxed),
            files_deleted: c.files_deleted.load(Relaxed),
            files_live: usage.len() as u64,
            total_bytes: total,
            live_bytes: live,
            space_amp: if live == 0 {
                1.0
            } else {
                total as f64 / live as f64
            },
        }
    }
}
