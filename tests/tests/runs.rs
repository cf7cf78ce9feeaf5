//! Sessions and runs end to end: the real daemon, the real swivalctl, the
//! in-process mock provider.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{init_params, NdConn, TestEnv};

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

#[test]
fn scripted_read_write_answer_through_swivalctl_run() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    std::fs::write(project.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("call_1", "read_file", json!({"file_path": "notes.txt"})),
        Step::tool_call(
            "call_2",
            "write_file",
            json!({"file_path": "out/summary.txt", "content": "two lines"}),
        ),
        Step::text("Wrote out/summary.txt."),
    ]);
    let out = env
        .swivalctl(&daemon, &project)
        .arg("run")
        .args(provider_flags(&mock))
        .arg("summarise notes")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Wrote out/summary.txt.\n",
        "stdout must hold only the answer"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("out/summary.txt")).unwrap(),
        "two lines"
    );

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    let first = &reqs[0];
    assert_eq!(first["model"], "mock-model");
    assert_eq!(first["tool_choice"], "auto");
    assert!(first["max_tokens"].as_u64().unwrap() > 0);
    assert_eq!(first["messages"][0]["role"], "system");
    assert_eq!(
        first["messages"][1],
        json!({"role": "user", "content": "summarise notes"})
    );
    let tool_names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tool_names.contains(&"read_file") && tool_names.contains(&"write_file"));
    let second = reqs[1]["messages"].as_array().unwrap();
    let tool_msg = second
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool result sent back");
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    assert!(tool_msg["content"].as_str().unwrap().contains("1: alpha"));
    let third = reqs[2]["messages"].as_array().unwrap();
    assert_eq!(
        third.iter().rfind(|m| m["role"] == "tool").unwrap()["tool_call_id"],
        "call_2"
    );
    // The answer went to HISTORY.md.
    let history = std::fs::read_to_string(project.join(".swival/HISTORY.md")).unwrap();
    assert!(history.contains("Wrote out/summary.txt."));
}

/// Create a session on the mock over a raw connection.
fn create_session(
    c: &mut NdConn,
    base: &std::path::Path,
    mock: &MockProvider,
    extra: Value,
) -> String {
    let mut config =
        json!({"provider": "generic", "base_url": mock.base_url(), "model": "mock-model"});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    let r = c.ok(
        "session/create",
        json!({"base_dir": base, "config": config}),
    );
    r["session_id"].as_str().unwrap().to_owned()
}

/// Subscribe on `c` and collect events until the run's `run_finished`.
fn events_until_finished(c: &mut NdConn, session: &str, from: u64) -> Vec<Value> {
    c.ok(
        "session/subscribe",
        json!({"session_id": session, "from_seq": from}),
    );
    let mut events = Vec::new();
    loop {
        let msg = c.read();
        if msg["method"] != "session/event" {
            continue;
        }
        let ev = msg["params"]["result"].clone();
        let done = ev["type"] == "run_finished";
        events.push(ev);
        if done {
            return events;
        }
    }
}

#[test]
fn streaming_text_deltas_arrive_before_run_finished() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![Step::text("a streamed answer of several words")]);
    let mut c = daemon.nd();
    c.ok("initialize", init_params());
    let sid = create_session(&mut c, &project, &mock, json!({"stream": true}));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "hi"}))["run_id"].clone();
    let events = events_until_finished(&mut c, &sid, 1);
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "a streamed answer of several words");
    assert!(events.iter().filter(|e| e["type"] == "text_delta").count() >= 2);
    let last = events.last().unwrap();
    assert_eq!(last["run_id"], run);
    assert_eq!(last["answer"], "a streamed answer of several words");
    assert_eq!(mock.requests()[0]["stream"], true);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "seqs are consecutive from 1"
    );
}

#[test]
fn non_streaming_run_succeeds_and_run_wait_returns_the_result() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![Step::text("plain answer")]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &project, &mock, json!({"stream": false}));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "hi"}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["outcome"], "success");
    assert_eq!(result["answer"], "plain answer");
    assert_eq!(result["exit_code"], 0);
    assert!(mock.requests()[0].get("stream").is_none());
}
