//! The replicated key-value state machine in cairn (openraft's `RaftStateMachine` and
//! `RaftSnapshotBuilder`).

use std::io::Cursor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cairn::{ReadOptions, WriteBatch};
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftSnapshotBuilder, SnapshotMeta,
    StorageError, StoredMembership,
};

use crate::keys::{app_key, data_key, APPLIED, DATA_END, DATA_START, MEMBERSHIP};
use crate::snapshot::{self, SnapshotView, SnapshotWriter};
use crate::store::{blocking, decode, io_err, Shared, StoreError};
use crate::{Entry, Node, NodeId, Request, Response, TypeConfig};

/// The state machine: the data family, with its applied state in the meta family.
pub struct StateMachine {
    shared: Arc<Shared>,
    /// Makes each snapshot id unique on this node.
    snapshots: Arc<AtomicU64>,
}

type Membership = StoredMembership<NodeId, Node>;

impl StateMachine {
    pub(crate) fn new(shared: Arc<Shared>) -> Result<Self, StoreError> {
        Ok(StateMachine {
            shared,
            snapshots: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The value of `key` on this node (as far as it has applied the log).
    pub fn get(&self, key: &[u8]) -> cairn::Result<Option<Vec<u8>>> {
        self.reader().get(key)
    }

    /// A handle that reads the data after the state machine has moved into openraft.
    pub fn reader(&self) -> KvReader {
        KvReader {
            shared: self.shared.clone(),
        }
    }
}

/// Reads a node's replicated data (what it has applied so far).
#[derive(Clone)]
pub struct KvReader {
    shared: Arc<Shared>,
}

impl KvReader {
    /// The value of `key` on this node.
    pub fn get(&self, key: &[u8]) -> cairn::Result<Option<Vec<u8>>> {
        self.shared.db.get_cf(&self.shared.data, &data_key(key))
    }

    /// The database (statistics, options).
    pub fn db(&self) -> &cairn::Db {
        &self.shared.db
    }
}

/// Adds one request's effect to `b`; false when the engine refuses it (an oversized key
/// or value, a range whose start is after its end): it then changes nothing.
fn add_request(s: &Shared, b: &mut WriteBatch, req: &Request) -> bool {
    let cf = s.data.id();
    match req {
        Request::Put { key, value } => b.put_cf(cf, &data_key(key), value).is_ok(),
        Request::Delete { key } => b.delete_cf(cf, &data_key(key)).is_ok(),
        Request::DeleteRange { start, end } => b
            .delete_range_cf(cf, &data_key(start), &data_key(end))
            .is_ok(),
    }
}

/// Applies `entries` in one batch with the last applied log id (and the membership, when
/// an entry changes it): all of them land at once or none does.
fn apply_entries(s: &Shared, entries: Vec<Entry>) -> Result<Vec<Response>, StorageError<NodeId>> {
    let Some(last) = entries.last().map(|e| e.log_id) else {
        return Ok(Vec::new());
    };
    let mut b = WriteBatch::new();
    let mut membership = None;
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let mut applied = true;
        match e.payload {
            EntryPayload::Blank => {}
            EntryPayload::Normal(req) => applied = add_request(s, &mut b, &req),
            EntryPayload::Membership(m) => membership = Some(Membership::new(Some(e.log_id), m)),
        }
        out.push(Response {
            index: e.log_id.index,
            refused: !applied,
        });
    }
    s.meta_put(&mut b, APPLIED, &Some(last))?;
    if let Some(m) = &membership {
        s.meta_put(&mut b, MEMBERSHIP, m)?;
    }
    // Not synced: the log is, and entries after the applied id are applied again.
    s.write(b, false, ErrorSubject::StateMachine)?;
    Ok(out)
}

/// The applied state read at `ro`'s snapshot (or now).
fn applied_at(
    s: &Shared,
    ro: &ReadOptions,
) -> Result<(Option<LogId<NodeId>>, Membership), StorageError<NodeId>> {
    let read = |key: &'static [u8]| -> Result<Option<Vec<u8>>, StorageError<NodeId>> {
        s.db.get_opt(ro, &s.meta, key)
            .map_err(|e| io_err(ErrorSubject::StateMachine, ErrorVerb::Read, &e))
    };
    let decode_err =
        |e: rmp_serde::decode::Error| io_err(ErrorSubject::StateMachine, ErrorVerb::Read, &e);
    let applied = match read(APPLIED)? {
        Some(b) => decode::<Option<LogId<NodeId>>>(&b).map_err(decode_err)?,
        None => None,
    };
    let membership = match read(MEMBERSHIP)? {
        Some(b) => decode(&b).map_err(decode_err)?,
        None => Membership::default(),
    };
    Ok((applied, membership))
}

/// Builds a snapshot from a consistent view of the data and the applied state, and keeps
/// it as the current one.
fn build(s: &Shared, seq: u64) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
    let snap_err = |e: &(dyn std::error::Error + 'static)| {
        StorageError::from(openraft::StorageIOError::new(
            ErrorSubject::Snapshot(None),
            ErrorVerb::Write,
            openraft::AnyError::error(e.to_string()),
        ))
    };
    let view = ReadOptions {
        snapshot: Some(s.db.snapshot()),
        lower_bound: Some(DATA_START.to_vec()),
        upper_bound: Some(DATA_END.to_vec()),
        ..ReadOptions::default()
    };
    let (last_log_id, last_membership) = applied_at(s, &view)?;
    let snapshot_id = match last_log_id {
        Some(id) => format!("{}-{}-{seq}", id.leader_id, id.index),
        None => format!("--{seq}"),
    };
    let meta = SnapshotMeta {
        last_log_id,
        last_membership,
        snapshot_id,
    };
    let mut w = SnapshotWriter::new(&meta).map_err(|e| snap_err(&e))?;
    let mut it = s.db.iter(&view, &s.data).map_err(|e| snap_err(&e))?;
    it.seek(DATA_START);
    while it.valid() {
        w.add(app_key(it.key()), it.value())
            .map_err(|e| snap_err(&e))?;
        it.next();
    }
    it.status().map_err(|e| snap_err(&e))?;
    let bytes = w.finish();
    snapshot::save(&s.snapshot_dir, &bytes).map_err(|e| snap_err(&e))?;
    Ok(Snapshot {
        meta,
        snapshot: Box::new(Cursor::new(bytes)),
    })
}

/// Replaces the data with a snapshot's, with its applied state, in one synced write.
fn install(
    s: &Shared,
    meta: &SnapshotMeta<NodeId, Node>,
    bytes: &[u8],
) -> Result<(), StorageError<NodeId>> {
    let sig = Some(meta.signature());
    let bad = |e: &(dyn std::error::Error + 'static)| {
        StorageError::from(openraft::StorageIOError::new(
            ErrorSubject::Snapshot(sig.clone()),
            ErrorVerb::Write,
            openraft::AnyError::error(e.to_string()),
        ))
    };
    let view = SnapshotView::parse(bytes).map_err(|e| bad(&e))?;
    let mut b = WriteBatch::new();
    b.delete_range_cf(s.data.id(), DATA_START, DATA_END)
        .map_err(|e| bad(&e))?;
    for pair in view.pairs() {
        let (k, v) = pair.map_err(|e| bad(&e))?;
        b.put_cf(s.data.id(), &data_key(k), v)
            .map_err(|e| bad(&e))?;
    }
    s.meta_put(&mut b, APPLIED, &meta.last_log_id)?;
    s.meta_put(&mut b, MEMBERSHIP, &meta.last_membership)?;
    s.write(b, true, ErrorSubject::Snapshot(sig.clone()))?;
    snapshot::save(&s.snapshot_dir, bytes).map_err(|e| bad(&e))
}

/// The current snapshot, if one was built or installed.
fn current(s: &Shared) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
    let bad = |e: &(dyn std::error::Error + 'static)| {
        StorageError::from(openraft::StorageIOError::new(
            ErrorSubject::Snapshot(None),
            ErrorVerb::Read,
            openraft::AnyError::error(e.to_string()),
        ))
    };
    let Some(bytes) = snapshot::load(&s.snapshot_dir).map_err(|e| bad(&e))? else {
        return Ok(None);
    };
    let meta = SnapshotView::parse(&bytes).map_err(|e| bad(&e))?.meta;
    Ok(Some(Snapshot {
        meta,
        snapshot: Box::new(Cursor::new(bytes)),
    }))
}

/// Builds snapshots of one state machine.
pub struct SnapshotBuilder {
    shared: Arc<Shared>,
    seq: u64,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let (s, seq) = (self.shared.clone(), self.seq);
        blocking(move || build(&s, seq)).await
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, Membership), StorageError<NodeId>> {
        let s = self.shared.clone();
        blocking(move || applied_at(&s, &ReadOptions::default())).await
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        let s = self.shared.clone();
        blocking(move || apply_entries(&s, entries)).await
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder {
            shared: self.shared.clone(),
            seq: self.snapshots.fetch_add(1, Ordering::Relaxed) + 1,
        }
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<NodeId>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, Node>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<NodeId>> {
        let (s, meta) = (self.shared.clone(), meta.clone());
        let bytes = snapshot.into_inner();
        blocking(move || install(&s, &meta, &bytes)).await
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let s = self.shared.clone();
        blocking(move || current(&s)).await
    }
}
