//! cairn-raft's own guarantees beyond openraft's suite: what was acknowledged survives a
//! reopen; apply lands its data and its applied id together; a snapshot moves the whole
//! state machine to another node; a request the engine refuses changes nothing.

use cairn_raft::{Entry, LogStore, Request, StateMachine};
use openraft::storage::{RaftLogStorage, RaftStateMachine};
use openraft::{CommittedLeaderId, EntryPayload, LogId, RaftLogReader, RaftSnapshotBuilder, Vote};

fn log_id(term: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, 0), index)
}

fn put(term: u64, index: u64, key: &str, value: &str) -> Entry {
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(Request::Put {
            key: key.into(),
            value: value.into(),
        }),
    }
}

async fn append(log: &mut LogStore, entries: Vec<Entry>) {
    log.append_durable(entries).await.unwrap();
}

fn get(sm: &StateMachine, key: &str) -> Option<String> {
    sm.get(key.as_bytes())
        .unwrap()
        .map(|v| String::from_utf8(v).unwrap())
}

#[tokio::test]
async fn what_was_acknowledged_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut log, mut sm) = cairn_raft::open(dir.path()).unwrap();
        log.save_vote(&Vote::new(3, 1)).await.unwrap();
        append(
            &mut log,
            (1..=5).map(|i| put(3, i, &format!("k{i}"), "v")).collect(),
        )
        .await;
        let entries = log.try_get_log_entries(1..=3).await.unwrap();
        sm.apply(entries).await.unwrap();
        log.purge(log_id(3, 2)).await.unwrap();
    }
    let (mut log, mut sm) = cairn_raft::open(dir.path()).unwrap();
    assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(3, 1)));
    let st = log.get_log_state().await.unwrap();
    assert_eq!(st.last_purged_log_id, Some(log_id(3, 2)));
    assert_eq!(st.last_log_id, Some(log_id(3, 5)));
    let left: Vec<u64> = log
        .try_get_log_entries(0..100)
        .await
        .unwrap()
        .iter()
        .map(|e| e.log_id.index)
        .collect();
    assert_eq!(left, vec![3, 4, 5]);
    let (applied, _) = sm.applied_state().await.unwrap();
    assert_eq!(applied, Some(log_id(3, 3)));
    assert_eq!(get(&sm, "k3").as_deref(), Some("v"));
    assert_eq!(get(&sm, "k4"), None);
}

#[tokio::test]
async fn a_snapshot_moves_the_whole_state_machine_and_replaces_what_was_there() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_, mut sm_a) = cairn_raft::open(a.path()).unwrap();
    let (_, mut sm_b) = cairn_raft::open(b.path()).unwrap();
    let mut entries: Vec<Entry> = (1..=200)
        .map(|i| put(1, i, &format!("k{i:03}"), "a"))
        .collect();
    entries.push(Entry {
        log_id: log_id(1, 201),
        payload: EntryPayload::Normal(Request::DeleteRange {
            start: b"k100".to_vec(),
            end: b"k150".to_vec(),
        }),
    });
    sm_a.apply(entries).await.unwrap();
    // b holds data of its own that the snapshot must remove.
    sm_b.apply(vec![put(1, 1, "stale", "b")]).await.unwrap();
    let snap = sm_a
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    assert_eq!(snap.meta.last_log_id, Some(log_id(1, 201)));
    sm_b.install_snapshot(&snap.meta, snap.snapshot)
        .await
        .unwrap();
    assert_eq!(get(&sm_b, "stale"), None);
    assert_eq!(get(&sm_b, "k099").as_deref(), Some("a"));
    assert_eq!(get(&sm_b, "k120"), None);
    assert_eq!(get(&sm_b, "k150").as_deref(), Some("a"));
    assert_eq!(sm_b.applied_state().await.unwrap().0, Some(log_id(1, 201)));
    // The installed snapshot is b's current one, across a reopen too.
    drop(sm_b);
    let (_, mut sm_b) = cairn_raft::open(b.path()).unwrap();
    let cur = sm_b.get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(cur.meta, snap.meta);
    assert_eq!(get(&sm_b, "k200").as_deref(), Some("a"));
}

#[tokio::test]
async fn a_damaged_snapshot_is_refused_and_changes_nothing() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_, mut sm_a) = cairn_raft::open(a.path()).unwrap();
    let (_, mut sm_b) = cairn_raft::open(b.path()).unwrap();
    sm_a.apply(vec![put(1, 1, "k", "a")]).await.unwrap();
    sm_b.apply(vec![put(1, 1, "mine", "b")]).await.unwrap();
    let snap = sm_a
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    let mut bytes = snap.snapshot.into_inner();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    let err = sm_b
        .install_snapshot(&snap.meta, Box::new(std::io::Cursor::new(bytes)))
        .await;
    assert!(err.is_err());
    assert_eq!(get(&sm_b, "mine").as_deref(), Some("b"));
    assert_eq!(get(&sm_b, "k"), None);
}

#[tokio::test]
async fn a_request_the_engine_refuses_changes_nothing_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut sm) = cairn_raft::open(dir.path()).unwrap();
    let out = sm
        .apply(vec![
            put(1, 1, "a", "1"),
            Entry {
                log_id: log_id(1, 2),
                payload: EntryPayload::Normal(Request::DeleteRange {
                    start: b"z".to_vec(),
                    end: b"a".to_vec(),
                }),
            },
            put(1, 3, "b", "2"),
        ])
        .await
        .unwrap();
    let refused: Vec<bool> = out.iter().map(|r| r.refused).collect();
    assert_eq!(refused, vec![false, true, false]);
    assert_eq!(get(&sm, "a").as_deref(), Some("1"));
    assert_eq!(get(&sm, "b").as_deref(), Some("2"));
    assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(1, 3)));
}
