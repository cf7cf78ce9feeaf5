//! Session configuration: Swival's TOML keys, its files and its precedence,
//! checked strictly and turned into one typed [`SessionConfig`].
//!
//! Layers, lowest first (SPEC §8, Swival `config.py`):
//!
//! 1. built-in defaults ([`SessionConfig::default`]);
//! 2. the global file, `$XDG_CONFIG_HOME/swival/config.toml` ([`global_config_path`]);
//! 3. the project file, `<base_dir>/swival.toml`;
//! 4. the keys of the selected `[profiles.NAME]` (`active_profile`), if any;
//! 5. the `config` object of `session/create` (CLI flags arrive this way).
//!
//! A missing file is fine. Merging is shallow per key: a list in a later
//! layer replaces the earlier list (`mcp_servers`/`a2a_servers` merge by
//! server name, profiles per key within a same-named profile, as in Swival).
//! A JSON `null` in the request means "not given".
//!
//! How a layer is read (`merge.rs`): every key is looked up in the key
//! table (`schema.rs`). A key a file sets that no table knows loads with
//! Swival's warning (`<file>: unknown config key 'k'`) and is dropped; in
//! the `session/create` request it is an error. A Swival key swivald does
//! not act on loads with a warning saying it is ignored (both end up in
//! [`EffectiveConfig::warnings`]). A wrong type, a value outside an enum
//! or a range is an error. Each
//! value is then brought to a normal form (`parse.rs`): paths and command
//! strings are resolved against the directory of the file that named them
//! (the base dir for the request), never against the daemon's cwd, and
//! commands are split once into argv (`command.rs`). The merged key map is
//! then deserialized into [`SessionConfig`] (`types.rs`), and the checks
//! that span keys (e.g. `system_prompt` with `no_system_prompt`) run last.
//!
//! Every error message starts with the file (or `the session's flags`: what `swivalctl run`'s flags or an editor's settings gave)
//! and names the key, so the user knows what to fix and where.

mod command;
mod mcp;
mod merge;
mod parse;
mod provider;
mod schema;
mod stages;
mod trust;
mod types;

#[cfg(test)]
mod tests;

pub use command::Command;
pub use mcp::McpServerConfig;
pub use provider::{Price, ProviderKind};
pub use stages::{CommandHook, HookPoint, OnFailure, ProcessMode, SecretPattern};
pub use trust::ProjectFile;
pub use trust::{McpJson, PROJECT_MCP_JSON};
pub use types::{Cidr, CommandAccess, FilesMode, SandboxMode, Secret, SessionConfig};

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Name of the project config file inside a base directory.
pub const PROJECT_FILE: &str = "swival.toml";

/// What `sources` says for a key no layer set.
pub const SOURCE_DEFAULT: &str = "default";

/// What `sources` says for a key set by the `session/create` config.
pub const SOURCE_REQUEST: &str = "request";

/// How errors name the request layer, in place of a file path.
pub const REQUEST_LABEL: &str = "the session's flags";

/// What secrets serialize as.
const REDACTED: &str = "<redacted>";

/// The effective configuration of one session and where each key came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EffectiveConfig {
    /// The merged, checked configuration.
    pub config: SessionConfig,
    /// For every key of [`SessionConfig`] (and every kept Swival key that was
    /// set): `"default"`, the path of the file that set it (with
    /// ` [profiles.NAME]` when a profile did), or `"request"`.
    pub sources: BTreeMap<String, String>,
    /// What loaded but does nothing, one line each, naming the file and
    /// the key: Swival keys swivald ignores, keys nobody knows.
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// The profiles the layers define, merged.
    #[serde(skip)]
    pub profiles: Vec<swival_protocol::ProfileInfo>,
}

/// A configuration that cannot be used. `Display` is the whole message for
/// the user: where (file or `the session's flags`), which key, what is
/// wrong, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("{}: cannot read config file: {source}; fix its permissions or move it away", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why reading failed.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{}: invalid TOML: {message}", path.display())]
    Toml {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A key that neither Swival nor swivald knows, in the request or
    /// inside a table with known fields (in a file's top level it warns).
    #[error("{origin}: unknown config key '{key}'{hint}")]
    UnknownKey {
        /// The file, or `the session's flags`.
        origin: String,
        /// The key as written, with its table path (e.g. `filters[0].comand`).
        key: String,
        /// `; did you mean 'x'?` when a known key is close, else `; remove it`.
        hint: String,
    },
    /// A value of the wrong type.
    #[error("{origin}: '{key}' expected {expected}, got {got}")]
    WrongType {
        /// The file, or `the session's flags`.
        origin: String,
        /// The key, with its table path or list index.
        key: String,
        /// The accepted type(s), in Swival's words (`int`, `int or float`, `str`, `list`, `dict`).
        expected: &'static str,
        /// The type found.
        got: &'static str,
    },
    /// A value of the right type that is still not acceptable (enum, range,
    /// malformed command, conflicting keys).
    #[error("{origin}: {message}")]
    Invalid {
        /// Where: the file, `the session's flags`, or the layers involved.
        origin: String,
        /// What is wrong and how to fix it.
        message: String,
    },
}

/// Where a layer's values came from, and where its relative paths point.
#[derive(Debug, Clone)]
struct Origin {
    /// What `sources` records: the file path, or `request`.
    pub source: String,
    /// What error messages start with: the file path, or `the session's flags`.
    pub label: String,
    /// Relative paths and path-like commands resolve against this directory.
    pub dir: PathBuf,
}

impl Origin {
    /// A config file's layer: relative paths resolve against its directory.
    fn file(path: &Path) -> Origin {
        let shown = path.display().to_string();
        Origin { source: shown.clone(), label: shown, dir: path.parent().map(Path::to_path_buf).unwrap_or_default() }
    }

    /// The `session/create` layer: relative paths resolve against the base dir.
    fn request(base_dir: &Path) -> Origin {
        Origin { source: SOURCE_REQUEST.to_owned(), label: REQUEST_LABEL.to_owned(), dir: base_dir.to_path_buf() }
    }

    /// A [`ConfigError::Invalid`] located at this layer.
    fn invalid(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { origin: self.label.clone(), message: message.into() }
    }
}

/// Longest duration a config value can ask for (a year): anything longer
/// is as good as forever, and would overflow a deadline.
const MAX_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

/// `s` seconds as a duration, clamped to `[min_s, a year]`; never panics,
/// whatever a config file or a provider header says (`NaN` gives `min_s`).
pub fn seconds(s: f64, min_s: f64) -> std::time::Duration {
    let s = if s.is_nan() { min_s } else { s.clamp(min_s.max(0.0), MAX_SECONDS) };
    std::time::Duration::from_secs_f64(s)
}

/// `$XDG_CONFIG_HOME/swival/config.toml` (the platform's config directory
/// elsewhere): the global Swival config file.
pub fn global_config_path() -> PathBuf {
    crate::paths::config_dir().join("config.toml")
}

/// Build a session's effective configuration: defaults, then the global
/// file at `global_path` (if given and present), then
/// `<base_dir>/swival.toml` (if present), then the selected profile, then
/// `request` (the `config` object of `session/create`; relative paths in it
/// resolve against `base_dir`, which should be absolute).
pub fn load(
    base_dir: &Path,
    global_path: Option<&Path>,
    request: Option<&serde_json::Value>,
) -> Result<EffectiveConfig, ConfigError> {
    let project = ProjectFile::read(base_dir)?;
    load_with(base_dir, global_path, project.as_ref(), request)
}

/// [`load`] with the project file already read (the daemon reads it once,
/// checks its trust, and loads those same bytes).
pub fn load_with(
    base_dir: &Path,
    global_path: Option<&Path>,
    project: Option<&ProjectFile>,
    request: Option<&serde_json::Value>,
) -> Result<EffectiveConfig, ConfigError> {
    let request = match request {
        Some(value) => Some(merge::Layer::from_request(value, Origin::request(base_dir))?),
        None => None,
    };
    let mut files = Vec::new();
    if let Some(path) = global_path {
        files.extend(merge::Layer::from_file(path, Origin::file(path))?);
    }
    if let Some(p) = project.filter(|p| p.has_toml) {
        files.push(merge::Layer::from_text(&p.path, &p.text, Origin::file(&p.path))?);
    }
    // The MCP JSON file's servers lie below every TOML layer (TOML wins
    // by name); `mcp_config` (`--mcp-config`) replaces the project's file.
    let last = |key: &str| request.iter().chain(files.iter().rev()).find_map(|l| l.value(key)).cloned();
    let no_mcp = last("no_mcp") == Some(serde_json::Value::Bool(true));
    let json = match last("mcp_config").as_ref().and_then(|v| v.as_str()).map(PathBuf::from) {
        Some(path) => Some(trust::McpJson::read(base_dir, &path)?.ok_or_else(|| ConfigError::Invalid {
            origin: REQUEST_LABEL.to_owned(),
            message: format!("--mcp-config file not found: {}", path.display()),
        })?),
        None => project.and_then(|p| p.mcp_json.clone()),
    };
    if let Some(json) = json.filter(|_| !no_mcp) {
        files.insert(0, merge::Layer::from_mcp_json(&json)?);
    }
    merge::merge(files, request)
}
