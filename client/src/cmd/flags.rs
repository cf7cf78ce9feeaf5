//! Swival's `run` flags as the `session/create` config overlay they ask
//! for, with Swival's parsing of the ones that need it.

use super::args::RunArgs;
use super::overlay::{CommandMode, Commands, ConfigOverlay};
use std::path::{Path, PathBuf};

/// The config overlay of the flags given on the command line. Relative
/// directories are taken from the current directory, as Swival does, not
/// from the base dir. Provider keys come from the environment sent with
/// the session (`swivalctl::caller_env`), never copied into the config.
pub fn overlay(a: &RunArgs) -> ConfigOverlay {
    let dirs = |dirs: &[PathBuf]| dirs.iter().map(|p| cli_path(p)).collect();
    ConfigOverlay {
        provider: a.provider.clone(),
        model: a.model.clone(),
        base_url: a.base_url.clone(),
        api_key: a.api_key.clone(),
        reviewer: a.reviewer.clone(),
        max_turns: a.max_turns,
        retries: a.retries,
        provider_timeout: a.provider_timeout,
        max_review_rounds: a.max_review_rounds,
        llm_filter: a.llm_filter.clone(),
        commands: a.commands.as_deref().map(commands_value),
        allowed_commands: a.allowed_commands.as_deref().map(comma_list),
        allowed_dirs: dirs(&a.add_dir),
        mcp_config: a.mcp_config.as_deref().map(cli_path),
        allowed_dirs_ro: dirs(&a.add_dir_ro),
        skills_dir: dirs(&a.skills_dir),
        files: a.files.clone(),
        sandbox: a.sandbox.clone(),
        reasoning_effort: a.reasoning_effort.clone(),
        user_agent: a.user_agent.clone(),
        system_prompt: a.system_prompt.clone(),
        active_profile: a.profile.clone(),
        encrypt_secrets_key: a.encrypt_secrets_key.clone(),
        max_output_tokens: a.max_output_tokens,
        max_context_tokens: a.max_context_tokens,
        max_output_lines: a.max_output_lines,
        max_output_kb: a.max_output_kb,
        temperature: a.temperature,
        top_p: a.top_p,
        seed: a.seed,
        extra_body: a.extra_body.clone(),
        review_prompt: a.review_prompt.clone(),
        verify: a.verify.as_deref().map(|v| cli_path(Path::new(v))),
        ..switches(a)
    }
}

/// The overlay of the on/off flags alone: each given sets its key, to
/// true for most (`--yolo` sets `yolo`), to false for the negative ones
/// (`--no-read-named-files` sets `read_named_files` false).
fn switches(a: &RunArgs) -> ConfigOverlay {
    let on = |given: bool| given.then_some(true);
    ConfigOverlay {
        yolo: on(a.yolo),
        no_history: on(a.no_history),
        no_mcp: on(a.no_mcp),
        cache: on(a.cache),
        encrypt_secrets: if a.no_encrypt_secrets { Some(false) } else { on(a.encrypt_secrets) },
        sandbox_strict_read: on(a.sandbox_strict_read),
        no_system_prompt: on(a.no_system_prompt),
        no_instructions: on(a.no_instructions),
        no_read_guard: on(a.no_read_guard),
        read_named_files: a.no_read_named_files.then_some(false),
        lean_tools: if a.no_lean_tools { Some(false) } else { on(a.lean_tools) },
        no_memory: on(a.no_memory),
        memory_full: on(a.memory_full),
        no_continue: on(a.no_continue),
        subagents: if a.no_subagents { Some(false) } else { on(a.subagents) },
        self_review: on(a.self_review),
        no_skills: on(a.no_skills),
        sanitize_thinking: on(a.sanitize_thinking),
        show_thinking: on(a.show_thinking),
        ..ConfigOverlay::default()
    }
}

/// Swival's `--commands`: "all", "none" and "ask" as they are, anything else a comma-separated whitelist. An empty
/// list stays empty (no command at all), where Swival reads it as "all".
fn commands_value(mode: &str) -> Commands {
    match mode.trim() {
        "all" => Commands::Mode(CommandMode::All),
        "none" => Commands::Mode(CommandMode::None),
        "ask" => Commands::Mode(CommandMode::Ask),
        list => Commands::Names(comma_list(list)),
    }
}

/// Names in a comma-separated list, trimmed, empties dropped (as Swival).
fn comma_list(list: &str) -> Vec<String> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};

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
        let want = ConfigOverlay { no_read_guard: Some(true), read_named_files: Some(false), ..Default::default() };
        assert_eq!(overlay(&a), want);
        let config = overlay(&run_args(&["--no-encrypt-secrets", "t"])).to_config();
        assert_eq!(config.to_value(), serde_json::from_str::<Value>(r#"{"encrypt_secrets": false}"#).unwrap());
        assert_eq!(overlay(&run_args(&["t"])), ConfigOverlay::default(), "a flag not given sets nothing");
        assert_eq!(ConfigOverlay::default().to_config().to_value(), Value::Object(Map::new()));
    }

    #[test]
    fn lean_tools_flags_set_the_key_either_way_and_the_last_one_wins() {
        let lean = |flags: &[&str]| overlay(&run_args(flags)).lean_tools;
        assert_eq!(lean(&["--lean-tools", "t"]), Some(true));
        assert_eq!(lean(&["--no-lean-tools", "t"]), Some(false));
        assert_eq!(lean(&["--no-lean-tools", "--lean-tools", "t"]), Some(true));
        assert_eq!(lean(&["--lean-tools", "--no-lean-tools", "t"]), Some(false));
        assert_eq!(lean(&["t"]), None, "unset: the provider decides");
    }

    #[test]
    fn commands_take_swivals_three_forms() {
        assert_eq!(commands_value("all"), Commands::Mode(CommandMode::All));
        assert_eq!(commands_value("none"), Commands::Mode(CommandMode::None));
        assert_eq!(commands_value(" ask "), Commands::Mode(CommandMode::Ask));
        assert_eq!(commands_value(" ls, cat ,,git"), Commands::Names(vec!["ls".into(), "cat".into(), "git".into()]));
        assert_eq!(commands_value(","), Commands::Names(vec![]), "an empty list allows nothing, never everything");
        let on_the_wire = |mode| serde_json::to_string(&commands_value(mode)).unwrap();
        assert_eq!(
            [on_the_wire("all"), on_the_wire("none"), on_the_wire("ask")],
            [r#""all""#, r#""none""#, r#""ask""#]
        );
        assert_eq!(on_the_wire("ls,git"), r#"["ls","git"]"#);
    }

    #[test]
    fn the_overlay_sends_the_keys_of_the_flags_given_in_a_fixed_order() {
        let a = run_args(&["--no-mcp", "--seed", "-1", "--commands", "ask", "--model", "m", "--llm-filter", "f", "t"]);
        let text = serde_json::to_string(&overlay(&a)).unwrap();
        assert_eq!(text, r#"{"model":"m","llm_filter":["f"],"commands":"ask","seed":-1,"no_mcp":true}"#);
    }

    #[test]
    fn extra_body_must_be_a_json_object() {
        assert_eq!(super::super::args::parse_extra_body(r#"{"a": 1}"#).unwrap()["a"], 1);
        assert_eq!(super::super::args::parse_extra_body("[1]").unwrap_err(), "--extra-body must be a JSON object");
        assert!(super::super::args::parse_extra_body("{").unwrap_err().starts_with("--extra-body is not valid JSON"));
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
