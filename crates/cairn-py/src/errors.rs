//! The exception hierarchy of the Python package, and how engine errors map onto it.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    cairn,
    Error,
    PyException,
    "Base class of every error cairn raises."
);
create_exception!(
    cairn,
    CorruptionError,
    Error,
    "A file's bytes are wrong: a checksum mismatch, an undecodable structure, or a format version this build cannot read."
);
create_exception!(
    cairn,
    IOError,
    Error,
    "The operating system failed an I/O operation (a full disk included); `errno` holds its code, or None."
);
create_exception!(
    cairn,
    InvalidArgument,
    Error,
    "Bad options or arguments: an unknown option or preset, an oversized key or value, an unknown column family, a missing database with create_if_missing off."
);
create_exception!(
    cairn,
    Busy,
    Error,
    "The database is locked by another process (or another Db object in this one)."
);
create_exception!(
    cairn,
    ClosedError,
    Error,
    "The database (or snapshot) was closed, or a background error stopped it."
);
create_exception!(
    cairn,
    ReadOnlyError,
    Error,
    "The database was opened with read_only=True: writes, flushes, compactions and column family changes are refused."
);

/// The Python exception for an engine error.
pub fn to_py(e: cairn::Error) -> PyErr {
    use cairn::Error as E;
    let msg = e.to_string();
    match e {
        E::Io { source, .. } => {
            let err = IOError::new_err(msg);
            Python::attach(|py| {
                let _ = err.value(py).setattr("errno", source.raw_os_error());
            });
            err
        }
        E::Corruption { .. } | E::UnsupportedVersion { .. } => CorruptionError::new_err(msg),
        E::Locked(_) => Busy::new_err(msg),
        E::Closed(_) => ClosedError::new_err(msg),
        E::ReadOnly(_) => ReadOnlyError::new_err(msg),
        E::InvalidArgument(_)
        | E::TooLarge { .. }
        | E::NotADatabase(_)
        | E::NotFound(_)
        | E::UnknownColumnFamily(_)
        | E::ColumnFamilyExists(_) => InvalidArgument::new_err(msg),
        // A variant added to the engine later: the base class, with its message.
        _ => Error::new_err(msg),
    }
}

/// Engine results into Python results.
pub trait IntoPyResult<T> {
    /// Maps the error with [`to_py`].
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for cairn::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// Registers the exception classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    m.add("IOError", py.get_type::<IOError>())?;
    m.add("InvalidArgument", py.get_type::<InvalidArgument>())?;
    m.add("Busy", py.get_type::<Busy>())?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    Ok(())
}
