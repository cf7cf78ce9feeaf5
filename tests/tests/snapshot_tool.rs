//! The model's `snapshot` tool (Swival's): a restore collapses the turns
//! since the checkpoint, or since the user's message, into one assistant
//! message with the model's summary; a scope in which a file was written
//! is refused unless forced. Real daemon, mock provider.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{run_task, TestEnv};

fn config(mock: &MockProvider) -> Value {
    json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true})
}

/// The messages of request `n` (0-based).
fn messages(mock: &MockProvider, n: usize) -> Vec<Value> {
    mock.requests()[n]["messages"].as_array().unwrap().clone()
}

#[test]
fn a_restore_collapses_the_investigation_into_the_models_summary() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "alpha secret-a\n").unwrap();
    std::fs::write(p.join("b.txt"), "beta secret-b\n").unwrap();
    let restore = json!({"action": "restore", "summary": "a.txt says alpha, b.txt says beta"});
    let mock = MockProvider::start(vec![
        Step::tool_call("r1", "read_file", json!({"file_path": "a.txt"})),
        Step::tool_call("r2", "read_file", json!({"file_path": "b.txt"})),
        Step::tool_call("s1", "snapshot", restore),
        Step::text("alpha and beta"),
    ]);
    let mut c = daemon.nd();
    let (_, _, result) = run_task(&mut c, &p, config(&mock), "what do a.txt and b.txt say?");
    assert_eq!(result["outcome"], "success", "{result:#}");
    let first = mock.requests()[0]["tools"].clone();
    let offered: Vec<&Value> = first.as_array().unwrap().iter().map(|t| &t["function"]["name"]).collect();
    assert!(offered.iter().any(|n| *n == "snapshot"), "{offered:?}");
    let last = messages(&mock, 3);
    let text = serde_json::to_string(&last).unwrap();
    assert!(!text.contains("secret-a") && !text.contains("secret-b"), "the reads are collapsed: {text}");
    let recap = last.iter().find(|m| m["content"].as_str().is_some_and(|t| t.starts_with("[snapshot: "))).unwrap();
    let recap = recap["content"].as_str().unwrap();
    // The files the task names, read up front, the two calls and their
    // results: everything after the user's message.
    assert!(
        recap.starts_with("[snapshot: investigation]\na.txt says alpha, b.txt says beta\n(collapsed 5 turns"),
        "{recap}"
    );
    let answered = last.iter().find(|m| m["tool_call_id"] == "s1").unwrap()["content"].as_str().unwrap().to_owned();
    assert!(answered.starts_with("Snapshot 'investigation' restored: collapsed 5 turns"), "{answered}");
    let user = last.iter().position(|m| m["role"] == "user").unwrap();
    assert!(last[user]["content"].as_str().unwrap().contains("what do a.txt and b.txt say?"), "the task stays");
}

#[test]
fn a_scope_that_wrote_a_file_is_refused_unless_forced_and_a_checkpoint_bounds_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "alpha secret-a\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("r1", "read_file", json!({"file_path": "a.txt"})),
        Step::tool_call("s1", "snapshot", json!({"action": "save", "label": "notes"})),
        Step::tool_call("w1", "write_file", json!({"file_path": "notes.txt", "content": "alpha\n"})),
        Step::tool_call("s2", "snapshot", json!({"action": "restore", "summary": "wrote notes.txt"})),
        Step::tool_call("s3", "snapshot", json!({"action": "restore", "summary": "wrote notes.txt", "force": true})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let (_, _, result) = run_task(&mut c, &p, config(&mock), "read a.txt and write notes.txt");
    assert_eq!(result["outcome"], "success", "{result:#}");
    let after_refusal = messages(&mock, 4);
    let refused = after_refusal.iter().find(|m| m["tool_call_id"] == "s2").unwrap()["content"].as_str().unwrap();
    assert!(refused.starts_with("error: snapshot restore refused") && refused.contains("force=true"), "{refused}");
    let last = messages(&mock, 5);
    let text = serde_json::to_string(&last).unwrap();
    assert!(last.iter().any(|m| m["tool_call_id"] == "r1"), "the read before the checkpoint stays: {text}");
    assert!(!text.contains("\"w1\""), "the write after it is collapsed: {text}");
    let recap = last.iter().find(|m| m["content"].as_str().is_some_and(|t| t.starts_with("[snapshot: "))).unwrap();
    assert!(recap["content"].as_str().unwrap().starts_with("[snapshot: notes]\nwrote notes.txt\n"), "{recap}");
    assert_eq!(std::fs::read_to_string(p.join("notes.txt")).unwrap(), "alpha\n", "a restore touches no file");
}
