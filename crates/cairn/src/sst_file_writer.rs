//! Writes a table outside any database, for bulk loading with
//! [`Db::ingest_external_file`](crate::Db::ingest_external_file) (RocksDB's
//! `SstFileWriter`): keys in strictly increasing order, each a put or a delete, at sequence
//! number 0. Ingest gives every entry of the file one new sequence number, so a file
//! replaces what the database held for its keys, as one write would.

use std::path::{Path, PathBuf};

use crate::options::Options;
use crate::storage::{FileKind, StorageEnv};
use crate::table::{TableBuilder, TableSummary};
use crate::types::{check_key, check_value, make_internal_key, ValueKind};
use crate::{Error, Result};

/// What [`SstFileWriter::finish`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalFileInfo {
    /// The file.
    pub path: PathBuf,
    /// Its first user key.
    pub smallest: Vec<u8>,
    /// Its last user key.
    pub largest: Vec<u8>,
    /// Entries (puts and deletes).
    pub num_entries: u64,
    /// Bytes.
    pub file_size: u64,
}

/// Writes one table file of sorted puts and deletes (see the module documentation).
pub struct SstFileWriter {
    builder: Option<TableBuilder>,
    path: PathBuf,
    last: Option<Vec<u8>>,
    smallest: Vec<u8>,
}

impl SstFileWriter {
    /// Creates the file at `path` (which must not exist), laid out as `opts` would write
    /// a table of the database's last level (block size, filter, compression).
    pub fn create(path: impl AsRef<Path>, opts: &Options) -> Result<SstFileWriter> {
        opts.validate()?;
        let path = path.as_ref().to_path_buf();
        if path.exists() {
            return Err(Error::InvalidArgument(format!(
                "{} already exists",
                path.display()
            )));
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let env = StorageEnv::new(&dir, &[], 0.0)?;
        let file = env.create(&path, FileKind::Table, 0, None)?;
        let last = opts.num_levels - 1;
        let mut build = opts.table_build_options(last, last);
        // Ingest rewrites the entries in the database's own layout: fixed-width blocks
        // would only matter to a learned index, which this file never gets.
        build.fixed_width_entries = false;
        Ok(SstFileWriter {
            builder: Some(TableBuilder::new(file, build)),
            path,
            last: None,
            smallest: Vec::new(),
        })
    }

    /// Adds a put of `key`, which must sort after every key added before.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        check_value(value)?;
        self.add(key, ValueKind::Value, value)
    }

    /// Adds a delete of `key`, which must sort after every key added before.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.add(key, ValueKind::Deletion, &[])
    }

    fn add(&mut self, key: &[u8], kind: ValueKind, value: &[u8]) -> Result<()> {
        check_key(key)?;
        if self.last.as_deref().is_some_and(|l| l >= key) {
            return Err(Error::InvalidArgument(
                "SstFileWriter keys must be added in strictly increasing order".into(),
            ));
        }
        let Some(b) = self.builder.as_mut() else {
            return Err(Error::InvalidArgument("SstFileWriter is finished".into()));
        };
        b.add(&make_internal_key(key, 0, kind), value)?;
        if self.last.is_none() {
            self.smallest = key.to_vec();
        }
        self.last = Some(key.to_vec());
        Ok(())
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.builder.as_ref().map_or(0, TableBuilder::num_entries)
    }

    /// Writes the filter, index and footer and syncs the file. A file without entries is
    /// refused (and removed), as RocksDB refuses it.
    pub fn finish(mut self) -> Result<ExternalFileInfo> {
        let b = self.builder.take().expect("present until finish");
        if b.num_entries() == 0 {
            drop(b);
            let _ = std::fs::remove_file(&self.path);
            return Err(Error::InvalidArgument(
                "SstFileWriter: a file needs at least one entry".into(),
            ));
        }
        let TableSummary {
            file_size,
            num_entries,
            ..
        } = b.finish()?;
        Ok(ExternalFileInfo {
            path: self.path.clone(),
            smallest: std::mem::take(&mut self.smallest),
            largest: self.last.take().unwrap_or_default(),
            num_entries,
            file_size,
        })
    }
}

impl Drop for SstFileWriter {
    /// An unfinished file is removed: it has no footer and could never be ingested.
    fn drop(&mut self) {
        if self.builder.take().is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
