//! One pooled MCP server: its connection (the rmcp client service and,
//! for stdio, the process), started on first use and again after it
//! failed, and the sessions using it.

use super::spec::{Confined, Endpoint, ServerKey};
use crate::procs::mcp::{McpChild, McpLaunch};
use crate::procs::{Env, Pinned, Through};
use crate::sandbox::command::RunTempDir;
use crate::sandbox::ExecSpec;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::ServiceExt as _;
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Why a server has no connection to give.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// It exited since it was last used (its status, or how it ended).
    #[error("the server exited ({0})")]
    Exited(String),
    /// It did not answer `initialize` in time (seconds).
    #[error("no answer to initialize within {0}s")]
    Slow(f64),
    /// Its private TMPDIR could not be made.
    #[error("cannot create its temp directory: {0}")]
    TempDir(std::io::Error),
    /// Its sandbox plan could not be written for the helper.
    #[error("cannot describe its sandbox: {0}")]
    Plan(serde_json::Error),
    /// Its process could not be started.
    #[error("{0}")]
    Launch(crate::procs::ProcError),
    /// The MCP handshake failed (rmcp's words).
    #[error("initialize failed: {0}")]
    Initialize(String),
    /// Listing its tools failed (rmcp's words).
    #[error("tools/list failed: {0}")]
    ToolsList(String),
    /// Its configuration cannot work (said when it was read).
    #[error("{0}")]
    Broken(String),
    /// A configured HTTP header is not valid.
    #[error("header '{name}': {why}")]
    Header {
        /// The header's name.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// The HTTP client could not be made.
    #[error("cannot make an HTTP client: {0}")]
    Client(reqwest::Error),
}

/// A live connection to a server.
pub(super) struct Conn {
    /// The MCP client.
    service: RunningService<RoleClient, ()>,
    /// The process of a stdio server (its group dies with it).
    child: Mutex<Option<McpChild>>,
    /// Its pid.
    pub pid: Option<u32>,
    /// The tools it listed (each as its JSON).
    pub tools: Vec<Value>,
    /// The private TMPDIR of a confined server (removed when it stops).
    _tmp: Option<RunTempDir>,
}

impl Conn {
    /// Whether the connection is gone (the process exited, the transport closed).
    fn closed(&self) -> bool {
        let exited = self.child.lock().unwrap_or_else(|p| p.into_inner()).as_mut().is_some_and(McpChild::exited);
        exited || self.service.is_closed()
    }
}

/// Why a call failed.
#[derive(Debug)]
pub(super) enum CallError {
    /// The server answered with a JSON-RPC error (it still runs).
    Refused(String),
    /// The connection failed (the server exited or the transport broke);
    /// the next call starts it again.
    Failed(String),
    /// No answer within the call's timeout.
    Timeout(Duration),
    /// The run was cancelled.
    Cancelled,
}

/// One server in the pool.
pub(super) struct Server {
    /// What it is.
    pub key: ServerKey,
    /// Sessions holding a lease on it.
    pub users: AtomicUsize,
    /// Bumped whenever `users` changes: an idle stop planned at an
    /// older value is void.
    pub epoch: AtomicU64,
    /// The live connection, if any.
    conn: Mutex<Option<Arc<Conn>>>,
    /// Held while a connection is being started, so one start serves all.
    starting: tokio::sync::Mutex<()>,
    /// Why the last start or call failed.
    pub last_error: Mutex<Option<String>>,
}

impl Server {
    pub(super) fn new(key: ServerKey) -> Server {
        Server {
            key,
            users: AtomicUsize::new(0),
            epoch: AtomicU64::new(0),
            conn: Mutex::default(),
            starting: tokio::sync::Mutex::new(()),
            last_error: Mutex::default(),
        }
    }

    /// The live connection, if it still is. A dead one stays in place
    /// until a call reports it ([`Server::for_call`]) or a start replaces it.
    pub(super) fn live(&self) -> Option<Arc<Conn>> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner()).clone().filter(|c| !c.closed())
    }

    /// Stop the server (its process group is killed once no call holds it).
    pub(super) fn stop(&self) {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(conn) = conn {
            if let Some(child) = conn.child.lock().unwrap_or_else(|p| p.into_inner()).take() {
                drop(child);
            }
        }
    }

    fn failed(&self, why: &str) {
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.to_owned());
    }

    /// For a call: the live connection; an error once when the server
    /// exited since it was last used (the call that meets a crash reports
    /// it), and a fresh start after that.
    pub(super) async fn for_call(
        &self,
        pins: &[Pinned],
        pid_dir: &Path,
        timeout: Duration,
    ) -> Result<Arc<Conn>, StartError> {
        let dead = {
            let mut slot = self.conn.lock().unwrap_or_else(|p| p.into_inner());
            match slot.as_ref() {
                Some(c) if c.closed() => slot.take(),
                Some(c) => return Ok(c.clone()),
                None => None,
            }
        };
        if let Some(dead) = dead {
            let status = dead.child.lock().unwrap_or_else(|p| p.into_inner()).as_mut().and_then(McpChild::exit_status);
            drop(dead);
            let why = StartError::Exited(status.unwrap_or_else(|| "connection closed".to_owned()));
            self.failed(&why.to_string());
            return Err(why);
        }
        self.connect(pins, pid_dir, timeout).await
    }

    /// The connection, started when there is none (`pins` checked first).
    pub(super) async fn connect(
        &self,
        pins: &[Pinned],
        pid_dir: &Path,
        timeout: Duration,
    ) -> Result<Arc<Conn>, StartError> {
        if let Some(conn) = self.live() {
            return Ok(conn);
        }
        let _one = self.starting.lock().await;
        if let Some(conn) = self.live() {
            return Ok(conn);
        }
        let started = match tokio::time::timeout(timeout, self.start(pins, pid_dir)).await {
            Ok(r) => r,
            Err(_) => Err(StartError::Slow(timeout.as_secs_f64())),
        };
        match started {
            Ok(conn) => {
                let conn = Arc::new(conn);
                *self.conn.lock().unwrap_or_else(|p| p.into_inner()) = Some(conn.clone());
                *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = None;
                Ok(conn)
            }
            Err(why) => {
                self.failed(&why.to_string());
                Err(why)
            }
        }
    }

    async fn start(&self, pins: &[Pinned], pid_dir: &Path) -> Result<Conn, StartError> {
        let mut tmp = None;
        let (service, child) = match &self.key.endpoint {
            Endpoint::Stdio { argv, env, cwd, confined } => {
                let (env, through) = match confined {
                    None => (self.key.caller.script_env(env), None),
                    Some(c) => {
                        let dir = RunTempDir::create().map_err(StartError::TempDir)?;
                        let launch = confined_launch(c, argv, env, &dir.0)?;
                        tmp = Some(dir);
                        launch
                    }
                };
                let launch = McpLaunch { argv, cwd, env, through, pins, pid_dir };
                let (child, stdout, stdin) =
                    crate::procs::mcp::start(launch, &self.key.name).map_err(StartError::Launch)?;
                let service = ().serve((stdout, stdin)).await.map_err(|e| StartError::Initialize(e.to_string()))?;
                (service, Some(child))
            }
            Endpoint::Http { url, headers } => (http(url, headers).await?, None),
            Endpoint::Broken(why) => return Err(StartError::Broken(why.clone())),
        };
        let tools = service.peer().list_all_tools().await.map_err(|e| StartError::ToolsList(e.to_string()))?;
        let tools = tools.iter().filter_map(|t| serde_json::to_value(t).ok()).collect();
        let pid = child.as_ref().and_then(McpChild::pid);
        Ok(Conn { service, child: Mutex::new(child), pid, tools, _tmp: tmp })
    }

    /// Call `tool` on `conn` with `args`.
    pub(super) async fn call(
        &self,
        conn: Arc<Conn>,
        tool: &str,
        args: Map<String, Value>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        let peer = conn.service.peer().clone();
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let result = tokio::select! {
            r = peer.call_tool(params) => r,
            _ = tokio::time::sleep(timeout) => return Err(CallError::Timeout(timeout)),
            _ = cancel.cancelled() => return Err(CallError::Cancelled),
        };
        match result {
            Ok(result) => serde_json::to_value(result).map_err(|e| CallError::Refused(e.to_string())),
            Err(ServiceError::McpError(e)) => Err(CallError::Refused(e.message.to_string())),
            Err(e) => {
                let why = if conn.closed() { format!("the server exited ({e})") } else { e.to_string() };
                self.failed(&why);
                // Only this connection: another call may have started a new one.
                let mut slot = self.conn.lock().unwrap_or_else(|p| p.into_inner());
                if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                    *slot = None;
                }
                drop(slot);
                if let Some(child) = conn.child.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    drop(child);
                }
                Err(CallError::Failed(why))
            }
        }
    }
}

/// The environment and helper of a server under the command sandbox: the
/// session's plan with `tmp` writable, the commands' environment with
/// TMPDIR and the server's `env` over it.
fn confined_launch(
    c: &Confined,
    argv: &[String],
    env: &[(String, String)],
    tmp: &std::path::Path,
) -> Result<(Env, Option<Through>), StartError> {
    let mut plan = c.plan.clone();
    plan.write_dirs.push(tmp.to_owned());
    let program = std::path::PathBuf::from(argv.first().cloned().unwrap_or_default());
    let spec = serde_json::to_string(&ExecSpec { program, plan }).map_err(StartError::Plan)?;
    let mut vars = c.env.clone();
    vars.push(("TMPDIR".to_owned(), tmp.as_os_str().to_owned()));
    vars.extend(env.iter().map(|(k, v)| (k.clone(), v.into())));
    let through = Through { helper: c.helper.clone(), args: vec![crate::sandbox::EXEC_FLAG.to_owned(), spec] };
    Ok((Env::Exact(vars), Some(through)))
}

/// Connect to a streamable HTTP server.
async fn http(url: &str, headers: &[(String, String)]) -> Result<RunningService<RoleClient, ()>, StartError> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("authorization") {
            if let Some(token) = value.strip_prefix("Bearer ") {
                config = config.auth_header(token.to_owned());
                continue;
            }
        }
        let header = |why: String| StartError::Header { name: name.clone(), why };
        let n = http::HeaderName::from_bytes(name.as_bytes()).map_err(|e| header(e.to_string()))?;
        let v = http::HeaderValue::from_str(value).map_err(|e| header(e.to_string()))?;
        custom.insert(n, v);
    }
    let client = crate::tls::client_builder().build().map_err(StartError::Client)?;
    let transport = StreamableHttpClientTransport::with_client(client, config.custom_headers(custom));
    ().serve(transport).await.map_err(|e| StartError::Initialize(e.to_string()))
}
