//! The open engine behind every Python object that reads it (the `Db` and its column-family
//! views, snapshots, iterators). Calls run with the GIL released, and the lock is taken
//! only after the GIL is let go: a thread closing the database never waits on the lock
//! while holding the GIL that a reader needs to finish. Nothing here takes the lock with
//! the GIL held (`is_closed` reads a flag).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use cairn::Db;
use parking_lot::RwLock;
use pyo3::prelude::*;

use crate::errors::IntoPyResult;

/// The database, or `None` once closed.
pub struct Shared {
    db: RwLock<Option<Db>>,
    closed: AtomicBool,
    /// Where it lives (kept for `repr` after close).
    pub path: PathBuf,
}

impl Shared {
    pub fn new(db: Db, path: PathBuf) -> Self {
        Shared {
            db: RwLock::new(Some(db)),
            closed: AtomicBool::new(false),
            path,
        }
    }

    /// Runs `f` on the open database with the GIL released.
    pub fn with<R, F>(&self, py: Python<'_>, f: F) -> PyResult<R>
    where
        R: Send,
        F: FnOnce(&Db) -> cairn::Result<R> + Send,
    {
        py.detach(|| self.with_released(f)).py_err()
    }

    /// Runs `f` on the open database; the caller has released the GIL.
    pub fn with_released<R>(&self, f: impl FnOnce(&Db) -> cairn::Result<R>) -> cairn::Result<R> {
        match self.db.read().as_ref() {
            Some(db) => f(db),
            None => Err(closed()),
        }
    }

    /// Closes the database: waits for calls in flight, then syncs and releases it.
    /// Closing twice is a no-op.
    pub fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            self.closed.store(true, Ordering::SeqCst);
            let db = self.db.write().take();
            match db {
                Some(db) => db.close(),
                None => Ok(()),
            }
        })
        .py_err()
    }

    /// Whether `close` has begun.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Whether two objects read the same open database.
    pub fn same(&self, other: &Shared) -> bool {
        std::ptr::eq(self, other)
    }
}

/// The error of a call on a closed database.
pub fn closed() -> cairn::Error {
    cairn::Error::Closed("the database was closed".into())
}
