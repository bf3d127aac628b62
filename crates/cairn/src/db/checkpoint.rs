//! `Db::checkpoint`: an openable copy of the database at one moment, made of hard links
//! (RocksDB's `Checkpoint::CreateCheckpoint`).
//!
//! Tables, their saved models and value logs never change once written, so the copy links
//! them (copying only where the directory is on another file system). The memtables are
//! flushed first, so that writes kept out of the log are in the copy too. With the version
//! set locked (no table is installed or deleted meanwhile, no log is started), the copy
//! gets a manifest that describes the current versions, the write-ahead logs it still
//! needs (copied: the newest is being appended to, and is copied with the log locked, so
//! at a record boundary), the options file and a `CURRENT`. It is built in a fresh
//! `<dir>.tmp-<pid>-<n>` and renamed into place, so a checkpoint that failed halfway
//! leaves no directory that looks like one (and no directory of the user's is removed).
//! The version set stays locked while files are linked (or copied across file systems):
//! flushes and compactions wait for it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

use super::table_cache::{model_path, table_path};
use super::write::wal_path;
use super::DbInner;
use crate::ids::FileNo;
use crate::log::LogWriter;
use crate::storage::{FileKind, StorageEnv};
use crate::version::set::{current_path, manifest_path};
use crate::vlog::vlog_path;
use crate::{Error, Result};

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::io(path.display().to_string(), e)
}

/// `to` as a hard link to `from`, or a copy where `to` is on another file system; either
/// way durable. Any other failure is an error (a copy over an existing file could empty
/// the source, were it the same file).
fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    match fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => copy_synced(from, to),
        Err(e) => Err(io(to, e)),
    }
}

/// A copy of `from`'s bytes at `to`, synced.
fn copy_synced(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to).map_err(|e| io(from, e))?;
    fs::File::open(to)
        .and_then(|f| f.sync_all())
        .map_err(|e| io(to, e))
}

/// A directory beside `dir` that did not exist, for building the copy in.
fn fresh_tmp(dir: &Path) -> Result<PathBuf> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut name = dir.as_os_str().to_owned();
        name.push(format!(".tmp-{}-{n}", std::process::id()));
        let tmp = PathBuf::from(name);
        match fs::create_dir(&tmp) {
            Ok(()) => return Ok(tmp),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&tmp, e)),
        }
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| io(dir, e))
}

impl DbInner {
    pub(crate) fn checkpoint(&self, dir: &Path) -> Result<()> {
        if dir.exists() {
            return Err(Error::InvalidArgument(format!(
                "checkpoint directory {} already exists",
                dir.display()
            )));
        }
        self.check_open()?;
        let tiers = self.checkpoint_tiers()?;
        self.flush_and_wait()?;
        let tmp = fresh_tmp(dir)?;
        let made = self.fill_checkpoint(&tmp, &tiers).and_then(|()| {
            fs::rename(&tmp, dir).map_err(|e| io(dir, e))?;
            match dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(parent) => sync_dir(parent),
                None => sync_dir(Path::new(".")),
            }
        });
        if made.is_err() {
            let _ = fs::remove_dir_all(&tmp);
        }
        made
    }

    /// Each tier's directory relative to the database's: where its files go in the copy.
    /// A tier outside the database directory (absolute elsewhere, or through `..`) has no
    /// place there.
    fn checkpoint_tiers(&self) -> Result<Vec<PathBuf>> {
        (0..self.env.num_tiers())
            .map(|t| {
                let d = self.env.tier_dir(t);
                let outside = || {
                    Error::InvalidArgument(format!(
                        "tier directory {} lies outside the database directory: a \
                         checkpoint cannot hold it",
                        d.display()
                    ))
                };
                let rel = d.strip_prefix(&self.path).map_err(|_| outside())?;
                let plain = rel
                    .components()
                    .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
                if plain {
                    Ok(rel.to_path_buf())
                } else {
                    Err(outside())
                }
            })
            .collect()
    }

    /// Writes the checkpoint's files into `out` (created here).
    fn fill_checkpoint(&self, out: &Path, tiers: &[PathBuf]) -> Result<()> {
        let out_env = StorageEnv::new(out, &[], 0.0)?;
        for rel in tiers {
            fs::create_dir_all(out.join(rel)).map_err(|e| io(out, e))?;
        }
        let vs = self.versions.lock();
        let mut edit = vs.state_edit();
        let mut vlogs = BTreeSet::new();
        for d in edit.added.iter().map(|a| &a.file) {
            let tier = d.tier as usize;
            let rel = tiers
                .get(tier)
                .ok_or_else(|| Error::corruption("manifest", format!("no tier {tier}")))?;
            let name = |p: PathBuf| out.join(rel).join(p.file_name().unwrap_or_default());
            let table = table_path(&self.env, tier, d.file_no);
            link_or_copy(&table, &name(table.clone()))?;
            // A saved model is advisory (a table without one is learned again).
            let model = model_path(&self.env, tier, d.file_no);
            if model.exists() {
                let _ = link_or_copy(&model, &name(model.clone()));
            }
            vlogs.extend(d.vlog_refs.iter().map(|(no, _)| *no));
        }
        for no in vlogs {
            let from = vlog_path(&self.path, no);
            link_or_copy(&from, &vlog_path(out, no))?;
        }
        // The logs the manifest's log number keeps: older ones complete, the newest at a
        // record boundary (appends wait for the log lock).
        let wal = self.wal.lock();
        for no in (vs.log_number.get()..=wal.number.get()).map(FileNo::new) {
            let from = wal_path(&self.path, no);
            if from.exists() {
                copy_synced(&from, &wal_path(out, no))?;
            }
        }
        drop(wal);
        edit.next_file_no = Some(vs.next_file_no);
        let manifest_no = vs.manifest_no();
        drop(vs);
        let mut w = LogWriter::new(out_env.create(
            &manifest_path(out, manifest_no),
            FileKind::Manifest,
            0,
            None,
        )?);
        w.add_record(&edit.encode())?;
        w.sync()?;
        out_env.write_atomic(
            &current_path(out),
            FileKind::Manifest,
            crate::filenames::current_contents(manifest_no).as_bytes(),
        )?;
        crate::options_file::save(&out_env, out, &self.current_options())?;
        self.copy_learned_state(out)?;
        for rel in tiers {
            sync_dir(&out.join(rel))?;
        }
        sync_dir(out)
    }

    /// RusKey's tuner state and SA-LSM's query stores, small files written whole, so that
    /// the copy's learned parts start where these stand.
    fn copy_learned_state(&self, out: &Path) -> Result<()> {
        let rd = fs::read_dir(&self.path).map_err(|e| io(&self.path, e))?;
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(n) = name.to_str() else { continue };
            let wanted = n == super::tuner::CHECKPOINT_FILE || crate::filenames::is_query_store(n);
            if wanted {
                copy_synced(&e.path(), &out.join(n))?;
            }
        }
        Ok(())
    }
}
