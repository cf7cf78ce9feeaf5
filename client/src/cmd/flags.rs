//! Swival's `run` flags that become `session/create` config keys (access,
//! sampling, prompt), with Swival's parsing of the ones that need it.

use super::run::RunArgs;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Add the config keys of Swival's access, sampling and prompt flags that
/// are set on the command line to `c`.
pub fn put_swival_flags(a: &RunArgs, c: &mut Map<String, Value>) {
    let mut put = |k: &str, v: Value| {
        c.insert(k.to_owned(), v);
    };
    if let Some(mode) = &a.commands {
        put("commands", commands_value(mode));
    }
    if let Some(list) = &a.allowed_commands {
        put("allowed_commands", json!(comma_list(list)));
    }
    if !a.add_dir.is_empty() {
        put("allowed_dirs", json!(a.add_dir.iter().map(|p| cli_path(p)).collect::<Vec<_>>()));
    }
    if let Some(file) = &a.mcp_config {
        put("mcp_config", json!(cli_path(file)));
    }
    if !a.add_dir_ro.is_empty() {
        put("allowed_dirs_ro", json!(a.add_dir_ro.iter().map(|p| cli_path(p)).collect::<Vec<_>>()));
    }
    let strings = [
        ("files", &a.files),
        ("sandbox", &a.sandbox),
        ("reasoning_effort", &a.reasoning_effort),
        ("user_agent", &a.user_agent),
        ("system_prompt", &a.system_prompt),
        ("active_profile", &a.profile),
        ("encrypt_secrets_key", &a.encrypt_secrets_key),
    ];
    for (k, v) in strings {
        if let Some(v) = v {
            put(k, json!(v));
        }
    }
    let numbers = [
        ("max_output_tokens", a.max_output_tokens),
        ("max_context_tokens", a.max_context_tokens),
        ("max_output_lines", a.max_output_lines),
        ("max_output_kb", a.max_output_kb),
    ];
    for (k, v) in numbers {
        if let Some(v) = v {
            put(k, json!(v));
        }
    }
    for (k, v) in [("temperature", a.temperature), ("top_p", a.top_p)] {
        if let Some(v) = v {
            put(k, json!(v));
        }
    }
    if let Some(v) = a.seed {
        put("seed", json!(v));
    }
    if let Some(body) = &a.extra_body {
        put("extra_body", Value::Object(body.clone()));
    }
    for (k, v) in switches(a) {
        put(k, json!(v));
    }
}

/// The keys of the on/off flags given on the command line, with the
/// value each sets: `--yolo` sets `yolo` true, `--no-read-named-files`
/// sets `read_named_files` false.
fn switches(a: &RunArgs) -> Vec<(&'static str, bool)> {
    let flags = [
        ("yolo", a.yolo, true),
        ("no_history", a.no_history, true),
        ("no_mcp", a.no_mcp, true),
        ("cache", a.cache, true),
        ("encrypt_secrets", a.encrypt_secrets, true),
        ("encrypt_secrets", a.no_encrypt_secrets, false),
        ("sandbox_strict_read", a.sandbox_strict_read, true),
        ("no_system_prompt", a.no_system_prompt, true),
        ("no_instructions", a.no_instructions, true),
        ("no_read_guard", a.no_read_guard, true),
        ("read_named_files", a.no_read_named_files, false),
        ("no_memory", a.no_memory, true),
        ("no_continue", a.no_continue, true),
    ];
    flags.into_iter().filter(|(_, given, _)| *given).map(|(key, _, value)| (key, value)).collect()
}

/// Swival's `--commands`: "all", "none" and "ask" as they are, anything else a comma-separated whitelist. An empty
/// list stays empty (no command at all), where Swival reads it as "all".
fn commands_value(mode: &str) -> Value {
    match mode.trim() {
        m @ ("all" | "none" | "ask") => json!(m),
        list => json!(comma_list(list)),
    }
}

/// Names in a comma-separated list, trimmed, empties dropped (as Swival).
fn comma_list(list: &str) -> Vec<&str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty()).collect()
}

/// A directory named on the command line: relative to the current
/// directory, as in Swival (the daemon expands a leading `~`).
fn cli_path(p: &Path) -> PathBuf {
    if p.is_absolute() || p.starts_with("~") {
        return p.to_path_buf();
    }
    std::env::current_dir().map(|cwd| cwd.join(p)).unwrap_or_else(|_| p.to_path_buf())
}

/// The base directory of a run or of `swivalctl config`: `--base-dir`
/// (relative to `cwd`), else Swival's project root: the nearest directory
/// from `cwd` up that holds `.git` (a directory, or a file as in a worktree
/// or submodule) or `swival.toml` (`.swival/` alone does not count), else
/// `cwd` itself.
pub fn base_dir(flag: Option<&Path>, cwd: &Path) -> PathBuf {
    match flag {
        Some(p) => cwd.join(p),
        None => cwd
            .ancestors()
            .find(|dir| dir.join(".git").exists() || dir.join("swival.toml").exists())
            .unwrap_or(cwd)
            .to_path_buf(),
    }
}

/// `--extra-body`: a JSON object, as Swival requires.
pub fn parse_extra_body(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("--extra-body must be a JSON object".into()),
        Err(e) => Err(format!("--extra-body is not valid JSON: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `swivalctl run`'s flags, parsed as clap parses them.
    fn run_args(flags: &[&str]) -> RunArgs {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            run: RunArgs,
        }
        <Cli as clap::Parser>::parse_from(["run"].iter().chain(flags)).run
    }

    #[test]
    fn no_read_named_files_and_no_encrypt_secrets_set_their_key_false() {
        let a = run_args(&["--no-read-named-files", "--no-read-guard", "t"]);
        assert_eq!(switches(&a), [("no_read_guard", true), ("read_named_files", false)]);
        let mut c = Map::new();
        put_swival_flags(&run_args(&["--no-encrypt-secrets", "t"]), &mut c);
        assert_eq!(Value::Object(c), json!({"encrypt_secrets": false}));
        assert!(switches(&run_args(&["t"])).is_empty(), "a flag not given sets nothing");
    }

    #[test]
    fn commands_take_swivals_three_forms() {
        assert_eq!(commands_value("all"), json!("all"));
        assert_eq!(commands_value("none"), json!("none"));
        assert_eq!(commands_value(" ls, cat ,,git"), json!(["ls", "cat", "git"]));
        assert_eq!(commands_value(","), json!([]), "an empty list allows nothing, never everything");
    }

    #[test]
    fn extra_body_must_be_a_json_object() {
        assert_eq!(parse_extra_body(r#"{"a": 1}"#).unwrap()["a"], 1);
        assert_eq!(parse_extra_body("[1]").unwrap_err(), "--extra-body must be a JSON object");
        assert!(parse_extra_body("{").unwrap_err().starts_with("--extra-body is not valid JSON"));
    }

    #[test]
    fn the_base_dir_is_the_nearest_project_root_up_from_the_current_directory() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        let deep = repo.join("pkg/sub/deep");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        assert_eq!(base_dir(None, &deep), repo, "a .git directory marks the root");
        assert_eq!(base_dir(None, &repo), repo);
        // `.swival/` alone is not a project root.
        std::fs::create_dir(repo.join("pkg/.swival")).unwrap();
        assert_eq!(base_dir(None, &deep), repo);
        // The innermost wins: swival.toml nearer than .git, and a .git file (a worktree).
        std::fs::write(repo.join("pkg/swival.toml"), "").unwrap();
        assert_eq!(base_dir(None, &deep), repo.join("pkg"));
        std::fs::write(repo.join("pkg/sub/.git"), "gitdir: ../../.git/worktrees/sub\n").unwrap();
        assert_eq!(base_dir(None, &deep), repo.join("pkg/sub"));
        // `--base-dir` is taken as given, relative to the current directory.
        assert_eq!(base_dir(Some(Path::new("..")), &deep), deep.join(".."));
        assert_eq!(base_dir(Some(Path::new("/elsewhere")), &deep), Path::new("/elsewhere"));
    }

    #[test]
    fn relative_directories_are_taken_from_the_current_directory() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(cli_path(Path::new("../x")), cwd.join("../x"));
        assert_eq!(cli_path(Path::new("/abs")), Path::new("/abs"));
        assert_eq!(cli_path(Path::new("~/x")), Path::new("~/x"));
    }
}
