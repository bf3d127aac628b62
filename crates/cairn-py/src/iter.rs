//! Python iterators over a range of keys. Each holds its engine scan (and so the view of
//! the database it started with) and may be advanced from any thread; items are fetched
//! in small batches per release of the GIL.

use std::collections::VecDeque;
use std::ops::Bound as RangeBound;
use std::sync::Arc;

use cairn::{ColumnFamily, ReadOptions, Scan};
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::shared::Shared;

/// Items fetched per release of the GIL (the first fetch takes one, so `next(iter(...))`
/// costs a single step).
const BATCH: usize = 64;

/// What an iterator yields.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Yield {
    Items,
    Keys,
    Values,
}

/// The range and order of an iteration.
pub struct Range {
    pub from_key: Option<Vec<u8>>,
    pub to_key: Option<Vec<u8>>,
    pub reverse: bool,
}

/// An iterator over keys, values or (key, value) pairs, in key order or reversed.
#[pyclass(frozen, module = "cairn", name = "Iterator")]
pub struct PyIter {
    shared: Arc<Shared>,
    what: Yield,
    state: Mutex<State>,
}

struct State {
    scan: Option<Scan>,
    buf: VecDeque<(Vec<u8>, Vec<u8>)>,
    fetched: usize,
    done: bool,
}

impl PyIter {
    /// Starts an iteration over `cf` at `ro`'s snapshot (or the latest state).
    pub fn start(
        py: Python<'_>,
        shared: &Arc<Shared>,
        cf: &ColumnFamily,
        ro: ReadOptions,
        range: Range,
        what: Yield,
    ) -> PyResult<Self> {
        let lo = match range.from_key {
            Some(k) => RangeBound::Included(k),
            None => RangeBound::Unbounded,
        };
        let hi = match range.to_key {
            Some(k) => RangeBound::Excluded(k),
            None => RangeBound::Unbounded,
        };
        let scan = shared.with(py, |db| db.scan_opt(&ro, cf, (lo, hi), range.reverse))?;
        Ok(PyIter {
            shared: shared.clone(),
            what,
            state: Mutex::new(State {
                scan: Some(scan),
                buf: VecDeque::new(),
                fetched: 0,
                done: false,
            }),
        })
    }
}

#[pymethods]
impl PyIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let shared = &self.shared;
        let state = &self.state;
        let item = py.detach(|| -> cairn::Result<Option<(Vec<u8>, Vec<u8>)>> {
            let mut st = state.lock();
            if let Some(item) = st.buf.pop_front() {
                return Ok(Some(item));
            }
            if st.done {
                return Ok(None);
            }
            if shared.is_closed() {
                st.scan = None;
                return Err(crate::shared::closed());
            }
            let want = if st.fetched == 0 { 1 } else { BATCH };
            let mut got = Vec::with_capacity(want);
            if let Some(scan) = st.scan.as_mut() {
                for r in scan.by_ref().take(want) {
                    got.push(r?);
                }
            }
            if got.len() < want {
                st.done = true;
                st.scan = None;
            }
            st.fetched += got.len();
            st.buf.extend(got);
            Ok(st.buf.pop_front())
        });
        let Some((k, v)) = crate::errors::IntoPyResult::py_err(item)? else {
            return Ok(None);
        };
        Ok(Some(match self.what {
            Yield::Keys => PyBytes::new(py, &k).into_any().unbind(),
            Yield::Values => PyBytes::new(py, &v).into_any().unbind(),
            Yield::Items => PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])?
                .into_any()
                .unbind(),
        }))
    }
}
