//! Snapshots: a sequence number pinned so compactions keep what it can see.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::types::SeqNo;

#[derive(Default)]
pub(crate) struct SnapshotList {
    seqs: Mutex<BTreeMap<SeqNo, usize>>,
    /// Runs once, inside the next `acquire`, between reading the sequence number and
    /// registering it (tests interleave a flush there).
    #[cfg(test)]
    pub(crate) hook: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl SnapshotList {
    /// Takes a snapshot of the latest acknowledged write. The sequence number is read with
    /// the list locked: a flush or compaction that reads the list (`all`) either sees the
    /// new snapshot or ran wholly before its number was read, so it kept every version
    /// the snapshot can see. Read before the lock, a job could drop such a version in
    /// between.
    pub(crate) fn acquire(self: &Arc<Self>, last_seq: &AtomicU64) -> Snapshot {
        let mut seqs = self.seqs.lock();
        let seq = last_seq.load(Ordering::Acquire);
        #[cfg(test)]
        if let Some(hook) = self.hook.lock().take() {
            hook();
        }
        *seqs.entry(seq).or_insert(0) += 1;
        drop(seqs);
        Snapshot {
            inner: Arc::new(SnapshotInner {
                seq,
                list: Arc::downgrade(self),
            }),
        }
    }

    /// Live snapshot sequence numbers, ascending.
    pub(crate) fn all(&self) -> Vec<SeqNo> {
        self.seqs.lock().keys().copied().collect()
    }

    fn release(&self, seq: SeqNo) {
        let mut m = self.seqs.lock();
        if let Some(c) = m.get_mut(&seq) {
            *c -= 1;
            if *c == 0 {
                m.remove(&seq);
            }
        }
    }
}

struct SnapshotInner {
    seq: SeqNo,
    list: Weak<SnapshotList>,
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        if let Some(l) = self.list.upgrade() {
            l.release(self.seq);
        }
    }
}

/// A consistent view of the database at one moment; released when the last clone drops.
/// Reads through [`crate::ReadOptions::snapshot`] see exactly the writes acknowledged
/// before it was taken.
#[derive(Clone)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

impl Snapshot {
    /// The snapshot's sequence number.
    pub fn seq(&self) -> SeqNo {
        self.inner.seq
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Snapshot({})", self.inner.seq)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use parking_lot::Mutex;

    use crate::{Db, Options, ReadOptions, WriteOptions};

    /// A flush that runs while a snapshot is being taken keeps the versions the snapshot
    /// sees. Before the sequence number was read under the list's lock, the flush ran in
    /// the gap, kept only the newest version, and the snapshot read the new value.
    #[test]
    fn a_flush_racing_a_snapshot_keeps_its_versions() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            background_work: false,
            ..Default::default()
        };
        let db = std::sync::Arc::new(Db::open(dir.path(), opts).unwrap());
        let wo = WriteOptions::default();
        db.put(&wo, b"k", b"old").unwrap();
        let racer = db.clone();
        let thread = std::sync::Arc::new(Mutex::new(None));
        let slot = thread.clone();
        *db.inner.snapshots.hook.lock() = Some(Box::new(move || {
            let (tx, rx) = mpsc::channel();
            let t = std::thread::spawn(move || {
                racer.put(&WriteOptions::default(), b"k", b"new").unwrap();
                racer.flush().unwrap();
                let _ = tx.send(());
            });
            // Long enough for the flush to finish, unless it waits for this snapshot.
            let _ = rx.recv_timeout(Duration::from_millis(500));
            *slot.lock() = Some(t);
        }));
        let snap = db.snapshot();
        thread.lock().take().unwrap().join().unwrap();
        let ro = ReadOptions {
            snapshot: Some(snap),
            ..Default::default()
        };
        let got = db.get_opt(&ro, &db.default_cf(), b"k").unwrap();
        assert_eq!(got.as_deref(), Some(&b"old"[..]));
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"new"[..]));
    }
}
