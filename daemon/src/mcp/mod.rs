//! MCP servers (Model Context Protocol), owned by the daemon: the client is
//! the official SDK (`rmcp`); this module decides which processes run and
//! who uses them.
//!
//! The [`McpPool`] is daemon-wide: one server per [`ServerKey`] (its
//! config, the base dir and the caller's environment), shared by every
//! session naming it. A session holds a [`Lease`] on each of its servers
//! while it is in memory; a server is started on first use (the first run
//! of a session, or a call after it failed), stopped once no session has
//! held it for `mcp_idle_timeout_s`, and at shutdown. Stdio servers start
//! through `procs::mcp` (own process group, pid file for the next start to
//! clean up after a killed daemon). `session.rs` is a session's view: the
//! `mcp__<server>__<tool>` tools, calls with pins checked, results as
//! Swival shapes them (`result.rs`); `spec.rs` turns config into keys.

mod result;
mod server;
mod session;
pub mod spec;

pub use session::SessionMcp;
pub use spec::{ServerKey, ServerSpec};

use server::Server;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use swival_protocol::{DataFile, FileDigest, McpServerStatus};

/// How the pool runs servers.
#[derive(Debug, Clone)]
pub struct McpSettings {
    /// A server no session uses is stopped after this long.
    pub idle: Duration,
    /// Longest a tool call may take.
    pub call_timeout: Duration,
    /// Longest a server may take to start and list its tools.
    pub start_timeout: Duration,
    /// Where pid files of running stdio servers go.
    pub pid_dir: PathBuf,
}

/// Every MCP server of the daemon.
pub struct McpPool {
    /// Servers by key.
    servers: Mutex<HashMap<ServerKey, Arc<Server>>>,
    /// How they run.
    settings: McpSettings,
    /// Set at shutdown: nothing starts any more.
    stopped: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for McpPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpPool").field("settings", &self.settings).finish_non_exhaustive()
    }
}

/// A session's hold on one server; dropping it lets the server go idle.
pub struct Lease {
    /// The pool.
    pool: Arc<McpPool>,
    /// The server.
    server: Arc<Server>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("server", &self.server.key).finish()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool.release(&self.server);
    }
}

impl McpPool {
    /// A pool; kills the servers a killed daemon left behind first.
    pub fn new(settings: McpSettings) -> Arc<McpPool> {
        let reaped = crate::procs::mcp::reap_orphans(&settings.pid_dir);
        if reaped > 0 {
            tracing::warn!("killed {reaped} MCP server(s) left running by a previous daemon");
        }
        Arc::new(McpPool { servers: Mutex::default(), settings, stopped: Default::default() })
    }

    /// Hold the server of `key` (created, not started, when new).
    pub fn lease(self: &Arc<Self>, key: &ServerKey) -> Lease {
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        let server = servers.entry(key.clone()).or_insert_with(|| Arc::new(Server::new(key.clone()))).clone();
        server.users.fetch_add(1, Ordering::SeqCst);
        server.epoch.fetch_add(1, Ordering::SeqCst);
        Lease { pool: self.clone(), server }
    }

    /// A lease ended: when it was the last, stop the server after the idle time.
    fn release(self: &Arc<Self>, server: &Arc<Server>) {
        let epoch = {
            let _servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
            server.users.fetch_sub(1, Ordering::SeqCst);
            server.epoch.fetch_add(1, Ordering::SeqCst) + 1
        };
        if server.users.load(Ordering::SeqCst) > 0 {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            self.retire(server, epoch);
            return;
        };
        let (pool, server) = (self.clone(), server.clone());
        rt.spawn(async move {
            tokio::time::sleep(pool.settings.idle).await;
            pool.retire(&server, epoch);
        });
    }

    /// Stop and forget `server` if nobody took it since `epoch`.
    fn retire(&self, server: &Arc<Server>, epoch: u64) {
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        if server.users.load(Ordering::SeqCst) > 0 || server.epoch.load(Ordering::SeqCst) != epoch {
            return;
        }
        if servers.get(&server.key).is_some_and(|s| Arc::ptr_eq(s, server)) {
            servers.remove(&server.key);
        }
        drop(servers);
        server.stop();
        tracing::info!("MCP server '{}' stopped (idle)", server.key.name);
    }

    /// Stop every server (daemon shutdown).
    pub fn shutdown(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let servers: Vec<_> = self.servers.lock().unwrap_or_else(|p| p.into_inner()).drain().map(|(_, s)| s).collect();
        for s in servers {
            s.stop();
        }
    }

    /// Whether the daemon is stopping (no server may start).
    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Every server, as `mcp/status` shows them.
    pub fn status(&self) -> Vec<McpServerStatus> {
        let servers: Vec<_> = self.servers.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect();
        let mut out: Vec<_> = servers.iter().map(|s| status(s, &[], &[])).collect();
        out.sort_by(|a, b| (&a.name, &a.base_dir).cmp(&(&b.name, &b.base_dir)));
        out
    }
}

impl McpPool {
    /// The servers `specs` name (a session's), each with its pinned files.
    pub fn status_of(&self, specs: &[ServerSpec]) -> Vec<McpServerStatus> {
        let servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        let found: Vec<_> = specs.iter().map(|s| (s, servers.get(&s.key).cloned())).collect();
        drop(servers);
        found
            .into_iter()
            .map(|(spec, server)| {
                let server = server.unwrap_or_else(|| Arc::new(Server::new(spec.key.clone())));
                status(&server, &spec.pins, &spec.data)
            })
            .collect()
    }
}

/// One server's status; `pins` are its files as a session pinned them,
/// `data` the files it keeps its data in (protected inside the base dir).
fn status(server: &Server, pins: &[crate::procs::Pinned], data: &[std::path::PathBuf]) -> McpServerStatus {
    let conn = server.live();
    let name = &server.key.name;
    McpServerStatus {
        name: name.clone(),
        base_dir: server.key.base_dir.display().to_string(),
        transport: server.key.transport(),
        command: server.key.display(),
        running: conn.is_some(),
        pid: conn.as_ref().and_then(|c| c.pid),
        tools: conn
            .map(|c| {
                c.tools
                    .iter()
                    .filter_map(|t| t.get("name").and_then(serde_json::Value::as_str))
                    .map(|t| spec::namespaced(name, t))
                    .collect()
            })
            .unwrap_or_default(),
        sessions: server.users.load(Ordering::SeqCst) as u32,
        error: server.last_error.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        files: pins
            .iter()
            .map(|p| FileDigest { path: p.path.display().to_string(), sha256: p.sha256.clone() })
            .collect(),
        data_files: data
            .iter()
            .map(|p| DataFile { path: p.display().to_string(), protected: false, why_not: None })
            .collect(),
    }
}
