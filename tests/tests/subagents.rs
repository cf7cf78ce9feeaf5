//! Subagents (Swival's `spawn_subagent` and `check_subagents`) as child
//! sessions of the daemon: spawned by a run, they run at once, show in
//! `session/list` with their parent, go through the parent's filter
//! chain, answer through `check_subagents`, and end when the parent's run
//! is cancelled. Off unless `subagents = true`, as in Swival.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::{script, wait_until, NdConn, TestEnv, REDACT_FILTER as REDACT};

/// What a subagent's system prompt starts with.
const PREAMBLE: &str = "You are a subagent working on a specific task within a larger project.";

/// A session of `base` on `mock` with `extra` config; its id.
fn session(c: &mut NdConn, base: &Path, mock: &MockProvider, extra: Value) -> String {
    let mut config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    c.ok("session/create", json!({"base_dir": base, "config": config}))["session_id"].as_str().unwrap().to_owned()
}

/// The requests the mock got from subagents.
fn child_requests(mock: &MockProvider) -> Vec<Value> {
    mock.requests().into_iter().filter(|r| r.to_string().contains(PREAMBLE)).collect()
}

/// The tool names a request offered.
fn offered(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_owned)).collect()
}

#[test]
fn two_subagents_run_at_once_as_child_sessions_through_the_filter_and_answer_through_check_subagents() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let filter = script(&p, "redact.py", REDACT);
    let mock = MockProvider::start(vec![]);
    mock.push(Step::tool_calls(vec![
        ("s1", "spawn_subagent", json!({"task": "count alpha on internal.example.corp"})),
        ("s2", "spawn_subagent", json!({"task": "count beta", "max_turns": 5, "system_hint": "Be brief."})),
    ]));
    mock.push(Step::tool_call("c1", "check_subagents", json!({"action": "collect", "subagent_id": "sub_1"})));
    mock.push(Step::tool_call("c2", "check_subagents", json!({"action": "collect", "subagent_id": "sub_2"})));
    mock.push(Step::text("alpha and beta counted"));
    let (gate_a, gate_b) = (Gate::new(), Gate::new());
    mock.route(&[PREAMBLE, "count alpha"], vec![Step::gated(Step::text("alpha is 1"), &gate_a)]);
    mock.route(&[PREAMBLE, "count beta"], vec![Step::gated(Step::text("beta is 2"), &gate_b)]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, json!({"subagents": true, "llm_filter": filter}));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "count things"}))["run_id"].clone();

    // Both children asked the model before either was answered: they run at once.
    wait_until("both subagents' first requests", || child_requests(&mock).len() == 2);
    let list = c.ok("session/list", json!({}));
    let children: Vec<&Value> =
        list["sessions"].as_array().unwrap().iter().filter(|s| s["parent"].is_object()).collect();
    assert_eq!(children.len(), 2, "{list:#}");
    for child in &children {
        assert_eq!(child["parent"]["session_id"], sid.as_str());
        assert_eq!(child["parent"]["run_id"], run);
        assert_eq!(child["state"], "running", "{list:#}");
    }
    gate_a.open();
    gate_b.open();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["outcome"], "success", "{result:#}");

    let results = mock.tool_results();
    assert_eq!(results["s1"], "Background agent sub_1 is ready.");
    assert_eq!(results["c1"], "alpha is 1");
    assert_eq!(results["c2"], "beta is 2");
    let children = child_requests(&mock);
    let sent = serde_json::to_string(&children).unwrap();
    assert!(
        !sent.contains("internal.example.corp") && sent.contains("[REDACTED]"),
        "the filter ran on the child: {sent}"
    );
    let beta = children.iter().find(|r| r.to_string().contains("count beta")).unwrap();
    let system = beta["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with(PREAMBLE) && system.contains("\n\nBe brief.\n\n"), "{system}");
    for child in &children {
        let tools = offered(child);
        assert!(!tools.contains(&"spawn_subagent".to_owned()), "a subagent spawns no subagents: {tools:?}");
    }
    let parent_tools = offered(&mock.requests()[0]);
    assert!(parent_tools.contains(&"check_subagents".to_owned()), "{parent_tools:?}");
    let report = c.ok("report/get", json!({"run_id": run}));
    assert_eq!(report["stats"]["tool_calls_by_name"]["spawn_subagent"]["succeeded"], 2, "{report:#}");
}

#[test]
fn cancelling_the_parent_run_cancels_its_subagents() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![]);
    mock.push(Step::tool_call("s1", "spawn_subagent", json!({"task": "wait forever"})));
    mock.push(Step::tool_call("c1", "check_subagents", json!({"action": "collect", "subagent_id": "sub_1"})));
    mock.route(&[PREAMBLE, "wait forever"], vec![Step::hang()]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, json!({"subagents": true}));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "delegate"}))["run_id"].clone();
    wait_until("the subagent's request", || child_requests(&mock).len() == 1);
    // The parent is collecting (its second request was answered) when it is cancelled.
    wait_until("the parent's collect", || mock.request_count() == 3);
    c.ok("run/cancel", json!({"run_id": run}));
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "cancelled");
    let list = c.ok("session/list", json!({}));
    let child = list["sessions"].as_array().unwrap().iter().find(|s| s["parent"].is_object()).unwrap().clone();
    let detail = c.ok("session/get", json!({"session_id": child["session_id"]}));
    let child_run = detail["runs"][0]["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": child_run}))["outcome"], "cancelled", "{detail:#}");
}

#[test]
fn subagents_are_offered_only_when_asked_for() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("hi")]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, json!({}));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "hello"}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}));
    let tools = offered(&mock.requests()[0]);
    assert!(!tools.iter().any(|t| t.contains("subagent")), "{tools:?}");
    let system = mock.requests()[0]["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(!system.contains("spawn_subagent"), "no guidance without subagents");
}
