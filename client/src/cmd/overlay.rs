//! The config overlay `swivalctl run` sends with `session/create`: the
//! config keys (Swival's names) its command-line flags set, typed. A key
//! whose flag is not given is left out, so the project's and the user's
//! config files decide it.
//!
//! The fields are declared in the order the keys go on the wire (the
//! client's `serde_json` keeps a map's order): keep new keys in the group
//! they belong to, and the daemon sees the same bytes for the same flags.

use serde::Serialize;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// The config keys set by `swivalctl run`'s flags (`None`, or an empty
/// list: the flag was not given and the key is not sent).
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct ConfigOverlay {
    /// `--provider`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// `--model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `--base-url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// `--api-key` (keys from the environment travel with the session's
    /// environment, never here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// `--reviewer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    /// `--max-turns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u64>,
    /// `--retries`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<u64>,
    /// `--provider-timeout`, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_timeout: Option<f64>,
    /// `--max-review-rounds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_review_rounds: Option<u64>,
    /// `--llm-filter`, the stages in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub llm_filter: Vec<String>,
    /// `--commands`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<Commands>,
    /// `--allowed-commands`, split on commas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_commands: Option<Vec<String>>,
    /// `--add-dir`, each taken from the current directory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_dirs: Vec<PathBuf>,
    /// `--mcp-config`, taken from the current directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_config: Option<PathBuf>,
    /// `--add-dir-ro`, each taken from the current directory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_dirs_ro: Vec<PathBuf>,
    /// `--files`: `some`, `all` or `none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<String>,
    /// `--sandbox`: `os` or `builtin`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// `--reasoning-effort`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// `--user-agent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// `--system-prompt`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// `--profile`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_profile: Option<String>,
    /// `--encrypt-secrets-key`, in hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encrypt_secrets_key: Option<String>,
    /// `--max-output-tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// `--max-context-tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_context_tokens: Option<u64>,
    /// `--max-output-lines`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_lines: Option<u64>,
    /// `--max-output-kb`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_kb: Option<u64>,
    /// `--temperature`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// `--top-p`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// `--seed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// `--extra-body`: any JSON object, passed to the provider as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_body: Option<Map<String, Value>>,
    /// `--yolo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yolo: Option<bool>,
    /// `--no-history`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_history: Option<bool>,
    /// `--sanitize-thinking`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sanitize_thinking: Option<bool>,
    /// `--show-thinking`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub show_thinking: Option<bool>,
    /// `--no-mcp`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_mcp: Option<bool>,
    /// `--cache`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<bool>,
    /// `--encrypt-secrets` (true) or `--no-encrypt-secrets` (false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encrypt_secrets: Option<bool>,
    /// `--sandbox-strict-read`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_strict_read: Option<bool>,
    /// `--no-system-prompt`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_system_prompt: Option<bool>,
    /// `--no-instructions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_instructions: Option<bool>,
    /// `--no-read-guard`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_read_guard: Option<bool>,
    /// `--no-read-named-files` (false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_named_files: Option<bool>,
    /// `--lean-tools` (true) or `--no-lean-tools` (false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lean_tools: Option<bool>,
    /// `--no-memory`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_memory: Option<bool>,
    /// `--memory-full`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_full: Option<bool>,
    /// `--no-continue`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_continue: Option<bool>,
    /// `--subagents` (true) or `--no-subagents` (false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagents: Option<bool>,
    /// `--self-review`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_review: Option<bool>,
    /// `--review-prompt`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_prompt: Option<String>,
    /// `--verify`, taken from the current directory: the criteria a
    /// review (`--self-review`, a reviewer) checks the answer against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<PathBuf>,
    /// `--skills-dir`, each taken from the current directory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skills_dir: Vec<PathBuf>,
    /// `--no-skills`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_skills: Option<bool>,
}

impl ConfigOverlay {
    /// The overlay as `session/create`'s `config`: a JSON object holding
    /// the keys that are set, in the order declared above.
    pub fn to_config(&self) -> swival_protocol::ConfigKeys {
        let keys =
            serde_json::to_value(self).expect("a config overlay serialises: its keys are names, its paths UTF-8");
        swival_protocol::ConfigKeys::of(keys)
    }
}

/// Swival's `commands` key: a mode, or the whitelist of command names.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Commands {
    /// `all`, `none` or `ask`.
    Mode(CommandMode),
    /// The names the agent may run (empty: none at all).
    Names(Vec<String>),
}

/// The modes of Swival's `commands` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CommandMode {
    /// Any command.
    All,
    /// No command.
    None,
    /// Each kind of command approved on the terminal first.
    Ask,
}
