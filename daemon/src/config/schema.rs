//! The key table: every config key swivald accepts, its kind (type, checks
//! and normal form, see `parse.rs`), and whether swivald acts on it.
//!
//! Keys swivald acts on are the fields of [`super::SessionConfig`]. Keys
//! Swival has that swivald accepts and keeps (in `SessionConfig::kept`)
//! but does not act on yet: `aws_profile`, `project`, `location`,
//! `network`, `sandbox_session`,
//! `sandbox_auto_session`, the `nono_*` keys,
//! `color`, `proactive_summaries`, `no_a2a`, `prompt_cache`,
//! `cache_dir`, `serve_name`,
//! `serve_description`, `serve_skills`, `lifecycle_command`,
//! `lifecycle_timeout`, `lifecycle_fail_closed`, `no_lifecycle`,
//! `command_middleware`,
//! `oneshot_commands`, `trace_dir`, `metaskills`,
//! `flatten_mcp_schemas`, `a2a_servers`, `audit`,
//! and `experimental`. They are still type-checked and their paths
//! resolved, so a later version can act on them unchanged; setting one
//! loads with a warning that swivald ignores it. `profiles` and
//! `active_profile` are consumed by the merge (the selected profile's keys
//! apply). A key in no table here loads with Swival's unknown-key warning
//! when a file sets it, and is an error in a `session/create` request.

use super::stages::{HookPoint, OnFailure, ProcessMode};
use super::types::{FilesMode, ReasoningEffort, SandboxMode};

/// What a key's value must be, and what it becomes (see `parse::normalize`).
#[derive(Debug)]
pub(super) enum Kind {
    /// `true`/`false`.
    Bool,
    /// Any string.
    Str,
    /// An integer no smaller than `min`.
    Int { min: i64 },
    /// An int or a float, finite; when `positive`, greater than zero.
    Float { positive: bool },
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// A list of strings.
    StrList,
    /// A list of strings, each one of these.
    EnumList(&'static [&'static str]),
    /// One path: `~` expanded, relative joined to the config dir.
    Path,
    /// A list of paths, each like [`Kind::Path`].
    PathList,
    /// A command string, split into argv with a path-like program resolved.
    Command,
    /// A command string or a list of them (`llm_filter`); always a list after.
    CommandList,
    /// A table of commands by name (`edit_check_commands`: extension →
    /// command), each a command string or an argv list; merged by name.
    CommandTable,
    /// Swival's `commands`: `"all"`, `"none"`, or a list of bare names.
    CommandPolicy,
    /// A list of bare program names (`allowed_commands`).
    CommandNames,
    /// Hex of a 16, 24 or 32-byte key.
    HexKey,
    /// A list of CIDR networks.
    Cidrs,
    /// Any table, kept as it is (`extra_body`).
    Table,
    /// A table whose values are all strings (an MCP server's `env`, `headers`).
    StrTable,
    /// A table with known fields (`[audit]`).
    Section(&'static [Field]),
    /// An array of tables with known fields (`[[filters]]`); another
    /// field is an error.
    Tables(&'static [Field]),
    /// An array of tables whose known fields are checked and whose other
    /// fields are dropped (`[[serve_skills]]`: Swival only warns).
    OpenTables(&'static [Field]),
    /// A table of tables by name (`[mcp_servers.NAME]`), each with known
    /// fields checked and other fields dropped, as Swival ignores them.
    NamedTables(&'static [Field]),
    /// `[profiles.NAME]` tables of LLM keys.
    Profiles,
}

impl Kind {
    /// The expected type in Swival's words, for "expected X, got Y".
    pub(super) fn expected(&self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Int { .. } => "int",
            Kind::Float { .. } => "int or float",
            Kind::Str | Kind::Enum(_) | Kind::Path | Kind::Command | Kind::HexKey => "str",
            Kind::CommandList | Kind::CommandPolicy => "str or list",
            Kind::StrList
            | Kind::EnumList(_)
            | Kind::PathList
            | Kind::CommandNames
            | Kind::Cidrs
            | Kind::Tables(_)
            | Kind::OpenTables(_) => "list",
            Kind::Table
            | Kind::StrTable
            | Kind::CommandTable
            | Kind::Section(_)
            | Kind::NamedTables(_)
            | Kind::Profiles => "dict",
        }
    }
}

/// Whether swivald acts on a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Support {
    /// A field of `SessionConfig`.
    Acted,
    /// Accepted, checked and kept in `SessionConfig::kept`, not acted on
    /// yet; setting it gives a warning.
    Kept,
    /// Consumed by the merge itself (`profiles`, `active_profile`); kept
    /// in `SessionConfig::kept` for display.
    Merged,
}

/// One top-level key.
#[derive(Debug)]
pub(super) struct KeySpec {
    /// The TOML key.
    pub name: &'static str,
    /// Its type and normal form.
    pub kind: Kind,
    /// Whether swivald acts on it.
    pub support: Support,
}

/// One field of a table kind.
#[derive(Debug)]
pub(super) struct Field {
    /// The field's key.
    pub name: &'static str,
    /// Its type and normal form.
    pub kind: Kind,
    /// Whether a table without it is an error.
    pub required: bool,
}

/// Provider names; must match `ProviderKind`'s serde names (tested).
pub(super) const PROVIDER_NAMES: &[&str] = &[
    "lmstudio",
    "llamacpp",
    "ollama",
    "openai",
    "openrouter",
    "generic",
    "command",
    "google",
    "huggingface",
    "applefm",
];

/// Providers Swival has and swivald does not.
pub(super) const SWIVAL_ONLY_PROVIDERS: &[&str] = &["chatgpt", "bedrock", "geap", "vertexai"];

const fn field(name: &'static str, kind: Kind, required: bool) -> Field {
    Field { name, kind, required }
}

const ANY_INT: Kind = Kind::Int { min: i64::MIN };
const SECONDS: Kind = Kind::Float { positive: true };

/// `[[filters]]`.
pub(super) const FILTER_FIELDS: &[Field] = &[
    field("command", Kind::Command, true),
    field("timeout_s", SECONDS, false),
    field("mode", Kind::Enum(ProcessMode::NAMES), false),
    field("prespawn", Kind::Int { min: 0 }, false),
];

/// `[[hooks]]`.
pub(super) const HOOK_FIELDS: &[Field] = &[
    field("point", Kind::Enum(HookPoint::NAMES), true),
    field("command", Kind::Command, true),
    field("priority", ANY_INT, false),
    field("timeout_s", SECONDS, false),
    field("on_failure", Kind::Enum(OnFailure::NAMES), false),
    field("mode", Kind::Enum(ProcessMode::NAMES), false),
    field("prespawn", Kind::Int { min: 0 }, false),
];

/// `[[encrypt_secrets_patterns]]`.
const SECRET_PATTERN_FIELDS: &[Field] = &[
    field("name", Kind::Str, true),
    field("prefix", Kind::Str, false),
    field("body_regex", Kind::Str, false),
    field("body_alphabet", Kind::Str, false),
    field("min_body_length", Kind::Int { min: 1 }, false),
];

/// `[mcp_servers.NAME]` (and each server of an `mcpServers` JSON file);
/// `cwd` is swivald's: the server's working directory (default: the base dir).
pub(super) const MCP_FIELDS: &[Field] = &[
    field("command", Kind::Str, false),
    field("args", Kind::StrList, false),
    field("env", Kind::StrTable, false),
    field("cwd", Kind::Path, false),
    field("url", Kind::Str, false),
    field("headers", Kind::StrTable, false),
    field("type", Kind::Str, false),
    field("transport", Kind::Str, false),
];

/// `[a2a_servers.NAME]`.
const A2A_FIELDS: &[Field] = &[
    field("url", Kind::Str, true),
    field("card_url", Kind::Str, false),
    field("auth_type", Kind::Str, false),
    field("auth_token", Kind::Str, false),
    field("timeout", SECONDS, false),
];

/// `[[serve_skills]]`.
const SERVE_SKILL_FIELDS: &[Field] = &[
    field("id", Kind::Str, true),
    field("name", Kind::Str, false),
    field("description", Kind::Str, false),
    field("examples", Kind::StrList, false),
];

/// `[audit]`.
const AUDIT_FIELDS: &[Field] =
    &[field("force_review", Kind::StrList, false), field("patch_max_turns", Kind::Int { min: 1 }, false)];

/// `[experimental]`.
const EXPERIMENTAL_FIELDS: &[Field] = &[
    field("repair_truncated_args", Kind::Bool, false),
    field("scavenge_content_calls", Kind::Bool, false),
    field("storm_breaker", Kind::Bool, false),
    field("flatten_mcp_schemas", Kind::Bool, false),
];

/// Keys allowed inside `[profiles.NAME]` (Swival's `PROFILE_KEYS`).
pub(super) const PROFILE_KEYS: &[&str] = &[
    "description",
    "provider",
    "model",
    "api_key",
    "user_agent",
    "base_url",
    "aws_profile",
    "project",
    "location",
    "max_output_tokens",
    "max_context_tokens",
    "temperature",
    "top_p",
    "seed",
    "extra_body",
    "reasoning_effort",
    "sanitize_thinking",
    "show_thinking",
];

const fn acted(name: &'static str, kind: Kind) -> KeySpec {
    KeySpec { name, kind, support: Support::Acted }
}

const fn kept(name: &'static str, kind: Kind) -> KeySpec {
    KeySpec { name, kind, support: Support::Kept }
}

/// Every accepted top-level key.
pub(super) const KEYS: &[KeySpec] = &[
    acted("provider", Kind::Enum(PROVIDER_NAMES)),
    acted("model", Kind::Str),
    acted("api_key", Kind::Str),
    acted("base_url", Kind::Str),
    acted("user_agent", Kind::Str),
    acted("max_output_tokens", Kind::Int { min: 1 }),
    acted("max_context_tokens", Kind::Int { min: 1 }),
    acted("max_output_lines", Kind::Int { min: 1 }),
    acted("max_output_kb", Kind::Int { min: 1 }),
    acted("temperature", Kind::Float { positive: false }),
    acted("top_p", Kind::Float { positive: false }),
    acted("seed", ANY_INT),
    acted("max_turns", Kind::Int { min: 1 }),
    acted("retries", Kind::Int { min: 1 }),
    acted("provider_timeout", SECONDS),
    acted("system_prompt", Kind::Str),
    acted("no_system_prompt", Kind::Bool),
    acted("files", Kind::Enum(FilesMode::NAMES)),
    acted("commands", Kind::CommandPolicy),
    acted("allowed_commands", Kind::CommandNames),
    acted("approved_buckets", Kind::StrList),
    acted("yolo", Kind::Bool),
    acted("allowed_dirs", Kind::PathList),
    acted("allowed_dirs_ro", Kind::PathList),
    acted("no_read_guard", Kind::Bool),
    acted("edit_checks", Kind::Bool),
    acted("edit_check_commands", Kind::CommandTable),
    acted("read_named_files", Kind::Bool),
    acted("lean_tools", Kind::Bool),
    acted("project_map_tokens", Kind::Int { min: 0 }),
    acted("max_calls_per_reply", Kind::Int { min: 0 }),
    acted("disable_nudges", Kind::EnumList(&swival_protocol::InterventionKind::NAMES)),
    acted("no_instructions", Kind::Bool),
    acted("no_history", Kind::Bool),
    acted("no_memory", Kind::Bool),
    acted("no_continue", Kind::Bool),
    acted("memory_full", Kind::Bool),
    acted("quiet", Kind::Bool),
    acted("llm_filter", Kind::CommandList),
    acted("filters", Kind::Tables(FILTER_FIELDS)),
    acted("hooks", Kind::Tables(HOOK_FIELDS)),
    acted("reviewer", Kind::Command),
    acted("verify_command", Kind::Command),
    acted("max_review_rounds", Kind::Int { min: 0 }),
    acted("reviewer_timeout_s", SECONDS),
    acted("extra_body", Kind::Table),
    acted("model_prices", Kind::Table),
    acted("reasoning_effort", Kind::Enum(ReasoningEffort::NAMES)),
    acted("cache", Kind::Bool),
    acted("encrypt_secrets", Kind::Bool),
    acted("encrypt_secrets_key", Kind::HexKey),
    acted("encrypt_secrets_tweak", Kind::Str),
    acted("encrypt_secrets_patterns", Kind::Tables(SECRET_PATTERN_FIELDS)),
    acted("sandbox", Kind::Enum(SandboxMode::NAMES)),
    acted("command_network", Kind::Bool),
    acted("fetch_allow_networks", Kind::Cidrs),
    acted("command_env", Kind::StrList),
    acted("command_max_processes", Kind::Int { min: 0 }),
    acted("command_max_memory_mb", Kind::Int { min: 0 }),
    acted("command_max_cpu_s", Kind::Int { min: 0 }),
    acted("sandbox_hide", Kind::PathList),
    acted("sandbox_expose", Kind::PathList),
    acted("sandbox_strict_read", Kind::Bool),
    acted("stream", Kind::Bool),
    kept("aws_profile", Kind::Str),
    kept("project", Kind::Str),
    kept("location", Kind::Str),
    kept("network", Kind::Enum(&["full", "provider-only", "none"])),
    kept("sandbox_session", Kind::Str),
    kept("sandbox_auto_session", Kind::Bool),
    kept("nono_profile", Kind::Str),
    kept("nono_network_profile", Kind::Str),
    kept("nono_rollback", Kind::Bool),
    kept("nono_block_net", Kind::Bool),
    kept("nono_audit_integrity", Kind::Bool),
    kept("nono_allow_domain", Kind::StrList),
    kept("nono_credential", Kind::StrList),
    acted("no_skills", Kind::Bool),
    acted("skills_dir", Kind::PathList),
    kept("color", Kind::Bool),
    acted("self_review", Kind::Bool),
    acted("review_prompt", Kind::Str),
    acted("objective", Kind::Path),
    acted("verify", Kind::Path),
    kept("proactive_summaries", Kind::Bool),
    acted("no_mcp", Kind::Bool),
    acted("mcp_config", Kind::Path),
    acted("sandbox_mcp", Kind::Bool),
    kept("no_a2a", Kind::Bool),
    kept("prompt_cache", Kind::Bool),
    acted("sanitize_thinking", Kind::Bool),
    acted("show_thinking", Kind::Bool),
    kept("cache_dir", Kind::Path),
    kept("serve_name", Kind::Str),
    kept("serve_description", Kind::Str),
    kept("serve_skills", Kind::OpenTables(SERVE_SKILL_FIELDS)),
    kept("lifecycle_command", Kind::Command),
    kept("lifecycle_timeout", Kind::Int { min: 1 }),
    kept("lifecycle_fail_closed", Kind::Bool),
    kept("no_lifecycle", Kind::Bool),
    kept("command_middleware", Kind::Command),
    acted("subagents", Kind::Bool),
    kept("oneshot_commands", Kind::Bool),
    kept("trace_dir", Kind::Str),
    kept("metaskills", Kind::Str),
    acted("storm_breaker", Kind::Bool),
    kept("flatten_mcp_schemas", Kind::Bool),
    acted("mcp_servers", Kind::NamedTables(MCP_FIELDS)),
    kept("a2a_servers", Kind::NamedTables(A2A_FIELDS)),
    kept("audit", Kind::Section(AUDIT_FIELDS)),
    kept("experimental", Kind::Section(EXPERIMENTAL_FIELDS)),
    KeySpec { name: "active_profile", kind: Kind::Str, support: Support::Merged },
    KeySpec { name: "profiles", kind: Kind::Profiles, support: Support::Merged },
];

/// Misnamed keys people write for real ones (CLI flag names, plurals)
/// that edit distance alone would not catch.
const ALIASES: &[(&str, &str)] = &[
    ("add_dir", "allowed_dirs"),
    ("add_dir_ro", "allowed_dirs_ro"),
    ("allow_dir", "allowed_dirs"),
    ("allow_dirs", "allowed_dirs"),
    ("allow_dir_ro", "allowed_dirs_ro"),
    ("llm_filters", "llm_filter"),
    ("filter", "filters"),
    ("hook", "hooks"),
    ("timeout", "provider_timeout"),
    ("profile", "active_profile"),
];

/// The spec of top-level key `name`.
pub(super) fn key(name: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.name == name)
}

/// The spec of field `name` in a table kind.
pub(super) fn field_of(fields: &'static [Field], name: &str) -> Option<&'static Field> {
    fields.iter().find(|f| f.name == name)
}

/// The hint for an unknown key: `; did you mean 'x'?` for a close known
/// name (edit distance at most 2, or a known alias), else `; remove it`.
pub(super) fn unknown_key_hint<'a>(unknown: &str, known: impl Iterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.collect();
    let alias = ALIASES.iter().find(|(from, to)| *from == unknown && known.contains(to)).map(|(_, to)| *to);
    let close = known
        .iter()
        .map(|k| (strsim::levenshtein(unknown, k), *k))
        .filter(|(d, k)| *d <= 2 && *d < unknown.len().min(k.len()))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k);
    match alias.or(close) {
        Some(k) => format!("; did you mean '{k}'?"),
        None => "; remove it".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(strsim::levenshtein("max_turn", "max_turns"), 1);
        assert_eq!(strsim::levenshtein("rerties", "retries"), 2);
        assert_eq!(strsim::levenshtein("", "abc"), 3);
    }

    #[test]
    fn unknown_key_far_from_everything_says_remove_it() {
        let hint = unknown_key_hint("zzzzzz", KEYS.iter().map(|k| k.name));
        assert_eq!(hint, "; remove it");
    }

    #[test]
    fn cli_flag_name_suggests_the_config_key() {
        let hint = unknown_key_hint("add_dir", KEYS.iter().map(|k| k.name));
        assert_eq!(hint, "; did you mean 'allowed_dirs'?");
    }

    #[test]
    fn key_names_are_unique() {
        let mut names: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }
}
