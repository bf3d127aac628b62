//! `cairn.Db`: an open database, or a view of one of its column families. Mapping
//! protocol (`db[k]`, `k in db`, `del db[k]`), writes with `sync=`, iterators, snapshots,
//! column families and maintenance, with the GIL released during every engine call.

use std::path::PathBuf;
use std::sync::Arc;

use cairn::{ColumnFamily, Db, Transition, WriteOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::batch::PyWriteBatch;
use crate::convert::Bytes;
use crate::errors::{IntoPyResult, InvalidArgument};
use crate::iter::{PyIter, Yield};
use crate::read::Reader;
use crate::shared::Shared;
use crate::snapshot::PySnapshot;

/// An open cairn database (or one column family of it).
///
/// ``Db(path, options=None, preset=None)`` opens the database in directory ``path``,
/// creating it unless ``options={"create_if_missing": False}``. ``preset`` names one of
/// ``cairn.presets()`` (``"ac-key"``, ``"bourbon"``, ``"ruskey"``, ...); ``options`` is a
/// dict of ``cairn.option_names()`` applied on top of it. Keys and values are ``bytes``
/// (``str`` is accepted and encoded as UTF-8; ``bytearray`` too). Use it as a context
/// manager, or call ``close()``: a closed database raises ``cairn.ClosedError``.
/// With neither ``options`` nor ``preset``, an existing database opens with the options
/// it saved in its options file (``OPTIONS-NNNNNN``). ``read_only=True`` opens an existing database for reads only, beside a process that
/// has it open (no lock taken, nothing written); writes raise ``cairn.ReadOnlyError``.
#[pyclass(frozen, module = "cairn", name = "Db")]
pub struct PyDb {
    pub(crate) shared: Arc<Shared>,
    pub(crate) cf: ColumnFamily,
}

fn write_options(sync: bool) -> WriteOptions {
    WriteOptions {
        sync,
        query_column: None,
        disable_wal: false,
    }
}

impl PyDb {
    fn reader(&self) -> Reader<'_> {
        Reader {
            shared: &self.shared,
            cf: &self.cf,
            snapshot: None,
        }
    }

    fn view(&self, cf: ColumnFamily) -> PyDb {
        PyDb {
            shared: self.shared.clone(),
            cf,
        }
    }
}

#[pymethods]
impl PyDb {
    #[new]
    #[pyo3(signature = (path, options = None, preset = None, read_only = false))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        options: Option<&Bound<'_, PyDict>>,
        preset: Option<&str>,
        read_only: bool,
    ) -> PyResult<Self> {
        // Neither given: the options the database saved, where it has an options file.
        let saved =
            preset.is_none() && options.is_none() && cairn::options_file::has_options_file(&path);
        let opts = if saved {
            let p = path.clone();
            py.detach(|| cairn::Options::load_latest(&p)).py_err()?
        } else {
            crate::options::build(preset, options)?
        };
        let p = path.clone();
        let db = py
            .detach(|| {
                if read_only {
                    Db::open_read_only(&p, opts)
                } else {
                    Db::open(&p, opts)
                }
            })
            .py_err()?;
        let cf = db.default_cf();
        Ok(PyDb {
            shared: Arc::new(Shared::new(db, path)),
            cf,
        })
    }

    /// The value of ``key``, or ``default`` when it is absent.
    #[pyo3(signature = (key, default = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: Bytes<'_>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        self.reader().get_or(py, &key, default)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: Bytes<'_>) -> PyResult<Bound<'py, PyBytes>> {
        self.reader().item(py, &key)
    }

    /// The values of ``keys`` read at one moment (no write lands between them), a list of
    /// ``bytes`` or ``None`` in the order of ``keys``.
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.reader().multi_get(py, keys)
    }

    fn __contains__(&self, py: Python<'_>, key: Bytes<'_>) -> PyResult<bool> {
        Ok(self.reader().get(py, &key)?.is_some())
    }

    fn __setitem__(&self, py: Python<'_>, key: Bytes<'_>, value: Bytes<'_>) -> PyResult<()> {
        self.put(py, key, value, false)
    }

    /// Deletes ``key``; deleting an absent key is not an error (it writes a tombstone).
    fn __delitem__(&self, py: Python<'_>, key: Bytes<'_>) -> PyResult<()> {
        self.delete(py, key, false)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIter> {
        self.reader().iter(py, None, None, false, Yield::Keys)
    }

    /// Sets ``key`` to ``value``. With ``sync=True`` the write-ahead log is synced before
    /// it returns, so the write survives a power loss.
    #[pyo3(signature = (key, value, sync = false))]
    fn put(&self, py: Python<'_>, key: Bytes<'_>, value: Bytes<'_>, sync: bool) -> PyResult<()> {
        let (cf, k, v) = (&self.cf, &key.0, &value.0);
        self.shared
            .with(py, |db| db.put_cf(cf, &write_options(sync), k, v))
    }

    /// Deletes ``key`` (absent or not).
    #[pyo3(signature = (key, sync = false))]
    fn delete(&self, py: Python<'_>, key: Bytes<'_>, sync: bool) -> PyResult<()> {
        let (cf, k) = (&self.cf, &key.0);
        self.shared
            .with(py, |db| db.delete_cf(cf, &write_options(sync), k))
    }

    /// Deletes every key in ``[start, end)``.
    #[pyo3(signature = (start, end, sync = false))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: Bytes<'_>,
        end: Bytes<'_>,
        sync: bool,
    ) -> PyResult<()> {
        let mut b = cairn::WriteBatch::new();
        b.delete_range_cf(self.cf.id(), &start, &end).py_err()?;
        self.shared.with(py, |db| db.write(&write_options(sync), b))
    }

    /// Applies a ``WriteBatch`` atomically (the batch keeps its operations). Operations
    /// added without ``cf=`` go to ``default``, whichever view writes the batch.
    #[pyo3(signature = (batch, sync = false))]
    fn write(&self, py: Python<'_>, batch: &PyWriteBatch, sync: bool) -> PyResult<()> {
        let b = batch.for_db(&self.shared)?;
        self.shared.with(py, |db| db.write(&write_options(sync), b))
    }

    /// ``(key, value)`` pairs from ``from_key`` (included) to ``to_key`` (excluded) in the
    /// direction of travel, either bound left out for the end of the key space: in key
    /// order ``from_key <= key < to_key``; with ``reverse=True`` descending,
    /// ``to_key < key <= from_key`` (as ``range`` and rocksdict's ``from_key``). The
    /// iterator sees the database as it was when it was made, and may be shared between
    /// threads.
    #[pyo3(signature = (from_key = None, to_key = None, reverse = false))]
    fn items(
        &self,
        py: Python<'_>,
        from_key: Option<Bytes<'_>>,
        to_key: Option<Bytes<'_>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        self.reader()
            .iter(py, from_key, to_key, reverse, Yield::Items)
    }

    /// Keys from ``from_key`` to ``to_key``, as ``items`` (no value is read).
    #[pyo3(signature = (from_key = None, to_key = None, reverse = false))]
    fn keys(
        &self,
        py: Python<'_>,
        from_key: Option<Bytes<'_>>,
        to_key: Option<Bytes<'_>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        self.reader()
            .iter(py, from_key, to_key, reverse, Yield::Keys)
    }

    /// Values of the keys from ``from_key`` to ``to_key``, as ``items``.
    #[pyo3(signature = (from_key = None, to_key = None, reverse = false))]
    fn values(
        &self,
        py: Python<'_>,
        from_key: Option<Bytes<'_>>,
        to_key: Option<Bytes<'_>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        self.reader()
            .iter(py, from_key, to_key, reverse, Yield::Values)
    }

    /// A consistent read-only view of this column family as of now; use it as a context
    /// manager or ``close()`` it so compactions can drop the versions it pins.
    fn snapshot(&self, py: Python<'_>) -> PyResult<PySnapshot> {
        let snap = self.shared.with(py, |db| Ok(db.snapshot()))?;
        Ok(PySnapshot::new(self.shared.clone(), self.cf.clone(), snap))
    }

    /// The column family ``name`` as a ``Db`` view sharing this database.
    fn column_family(&self, py: Python<'_>, name: &str) -> PyResult<PyDb> {
        let cf = self.shared.with(py, |db| {
            db.cf(name)
                .ok_or_else(|| cairn::Error::UnknownColumnFamily(name.to_string()))
        })?;
        Ok(self.view(cf))
    }

    /// Creates column family ``name`` and returns its view. With ``preset`` or
    /// ``options``, the family runs with its own options (kept in the options file):
    /// the database's, then the preset's per-family parts (its index, value separation
    /// and fixed-width layout), then ``options`` (the per-family keys among them: table
    /// format, sizes, ``value_threshold``; and ``point_cache``: whether its point reads
    /// use the point cache); any other key is an ``InvalidArgument``.
    #[pyo3(signature = (name, preset=None, options=None))]
    fn create_column_family(
        &self,
        py: Python<'_>,
        name: &str,
        preset: Option<&str>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyDb> {
        if preset.is_none() && options.is_none() {
            let cf = self.shared.with(py, |db| db.create_cf(name))?;
            return Ok(self.view(cf));
        }
        let base = self.shared.with(py, |db| Ok(db.options().clone()))?;
        let own = crate::options::family(&base, preset, options)?;
        let cf = self.shared.with(py, |db| db.create_cf_with(name, &own))?;
        Ok(self.view(cf))
    }

    /// Drops column family ``name`` and its data.
    fn drop_column_family(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.shared.with(py, |db| {
            let cf = db
                .cf(name)
                .ok_or_else(|| cairn::Error::UnknownColumnFamily(name.to_string()))?;
            db.drop_cf(&cf)
        })
    }

    /// Names of every column family.
    fn column_families(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.shared.with(py, |db| Ok(db.cf_names()))
    }

    /// Name of the column family this object reads and writes (``"default"`` unless it
    /// came from ``column_family``).
    #[getter]
    fn name(&self) -> &str {
        self.cf.name()
    }

    /// Directory of the database.
    #[getter]
    fn path(&self) -> PathBuf {
        self.shared.path.clone()
    }

    /// Whether ``close()`` has run.
    #[getter]
    fn closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// The sequence number of the latest acknowledged write.
    #[getter]
    fn latest_seq(&self, py: Python<'_>) -> PyResult<u64> {
        self.shared.with(py, |db| Ok(db.latest_seq()))
    }

    /// Flushes every memtable with data to level 0 and waits for it.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.shared.with(py, |db| db.flush())
    }

    /// Syncs the write-ahead log: every write acknowledged so far survives a power loss.
    fn sync_wal(&self, py: Python<'_>) -> PyResult<()> {
        self.shared.with(py, |db| db.sync_wal())
    }

    /// Makes an openable copy of the database at one moment in ``path`` (which must not
    /// exist): tables and value logs hard-linked, the logs still needed copied.
    fn checkpoint(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        self.shared.with(py, |db| db.checkpoint(&path))
    }

    /// Loads table files written by ``cairn.SstFileWriter`` into this column family as one
    /// write: their entries replace what it held for their keys. The files must not
    /// overlap one another; they are copied in and left where they are.
    fn ingest_external_file(&self, py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<()> {
        let cf = &self.cf;
        self.shared
            .with(py, |db| db.ingest_external_file_cf(cf, &paths))
    }

    /// Compacts the keys in ``[start, end]`` of this column family down the tree (the
    /// whole key space when both are left out) and waits for it.
    #[pyo3(signature = (start = None, end = None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<Bytes<'_>>,
        end: Option<Bytes<'_>>,
    ) -> PyResult<()> {
        let cf = &self.cf;
        let (s, e) = (start.as_deref(), end.as_deref());
        self.shared.with(py, |db| db.compact_range_cf(cf, s, e))
    }

    /// Sets the run limit K of ``level`` (1 = leveling, T = tiering). ``transition`` is
    /// how it takes effect: ``"flexible"`` (default), ``"greedy"`` or ``"lazy"``.
    #[pyo3(signature = (level, k, transition = "flexible"))]
    fn set_policy(&self, py: Python<'_>, level: usize, k: usize, transition: &str) -> PyResult<()> {
        let t = match transition {
            "flexible" => Transition::Flexible,
            "greedy" => Transition::Greedy,
            "lazy" => Transition::Lazy,
            other => {
                return Err(InvalidArgument::new_err(format!(
                    "transition {other:?}: expected 'flexible', 'greedy' or 'lazy'"
                )))
            }
        };
        let cf = &self.cf;
        self.shared.with(py, |db| db.set_policy(cf, level, k, t))
    }

    /// The levels of this column family: ``level``, ``capacity``, ``k``, ``pending_k``,
    /// ``draining`` and ``runs`` (each ``id``, ``files``, ``bytes``, ``sealed``).
    fn level_info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let cf = &self.cf;
        let levels = self.shared.with(py, |db| db.level_info(cf))?;
        let out = PyList::empty(py);
        for l in levels {
            let d = PyDict::new(py);
            d.set_item("level", l.level)?;
            d.set_item("capacity", l.capacity)?;
            d.set_item("k", l.k)?;
            d.set_item("pending_k", l.pending_k)?;
            d.set_item("draining", l.draining)?;
            let runs = PyList::empty(py);
            for r in l.runs {
                let rd = PyDict::new(py);
                rd.set_item("id", r.id)?;
                rd.set_item("files", r.files)?;
                rd.set_item("bytes", r.bytes)?;
                rd.set_item("sealed", r.sealed)?;
                runs.append(rd)?;
            }
            d.set_item("runs", runs)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// The engine's counters, latencies, cache, I/O, value-log, prefetcher and tuner
    /// statistics as a (nested) dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let json = self.shared.with(py, |db| {
            serde_json::to_string(&db.stats())
                .map_err(|e| cairn::Error::InvalidArgument(format!("stats: {e}")))
        })?;
        py.import("json")?.call_method1("loads", (json,))
    }

    /// The statistics in the Prometheus text format (``cairn_gets_total``, ...), each
    /// sample labelled ``db="label"`` when a label is given: for a service's metrics
    /// endpoint (``prometheus_client`` can serve it) or node_exporter's textfile collector.
    #[pyo3(signature = (label=None))]
    fn metrics_text(&self, py: Python<'_>, label: Option<&str>) -> PyResult<String> {
        self.shared
            .with(py, |db| Ok(db.stats().prometheus_text(label)))
    }

    /// The settable options the database was opened with (``cairn.option_names()``).
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let opts = self.shared.with(py, |db| Ok(db.options().clone()))?;
        crate::options::to_dict(py, &opts)
    }

    /// Writes this column family's access trace (Leaper; needs a preset that collects
    /// access statistics) to ``path`` and returns its row count.
    fn export_access_trace(&self, py: Python<'_>, path: PathBuf) -> PyResult<usize> {
        let cf = &self.cf;
        self.shared.with(py, |db| db.export_access_trace(cf, &path))
    }

    /// Installs a Leaper model bundle written by ``python -m cairn.learn.leaper train``.
    fn load_leaper_model(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let cf = &self.cf;
        self.shared.with(py, |db| db.load_leaper_model(cf, &path))
    }

    /// Writes this column family's record trace (SA-LSM's query store; the ``sa-*``
    /// presets keep one) to ``path`` and returns its record count.
    fn export_record_trace(&self, py: Python<'_>, path: PathBuf) -> PyResult<usize> {
        let cf = &self.cf;
        self.shared.with(py, |db| db.export_record_trace(cf, &path))
    }

    /// Loads a cold-key set written by ``python -m cairn.learn.salsm train`` and returns
    /// its key count.
    fn load_cold_set(&self, py: Python<'_>, path: PathBuf) -> PyResult<usize> {
        let cf = &self.cf;
        self.shared.with(py, |db| db.load_cold_set(cf, &path))
    }

    /// Runs one proactive compaction (SA-LSM) and returns its report as a dict.
    fn proactive_compact<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let cf = &self.cf;
        let r = self.shared.with(py, |db| db.proactive_compact(cf))?;
        let d = PyDict::new(py);
        d.set_item("placement", r.placement)?;
        d.set_item("skipped", r.skipped)?;
        d.set_item("hot_level", r.hot_level)?;
        d.set_item("cold_level", r.cold_level)?;
        d.set_item("input_files", r.input_files)?;
        d.set_item("input_bytes", r.input_bytes)?;
        d.set_item("cold_records", r.cold_records)?;
        d.set_item("hot_records", r.hot_records)?;
        d.set_item("cold_bytes", r.cold_bytes)?;
        d.set_item("hot_bytes", r.hot_bytes)?;
        d.set_item("cpu_ns", r.cpu_ns)?;
        d.set_item("wall_ns", r.wall_ns)?;
        Ok(d)
    }

    /// Closes the database (every column-family view of it too, so ``with`` on a view
    /// closes the database): waits for calls in flight, stops background work and syncs
    /// the log. Iterators and snapshots raise ``ClosedError`` afterwards. Closing twice is
    /// a no-op.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.shared.close(py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "cairn.Db({:?}, column_family={:?}{})",
            self.shared.path,
            self.cf.name(),
            if self.shared.is_closed() {
                ", closed"
            } else {
                ""
            }
        )
    }
}
