//! A client of the replicated key-value server: finds the leader (following 421 answers,
//! trying the other nodes when one does not answer) and retries until a deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use std::sync::Mutex;

use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::server::{NotLeader, Value, Written};
use crate::NodeId;

/// Why a request gave up.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No node accepted it before the deadline (the last failure).
    #[error("no leader answered within {waited:?}: {last}")]
    Timeout { waited: Duration, last: String },
    /// A node refused the request itself (not a leadership or network problem).
    #[error("HTTP {status}: {body}")]
    Refused { status: u16, body: String },
}

/// Talks to a cluster given its nodes' addresses.
pub struct KvClient {
    http: reqwest::Client,
    nodes: Vec<String>,
    leader: Leader,
    /// How long a request keeps trying.
    pub deadline: Duration,
}

/// The last known leader's address (shared by a client's requests).
#[derive(Default)]
struct Leader(Mutex<Option<String>>);

impl Leader {
    fn get(&self) -> Option<String> {
        self.0.lock().ok().and_then(|g| g.clone())
    }

    fn set(&self, addr: Option<String>) {
        if let Ok(mut g) = self.0.lock() {
            *g = addr;
        }
    }
}

enum Attempt<T> {
    Done(T),
    /// Try the leader named (or the next node).
    Elsewhere(Option<String>, String),
}

impl KvClient {
    /// A client of the nodes at `nodes` (`host:port`).
    pub fn new(nodes: Vec<String>) -> Self {
        KvClient {
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_millis(300))
                .timeout(Duration::from_secs(5))
                .build()
                .unwrap_or_default(),
            nodes,
            leader: Leader::default(),
            deadline: Duration::from_secs(20),
        }
    }

    /// Sets `key` to `value`; Ok once the write is committed and applied on the leader.
    pub async fn put(&self, key: &str, value: &str) -> Result<Written, ClientError> {
        let body = serde_json::json!({ "key": key, "value": value });
        self.on_leader(|c, addr| c.post_once(addr, "/kv/put", &body))
            .await
    }

    /// Removes `key`.
    pub async fn delete(&self, key: &str) -> Result<Written, ClientError> {
        let body = serde_json::json!({ "key": key });
        self.on_leader(|c, addr| c.post_once(addr, "/kv/delete", &body))
            .await
    }

    /// A linearizable read (on the leader).
    pub async fn get(&self, key: &str) -> Result<Option<String>, ClientError> {
        let q = [("key", key)];
        let v: Value = self
            .on_leader(|c, addr| c.get_once(addr, "/kv/get", &q))
            .await?;
        Ok(v.value)
    }

    /// The value `node` has applied (no leader involved; may be stale).
    pub async fn get_local(&self, node: &str, key: &str) -> Result<Option<String>, ClientError> {
        let q = [("key", key), ("local", "true")];
        match self.get_once::<Value>(node, "/kv/get", &q).await {
            Attempt::Done(r) => r.map(|v| v.value),
            Attempt::Elsewhere(_, why) => Err(ClientError::Timeout {
                waited: Duration::ZERO,
                last: why,
            }),
        }
    }

    /// Initialises a cluster of `members` (id to address) through `node`.
    pub async fn init(
        &self,
        node: &str,
        members: &BTreeMap<NodeId, String>,
    ) -> Result<serde_json::Value, ClientError> {
        once(
            self.post_once(node.to_string(), "/cluster/init", members)
                .await,
        )
    }

    /// Adds a learner (through the leader); with `blocking`, answers once it has caught up
    /// (within the client's request timeout of 5 s), else at once (watch its metrics).
    pub async fn add_learner(
        &self,
        id: NodeId,
        addr: &str,
        blocking: bool,
    ) -> Result<serde_json::Value, ClientError> {
        let body = serde_json::json!({ "id": id, "addr": addr, "blocking": blocking });
        self.on_leader(|c, a| c.post_once(a, "/cluster/add-learner", &body))
            .await
    }

    /// Makes `voters` the cluster's voters (through the leader).
    pub async fn change_membership(
        &self,
        voters: &BTreeSet<NodeId>,
    ) -> Result<serde_json::Value, ClientError> {
        self.on_leader(|c, a| c.post_once(a, "/cluster/change-membership", voters))
            .await
    }

    /// A node's Raft metrics (openraft's `RaftMetrics` as JSON).
    pub async fn metrics(&self, node: &str) -> Result<serde_json::Value, ClientError> {
        once(self.get_once(node, "/cluster/metrics", &[]).await)
    }

    /// Runs `f` on the leader (as far as known), following redirects and trying the
    /// other nodes until the deadline.
    async fn on_leader<'a, T, F, Fut>(&'a self, f: F) -> Result<T, ClientError>
    where
        F: Fn(&'a Self, String) -> Fut,
        Fut: std::future::Future<Output = Attempt<Result<T, ClientError>>>,
    {
        let start = Instant::now();
        let mut next = 0usize;
        loop {
            let addr = self.leader.get().unwrap_or_else(|| {
                next += 1;
                self.nodes[next % self.nodes.len().max(1)].clone()
            });
            match f(self, addr).await {
                Attempt::Done(r) => return r,
                Attempt::Elsewhere(leader, why) => {
                    self.leader.set(leader);
                    if start.elapsed() > self.deadline {
                        return Err(ClientError::Timeout {
                            waited: start.elapsed(),
                            last: why,
                        });
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn post_once<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        addr: String,
        path: &str,
        body: &B,
    ) -> Attempt<Result<T, ClientError>> {
        let req = self.http.post(format!("http://{addr}{path}")).json(body);
        answer(req.send().await, addr).await
    }

    async fn get_once<T: DeserializeOwned>(
        &self,
        addr: impl Into<String>,
        path: &str,
        query: &[(&str, &str)],
    ) -> Attempt<Result<T, ClientError>> {
        let addr = addr.into();
        let req = self.http.get(format!("http://{addr}{path}")).query(query);
        answer(req.send().await, addr).await
    }
}

fn once<T>(a: Attempt<Result<T, ClientError>>) -> Result<T, ClientError> {
    match a {
        Attempt::Done(r) => r,
        Attempt::Elsewhere(_, last) => Err(ClientError::Timeout {
            waited: Duration::ZERO,
            last,
        }),
    }
}

/// Reads one answer: a value, a redirect to the leader, or a reason to try elsewhere.
async fn answer<T: DeserializeOwned>(
    sent: reqwest::Result<reqwest::Response>,
    addr: String,
) -> Attempt<Result<T, ClientError>> {
    let resp = match sent {
        Ok(r) => r,
        Err(e) => return Attempt::Elsewhere(None, format!("{addr}: {e}")),
    };
    let status = resp.status();
    if status == StatusCode::MISDIRECTED_REQUEST {
        let hint: Option<NotLeader> = resp.json().await.ok();
        let leader = hint.and_then(|h| h.leader_addr);
        return Attempt::Elsewhere(leader, format!("{addr}: not the leader"));
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        let body = resp.text().await.unwrap_or_default();
        return Attempt::Elsewhere(None, format!("{addr}: unavailable: {body}"));
    }
    if !status.is_success() {
        let body = resp.text().await.unwrap_or_default();
        return Attempt::Done(Err(ClientError::Refused {
            status: status.as_u16(),
            body,
        }));
    }
    match resp.json().await {
        Ok(v) => Attempt::Done(Ok(v)),
        Err(e) => Attempt::Elsewhere(None, format!("{addr}: {e}")),
    }
}
