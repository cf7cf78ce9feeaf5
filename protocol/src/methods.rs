//! Method, subscription and notification names. They are part of the
//! contract: clients in any language type them literally.

/// Handshake; the first call of every connection.
pub const INITIALIZE: &str = "initialize";
/// Daemon pid, version, uptime and open connections.
pub const DAEMON_STATUS: &str = "daemon/status";
/// Ask the daemon to stop gracefully.
pub const DAEMON_SHUTDOWN: &str = "daemon/shutdown";

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
