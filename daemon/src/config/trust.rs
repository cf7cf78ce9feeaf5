//! Trust on first use for a project's `swival.toml` (SPEC §6), as direnv's
//! `allow`, mise's `trust` and VS Code's workspace trust do it. A project
//! file is code someone else may have written (a cloned repository, or the
//! model's own command): when it runs programs, widens the sandbox or sends
//! the code elsewhere, it takes effect only after the user trusted that
//! exact content (`swivalctl trust`, recorded by SHA-256 in the daemon's
//! state). The global config and the caller's own flags are the user's and
//! are always trusted.
//!
//! The file is read once: its hash is checked and the same bytes are
//! parsed, so a rewrite between the check and the load cannot slip in.

use super::{ConfigError, PROJECT_FILE};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A project config file as read at one moment.
#[derive(Debug, Clone)]
pub struct ProjectFile {
    /// `<base_dir>/swival.toml`.
    pub path: PathBuf,
    /// Its content.
    pub text: String,
    /// Hex SHA-256 of the content.
    pub sha256: String,
}

/// Keys that run programs (always need trust, whatever the value).
const RUNS_PROGRAMS: &[(&str, &str)] = &[
    ("llm_filter", "runs a filter program on every request"),
    ("filters", "runs filter programs on every request"),
    ("hooks", "runs hook programs around every model call"),
    ("reviewer", "runs a reviewer program on every answer"),
    ("mcp_servers", "starts MCP server programs"),
    ("a2a_servers", "connects to A2A agents"),
];

/// Keys that widen what the agent may do or where data goes.
const WIDENS: &[(&str, &str)] = &[
    ("allowed_commands", "lets the agent run these programs"),
    ("allowed_dirs", "opens directories outside the project to the agent"),
    ("allowed_dirs_ro", "opens directories outside the project to the agent (read-only)"),
    ("fetch_allow_networks", "lets fetch_url reach private networks"),
    ("command_env", "passes more environment variables to the agent's commands"),
    ("sandbox_expose", "shows hidden credential stores to the agent's commands"),
    ("base_url", "sends the project's code and the API key to this address"),
    ("provider", "chooses where the project's code and the API key are sent"),
    ("model", "chooses the model (with provider = \"command\": the program that runs)"),
];

impl ProjectFile {
    /// `<base_dir>/swival.toml` as it is now; `None` when there is none.
    pub fn read(base_dir: &Path) -> Result<Option<ProjectFile>, ConfigError> {
        let path = base_dir.join(PROJECT_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        let sha256 = hex::encode(Sha256::digest(text.as_bytes()));
        Ok(Some(ProjectFile { path, text, sha256 }))
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

/// The lines for the sensitive keys of one table.
fn sensitive(table: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    let line = |key: &str, value: &toml::Value, why: &str| format!("{prefix}{key} = {}: {why}", short(value));
    for (key, why) in RUNS_PROGRAMS.iter().chain(WIDENS) {
        if let Some(v) = table.get(*key) {
            out.push(line(key, v, why));
        }
    }
    let is_true = |k: &str| table.get(k).and_then(toml::Value::as_bool) == Some(true);
    let is_false = |k: &str| table.get(k).and_then(toml::Value::as_bool) == Some(false);
    if is_true("yolo") {
        out.push(format!("{prefix}yolo = true: lets the agent run any program and reach any path"));
    }
    if is_true("command_network") {
        out.push(format!("{prefix}command_network = true: gives the agent's commands the network"));
    }
    if table.get("sandbox").and_then(toml::Value::as_str) == Some("builtin") {
        out.push(format!("{prefix}sandbox = \"builtin\": turns the kernel sandbox of commands off"));
    }
    if is_false("encrypt_secrets") {
        out.push(format!("{prefix}encrypt_secrets = false: sends secrets to the provider unencrypted"));
    }
    match table.get("commands") {
        Some(toml::Value::String(s)) if s == "none" => {}
        Some(v) => out.push(format!("{prefix}commands = {}: lets the agent run programs", short(v))),
        None => {}
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
            sha256: hex::encode(Sha256::digest(text.as_bytes())),
        }
    }

    #[test]
    fn harmless_keys_need_no_trust() {
        let f = file("max_turns = 5\nsandbox = \"os\"\nyolo = false\ncommands = \"none\"\nquiet = true\n");
        assert!(f.needs_trust().unwrap().is_empty());
    }

    #[test]
    fn programs_wider_sandbox_and_other_providers_need_trust() {
        let f = file(
            "llm_filter = \"./f.py\"\nyolo = true\nsandbox = \"builtin\"\nbase_url = \"http://x\"\n\
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
        ] {
            assert!(joined.contains(want), "missing {want:?} in {joined}");
        }
    }

    #[test]
    fn invalid_toml_is_an_error_naming_the_file() {
        let err = file("llm_filter = ").needs_trust().unwrap_err().to_string();
        assert!(err.starts_with("/p/swival.toml: invalid TOML"), "{err}");
    }
}
