//! Python bindings of the cairn storage engine: the compiled module `cairn._native`,
//! re-exported by the pure-Python package `cairn` (python/cairn/__init__.py).

mod batch;
mod convert;
mod db;
mod errors;
mod iter;
mod options;
mod read;
mod shared;
mod snapshot;
mod sst_writer;

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::IntoPyResult;

/// Every preset name with its one-line description.
#[pyfunction]
fn presets(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (name, what) in cairn::presets::PRESETS {
        d.set_item(*name, *what)?;
    }
    Ok(d)
}

/// Every option name ``Db(options=...)`` accepts, with its type and meaning.
#[pyfunction]
fn option_names(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (name, what) in options::OPTION_NAMES {
        d.set_item(*name, *what)?;
    }
    Ok(d)
}

/// The settable options of a preset (cairn's defaults when ``preset`` is None).
#[pyfunction]
#[pyo3(signature = (preset = None))]
fn default_options<'py>(py: Python<'py>, preset: Option<&str>) -> PyResult<Bound<'py, PyDict>> {
    options::to_dict(py, &options::build(preset, None)?)
}

/// Repairs the database at ``path`` whose ``CURRENT`` or manifest is lost or damaged
/// (RocksDB's ``RepairDB``): points ``CURRENT`` at an intact manifest, or rebuilds one from
/// the tables and logs present; unreadable tables go to ``lost/``, nothing is deleted.
/// Returns what it did as a dict.
#[pyfunction]
#[pyo3(signature = (path, options = None, preset = None))]
fn repair<'py>(
    py: Python<'py>,
    path: PathBuf,
    options: Option<&Bound<'py, PyDict>>,
    preset: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = options::build(preset, options)?;
    let r = py.detach(|| cairn::Db::repair(&path, opts)).py_err()?;
    let d = PyDict::new(py);
    match r.method {
        cairn::RepairMethod::Manifest(no) => {
            d.set_item("method", "manifest")?;
            d.set_item("manifest", no.get())?;
        }
        cairn::RepairMethod::Rebuilt => d.set_item("method", "rebuilt")?,
    }
    d.set_item("tables_merged", r.tables_merged)?;
    d.set_item("entries", r.entries)?;
    d.set_item("wal_entries", r.wal_entries)?;
    let lost = PyList::empty(py);
    for (p, why) in r.lost {
        lost.append((p.display().to_string(), why))?;
    }
    d.set_item("lost", lost)?;
    d.set_item("column_families", families(r.column_families))?;
    Ok(d)
}

/// A report's column families as Python sees them: (id as a plain int, name).
fn families(cfs: Vec<(cairn::CfId, String)>) -> Vec<(u32, String)> {
    cfs.into_iter().map(|(id, name)| (id.get(), name)).collect()
}

/// Verifies every checksum of every file of the database at ``path`` and the manifest's
/// consistency, changing nothing (``cairn check``). Returns a dict: ``ok``, ``manifest``,
/// ``column_families``, counts of ``tables``, ``entries``, ``value_logs``,
/// ``value_log_records``, ``wals``, ``wal_records``, and ``problems`` / ``warnings`` as
/// lists of ``(file, detail)``.
#[pyfunction]
#[pyo3(signature = (path, options = None, preset = None))]
fn check<'py>(
    py: Python<'py>,
    path: PathBuf,
    options: Option<&Bound<'py, PyDict>>,
    preset: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = options::build(preset, options)?;
    let r = py.detach(|| cairn::Db::check(&path, &opts)).py_err()?;
    let d = PyDict::new(py);
    d.set_item("ok", r.is_ok())?;
    d.set_item("manifest", r.manifest)?;
    d.set_item("column_families", families(r.column_families))?;
    d.set_item("tables", r.tables)?;
    d.set_item("entries", r.entries)?;
    d.set_item("value_logs", r.value_logs)?;
    d.set_item("value_log_records", r.value_log_records)?;
    d.set_item("wals", r.wals)?;
    d.set_item("wal_records", r.wal_records)?;
    let issues = |v: Vec<cairn::CheckIssue>| -> Vec<(String, String)> {
        v.into_iter().map(|i| (i.file, i.detail)).collect()
    };
    d.set_item("problems", issues(r.problems))?;
    d.set_item("warnings", issues(r.warnings))?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The engine's log records (warnings such as a damaged options file or a refused
    // model) go to Python's `logging`, under loggers named after their Rust modules
    // (`cairn.db.recovery`, ...).
    pyo3_log::init();
    errors::register(m)?;
    m.add_class::<db::PyDb>()?;
    m.add_class::<batch::PyWriteBatch>()?;
    m.add_class::<snapshot::PySnapshot>()?;
    m.add_class::<sst_writer::PySstFileWriter>()?;
    m.add_class::<iter::PyIter>()?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(option_names, m)?)?;
    m.add_function(wrap_pyfunction!(default_options, m)?)?;
    m.add_function(wrap_pyfunction!(repair, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Benchmarks refuse a debug build, whose timings mean nothing.
    m.add(
        "build_profile",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
    )?;
    Ok(())
}
