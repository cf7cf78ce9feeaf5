//! Which program a `run_command` call would run, decided without running
//! anything: the session's command policy (off, a whitelist pinned to
//! absolute paths at session creation, or unrestricted), the check of one
//! argv against it, and the normalisation of the model's `command`
//! argument (Swival's repairs of stringified argvs). Pure logic; the
//! execution lives in `command.rs`.

use crate::config::CommandAccess;
use crate::toolcall::type_name;
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a whitelist could not be pinned; session creation fails with it.
/// Each message names the command and what to do.
#[derive(Debug, thiserror::Error)]
pub enum WhitelistError {
    /// The base directory could not be resolved.
    #[error("cannot resolve base directory {}: {source}", .base.display())]
    BaseDir { base: PathBuf, source: std::io::Error },
    /// An empty entry.
    #[error("allowed_commands contains an empty name")]
    EmptyName,
    /// An entry with a slash: only bare names are looked up.
    #[error("allowed_commands entry '{name}' must be a bare command name (found on PATH), not a path")]
    NotBare { name: String },
    /// Not on `PATH`.
    #[error("command '{name}' not found on PATH; install it or remove it from allowed_commands")]
    NotFound { name: String },
    /// Found, but its real path could not be resolved.
    #[error("cannot resolve command '{name}' ({}): {source}", .found.display())]
    Unresolvable { name: String, found: PathBuf, source: std::io::Error },
    /// Inside the base directory, where the model could replace it.
    #[error("command '{name}' resolves to {}, inside the base directory {}. Commands inside the workspace can be modified by the model, so they cannot be whitelisted; install it outside the project or remove it from allowed_commands", .pinned.display(), .base.display())]
    InsideBase { name: String, pinned: PathBuf, base: PathBuf },
}

/// Why a `run_command` call is refused before anything runs: its
/// arguments, or the session's command policy. The model reads
/// `error: ` and this message; `policy/check` returns it as the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandRefusal {
    /// No program named.
    #[error("run_command needs a non-empty 'command' array")]
    Empty,
    /// `cd /` (Swival's check).
    #[error("accessing the filesystem root is not allowed. The base directory for this project is: {}", .base.display())]
    FilesystemRoot { base: PathBuf },
    /// The session runs no commands.
    #[error("commands are disabled in this session (no allowed_commands and no yolo). Adjust your plan.")]
    Disabled,
    /// A path where the whitelist wants a bare name.
    #[error("command must be a bare name, not a path: '{name}'. Allowed commands: {allowed}")]
    NotBare { name: String, allowed: String },
    /// A name the whitelist does not hold.
    #[error("command '{name}' is not allowed. Allowed commands: {allowed}")]
    NotAllowed { name: String, allowed: String },
    /// Unrestricted, but the path names no executable file.
    #[error("command executable not found: \"{}\"", .path.display())]
    NoExecutable { path: PathBuf },
    /// Unrestricted, but the name is not on `PATH`.
    #[error("command not found on PATH: '{name}'")]
    NotOnPath { name: String },
    /// A string with shell syntax: there is no shell.
    #[error("\"command\" must be a JSON array of strings, not a single string.\nWrong: \"command\": \"grep -n pattern file.py\"\nRight: \"command\": [\"grep\", \"-n\", \"pattern\", \"file.py\"]\nEach argument must be a separate element in the array.\nShell syntax (&&, |, >, 2>&1, etc.) is not supported — run one command at a time.")]
    ShellString,
    /// `command` of another JSON type.
    #[error("\"command\" must be an array of strings, got {got}")]
    NotAnArray { got: &'static str },
    /// An argv element that is not a string.
    #[error("\"command\" must be an array of strings; argument {index} is {got}")]
    NotAString { index: usize, got: &'static str },
}

/// What `run_command` may run in one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandPolicy {
    /// No command tool (no `allowed_commands` and no `yolo`, or `commands = "none"`).
    Off,
    /// Only these bare names, each pinned to the absolute path it resolved
    /// to when the session was created.
    Whitelist(BTreeMap<String, PathBuf>),
    /// Any program: bare names are looked up on `path` at call time,
    /// names with a `/` are taken relative to the base directory.
    Unrestricted {
        /// The `PATH` used for lookups.
        path: std::ffi::OsString,
    },
}

impl CommandPolicy {
    /// The policy for a session: resolves a whitelist against `path`
    /// (normally the daemon's `PATH`). The error names the command and says
    /// what to do; session creation should fail with it.
    pub fn from_access(
        access: CommandAccess<'_>,
        base_dir: &Path,
        path: &OsStr,
    ) -> Result<CommandPolicy, WhitelistError> {
        Ok(match access {
            CommandAccess::Off => CommandPolicy::Off,
            CommandAccess::Whitelist(names) => CommandPolicy::Whitelist(resolve_whitelist(names, base_dir, path)?),
            CommandAccess::Unrestricted | CommandAccess::Ask => CommandPolicy::Unrestricted { path: path.to_owned() },
        })
    }

    /// Whether the session offers `run_command` at all.
    pub fn enabled(&self) -> bool {
        !matches!(self, CommandPolicy::Off)
    }

    /// The whitelisted names, sorted (empty unless a whitelist).
    pub fn allowed_names(&self) -> Vec<&str> {
        match self {
            CommandPolicy::Whitelist(map) => map.keys().map(String::as_str).collect(),
            _ => Vec::new(),
        }
    }
}

/// Resolve each whitelisted name on `path` and pin it to its absolute,
/// symlink-free location. A missing name, a name that is not bare, or one
/// that resolves inside `base_dir` (which the model can write, so it could
/// replace the program) is an error naming the command.
pub fn resolve_whitelist(
    names: &[String],
    base_dir: &Path,
    path: &OsStr,
) -> Result<BTreeMap<String, PathBuf>, WhitelistError> {
    let base = std::fs::canonicalize(base_dir)
        .map_err(|source| WhitelistError::BaseDir { base: base_dir.to_owned(), source })?;
    let mut out = BTreeMap::new();
    for name in names {
        let name = name.trim();
        if name.is_empty() {
            return Err(WhitelistError::EmptyName);
        }
        if name.contains('/') || name.contains('\\') {
            return Err(WhitelistError::NotBare { name: name.to_owned() });
        }
        let found = which(name, path).ok_or_else(|| WhitelistError::NotFound { name: name.to_owned() })?;
        let pinned = std::fs::canonicalize(&found).map_err(|source| WhitelistError::Unresolvable {
            name: name.to_owned(),
            found: found.clone(),
            source,
        })?;
        if pinned.starts_with(&base) {
            return Err(WhitelistError::InsideBase { name: name.to_owned(), pinned, base });
        }
        out.insert(name.to_owned(), pinned);
    }
    Ok(out)
}

/// The first executable regular file called `name` in the directories of
/// `path` (empty entries mean the current directory and are skipped: the
/// daemon's cwd means nothing to a session).
pub fn which(name: &str, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty() && dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable_file(candidate))
}

fn is_executable_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether `argv` would run under `policy`, and if so the absolute path of
/// the program. The refusal is the reason, for a human or the model (the
/// tool result puts `error: ` in front). `base_dir` is the session's base
/// directory: relative program paths in unrestricted mode resolve there.
pub fn check(argv: &[String], policy: &CommandPolicy, base_dir: &Path) -> Result<PathBuf, CommandRefusal> {
    let Some(name) = argv.first() else {
        return Err(CommandRefusal::Empty);
    };
    if name.eq_ignore_ascii_case("cd") && argv.get(1).is_some_and(|t| is_root(t)) {
        return Err(CommandRefusal::FilesystemRoot { base: base_dir.to_owned() });
    }
    match policy {
        CommandPolicy::Off => Err(CommandRefusal::Disabled),
        CommandPolicy::Whitelist(map) => {
            let allowed = || {
                if map.is_empty() {
                    "(none)".to_owned()
                } else {
                    map.keys().cloned().collect::<Vec<_>>().join(", ")
                }
            };
            if name.contains('/') || name.contains('\\') {
                return Err(CommandRefusal::NotBare { name: name.clone(), allowed: allowed() });
            }
            map.get(name.as_str())
                .cloned()
                .ok_or_else(|| CommandRefusal::NotAllowed { name: name.clone(), allowed: allowed() })
        }
        CommandPolicy::Unrestricted { path } => {
            if name.contains('/') {
                let candidate = Path::new(name);
                let joined = if candidate.is_absolute() { candidate.to_owned() } else { base_dir.join(candidate) };
                if !is_executable_file(&joined) {
                    return Err(CommandRefusal::NoExecutable { path: joined });
                }
                Ok(joined)
            } else {
                which(name, path).ok_or_else(|| CommandRefusal::NotOnPath { name: name.clone() })
            }
        }
    }
}

/// `/`, `\` or a drive root such as `C:\`.
fn is_root(p: &str) -> bool {
    let s = p.trim();
    if s == "/" || s == "\\" {
        return true;
    }
    let b = s.as_bytes();
    b.len() == 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'/' || b[2] == b'\\')
}

/// Default `run_command` timeout (Swival's).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest `run_command` timeout the model may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(240);

/// A `run_command` call after its arguments were checked and repaired.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandCall {
    /// Program and arguments, passed literally.
    pub argv: Vec<String>,
    /// Kill the process group after this long.
    pub timeout: Duration,
    /// A note for the model when its argument was repaired (Swival's
    /// `(auto-corrected: …)` line).
    pub repair_note: Option<String>,
}

/// Characters that mean a string was written for a shell.
const SHELL_CHARS: &[char] = &[
    '|', '&', ';', '>', '<', '$', '`', '\\', '"', '\'', '*', '?', '~', '#', '!', '{', '}', '(', ')', '[', ']', '\n',
    '\r',
];

/// Check and repair the model's `run_command` arguments (`command`,
/// `timeout`). An array is taken as argv; a JSON-stringified array is
/// decoded; a plain string without shell syntax is split on whitespace;
/// anything else is refused, since there is no shell.
pub fn parse_call(args: &Value) -> Result<CommandCall, CommandRefusal> {
    let timeout = parse_timeout(args.get("timeout"));
    let (argv, repair_note) = match args.get("command") {
        None | Some(Value::Null) => return Err(CommandRefusal::Empty),
        Some(Value::Array(items)) => (strings(items)?, None),
        Some(Value::String(s)) => {
            if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(s) {
                if let Ok(argv) = strings(&items) {
                    let note = "run_command received a JSON-stringified argv array; converted to argv array";
                    return finish(argv, timeout, Some(note.into()));
                }
            }
            if s.contains(SHELL_CHARS) {
                return Err(CommandRefusal::ShellString);
            }
            (
                s.split_whitespace().map(str::to_owned).collect(),
                Some("run_command received a string; converted to argv array".into()),
            )
        }
        Some(other) => return Err(CommandRefusal::NotAnArray { got: type_name(other) }),
    };
    finish(argv, timeout, repair_note)
}

fn finish(argv: Vec<String>, timeout: Duration, repair_note: Option<String>) -> Result<CommandCall, CommandRefusal> {
    if argv.is_empty() {
        return Err(CommandRefusal::Empty);
    }
    Ok(CommandCall { argv, timeout, repair_note })
}

fn strings(items: &[Value]) -> Result<Vec<String>, CommandRefusal> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(s.clone()),
            other => Err(CommandRefusal::NotAString { index: i, got: type_name(other) }),
        })
        .collect()
}

/// The seconds asked for, clamped to 1..=240; anything not a number means
/// the default.
fn parse_timeout(v: Option<&Value>) -> Duration {
    match v.and_then(Value::as_f64) {
        Some(secs) if secs.is_finite() => Duration::from_secs_f64(secs.clamp(1.0, MAX_TIMEOUT.as_secs_f64())),
        _ => DEFAULT_TIMEOUT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bin_dir_with(names: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for n in names {
            let p = dir.path().join(n);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    }

    #[test]
    fn whitelist_pins_names_to_absolute_paths() {
        let bins = bin_dir_with(&["tool"]);
        let base = tempfile::tempdir().unwrap();
        let map = resolve_whitelist(&["tool".into()], base.path(), bins.path().as_os_str()).unwrap();
        assert_eq!(map["tool"], std::fs::canonicalize(bins.path().join("tool")).unwrap());
    }

    #[test]
    fn whitelist_missing_command_is_named() {
        let bins = bin_dir_with(&[]);
        let base = tempfile::tempdir().unwrap();
        let err = resolve_whitelist(&["nosuch".into()], base.path(), bins.path().as_os_str()).unwrap_err().to_string();
        assert!(err.contains("'nosuch' not found on PATH"), "{err}");
    }

    #[test]
    fn whitelist_command_inside_base_dir_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let bins = base.path().join("bin");
        std::fs::create_dir(&bins).unwrap();
        let p = bins.join("tool");
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = resolve_whitelist(&["tool".into()], base.path(), bins.as_os_str()).unwrap_err().to_string();
        assert!(err.contains("inside the base directory"), "{err}");
        assert!(err.contains("can be modified by the model"), "{err}");
    }

    #[test]
    fn whitelist_symlink_into_base_dir_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let real = base.path().join("real");
        std::fs::write(&real, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bins = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&real, bins.path().join("tool")).unwrap();
        let err = resolve_whitelist(&["tool".into()], base.path(), bins.path().as_os_str()).unwrap_err().to_string();
        assert!(err.contains("inside the base directory"), "{err}");
    }

    #[test]
    fn whitelist_entry_with_a_slash_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let err = resolve_whitelist(&["/bin/ls".into()], base.path(), OsStr::new("/bin")).unwrap_err().to_string();
        assert!(err.contains("bare command name"), "{err}");
    }

    #[test]
    fn non_executable_file_is_not_found() {
        let bins = tempfile::tempdir().unwrap();
        std::fs::write(bins.path().join("data"), "x").unwrap();
        assert_eq!(which("data", bins.path().as_os_str()), None);
    }

    fn whitelist() -> CommandPolicy {
        CommandPolicy::Whitelist(BTreeMap::from([
            ("ls".to_owned(), PathBuf::from("/usr/bin/ls")),
            ("git".to_owned(), PathBuf::from("/usr/bin/git")),
        ]))
    }

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn whitelisted_name_runs_its_pinned_path() {
        let got = check(&argv(&["ls", "-la"]), &whitelist(), Path::new("/p")).unwrap();
        assert_eq!(got, PathBuf::from("/usr/bin/ls"));
    }

    #[test]
    fn name_not_in_whitelist_is_refused_with_the_list() {
        let err = check(&argv(&["rm", "-rf", "x"]), &whitelist(), Path::new("/p")).unwrap_err().to_string();
        assert_eq!(err, "command 'rm' is not allowed. Allowed commands: git, ls");
    }

    #[test]
    fn path_instead_of_name_is_refused_under_whitelist() {
        let err = check(&argv(&["/usr/bin/ls"]), &whitelist(), Path::new("/p")).unwrap_err().to_string();
        assert!(err.starts_with("command must be a bare name, not a path"), "{err}");
    }

    #[test]
    fn off_policy_refuses_everything() {
        let err = check(&argv(&["ls"]), &CommandPolicy::Off, Path::new("/p")).unwrap_err().to_string();
        assert!(err.contains("commands are disabled"), "{err}");
        assert!(!CommandPolicy::Off.enabled());
    }

    #[test]
    fn cd_to_root_is_refused() {
        let p = CommandPolicy::Unrestricted { path: "/bin".into() };
        let err = check(&argv(&["cd", "/"]), &p, Path::new("/p")).unwrap_err().to_string();
        assert!(err.contains("filesystem root"), "{err}");
        assert!(err.contains("/p"), "{err}");
    }

    #[test]
    fn unrestricted_looks_up_path_and_base_relative_names() {
        let bins = bin_dir_with(&["tool"]);
        let p = CommandPolicy::Unrestricted { path: bins.path().as_os_str().to_owned() };
        assert_eq!(check(&argv(&["tool"]), &p, Path::new("/p")).unwrap(), bins.path().join("tool"));
        let err = check(&argv(&["missing"]), &p, Path::new("/p")).unwrap_err().to_string();
        assert_eq!(err, "command not found on PATH: 'missing'");
        let rel = check(&argv(&["./tool"]), &p, bins.path()).unwrap();
        assert_eq!(rel, bins.path().join("./tool"));
    }

    #[test]
    fn empty_argv_is_refused() {
        let err = check(&[], &whitelist(), Path::new("/p")).unwrap_err().to_string();
        assert!(err.contains("non-empty"), "{err}");
    }

    #[test]
    fn array_argument_is_taken_literally() {
        let call = parse_call(&json!({"command": ["echo", "$(id)", "; rm -rf x"]})).unwrap();
        assert_eq!(call.argv, argv(&["echo", "$(id)", "; rm -rf x"]));
        assert_eq!(call.timeout, DEFAULT_TIMEOUT);
        assert_eq!(call.repair_note, None);
    }

    #[test]
    fn stringified_array_is_decoded_with_a_note() {
        let call = parse_call(&json!({"command": "[\"ls\", \"-la\"]"})).unwrap();
        assert_eq!(call.argv, argv(&["ls", "-la"]));
        assert!(call.repair_note.unwrap().contains("JSON-stringified"));
    }

    #[test]
    fn plain_string_is_split_and_shell_string_refused() {
        let call = parse_call(&json!({"command": "ls  -la\tsrc"})).unwrap();
        assert_eq!(call.argv, argv(&["ls", "-la", "src"]));
        let err = parse_call(&json!({"command": "ls | wc"})).unwrap_err().to_string();
        assert!(err.contains("must be a JSON array of strings"), "{err}");
    }

    #[test]
    fn non_string_argument_is_refused_with_its_index() {
        let err = parse_call(&json!({"command": ["ls", 3]})).unwrap_err().to_string();
        assert!(err.contains("argument 1 is a number"), "{err}");
    }

    #[test]
    fn timeout_is_clamped_and_defaults() {
        let t = |v: Value| parse_call(&json!({"command": ["ls"], "timeout": v})).unwrap().timeout;
        assert_eq!(t(json!(0)), Duration::from_secs(1));
        assert_eq!(t(json!(10_000)), MAX_TIMEOUT);
        assert_eq!(t(json!("soon")), DEFAULT_TIMEOUT);
        assert_eq!(t(json!(5)), Duration::from_secs(5));
    }
}
