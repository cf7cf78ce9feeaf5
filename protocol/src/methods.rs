//! Method, subscription and notification names. They are part of the
//! contract: clients in any language type them literally.

/// Handshake; the first call of every connection.
pub const INITIALIZE: &str = "initialize";
/// Daemon pid, version, uptime and open connections.
pub const DAEMON_STATUS: &str = "daemon/status";
/// Ask the daemon to stop gracefully.
pub const DAEMON_SHUTDOWN: &str = "daemon/shutdown";

/// Create a session in a base directory.
pub const SESSION_CREATE: &str = "session/create";
/// List sessions.
pub const SESSION_LIST: &str = "session/list";
/// One session with its runs and conversation.
pub const SESSION_GET: &str = "session/get";
/// Close a session (cancelling its run).
pub const SESSION_CLOSE: &str = "session/close";
/// Subscribe to a session's events (notifications: `session/event`).
pub const SESSION_SUBSCRIBE: &str = "session/subscribe";
/// The notification method of `session/subscribe`.
pub const SESSION_EVENT: &str = "session/event";
/// End a `session/subscribe` subscription.
pub const SESSION_UNSUBSCRIBE: &str = "session/unsubscribe";
/// Start a run in a session.
pub const RUN_START: &str = "run/start";
/// Cancel a run.
pub const RUN_CANCEL: &str = "run/cancel";
/// Wait for a run to finish.
pub const RUN_WAIT: &str = "run/wait";
/// Swival's report JSON of a finished run.
pub const REPORT_GET: &str = "report/get";
/// The effective configuration for a base directory, with sources.
pub const CONFIG_RESOLVE: &str = "config/resolve";

/// Every method the daemon answers, with a one-line summary, in the order
/// the documentation lists them.
pub const ALL: &[(&str, &str)] = &[
    (
        INITIALIZE,
        "Handshake: client and protocol version in, server info and capabilities out.",
    ),
    (
        DAEMON_STATUS,
        "Daemon pid, version, uptime, socket path and open connections.",
    ),
    (
        DAEMON_SHUTDOWN,
        "Stop accepting connections, finish in-flight work within the grace period, exit 0.",
    ),
];
