//! Parameters and results of every method.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Name and version of a program on either end of the connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PeerInfo {
    /// Program name, e.g. `swivalctl` or `swivald`.
    pub name: String,
    /// Program version, e.g. `0.1.0`.
    pub version: String,
}

/// `initialize` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeParams {
    /// Who is calling.
    pub client: PeerInfo,
    /// The protocol version the client speaks.
    pub protocol_version: u32,
}

/// `initialize` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeResult {
    /// The daemon's name and version.
    pub server: PeerInfo,
    /// The protocol version the daemon speaks.
    pub protocol_version: u32,
    /// What this daemon offers beyond the base protocol.
    pub capabilities: Capabilities,
}

/// Optional features the daemon offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capabilities {
    /// Framings served on the socket: `ndjson`, `http`, `websocket`.
    pub framings: Vec<String>,
    /// Every method the daemon answers.
    pub methods: Vec<String>,
    /// Largest accepted message in bytes.
    pub max_message_size: u64,
}

/// `daemon/status` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DaemonStatus {
    /// Process id of the daemon.
    pub pid: u32,
    /// Daemon version.
    pub version: String,
    /// Seconds since the daemon started.
    pub uptime_s: f64,
    /// Connections open right now, including the caller's.
    pub connections: u64,
    /// The socket the daemon serves on.
    pub socket: String,
    /// How the listening socket was obtained.
    pub activation: Activation,
    /// Sessions held in memory right now: those with a run in flight and
    /// up to `max_live_sessions` idle ones (a closed one leaves once its run
    /// has ended); every other session is only in the store and loads
    /// again when used.
    #[serde(default)]
    pub live_sessions: u64,
    /// Runs in flight right now.
    #[serde(default)]
    pub runs_in_flight: u64,
    /// The snapshot stores' disk use in bytes, measured at most every 10 s
    /// (absent with snapshots off); `snapshots/gc` collects them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_bytes: Option<u64>,
    /// The bounds on background work (goals, loops) and today's use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<crate::policy::BackgroundStatus>,
}

/// How the daemon got its listening socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// The daemon bound the socket itself.
    Bound,
    /// systemd passed it (LISTEN_FDS).
    Systemd,
    /// launchd passed it (launch_activate_socket).
    Launchd,
}

/// `daemon/shutdown` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShutdownResult {
    /// Always true: the daemon has begun shutting down.
    pub stopping: bool,
}

/// The environment variable a provider's API key is read from when the
/// config has none (Swival's names; `--api-key` and `api_key` win).
pub fn provider_key_env(provider: &str) -> Option<&'static str> {
    match provider {
        "openai" | "generic" => Some("OPENAI_API_KEY"),
        "openrouter" => Some("OPENROUTER_API_KEY"),
        "google" => Some("GEMINI_API_KEY"),
        "huggingface" => Some("HF_TOKEN"),
        "chatgpt" => Some("CHATGPT_API_KEY"),
        _ => None,
    }
}

/// `provider/models` params: a session's provider, or the one the config
/// of `base_dir` (with `config` over it) names, asked with `env`'s keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderModelsParams {
    /// The session whose provider to ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<crate::SessionId>,
    /// Without a session: the project whose config names the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
    /// Without a session: overrides over the project's config (flags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
    /// Without a session: the caller's environment (its provider keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
}

/// `provider/models` result: what a session's provider offers, for a
/// model picker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderModels {
    /// The endpoint asked (its `/models`).
    pub base_url: String,
    /// The model the session uses now, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// The models, in the server's order.
    pub models: Vec<ModelInfo>,
}

/// One model a provider offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelInfo {
    /// Its id, as `model` takes it.
    pub id: String,
    /// Its context window, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}
