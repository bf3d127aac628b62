//! Reads shared by `Db` (the latest state) and `Snapshot` (a fixed one): point gets,
//! membership and the three iterators.

use std::sync::Arc;

use cairn::{ColumnFamily, ReadOptions, Snapshot};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::Bytes;
use crate::iter::{PyIter, Range, Yield};
use crate::shared::Shared;

/// A column family read at a snapshot (or at the latest state when `snapshot` is `None`).
pub struct Reader<'a> {
    pub shared: &'a Arc<Shared>,
    pub cf: &'a ColumnFamily,
    pub snapshot: Option<Snapshot>,
}

impl Reader<'_> {
    fn options(&self) -> ReadOptions {
        ReadOptions {
            snapshot: self.snapshot.clone(),
            ..ReadOptions::default()
        }
    }

    /// The value of `key`, if any.
    pub fn get(&self, py: Python<'_>, key: &Bytes<'_>) -> PyResult<Option<Vec<u8>>> {
        let ro = self.options();
        let (cf, key) = (self.cf, &key.0);
        self.shared.with(py, |db| db.get_opt(&ro, cf, key))
    }

    /// The values of every key of the iterable `keys` (bytes or str) at one moment, as a
    /// list of `bytes` or `None` in the order of `keys`.
    pub fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        let keys = keys
            .try_iter()?
            .map(|k| Ok(k?.extract::<Bytes<'_>>()?.0.into_owned()))
            .collect::<PyResult<Vec<Vec<u8>>>>()?;
        let ro = self.options();
        let cf = self.cf;
        let values = self.shared.with(py, |db| {
            db.multi_get_opt(&ro, cf, &keys)
                .into_iter()
                .collect::<cairn::Result<Vec<_>>>()
        })?;
        let items = values.iter().map(|v| match v {
            Some(v) => PyBytes::new(py, v).into_any(),
            None => py.None().into_bound(py),
        });
        pyo3::types::PyList::new(py, items)
    }

    /// The value as Python `bytes`, or `default`.
    pub fn get_or(
        &self,
        py: Python<'_>,
        key: &Bytes<'_>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        Ok(match self.get(py, key)? {
            Some(v) => Some(PyBytes::new(py, &v).into_any().unbind()),
            None => default,
        })
    }

    /// The value, or `KeyError` (the mapping protocol).
    pub fn item<'py>(&self, py: Python<'py>, key: &Bytes<'_>) -> PyResult<Bound<'py, PyBytes>> {
        match self.get(py, key)? {
            Some(v) => Ok(PyBytes::new(py, &v)),
            None => Err(pyo3::exceptions::PyKeyError::new_err(
                PyBytes::new(py, key).unbind(),
            )),
        }
    }

    /// An iterator over `[from_key, to_key)`.
    pub fn iter(
        &self,
        py: Python<'_>,
        from_key: Option<Bytes<'_>>,
        to_key: Option<Bytes<'_>>,
        reverse: bool,
        what: Yield,
    ) -> PyResult<PyIter> {
        let range = Range {
            from_key: from_key.map(|k| k.0.into_owned()),
            to_key: to_key.map(|k| k.0.into_owned()),
            reverse,
        };
        PyIter::start(py, self.shared, self.cf, self.options(), range, what)
    }
}
