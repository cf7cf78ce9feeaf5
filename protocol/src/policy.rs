//! Configuration, policy and the client-side parts of the pipeline:
//! `config/resolve`, `policy/status`, `policy/check`, `mcp/status`, client
//! hooks and editor buffers.

use crate::hooks::HookPoint;
use crate::ids::SessionId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// `config/resolve` params: what `session/create` would produce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigResolveParams {
    /// The base directory whose `swival.toml` applies.
    pub base_dir: String,
    /// Request-level overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<crate::config::ConfigKeys>,
}

/// `config/resolve` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigResolveResult {
    /// The effective configuration.
    pub config: crate::config::ConfigKeys,
    /// For each key that was set, which layer set it (`default`, a file, `request`).
    pub sources: BTreeMap<String, String>,
    /// Keys that load but do nothing (Swival keys swivald ignores, keys
    /// nobody knows), one line each naming the file and the key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The `[profiles.NAME]` the config files define, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<ProfileInfo>,
}

/// One `[profiles.NAME]` as its layers merge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileInfo {
    /// Its name.
    pub name: String,
    /// Its provider.
    pub provider: String,
    /// Its model, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Its `description`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it is the one in use (`active_profile` or `--profile`).
    pub active: bool,
}

/// `policy/status` result: what guards a session, with fingerprints of the
/// scripts involved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyStatus {
    /// The session.
    pub session_id: SessionId,
    /// Outbound filter stages, in order.
    pub filters: Vec<ScriptStatus>,
    /// Command hooks, in the order they run.
    pub hooks: Vec<ScriptStatus>,
    /// The reviewer, if any.
    pub reviewer: Option<ScriptStatus>,
    /// What the sandbox enforces.
    pub sandbox: SandboxStatus,
    /// Policy the agent cannot change: file tools refuse to write these
    /// files and directory trees and commands see them read-only.
    #[serde(default)]
    pub protected: Vec<String>,
    /// The session's MCP servers.
    #[serde(default)]
    pub mcp_servers: Vec<McpServerStatus>,
    /// The daemon's bounds on background work (goals, loops) and what is
    /// in use now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<BackgroundStatus>,
}

/// The daemon's bounds on background work, from `swivald.toml`, and what
/// is in use now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BackgroundStatus {
    /// Goals working, and loop firings running, at once (`max_background_runs`).
    pub max_background_runs: u64,
    /// Active loops, daemon-wide (`max_loops`).
    pub max_loops: u64,
    /// A goal's runs unless it says (`goal_max_runs`).
    pub goal_max_runs: u64,
    /// Tokens background runs may use per day (`max_background_tokens_per_day`; absent: no bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_background_tokens_per_day: Option<u64>,
    /// Tokens background runs used today (the daemon's local day).
    pub tokens_today: u64,
}

/// One MCP server as the daemon runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerStatus {
    /// The server's name in the config.
    pub name: String,
    /// The base dir of the sessions sharing it.
    pub base_dir: String,
    /// How the daemon talks to it.
    pub transport: McpTransport,
    /// The command line (the program located) or the URL.
    pub command: String,
    /// Whether it runs now.
    pub running: bool,
    /// Its process id (stdio servers that run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its tools, as the model sees them (`mcp__<server>__<tool>`).
    pub tools: Vec<String>,
    /// Sessions in memory using it.
    pub sessions: u32,
    /// Why its last start or call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Files it runs with their SHA-256 (in `policy/status`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileDigest>,
    /// Other files its arguments and environment name: its data, never pinned (in `policy/status`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_files: Vec<DataFile>,
}

/// How the daemon talks to an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum McpTransport {
    /// A child process, over its stdin and stdout.
    Stdio,
    /// An HTTP endpoint (MCP's streamable HTTP).
    StreamableHttp,
}

impl McpTransport {
    /// The name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            McpTransport::Stdio => "stdio",
            McpTransport::StreamableHttp => "streamable-http",
        }
    }
}

/// `mcp/status`: every MCP server of the daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpStatusResult {
    /// The servers, by name then base dir.
    pub servers: Vec<McpServerStatus>,
}

/// One configured script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScriptStatus {
    /// The command line.
    pub command: String,
    /// How it runs.
    pub mode: ScriptMode,
    /// Seconds before it is killed.
    pub timeout_s: f64,
    /// Hook point, for hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<HookPoint>,
    /// Hook priority, for hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Files the command runs (the program, the script an interpreter runs, source files among its arguments) with the SHA-256 they are pinned to.
    pub files: Vec<FileDigest>,
    /// Other files its arguments name (data it may write, such as a log or a database): never pinned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_files: Vec<DataFile>,
}

/// A file a policy command names as data: not pinned (the program may
/// write it), and protected from the model's file tools and commands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DataFile {
    /// Absolute path.
    pub path: String,
    /// Whether the model's file tools and commands can neither read nor
    /// change it, nor plant something in its place — true only when that
    /// holds now.
    pub protected: bool,
    /// Why it is not protected, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

/// A `buffers/read` notification: the text of a file as the editor has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BufferRead {
    /// What `buffers/respond` names.
    pub request_id: String,
    /// The absolute path, already allowed by the session's path policy.
    pub path: String,
}

/// `buffers/respond` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BufferRespondParams {
    /// From the `buffers/read`.
    pub request_id: String,
    /// The buffer's text; `null` reads the file from disk.
    pub text: Option<String>,
}

/// `buffers/respond` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BufferRespondResult {
    /// False when nothing waits for that request any more.
    pub accepted: bool,
}

/// A file and its SHA-256.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileDigest {
    /// Absolute path.
    pub path: String,
    /// Hex SHA-256 of its content.
    pub sha256: String,
}

/// How a session's commands are confined (`sandbox` in config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Kernel enforcement (Landlock, network namespace/seccomp) plus the in-process checks.
    #[default]
    Os,
    /// Only the in-process checks, as in Swival.
    Builtin,
}

impl SandboxMode {
    /// The names on the wire and in config.
    pub const NAMES: &'static [&'static str] = &["os", "builtin"];

    /// The name on the wire and in config.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// What the sandbox enforces for a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxStatus {
    /// The mode configured.
    pub mode: SandboxMode,
    /// What that comes to on this machine, in one line.
    pub summary: String,
    /// Guards in force.
    pub enforced: Vec<String>,
    /// Guards the kernel or the configuration does not provide, said plainly.
    pub not_enforced: Vec<String>,
}

/// `hooks/register` params: a client hook, consulted until the connection closes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookRegisterParams {
    /// A name for events and `policy/status`.
    pub name: String,
    /// Points to be consulted at (at least one).
    pub points: Vec<HookPoint>,
    /// Lower runs first (default 0); ties keep registration order.
    #[serde(default)]
    pub priority: i64,
    /// How long an answer may take (default 10000).
    #[serde(default = "default_hook_timeout_ms")]
    pub timeout_ms: u64,
    /// What a failure or timeout of this hook means (default `block`).
    #[serde(default)]
    pub on_failure: OnFailure,
}

fn default_hook_timeout_ms() -> u64 {
    10_000
}

/// One `hooks/invoke` notification: answer it with `hooks/respond`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookInvocation {
    /// Echo this in `hooks/respond`.
    pub call_id: String,
    /// The point (`point`) and its payload (`payload`).
    #[serde(flatten)]
    pub call: crate::hooks::HookCall,
}

/// `hooks/respond` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookRespondParams {
    /// From the invocation.
    pub call_id: String,
    /// The hook's result object, a [`crate::hooks::HookResult`]; taken as
    /// any JSON so that a malformed one reaches the merge rules, which
    /// count it as the hook's failure (fail closed), instead of being
    /// refused here while the run waits for the timeout.
    pub result: Value,
}

/// `hooks/respond` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookRespondResult {
    /// False when no call waits for that id any more (it timed out).
    pub accepted: bool,
}

/// `policy/check` params: would this command run?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyCheckParams {
    /// Check against this session's policy...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// ...or against the configuration of this base directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
    /// The command as the model would give it.
    pub argv: Vec<String>,
    /// With `base_dir`: the caller's environment, whose PATH resolves the
    /// whitelist (as in `session/create`; omitted: the daemon's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
}

/// `policy/check` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyCheckResult {
    /// Whether it would run.
    pub allowed: bool,
    /// The program that would run (absolute path), when allowed.
    pub program: Option<String>,
    /// Why, in one sentence, and under which sandbox.
    pub reason: String,
}

/// How a policy script runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScriptMode {
    /// A fresh process per call.
    Oneshot,
    /// A fresh process per call, started ahead of time.
    Prespawn,
    /// One long-lived worker, one JSON request and reply per line.
    Persistent,
    /// A client hook, answered over the socket.
    Rpc,
}

impl ScriptMode {
    /// The name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            ScriptMode::Oneshot => "oneshot",
            ScriptMode::Prespawn => "prespawn",
            ScriptMode::Persistent => "persistent",
            ScriptMode::Rpc => "rpc",
        }
    }
}

/// What a hook's own failure (error, timeout, malformed output) means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Treat it as a block (fail closed; the default).
    #[default]
    Block,
    /// Carry on as if the hook had not run.
    Ignore,
}

impl OnFailure {
    /// The names on the wire and in config.
    pub const NAMES: &'static [&'static str] = &["block", "ignore"];
}

/// `cache/stats` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheStats {
    /// The cache file.
    pub path: String,
    /// Replies stored.
    pub entries: u64,
    /// Their size.
    pub bytes: u64,
    /// The size cap (`max_cache_bytes`).
    pub max_bytes: u64,
    /// Calls answered from the cache since the daemon started.
    pub hits: u64,
    /// Calls that went to the provider.
    pub misses: u64,
    /// Calls that joined an identical call in flight.
    pub shared: u64,
    /// Calls waiting on one in flight now.
    pub waiting: u64,
}

/// `cache/clear` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheClearResult {
    /// Replies removed.
    pub removed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_wire_names() {
        for point in HookPoint::ALL {
            assert_eq!(serde_json::to_value(point).unwrap(), point.name());
        }
        assert_eq!(HookPoint::ALL.len(), HookPoint::NAMES.len());
        for mode in [ScriptMode::Oneshot, ScriptMode::Prespawn, ScriptMode::Persistent, ScriptMode::Rpc] {
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.name());
        }
        for (f, name) in [OnFailure::Block, OnFailure::Ignore].into_iter().zip(OnFailure::NAMES) {
            assert_eq!(serde_json::to_value(f).unwrap(), *name);
        }
    }
}
