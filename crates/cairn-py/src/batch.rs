//! `cairn.WriteBatch`: operations applied atomically by `Db.write`.

use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::convert::Bytes;
use crate::db::PyDb;
use crate::errors::IntoPyResult;

/// A group of puts and deletes applied atomically, in order, by ``Db.write(batch)``.
/// ``cf`` takes a column-family view (``db.column_family(name)``); left out, the
/// operation goes to ``default``. The batch keeps its operations after a write.
#[pyclass(frozen, module = "cairn", name = "WriteBatch")]
#[derive(Default)]
pub struct PyWriteBatch {
    batch: Mutex<cairn::WriteBatch>,
}

impl PyWriteBatch {
    /// A copy of the operations, to write.
    pub fn snapshot(&self) -> cairn::WriteBatch {
        self.batch.lock().clone()
    }
}

fn cf_id(cf: Option<PyRef<'_, PyDb>>) -> u32 {
    cf.map(|d| d.cf.id()).unwrap_or(0)
}

#[pymethods]
impl PyWriteBatch {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Sets ``key`` to ``value``.
    #[pyo3(signature = (key, value, cf = None))]
    fn put(&self, key: Bytes<'_>, value: Bytes<'_>, cf: Option<PyRef<'_, PyDb>>) -> PyResult<()> {
        self.batch.lock().put_cf(cf_id(cf), &key, &value).py_err()
    }

    /// Deletes ``key``.
    #[pyo3(signature = (key, cf = None))]
    fn delete(&self, key: Bytes<'_>, cf: Option<PyRef<'_, PyDb>>) -> PyResult<()> {
        self.batch.lock().delete_cf(cf_id(cf), &key).py_err()
    }

    /// Deletes every key in ``[start, end)``.
    #[pyo3(signature = (start, end, cf = None))]
    fn delete_range(
        &self,
        start: Bytes<'_>,
        end: Bytes<'_>,
        cf: Option<PyRef<'_, PyDb>>,
    ) -> PyResult<()> {
        self.batch
            .lock()
            .delete_range_cf(cf_id(cf), &start, &end)
            .py_err()
    }

    /// Removes every operation.
    fn clear(&self) {
        self.batch.lock().clear();
    }

    fn __len__(&self) -> usize {
        self.batch.lock().len()
    }

    fn __repr__(&self) -> String {
        format!("cairn.WriteBatch(<{} operations>)", self.batch.lock().len())
    }
}
