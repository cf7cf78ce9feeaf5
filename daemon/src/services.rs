//! The daemon-wide services, one of each, made at start (`server.rs`) and
//! handed to whoever uses them: the sessions, whose runs use them all, and
//! the RPC handlers that serve one directly (`mcp/status`, `cache/stats`,
//! `cache/clear`, `hooks/*`, `buffers/*`, `run/approve`). Each service is
//! its own module's type behind an `Arc`, with its own API; this struct
//! only carries them, so no handler goes through the sessions to reach a
//! service that is not about sessions. (`service.rs` is something else:
//! the service manager, systemd or launchd.)

use crate::cache::LazyCache;
use crate::changes::Changes;
use crate::editor::EditorBuffers;
use crate::mcp::McpPool;
use crate::pipeline::hooks::rpc::HookRegistry;
use crate::procs::ProcessRunner;
use crate::sandbox::ask::Approvals;
use crate::store::Store;
use std::sync::Arc;

/// The daemon-wide services.
#[derive(Clone)]
pub struct Services {
    /// The database.
    pub store: Arc<Store>,
    /// Runs policy scripts, the command provider and the model's commands.
    pub runner: Arc<ProcessRunner>,
    /// The daemon's MCP servers.
    pub mcp: Arc<McpPool>,
    /// Client hooks (`hooks/register`).
    pub hooks: Arc<HookRegistry>,
    /// Questions runs wait on (`commands = "ask"`, `run/approve`).
    pub approvals: Arc<Approvals>,
    /// Editors serving sessions' reads from their buffers (`buffers/serve`).
    pub buffers: Arc<EditorBuffers>,
    /// The response cache, opened on first use.
    pub cache: Arc<LazyCache>,
    /// The projects' snapshot stores (what runs changed); `None` when
    /// `snapshots = false`.
    pub changes: Option<Arc<Changes>>,
}

impl Services {
    /// Stop the services that run processes (policy script workers, MCP
    /// servers), once shutdown has drained: runs were cancelled when it
    /// began, and those that did not record their end within the grace
    /// period stay unfinished in the store, marked interrupted at the next
    /// start.
    pub async fn stop(&self) {
        self.runner.shutdown().await;
        self.mcp.shutdown();
    }
}
