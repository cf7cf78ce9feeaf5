//! Command strings and paths named in config, resolved as Swival does:
//! against the directory of the config file that named them, never against
//! the daemon's working directory.
//!
//! A command string is split like a POSIX shell would (no shell ever
//! runs it). If its first token is path-like it is `~`-expanded and, when
//! relative, joined to the config directory and resolved; bare names stay
//! as they are for a PATH lookup. The result is kept as argv so nobody
//! splits it a second time.

use super::{ConfigError, Origin};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// An external command from config (filter stage, hook, reviewer, the
/// `command` provider), already split into argv.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    /// Program and arguments; a path-like program is absolute, a bare name
    /// is left for PATH lookup.
    pub argv: Vec<String>,
    /// Directory of the config file that named it (the base dir when it
    /// came with `session/create`).
    pub source_dir: PathBuf,
}

impl Command {
    /// The program: argv\[0\] (never empty: parsing refuses empty commands).
    pub fn program(&self) -> &str {
        self.argv.first().map(String::as_str).unwrap_or_default()
    }

    /// The command as one shell-quoted line, for messages and listings.
    pub fn display(&self) -> String {
        shlex::try_join(self.argv.iter().map(String::as_str)).unwrap_or_else(|_| self.argv.join(" "))
    }
}

/// Split the command string `text` given for `key` and resolve a path-like
/// program against `origin.dir`.
///
/// Splitting uses the `shlex` crate, which follows POSIX quoting like
/// Python's `shlex.split`, with one difference: a word starting with `#`
/// begins a comment there, while Python keeps it as an argument.
pub(super) fn parse_command(text: &str, key: &str, origin: &Origin) -> Result<Command, ConfigError> {
    // Swival's labels: `malformed llm_filter command: …`, `reviewer command is empty`.
    let label = if key.ends_with(".command") { key.to_owned() } else { format!("{key} command") };
    let argv = shlex::split(text).ok_or_else(|| {
        origin.invalid(format!(
            "malformed {label}: no closing quotation or a trailing backslash in {text:?}; fix the quoting"
        ))
    })?;
    command_from_argv(argv, &label, origin)
}

/// A command given as argv (`label` names it in errors): a path-like
/// program resolved against `origin.dir`, as [`parse_command`] does.
pub(super) fn command_from_argv(mut argv: Vec<String>, label: &str, origin: &Origin) -> Result<Command, ConfigError> {
    let key = label.strip_suffix(" command").unwrap_or(label);
    let Some(program) = argv.first() else {
        return Err(origin.invalid(format!("{label} is empty; give the program to run")));
    };
    if is_path_like(program) {
        let expanded = expand_tilde(program, key, origin)?;
        let absolute = if expanded.is_absolute() { expanded } else { resolve_non_strict(&origin.dir.join(expanded)) };
        argv[0] = absolute.to_string_lossy().into_owned();
    }
    Ok(Command { argv, source_dir: origin.dir.clone() })
}

/// Swival's path-like test for a program, regex `^(?:[/~]|\.\.?/|[^/]+/)`:
/// it starts with `/` or `~`, or contains a `/` (which covers `./`, `../`
/// and `dir/prog`). Bare names such as `python3` are not path-like.
pub(super) fn is_path_like(token: &str) -> bool {
    token.starts_with('~') || token.contains('/')
}

/// A directory or file path from config: `~` expanded, absolute kept,
/// relative joined to `origin.dir` without normalisation (as Swival does,
/// so `../sibling` stays visible in the result).
pub(super) fn resolve_path(text: &str, key: &str, origin: &Origin) -> Result<PathBuf, ConfigError> {
    let expanded = expand_tilde(text, key, origin)?;
    Ok(if expanded.is_absolute() { expanded } else { origin.dir.join(expanded) })
}

/// Expand a leading `~` or `~/`; `~user` is refused rather than guessed.
fn expand_tilde(text: &str, key: &str, origin: &Origin) -> Result<PathBuf, ConfigError> {
    let Some(rest) = text.strip_prefix('~') else {
        return Ok(PathBuf::from(text));
    };
    if !(rest.is_empty() || rest.starts_with('/')) {
        return Err(
            origin.invalid(format!("'{key}': '~user' paths such as {text:?} are not supported; write the full path"))
        );
    }
    let home = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()).ok_or_else(|| {
        origin
            .invalid(format!("'{key}': cannot expand '~' in {text:?}: no home directory is known; write the full path"))
    })?;
    Ok(home.join(rest.trim_start_matches('/')))
}

/// Make `path` absolute like Python's `Path.resolve(strict=False)`: the
/// longest existing prefix has its symlinks resolved, the rest is appended
/// with `.` and `..` applied lexically.
fn resolve_non_strict(path: &Path) -> PathBuf {
    let parts: Vec<Component> = path.components().collect();
    for split in (1..=parts.len()).rev() {
        let prefix: PathBuf = parts[..split].iter().collect();
        if let Ok(mut out) = std::fs::canonicalize(&prefix) {
            for part in &parts[split..] {
                match part {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::Normal(name) => out.push(name),
                    _ => {}
                }
            }
            return out;
        }
    }
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(dir: &Path) -> Origin {
        Origin { source: "cfg".into(), label: "cfg".into(), dir: dir.to_path_buf() }
    }

    #[test]
    fn path_like_matches_swival_regex() {
        for yes in ["/bin/x", "~/x", "~", "./x", "../x", "scripts/x", ".rtk/x"] {
            assert!(is_path_like(yes), "{yes}");
        }
        for no in ["python3", "x.py", ".hidden", "..x"] {
            assert!(!is_path_like(no), "{no}");
        }
    }

    #[test]
    fn quoted_arguments_are_kept_together() {
        let cmd = parse_command("python3 'a b' \"c d\" e", "reviewer", &origin(Path::new("/cfg"))).unwrap();
        assert_eq!(cmd.argv, ["python3", "a b", "c d", "e"]);
    }

    #[test]
    fn unclosed_quote_is_malformed_command() {
        let err = parse_command("x 'y", "llm_filter", &origin(Path::new("/cfg"))).unwrap_err();
        assert!(err.to_string().starts_with("cfg: malformed llm_filter command:"), "{err}");
    }

    #[test]
    fn blank_command_is_empty_command() {
        let err = parse_command("   ", "reviewer", &origin(Path::new("/cfg"))).unwrap_err();
        assert!(err.to_string().contains("reviewer command is empty"), "{err}");
    }

    #[test]
    fn parent_dir_in_missing_tail_is_applied() {
        let tmp = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(tmp.path()).unwrap();
        let got = resolve_non_strict(&tmp.path().join("a/../b/c"));
        assert_eq!(got, real.join("b/c"));
    }

    #[test]
    fn tilde_user_is_refused() {
        let err = resolve_path("~bob/x", "allowed_dirs[0]", &origin(Path::new("/cfg"))).unwrap_err();
        assert!(err.to_string().contains("'~user'"), "{err}");
    }

    #[test]
    fn relative_dir_is_joined_without_normalising() {
        let got = resolve_path("../sib", "allowed_dirs[0]", &origin(Path::new("/p/q"))).unwrap();
        assert_eq!(got, PathBuf::from("/p/q/../sib"));
    }
}
