//! MCP server configuration as Swival reads it: [`McpServerConfig`], the
//! checks on each `[mcp_servers.NAME]` table (name, `command` or `url`,
//! transport). The `mcpServers` JSON file (`<base>/.swival/mcp.json`, or
//! the file `--mcp-config` names instead) is read with the project's files
//! (`trust.rs`); its servers sit below every TOML layer: a server both
//! name is the TOML one (Swival's `merge_mcp_configs`).

use super::{ConfigError, Origin, REDACTED};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// One MCP server as configured: a program speaking MCP on stdio
/// (`command`, `args`, `env`, `cwd`) or an HTTP endpoint (`url`,
/// `headers`, `type`/`transport`), checked here.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program (a bare name is looked up on the caller's PATH).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set over the caller's environment (values may be secrets: never shown).
    #[serde(serialize_with = "redacted_values", skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Working directory (default: the base dir).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The endpoint of an HTTP server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent with every HTTP request (values may be secrets: never shown).
    #[serde(serialize_with = "redacted_values", skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Swival's transport declaration (`stdio`, `http`, `streamable-http`, `sse`).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The same, under its other name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
}

impl fmt::Debug for McpServerConfig {
    /// Variable and header names only: their values may be secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("type", &self.kind)
            .field("transport", &self.transport)
            .finish()
    }
}

/// A map shown with every value replaced by `<redacted>`.
fn redacted_values<S: Serializer>(map: &BTreeMap<String, String>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(map.keys().map(|k| (k, REDACTED)))
}

/// Transport names Swival accepts in `type`/`transport`.
const TRANSPORTS: &[&str] = &["stdio", "http", "streamable-http", "streamable_http", "sse"];

/// A server name Swival refuses.
#[derive(Debug, thiserror::Error)]
pub enum NameError {
    /// Empty, or a character outside `[a-zA-Z0-9_-]`.
    #[error("MCP server name '{0}' is invalid: must match [a-zA-Z0-9_-]+")]
    Invalid(String),
    /// `__`, the separator of `mcp__<server>__<tool>`.
    #[error("MCP server name '{0}' must not contain double underscores")]
    DoubleUnderscore(String),
}

/// Swival's rule for a server name: `[a-zA-Z0-9_-]+` without `__` (the
/// separator of `mcp__<server>__<tool>`).
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(NameError::Invalid(name.to_owned()));
    }
    if name.contains("__") {
        return Err(NameError::DoubleUnderscore(name.to_owned()));
    }
    Ok(())
}

/// Swival's checks on one server table (fields already type-checked).
pub(super) fn check_server(name: &str, table: &Map<String, Value>, origin: &Origin) -> Result<(), ConfigError> {
    check_name(name).map_err(|e| origin.invalid(e.to_string()))?;
    match (table.contains_key("command"), table.contains_key("url")) {
        (false, false) => return Err(origin.invalid(format!("mcp_servers.{name} must have 'command' or 'url'"))),
        (true, true) => return Err(origin.invalid(format!("mcp_servers.{name} cannot have both 'command' and 'url'"))),
        _ => {}
    }
    for field in ["type", "transport"] {
        if let Some(t) = table.get(field).and_then(Value::as_str) {
            if !TRANSPORTS.contains(&t.trim().to_lowercase().as_str()) {
                return Err(origin.invalid(format!(
                    "mcp_servers.{name}.{field}: unknown transport '{t}', expected 'http', 'sse' or 'stdio'"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::McpJson;

    fn json(text: &str) -> Result<Value, ConfigError> {
        McpJson { path: PathBuf::from("/p/.swival/mcp.json"), text: text.into() }.servers()
    }

    #[test]
    fn server_names_follow_swivals_rule() {
        assert!(check_name("fs-1_x").is_ok());
        assert!(check_name("a b").unwrap_err().to_string().contains("must match"));
        assert!(check_name("a__b").unwrap_err().to_string().contains("double underscores"));
        assert!(check_name("").is_err());
    }

    #[test]
    fn mcp_json_servers_are_checked_and_cwd_resolved_against_the_file() {
        let v = json(r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"], "cwd": "sub"}}}"#).unwrap();
        assert_eq!(v["fs"]["cwd"], "/p/.swival/sub");
        assert_eq!(v["fs"]["args"][1], "x");
    }

    #[test]
    fn bad_mcp_json_names_the_file_and_the_problem() {
        let err = json(r#"{"mcpServers": {"fs": {"args": []}}}"#).unwrap_err().to_string();
        assert_eq!(err, "/p/.swival/mcp.json: mcp_servers.fs must have 'command' or 'url'");
        let err = json(r#"{"mcpServers": {"fs": {"url": "http://x", "type": "ws"}}}"#).unwrap_err().to_string();
        assert!(err.contains("unknown transport 'ws'"), "{err}");
        let err = json(r#"{"mcpServers": {"fs": {"command": "x", "env": {"A": 1}}}}"#).unwrap_err().to_string();
        assert!(err.contains("'mcp_servers.fs.env.A' expected str, got int"), "{err}");
        let err = json("[1]").unwrap_err().to_string();
        assert!(err.contains("expected a JSON object at top level"), "{err}");
        assert!(json("{").unwrap_err().to_string().contains("invalid JSON"));
    }
}
