//! Verify by running: once the model answers after changing files, the
//! project's check runs in the command sandbox; a failure goes back to the
//! model once with the end of its output, and the `verify` events and the
//! report tell how it ended. A check the project's files name runs only
//! where the command policy would run it; the user's `verify_command` runs
//! as written.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{create_session, events_until_finished, TestEnv};

/// A checker outside the project: fails until `answer.txt` says `fixed`.
fn checker(env: &TestEnv) -> std::path::PathBuf {
    let dir = env.project("tools");
    let script = dir.join("check.sh");
    std::fs::write(&script, "#!/bin/sh\ngrep -qx fixed answer.txt && echo all good && exit 0\necho 'FAIL: answer.txt is not fixed'\nexit 3\n")
        .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script
}

/// Write `text` to answer.txt (a new file), then answer `said`.
fn write_then_answer(text: &str, said: &str, id: &str) -> Vec<Step> {
    vec![
        Step::tool_call(id, "write_file", json!({"file_path": "answer.txt", "content": format!("{text}\n")})),
        Step::text(said),
    ]
}

/// A daemon whose global config names [`checker`] as `verify_command`,
/// and a project.
fn checked(env: &TestEnv) -> (swival_tests::Daemon, std::path::PathBuf) {
    let script = checker(env);
    env.global_config(&format!("verify_command = \"{}\"\n", script.display()));
    (env.start_daemon(), env.project("p"))
}

/// The events of kind `kind`.
fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn a_failing_check_goes_back_to_the_model_once_and_the_second_answer_is_checked_again() {
    let env = TestEnv::new();
    let (daemon, p) = checked(&env);
    let mut steps = write_then_answer("wrong", "done", "c1");
    steps.push(Step::tool_call("c2", "read_file", json!({"file_path": "answer.txt"})));
    steps.extend(write_then_answer("fixed", "fixed it", "c3"));
    let mock = MockProvider::start(steps);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"}));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "make the check pass"}))["run_id"].clone();
    let events = events_until_finished(&mut c, &sid, 1);
    let checks = of_kind(&events, "verify");
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert_eq!((checks[0]["passed"].clone(), checks[0]["exit_code"].clone()), (json!(false), json!(3)));
    assert_eq!(checks[0]["source"], "verify_command");
    assert!(checks[0]["output"].as_str().unwrap().contains("FAIL: answer.txt is not fixed"), "{}", checks[0]);
    assert_eq!(checks[1]["passed"], true);
    let told = mock.texts_of(2);
    let note = told.iter().find(|t| t.starts_with("The project's check")).expect("the model is told");
    assert!(note.contains("failed (exit code 3)") && note.contains("FAIL: answer.txt is not fixed"), "{note}");
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!((result["outcome"].clone(), result["answer"].clone()), (json!("success"), json!("fixed it")));
    let report = c.ok("report/get", json!({"run_id": run}));
    let entries: Vec<&Value> =
        report["timeline"].as_array().unwrap().iter().filter(|e| e["type"] == "verify").collect();
    assert_eq!(entries.len(), 2, "{report}");
    assert_eq!(entries[1]["passed"], true);
}

#[test]
fn a_check_that_still_fails_ends_the_run_with_the_truth_and_no_third_try() {
    let env = TestEnv::new();
    let (daemon, p) = checked(&env);
    let mut steps = write_then_answer("wrong", "done", "c1");
    steps.push(Step::tool_call("c2", "write_file", json!({"file_path": "other.txt", "content": "more\n"})));
    steps.push(Step::text("done again"));
    let mock = MockProvider::start(steps);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"}));
    c.ok("run/start", json!({"session_id": sid, "task": "make the check pass"}));
    let events = events_until_finished(&mut c, &sid, 1);
    let checks = of_kind(&events, "verify");
    assert_eq!(checks.iter().map(|e| e["passed"].clone()).collect::<Vec<_>>(), [json!(false), json!(false)]);
    assert_eq!(mock.request_count(), 4, "told once, never twice");
    assert_eq!(events.last().unwrap()["answer"], "done again");
}

#[test]
fn a_check_the_project_names_does_not_run_where_commands_are_off_nor_after_an_answer_that_changed_nothing() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    // The model wrote this: with commands off it must not make the daemon run npm.
    std::fs::write(p.join("package.json"), r#"{"scripts": {"test": "touch ran-by-npm"}}"#).unwrap();
    let mut steps = write_then_answer("x", "done", "c1");
    steps.push(Step::text("nothing changed"));
    let mock = MockProvider::start(steps);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"}));
    c.ok("run/start", json!({"session_id": sid, "task": "write x"}));
    let events = events_until_finished(&mut c, &sid, 1);
    assert!(of_kind(&events, "verify").is_empty(), "commands are off");
    assert!(!p.join("ran-by-npm").exists());
    let script = checker(&env);
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "verify_command": script});
    let sid = create_session(&mut c, &p, config);
    c.ok("run/start", json!({"session_id": sid, "task": "say something"}));
    let events = events_until_finished(&mut c, &sid, 1);
    assert!(of_kind(&events, "verify").is_empty(), "no file changed: nothing to check");
}

#[test]
fn a_check_that_cannot_run_warns_the_user_and_tells_the_model_nothing() {
    let env = TestEnv::new();
    env.global_config("verify_command = \"/nonexistent/check-tool --all\"\n");
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(write_then_answer("x", "done", "c1"));
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"}));
    c.ok("run/start", json!({"session_id": sid, "task": "write x"}));
    let events = events_until_finished(&mut c, &sid, 1);
    let checks = of_kind(&events, "verify");
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert!(checks[0].get("exit_code").is_none() && checks[0]["passed"] == false, "{}", checks[0]);
    let warned = of_kind(&events, "warning");
    assert!(warned.iter().any(|w| w["message"].as_str().unwrap().contains("could not run")), "{warned:?}");
    assert_eq!(mock.request_count(), 2, "the model is not told to fix a check that never ran");
    assert_eq!(events.last().unwrap()["answer"], "done");
}
