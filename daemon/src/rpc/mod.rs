//! JSON-RPC method handlers. Handlers are thin: parse the params, call the
//! module that owns the behaviour, map its error to a JSON-RPC error.
//!
//! Every method is registered on one `RpcModule`, which the transport serves
//! on both framings.

mod daemon;
mod hooks;
mod session;

use crate::shutdown::Shutdown;
use crate::transport::ConnectionCount;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use swival_protocol::{Activation, ErrorCode};

/// What the handlers can reach: the daemon-wide services.
pub struct DaemonContext {
    /// When the daemon started, for `uptime_s`.
    pub started: Instant,
    /// The socket path, for `daemon/status`.
    pub socket: PathBuf,
    /// How the socket was obtained.
    pub activation: Activation,
    /// Open connections.
    pub connections: Arc<ConnectionCount>,
    /// The daemon's shutdown latch.
    pub shutdown: Shutdown,
    /// Largest message, advertised in `initialize`.
    pub max_message_size: u64,
    /// Every session and run.
    pub sessions: Arc<crate::session::Sessions>,
}

/// Subscription methods (their names open a notification stream).
pub const SUBSCRIPTION_METHODS: &[&str] =
    &[swival_protocol::methods::SESSION_SUBSCRIBE, swival_protocol::methods::HOOKS_REGISTER];

/// Build the module with every method registered.
pub fn module(ctx: DaemonContext) -> RpcModule<DaemonContext> {
    let mut module = RpcModule::new(ctx);
    daemon::register(&mut module).expect("method names are unique");
    session::register(&mut module).expect("method names are unique");
    hooks::register(&mut module).expect("method names are unique");
    module
}

/// A JSON-RPC error carrying one of our application codes.
pub fn app_error(code: ErrorCode, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code.code(), message.into(), Some(serde_json::json!({ "kind": code })))
}
