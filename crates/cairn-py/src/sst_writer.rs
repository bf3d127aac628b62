//! `cairn.SstFileWriter`: a sorted table file for `Db.ingest_external_file`.

use std::path::PathBuf;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::Bytes;
use crate::errors::{IntoPyResult, InvalidArgument};

/// ``SstFileWriter(path, options=None, preset=None)`` writes a table of puts and deletes
/// in strictly increasing key order, to load into a database with
/// ``db.ingest_external_file([path])`` as one write. ``finish()`` completes the file
/// (it needs one entry at least) and returns ``{"path", "smallest", "largest",
/// "num_entries", "file_size"}``; an unfinished writer removes its file when collected.
#[pyclass(frozen, module = "cairn", name = "SstFileWriter")]
pub struct PySstFileWriter {
    inner: Mutex<Option<cairn::SstFileWriter>>,
}

impl PySstFileWriter {
    fn with<T>(
        &self,
        f: impl FnOnce(&mut cairn::SstFileWriter) -> cairn::Result<T>,
    ) -> PyResult<T> {
        match self.inner.lock().as_mut() {
            Some(w) => f(w).py_err(),
            None => Err(InvalidArgument::new_err("the SstFileWriter is finished")),
        }
    }
}

#[pymethods]
impl PySstFileWriter {
    #[new]
    #[pyo3(signature = (path, options = None, preset = None))]
    fn new(
        path: PathBuf,
        options: Option<&Bound<'_, PyDict>>,
        preset: Option<&str>,
    ) -> PyResult<Self> {
        let opts = crate::options::build(preset, options)?;
        let w = cairn::SstFileWriter::create(&path, &opts).py_err()?;
        Ok(PySstFileWriter {
            inner: Mutex::new(Some(w)),
        })
    }

    /// Adds a put; ``key`` must sort after every key added before.
    fn put(&self, key: Bytes<'_>, value: Bytes<'_>) -> PyResult<()> {
        self.with(|w| w.put(&key, &value))
    }

    /// Adds a delete; ``key`` must sort after every key added before.
    fn delete(&self, key: Bytes<'_>) -> PyResult<()> {
        self.with(|w| w.delete(&key))
    }

    /// Entries added so far.
    fn num_entries(&self) -> u64 {
        self.inner.lock().as_ref().map_or(0, |w| w.num_entries())
    }

    /// Completes the file and describes it.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let Some(w) = self.inner.lock().take() else {
            return Err(InvalidArgument::new_err("the SstFileWriter is finished"));
        };
        let info = w.finish().py_err()?;
        let d = PyDict::new(py);
        d.set_item("path", info.path)?;
        d.set_item("smallest", pyo3::types::PyBytes::new(py, &info.smallest))?;
        d.set_item("largest", pyo3::types::PyBytes::new(py, &info.largest))?;
        d.set_item("num_entries", info.num_entries)?;
        d.set_item("file_size", info.file_size)?;
        Ok(d)
    }
}
