//! swivald: a per-user daemon that runs LLM coding-agent sessions and serves
//! them over JSON-RPC 2.0 on a Unix socket.
//!
//! The binary (`main.rs`) takes any socket handed over by the service
//! manager, sets up logging and the runtime, and calls [`run`].
//! See ARCHITECTURE.md for the code map and the invariants.
//!
//! Every module is private to the crate. What leaves it is below, each
//! group with who uses it: the binary, the fuzz targets (`fuzz/`), the
//! benchmark (`tests/src/bin/bench`) and the end-to-end sandbox tests. A
//! client speaks to the daemon through the protocol crate, never through
//! this library.

mod agent;
mod beneath;
mod cache;
mod changes;
mod clock;
mod config;
mod editor;
mod environment;
mod goal;
mod inbox;
mod loops;
mod mcp;
mod message;
mod notes;
mod paths;
mod pipeline;
mod procs;
mod provider;
mod report;
mod rpc;
mod sandbox;
mod secrets;
mod server;
mod service;
mod services;
mod session;
mod settings;
mod shutdown;
mod skills;
mod store;
mod tls;
mod toolcall;
mod tools;
mod transport;

// Starting the daemon: the binary, and the fuzz target `ndjson_dispatch`
// that runs the real daemon in its own process.
pub use environment::take_secrets;
pub use paths::{config_dir, socket_path};
pub use sandbox::main_if_helper;
pub use server::run;
pub use service::take_activation_socket;
pub use settings::{LogFormat, Settings, SettingsError};
pub use transport::Listener;

/// The fuzz target `filter_output`: a filter's output as the daemon
/// validates it.
pub use pipeline::filter::parse_output;

/// The benchmark's edit-time checks (`bench edit-checks`): the note a
/// write or edit of `path` from `before` to `after` gets.
pub fn edit_check_notes(path: &std::path::Path, before: Option<&str>, after: &str) -> Option<String> {
    tools::syntax_notes(path, before, after)
}

/// The benchmark's snapshot store (`bench snapshots`).
pub use changes::SnapshotStore;

/// The benchmark's floor: the HTTP client the daemon calls providers with.
pub fn provider_http_client() -> reqwest::Client {
    provider::Provider::http_client()
}

/// The command sandbox and `fetch_url` on their own, without a session:
/// what `tests/tests/sandbox.rs` drives end to end.
pub mod sandboxed {
    pub use crate::config::{Cidr, SandboxMode};
    pub use crate::procs::ProcessRunner;
    pub use crate::sandbox::command::allowed_environment;
    pub use crate::sandbox::fetch::FetchFormat;
    pub use crate::sandbox::spill::truncate_utf8;
    pub use crate::sandbox::{
        fetch_url, probe, resolve_whitelist, run_command, CommandEnv, CommandPolicy, FetchEnv, PlanInput,
        SandboxCapabilities, SandboxStatus,
    };
}

/// The file tools and the tools a run offers, without a session: what
/// `tests/tests/tool_answers.rs` and `tests/tests/tool_schemas.rs` check
/// byte for byte.
pub mod tooling {
    /// The name of every tool the daemon offers, from its registry (MCP
    /// tools aside): the architecture test checks each is spelled in one
    /// file only.
    pub fn tool_names() -> impl Iterator<Item = &'static str> {
        crate::tools::registry::TOOLS.iter().map(|t| t.name)
    }
    pub use crate::sandbox::{tool_schemas, CommandPolicy};
    pub use crate::tools::offer::{Offer, SchemaStyle};
    pub use crate::tools::path::{FilesMode, PathPolicy};
    pub use crate::tools::ToolBox;
}

/// The daemon's version, reported by `initialize` and `daemon/status`.
const VERSION: &str = env!("CARGO_PKG_VERSION");
