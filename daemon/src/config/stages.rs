//! The script-running parts of the config: filter stages (`llm_filter`,
//! `[[filters]]`), command hooks (`[[hooks]]`) and custom secret patterns
//! (`[[encrypt_secrets_patterns]]`), with their per-entry defaults.

use super::command::Command;
use serde::{Deserialize, Serialize};

/// Seconds a filter stage may run before it is killed (Swival's fixed 30 s).
pub const DEFAULT_FILTER_TIMEOUT_S: f64 = 30.0;

/// Seconds a command hook may run before it is killed.
pub const DEFAULT_HOOK_TIMEOUT_S: f64 = 10.0;

/// How a filter or hook script is run (SPEC §7, process runner and pools).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessMode {
    /// A fresh process per call, as in Swival (optionally prespawned).
    #[default]
    Oneshot,
    /// One long-lived worker per script, one JSON request/reply per line.
    Persistent,
}

impl ProcessMode {
    /// The names accepted in config.
    pub(super) const NAMES: &'static [&'static str] = &["oneshot", "persistent"];
}

/// Where in the pipeline a hook runs (SPEC §7), and what a hook's own
/// failure means: declared once, in the protocol crate.
pub use swival_protocol::{HookPoint, OnFailure};

fn default_filter_timeout() -> f64 {
    DEFAULT_FILTER_TIMEOUT_S
}

fn default_hook_timeout() -> f64 {
    DEFAULT_HOOK_TIMEOUT_S
}

/// One stage of the outbound filter chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterStage {
    /// The script to run, already split and resolved.
    pub command: Command,
    /// Seconds before the stage is killed and the call blocked.
    #[serde(default = "default_filter_timeout")]
    pub timeout_s: f64,
    /// One process per call, or a persistent worker.
    #[serde(default)]
    pub mode: ProcessMode,
    /// One-shot processes kept started and waiting on stdin (0 = none,
    /// Swival's way; docs/hooks.md says why that is the default).
    #[serde(default)]
    pub prespawn: u32,
}

impl FilterStage {
    /// A stage given as a plain command (`llm_filter`): every option at its default.
    pub fn with_defaults(command: Command) -> FilterStage {
        FilterStage { command, timeout_s: DEFAULT_FILTER_TIMEOUT_S, mode: ProcessMode::Oneshot, prespawn: 0 }
    }
}

/// A hook run as a command (`[[hooks]]`), speaking JSON on stdin/stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandHook {
    /// The pipeline point it runs at.
    pub point: HookPoint,
    /// The script to run, already split and resolved.
    pub command: Command,
    /// Lower runs first; ties keep config order.
    #[serde(default)]
    pub priority: i64,
    /// Seconds before the hook is killed (then `on_failure` applies).
    #[serde(default = "default_hook_timeout")]
    pub timeout_s: f64,
    /// Whether a failing hook blocks (default) or is ignored.
    #[serde(default)]
    pub on_failure: OnFailure,
    /// One process per call, or a persistent worker.
    #[serde(default)]
    pub mode: ProcessMode,
    /// One-shot processes kept started and waiting on stdin (0 = none,
    /// Swival's way; docs/hooks.md says why that is the default).
    #[serde(default)]
    pub prespawn: u32,
}

/// A custom secret pattern for `encrypt_secrets` (Swival's fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretPattern {
    /// Pattern name; also part of the encryption tweak.
    pub name: String,
    /// Literal prefix that starts a token.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Regex the token body must match.
    #[serde(default)]
    pub body_regex: Option<String>,
    /// Characters a body may contain (Swival: alphanumeric).
    #[serde(default)]
    pub body_alphabet: Option<String>,
    /// Shortest accepted body (Swival: prefix length + 8).
    #[serde(default)]
    pub min_body_length: Option<u32>,
}
