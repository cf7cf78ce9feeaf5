//! swivald: a per-user daemon that runs LLM coding-agent sessions and serves
//! them over JSON-RPC 2.0 on a Unix socket.
//!
//! The binary (`main.rs`) takes any socket handed over by the service
//! manager, sets up logging and the runtime, and calls [`server::run`].
//! See ARCHITECTURE.md for the code map and the invariants.

pub mod agent;
pub mod beneath;
pub mod cache;
pub mod clock;
pub mod config;
pub mod editor;
pub mod environment;
pub mod mcp;
pub mod paths;
pub mod pipeline;
pub mod procs;
pub mod provider;
pub mod report;
pub mod rpc;
pub mod sandbox;
pub mod secrets;
pub mod server;
pub mod service;
pub mod session;
pub mod settings;
pub mod shutdown;
pub mod store;
pub mod tls;
pub mod toolcall;
pub mod tools;
pub mod transport;

/// The daemon's version, reported by `initialize` and `daemon/status`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
