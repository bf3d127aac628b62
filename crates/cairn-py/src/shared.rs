//! The open engine behind every Python object that reads it (the `Db` and its column-family
//! views, snapshots, iterators). Calls run with the GIL released; the lock is taken only
//! after the GIL is let go, so a thread closing the database never waits on a lock while
//! holding the GIL that a reader needs to finish.

use std::path::PathBuf;

use cairn::Db;
use parking_lot::RwLock;
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

/// The database, or `None` once closed.
pub struct Shared {
    db: RwLock<Option<Db>>,
    /// Where it lives (kept for `repr` after close).
    pub path: PathBuf,
}

impl Shared {
    pub fn new(db: Db, path: PathBuf) -> Self {
        Shared {
            db: RwLock::new(Some(db)),
            path,
        }
    }

    /// Runs `f` on the open database with the GIL released.
    pub fn with<R, F>(&self, py: Python<'_>, f: F) -> PyResult<R>
    where
        R: Send,
        F: FnOnce(&Db) -> cairn::Result<R> + Send,
    {
        py.detach(|| match self.db.read().as_ref() {
            Some(db) => f(db),
            None => Err(closed()),
        })
        .py_err()
    }

    /// Closes the database: waits for calls in flight, then syncs and releases it.
    /// Closing twice is a no-op.
    pub fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| match self.db.write().take() {
            Some(db) => db.close(),
            None => Ok(()),
        })
        .py_err()
    }

    /// Whether `close` has run.
    pub fn is_closed(&self) -> bool {
        self.db.read().is_none()
    }
}

/// The error of a call on a closed database.
pub fn closed() -> cairn::Error {
    cairn::Error::Closed("the database was closed".into())
}
