//! Appends records to a new value-log file.

use std::path::Path;

use super::format::{encode_record, header, ValuePointer};
use crate::ids::FileNo;
use crate::storage::{FileKind, StorageEnv, WritableFile};
use crate::Result;

/// A value-log file being written. Nothing in it may be referenced before [`finish`]
/// synced it.
///
/// [`finish`]: VlogWriter::finish
pub struct VlogWriter {
    file_no: FileNo,
    file: WritableFile,
}

impl VlogWriter {
    /// Creates the file and writes its header.
    pub fn create(env: &StorageEnv, path: &Path, file_no: FileNo) -> Result<Self> {
        let mut file = env.create(path, FileKind::ValueLog, 0, None)?;
        file.append(&header())?;
        Ok(VlogWriter { file_no, file })
    }

    /// Appends one record; returns the pointer to it.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<ValuePointer> {
        let rec = encode_record(key, value);
        let len = u32::try_from(rec.len()).map_err(|_| crate::Error::TooLarge {
            what: "value",
            len: value.len(),
            limit: u32::MAX as usize,
        })?;
        let offset = self.file.len();
        self.file.append(&rec)?;
        Ok(ValuePointer {
            file_no: self.file_no,
            offset,
            len,
        })
    }

    /// The file number.
    pub fn file_no(&self) -> FileNo {
        self.file_no
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Makes the file durable; returns its size.
    pub fn finish(mut self) -> Result<u64> {
        self.file.sync()?;
        Ok(self.file.len())
    }
}
