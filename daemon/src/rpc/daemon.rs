//! `initialize`, `daemon/status`, `daemon/shutdown`.

use super::{app_error, method, DaemonContext};
use jsonrpsee::core::RegisterMethodError;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use swival_protocol::methods::{self, typed as m};
use swival_protocol::{
    Capabilities, DaemonStatus, ErrorCode, InitializeParams, InitializeResult, PeerInfo, ShutdownResult,
    PROTOCOL_VERSION,
};

pub(super) fn register(module: &mut RpcModule<DaemonContext>) -> Result<(), RegisterMethodError> {
    method::<m::Initialize>(module, initialize)?;
    method::<m::DaemonStatusMethod>(module, |_, ctx| Ok(status(ctx)))?;
    method::<m::DaemonShutdown>(module, |_, ctx| {
        tracing::info!("shutdown requested over RPC");
        // This reply still reaches the caller on every framing: connections
        // write the replies of the calls in flight before they close, and
        // the daemon waits for that (`Shutdown::drain`).
        ctx.shutdown.trigger();
        Ok(ShutdownResult { stopping: true })
    })?;
    Ok(())
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

fn status(ctx: &DaemonContext) -> DaemonStatus {
    DaemonStatus {
        pid: std::process::id(),
        version: crate::VERSION.into(),
        uptime_s: ctx.started.elapsed().as_secs_f64(),
        connections: ctx.connections.open(),
        socket: ctx.socket.display().to_string(),
        activation: ctx.activation,
        live_sessions: ctx.sessions.live_sessions() as u64,
        runs_in_flight: ctx.sessions.runs_in_flight() as u64,
    }
}
