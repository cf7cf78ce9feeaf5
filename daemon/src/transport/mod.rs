//! The socket: binding (stale-socket handling, permissions), the accept
//! loop, the peer-uid check, admission (`registry.rs`: when full, the
//! connection idle the longest makes room) and the choice of framing by
//! first byte.
//!
//! Architecture invariant: no TCP listener exists anywhere in the daemon;
//! every connection arrives here on the Unix socket and goes through the
//! peer check before a byte of it is read.

mod feed;
mod http;
mod lines;
mod ndjson;
mod outbox;
mod prefixed;
mod registry;
mod ws;

use crate::paths::{prepare_socket_dir, DirError};
use crate::service::ActivatedSocket;
use crate::shutdown::Shutdown;
pub use feed::{Feed, Feeds};
use jsonrpsee::core::server::Methods;
use jsonrpsee::server::{ServerConfig, StopHandle, TowerServiceBuilder};
use prefixed::Prefixed;
use registry::{Registration, Registry};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use swival_protocol::{Activation, ErrorCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// Why the daemon could not get its socket.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The socket's directory is unusable.
    #[error(transparent)]
    Dir(#[from] DirError),
    /// A live daemon answers on the path.
    #[error("another swivald is already serving on {0}; stop it first (swivalctl daemon stop) or pick another path with --socket")]
    AlreadyServing(PathBuf),
    /// A non-socket file is in the way.
    #[error("{0} exists and is not a socket; remove it or pick another path with --socket")]
    NotASocket(PathBuf),
    /// The path has no parent directory.
    #[error("socket path {0} has no parent directory; pass an absolute path with --socket")]
    NoParent(PathBuf),
    /// Any other I/O failure.
    #[error("cannot listen on {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// The listening socket, before the runtime starts.
#[derive(Debug)]
pub struct Listener {
    /// The bound, listening socket.
    std: std::os::unix::net::UnixListener,
    /// Its path (as bound, or as reported by the activated socket).
    path: PathBuf,
    /// Who created it.
    activation: Activation,
    /// (device, inode) of the socket file, when we created it and so must
    /// remove it on exit.
    owned_file: Option<(u64, u64)>,
}

impl Listener {
    /// Bind `path`: check its directory, replace a stale socket file that
    /// nobody listens on, refuse if a daemon already answers, create the
    /// socket 0600.
    pub fn bind(path: &Path) -> Result<Listener, BindError> {
        let io = |source| BindError::Io { path: path.to_owned(), source };
        let dir =
            path.parent().filter(|d| !d.as_os_str().is_empty()).ok_or_else(|| BindError::NoParent(path.to_owned()))?;
        prepare_socket_dir(dir)?;
        remove_stale(path)?;
        // The umask makes the socket 0600 from its first instant.
        let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
        let bound = std::os::unix::net::UnixListener::bind(path);
        nix::sys::stat::umask(old);
        let std = match bound {
            Ok(l) => l,
            // Another daemon won a race to bind between our check and bind.
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                return Err(BindError::AlreadyServing(path.to_owned()))
            }
            Err(e) => return Err(io(e)),
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        let meta = std::fs::symlink_metadata(path).map_err(io)?;
        Ok(Listener {
            std,
            path: path.to_owned(),
            activation: Activation::Bound,
            owned_file: Some((meta.dev(), meta.ino())),
        })
    }

    /// Use a socket handed over by the service manager, which owns its file.
    pub fn activated(socket: ActivatedSocket) -> Listener {
        let path =
            socket.listener.local_addr().ok().and_then(|a| a.as_pathname().map(Path::to_owned)).unwrap_or_default();
        Listener { std: socket.listener, path, activation: socket.activation, owned_file: None }
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the socket was obtained.
    pub fn activation(&self) -> Activation {
        self.activation
    }

    /// Remove the socket file if we created it and it is still ours (the
    /// last step of shutdown; systemd owns an activated socket's file).
    pub fn remove_socket_file(&self) {
        let Some((dev, ino)) = self.owned_file else {
            return;
        };
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) if m.dev() == dev && m.ino() == ino => {
                if let Err(e) = std::fs::remove_file(&self.path) {
                    tracing::warn!("could not remove socket {}: {e}", self.path.display());
                }
            }
            _ => {}
        }
    }
}

/// Remove `path` if it is a socket nobody listens on.
fn remove_stale(path: &Path) -> Result<(), BindError> {
    let io = |source| BindError::Io { path: path.to_owned(), source };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(e)),
    };
    if !meta.file_type().is_socket() {
        return Err(BindError::NotASocket(path.to_owned()));
    }
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err(BindError::AlreadyServing(path.to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            tracing::info!("removing stale socket {} (no daemon listens on it)", path.display());
            std::fs::remove_file(path).map_err(io)
        }
        Err(e) => Err(io(e)),
    }
}

/// Counts open connections; each connection holds a [`ConnectionGuard`].
#[derive(Debug, Default)]
pub struct ConnectionCount {
    /// Connections open right now.
    open: AtomicU64,
}

impl ConnectionCount {
    /// Connections open right now.
    pub fn open(&self) -> u64 {
        self.open.load(Ordering::Relaxed)
    }

    fn enter(self: &Arc<Self>) -> ConnectionGuard {
        self.open.fetch_add(1, Ordering::Relaxed);
        ConnectionGuard(self.clone())
    }
}

/// Decrements the count when a connection ends.
#[derive(Debug)]
struct ConnectionGuard(Arc<ConnectionCount>);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Limits the transport enforces.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest message in bytes.
    pub max_message_size: u64,
    /// Most open connections.
    pub max_connections: u32,
    /// Most subscriptions per connection.
    pub max_subscriptions: u32,
    /// How long a connection may be idle before it is closed; `None`: forever.
    pub idle_timeout: Option<Duration>,
    /// How long an HTTP client has to send a request head; `None`: forever.
    pub header_read_timeout: Option<Duration>,
    /// Most requests in one batch.
    pub max_batch_len: u32,
    /// Most reply bytes queued for one newline-delimited connection.
    pub max_reply_buffer_bytes: u64,
}

/// Cancelled when the connection a call came on has ended: in the
/// extensions of every call on a connection that stays open
/// (newline-delimited or WebSocket), absent on an HTTP POST. What
/// `cancel_on_disconnect` watches.
#[derive(Debug, Clone)]
pub struct Disconnected(pub tokio_util::sync::CancellationToken);

/// What the connections serve.
pub struct Handlers {
    /// The RPC methods, the same for every framing.
    pub methods: Methods,
    /// The subscription the connections serve as a feed.
    pub feeds: Arc<dyn Feeds>,
    /// Names of methods that open a subscription.
    pub subscription_methods: &'static [&'static str],
}

/// jsonrpsee's per-connection service factory.
type HttpServiceBuilder = TowerServiceBuilder<tower::layer::util::Identity, tower::layer::util::Identity>;

/// State every connection task shares.
struct Shared {
    /// The RPC methods, the same for every framing.
    methods: Methods,
    /// Names of methods that open a subscription.
    subscription_methods: &'static [&'static str],
    /// The subscription the newline-delimited framing serves as a feed.
    feeds: Arc<dyn Feeds>,
    /// Largest line accepted on the newline-delimited framing.
    max_message_size: usize,
    /// Most subscriptions per newline-delimited connection.
    max_subscriptions: usize,
    /// Most requests in one batch, on every framing.
    max_batch_len: usize,
    /// Most reply bytes queued for one newline-delimited connection.
    max_reply_buffer: usize,
    /// How long an HTTP client has to send a request head.
    header_read_timeout: Option<Duration>,
    /// jsonrpsee's per-connection service factory for the HTTP framing.
    http: HttpServiceBuilder,
    /// Tells jsonrpsee's HTTP connections to stop.
    stop: StopHandle,
    /// The daemon's shutdown: connections watch it and are spawned through
    /// it, so the daemon waits for their in-flight requests.
    shutdown: Shutdown,
}

/// Accept and serve connections until shutdown begins. Every connection
/// task, and every WebSocket connection jsonrpsee runs on its own, is
/// tracked by `shutdown`: once it begins, connections stop reading new
/// requests and end after writing the replies of those in flight, and
/// [`Shutdown::drain`] waits for that.
pub async fn serve(
    listener: &Listener,
    handlers: Handlers,
    limits: Limits,
    connections: Arc<ConnectionCount>,
    shutdown: Shutdown,
) -> std::io::Result<()> {
    listener.std.set_nonblocking(true)?;
    let accept = tokio::net::UnixListener::from_std(listener.std.try_clone()?)?;
    let (stop, server_handle) = jsonrpsee::server::stop_channel();
    let shared = Arc::new(Shared::new(handlers, &limits, stop, shutdown.clone()));
    raise_fd_limit(limits.max_connections);
    let registry = Registry::new(limits.max_connections, connections.clone());
    let reaper = limits.idle_timeout.map(|t| tokio::spawn(registry.clone().reap_idle(t)));
    let me = nix::unistd::geteuid().as_raw();
    loop {
        let stream = tokio::select! {
            _ = shutdown.wait() => break,
            accepted = accept.accept() => match accepted {
                Ok((s, _)) => s,
                Err(e) => {
                    // Out of descriptors: an idle connection gives one back.
                    // Either way, back off instead of spinning.
                    let freed = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
                        && registry.evict_longest_idle();
                    tracing::warn!("accept failed: {e}{}", if freed { "; closed the connection idle the longest" } else { "" });
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        if !peer_is(&stream, me) {
            continue;
        }
        let admission = registry.admit().ok_or_else(|| connections.enter());
        shutdown.spawn(serve_connection(stream, admission, shared.clone()));
    }
    if let Some(reaper) = reaper {
        reaper.abort();
    }
    // jsonrpsee's WebSocket connections run in tasks of their own, each
    // holding a stop handle until it has written the replies of the calls
    // in flight and closed: `stopped` resolves when the last handle is
    // gone (ours in `shared` go with the connection tasks).
    let _ = server_handle.stop();
    drop(shared);
    shutdown.spawn(server_handle.stopped());
    Ok(())
}

impl Shared {
    /// The state of every connection, jsonrpsee's service configured with
    /// `limits`.
    fn new(
        Handlers { methods, feeds, subscription_methods }: Handlers,
        limits: &Limits,
        stop: StopHandle,
        shutdown: Shutdown,
    ) -> Shared {
        let body_limit = u32::try_from(limits.max_message_size).unwrap_or(u32::MAX);
        // jsonrpsee serves HTTP POST calls only (WebSocket connections are
        // served by `ws.rs`, subscriptions too); HTTP batches are counted
        // before it sees them.
        let config = ServerConfig::builder()
            .max_request_body_size(body_limit)
            .max_response_body_size(body_limit)
            // The registry admits connections; jsonrpsee's own count of
            // HTTP requests in flight gets room for evicted connections
            // still closing.
            .max_connections(limits.max_connections.saturating_mul(2))
            .build();
        Shared {
            methods,
            subscription_methods,
            feeds,
            max_message_size: usize::try_from(limits.max_message_size).unwrap_or(usize::MAX),
            max_subscriptions: limits.max_subscriptions as usize,
            max_batch_len: limits.max_batch_len as usize,
            max_reply_buffer: usize::try_from(limits.max_reply_buffer_bytes).unwrap_or(usize::MAX),
            header_read_timeout: limits.header_read_timeout,
            http: jsonrpsee::server::Server::builder().set_config(config).to_service_builder(),
            stop,
            shutdown,
        }
    }
}

/// The peer check: whether the process at the other end of `stream` runs
/// as uid `me` (a refusal is logged).
fn peer_is(stream: &UnixStream, me: u32) -> bool {
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == me => true,
        Ok(cred) => {
            tracing::warn!(
                "refused a connection from uid {} (pid {:?}): only uid {me} may use this daemon",
                cred.uid(),
                cred.pid()
            );
            false
        }
        Err(e) => {
            tracing::warn!("refused a connection whose peer credentials could not be read: {e}");
            false
        }
    }
}

/// Sniff the framing from the first byte and serve the connection with it;
/// a connection the registry refused (`Err`, holding only its place in the
/// open count) gets the `overloaded` answer in its framing.
async fn serve_connection(
    mut stream: UnixStream,
    admission: Result<Registration, ConnectionGuard>,
    shared: Arc<Shared>,
) {
    let closed = match &admission {
        Ok(registration) => registration.activity().close_token().clone(),
        Err(_) => tokio_util::sync::CancellationToken::new(),
    };
    // A refused client gets as long as an HTTP client has for its head (or
    // 10 s when that is unlimited) to show which framing the refusal must be
    // written in.
    let refusal_deadline = async {
        match &admission {
            Err(_) => tokio::time::sleep(shared.header_read_timeout.unwrap_or(Duration::from_secs(10))).await,
            Ok(_) => std::future::pending().await,
        }
    };
    let mut first = [0u8; 1];
    let n = tokio::select! {
        _ = shared.shutdown.wait() => return,
        _ = closed.cancelled() => return,
        () = refusal_deadline => return,
        n = stream.read(&mut first) => n,
    };
    if !matches!(n, Ok(1)) {
        return;
    }
    let ndjson = matches!(first[0], b'{' | b'[');
    let Ok(registration) = admission else {
        let msg = "too many connections (max_connections); close some or raise max_connections in swivald.toml";
        let reply = if ndjson {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{{\"code\":{},\"message\":\"{msg}\"}}}}\n",
                ErrorCode::Overloaded.code()
            )
        } else {
            format!("HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{msg}", msg.len())
        };
        let _ = stream.write_all(reply.as_bytes()).await;
        return;
    };
    let activity = registration.activity().clone();
    let stream = Prefixed::new(first[0], stream, registration).closed_by(&closed);
    if ndjson {
        ndjson::serve(stream, shared, activity).await;
    } else {
        http::serve(stream, shared, activity).await;
    }
}

/// The message for a batch of `len` requests, over `max`.
fn batch_too_long(len: usize, max: usize) -> String {
    format!(
        "batch of {len} requests exceeds max_batch_len ({max}); split it into smaller batches or raise max_batch_len in swivald.toml"
    )
}

/// Raise the soft limit on open files to the hard limit: each connection is
/// a descriptor, and a daemon that runs out of them cannot even accept the
/// connection that would evict an idle one. Warns when `max_connections`
/// cannot fit under the limit.
fn raise_fd_limit(max_connections: u32) {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write `lim`.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    // Room for the store, the cache, the listener and helper processes' pipes.
    const RESERVED: u64 = 256;
    // rlim_t is not u64 everywhere.
    #[allow(clippy::unnecessary_cast)]
    let limit = lim.rlim_cur as u64;
    if limit < u64::from(max_connections) + RESERVED {
        tracing::warn!(
            "the open-file limit ({}) leaves no room for max_connections ({max_connections}) and the daemon's own files; raise it (ulimit -n, LimitNOFILE=) or lower max_connections in swivald.toml",
            lim.rlim_cur
        );
    }
}
