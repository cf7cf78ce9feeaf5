//! `lean_tools`: a local-server preset (`llamacpp` here, pointed at the
//! mock) is offered the lean tool schemas by default, `lean_tools =
//! false` or a provider that is not local gets Swival's, and a parameter
//! the lean offer leaves out still reaches the tool when a model sends it.
//! Real daemon, the mock provider; the first request's `tools` are
//! compared with the offers `tests/snapshots/tool_schemas.txt` holds.

use serde_json::{json, Value};
use std::path::PathBuf;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;
use swivald::tooling::{tool_schemas, CommandPolicy, Offer, SchemaStyle};

/// A project holding `calc.py`.
fn project(env: &TestEnv) -> PathBuf {
    let p = env.project("p");
    std::fs::write(p.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    p
}

/// Run `task` on a new session with `config` (pointed at `mock`) to a
/// successful end.
fn run(mock: &MockProvider, config: Value, task: &str) {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let mut config = config;
    config["base_url"] = mock.base_url().into();
    config["model"] = "mock-model".into();
    let mut c = daemon.nd();
    let created = c.ok("session/create", json!({"base_dir": p, "config": config}));
    let run = c.ok("run/start", json!({"session_id": created["session_id"], "task": task}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["outcome"], "success", "{result}");
}

/// The tools of the first request a run with `config` sends.
fn first_tools(config: Value) -> Value {
    let mock = MockProvider::start(vec![Step::text("done")]);
    run(&mock, config, "say hi");
    mock.requests()[0]["tools"].clone()
}

/// The offer of a session with the default `max_output_lines` and no
/// command tool, in `style`.
fn expected(style: SchemaStyle) -> Value {
    Value::Array(Offer::shared(2000, style, tool_schemas(&CommandPolicy::Off)).schemas.clone())
}

#[test]
fn llamacpp_is_offered_the_lean_schemas_by_default() {
    let tools = first_tools(json!({"provider": "llamacpp"}));
    assert_eq!(tools, expected(SchemaStyle::Lean));
    let names: Vec<&str> = tools.as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(names.contains(&"edit_file") && !names.contains(&"think") && !names.contains(&"todo"), "{names:?}");
}

#[test]
fn lean_tools_false_gives_llamacpp_swivals_schemas() {
    assert_eq!(first_tools(json!({"provider": "llamacpp", "lean_tools": false})), expected(SchemaStyle::Swival));
}

#[test]
fn a_provider_that_is_not_local_gets_swivals_schemas_unless_asked() {
    assert_eq!(first_tools(json!({"provider": "generic"})), expected(SchemaStyle::Swival));
    assert_eq!(first_tools(json!({"provider": "generic", "lean_tools": true})), expected(SchemaStyle::Lean));
}

#[test]
fn parameters_left_out_of_the_lean_offer_still_reach_the_tools() {
    let mock = MockProvider::start(vec![
        Step::tool_calls(vec![
            ("t1", "think", json!({"thought": "plan the fix", "thought_number": 5, "total_thoughts": 7})),
            (
                "e1",
                "edit_file",
                json!({"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b",
                "checksum": "deadbeef"}),
            ),
        ]),
        Step::text("done"),
    ]);
    run(&mock, json!({"provider": "llamacpp"}), "fix calc.py");
    let results = mock.tool_results();
    let think = &results["t1"];
    assert!(think.contains("\"thought_number\": 5") || think.contains("\"thought_number\":5"), "{think}");
    assert!(think.contains("\"total_thoughts\": 7") || think.contains("\"total_thoughts\":7"), "{think}");
    let edit = &results["e1"];
    assert!(edit.contains("checksum mismatch: you sent deadbeef"), "the checksum guard ran: {edit}");
    assert!(!think.contains("ignored") && !edit.contains("ignored"), "{think}\n{edit}");
}
