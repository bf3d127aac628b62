//! Raft's messages between nodes: HTTP POSTs whose bodies are MessagePack, answered with
//! the remote node's `Result` (openraft's `RaftNetwork` over reqwest).

use std::time::Duration;

use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Node, NodeId, TypeConfig};

/// MessagePack, the body of every Raft message.
pub(crate) const MSGPACK: &str = "application/msgpack";

/// Makes a connection per peer; connections share one HTTP client (its pool).
#[derive(Clone)]
pub struct Network {
    http: reqwest::Client,
}

impl Network {
    pub fn new() -> Self {
        Network {
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_millis(500))
                .build()
                .unwrap_or_default(),
        }
    }
}

impl Default for Network {
    fn default() -> Self {
        Self::new()
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Connection;

    async fn new_client(&mut self, target: NodeId, node: &Node) -> Self::Network {
        Connection {
            http: self.http.clone(),
            base: format!("http://{}", node.addr),
            target,
        }
    }
}

/// One peer.
pub struct Connection {
    http: reqwest::Client,
    base: String,
    target: NodeId,
}

impl Connection {
    /// POSTs `req` to `path` and decodes the peer's `Result<Resp, E>`.
    async fn call<Req, Resp, E>(
        &self,
        path: &str,
        req: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, Node, E>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let net = |e: &(dyn std::error::Error + 'static)| {
            RPCError::Network(NetworkError::new(&openraft::AnyError::error(e.to_string())))
        };
        let body = rmp_serde::to_vec(req).map_err(|e| net(&e))?;
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .header(reqwest::header::CONTENT_TYPE, MSGPACK)
            .timeout(option.hard_ttl())
            .body(body)
            .send()
            .await
            .map_err(|e| net(&e))?;
        if !resp.status().is_success() {
            let status = resp.status();
            return Err(net(&std::io::Error::other(format!(
                "{path}: HTTP {status}"
            ))));
        }
        let bytes = resp.bytes().await.map_err(|e| net(&e))?;
        let answer: Result<Resp, E> = rmp_serde::from_slice(&bytes).map_err(|e| net(&e))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Connection {
    async fn append_entries(
        &mut self,
        req: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, Node, RaftError<NodeId>>> {
        self.call("/raft/append", &req, &option).await
    }

    async fn install_snapshot(
        &mut self,
        req: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, Node, RaftError<NodeId, InstallSnapshotError>>,
    > {
        self.call("/raft/snapshot", &req, &option).await
    }

    async fn vote(
        &mut self,
        req: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, Node, RaftError<NodeId>>> {
        self.call("/raft/vote", &req, &option).await
    }
}
