//! JSON-RPC method handlers. Handlers are thin: parse the params, call the
//! module that owns the behaviour, map its error to a JSON-RPC error.
//!
//! Every method is registered on one `RpcModule`, which the transport serves
//! on both framings.

mod background;
mod buffers;
mod daemon;
mod feed;
mod hooks;
mod session;

use crate::session::SessionError;
use crate::shutdown::Shutdown;
use crate::transport::ConnectionCount;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::RpcModule;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use swival_protocol::methods::Method;
use swival_protocol::{Activation, ErrorCode};

/// What the handlers can reach: the daemon's own figures, the sessions,
/// and the daemon-wide services, each called directly by the handlers it
/// concerns.
pub struct DaemonContext {
    /// When the daemon started, for `uptime_s`.
    pub started: Instant,
    /// The socket path, for `daemon/status`.
    pub socket: PathBuf,
    /// How the socket was obtained.
    pub activation: Activation,
    /// Open connections.
    pub connections: Arc<ConnectionCount>,
    /// The daemon's shutdown (`daemon/shutdown` triggers it).
    pub shutdown: Shutdown,
    /// Largest message, advertised in `initialize`.
    pub max_message_size: u64,
    /// Every session and run.
    pub sessions: Arc<crate::session::Sessions>,
    /// Sessions' goals.
    pub goals: Arc<crate::goal::Goals>,
    /// Sessions' loops.
    pub loops: Arc<crate::loops::Loops>,
    /// What background work did.
    pub inbox: Arc<crate::inbox::Inbox>,
    /// The daemon-wide services (MCP servers, cache, client hooks, editor
    /// buffers, approvals).
    pub services: crate::services::Services,
    /// Open event subscriptions, daemon-wide.
    pub subscriptions: Arc<Subscriptions>,
}

/// The daemon-wide count of event subscriptions and how long one may
/// stall before it is dropped.
#[derive(Debug)]
pub struct Subscriptions {
    /// Open now.
    open: std::sync::atomic::AtomicU32,
    /// Most at once.
    max: u32,
    /// How long a send may wait for the subscriber; zero waits forever.
    pub stall: std::time::Duration,
}

impl Subscriptions {
    /// At most `max` at once; a subscriber stalled for `stall` is dropped.
    pub fn new(max: u32, stall: std::time::Duration) -> Subscriptions {
        Subscriptions { open: Default::default(), max: max.max(1), stall }
    }

    /// A slot, or `None` when `max` are open.
    pub fn enter(self: &Arc<Self>) -> Option<SubscriptionSlot> {
        use std::sync::atomic::Ordering;
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.max).then_some(n + 1))
            .ok()
            .map(|_| SubscriptionSlot(self.clone()))
    }
}

/// One open subscription; the count drops with it.
#[derive(Debug)]
pub struct SubscriptionSlot(Arc<Subscriptions>);

impl Drop for SubscriptionSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Subscription methods (their names open a notification stream).
pub const SUBSCRIPTION_METHODS: &[&str] = &[
    swival_protocol::methods::SESSION_SUBSCRIBE,
    swival_protocol::methods::HOOKS_REGISTER,
    swival_protocol::methods::BUFFERS_SERVE,
    swival_protocol::methods::INBOX_SUBSCRIBE,
];

/// Register `M`'s handler: its params parsed as `M::Params` (a parse
/// error is `-32602` naming what was wrong), its result of type
/// `M::Result`. The method's name and types come from its one declaration
/// in the protocol crate.
pub(super) fn method<M: Method>(
    module: &mut RpcModule<DaemonContext>,
    f: impl Fn(M::Params, &DaemonContext) -> Result<M::Result, ErrorObjectOwned> + Send + Sync + Clone + 'static,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    module.register_method(M::NAME, move |params, ctx, _| f(params.parse::<M::Params>()?, ctx))?;
    Ok(())
}

/// [`method`] for a handler that awaits.
pub(super) fn async_method<M: Method, Fut>(
    module: &mut RpcModule<DaemonContext>,
    f: impl Fn(M::Params, Arc<DaemonContext>) -> Fut + Send + Sync + Clone + 'static,
) -> Result<(), jsonrpsee::core::RegisterMethodError>
where
    Fut: std::future::Future<Output = Result<M::Result, ErrorObjectOwned>> + Send + 'static,
{
    module.register_async_method(M::NAME, move |params, ctx, _| {
        let f = f.clone();
        async move { f(params.parse::<M::Params>()?, ctx).await }
    })?;
    Ok(())
}

/// Register the subscription `S` (its notification and closing method as
/// the protocol declares them) with `f` serving each one.
pub(super) fn subscription<S: swival_protocol::methods::Subscribe, Fut>(
    module: &mut RpcModule<DaemonContext>,
    f: impl Fn(jsonrpsee::types::Params<'static>, jsonrpsee::PendingSubscriptionSink, Arc<DaemonContext>) -> Fut
        + Send
        + Sync
        + Clone
        + 'static,
) -> Result<(), jsonrpsee::core::RegisterMethodError>
where
    Fut: std::future::Future<Output = jsonrpsee::core::SubscriptionResult> + Send + 'static,
{
    use swival_protocol::methods::Method;
    module.register_subscription(
        S::NAME,
        S::NOTIFICATION,
        <S::Unsubscribe as Method>::NAME,
        move |params, pending, ctx, _| f(params, pending, ctx),
    )?;
    Ok(())
}

/// The end of the connection a call came on, when the caller `wanted`
/// its run cancelled with it (`cancel_on_disconnect`); refused over an
/// HTTP POST, whose connection ends with the reply.
pub(super) fn disconnection(
    wanted: bool,
    extensions: &jsonrpsee::Extensions,
) -> Result<Option<tokio_util::sync::CancellationToken>, ErrorObjectOwned> {
    if !wanted {
        return Ok(None);
    }
    match extensions.get::<crate::transport::Disconnected>() {
        Some(gone) => Ok(Some(gone.0.clone())),
        None => Err(invalid_params(
            "cancel_on_disconnect needs a connection that stays open (newline-delimited JSON or WebSocket on the socket), not an HTTP POST; drop it or connect that way",
        )),
    }
}

/// An invalid-params error with a message saying what to send instead.
pub(super) fn invalid_params(message: &str) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(-32602, message.to_owned(), None::<()>)
}

/// What the transport serves: every method, and `session/subscribe` as a
/// feed its connections pull from.
pub fn handlers(ctx: DaemonContext) -> crate::transport::Handlers {
    let feeds = Arc::new(feed::EventFeeds { sessions: ctx.sessions.clone(), subscriptions: ctx.subscriptions.clone() });
    crate::transport::Handlers { methods: module(ctx).into(), feeds, subscription_methods: SUBSCRIPTION_METHODS }
}

/// Build the module with every method registered.
fn module(ctx: DaemonContext) -> RpcModule<DaemonContext> {
    let mut module = RpcModule::new(ctx);
    daemon::register(&mut module).expect("method names are unique");
    session::register(&mut module).expect("method names are unique");
    background::register(&mut module).expect("method names are unique");
    hooks::register(&mut module).expect("method names are unique");
    buffers::register(&mut module).expect("method names are unique");
    module
}

/// A JSON-RPC error carrying one of our application codes.
pub fn app_error(code: ErrorCode, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(
        code.code(),
        message.into(),
        Some(swival_protocol::ErrorData { kind: code, exit_code: None }),
    )
}

/// The JSON-RPC error for a session failure.
fn rpc_error(e: SessionError) -> ErrorObjectOwned {
    let code = match &e {
        SessionError::NotFound(_) | SessionError::Closed(_) => ErrorCode::SessionNotFound,
        SessionError::RunNotFound(_) | SessionError::NoReport(_) => ErrorCode::RunNotFound,
        SessionError::Busy { .. } | SessionError::Compacting(_) => ErrorCode::SessionBusy,
        SessionError::Config(_) => ErrorCode::ConfigInvalid,
        SessionError::NotWorktree(_) => return invalid_params(&e.to_string()),
        SessionError::Untrusted(_) => ErrorCode::UntrustedProject,
        SessionError::Setup(_) => {
            // Valid config naming something that cannot run: Swival exits 1 here, not 2.
            return ErrorObjectOwned::owned(
                ErrorCode::ConfigInvalid.code(),
                e.to_string(),
                Some(swival_protocol::ErrorData { kind: ErrorCode::ConfigInvalid, exit_code: Some(1) }),
            );
        }
        SessionError::ShuttingDown => ErrorCode::ShuttingDown,
        SessionError::NoChanges(_) => ErrorCode::NoSnapshot,
        SessionError::Refused(_) => return invalid_params(&e.to_string()),
        SessionError::Store(_)
        | SessionError::BadReport { .. }
        | SessionError::Internal(_)
        | SessionError::Worktree(_) => return ErrorObjectOwned::owned(-32603, e.to_string(), None::<()>),
    };
    app_error(code, e.to_string())
}
