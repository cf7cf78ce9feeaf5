//! A Swival user moving over: Swival's config keys load (with warnings
//! for what swivald ignores), `files` means what it means in Swival, and
//! `swivalctl run` takes Swival's flag names. Real daemon, real swivalctl,
//! the mock provider.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{init_params, TestEnv};

/// Flags pointing swivalctl at the mock.
fn provider_flags(mock: &MockProvider) -> Vec<String> {
    vec![
        "--provider".into(),
        "generic".into(),
        "--base-url".into(),
        mock.base_url(),
        "--model".into(),
        "mock-model".into(),
    ]
}

/// The content of the tool result for `call_id` in any recorded request.
fn tool_result(mock: &MockProvider, call_id: &str) -> String {
    mock.requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no tool result for {call_id}"))
}

/// A Swival config with keys swivald does not know or does not act on.
const SWIVAL_CONFIG: &str = "decision_model = \"small-model\"\n\
initial_tool_choice = \"required\"\n\
[profiles.fast]\n\
provider = \"generic\"\n\
location = \"eu\"\n\
instructions_full = true\n";

/// The warnings [`SWIVAL_CONFIG`] must give, after `<file>: `.
const SWIVAL_CONFIG_WARNINGS: [&str; 4] = [
    "unknown config key 'decision_model'",
    "unknown config key 'initial_tool_choice'",
    "profiles.fast.location is not supported by swivald and is ignored",
    "unknown config key 'profiles.fast.instructions_full'",
];

#[test]
fn swival_config_with_keys_swivald_ignores_loads_and_swivalctl_prints_the_warnings() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    std::fs::write(project.join("swival.toml"), SWIVAL_CONFIG).unwrap();
    let mock = MockProvider::start(vec![Step::text("fine")]);
    let out = env
        .swivalctl(&daemon, &project)
        .arg("run")
        .arg("--trust")
        .args(provider_flags(&mock))
        .arg("t")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fine\n");
    let file = project.join("swival.toml");
    for want in SWIVAL_CONFIG_WARNINGS {
        let line = format!("warning: {}: {want}\n", file.display());
        assert!(stderr.contains(&line), "missing {line:?} in:\n{stderr}");
    }
    // `swivalctl config` says the same.
    let out = env.swivalctl(&daemon, &project).arg("config").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown config key 'decision_model'"), "{stderr}");
}

#[test]
fn config_warnings_come_back_from_session_create_and_as_warning_events() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    std::fs::write(project.join("swival.toml"), SWIVAL_CONFIG).unwrap();
    let mock = MockProvider::start(vec![Step::text("fine")]);
    let mut c = daemon.nd();
    c.ok("initialize", init_params());
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "mock-model"});
    let created = c.ok("session/create", json!({"base_dir": project, "config": cfg, "trust": true}));
    let returned: Vec<&str> = created["warnings"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let sid = created["session_id"].clone();
    c.ok("run/start", json!({"session_id": sid, "task": "t"}));
    let events = swival_tests::events_until_finished(&mut c, sid.as_str().unwrap(), 0);
    let emitted: Vec<&str> =
        events.iter().filter(|e| e["type"] == "warning").filter_map(|e| e["message"].as_str()).collect();
    for want in SWIVAL_CONFIG_WARNINGS {
        let line = format!("{}: {want}", project.join("swival.toml").display());
        assert!(returned.contains(&line.as_str()), "{line:?} not in {returned:?}");
        assert!(emitted.contains(&line.as_str()), "{line:?} not in {emitted:?}");
    }
    // A wrong type is still an error naming the key and the file.
    std::fs::write(project.join("swival.toml"), "sanitize_thinking = \"yes\"\n").unwrap();
    let reply = c.call("session/create", json!({"base_dir": project, "config": cfg}));
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("swival.toml: 'sanitize_thinking' expected bool, got str"), "{reply}");
}

#[test]
fn files_none_refuses_a_file_outside_dot_swival_in_swivals_words() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    std::fs::write(project.join("swival.toml"), "files = \"none\"\n").unwrap();
    std::fs::write(project.join("a.txt"), "project file\n").unwrap();
    std::fs::create_dir(project.join(".swival")).unwrap();
    std::fs::write(project.join(".swival/notes.md"), "a note\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "a.txt"})),
        Step::tool_call("c2", "read_file", json!({"file_path": ".swival/notes.md"})),
        Step::text("done"),
    ]);
    // "none" only narrows: the project file needs no trust.
    let out = env.swivalctl(&daemon, &project).arg("run").args(provider_flags(&mock)).arg("t").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        tool_result(&mock, "c1"),
        format!(
            "error: Path 'a.txt' resolves to {}, which is outside .swival/ (filesystem access is disabled)",
            project.join("a.txt").display()
        )
    );
    assert!(tool_result(&mock, "c2").contains("1: a note"), "{}", tool_result(&mock, "c2"));
}

#[test]
fn files_all_reaches_a_file_outside_the_base_dir_once_trusted() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let elsewhere = env.root().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let far = elsewhere.join("far.txt");
    std::fs::write(&far, "far away\n").unwrap();
    std::fs::write(project.join("swival.toml"), "files = \"all\"\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": far})),
        Step::tool_call("c2", "read_file", json!({"file_path": "/"})),
        Step::tool_call("c3", "write_file", json!({"file_path": elsewhere.join("new.txt"), "content": "written"})),
        Step::text("done"),
    ]);
    // It widens what the agent reaches: not without the user's trust.
    let out = env.swivalctl(&daemon, &project).arg("run").args(provider_flags(&mock)).arg("t").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("files = \"all\""), "{stderr}");
    assert_eq!(mock.request_count(), 0);

    let out = env
        .swivalctl(&daemon, &project)
        .args(["run", "--trust"])
        .args(provider_flags(&mock))
        .arg("t")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(tool_result(&mock, "c1").contains("1: far away"), "{}", tool_result(&mock, "c1"));
    assert_eq!(
        tool_result(&mock, "c2"),
        "error: Path '/' resolves to the filesystem root, which is not allowed even in unrestricted mode"
    );
    assert_eq!(std::fs::read_to_string(elsewhere.join("new.txt")).unwrap(), "written", "{}", tool_result(&mock, "c3"));
}

#[test]
fn an_explicit_files_wins_over_yolo() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let far = env.root().join("far.txt");
    std::fs::write(&far, "far away\n").unwrap();
    let mock =
        MockProvider::start(vec![Step::tool_call("c1", "read_file", json!({"file_path": far})), Step::text("done")]);
    let out = env
        .swivalctl(&daemon, &project)
        .args(["run", "--yolo", "--files", "some"])
        .args(provider_flags(&mock))
        .arg("t")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let refused = tool_result(&mock, "c1");
    assert!(refused.contains("which is outside base directory"), "{refused}");
    assert!(refused.contains("You are not allowed to access that directory by any means."), "{refused}");
}

#[test]
fn swivals_run_flags_work_and_sampling_reaches_the_request() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let x = project.parent().unwrap().join("x");
    std::fs::create_dir(&x).unwrap();
    std::fs::write(x.join("shared.txt"), "shared data\n").unwrap();
    std::fs::write(project.join("a.txt"), "alpha\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "../x/shared.txt"})),
        Step::tool_call("c2", "run_command", json!({"command": ["cat", "a.txt"]})),
        Step::tool_call("c3", "run_command", json!({"command": ["head", "a.txt"]})),
        Step::text("done"),
    ]);
    let out = env
        .swivalctl(&daemon, &project)
        .arg("run")
        .args(provider_flags(&mock))
        .args(["--commands", "ls,cat", "--add-dir", "../x", "--temperature", "0.2", "--top-p", "0.9"])
        .args(["--seed", "7", "--max-output-tokens", "1000", "--reasoning-effort", "low", "--max-output-lines", "40"])
        .args(["--extra-body", r#"{"chat_template_kwargs": {"enable_thinking": false}}"#])
        .arg("--no-prompt-cache")
        .arg("task")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");

    let first = &mock.requests()[0];
    assert_eq!(first["temperature"], 0.2);
    assert_eq!(first["top_p"], 0.9);
    assert_eq!(first["seed"], 7);
    assert_eq!(first["max_tokens"], 1000);
    assert_eq!(first["reasoning_effort"], "low");
    assert_eq!(first["chat_template_kwargs"], json!({"enable_thinking": false}));
    assert!(!first.to_string().contains("cache_control"), "no cache marks, with --no-prompt-cache or without");
    let tools: Vec<&str> =
        first["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(tools.contains(&"run_command"), "{tools:?}");
    assert_eq!(first["tools"][0]["function"]["parameters"]["properties"]["limit"]["default"], 40);

    assert!(tool_result(&mock, "c1").contains("1: shared data"), "--add-dir ../x: {}", tool_result(&mock, "c1"));
    assert!(tool_result(&mock, "c2").contains("alpha"), "cat is whitelisted: {}", tool_result(&mock, "c2"));
    let refused = tool_result(&mock, "c3");
    assert!(refused.starts_with("error:") && refused.contains("not allowed"), "head is not: {refused}");
}

#[test]
fn old_flag_names_stay_as_aliases_and_a_bad_extra_body_is_a_usage_error() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let ro = project.parent().unwrap().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::write(ro.join("r.txt"), "read me\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "../ro/r.txt"})),
        Step::tool_call("c2", "write_file", json!({"file_path": "../ro/new.txt", "content": "x"})),
        Step::text("done"),
    ]);
    let out = env
        .swivalctl(&daemon, &project)
        .args(["run", "--allow-dir-ro", "../ro", "--allowed-commands", "ls"])
        .args(provider_flags(&mock))
        .arg("t")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(tool_result(&mock, "c1").contains("1: read me"));
    assert!(tool_result(&mock, "c2").contains("read-only"), "{}", tool_result(&mock, "c2"));
    assert!(!ro.join("new.txt").exists());

    // A missing directory fails the run as in Swival (exit 1, Swival's words).
    let out = env.swivalctl(&daemon, &project).args(["run", "--add-dir", "../missing", "t"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let missing = project.join("../missing");
    assert!(
        stderr.contains(&format!("Error: allowed_dirs path is not a directory: {}", missing.display())),
        "{stderr}"
    );

    let out = env.swivalctl(&daemon, &project).args(["run", "--extra-body", "[1]", "t"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--extra-body must be a JSON object"));
}

#[test]
fn swivalctl_run_from_a_subdirectory_works_in_the_project_root_as_swival_does() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    std::fs::create_dir(project.join(".git")).unwrap();
    std::fs::write(project.join("README.md"), "the root readme\n").unwrap();
    let deep = project.join("src/module");
    std::fs::create_dir_all(&deep).unwrap();
    // The model reads a file of the root by its path relative to the root.
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "README.md"})),
        Step::text("ok"),
    ]);
    let out = env.swivalctl(&daemon, &deep).arg("run").args(provider_flags(&mock)).arg("t").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(mock.tool_results()["c1"].contains("the root readme"), "{:?}", mock.tool_results());
    let mut c = daemon.nd();
    let sessions = c.ok("session/list", json!({}))["sessions"].clone();
    let base = project.canonicalize().unwrap();
    assert_eq!(sessions[0]["base_dir"], base.display().to_string(), "{sessions}");

    // `swivalctl config` resolves the same directory: the root's swival.toml applies.
    std::fs::write(project.join("swival.toml"), "max_turns = 7\n").unwrap();
    let out = env.swivalctl(&daemon, &deep).args(["config", "--json"]).output().unwrap();
    let resolved: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(resolved["config"]["max_turns"], 7, "{resolved}");
}

#[test]
fn a_usage_line_does_not_show_the_socket_option_when_only_its_variable_is_set() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let out = env.swivalctl(&daemon, env.root()).arg("attach").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("Usage: swivalctl attach <SESSION>"), "{stderr}");
    assert!(!stderr.contains("--socket"), "{stderr}");
    // The variable still names the daemon.
    let out = env.swivalctl(&daemon, env.root()).args(["sessions", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
