//! Bulk loading (RocksDB's `IngestExternalFile`): tables written by
//! [`SstFileWriter`](crate::SstFileWriter) become part of the tree as one write.
//!
//! The files are checked first, with writes going on: every entry read (checksums, order,
//! sequence number 0, puts and deletes only) and the files' key ranges disjoint. Then, alone
//! at the head of the write queue and holding the compaction lock: every memtable is
//! flushed (see `ingest`), the entries are rewritten with the next sequence number
//! into tables of the deepest level that no level above it (and no table of it) overlaps,
//! in the database's own layout for that level (compression, filter bits, value
//! separation), and one manifest edit installs them. Only then is the sequence number
//! published, so a read sees all of the ingest or none of it, and every later write is
//! newer. Writes wait while the files are rewritten (RocksDB's ingest, assigning a global
//! sequence number in place, blocks them for the flush only, and flushes only memtables
//! that overlap the files; it keeps a log number per column family, cairn one for all).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{ColumnFamily, Db, DbInner, SuperVersion};
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::iter::InternalIterator;
use crate::storage::FileKind;
use crate::table::{Table, TableIterator};
use crate::types::{pack_trailer, parse_internal_key, ValueKind, TRAILER_LEN};
use crate::version::{AddedFile, SealedRun};
use crate::version::{CfVersion, VersionEdit};
use crate::{Error, Result};

/// One external file, checked.
struct External {
    path: PathBuf,
    table: Arc<Table>,
    smallest: Vec<u8>,
    largest: Vec<u8>,
}

impl Db {
    /// Ingests tables written by [`SstFileWriter`](crate::SstFileWriter) into the default
    /// column family, as one write newer than every write before it (see
    /// [`ingest_external_file_cf`](Self::ingest_external_file_cf)).
    pub fn ingest_external_file<P: AsRef<Path>>(&self, paths: &[P]) -> Result<()> {
        self.ingest_external_file_cf(&self.default_cf(), paths)
    }

    /// Ingests tables written by [`SstFileWriter`](crate::SstFileWriter) into `cf`. Their
    /// key ranges must not overlap one another; every entry gets one new sequence number,
    /// so the files replace what `cf` held for their keys, atomically. The files are
    /// copied into the database (rewritten in its layout) and left where they are. A file
    /// that is damaged, unsorted or not written at sequence number 0 is refused before
    /// anything changes.
    pub fn ingest_external_file_cf<P: AsRef<Path>>(
        &self,
        cf: &ColumnFamily,
        paths: &[P],
    ) -> Result<()> {
        crate::events::refuse_in_callback(self.inner.id(), "ingest_external_file")?;
        self.inner.check_open()?;
        self.inner.cf_state(cf.id)?;
        let files = Arc::new(self.inner.check_external(paths)?);
        let id = cf.id;
        self.inner
            .run_exclusive(Box::new(move |db: &DbInner| db.ingest(id, &files)))
    }
}

impl DbInner {
    /// Opens and reads every file, and sorts them by key range; refuses overlapping ones.
    fn check_external<P: AsRef<Path>>(&self, paths: &[P]) -> Result<Vec<External>> {
        if paths.is_empty() {
            return Err(Error::InvalidArgument("no file to ingest".into()));
        }
        let mut files = paths
            .iter()
            .map(|p| self.check_one(p.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        files.sort_by(|a, b| a.smallest.cmp(&b.smallest));
        for w in files.windows(2) {
            if w[0].largest >= w[1].smallest {
                return Err(Error::InvalidArgument(format!(
                    "ingested files {} and {} overlap",
                    w[0].path.display(),
                    w[1].path.display()
                )));
            }
        }
        Ok(files)
    }

    fn check_one(&self, path: &Path) -> Result<External> {
        let name = path.display().to_string();
        let refuse = |why: &str| Err(Error::InvalidArgument(format!("{name}: {why}")));
        let file = self.env.open_read(path, FileKind::Table, 0, None, false)?;
        // The number keys nothing: the table is opened without a cache.
        let table = Arc::new(Table::open(file, FileNo::new(u64::MAX), None)?);
        if table.range_dels().is_some() {
            return refuse("a table holding range deletions cannot be ingested");
        }
        let mut it = table.iter();
        it.seek_to_first();
        let (mut smallest, mut largest): (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
        let mut n = 0u64;
        while it.valid() {
            let Some(p) = parse_internal_key(it.key()) else {
                return Err(Error::corruption(&name, "malformed internal key"));
            };
            if p.seq != 0 {
                return refuse("entries must have sequence number 0 (SstFileWriter's)");
            }
            if !matches!(p.value_kind(), Some(ValueKind::Value | ValueKind::Deletion)) {
                return refuse("only puts and deletes can be ingested");
            }
            if n > 0 && p.user_key <= &largest[..] {
                return Err(Error::corruption(&name, "keys out of order"));
            }
            if n == 0 {
                smallest = p.user_key.to_vec();
            }
            largest.clear();
            largest.extend_from_slice(p.user_key);
            n += 1;
            it.next();
        }
        it.status()?;
        if n == 0 {
            return refuse("holds no entry");
        }
        Ok(External {
            path: path.to_path_buf(),
            table,
            smallest,
            largest,
        })
    }

    /// The ingest proper, alone at the head of the write queue.
    fn ingest(&self, cf: CfId, files: &[External]) -> Result<()> {
        self.check_open()?;
        let _c = self.compaction_lock.write();
        // drop_cf may have run while this waited.
        let state = self.cf_state(cf)?;
        // Every memtable, of every family, flushed first. Their versions are older than
        // the ingest's and must not lie above it; and the logs that hold them must be done
        // with before the ingest is durable, or a reopen would replay an older version of
        // an ingested key into a memtable above the ingested tables (one log serves every
        // family, so a family's flushed writes stay in a log another family still needs).
        // The switch also makes the old log durable, so no acknowledged write is lost
        // where the ingest survives a power loss.
        self.switch_memtables()?;
        self.flush_every_immutable()?;
        let version = state.sv.load().version.clone();
        let level = target_level(&version, files);
        let deepest = version.deepest_nonempty().max(level);
        let seq = self.last_seq.load(Ordering::Acquire) + 1;
        let edit = self.write_ingested(cf, files, level, deepest, seq, &version)?;
        let mut vs = self.versions.lock();
        vs.log_and_apply(edit)?;
        let publish = || {
            if let Some(version) = vs.version(cf) {
                self.install_sv(&state, |sv| SuperVersion {
                    mem: sv.mem.clone(),
                    mem_wal: sv.mem_wal,
                    imms: sv.imms.clone(),
                    version,
                });
            }
            // After the tables are in place: a read at an older number skips them.
            self.last_seq.store(seq, Ordering::Release);
        };
        match &self.read_cache {
            // AC-Key's point cache may hold older versions of ingested keys: dropped as
            // the ingest becomes visible, no read caching what it found before.
            Some(rc) => {
                let ranges: Vec<(&[u8], &[u8])> = files
                    .iter()
                    .map(|f| (&f.smallest[..], &f.largest[..]))
                    .collect();
                rc.forget_ranges_around(cf, &ranges, publish);
            }
            None => publish(),
        }
        drop(vs);
        self.note_seq_time(seq);
        self.request_compaction();
        Ok(())
    }

    /// Flushes the immutable memtables of every column family.
    fn flush_every_immutable(&self) -> Result<()> {
        let pending = || {
            self.cfs
                .read()
                .values()
                .any(|c| !c.sv.load().imms.is_empty())
        };
        while pending() {
            if !self.flush_one()? {
                self.check_open()?;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        Ok(())
    }

    /// Rewrites every file at `seq` into tables of `level`; the edit that adds them.
    fn write_ingested(
        &self,
        cf: CfId,
        files: &[External],
        level: usize,
        deepest: usize,
        seq: u64,
        version: &CfVersion,
    ) -> Result<VersionEdit> {
        let mut outputs = Vec::new();
        for f in files {
            let mut it = Resequenced::new(f.table.iter(), seq);
            let target = self.cf_opts(cf).target_file_size;
            match self.write_sorted(cf, &mut it, None, level, deepest, target, None) {
                Ok((o, _)) => outputs.extend(o),
                Err(e) => {
                    let tier = self.env.tier_for_level(level);
                    for o in &outputs {
                        let path = super::table_cache::table_path(&self.env, tier, o.desc.file_no);
                        let _ = self.env.remove(&path);
                    }
                    return Err(e);
                }
            }
        }
        // Level 0: a new run, the newest. Deeper: the level's active run (no table of the
        // level overlaps), or a new one.
        let active = version.levels[level].active().map(|r| r.id);
        let run = match active.filter(|_| level > 0) {
            Some(id) => id,
            None => self.versions.lock().new_run_id(),
        };
        let mut edit = VersionEdit::default();
        for o in outputs {
            edit.added.push(AddedFile {
                cf,
                level: level as u32,
                run,
                file: o.desc,
            });
        }
        if level == 0 {
            edit.sealed.push(SealedRun { cf, level: 0, run });
        }
        edit.last_seq = Some(seq);
        Ok(edit)
    }
}

/// The deepest level such that neither it nor any level above holds a table overlapping
/// one of the files (level 0 when level 0 does).
fn target_level(v: &CfVersion, files: &[External]) -> usize {
    let overlaps = |l: &crate::version::Level| {
        l.runs.iter().any(|r| {
            files
                .iter()
                .any(|f| !r.overlapping(&f.smallest, &f.largest).is_empty())
        })
    };
    v.levels
        .iter()
        .position(overlaps)
        .map_or(v.levels.len() - 1, |first| first.saturating_sub(1))
}

/// A table's entries with every sequence number replaced by one.
struct Resequenced {
    inner: TableIterator,
    seq: u64,
    key: Vec<u8>,
}

impl Resequenced {
    fn new(inner: TableIterator, seq: u64) -> Self {
        Resequenced {
            inner,
            seq,
            key: Vec::new(),
        }
    }

    /// The inner key with its trailer's sequence number replaced (its kind kept: the low
    /// byte of the little-endian trailer); every entry was checked before.
    fn load(&mut self) {
        self.key.clear();
        if self.inner.valid() {
            let k = self.inner.key();
            self.key.extend_from_slice(k);
            if let Some(n) = k.len().checked_sub(TRAILER_LEN) {
                let trailer = pack_trailer(self.seq, k[n]);
                self.key[n..].copy_from_slice(&trailer.to_le_bytes());
            }
        }
    }
}

impl InternalIterator for Resequenced {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.load();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.load();
    }
    fn seek(&mut self, ikey: &[u8]) {
        self.inner.seek(ikey);
        self.load();
    }
    fn seek_for_prev(&mut self, ikey: &[u8]) {
        self.inner.seek_for_prev(ikey);
        self.load();
    }
    fn next(&mut self) {
        self.inner.next();
        self.load();
    }
    fn prev(&mut self) {
        self.inner.prev();
        self.load();
    }
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}
