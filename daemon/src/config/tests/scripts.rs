//! Behaviour of [`super::load`] for the script-running keys: filter
//! stages, hooks, the reviewer, the command provider, the command
//! whitelist, and the paths they resolve against.

use super::super::stages::DEFAULT_FILTER_TIMEOUT_S;
use super::super::*;
use super::Fixture;
use serde_json::json;
use std::path::PathBuf;

fn argv(cmd: &Command) -> Vec<&str> {
    cmd.argv.iter().map(String::as_str).collect()
}

#[test]
fn llm_filter_string_is_one_stage_with_defaults() {
    let f = Fixture::new().project("llm_filter = \"redact --strict\"");
    let stages = f.config(None).filter_stages();
    assert_eq!(stages.len(), 1);
    assert_eq!(argv(&stages[0].command), ["redact", "--strict"]);
    assert_eq!(stages[0].timeout_s, DEFAULT_FILTER_TIMEOUT_S);
    assert_eq!(stages[0].mode, ProcessMode::Oneshot);
    assert_eq!(stages[0].prespawn, 0);
}

#[test]
fn llm_filter_list_then_filter_tables_give_ordered_stages() {
    let f = Fixture::new().project(
        r#"
llm_filter = ["first", "second 'a b'"]

[[filters]]
command = "third"

[[filters]]
command = "fourth"
timeout_s = 5
mode = "persistent"

[[filters]]
command = "fifth"
prespawn = 2
"#,
    );
    let stages = f.config(None).filter_stages();
    let programs: Vec<&str> = stages.iter().map(|s| s.command.program()).collect();
    assert_eq!(programs, ["first", "second", "third", "fourth", "fifth"]);
    assert_eq!(argv(&stages[1].command), ["second", "a b"]);
    assert_eq!((stages[2].timeout_s, stages[2].mode, stages[2].prespawn), (30.0, ProcessMode::Oneshot, 0));
    assert_eq!((stages[3].timeout_s, stages[3].mode), (5.0, ProcessMode::Persistent));
    assert_eq!(stages[4].prespawn, 2);
}

#[test]
fn path_like_filter_command_resolves_against_the_config_dir_and_bare_name_stays() {
    let f = Fixture::new().global("llm_filter = [\"./filters/redact.py --x\", \"redact\", \"bin/f\"]");
    let cfg = f.config(None);
    let dir = f.global.parent().unwrap();
    assert_eq!(argv(&cfg.llm_filter[0])[0], dir.join("filters/redact.py").to_str().unwrap());
    assert_eq!(argv(&cfg.llm_filter[0])[1], "--x");
    assert_eq!(argv(&cfg.llm_filter[1]), ["redact"]);
    assert_eq!(argv(&cfg.llm_filter[2])[0], dir.join("bin/f").to_str().unwrap());
    assert_eq!(cfg.llm_filter[0].source_dir, dir);
}

#[test]
fn request_commands_and_dirs_resolve_against_the_base_dir() {
    let f = Fixture::new();
    let cfg = f.config(Some(json!({
        "reviewer": "./review.sh --strict",
        "allowed_dirs": ["../shared", "/abs"],
    })));
    let reviewer = cfg.reviewer.unwrap();
    assert_eq!(argv(&reviewer), [f.base.join("review.sh").to_str().unwrap(), "--strict"]);
    assert_eq!(cfg.allowed_dirs, [f.base.join("../shared"), PathBuf::from("/abs")]);
}

#[test]
fn file_dirs_resolve_against_their_own_file() {
    let f = Fixture::new().global("allowed_dirs_ro = [\"docs\"]").project("allowed_dirs = [\"sub\"]");
    let cfg = f.config(None);
    assert_eq!(cfg.allowed_dirs_ro, [f.global.parent().unwrap().join("docs")]);
    assert_eq!(cfg.allowed_dirs, [f.base.join("sub")]);
}

#[test]
fn tilde_in_dirs_expands_to_home() {
    let home = directories::BaseDirs::new().unwrap().home_dir().to_path_buf();
    let cfg = Fixture::new().config(Some(json!({"allowed_dirs": ["~/data"]})));
    assert_eq!(cfg.allowed_dirs, [home.join("data")]);
}

#[test]
fn malformed_filter_command_is_refused() {
    let err = Fixture::new().error(Some(json!({"llm_filter": "f 'oops"})));
    assert!(err.starts_with("the session's flags: malformed llm_filter command:"), "{err}");
    let err = Fixture::new().error(Some(json!({"filters": [{"command": ""}]})));
    assert!(err.contains("filters[0].command is empty"), "{err}");
}

#[test]
fn hook_tables_get_their_defaults() {
    let f = Fixture::new().project(
        "[[hooks]]\npoint = \"after_llm_call\"\ncommand = \"guard\"\n\n\
         [[hooks]]\npoint = \"before_response_emit\"\ncommand = \"redact\"\npriority = -1\non_failure = \"ignore\"\ntimeout_s = 2.5\n",
    );
    let hooks = f.config(None).hooks;
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[0].point, HookPoint::AfterLlmCall);
    assert_eq!((hooks[0].priority, hooks[0].timeout_s, hooks[0].on_failure), (0, 10.0, OnFailure::Block));
    assert_eq!(hooks[0].mode, ProcessMode::Oneshot);
    assert_eq!((hooks[1].priority, hooks[1].timeout_s, hooks[1].on_failure), (-1, 2.5, OnFailure::Ignore));
}

#[test]
fn unknown_key_inside_hooks_fails_naming_its_table() {
    let f = Fixture::new().project("[[hooks]]\npoint = \"before_llm_call\"\ncommand = \"x\"\ncomand = \"y\"\n");
    assert_eq!(
        f.error(None),
        format!("{}: unknown config key 'hooks[0].comand'; did you mean 'command'?", f.project_path().display())
    );
}

#[test]
fn hook_without_point_is_refused() {
    let err = Fixture::new().error(Some(json!({"hooks": [{"command": "x"}]})));
    assert_eq!(err, "the session's flags: hooks[0]: missing required key 'point'");
}

#[test]
fn bad_hook_point_lists_the_points() {
    let err = Fixture::new().error(Some(json!({"hooks": [{"point": "before", "command": "x"}]})));
    assert!(
        err.contains("'hooks[0].point' must be one of 'before_llm_call', 'after_llm_call', 'before_response_emit'"),
        "{err}"
    );
}

#[test]
fn prespawn_with_persistent_mode_is_refused() {
    let err = Fixture::new().error(Some(json!({"filters": [{"command": "x", "mode": "persistent", "prespawn": 1}]})));
    assert!(err.contains("filters[0]: prespawn applies to mode = \"oneshot\" only"), "{err}");
}

#[test]
fn commands_list_form_is_the_whitelist() {
    let cfg = Fixture::new().project("commands = [\"git\", \"ls\"]").config(None);
    assert_eq!(cfg.allowed_commands, ["git", "ls"]);
    assert_eq!(cfg.command_access(), CommandAccess::Whitelist(&["git".to_owned(), "ls".to_owned()]));
}

#[test]
fn commands_ask_is_its_own_access_and_path_names_are_refused() {
    let f = Fixture::new();
    let cfg = f.config(Some(json!({"commands": "ask", "approved_buckets": ["ls"]})));
    assert_eq!(cfg.command_access(), CommandAccess::Ask);
    assert_eq!(cfg.approved_buckets, ["ls"]);
    assert!(f.error(Some(json!({"commands": "maybe"}))).contains("must be 'all', 'none', 'ask', or a list"));
    assert!(f
        .error(Some(json!({"allowed_commands": ["./x"]})))
        .contains("'allowed_commands[0]' must be a bare program name"));
}

#[test]
fn yolo_opens_commands_and_files_unless_set_explicitly() {
    let cfg = Fixture::new().config(Some(json!({"yolo": true})));
    assert_eq!((cfg.command_access(), cfg.files_mode()), (CommandAccess::Unrestricted, FilesMode::All));
    let cfg = Fixture::new().config(Some(json!({"yolo": true, "files": "none", "commands": "none"})));
    assert_eq!((cfg.command_access(), cfg.files_mode()), (CommandAccess::Off, FilesMode::None));
}

#[test]
fn command_provider_model_is_split_and_resolved() {
    let f = Fixture::new().project("provider = \"command\"\nmodel = \"./llm.sh --fast\"");
    let cfg = f.config(None);
    assert_eq!(cfg.model.as_deref(), Some("./llm.sh --fast"));
    let cmd = cfg.model_command.unwrap();
    assert_eq!(argv(&cmd), [f.base.join("llm.sh").to_str().unwrap(), "--fast"]);
}

#[test]
fn generic_provider_without_base_url_is_refused() {
    let err = Fixture::new().error(Some(json!({"provider": "generic"})));
    assert!(err.contains("provider 'generic' needs base_url"), "{err}");
}

#[test]
fn output_tokens_set_above_context_window_are_refused() {
    let err = Fixture::new().error(Some(json!({"max_context_tokens": 1000, "max_output_tokens": 2000})));
    assert!(err.contains("'max_output_tokens' (2000) must not exceed 'max_context_tokens' (1000)"), "{err}");
}

#[test]
fn default_output_tokens_do_not_conflict_with_a_small_window() {
    let cfg = Fixture::new().load(Some(json!({"max_context_tokens": 1000}))).unwrap();
    assert_eq!(cfg.config.max_context_tokens, Some(1000));
}

#[test]
fn edit_check_commands_are_argv_by_extension_merged_across_layers() {
    let f = Fixture::new()
        .global("edit_check_commands = { py = \"ruff check {path}\", sh = \"shellcheck\" }")
        .project("[edit_check_commands]\nrs = [\"./bin/check rs\", \"{path}\"]\nsh = [\"checkbashisms\"]\n");
    let cfg = f.config(None);
    let checks = &cfg.edit_check_commands;
    assert_eq!(argv(&checks["py"]), ["ruff", "check", "{path}"]);
    assert_eq!(argv(&checks["rs"]), [f.base.join("bin/check rs").to_str().unwrap(), "{path}"]);
    assert_eq!(argv(&checks["sh"]), ["checkbashisms"], "the project's wins for its extension");
    let err = Fixture::new().error(Some(json!({"edit_check_commands": {"py": []}})));
    assert!(err.contains("edit_check_commands.py command is empty"), "{err}");
    let err = Fixture::new().error(Some(json!({"edit_check_commands": {"py": 1}})));
    assert!(err.contains("edit_check_commands.py"), "{err}");
}
