//! The swivald client library: a typed JSON-RPC client over the daemon's
//! Unix socket (WebSocket framing, through jsonrpsee), and the logic that
//! starts a daemon when none is running. swivalctl is built on it; any Rust
//! program can use it.

pub mod autostart;
mod client;
pub mod units;

pub use client::{Client, ClientError};

/// This process's environment, as a session's caller environment: every
/// variable whose name and value are UTF-8 (others cannot travel in JSON
/// and are left out).
pub fn caller_env() -> std::collections::BTreeMap<String, String> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect()
}
