//! The first request of a run as the provider receives it. Swival sends
//! `[system, user]`, the user message being the task as given; swivald
//! does too with `read_named_files = false` (in the session config, or
//! `swivalctl run --no-read-named-files`), and by default adds the files
//! the task names as a second user message. Real daemon, real swivalctl,
//! the mock provider.

use serde_json::{json, Value};
use std::path::PathBuf;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

/// A task naming a file of the project.
const TASK: &str = "fix calc.py";
/// The model's one answer: it says why nothing changed, so the run ends
/// on it (an answer that does not, to a task ordering a change, is nudged).
const ANSWER: &str = "Nothing to fix: the file is correct.";

/// A project holding `calc.py`.
fn project(env: &TestEnv) -> PathBuf {
    let p = env.project("p");
    std::fs::write(p.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    p
}

/// The provider keys pointing at the mock, plus `extra`.
fn config(mock: &MockProvider, extra: Value) -> Value {
    let mut cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "mock-model"});
    cfg.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    cfg
}

/// Run [`TASK`] on `p` through `session/create` and `run/start` with
/// `extra` config keys, to its end; the messages of the only request.
fn first_messages_over_the_socket(extra: Value) -> Vec<Value> {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let mock = MockProvider::start(vec![Step::text(ANSWER)]);
    let mut c = daemon.nd();
    let created = c.ok("session/create", json!({"base_dir": p, "config": config(&mock, extra)}));
    let run = c.ok("run/start", json!({"session_id": created["session_id"], "task": TASK}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["outcome"], "success", "{result}");
    only_request_messages(&mock)
}

/// The messages of the one request `mock` received.
fn only_request_messages(mock: &MockProvider) -> Vec<Value> {
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "one model call: {requests:#?}");
    requests[0]["messages"].as_array().unwrap().clone()
}

/// Swival's first request: the system prompt, then the task byte for byte
/// as the only other message, with no key besides `role` and `content`.
fn assert_swivals_first_request(messages: &[Value]) {
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert_eq!(messages[0]["role"], "system", "{messages:#?}");
    assert!(messages[0]["content"].as_str().is_some_and(|s| !s.is_empty()), "{messages:#?}");
    assert_eq!(messages[1], json!({"role": "user", "content": TASK}));
}

#[test]
fn read_named_files_false_sends_swivals_first_request_system_then_the_task() {
    let messages = first_messages_over_the_socket(json!({"read_named_files": false}));
    assert_swivals_first_request(&messages);
}

#[test]
fn swivalctl_run_no_read_named_files_sends_swivals_first_request() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let mock = MockProvider::start(vec![Step::text(ANSWER)]);
    let out = env
        .swivalctl(&daemon, &p)
        .args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "mock-model"])
        .args(["--no-read-named-files", TASK])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{ANSWER}\n"));
    assert_swivals_first_request(&only_request_messages(&mock));
}

#[test]
fn by_default_the_named_file_follows_the_task_as_a_second_user_message() {
    let messages = first_messages_over_the_socket(json!({}));
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1], json!({"role": "user", "content": TASK}));
    assert_eq!(messages[2]["role"], "user");
    let files = messages[2]["content"].as_str().unwrap();
    assert!(files.starts_with("The task names these files"), "{files}");
    assert!(files.contains("=== calc.py ===\n1: def add(a, b):\n2:     return a - b"), "{files}");
    assert!(messages[2].get("_swival_synthetic").is_none(), "internal keys are never sent: {}", messages[2]);
}
