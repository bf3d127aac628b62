//! `cairn.Snapshot`: reads of one column family fixed at a moment.

use std::sync::Arc;

use cairn::{ColumnFamily, Snapshot};
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::convert::Bytes;
use crate::errors::ClosedError;
use crate::iter::{PyIter, Yield};
use crate::read::Reader;
use crate::shared::Shared;

/// A consistent read-only view: it sees exactly the writes acknowledged before
/// ``Db.snapshot()`` returned. ``close()`` it (or leave the ``with`` block) to let
/// compactions drop the old versions it pins; a closed snapshot raises
/// ``cairn.ClosedError``. Iterators made from it keep their view after it closes.
#[pyclass(frozen, module = "cairn", name = "Snapshot")]
pub struct PySnapshot {
    shared: Arc<Shared>,
    cf: ColumnFamily,
    snap: Mutex<Option<Snapshot>>,
}

impl PySnapshot {
    pub fn new(shared: Arc<Shared>, cf: ColumnFamily, snap: Snapshot) -> Self {
        PySnapshot {
            shared,
            cf,
            snap: Mutex::new(Some(snap)),
        }
    }

    fn reader(&self) -> PyResult<Reader<'_>> {
        let snap = self
            .snap
            .lock()
            .clone()
            .ok_or_else(|| ClosedError::new_err("the snapshot was closed"))?;
        Ok(Reader {
            shared: &self.shared,
            cf: &self.cf,
            snapshot: Some(snap),
        })
    }
}

#[pymethods]
impl PySnapshot {
    /// The value of ``key`` at the snapshot, or ``default``.
    #[pyo3(signature = (key, default = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: Bytes<'_>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        self.reader()?.get_or(py, &key, default)
    }

    /// The values of ``keys`` at the snapshot, a list of ``bytes`` or ``None``.
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        self.reader()?.multi_get(py, keys)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: Bytes<'_>) -> PyResult<Bound<'py, PyBytes>> {
        self.reader()?.item(py, &key)
    }

    fn __contains__(&self, py: Python<'_>, key: Bytes<'_>) -> PyResult<bool> {
        Ok(self.reader()?.get(py, &key)?.is_some())
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIter> {
        self.reader()?.iter(py, None, None, false, Yield::Keys)
    }

    /// ``(key, value)`` pairs at the snapshot, as ``Db.items``.
    #[pyo3(signature = (from_key = None, to_key = None, reverse = false))]
    fn items(
        &self,
        py: Python<'_>,
        from_key: Option<Bytes<'_>>,
        to_key: Option<Bytes<'_>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        self.reader()?
            .iter(py, from_key, to_key, reverse, Yield::Items)
    }

    /// Keys at the snapshot, as ``Db.keys``.
    #[pyo3(signature = (from_key = None, to_key = None, reverse = false))]
    fn keys(
        &self,
        py: Python<'_>,
        from_key: Option<Bytes<'_>>,
        to_key: Option<Bytes<'_>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        self.reader()?
            .iter(py, from_key, to_key, reverse, Yield::Keys)
    }

    /// Values at the snapshot, as ``Db.values``.
    #[pyo3(signature = (from_key = None, to_key = None, reverse = false))]
    fn values(
        &self,
        py: Python<'_>,
        from_key: Option<Bytes<'_>>,
        to_key: Option<Bytes<'_>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        self.reader()?
            .iter(py, from_key, to_key, reverse, Yield::Values)
    }

    /// The same moment seen in another column family.
    fn column_family(&self, py: Python<'_>, name: &str) -> PyResult<PySnapshot> {
        let snap = self.reader()?.snapshot;
        let cf = self.shared.with(py, |db| {
            db.cf(name)
                .ok_or_else(|| cairn::Error::UnknownColumnFamily(name.to_string()))
        })?;
        Ok(PySnapshot {
            shared: self.shared.clone(),
            cf,
            snap: Mutex::new(snap),
        })
    }

    /// The snapshot's sequence number.
    #[getter]
    fn seq(&self) -> PyResult<u64> {
        Ok(self.reader()?.snapshot.map(|s| s.seq()).unwrap_or_default())
    }

    /// Releases the snapshot. Closing twice is a no-op.
    fn close(&self) {
        self.snap.lock().take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}
