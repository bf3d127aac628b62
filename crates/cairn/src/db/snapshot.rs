//! Snapshots: a sequence number pinned so compactions keep what it can see.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::types::SeqNo;

#[derive(Default)]
pub(crate) struct SnapshotList {
    seqs: Mutex<BTreeMap<SeqNo, usize>>,
}

impl SnapshotList {
    pub(crate) fn acquire(self: &Arc<Self>, seq: SeqNo) -> Snapshot {
        *self.seqs.lock().entry(seq).or_insert(0) += 1;
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
