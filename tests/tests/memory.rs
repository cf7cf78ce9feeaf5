//! What the daemon keeps in memory: closed sessions and finished runs leave
//! it, reading a session never loads it, idle sessions past
//! `max_live_sessions` are dropped and come back from the store when used.
//! Counts come from `daemon/status` (`live_sessions`, `runs_in_flight`).

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{events_until_finished, NdConn, TestEnv};

/// Create a session on `mock` in `project`; returns its id.
fn create(c: &mut NdConn, project: &Path, mock: &MockProvider) -> String {
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    c.ok("session/create", json!({"base_dir": project, "config": cfg}))["session_id"].as_str().unwrap().to_owned()
}

/// Start a run on `session` and wait for its result.
fn run(c: &mut NdConn, session: &str, task: &str) -> (String, Value) {
    let run = c.ok("run/start", json!({"session_id": session, "task": task}))["run_id"].as_str().unwrap().to_owned();
    let result = c.ok("run/wait", json!({"run_id": run}));
    (run, result)
}

#[test]
fn closed_sessions_leave_memory_and_reading_them_loads_nothing() {
    const SESSIONS: usize = 300;
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    // Every request after the script gets the same text answer.
    let mock = MockProvider::start(Vec::new());
    let mut c = daemon.nd();
    let mut done = Vec::new();
    for i in 0..SESSIONS {
        let sid = create(&mut c, &project, &mock);
        let (run, result) = run(&mut c, &sid, &format!("task {i}"));
        assert_eq!(result["outcome"], "success", "{result}");
        c.ok("session/close", json!({"session_id": sid}));
        done.push((sid, run));
    }
    let status = c.ok("daemon/status", json!({}));
    assert_eq!(status["live_sessions"], 0, "{status}");
    assert_eq!(status["runs_in_flight"], 0, "{status}");

    for (i, (sid, run)) in done.iter().enumerate() {
        let detail = c.ok("session/get", json!({"session_id": sid}));
        assert_eq!(detail["info"]["state"], "closed");
        assert_eq!(detail["runs"].as_array().unwrap().len(), 1, "{detail}");
        assert_eq!(detail["runs"][0]["run_id"], json!(run));
        assert_eq!(detail["runs"][0]["outcome"], "success");
        let messages = detail["messages"].as_array().unwrap();
        assert!(messages.iter().any(|m| m["role"] == "user" && m["content"] == format!("task {i}")), "{detail}");
        assert!(messages.iter().any(|m| m["role"] == "assistant"), "{detail}");
        // A finished run's result and report come from the store.
        assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
        assert_eq!(c.ok("report/get", json!({"run_id": run}))["result"]["outcome"], "success");
    }
    let list = c.ok("session/list", json!({}));
    let sessions = list["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), SESSIONS);
    assert!(sessions.iter().all(|s| s["state"] == "closed" && s["run_count"] == 1), "{list}");
    // Replaying a closed session's events loads nothing either.
    let mut sub = daemon.nd();
    let events = events_until_finished(&mut sub, &done[0].0, 1);
    assert_eq!(events.last().unwrap()["outcome"], "success");

    let status = c.ok("daemon/status", json!({}));
    assert_eq!(status["live_sessions"], 0, "{status}");
    assert_eq!(status["runs_in_flight"], 0, "{status}");
}

#[test]
fn idle_sessions_past_the_cap_are_dropped_and_come_back_with_their_conversation_and_subscribers() {
    const CAP: usize = 4;
    let env = TestEnv::new();
    env.daemon_settings(&format!("max_live_sessions = {CAP}"));
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![Step::text("first answer")]);
    let mut c = daemon.nd();
    let first = create(&mut c, &project, &mock);
    assert_eq!(run(&mut c, &first, "remember this").1["answer"], "first answer");
    // A subscriber on the first session, which is about to leave memory.
    let mut sub = daemon.nd();
    let before = events_until_finished(&mut sub, &first, 1);
    let next_seq = before.last().unwrap()["seq"].as_u64().unwrap() + 1;
    let others: Vec<String> = (0..3 * CAP).map(|_| create(&mut c, &project, &mock)).collect();
    let status = c.ok("daemon/status", json!({}));
    assert_eq!(status["live_sessions"], CAP, "{status}");

    // The first session was dropped (least recently used); a run loads it
    // again with its conversation, and the subscriber sees that run live.
    let (_, result) = run(&mut c, &first, "and now?");
    assert_eq!(result["outcome"], "success", "{result}");
    let last = mock.requests().pop().unwrap();
    let contents: Vec<&str> =
        last["messages"].as_array().unwrap().iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(contents.contains(&"remember this") && contents.contains(&"first answer"), "{contents:?}");
    let mut live = Vec::new();
    loop {
        let msg = sub.read();
        if msg["method"] != "session/event" {
            continue;
        }
        let event = msg["params"]["result"].clone();
        let finished = event["type"] == "run_finished";
        live.push(event);
        if finished {
            break;
        }
    }
    assert_eq!(live[0]["seq"], next_seq, "no event missed: {live:?}");
    assert_eq!(live[0]["type"], "run_started");

    for sid in &others {
        c.ok("session/close", json!({"session_id": sid}));
    }
    c.ok("session/close", json!({"session_id": first}));
    let status = c.ok("daemon/status", json!({}));
    assert_eq!(status["live_sessions"], 0, "{status}");
}
