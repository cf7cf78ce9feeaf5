//! Trust on first use for a project's `swival.toml` (SPEC §6), as direnv's
//! `allow`, mise's `trust` and VS Code's workspace trust do it. A project
//! file is code someone else may have written (a cloned repository, or the
//! model's own command): unless it sets only harmless keys (how the agent
//! works, not what it may reach, what runs or where data goes), it takes
//! effect only after the user trusted that exact content (`swivalctl
//! trust`, recorded by SHA-256 in the daemon's state). The global config and the caller's own flags are the user's and
//! are always trusted.
//!
//! The file is read once: its hash is checked and the same bytes are
//! parsed, so a rewrite between the check and the load cannot slip in.

use super::parse::normalize;
use super::schema::{Kind, MCP_FIELDS};
use super::{ConfigError, Origin, PROJECT_FILE};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A project's config as read at one moment: `swival.toml` and
/// `.swival/mcp.json`, trusted together (one hash over both).
#[derive(Debug, Clone)]
pub struct ProjectFile {
    /// `<base_dir>/swival.toml` (the name trust is recorded under, even
    /// when only the MCP file exists).
    pub path: PathBuf,
    /// Its content (empty when it does not exist).
    pub text: String,
    /// Whether `swival.toml` exists.
    pub has_toml: bool,
    /// `<base_dir>/.swival/mcp.json`, when it exists.
    pub mcp_json: Option<McpJson>,
    /// Hex SHA-256 of `swival.toml`'s content, followed (when it exists)
    /// by a separator and the MCP file's.
    pub sha256: String,
}

/// Keys a project may set without trust: they change how the agent works,
/// not what it may reach, what runs, or where data goes. Every other key
/// needs trust (fail closed: a key added later needs trust until it is
/// judged harmless here).
const HARMLESS: &[&str] = &[
    "user_agent",
    "max_output_tokens",
    "max_context_tokens",
    "max_output_lines",
    "max_output_kb",
    "temperature",
    "top_p",
    "seed",
    "max_turns",
    "retries",
    "provider_timeout",
    "system_prompt",
    "no_system_prompt",
    "no_read_guard",
    "edit_checks",
    // Reads only what the path policy lets the model read anyway.
    "read_named_files",
    // Changes only the wording of the tools offered, not what they do.
    "lean_tools",
    // Changes only the cost a run reports.
    "model_prices",
    // Shows the model only what list_files and outline would.
    "project_map_tokens",
    // Only fewer tool calls run per reply; the rest are told to come again.
    "max_calls_per_reply",
    "no_instructions",
    "no_history",
    "no_memory",
    "no_continue",
    "subagents",
    "review_prompt",
    "quiet",
    "reasoning_effort",
    "cache",
    "stream",
    "color",
    "show_thinking",
    "sanitize_thinking",
    "prompt_cache",
    "proactive_summaries",
    "no_skills",
    "memory_full",
    "no_mcp",
    "no_a2a",
    "no_lifecycle",
    "serve_name",
    "serve_description",
];

/// Why a key needs trust, for the ones worth explaining.
const REASONS: &[(&str, &str)] = &[
    ("llm_filter", "runs a filter program on every request"),
    ("disable_nudges", "turns off loop guards that stop a model repeating itself (and the cut of a runaway reply)"),
    ("command_max_processes", "changes how many processes a command may start"),
    ("command_max_memory_mb", "changes how much memory a command may use"),
    ("command_max_cpu_s", "changes how much CPU time a command may use"),
    ("filters", "runs filter programs on every request"),
    ("hooks", "runs hook programs around every model call"),
    ("reviewer", "runs a reviewer program on every answer"),
    ("verify_command", "runs this program, and the project code it runs, after the agent changes files"),
    ("edit_check_commands", "runs these programs on every file the agent changes"),
    ("self_review", "runs swivalctl as a reviewer on every answer"),
    ("objective", "puts a file's content in review requests"),
    ("verify", "puts a file's content in review requests"),
    ("mcp_servers", "starts MCP server programs"),
    ("mcp_config", "reads MCP servers (programs it starts) from this file"),
    ("a2a_servers", "connects to A2A agents"),
    ("allowed_commands", "lets the agent run these programs"),
    ("commands", "lets the agent run programs"),
    ("allowed_dirs", "opens directories outside the project to the agent"),
    ("allowed_dirs_ro", "opens directories outside the project to the agent (read-only)"),
    ("skills_dir", "reads skills from directories outside the project and opens them to the agent (read-only)"),
    ("fetch_allow_networks", "lets fetch_url reach private networks"),
    ("command_env", "passes more environment variables to the agent's commands"),
    ("sandbox_expose", "shows hidden credential stores to the agent's commands"),
    ("sandbox_hide", "replaces the list of paths hidden from the agent"),
    ("base_url", "sends the project's code and the API key to this address"),
    ("provider", "chooses where the project's code and the API key are sent"),
    ("api_key", "sends requests under another account"),
    ("extra_body", "adds fields to every request (it can change what is sent or stored)"),
    ("model", "chooses the model (with provider = \"command\": the program that runs)"),
    ("yolo", "lets the agent run any program and reach any path"),
    ("files", "lets the agent's file tools reach any path but /"),
    ("command_network", "gives the agent's commands the network"),
    ("sandbox", "turns the kernel sandbox of commands off"),
    ("sandbox_strict_read", "lets commands read outside the project again"),
    ("sandbox_mcp", "runs MCP servers outside the command sandbox"),
    ("encrypt_secrets", "sends secrets to the provider unencrypted"),
    ("encrypt_secrets_key", "chooses the key secrets are encrypted with"),
    ("encrypt_secrets_tweak", "chooses how secrets are encrypted"),
    ("encrypt_secrets_patterns", "replaces the patterns that find secrets"),
    ("max_review_rounds", "changes how much the reviewer may ask for"),
    ("reviewer_timeout_s", "changes how long the reviewer may take (a timeout accepts the answer)"),
    ("active_profile", "selects a profile (it may widen the sandbox)"),
];

/// Values that only narrow what the agent may do: no trust needed.
fn narrows(key: &str, value: &toml::Value) -> bool {
    match (key, value) {
        ("yolo" | "command_network", toml::Value::Boolean(false)) => true,
        ("encrypt_secrets" | "sandbox_strict_read" | "sandbox_mcp", toml::Value::Boolean(true)) => true,
        ("sandbox", toml::Value::String(s)) => s == "os",
        ("commands", toml::Value::String(s)) => s == "none",
        // "some" is the default and beats yolo; "none" allows only .swival/.
        ("files", toml::Value::String(s)) => s == "some" || s == "none",
        // Skill directories inside the project read nothing the agent
        // cannot read already (discovery opens them beneath the project,
        // following no symlink).
        ("skills_dir", toml::Value::Array(dirs)) => dirs.iter().all(|d| d.as_str().is_some_and(inside_project)),
        _ => false,
    }
}

/// Whether a project file's relative path stays in the project: plain
/// names only (no `..`, no root, no `~`).
fn inside_project(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('~')
        && Path::new(path)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir))
}

/// Bytes of a project config file read at most.
const PROJECT_FILE_MAX_BYTES: u64 = 4 << 20;

/// A project file's text (`swival.toml`, `.swival/mcp.json`), `None` when
/// it does not exist. The model can write the project, so the file is read
/// the one way a file reaches the model (`beneath::read_for_model`): no
/// symlink followed on the way from `base_dir`, a regular file under the
/// cap, opened without blocking (a FIFO made by a command cannot hang a
/// new session); anything else is an error naming the file.
pub(super) fn read_project(base_dir: &Path, path: &Path) -> Result<Option<String>, ConfigError> {
    read_project_as(base_dir, path, false)
}

/// [`read_project`], except that a symlink on the way reads as no file
/// (`.swival/mcp.json` under a `.swival` that is a symlink: never
/// followed, and the session's other uses of `.swival` warn about it).
pub(super) fn read_project_unless_linked(base_dir: &Path, path: &Path) -> Result<Option<String>, ConfigError> {
    read_project_as(base_dir, path, true)
}

fn read_project_as(base_dir: &Path, path: &Path, link_is_none: bool) -> Result<Option<String>, ConfigError> {
    let shown = base_dir.join(path);
    let fail = |source: std::io::Error| ConfigError::Read { path: shown.clone(), source };
    let base = match base_dir.canonicalize() {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(fail(e)),
    };
    match crate::beneath::read_for_model(&base, path, PROJECT_FILE_MAX_BYTES, &[]) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|e| fail(std::io::Error::new(std::io::ErrorKind::InvalidData, e))),
        Err(e) if e.is_not_found() => Ok(None),
        Err(crate::beneath::Error::Symlink(_)) if link_is_none => Ok(None),
        Err(e) => Err(fail(e.into())),
    }
}

/// Where a project's MCP JSON file lives, relative to its base dir.
pub const PROJECT_MCP_JSON: &str = ".swival/mcp.json";

/// An MCP JSON file as read at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpJson {
    /// The file.
    pub path: PathBuf,
    /// Its content.
    pub text: String,
}

impl McpJson {
    /// `path` (under `base_dir`, or absolute) as it is now; `None` when it
    /// does not exist, or when a symlink is on its way (a `.swival` that is
    /// a symlink is never followed; the session's other uses of `.swival`
    /// warn about it). Read as every project file is (`read_project`).
    pub fn read(base_dir: &Path, path: &Path) -> Result<Option<McpJson>, ConfigError> {
        let text = read_project_unless_linked(base_dir, path)?;
        Ok(text.map(|text| McpJson { path: base_dir.join(path), text }))
    }

    /// Its servers, checked as `[mcp_servers.NAME]` tables are (relative
    /// `cwd` against the file's directory), in the normal form of the
    /// `mcp_servers` key.
    pub(super) fn servers(&self) -> Result<Value, ConfigError> {
        let origin = Origin::file(&self.path);
        let data: Value = serde_json::from_str(&self.text).map_err(|e| origin.invalid(format!("invalid JSON: {e}")))?;
        let Value::Object(mut top) = data else {
            return Err(origin.invalid("expected a JSON object at top level"));
        };
        let servers = top.remove("mcpServers").unwrap_or(Value::Object(Map::new()));
        if !servers.is_object() {
            return Err(origin.invalid("'mcpServers' must be a JSON object"));
        }
        normalize(&Kind::NamedTables(MCP_FIELDS), "mcp_servers", servers, &origin)
    }

    /// The names of its servers, for the trust question (empty when the
    /// file names none or cannot be parsed: loading reports that).
    pub fn server_names(&self) -> Vec<String> {
        serde_json::from_str::<Value>(&self.text)
            .ok()
            .and_then(|v| v.get("mcpServers").and_then(Value::as_object).map(|m| m.keys().cloned().collect()))
            .unwrap_or_default()
    }
}

impl ProjectFile {
    /// `<base_dir>/swival.toml` as it is now; `None` when there is none.
    pub fn read(base_dir: &Path) -> Result<Option<ProjectFile>, ConfigError> {
        let path = base_dir.join(PROJECT_FILE);
        let (text, has_toml) = match read_project(base_dir, Path::new(PROJECT_FILE))? {
            Some(text) => (text, true),
            None => (String::new(), false),
        };
        let mcp_json = McpJson::read(base_dir, Path::new(PROJECT_MCP_JSON))?;
        if !has_toml && mcp_json.is_none() {
            return Ok(None);
        }
        let mut hasher = Sha256::new();
        hasher.update(text.as_bytes());
        if let Some(json) = &mcp_json {
            hasher.update(b"\0.swival/mcp.json\0");
            hasher.update(json.text.as_bytes());
        }
        let sha256 = hex::encode(hasher.finalize());
        Ok(Some(ProjectFile { path, text, has_toml, mcp_json, sha256 }))
    }

    /// What the file enables that needs the user's trust, one line per
    /// key (`key = value: why`); empty when nothing does. Keys inside
    /// `[profiles.*]` count too (a request may select the profile).
    pub fn needs_trust(&self) -> Result<Vec<String>, ConfigError> {
        let table: toml::Table = self.text.parse().map_err(|e: toml::de::Error| ConfigError::Toml {
            path: self.path.clone(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        let mut out = Vec::new();
        sensitive(&table, "", &mut out);
        if let Some(json) = &self.mcp_json {
            let names = json.server_names();
            if !names.is_empty() {
                out.push(format!("{PROJECT_MCP_JSON} mcpServers = {}: starts MCP server programs", names.join(", ")));
            }
        }
        if let Some(toml::Value::Table(profiles)) = table.get("profiles") {
            for (name, body) in profiles {
                if let toml::Value::Table(body) = body {
                    sensitive(body, &format!("profiles.{name}."), &mut out);
                }
            }
        }
        Ok(out)
    }
}

/// The lines for the keys of one table that need trust.
fn sensitive(table: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (key, value) in table {
        // An unknown key is dropped by the loader with a warning: it
        // enables nothing, so it is not a question of trust.
        let known = super::schema::key(key).is_some();
        if !known || key == "profiles" || HARMLESS.contains(&key.as_str()) || narrows(key, value) {
            continue;
        }
        let why = REASONS
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, why)| *why)
            .unwrap_or("is not one of the keys a project may set without trust");
        out.push(format!("{prefix}{key} = {}: {why}", short(value)));
    }
}

/// A value as TOML, cut to one short line.
fn short(v: &toml::Value) -> String {
    let text = v.to_string().replace('\n', " ");
    if text.chars().count() > 120 {
        format!("{}…", text.chars().take(120).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> ProjectFile {
        ProjectFile {
            path: PathBuf::from("/p/swival.toml"),
            text: text.into(),
            has_toml: true,
            mcp_json: None,
            sha256: hex::encode(Sha256::digest(text.as_bytes())),
        }
    }

    #[test]
    fn harmless_keys_need_no_trust() {
        let f = file(
            "max_turns = 5\nsandbox = \"os\"\nyolo = false\ncommands = \"none\"\nquiet = true\nread_named_files = false\nlean_tools = true\n",
        );
        assert!(f.needs_trust().unwrap().is_empty());
        for narrow in ["files = \"some\"", "files = \"none\"", "decision_model = \"m\""] {
            assert!(file(narrow).needs_trust().unwrap().is_empty(), "{narrow}");
        }
    }

    #[test]
    fn turning_off_a_loop_guard_needs_trust_as_storm_breaker_does() {
        // A model that writes the project's config must not switch off the
        // guards that stop it repeating itself without the user's word.
        let lines = file("disable_nudges = [\"stuck\", \"runaway\"]\n").needs_trust().unwrap();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("disable_nudges = ") && lines[0].contains("turns off loop guards"), "{lines:?}");
        assert_eq!(file("storm_breaker = false\n").needs_trust().unwrap().len(), 1);
    }

    #[test]
    fn files_all_widens_the_file_tools_and_needs_trust() {
        let lines = file("files = \"all\"\n").needs_trust().unwrap();
        assert_eq!(lines, ["files = \"all\": lets the agent's file tools reach any path but /"]);
    }

    #[test]
    fn programs_wider_sandbox_and_other_providers_need_trust() {
        let f = file(
            "llm_filter = \"./f.py\"\nyolo = true\nsandbox = \"builtin\"\nbase_url = \"http://x\"\n\
             edit_check_commands = { py = \"./lint.py {path}\" }\n\
             [[hooks]]\npoint = \"before_llm_call\"\ncommand = \"./h.sh\"\n\
             [profiles.fast]\ncommand_network = true\n",
        );
        let lines = f.needs_trust().unwrap();
        let joined = lines.join("\n");
        for want in [
            "llm_filter = \"./f.py\": runs a filter program",
            "hooks = ",
            "base_url = \"http://x\"",
            "yolo = true",
            "sandbox = \"builtin\"",
            "profiles.fast.command_network = true",
            "runs these programs on every file the agent changes",
        ] {
            assert!(joined.contains(want), "missing {want:?} in {joined}");
        }
    }

    #[test]
    fn keys_that_weaken_the_reviewer_encryption_or_hiding_need_trust_and_unknown_ones_too() {
        let f = file(
            "reviewer_timeout_s = 0.001\nmax_review_rounds = 0\nencrypt_secrets_key = \"00\"\n\
             sandbox_hide = []\nsandbox_strict_read = false\napi_key = \"k\"\nextra_body = { store = true }\n\
             active_profile = \"wide\"\nstorm_breaker = 1\n",
        );
        let lines = f.needs_trust().unwrap();
        assert_eq!(lines.len(), 9, "{lines:#?}");
        assert!(lines.iter().any(|l| l.starts_with("storm_breaker = 1: is not one of the keys")), "{lines:#?}");
    }

    #[test]
    fn skills_dir_outside_the_project_needs_trust_inside_it_does_not() {
        assert!(file("skills_dir = [\"tools/skills\", \"./more\"]\n").needs_trust().unwrap().is_empty());
        for outside in ["\"../shared\"", "\"/opt/skills\"", "\"~/skills\"", "\"a/../../b\""] {
            let lines = file(&format!("skills_dir = [{outside}]\n")).needs_trust().unwrap();
            assert_eq!(lines.len(), 1, "{outside}: {lines:?}");
            assert!(lines[0].ends_with(
                "reads skills from directories outside the project and opens them to the agent (read-only)"
            ));
        }
    }

    #[test]
    fn huge_or_odd_durations_are_clamped_instead_of_panicking() {
        use crate::config::seconds;
        assert_eq!(seconds(1e300, 1.0).as_secs(), 365 * 24 * 3600);
        assert_eq!(seconds(f64::NAN, 1.0).as_secs(), 1);
        assert_eq!(seconds(-5.0, 0.0).as_secs(), 0);
        assert_eq!(seconds(f64::INFINITY, 0.0).as_secs(), 365 * 24 * 3600);
    }

    #[test]
    fn an_mcp_json_naming_servers_needs_trust() {
        let mut f = file("max_turns = 5\n");
        f.mcp_json = Some(McpJson {
            path: PathBuf::from("/p/.swival/mcp.json"),
            text: r#"{"mcpServers": {"fs": {"command": "x"}}}"#.into(),
        });
        assert_eq!(f.needs_trust().unwrap(), [".swival/mcp.json mcpServers = fs: starts MCP server programs"]);
        f.mcp_json.as_mut().unwrap().text = r#"{"mcpServers": {}}"#.into();
        assert!(f.needs_trust().unwrap().is_empty());
    }

    #[test]
    fn invalid_toml_is_an_error_naming_the_file() {
        let err = file("llm_filter = ").needs_trust().unwrap_err().to_string();
        assert!(err.starts_with("/p/swival.toml: invalid TOML"), "{err}");
    }
}
