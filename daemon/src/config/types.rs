//! [`SessionConfig`], the typed effective configuration of one session,
//! and the small value types its fields use.
//!
//! Field names are Swival's TOML keys, so the JSON a client gets back reads
//! like the user's own config. Serializing redacts secrets (`api_key`,
//! `encrypt_secrets_key`, credentials inside kept tables): the output is for
//! display, not for reading back; to rebuild a session, call
//! [`super::load`] again with the original request config.

use super::command::Command;
use super::mcp::McpServerConfig;
use super::provider::ProviderKind;
use super::stages::{CommandHook, FilterStage, SecretPattern};
use super::REDACTED;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;

/// Which files the file tools may touch (Swival's `files`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FilesMode {
    /// The base dir and the allowed dirs (Swival's default).
    Some,
    /// Anything but the filesystem root.
    All,
    /// Only `<base_dir>/.swival`.
    None,
}

impl FilesMode {
    /// The names accepted in config.
    pub(super) const NAMES: &'static [&'static str] = &["some", "all", "none"];
}

/// Swival's `commands` string form (the list form lands in `allowed_commands`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandsMode {
    /// Any program may run.
    All,
    /// No command tool at all.
    None,
    /// Any program, each bucket approved by the user first (`sandbox/ask.rs`).
    Ask,
}

/// Where `run_command` may run things (SPEC §6 with Swival's precedence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandAccess<'a> {
    /// No command tool is offered.
    Off,
    /// Only these bare names, resolved to absolute paths at session start.
    Whitelist(&'a [String]),
    /// Any program.
    Unrestricted,
    /// Any program, once the user approves its bucket.
    Ask,
}

/// How commands are confined (ours; Swival's `agentfs`/`nono` are refused).
pub use swival_protocol::SandboxMode;

/// `reasoning_effort`, passed to the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// `"none"`: ask for no reasoning.
    #[serde(rename = "none")]
    NoReasoning,
    /// `"minimal"`.
    Minimal,
    /// `"low"`.
    Low,
    /// `"medium"`.
    Medium,
    /// `"high"`.
    High,
    /// `"xhigh"`.
    Xhigh,
    /// `"default"`: send nothing, let the provider decide.
    #[serde(rename = "default")]
    ProviderDefault,
}

impl ReasoningEffort {
    /// The names accepted in config.
    pub(super) const NAMES: &'static [&'static str] = &["none", "minimal", "low", "medium", "high", "xhigh", "default"];

    /// The value as sent to the provider.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::NoReasoning => "none",
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::Xhigh => "xhigh",
            ReasoningEffort::ProviderDefault => "default",
        }
    }
}

/// A secret string: never printed by `Debug` nor serialized.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// The real value, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(REDACTED)
    }
}

/// An IP network in CIDR (`10.0.0.0/8`, `fd00::/8`; a bare address: one host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    /// Network address, host bits cleared.
    addr: IpAddr,
    /// Prefix length in bits.
    prefix: u8,
}

impl Cidr {
    /// Whether `ip` lies in this network (IPv4-mapped IPv6 counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => mask(u32::from(ip).into(), 32, self.prefix) == u32::from(net).into(),
            (IpAddr::V6(net), IpAddr::V6(ip)) => mask(u128::from(ip), 128, self.prefix) == u128::from(net),
            _ => false,
        }
    }
}

/// Clear the host bits of a `bits`-wide address.
fn mask(value: u128, bits: u8, prefix: u8) -> u128 {
    if prefix == 0 {
        return 0;
    }
    let keep = u128::MAX << (bits - prefix);
    let width = if bits == 128 { u128::MAX } else { (1u128 << bits) - 1 };
    value & keep & width
}

/// Text that is not an IP network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    /// The address part is not an IP address.
    #[error("{0:?} is not an IP network; write it like 10.0.0.0/8 or fd00::/8")]
    NotANetwork(String),
    /// The prefix length is not a number within the address's bits.
    #[error("{text:?} has a prefix length outside 0..={bits}")]
    Prefix { text: String, bits: u8 },
}

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(text: &str) -> Result<Cidr, CidrError> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| CidrError::NotANetwork(text.to_owned()))?;
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => bits,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if n <= bits => n,
                _ => return Err(CidrError::Prefix { text: text.to_owned(), bits }),
            },
        };
        let addr = match addr {
            IpAddr::V4(a) => IpAddr::V4((mask(u32::from(a).into(), 32, prefix) as u32).into()),
            IpAddr::V6(a) => IpAddr::V6(mask(u128::from(a), 128, prefix).into()),
        };
        Ok(Cidr { addr, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Serialize for Cidr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Cidr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Cidr, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Swival keys swivald accepts and keeps but does not act on yet (listed
/// in `schema.rs`), in their normal form. Serialized flat beside the other
/// keys, with credentials (`env`, `headers`, `auth_token`, `api_key`) redacted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeptKeys(pub BTreeMap<String, Value>);

impl Serialize for KeptKeys {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, redact(v))))
    }
}

/// A copy of `value` with credential-bearing fields replaced.
fn redact(value: &Value) -> Value {
    const SECRET_FIELDS: &[&str] = &["env", "headers", "auth_token", "api_key"];
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if SECRET_FIELDS.contains(&k.as_str()) {
                        match v {
                            Value::Object(inner) => {
                                Value::Object(inner.keys().map(|ik| (ik.clone(), Value::from(REDACTED))).collect())
                            }
                            _ => Value::from(REDACTED),
                        }
                    } else {
                        redact(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

/// Tokens of the project map for a local model server by default.
pub const DEFAULT_MAP_TOKENS: u64 = 400;

/// The effective configuration of one session, Swival's key names.
///
/// Built by [`super::load`]; `Deserialize` is how the merged key map becomes
/// this struct, and is not meant for reading serialized output back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionConfig {
    /// Which LLM provider to call.
    pub provider: ProviderKind,
    /// Model id (discovered when unset); for `provider = "command"`, the command line.
    pub model: Option<String>,
    /// argv of the `command` provider: `model` split and resolved (only when `provider = "command"`).
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub model_command: Option<Command>,
    /// API key; when unset the provider's environment variable is used.
    pub api_key: Option<Secret>,
    /// Provider base URL; the preset's when unset (required for `generic`).
    pub base_url: Option<String>,
    /// `User-Agent` sent to the provider; the provider module's default when unset.
    pub user_agent: Option<String>,
    /// `max_tokens` asked of the model.
    pub max_output_tokens: u64,
    /// Context window in tokens; discovered from the provider when unset.
    pub max_context_tokens: Option<u64>,
    /// Line cap of `read_file` and friends.
    pub max_output_lines: u64,
    /// Byte cap of tool output, in KiB.
    pub max_output_kb: u64,
    /// Sampling temperature (provider default when unset).
    pub temperature: Option<f64>,
    /// Nucleus sampling (provider default when unset).
    pub top_p: Option<f64>,
    /// Sampling seed.
    pub seed: Option<i64>,
    /// Turns before a run ends as `exhausted`.
    pub max_turns: u64,
    /// Provider attempts per call (1 = no retry).
    pub retries: u64,
    /// Seconds one provider request may take (ours: `--provider-timeout`).
    pub provider_timeout: f64,
    /// Replaces the built-in system prompt.
    pub system_prompt: Option<String>,
    /// Send no system prompt at all.
    pub no_system_prompt: bool,
    /// File tool reach; when unset, `all` under `yolo`, else `some` (see [`Self::files_mode`]).
    pub files: Option<FilesMode>,
    /// Swival's `commands` string form (see [`Self::command_access`]).
    pub commands: Option<CommandsMode>,
    /// `run_command` whitelist of bare program names (also Swival's `commands` list form).
    pub allowed_commands: Vec<String>,
    /// Buckets `commands = "ask"` runs without asking.
    pub approved_buckets: Vec<String>,
    /// Unrestricted files and commands unless `files`/`commands` say otherwise.
    pub yolo: bool,
    /// Extra read-write directories.
    pub allowed_dirs: Vec<PathBuf>,
    /// Extra read-only directories.
    pub allowed_dirs_ro: Vec<PathBuf>,
    /// Let `write_file` overwrite files it has not read.
    pub no_read_guard: bool,
    /// Parse a source file after a write or edit and say when the change
    /// broke its syntax or removed a definition (swivald's).
    pub edit_checks: bool,
    /// The user's own checks after a change, by file extension (or whole
    /// file name): argv with `{path}` for the file (swivald's;
    /// `sandbox/check.rs`).
    pub edit_check_commands: BTreeMap<String, Command>,
    /// Read the files the task names before the first model call and send
    /// them as a second user message (ours; `false` sends Swival's
    /// `[system, user]`).
    pub read_named_files: bool,
    /// Offer lean tool schemas (`tools/lean.rs`); see [`Self::offers_lean_tools`].
    pub lean_tools: Option<bool>,
    /// Tokens of the project map a new conversation's first request
    /// carries (`tools/map.rs`; 0: none); see [`Self::project_map_budget`].
    pub project_map_tokens: Option<u64>,
    /// The loop guards: a repeated identical call refused, Swival's error
    /// guardrail, re-read and finishing nudges, a stuck run ended.
    pub storm_breaker: bool,
    /// Tool calls run from one reply, at most (0: no cap); the rest get
    /// an error saying so (swivald's: one reply of a small model held 44).
    pub max_calls_per_reply: u64,
    /// Nudges and loop guards turned off by name (`agent/nudge/`), for
    /// users who do not want one and for `bench realmodel --ablate`.
    pub disable_nudges: Vec<swival_protocol::InterventionKind>,
    /// Do not load AGENTS.md-style instruction files.
    pub no_instructions: bool,
    /// Do not append the answer to `.swival/HISTORY.md`.
    pub no_history: bool,
    /// Do not load `.swival/memory/MEMORY.md` (and drop the prompt's memory section).
    pub no_memory: bool,
    /// Inject all of MEMORY.md (200 lines or 8,000 characters) instead of
    /// the bootstrap and retrieved entries.
    pub memory_full: bool,
    /// Neither write `.swival/continue.md` when a run stops early nor load it.
    pub no_continue: bool,
    /// Offer `spawn_subagent` and `check_subagents` (Swival's `--subagents`).
    pub subagents: bool,
    /// Discover no skills: no catalogue, no `use_skill` (Swival's `--no-skills`).
    pub no_skills: bool,
    /// More directories to find skills in (Swival's `--skills-dir`).
    pub skills_dir: Vec<PathBuf>,
    /// Less progress output.
    pub quiet: bool,
    /// Filter commands from `llm_filter` (a string is one stage, a list several).
    pub llm_filter: Vec<Command>,
    /// Filter stages with options (`[[filters]]`); run after `llm_filter`.
    pub filters: Vec<FilterStage>,
    /// Command hooks (`[[hooks]]`).
    pub hooks: Vec<CommandHook>,
    /// Reviewer command; the base dir is appended as its last argument.
    pub reviewer: Option<Command>,
    /// The project's own check, run once the model answers after changing
    /// files (`agent/verify.rs`); unset, one is detected with certainty
    /// where the command policy lets it run.
    pub verify_command: Option<Command>,
    /// Most reviewer rounds per run.
    pub max_review_rounds: u64,
    /// Seconds one reviewer run may take.
    pub reviewer_timeout_s: f64,
    /// Review each answer with `swivalctl run --reviewer-mode` on the same
    /// model (Swival's `--self-review`), unless `reviewer` is set.
    pub self_review: bool,
    /// Instructions added to the review prompt (`--review-prompt`).
    pub review_prompt: Option<String>,
    /// The file a review reads the task from (`--objective`).
    pub objective: Option<PathBuf>,
    /// The file a review reads acceptance criteria from (`--verify`).
    pub verify: Option<PathBuf>,
    /// Take whole `<think>…</think>` blocks out of replies (Swival's
    /// `--sanitize-thinking`).
    pub sanitize_thinking: bool,
    /// Show the model's reasoning (Swival's `--show-thinking`).
    pub show_thinking: bool,
    /// Merged into the top level of every provider request body.
    pub extra_body: Option<Map<String, Value>>,
    /// Prices by model, US dollars per million tokens (`input`, `output`,
    /// optional `cached_input`): a run's cost in its stats and report.
    pub model_prices: Option<Map<String, Value>>,
    /// Reasoning effort asked of the model.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Use the shared response cache.
    pub cache: bool,
    /// Encrypt secrets in outbound messages.
    pub encrypt_secrets: bool,
    /// Hex key for `encrypt_secrets` (16, 24 or 32 bytes); random per session when unset.
    pub encrypt_secrets_key: Option<Secret>,
    /// Extra tweak mixed into the secret encryption.
    pub encrypt_secrets_tweak: Option<String>,
    /// Custom secret patterns, tried before the built-in ones.
    pub encrypt_secrets_patterns: Vec<SecretPattern>,
    /// How commands are confined.
    pub sandbox: SandboxMode,
    /// Let commands use the network.
    pub command_network: bool,
    /// Private networks `fetch_url` may reach despite the SSRF checks.
    pub fetch_allow_networks: Vec<Cidr>,
    /// Environment variables commands get beyond the fixed allow-list
    /// (PATH, HOME, USER, LOGNAME, LANG, LC_*, TERM, TZ, TMPDIR).
    pub command_env: Vec<String>,
    /// Processes and threads one command may add to the user's own (0: no
    /// limit; `RLIMIT_NPROC`).
    pub command_max_processes: u64,
    /// Megabytes of data (heap, private writable mappings) per process of
    /// a command (0: no limit; `RLIMIT_DATA`).
    pub command_max_memory_mb: u64,
    /// Seconds of CPU time per process of a command (0: no limit;
    /// `RLIMIT_CPU`).
    pub command_max_cpu_s: u64,
    /// Paths hidden from commands besides the daemon's directories and
    /// the credential stores hidden by default.
    pub sandbox_hide: Vec<PathBuf>,
    /// Paths hidden by default that commands may see after all.
    pub sandbox_expose: Vec<PathBuf>,
    /// Commands read only system directories, the base dir, the allowed
    /// dirs and their temp dir (Swival's key).
    pub sandbox_strict_read: bool,
    /// Stream replies with SSE (non-streaming when false).
    pub stream: bool,
    /// MCP servers by name (`[mcp_servers.NAME]`, merged by name; an
    /// `mcpServers` JSON file below them).
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Start no MCP server (`--no-mcp`).
    pub no_mcp: bool,
    /// The MCP JSON file read instead of `<base>/.swival/mcp.json` (`--mcp-config`).
    pub mcp_config: Option<PathBuf>,
    /// Run stdio MCP servers under the command sandbox (Landlock, no
    /// network unless `command_network`, hidden paths, the allow-listed
    /// environment plus the server's `env`).
    pub sandbox_mcp: bool,
    /// Swival keys accepted but not acted on yet, by key name.
    #[serde(flatten, skip_deserializing)]
    pub kept: KeptKeys,
}

/// Default `max_calls_per_reply`: more than a reply that reads a few
/// files and edits a few needs, far fewer than a model in a loop sends.
pub const DEFAULT_MAX_CALLS_PER_REPLY: u64 = 16;
/// Default `max_output_tokens`.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 32768;
/// Default `max_review_rounds` (SPEC §7; Swival's is 15).
pub const DEFAULT_MAX_REVIEW_ROUNDS: u64 = 5;

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig::DEFAULT
    }
}

impl SessionConfig {
    /// Every key at its default: Swival's, or swivald's where it has its own.
    pub const DEFAULT: SessionConfig = SessionConfig {
        provider: ProviderKind::Lmstudio,
        model: None,
        model_command: None,
        api_key: None,
        base_url: None,
        user_agent: None,
        max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        max_context_tokens: None,
        max_output_lines: 2000,
        max_output_kb: 50,
        temperature: None,
        top_p: None,
        seed: None,
        max_turns: 100,
        retries: 5,
        provider_timeout: 900.0,
        system_prompt: None,
        no_system_prompt: false,
        files: None,
        commands: None,
        allowed_commands: Vec::new(),
        approved_buckets: Vec::new(),
        yolo: false,
        allowed_dirs: Vec::new(),
        allowed_dirs_ro: Vec::new(),
        no_read_guard: false,
        edit_checks: true,
        edit_check_commands: BTreeMap::new(),
        read_named_files: true,
        lean_tools: None,
        project_map_tokens: None,
        storm_breaker: true,
        max_calls_per_reply: DEFAULT_MAX_CALLS_PER_REPLY,
        disable_nudges: Vec::new(),
        no_instructions: false,
        no_history: false,
        no_memory: false,
        memory_full: false,
        no_continue: false,
        self_review: false,
        review_prompt: None,
        objective: None,
        verify: None,
        subagents: false,
        no_skills: false,
        skills_dir: Vec::new(),
        quiet: false,
        llm_filter: Vec::new(),
        filters: Vec::new(),
        hooks: Vec::new(),
        reviewer: None,
        verify_command: None,
        max_review_rounds: DEFAULT_MAX_REVIEW_ROUNDS,
        reviewer_timeout_s: 120.0,
        extra_body: None,
        model_prices: None,
        sanitize_thinking: false,
        show_thinking: false,
        reasoning_effort: None,
        cache: false,
        encrypt_secrets: false,
        encrypt_secrets_key: None,
        encrypt_secrets_tweak: None,
        encrypt_secrets_patterns: Vec::new(),
        sandbox: SandboxMode::Os,
        command_network: false,
        fetch_allow_networks: Vec::new(),
        command_env: Vec::new(),
        command_max_processes: 1024,
        command_max_memory_mb: 4096,
        command_max_cpu_s: 900,
        sandbox_hide: Vec::new(),
        sandbox_expose: Vec::new(),
        sandbox_strict_read: false,
        stream: true,
        mcp_servers: BTreeMap::new(),
        no_mcp: false,
        mcp_config: None,
        sandbox_mcp: false,
        kept: KeptKeys(BTreeMap::new()),
    };
}

impl SessionConfig {
    /// The outbound filter chain in the order stages run: the `llm_filter`
    /// commands first (in list order, every option at its default), then
    /// the `[[filters]]` tables in file order.
    pub fn filter_stages(&self) -> Vec<FilterStage> {
        self.llm_filter.iter().cloned().map(FilterStage::with_defaults).chain(self.filters.iter().cloned()).collect()
    }

    /// The file tools' reach: `files` when set, else `all` under `yolo`,
    /// else `some` (Swival: an explicit `files` wins over `yolo`).
    pub fn files_mode(&self) -> FilesMode {
        match self.files {
            Some(mode) => mode,
            None if self.yolo => FilesMode::All,
            None => FilesMode::Some,
        }
    }

    /// Whether the model is offered the lean tool schemas: `lean_tools`
    /// when set, else for a model server on this machine (llama.cpp, LM
    /// Studio, Ollama), where each prompt token costs wall time up front.
    pub fn offers_lean_tools(&self) -> bool {
        self.lean_tools.unwrap_or_else(|| self.provider.is_local())
    }

    /// Tokens of the project map: `project_map_tokens`, else a few hundred
    /// for a model server on this machine (a small model starts from where
    /// things are), none for any other provider.
    pub fn project_map_budget(&self) -> u64 {
        self.project_map_tokens.unwrap_or(if self.provider.is_local() { DEFAULT_MAP_TOKENS } else { 0 })
    }

    /// What `run_command` may run. `commands = "none"` turns it off; a
    /// whitelist wins over `yolo` (an explicit setting beats yolo, as in
    /// Swival); `commands = "all"` or `yolo` lifts every limit; otherwise
    /// it is off (SPEC §6: off unless whitelisted or yolo).
    pub fn command_access(&self) -> CommandAccess<'_> {
        match self.commands {
            Some(CommandsMode::None) => CommandAccess::Off,
            _ if !self.allowed_commands.is_empty() => CommandAccess::Whitelist(&self.allowed_commands),
            Some(CommandsMode::All) => CommandAccess::Unrestricted,
            Some(CommandsMode::Ask) => CommandAccess::Ask,
            None if self.yolo => CommandAccess::Unrestricted,
            None => CommandAccess::Off,
        }
    }
}
