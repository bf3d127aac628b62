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

/// The range and order of an iteration: from `from_key` (included) towards `to_key`
/// (excluded) in the direction of travel, as Python's `range` and rocksdict's `from_key`:
/// forward, `from_key <= key < to_key`; reverse, `to_key < key <= from_key`, descending.
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
        let start = range
            .from_key
            .map_or(RangeBound::Unbounded, RangeBound::Included);
        let end = range
            .to_key
            .map_or(RangeBound::Unbounded, RangeBound::Excluded);
        let bounds = if range.reverse {
            (end, start)
        } else {
            (start, end)
        };
        let scan = shared.with(py, |db| {
            let scan = db.scan_opt(&ro, cf, bounds, range.reverse)?;
            // Keys alone need no value-log reads.
            Ok(if what == Yield::Keys {
                scan.keys_only()
            } else {
                scan
            })
        })?;
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
            // The iterator's lock first, then the database's (close takes only the
            // latter): items already fetched are not handed out after a close.
            let mut st = state.lock();
            if shared.is_closed() {
                st.scan = None;
                st.buf.clear();
                return Err(crate::shared::closed());
            }
            if let Some(item) = st.buf.pop_front() {
                return Ok(Some(item));
            }
            if st.done {
                return Ok(None);
            }
            let want = if st.fetched == 0 { 1 } else { BATCH };
            let mut got = Vec::with_capacity(want);
            shared.with_released(|_db| {
                if let Some(scan) = st.scan.as_mut() {
                    for r in scan.by_ref().take(want) {
                        got.push(r?);
                    }
                }
                Ok(())
            })?;
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
