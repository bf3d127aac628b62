//! `cairn.WriteBatch`: operations applied atomically by `Db.write`.

use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::convert::Bytes;
use crate::db::PyDb;
use crate::errors::{IntoPyResult, InvalidArgument};
use crate::shared::Shared;

/// A group of puts and deletes applied atomically, in order, by ``Db.write(batch)``.
/// ``cf`` takes a column-family view (``db.column_family(name)``); left out, the
/// operation goes to ``default`` (whichever view writes the batch, as in RocksDB). A batch
/// that names column families of one database cannot be written to another. The batch
/// keeps its operations after a write.
#[pyclass(frozen, module = "cairn", name = "WriteBatch")]
#[derive(Default)]
pub struct PyWriteBatch {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    batch: cairn::WriteBatch,
    /// The database whose column families the operations name (ids mean nothing in
    /// another one); `None` while only `default` is named.
    owner: Option<Weak<Shared>>,
}

impl PyWriteBatch {
    /// A copy of the operations, to write to the database `shared`.
    pub fn for_db(&self, shared: &Arc<Shared>) -> PyResult<cairn::WriteBatch> {
        let inner = self.inner.lock();
        if let Some(owner) = &inner.owner {
            if !owner.upgrade().is_some_and(|o| o.same(shared)) {
                return Err(InvalidArgument::new_err(
                    "the batch names column families of another database",
                ));
            }
        }
        Ok(inner.batch.clone())
    }
}

impl Inner {
    /// The column-family id of `cf` (0, `default`, when left out), after checking it
    /// belongs to the database of the batch's other column families.
    fn cf_id(&mut self, cf: Option<PyRef<'_, PyDb>>) -> PyResult<cairn::CfId> {
        let Some(view) = cf else {
            return Ok(cairn::CfId::DEFAULT);
        };
        match &self.owner {
            Some(owner) if !owner.upgrade().is_some_and(|o| o.same(&view.shared)) => {
                return Err(InvalidArgument::new_err(
                    "a batch holds column families of one database only",
                ))
            }
            Some(_) => {}
            None => self.owner = Some(Arc::downgrade(&view.shared)),
        }
        Ok(view.cf.id())
    }
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
        let mut inner = self.inner.lock();
        let id = inner.cf_id(cf)?;
        inner.batch.put_cf(id, &key, &value).py_err()
    }

    /// Deletes ``key``.
    #[pyo3(signature = (key, cf = None))]
    fn delete(&self, key: Bytes<'_>, cf: Option<PyRef<'_, PyDb>>) -> PyResult<()> {
        let mut inner = self.inner.lock();
        let id = inner.cf_id(cf)?;
        inner.batch.delete_cf(id, &key).py_err()
    }

    /// Deletes every key in ``[start, end)``.
    #[pyo3(signature = (start, end, cf = None))]
    fn delete_range(
        &self,
        start: Bytes<'_>,
        end: Bytes<'_>,
        cf: Option<PyRef<'_, PyDb>>,
    ) -> PyResult<()> {
        let mut inner = self.inner.lock();
        let id = inner.cf_id(cf)?;
        inner.batch.delete_range_cf(id, &start, &end).py_err()
    }

    /// Removes every operation.
    fn clear(&self) {
        let mut inner = self.inner.lock();
        inner.batch.clear();
        inner.owner = None;
    }

    fn __len__(&self) -> usize {
        self.inner.lock().batch.len()
    }

    fn __repr__(&self) -> String {
        format!("cairn.WriteBatch(<{} operations>)", self.__len__())
    }
}
