//! [`Client`]: one connection to swivald speaking WebSocket JSON-RPC over the
//! Unix socket, with a typed method per protocol call.

use jsonrpsee::async_client::{Client as RpcClient, ClientBuilder};
use jsonrpsee::client_transport::ws::WsTransportClientBuilder;
use jsonrpsee::core::client::{ClientT, Error as RpcError, Subscription, SubscriptionClientT};
use jsonrpsee::core::traits::ToRpcParams;
use serde::Serialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use swival_protocol::methods::{typed as m, NoParams};
use swival_protocol::{
    methods, ConfigResolveParams, ConfigResolveResult, DaemonStatus, ErrorCode, Event, InitializeParams,
    InitializeResult, PeerInfo, RunId, RunRef, RunResult, RunStartParams, Seq, SessionCreateParams,
    SessionCreateResult, SessionDetail, SessionId, SessionListResult, SessionRef, SubscribeParams, PROTOCOL_VERSION,
};
use tokio::net::UnixStream;

/// Largest message the client sends or accepts (the daemon's default).
const MAX_MESSAGE: u32 = 16 * 1024 * 1024;

/// What can go wrong talking to the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens on the socket (no file, or a stale one).
    #[error("no swivald is running on {path}")]
    NoDaemon { path: PathBuf },
    /// The socket exists but connecting failed for another reason.
    #[error("cannot connect to swivald on {path}: {source}")]
    Connect { path: PathBuf, source: std::io::Error },
    /// The WebSocket handshake over the socket failed.
    #[error("swivald on {path} did not accept the connection: {message}")]
    Handshake { path: PathBuf, message: String },
    /// The daemon answered with a JSON-RPC error.
    #[error("{message}")]
    Rpc {
        code: i32,
        message: String,
        kind: Option<ErrorCode>,
        /// The error's `data` member, when the daemon sent one.
        data: Option<swival_protocol::ErrorData>,
    },
    /// The connection broke or a reply could not be decoded.
    #[error("talking to swivald failed: {0}")]
    Transport(String),
    /// Starting a daemon failed; the message says why.
    #[error("{0}")]
    StartFailed(String),
    /// The command line lacks something; the message says what.
    #[error("{0}")]
    Usage(String),
}

impl From<RpcError> for ClientError {
    fn from(e: RpcError) -> Self {
        match e {
            RpcError::Call(obj) => ClientError::Rpc {
                code: obj.code(),
                message: obj.message().to_owned(),
                kind: ErrorCode::from_code(obj.code()),
                data: obj.data().and_then(|d| serde_json::from_str(d.get()).ok()),
            },
            other => ClientError::Transport(other.to_string()),
        }
    }
}

/// Params sent by name: one JSON object, serialized before the call.
struct Named(Box<RawValue>);

impl Named {
    fn new<T: Serialize>(params: &T) -> Result<Named, ClientError> {
        serde_json::value::to_raw_value(params)
            .map(Named)
            .map_err(|e| ClientError::Transport(format!("cannot encode params: {e}")))
    }
}

impl ToRpcParams for Named {
    fn to_rpc_params(self) -> Result<Option<Box<RawValue>>, serde_json::Error> {
        Ok(Some(self.0))
    }
}

/// A connection to swivald.
pub struct Client {
    /// jsonrpsee's client over the WebSocket-over-Unix-socket transport.
    rpc: RpcClient,
    /// The socket it is connected to.
    path: PathBuf,
}

impl Client {
    /// Connect to the daemon on `path` and complete the WebSocket handshake.
    pub async fn connect(path: &Path) -> Result<Client, ClientError> {
        let stream = UnixStream::connect(path).await.map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
                ClientError::NoDaemon { path: path.to_owned() }
            }
            _ => ClientError::Connect { path: path.to_owned(), source },
        })?;
        let url = url::Url::parse("ws://localhost/").expect("static url");
        let (tx, rx) = WsTransportClientBuilder::default()
            .max_request_size(MAX_MESSAGE)
            .max_response_size(MAX_MESSAGE)
            .build_with_stream(url, stream)
            .await
            .map_err(|e| ClientError::Handshake { path: path.to_owned(), message: e.to_string() })?;
        let rpc = ClientBuilder::default()
            // Calls like run/wait legitimately last as long as a run.
            .request_timeout(Duration::from_secs(7 * 24 * 3600))
            .max_buffer_capacity_per_subscription(4096)
            .build_with_tokio(tx, rx);
        Ok(Client { rpc, path: path.to_owned() })
    }

    /// The socket this client is connected to.
    pub fn socket(&self) -> &Path {
        &self.path
    }

    /// Call the method `M` (declared once in the protocol crate) with its
    /// params type sent by name, decoding its result type: the only way
    /// this client calls the daemon.
    pub async fn request<M: methods::Method>(&self, params: &M::Params) -> Result<M::Result, ClientError> {
        Ok(self.rpc.request(M::NAME, Named::new(params)?).await?)
    }

    /// Open the subscription `S` (declared with its notification and
    /// closing method in the protocol crate); its notifications arrive as
    /// its result type.
    pub async fn subscribe<S: methods::Subscribe>(
        &self,
        params: &S::Params,
    ) -> Result<Subscription<S::Result>, ClientError> {
        use methods::Method;
        Ok(self.rpc.subscribe(S::NAME, Named::new(params)?, <S::Unsubscribe as Method>::NAME).await?)
    }

    /// `initialize` as this library.
    pub async fn initialize(&self, client_name: &str) -> Result<InitializeResult, ClientError> {
        let params = InitializeParams {
            client: PeerInfo { name: client_name.into(), version: env!("CARGO_PKG_VERSION").into() },
            protocol_version: PROTOCOL_VERSION,
        };
        self.request::<m::Initialize>(&params).await
    }

    /// `daemon/status`.
    pub async fn status(&self) -> Result<DaemonStatus, ClientError> {
        self.request::<m::DaemonStatusMethod>(&NoParams).await
    }

    /// `daemon/shutdown`. A connection closed by the stopping daemon
    /// before its reply arrived counts as success.
    pub async fn shutdown(&self) -> Result<(), ClientError> {
        match self.request::<m::DaemonShutdown>(&NoParams).await {
            Ok(_) | Err(ClientError::Transport(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `session/create`.
    pub async fn create_session(&self, params: &SessionCreateParams) -> Result<SessionCreateResult, ClientError> {
        self.request::<m::SessionCreate>(params).await
    }

    /// `session/list`.
    pub async fn list_sessions(&self) -> Result<SessionListResult, ClientError> {
        self.request::<m::SessionList>(&NoParams).await
    }

    /// `session/get`.
    pub async fn session(&self, session_id: &SessionId) -> Result<SessionDetail, ClientError> {
        self.request::<m::SessionGet>(&SessionRef { session_id: session_id.clone() }).await
    }

    /// `run/start`; `env` is the caller's environment for this run on
    /// (`None`: the one the session holds); `client_token` comes back in
    /// the run's `run_started`.
    pub async fn start_run(
        &self,
        session_id: &SessionId,
        task: &str,
        env: Option<BTreeMap<String, String>>,
        client_token: Option<String>,
    ) -> Result<RunId, ClientError> {
        let params = RunStartParams {
            session_id: session_id.clone(),
            task: task.to_owned(),
            env,
            client_token,
            resume: false,
            cancel_on_disconnect: false,
            inbox: false,
        };
        self.start(&params).await
    }

    /// `run/start` with every param the caller's.
    pub async fn start(&self, params: &RunStartParams) -> Result<RunId, ClientError> {
        Ok(self.request::<m::RunStart>(params).await?.run_id)
    }

    /// `run/cancel`.
    pub async fn cancel_run(&self, run_id: &RunId) -> Result<bool, ClientError> {
        let r = self.request::<m::RunCancel>(&RunRef { run_id: run_id.clone() }).await?;
        Ok(r.cancelled)
    }

    /// `run/approve`: answer a run's `approval_requested`; false when it
    /// no longer waits.
    pub async fn approve(
        &self,
        session_id: &SessionId,
        approval_id: &str,
        decision: swival_protocol::ApprovalDecision,
    ) -> Result<bool, ClientError> {
        let params = swival_protocol::ApproveParams {
            session_id: session_id.clone(),
            approval_id: approval_id.to_owned(),
            decision,
        };
        let r = self.request::<m::RunApprove>(&params).await?;
        Ok(r.accepted)
    }

    /// `buffers/serve`: this client answers the session's file reads
    /// from its buffers while the subscription lives.
    pub async fn serve_buffers(
        &self,
        session_id: &SessionId,
    ) -> Result<Subscription<swival_protocol::BufferRead>, ClientError> {
        let params = SessionRef { session_id: session_id.clone() };
        self.subscribe::<m::BuffersServe>(&params).await
    }

    /// `buffers/respond`: a buffer's text (`None`: read the disk).
    pub async fn respond_buffer(&self, request_id: &str, text: Option<String>) -> Result<bool, ClientError> {
        let params = swival_protocol::BufferRespondParams { request_id: request_id.to_owned(), text };
        let r = self.request::<m::BuffersRespond>(&params).await?;
        Ok(r.accepted)
    }

    /// `run/wait`.
    pub async fn wait_run(&self, run_id: &RunId) -> Result<RunResult, ClientError> {
        self.request::<m::RunWait>(&RunRef { run_id: run_id.clone() }).await
    }

    /// `report/get`.
    pub async fn report(&self, run_id: &RunId) -> Result<swival_protocol::Report, ClientError> {
        self.request::<m::ReportGet>(&RunRef { run_id: run_id.clone() }).await
    }

    /// `config/resolve`.
    pub async fn resolve_config(&self, params: &ConfigResolveParams) -> Result<ConfigResolveResult, ClientError> {
        self.request::<m::ConfigResolve>(params).await
    }

    /// `session/subscribe` from `from_seq` (1 = everything stored).
    pub async fn subscribe_events(
        &self,
        session_id: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription<Event>, ClientError> {
        let params = SubscribeParams { session_id: session_id.clone(), from_seq: Some(Seq(from_seq)) };
        self.subscribe::<m::SessionSubscribe>(&params).await
    }

    /// `policy/check`.
    pub async fn policy_check(
        &self,
        params: &swival_protocol::PolicyCheckParams,
    ) -> Result<swival_protocol::PolicyCheckResult, ClientError> {
        self.request::<m::PolicyCheck>(params).await
    }

    /// `project/trust`.
    pub async fn trust_project(
        &self,
        params: &swival_protocol::ProjectTrustParams,
    ) -> Result<swival_protocol::ProjectTrustResult, ClientError> {
        self.request::<m::ProjectTrust>(params).await
    }

    /// `policy/status`.
    pub async fn policy_status(&self, session_id: &SessionId) -> Result<swival_protocol::PolicyStatus, ClientError> {
        self.request::<m::PolicyStatusMethod>(&SessionRef { session_id: session_id.clone() }).await
    }

    /// Whether the connection is still up.
    pub fn is_connected(&self) -> bool {
        self.rpc.is_connected()
    }
}
