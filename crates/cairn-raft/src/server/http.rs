//! A node's HTTP endpoints: Raft's messages between nodes (MessagePack), the key-value
//! API (JSON) and cluster management (JSON).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use openraft::error::{ClientWriteError, ForwardToLeader, RaftError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::network::MSGPACK;
use crate::{KvReader, Node, NodeId, Raft, Request};

/// What every handler reaches.
pub(crate) struct App {
    pub(crate) id: NodeId,
    pub(crate) raft: Raft,
    pub(crate) reader: KvReader,
}

/// The largest Raft message a node takes. axum's default (2 MB) refused openraft's
/// snapshot segments (3 MiB, in MessagePack up to twice that) once a state machine
/// outgrew it, and the leader resent the refused segment forever (a wiped node never
/// rejoined after 478,165 writes); an append carries up to 300 entries of up to the
/// client API's 2 MB each.
pub(crate) const RAFT_BODY_LIMIT: usize = 1 << 30;

pub(crate) fn router(app: Arc<App>) -> Router {
    let raft = Router::new()
        .route("/raft/append", post(raft_append))
        .route("/raft/vote", post(raft_vote))
        .route("/raft/snapshot", post(raft_snapshot))
        .layer(DefaultBodyLimit::max(RAFT_BODY_LIMIT));
    Router::new()
        .merge(raft)
        .route("/kv/put", post(kv_put))
        .route("/kv/delete", post(kv_delete))
        .route("/kv/get", get(kv_get))
        .route("/cluster/init", post(cluster_init))
        .route("/cluster/add-learner", post(cluster_add_learner))
        .route(
            "/cluster/change-membership",
            post(cluster_change_membership),
        )
        .route("/cluster/metrics", get(cluster_metrics))
        .with_state(app)
}

/// A MessagePack answer.
fn msgpack<T: Serialize>(value: &T) -> Response {
    match rmp_serde::to_vec(value) {
        Ok(b) => ([(header::CONTENT_TYPE, MSGPACK)], b).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

fn decode<T: DeserializeOwned>(body: &Bytes) -> Result<T, Response> {
    rmp_serde::from_slice(body)
        .map_err(|e| (StatusCode::BAD_REQUEST, format!("bad message: {e}")).into_response())
}

async fn raft_append(State(app): State<Arc<App>>, body: Bytes) -> Response {
    match decode(&body) {
        Ok(req) => msgpack(&app.raft.append_entries(req).await),
        Err(r) => r,
    }
}

async fn raft_vote(State(app): State<Arc<App>>, body: Bytes) -> Response {
    match decode(&body) {
        Ok(req) => msgpack(&app.raft.vote(req).await),
        Err(r) => r,
    }
}

async fn raft_snapshot(State(app): State<Arc<App>>, body: Bytes) -> Response {
    match decode(&body) {
        Ok(req) => msgpack(&app.raft.install_snapshot(req).await),
        Err(r) => r,
    }
}

/// Where the leader is, for a client that asked another node (HTTP 421).
#[derive(Debug, Serialize, Deserialize)]
pub struct NotLeader {
    pub leader_id: Option<NodeId>,
    pub leader_addr: Option<String>,
}

fn not_leader(f: &ForwardToLeader<NodeId, Node>) -> Response {
    let body = NotLeader {
        leader_id: f.leader_id,
        leader_addr: f.leader_node.as_ref().map(|n| n.addr.clone()),
    };
    (StatusCode::MISDIRECTED_REQUEST, Json(body)).into_response()
}

fn unavailable(e: impl std::fmt::Display) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response()
}

/// The answer to an acknowledged write.
#[derive(Debug, Serialize, Deserialize)]
pub struct Written {
    /// The log index it was committed and applied at.
    pub index: u64,
    /// The engine refused it (it changed nothing).
    pub refused: bool,
}

async fn write(app: &App, req: Request) -> Response {
    match app.raft.client_write(req).await {
        Ok(r) => Json(Written {
            index: r.data.index,
            refused: r.data.refused,
        })
        .into_response(),
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => not_leader(&f),
        Err(e) => unavailable(e),
    }
}

#[derive(Deserialize)]
struct PutBody {
    key: String,
    value: String,
}

async fn kv_put(State(app): State<Arc<App>>, Json(b): Json<PutBody>) -> Response {
    let req = Request::Put {
        key: b.key.into_bytes(),
        value: b.value.into_bytes(),
    };
    write(&app, req).await
}

#[derive(Deserialize)]
struct KeyBody {
    key: String,
}

async fn kv_delete(State(app): State<Arc<App>>, Json(b): Json<KeyBody>) -> Response {
    write(
        &app,
        Request::Delete {
            key: b.key.into_bytes(),
        },
    )
    .await
}

#[derive(Deserialize)]
struct GetQuery {
    key: String,
    /// Read this node's applied state without asking the leader (may be stale).
    #[serde(default)]
    local: bool,
}

/// A read's answer.
#[derive(Debug, Serialize, Deserialize)]
pub struct Value {
    pub value: Option<String>,
}

async fn kv_get(State(app): State<Arc<App>>, Query(q): Query<GetQuery>) -> Response {
    if !q.local {
        // Linearizable: the leader confirms it still leads and waits until it has
        // applied everything committed before the read.
        match app.raft.ensure_linearizable().await {
            Ok(_) => {}
            Err(RaftError::APIError(openraft::error::CheckIsLeaderError::ForwardToLeader(f))) => {
                return not_leader(&f)
            }
            Err(e) => return unavailable(e),
        }
    }
    let reader = app.reader.clone();
    let key = q.key.into_bytes();
    match tokio::task::spawn_blocking(move || reader.get(&key)).await {
        Ok(Ok(v)) => Json(Value {
            value: v.map(|v| String::from_utf8_lossy(&v).into_owned()),
        })
        .into_response(),
        Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn cluster_init(
    State(app): State<Arc<App>>,
    Json(nodes): Json<BTreeMap<NodeId, String>>,
) -> Response {
    let members: BTreeMap<NodeId, Node> = nodes
        .into_iter()
        .map(|(id, addr)| (id, Node { addr }))
        .collect();
    match app.raft.initialize(members).await {
        Ok(()) => Json(serde_json::json!({ "initialized": app.id })).into_response(),
        Err(e) => (StatusCode::CONFLICT, e.to_string()).into_response(),
    }
}

#[derive(Deserialize)]
struct LearnerBody {
    id: NodeId,
    addr: String,
    /// Answer only once the learner has caught up (a large state takes a while: a client
    /// may rather watch its metrics).
    #[serde(default)]
    blocking: bool,
}

async fn cluster_add_learner(State(app): State<Arc<App>>, Json(b): Json<LearnerBody>) -> Response {
    match app
        .raft
        .add_learner(b.id, Node { addr: b.addr }, b.blocking)
        .await
    {
        Ok(r) => Json(serde_json::json!({ "index": r.log_id.index })).into_response(),
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => not_leader(&f),
        Err(e) => unavailable(e),
    }
}

async fn cluster_change_membership(
    State(app): State<Arc<App>>,
    Json(voters): Json<BTreeSet<NodeId>>,
) -> Response {
    match app.raft.change_membership(voters, false).await {
        Ok(r) => Json(serde_json::json!({ "index": r.log_id.index })).into_response(),
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => not_leader(&f),
        Err(e) => unavailable(e),
    }
}

async fn cluster_metrics(State(app): State<Arc<App>>) -> Response {
    let m = app.raft.metrics().borrow().clone();
    Json(m).into_response()
}
