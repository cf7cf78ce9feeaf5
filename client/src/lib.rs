//! The swivald client library: a typed JSON-RPC client over the daemon's
//! Unix socket (WebSocket framing, through jsonrpsee), and the logic that
//! starts a daemon when none is running. swivalctl is built on it; any Rust
//! program can use it.

pub mod autostart;
mod client;
pub mod units;

pub use client::{Client, ClientError};
