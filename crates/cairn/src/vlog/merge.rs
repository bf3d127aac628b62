//! Value handling inside a flush or compaction merge: separate large inline values into a
//! new value-log file (flush), and move values out of files chosen for GC (compaction).

use std::collections::HashSet;
use std::path::PathBuf;

use super::format::ValuePointer;
use super::store::VlogStore;
use super::writer::VlogWriter;
use crate::compaction::merge::ValueRewriter;
use crate::ids::FileNo;
use crate::storage::StorageEnv;
use crate::types::ValueKind;
use crate::Result;

/// See the module comment. Create one per merge; after the merge, [`finish`] syncs the
/// output file (before the edit that installs the tables), or [`abandon`] removes it.
///
/// [`finish`]: VlogMerge::finish
/// [`abandon`]: VlogMerge::abandon
pub struct VlogMerge<'a> {
    env: &'a StorageEnv,
    store: &'a VlogStore,
    threshold: Option<usize>,
    gc: &'a HashSet<FileNo>,
    new_file: &'a mut dyn FnMut() -> (FileNo, PathBuf),
    writer: Option<VlogWriter>,
    created: Option<PathBuf>,
    separated: (u64, u64),
    relocated: (u64, u64),
}

impl<'a> VlogMerge<'a> {
    /// `threshold`: inline values at least this long are separated (`None`: none are).
    /// `gc`: pointers into these files are moved to the new file.
    pub fn new(
        env: &'a StorageEnv,
        store: &'a VlogStore,
        threshold: Option<usize>,
        gc: &'a HashSet<FileNo>,
        new_file: &'a mut dyn FnMut() -> (FileNo, PathBuf),
    ) -> Self {
        VlogMerge {
            env,
            store,
            threshold,
            gc,
            new_file,
            writer: None,
            created: None,
            separated: (0, 0),
            relocated: (0, 0),
        }
    }

    /// True if this merge can change no entry (nothing to separate or move).
    pub fn is_noop(&self) -> bool {
        self.threshold.is_none() && self.gc.is_empty()
    }

    fn writer(&mut self) -> Result<&mut VlogWriter> {
        if self.writer.is_none() {
            let (no, path) = (self.new_file)();
            self.created = Some(path.clone());
            self.writer = Some(VlogWriter::create(self.env, &path, no)?);
        }
        Ok(self.writer.as_mut().expect("created above"))
    }

    /// Syncs the output file, registers its size and counts what was written. Returns
    /// (file number, size), or `None` if nothing was written.
    pub fn finish(&mut self) -> Result<Option<(FileNo, u64)>> {
        let Some(w) = self.writer.take() else {
            return Ok(None);
        };
        let no = w.file_no();
        let size = w.finish()?;
        self.store.register(no, size);
        self.store.add_written(self.separated.0, self.separated.1);
        self.store.add_relocated(self.relocated.0, self.relocated.1);
        Ok(Some((no, size)))
    }

    /// Removes the output file (the merge or its edit failed).
    pub fn abandon(&mut self) {
        self.writer = None;
        if let Some(p) = self.created.take() {
            if let Some(no) = p
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(super::parse_vlog_name)
            {
                self.store.forget(no);
            }
            let _ = self.env.remove(&p);
        }
    }

    /// Bytes of records moved by GC in this merge.
    pub fn relocated_bytes(&self) -> u64 {
        self.relocated.1
    }
}

impl ValueRewriter for VlogMerge<'_> {
    /// A new pointer for a separated or moved value.
    fn rewrite(
        &mut self,
        user_key: &[u8],
        kind: ValueKind,
        value: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        match kind {
            ValueKind::Value if self.threshold.is_some_and(|t| value.len() >= t) => {
                let p = self.writer()?.add(user_key, value)?;
                self.separated.0 += 1;
                self.separated.1 += p.len as u64;
                Ok(Some(p.encode()))
            }
            ValueKind::ValuePointer if !self.gc.is_empty() => {
                let old = ValuePointer::decode(value)?;
                if !self.gc.contains(&old.file_no) {
                    return Ok(None);
                }
                let v = self.store.read(&old, user_key)?;
                let p = self.writer()?.add(user_key, &v)?;
                self.relocated.0 += 1;
                self.relocated.1 += p.len as u64;
                Ok(Some(p.encode()))
            }
            _ => Ok(None),
        }
    }
}
