//! A session's settings after `session/create`: `session/configure`
//! between runs (what the next run sends, what is refused and changes
//! nothing, what survives a restart) and `session/create` `from` another
//! session (a fresh conversation or a fork).

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::{NdConn, TestEnv};

/// A session on `mock` with model `model`; its id.
fn session(c: &mut NdConn, base: &Path, mock: &MockProvider, model: &str) -> String {
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": model, "no_history": true});
    c.ok("session/create", json!({"base_dir": base, "config": config}))["session_id"].as_str().unwrap().to_owned()
}

/// Run `task` on session `sid` to its end; its result.
fn run(c: &mut NdConn, sid: &str, task: &str) -> Value {
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}))
}

#[test]
fn a_configured_model_is_what_the_next_run_sends_and_the_conversation_is_kept() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("first answer"), Step::text("second answer")]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, "model-one");
    assert_eq!(run(&mut c, &sid, "first task")["outcome"], "success");
    let r = c.ok("session/configure", json!({"session_id": sid, "config": {"model": "model-two", "max_turns": 7}}));
    assert_eq!(r["changed"], json!(["max_turns", "model"]), "{r}");
    assert_eq!(r["config"]["model"], "model-two");
    assert_eq!(c.ok("session/get", json!({"session_id": sid}))["config"]["model"], "model-two");
    assert_eq!(run(&mut c, &sid, "second task")["answer"], "second answer");
    let requests = mock.requests();
    assert_eq!(requests[0]["model"], "model-one");
    assert_eq!(requests[1]["model"], "model-two");
    let sent = requests[1]["messages"].to_string();
    assert!(sent.contains("first task") && sent.contains("first answer"), "{sent}");
    let configured = swival_tests::first_event(&daemon, "session_configured", &sid);
    assert_eq!(configured["changed"], json!(["max_turns", "model"]));
    assert!(configured.get("run_id").is_none(), "{configured}");
}

#[test]
fn an_unknown_key_or_a_wrong_type_is_refused_and_changes_nothing() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("answer")]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, "model-one");
    let before = c.ok("session/get", json!({"session_id": sid}))["config"].clone();
    let unknown = c.call("session/configure", json!({"session_id": sid, "config": {"model": "x", "modle": "y"}}));
    assert_eq!(unknown["error"]["code"], -32005, "{unknown}");
    assert!(unknown["error"]["message"].as_str().unwrap().contains("'modle'"), "{unknown}");
    let wrong = c.call("session/configure", json!({"session_id": sid, "config": {"model": "x", "max_turns": "many"}}));
    assert_eq!(wrong["error"]["code"], -32005, "{wrong}");
    assert!(wrong["error"]["message"].as_str().unwrap().contains("'max_turns'"), "{wrong}");
    assert_eq!(c.ok("session/get", json!({"session_id": sid}))["config"], before);
    assert_eq!(run(&mut c, &sid, "task")["outcome"], "success");
    assert_eq!(mock.requests()[0]["model"], "model-one");
    let missing = c.call("session/configure", json!({"session_id": "s_nope", "config": {"model": "x"}}));
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
}

#[test]
fn configure_during_a_run_is_session_busy() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("finally"), &gate)]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, "model-one");
    let running = c.ok("run/start", json!({"session_id": sid, "task": "one"}))["run_id"].clone();
    mock.wait_for_requests(1);
    let busy = c.call("session/configure", json!({"session_id": sid, "config": {"model": "model-two"}}));
    assert_eq!(busy["error"]["code"], -32003, "{busy}");
    gate.open();
    assert_eq!(c.ok("run/wait", json!({"run_id": running}))["answer"], "finally");
    assert_eq!(c.ok("session/get", json!({"session_id": sid}))["config"]["model"], "model-one");
    let r = c.ok("session/configure", json!({"session_id": sid, "config": {"model": "model-two"}}));
    assert_eq!(r["changed"], json!(["model"]));
}

#[test]
fn added_dirs_are_checked_as_session_create_checks_them() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let extra = env.project("extra");
    let shared = env.project("shared");
    std::fs::write(extra.join("file.txt"), "not a directory").unwrap();
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, "m");
    let file = extra.join("file.txt");
    let refused = c.call("session/configure", json!({"session_id": sid, "add_dirs": [file]}));
    assert_eq!(refused["error"]["code"], -32005, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert_eq!(message, format!("allowed_dirs path is not a directory: {}", file.display()));
    let root = c.call("session/configure", json!({"session_id": sid, "add_dirs_ro": ["/"]}));
    assert_eq!(root["error"]["message"], "allowed_dirs_ro cannot be the filesystem root: /", "{root}");
    assert_eq!(c.ok("session/get", json!({"session_id": sid}))["config"]["allowed_dirs"], json!([]));
    let r = c.ok("session/configure", json!({"session_id": sid, "add_dirs": [extra], "add_dirs_ro": [shared]}));
    assert_eq!(r["changed"], json!(["allowed_dirs", "allowed_dirs_ro"]), "{r}");
    let r = c.ok("session/configure", json!({"session_id": sid, "add_dirs": [extra, shared]}));
    assert_eq!(r["config"]["allowed_dirs"], json!([extra, shared]), "{r}");
    assert_eq!(r["config"]["allowed_dirs_ro"], json!([shared]), "{r}");
}

#[test]
fn a_configured_session_keeps_its_settings_across_a_daemon_restart() {
    let env = TestEnv::new();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("after the restart")]);
    let mut daemon = env.start_daemon();
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, "model-one");
    c.ok("session/configure", json!({"session_id": sid, "config": {"model": "model-two"}}));
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", env.log());
    drop(c);
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    assert_eq!(c.ok("session/get", json!({"session_id": sid}))["config"]["model"], "model-two");
    assert_eq!(run(&mut c, &sid, "task")["answer"], "after the restart");
    assert_eq!(mock.requests()[0]["model"], "model-two");
}

#[test]
fn a_session_from_another_starts_empty_with_its_settings() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("first answer"), Step::text("fresh answer")]);
    let mut c = daemon.nd();
    let source = session(&mut c, &p, &mock, "model-nine");
    run(&mut c, &source, "first task");
    let r = c.ok("session/create", json!({"base_dir": p, "from": {"session_id": source}, "config": {"max_turns": 3}}));
    let sid = r["session_id"].as_str().unwrap().to_owned();
    assert_ne!(sid, source);
    assert_eq!((&r["config"]["model"], &r["config"]["max_turns"]), (&json!("model-nine"), &json!(3)), "{r}");
    assert_eq!(c.ok("session/get", json!({"session_id": sid}))["messages"], json!([]));
    assert_eq!(run(&mut c, &sid, "fresh task")["answer"], "fresh answer");
    let sent = mock.requests()[1].clone();
    assert_eq!(sent["model"], "model-nine");
    assert!(!sent["messages"].to_string().contains("first task"), "{sent}");
    // The source is not changed.
    assert_ne!(c.ok("session/get", json!({"session_id": source}))["config"]["max_turns"], 3);
    let elsewhere = env.project("elsewhere");
    let refused = c.call("session/create", json!({"base_dir": elsewhere, "from": {"session_id": source}}));
    assert_eq!(refused["error"]["code"], -32005, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("keeps its base_dir"), "{refused}");
}

#[test]
fn a_fork_carries_the_conversation_and_leaves_the_source_alone() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("first answer"), Step::text("fork answer")]);
    let mut c = daemon.nd();
    let source = session(&mut c, &p, &mock, "model-nine");
    run(&mut c, &source, "first task");
    let before = c.ok("session/get", json!({"session_id": source}))["messages"].clone();
    let from = json!({"session_id": source, "conversation": true});
    let sid = c.ok("session/create", json!({"base_dir": p, "from": from}))["session_id"].as_str().unwrap().to_owned();
    assert_eq!(c.ok("session/get", json!({"session_id": sid}))["messages"], before);
    assert_eq!(run(&mut c, &sid, "fork task")["answer"], "fork answer");
    let sent = mock.requests()[1].clone();
    assert_eq!(sent["model"], "model-nine");
    let text = sent["messages"].to_string();
    assert!(text.contains("first task") && text.contains("first answer") && text.contains("fork task"), "{text}");
    assert_eq!(c.ok("session/get", json!({"session_id": source}))["messages"], before);
}

#[test]
fn a_configure_or_a_new_session_from_another_never_trusts_a_changed_project_file() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("from the profile")]);
    let toml = format!(
        "[profiles.other]\nprovider = \"generic\"\nbase_url = \"{}\"\nmodel = \"profile-model\"\n",
        mock.base_url()
    );
    std::fs::write(p.join("swival.toml"), &toml).unwrap();
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let untrusted = c.call("session/create", json!({"base_dir": p, "config": config}));
    assert_eq!(untrusted["error"]["code"], -32010, "{untrusted}");
    let created = c.ok("session/create", json!({"base_dir": p, "config": config, "trust": true}));
    let sid = created["session_id"].as_str().unwrap().to_owned();
    // The content the session accepted stays accepted: its profile may be
    // chosen (and the request's own model taken out, so the profile's applies).
    let switch = json!({"active_profile": "other", "model": null});
    let r = c.ok("session/configure", json!({"session_id": sid, "config": switch}));
    assert_eq!(r["config"]["model"], "profile-model", "{r}");
    assert_eq!(run(&mut c, &sid, "task")["answer"], "from the profile");
    assert_eq!(mock.requests()[0]["model"], "profile-model");
    std::fs::write(p.join("swival.toml"), format!("{toml}# changed\n")).unwrap();
    let changed = c.call("session/configure", json!({"session_id": sid, "config": {"max_turns": 3}}));
    assert_eq!(changed["error"]["code"], -32010, "{changed}");
    let from = json!({"session_id": sid});
    let refused = c.call("session/create", json!({"base_dir": p, "from": from}));
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    let trusted = c.ok("session/create", json!({"base_dir": p, "from": from, "trust": true}));
    assert_eq!(trusted["config"]["model"], "profile-model", "{trusted}");
}

#[test]
fn session_tools_lists_what_the_next_run_offers_with_kinds_without_loading_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mut c = daemon.nd();
    let id = swival_tests::create_session(&mut c, &p, json!({"commands": ["ls"], "model": "m"}));
    let tools = c.ok("session/tools", json!({"session_id": id}));
    let listed: Vec<(String, String)> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t["kind"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(listed[0], ("read_file".to_owned(), "read".to_owned()), "{tools}");
    assert!(listed.contains(&("run_command".to_owned(), "execute".to_owned())), "{tools}");
    assert!(listed.contains(&("delete_file".to_owned(), "delete".to_owned())), "{tools}");
    assert!(tools["tools"][0]["description"].as_str().unwrap().len() > 10, "{tools}");
    let none = c.call("session/tools", json!({"session_id": "s_nope"}));
    assert_eq!(none["error"]["code"], -32001, "{none}");
}
