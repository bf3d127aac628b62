//! The Raft log and the vote in cairn (openraft's `RaftLogReader` and `RaftLogStorage`).

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use std::ops::ControlFlow;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogReader, StorageError, Vote};

use crate::engine::{BatchOp, Family};
use crate::keys::{log_index, log_key, COMMITTED, LAST_PURGED, LOG_END, VOTE};
use crate::store::{blocking, decode, encode, io_err, Shared};
use crate::{Entry, NodeId, TypeConfig};

/// A node's log, vote and committed log id. Clones share the database.
#[derive(Clone)]
pub struct LogStore {
    shared: Arc<Shared>,
}

impl LogStore {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        LogStore { shared }
    }

    /// Appends `entries` in one synced write and returns when they are durable: what
    /// `append` does, without openraft's callback (for tools and tests, which cannot make
    /// one).
    pub async fn append_durable(
        &mut self,
        entries: impl IntoIterator<Item = Entry>,
    ) -> Result<(), StorageError<NodeId>> {
        let mut ops = Vec::new();
        for entry in entries {
            let value =
                encode(&entry).map_err(|e| io_err(ErrorSubject::Logs, ErrorVerb::Write, &e))?;
            ops.push(BatchOp::Put(
                Family::Log,
                log_key(entry.log_id.index).to_vec(),
                value,
            ));
        }
        let s = self.shared.clone();
        blocking(move || s.write(ops, true, ErrorSubject::Logs)).await
    }
}

/// The entries with indexes in `[start, end)` (`end` None: to the last).
fn read_entries(
    s: &Shared,
    start: u64,
    end: Option<u64>,
) -> Result<Vec<Entry>, StorageError<NodeId>> {
    fn read_err(e: &(impl std::error::Error + 'static)) -> StorageError<NodeId> {
        io_err(ErrorSubject::Logs, ErrorVerb::Read, e)
    }
    if end.is_some_and(|e| e <= start) {
        return Ok(Vec::new());
    }
    let end_key = end.map(log_key);
    let mut out = Vec::new();
    let mut bad = None;
    s.engine
        .view()
        .scan(
            Family::Log,
            &log_key(start),
            end_key.as_ref().map(|k| k.as_slice()),
            &mut |k, v| match decode::<Entry>(v) {
                // The key is the entry's index: a mismatch is a damaged store.
                Ok(entry) if log_index(k) == Some(entry.log_id.index) => {
                    out.push(entry);
                    ControlFlow::Continue(())
                }
                Ok(entry) => {
                    bad = Some(format!(
                        "log key {k:?} holds the entry of index {}",
                        entry.log_id.index
                    ));
                    ControlFlow::Break(())
                }
                Err(e) => {
                    bad = Some(e.to_string());
                    ControlFlow::Break(())
                }
            },
        )
        .map_err(|e| read_err(&e))?;
    match bad {
        Some(why) => Err(read_err(&std::io::Error::other(why))),
        None => Ok(out),
    }
}

/// The last entry's log id, if the log holds one.
fn last_log_id(s: &Shared) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
    let err = |e: &(dyn std::error::Error + 'static)| {
        io_err(
            ErrorSubject::Logs,
            ErrorVerb::Read,
            &std::io::Error::other(e.to_string()),
        )
    };
    let Some((_, v)) = s.engine.view().last(Family::Log).map_err(|e| err(&e))? else {
        return Ok(None);
    };
    let entry: Entry = decode(&v).map_err(|e| err(&e))?;
    Ok(Some(entry.log_id))
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError<NodeId>> {
        let start = match range.start_bound() {
            Bound::Included(&x) => Some(x),
            Bound::Excluded(&x) => x.checked_add(1),
            Bound::Unbounded => Some(0),
        };
        let end = match range.end_bound() {
            Bound::Included(&x) => x.checked_add(1),
            Bound::Excluded(&x) => Some(x),
            Bound::Unbounded => None,
        };
        let Some(start) = start else {
            return Ok(Vec::new());
        };
        let s = self.shared.clone();
        blocking(move || read_entries(&s, start, end)).await
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let s = self.shared.clone();
        blocking(move || {
            let last_purged_log_id: Option<LogId<NodeId>> = s.meta_get(None, LAST_PURGED)?;
            let last_log_id = last_log_id(&s)?.or(last_purged_log_id);
            Ok(LogState {
                last_purged_log_id,
                last_log_id,
            })
        })
        .await
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let s = self.shared.clone();
        let vote = *vote;
        blocking(move || {
            let mut ops = Vec::new();
            s.meta_put(&mut ops, VOTE, &vote)?;
            // A vote must survive a crash before it is answered (Raft's safety).
            s.write(ops, true, ErrorSubject::Vote)
        })
        .await
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        let s = self.shared.clone();
        blocking(move || s.meta_get(None, VOTE)).await
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        let s = self.shared.clone();
        blocking(move || {
            let mut ops = Vec::new();
            s.meta_put(&mut ops, COMMITTED, &committed)?;
            // Not synced: a committed id lost in a crash is learned again from the leader.
            s.write(ops, false, ErrorSubject::Store)
        })
        .await
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        let s = self.shared.clone();
        blocking(move || {
            Ok(s.meta_get::<Option<LogId<NodeId>>>(None, COMMITTED)?
                .flatten())
        })
        .await
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        // One batch, synced: the entries are durable when the callback says so.
        let res = self.append_durable(entries).await;
        let io = res
            .as_ref()
            .map(|_| ())
            .map_err(|e| std::io::Error::other(e.to_string()));
        callback.log_io_completed(io);
        res
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let s = self.shared.clone();
        blocking(move || {
            let ops = vec![BatchOp::DeleteRange(
                Family::Log,
                log_key(log_id.index).to_vec(),
                LOG_END.to_vec(),
            )];
            s.write(ops, true, ErrorSubject::Logs)
        })
        .await
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let s = self.shared.clone();
        blocking(move || {
            let mut ops = Vec::new();
            // The purged id and the deletion land together: a reader never sees the id
            // without the deletion or entries below a purged id.
            s.meta_put(&mut ops, LAST_PURGED, &log_id)?;
            let end = log_id
                .index
                .checked_add(1)
                .map_or(LOG_END.to_vec(), |e| log_key(e).to_vec());
            ops.push(BatchOp::DeleteRange(Family::Log, log_key(0).to_vec(), end));
            s.write(ops, false, ErrorSubject::Logs)
        })
        .await
    }
}
