//! The replicated key-value state machine in cairn (openraft's `RaftStateMachine` and
//! `RaftSnapshotBuilder`).

use std::io::Cursor;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftSnapshotBuilder, SnapshotMeta,
    StorageError, StoredMembership,
};

use crate::engine::{BatchOp, EngineView, Family};
use crate::keys::{app_key, data_key, APPLIED, DATA_END, DATA_START, MEMBERSHIP};
use crate::snapshot::{self, SnapshotView, SnapshotWriter};
use crate::store::{blocking, Shared, StoreError};
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
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, crate::engine::EngineError> {
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
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, crate::engine::EngineError> {
        self.shared.engine.view().get(Family::Data, &data_key(key))
    }
}

/// One request's effect as a batch op; None when the engine refuses it (an oversized
/// key or value, a range whose start is after its end): it then changes nothing.
fn request_op(s: &Shared, req: Request) -> Option<BatchOp> {
    let op = match req {
        Request::Put { key, value } => BatchOp::Put(Family::Data, data_key(&key), value),
        Request::Delete { key } => BatchOp::Delete(Family::Data, data_key(&key)),
        Request::DeleteRange { start, end } => {
            BatchOp::DeleteRange(Family::Data, data_key(&start), data_key(&end))
        }
    };
    s.engine.accepts(&op).then_some(op)
}

/// Applies `entries` in one batch with the last applied log id (and the membership, when
/// an entry changes it): all of them land at once or none does.
fn apply_entries(s: &Shared, entries: Vec<Entry>) -> Result<Vec<Response>, StorageError<NodeId>> {
    let Some(last) = entries.last().map(|e| e.log_id) else {
        return Ok(Vec::new());
    };
    let mut ops = Vec::with_capacity(entries.len() + 2);
    let mut membership = None;
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let mut applied = true;
        match e.payload {
            EntryPayload::Blank => {}
            EntryPayload::Normal(req) => match request_op(s, req) {
                Some(op) => ops.push(op),
                None => applied = false,
            },
            EntryPayload::Membership(m) => membership = Some(Membership::new(Some(e.log_id), m)),
        }
        out.push(Response {
            index: e.log_id.index,
            refused: !applied,
        });
    }
    s.meta_put(&mut ops, APPLIED, &Some(last))?;
    if let Some(m) = &membership {
        s.meta_put(&mut ops, MEMBERSHIP, m)?;
    }
    // Not synced: the log is, and entries after the applied id are applied again.
    s.write(ops, false, ErrorSubject::StateMachine)?;
    Ok(out)
}

/// The applied state as `view` sees it.
fn applied_at(
    s: &Shared,
    view: &dyn EngineView,
) -> Result<(Option<LogId<NodeId>>, Membership), StorageError<NodeId>> {
    let applied = s
        .meta_get::<Option<LogId<NodeId>>>(Some(view), APPLIED)?
        .flatten();
    let membership = s.meta_get(Some(view), MEMBERSHIP)?.unwrap_or_default();
    Ok((applied, membership))
}

/// A snapshot error (what failed, and the snapshot if known).
fn snap_err(
    sig: Option<openraft::storage::SnapshotSignature<NodeId>>,
    verb: ErrorVerb,
    e: &(dyn std::error::Error + 'static),
) -> StorageError<NodeId> {
    StorageError::from(openraft::StorageIOError::new(
        ErrorSubject::Snapshot(sig),
        verb,
        openraft::AnyError::error(e.to_string()),
    ))
}

/// Builds a snapshot from a consistent view of the data and the applied state, and keeps
/// it as the current one.
fn build(s: &Shared, seq: u64) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
    let err = |e: &(dyn std::error::Error + 'static)| snap_err(None, ErrorVerb::Write, e);
    let view = s.engine.view();
    let (last_log_id, last_membership) = applied_at(s, view.as_ref())?;
    let snapshot_id = match last_log_id {
        Some(id) => format!("{}-{}-{seq}", id.leader_id, id.index),
        None => format!("--{seq}"),
    };
    let meta = SnapshotMeta {
        last_log_id,
        last_membership,
        snapshot_id,
    };
    let mut w = SnapshotWriter::new(&meta).map_err(|e| err(&e))?;
    let mut failed = None;
    view.scan(
        Family::Data,
        DATA_START,
        Some(DATA_END),
        &mut |k, v| match w.add(app_key(k), v) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        },
    )
    .map_err(|e| err(&e))?;
    if let Some(e) = failed {
        return Err(err(&e));
    }
    drop(view);
    let bytes = w.finish();
    snapshot::save(&s.snapshot_dir, &bytes).map_err(|e| err(&e))?;
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
    let bad = |e: &(dyn std::error::Error + 'static)| snap_err(sig.clone(), ErrorVerb::Write, e);
    let view = SnapshotView::parse(bytes).map_err(|e| bad(&e))?;
    let mut ops = vec![BatchOp::DeleteRange(
        Family::Data,
        DATA_START.to_vec(),
        DATA_END.to_vec(),
    )];
    for pair in view.pairs() {
        let (k, v) = pair.map_err(|e| bad(&e))?;
        ops.push(BatchOp::Put(Family::Data, data_key(k), v.to_vec()));
    }
    s.meta_put(&mut ops, APPLIED, &meta.last_log_id)?;
    s.meta_put(&mut ops, MEMBERSHIP, &meta.last_membership)?;
    s.write(ops, true, ErrorSubject::Snapshot(sig.clone()))?;
    snapshot::save(&s.snapshot_dir, bytes).map_err(|e| bad(&e))
}

/// The current snapshot, if one was built or installed.
fn current(s: &Shared) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
    let bad = |e: &(dyn std::error::Error + 'static)| snap_err(None, ErrorVerb::Read, e);
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
        blocking(move || applied_at(&s, s.engine.view().as_ref())).await
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
