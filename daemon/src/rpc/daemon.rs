//! `initialize`, `daemon/status`, `daemon/shutdown`, and the daemon-wide
//! services' own methods: `mcp/status`, `cache/stats`, `cache/clear`,
//! `snapshots/gc`.

use super::{app_error, async_method, method, DaemonContext};
use jsonrpsee::core::RegisterMethodError;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use swival_protocol::methods::{self, typed as m};
use swival_protocol::{
    CacheClearResult, Capabilities, DaemonStatus, ErrorCode, InitializeParams, InitializeResult, McpStatusResult,
    PeerInfo, ShutdownResult, PROTOCOL_VERSION,
};

pub(super) fn register(module: &mut RpcModule<DaemonContext>) -> Result<(), RegisterMethodError> {
    method::<m::Initialize>(module, initialize)?;
    async_method::<m::DaemonStatusMethod, _>(module, |_, ctx| async move { Ok(status(&ctx).await) })?;
    async_method::<m::SnapshotsGc, _>(module, |_, ctx| async move {
        match &ctx.services.changes {
            Some(changes) => changes.collect().await.map_err(|e| {
                ErrorObjectOwned::owned(-32603, format!("collecting the snapshot stores failed: {e}"), None::<()>)
            }),
            None => Err(app_error(
                ErrorCode::NoSnapshot,
                "snapshots are off (snapshots = false in swivald.toml): there is no snapshot store to collect",
            )),
        }
    })?;
    method::<m::DaemonShutdown>(module, |_, ctx| {
        tracing::info!("shutdown requested over RPC");
        // This reply still reaches the caller on every framing: connections
        // write the replies of the calls in flight before they close, and
        // the daemon waits for that (`Shutdown::drain`).
        ctx.shutdown.trigger();
        Ok(ShutdownResult { stopping: true })
    })?;
    method::<m::McpStatus>(module, |_, ctx| Ok(McpStatusResult { servers: ctx.services.mcp.status() }))?;
    method::<m::CacheStatsMethod>(module, |_, ctx| cache(ctx).map(|c| c.stats()))?;
    method::<m::CacheClear>(module, |_, ctx| cache(ctx).map(|c| CacheClearResult { removed: c.clear() }))?;
    Ok(())
}

/// The response cache, opened now if it was not; a cache that cannot be
/// opened is a configuration error.
fn cache(ctx: &DaemonContext) -> Result<std::sync::Arc<crate::cache::ResponseCache>, ErrorObjectOwned> {
    ctx.services.cache.get().map_err(|e| app_error(ErrorCode::ConfigInvalid, e.to_string()))
}

fn initialize(params: InitializeParams, ctx: &DaemonContext) -> Result<InitializeResult, ErrorObjectOwned> {
    if params.protocol_version > PROTOCOL_VERSION {
        return Err(app_error(
            ErrorCode::UnsupportedProtocol,
            format!(
                "{} asks for protocol version {}, but this swivald {} speaks version {PROTOCOL_VERSION}; upgrade swivald",
                params.client.name,
                params.protocol_version,
                crate::VERSION
            ),
        ));
    }
    Ok(InitializeResult {
        server: PeerInfo { name: "swivald".into(), version: crate::VERSION.into() },
        protocol_version: PROTOCOL_VERSION,
        capabilities: Capabilities {
            framings: vec!["ndjson".into(), "http".into(), "websocket".into()],
            methods: methods::ALL.iter().map(|(m, _)| m.to_string()).collect(),
            max_message_size: ctx.max_message_size,
        },
    })
}

async fn status(ctx: &DaemonContext) -> DaemonStatus {
    let snapshot_bytes = match &ctx.services.changes {
        Some(changes) => Some(changes.disk_use().await),
        None => None,
    };
    DaemonStatus {
        pid: std::process::id(),
        version: crate::VERSION.into(),
        uptime_s: ctx.started.elapsed().as_secs_f64(),
        connections: ctx.connections.open(),
        socket: ctx.socket.display().to_string(),
        activation: ctx.activation,
        live_sessions: ctx.sessions.live_sessions() as u64,
        runs_in_flight: ctx.sessions.runs_in_flight() as u64,
        snapshot_bytes,
        background: Some(super::background::status(ctx)),
    }
}
