//! Fault injection for tests, in the manner of RocksDB's FaultInjectionTestFS: a layer
//! the storage environment consults on every operation (`Options::faults`).
//!
//! It does three things, all deterministic for one sequence of operations:
//! - **fails the Nth operation** of a kind (create, write, sync, rename, directory sync,
//!   read) with EIO or ENOSPC, tears a write in half (half the bytes reach the file), or
//!   reports EIO for an operation that took effect (`FaultError::IoPersisted`);
//! - **drops what a failed fsync covered**, as Linux does (the dirty pages are marked
//!   clean after a writeback error): a later fsync succeeds, and a power loss takes those
//!   bytes even when later ones stay;
//! - **cuts the power** after N more operations: from then on every operation fails;
//! - **remembers what is durable**: the length of each file at its last fsync, and whether
//!   its directory entry was synced since it was created or renamed. After the database is
//!   dropped, [`FaultInjector::apply_power_loss`] makes the directory look as a power loss
//!   would: unsynced bytes cut off, files whose entry was never synced removed, renames
//!   not followed by a directory sync undone.
//!
//! Files that existed before the injector saw them are taken as durable. Removals are
//! taken as durable at once (a removed file that comes back is at worst an orphan, which
//! recovery deletes).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::{Error, Result};

/// An operation the injector can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// Creating (or truncating) a file.
    Create,
    /// Bytes reaching a file.
    Write,
    /// fsync of a file.
    Sync,
    /// Renaming a file.
    Rename,
    /// fsync of a directory.
    DirSync,
    /// A read.
    Read,
}

/// How an injected failure looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// EIO.
    Io,
    /// ENOSPC (a full disk).
    NoSpace,
    /// Half the bytes are written, then EIO (only for writes; else as `Io`).
    TornWrite,
    /// EIO, though the operation took effect: a write's bytes reached the file, an
    /// fsync's bytes or a directory sync's entries are durable (as a device may report a
    /// failure after the data landed). For other operations, as `Io`.
    IoPersisted,
}

#[derive(Clone, Debug, Default)]
struct Tracked {
    len: u64,
    synced: u64,
    entry_durable: bool,
    /// Byte ranges a failed fsync dropped: Linux marks the dirty pages clean after a
    /// writeback error, so a later fsync succeeds without them and a power loss takes
    /// them even if later bytes stay (zeroed by `apply_power_loss`).
    dropped: Vec<(u64, u64)>,
}

#[derive(Default)]
struct State {
    counts: HashMap<FaultOp, u64>,
    /// (op, ordinal, error): fail when the op's count reaches the ordinal.
    planned: Vec<(FaultOp, u64, FaultError)>,
    /// (op, file-name suffix, ordinal, error): the same, counting only operations on files
    /// whose name ends with the suffix.
    planned_on: Vec<(FaultOp, String, u64, FaultError)>,
    /// Operations per (op, suffix) of `planned_on`, counted from when it was planned.
    counts_on: HashMap<(FaultOp, String), u64>,
    /// Mutating operations left before the power goes; `None`: no cut planned.
    power_left: Option<u64>,
    power_off: bool,
    files: HashMap<PathBuf, Tracked>,
    /// Renames not yet followed by a sync of their directory: (target, its durable bytes
    /// before the rename, or `None` if it did not exist).
    renames: Vec<(PathBuf, Option<Vec<u8>>)>,
    injected: u64,
}

/// See the module comment. Shared by the test and the database's storage environment.
#[derive(Default)]
pub struct FaultInjector {
    state: Mutex<State>,
}

impl std::fmt::Debug for FaultInjector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state.lock();
        f.debug_struct("FaultInjector")
            .field("power_off", &s.power_off)
            .field("injected", &s.injected)
            .finish_non_exhaustive()
    }
}

fn os_error(e: FaultError, what: &str) -> Error {
    let code = match e {
        FaultError::NoSpace => libc::ENOSPC,
        _ => libc::EIO,
    };
    Error::io(
        format!("{what} (injected fault)"),
        std::io::Error::from_raw_os_error(code),
    )
}

impl FaultInjector {
    /// An injector that fails nothing until told to.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fails the `n`th operation of kind `op` from now (1: the next one).
    pub fn fail_nth(&self, op: FaultOp, n: u64, err: FaultError) {
        let mut s = self.state.lock();
        let at = s.counts.get(&op).copied().unwrap_or(0) + n.max(1);
        s.planned.push((op, at, err));
    }

    /// Fails the `n`th operation of kind `op` from now on a file whose name ends with
    /// `suffix` (e.g. `.sst`: a table, written by flushes and compactions in background
    /// threads).
    pub fn fail_nth_on(&self, op: FaultOp, suffix: &str, n: u64, err: FaultError) {
        let mut s = self.state.lock();
        let key = (op, suffix.to_string());
        let at = s.counts_on.get(&key).copied().unwrap_or(0) + n.max(1);
        s.counts_on.entry(key).or_insert(0);
        s.planned_on.push((op, suffix.to_string(), at, err));
    }

    /// Cuts the power after `n` more mutating operations (creates, writes, syncs, renames,
    /// directory syncs): every operation after that fails with EIO.
    pub fn cut_power_after(&self, n: u64) {
        self.state.lock().power_left = Some(n);
    }

    /// Whether the power is off.
    pub fn power_is_off(&self) -> bool {
        self.state.lock().power_off
    }

    /// Faults injected so far (power-off refusals included).
    pub fn injected(&self) -> u64 {
        self.state.lock().injected
    }

    /// Operations of a kind seen so far.
    pub fn count(&self, op: FaultOp) -> u64 {
        self.state.lock().counts.get(&op).copied().unwrap_or(0)
    }

    /// Decides the fate of one operation on `path`.
    fn check(&self, op: FaultOp, path: &Path) -> std::result::Result<(), (FaultError, String)> {
        let mut s = self.state.lock();
        let what = format!("{op:?} {}", path.display());
        if s.power_off {
            s.injected += 1;
            return Err((FaultError::Io, format!("{what}: power is off")));
        }
        if op != FaultOp::Read {
            if let Some(left) = s.power_left.as_mut() {
                if *left == 0 {
                    s.power_off = true;
                    s.injected += 1;
                    return Err((FaultError::Io, format!("{what}: power is off")));
                }
                *left -= 1;
            }
        }
        let n = {
            let c = s.counts.entry(op).or_insert(0);
            *c += 1;
            *c
        };
        if let Some(i) = s.planned.iter().position(|&(o, at, _)| o == op && at == n) {
            let (_, _, e) = s.planned.swap_remove(i);
            s.injected += 1;
            return Err((e, what));
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let Some(name) = name else { return Ok(()) };
        let State {
            counts_on,
            planned_on,
            injected,
            ..
        } = &mut *s;
        for ((o, suffix), c) in counts_on.iter_mut() {
            if *o != op || !name.ends_with(suffix.as_str()) {
                continue;
            }
            *c += 1;
            if let Some(i) = planned_on
                .iter()
                .position(|(po, ps, at, _)| *po == op && ps == suffix && *at == *c)
            {
                let (_, _, _, e) = planned_on.swap_remove(i);
                *injected += 1;
                return Err((e, what));
            }
        }
        Ok(())
    }

    pub(crate) fn on_create(&self, path: &Path) -> Result<()> {
        self.check(FaultOp::Create, path)
            .map_err(|(e, w)| os_error(e, &w))?;
        self.state
            .lock()
            .files
            .insert(path.to_path_buf(), Tracked::default());
        Ok(())
    }

    /// Before `len` bytes are written to `path`: `Ok(None)` writes them all, `Ok(Some(k))`
    /// writes only the first `k` and then fails (a torn write).
    pub(crate) fn on_write(&self, path: &Path, len: usize) -> Result<Option<usize>> {
        match self.check(FaultOp::Write, path) {
            Ok(()) => Ok(None),
            Err((FaultError::TornWrite, _)) => Ok(Some(len / 2)),
            Err((FaultError::IoPersisted, _)) => Ok(Some(len)),
            Err((e, w)) => Err(os_error(e, &w)),
        }
    }

    /// `n` bytes reached `path`.
    pub(crate) fn wrote(&self, path: &Path, n: u64) {
        if let Some(t) = self.state.lock().files.get_mut(path) {
            t.len += n;
        }
    }

    /// `path` was cut back to `len` bytes.
    pub(crate) fn truncated(&self, path: &Path, len: u64) {
        if let Some(t) = self.state.lock().files.get_mut(path) {
            t.len = t.len.min(len);
            t.synced = t.synced.min(len);
            t.dropped.retain(|&(from, _)| from < len);
        }
    }

    /// The error a torn write ends with.
    pub(crate) fn torn(&self, path: &Path) -> Error {
        os_error(FaultError::Io, &format!("torn write {}", path.display()))
    }

    pub(crate) fn on_sync(&self, path: &Path) -> Result<()> {
        let r = self.check(FaultOp::Sync, path);
        let mut s = self.state.lock();
        let Some(t) = s.files.get_mut(path) else {
            return r.map_err(|(e, w)| os_error(e, &w));
        };
        match r {
            Ok(()) | Err((FaultError::IoPersisted, _)) => t.synced = t.len,
            Err(_) if t.len > t.synced => t.dropped.push((t.synced, t.len)),
            Err(_) => {}
        }
        r.map_err(|(e, w)| os_error(e, &w))
    }

    pub(crate) fn on_rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.check(FaultOp::Rename, to)
            .map_err(|(e, w)| os_error(e, &w))?;
        let mut s = self.state.lock();
        // What `to` holds durably now, to restore if the rename is lost.
        let old = match s.files.get(to) {
            Some(t) if !t.entry_durable => None,
            Some(t) => std::fs::read(to).ok().map(|mut b| {
                b.truncate(t.synced as usize);
                b
            }),
            None => std::fs::read(to).ok(),
        };
        s.renames.push((to.to_path_buf(), old));
        if let Some(mut t) = s.files.remove(from) {
            t.entry_durable = false;
            s.files.insert(to.to_path_buf(), t);
        } else {
            // An untracked (durable) file under a new name: its bytes are synced.
            let len = std::fs::metadata(from).map(|m| m.len()).unwrap_or(0);
            s.files.insert(
                to.to_path_buf(),
                Tracked {
                    len,
                    synced: len,
                    ..Default::default()
                },
            );
        }
        Ok(())
    }

    pub(crate) fn on_dir_sync(&self, dir: &Path) -> Result<()> {
        match self.check(FaultOp::DirSync, dir) {
            Ok(()) => {}
            Err((FaultError::IoPersisted, w)) => {
                self.dir_synced(dir);
                return Err(os_error(FaultError::Io, &w));
            }
            Err((e, w)) => return Err(os_error(e, &w)),
        }
        self.dir_synced(dir);
        Ok(())
    }

    fn dir_synced(&self, dir: &Path) {
        let mut s = self.state.lock();
        for (p, t) in s.files.iter_mut() {
            if p.parent() == Some(dir) {
                t.entry_durable = true;
            }
        }
        s.renames.retain(|(p, _)| p.parent() != Some(dir));
    }

    pub(crate) fn on_read(&self, path: &Path) -> Result<()> {
        self.check(FaultOp::Read, path)
            .map_err(|(e, w)| os_error(e, &w))
    }

    pub(crate) fn on_remove(&self, path: &Path) {
        self.state.lock().files.remove(path);
    }

    /// Makes the files on disk what a power loss at the cut would have left (see the
    /// module comment), then forgets what it tracked and turns the power back on. Call it
    /// after the database is dropped.
    pub fn apply_power_loss(&self) -> std::io::Result<()> {
        let mut s = self.state.lock();
        for (to, old) in std::mem::take(&mut s.renames).into_iter().rev() {
            match old {
                Some(bytes) => std::fs::write(&to, bytes)?,
                None => match std::fs::remove_file(&to) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                },
            }
            s.files.remove(&to);
        }
        for (path, t) in std::mem::take(&mut s.files) {
            if !path.exists() {
                continue;
            }
            if !t.entry_durable {
                std::fs::remove_file(&path)?;
                continue;
            }
            let f = std::fs::OpenOptions::new().write(true).open(&path)?;
            if f.metadata()?.len() > t.synced {
                f.set_len(t.synced)?;
            }
            for &(from, to) in &t.dropped {
                let to = to.min(t.synced);
                if from < to {
                    use std::os::unix::fs::FileExt;
                    f.write_all_at(&vec![0; (to - from) as usize], from)?;
                }
            }
        }
        s.power_off = false;
        s.power_left = None;
        s.planned.clear();
        Ok(())
    }
}
