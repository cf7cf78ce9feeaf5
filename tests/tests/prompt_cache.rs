//! A prompt the server can keep: each request of a run extends the one
//! before (its messages are the earlier ones, byte for byte, then new
//! ones), through tool turns, a failed call's nudge and the storm breaker;
//! and what the server says it served from its cache is recorded in each
//! `llm_call`, summed in the report and shown by `swivalctl run`.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{events_until_finished, TestEnv};

/// Each message of a request, as sent.
fn messages(request: &Value) -> Vec<String> {
    request["messages"].as_array().unwrap().iter().map(Value::to_string).collect()
}

#[test]
fn every_request_extends_the_one_before_through_tool_turns_nudges_and_the_storm_breaker() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "alpha\n").unwrap();
    let same = || Step::tool_call("r", "read_file", json!({"file_path": "a.txt"}));
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "a.txt"})),
        Step::tool_call("c2", "read_file", json!({"file_path": "missing.txt"})),
        Step::tool_call("c3", "edit_file", json!({"file_path": "a.txt", "old_string": "beta", "new_string": "x"})),
        same(),
        same(),
        same(),
        same(),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let sid =
        c.ok("session/create", json!({"base_dir": p, "config": config}))["session_id"].as_str().unwrap().to_owned();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "read a.txt"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    let requests = mock.requests();
    assert!(requests.len() >= 8, "{}", requests.len());
    let events = events_until_finished(&mut c, &sid, 1);
    assert!(events.iter().any(|e| e["type"] == "intervention"), "a guard spoke: {events:#?}");
    for (i, pair) in requests.windows(2).enumerate() {
        let (before, after) = (messages(&pair[0]), messages(&pair[1]));
        assert!(after.len() > before.len(), "request {} has fewer messages", i + 2);
        assert_eq!(after[..before.len()], before[..], "request {} rewrote what request {} sent", i + 2, i + 1);
        assert_eq!(pair[0]["tools"], pair[1]["tools"], "the tools of request {} changed", i + 2);
    }
}

#[test]
fn the_servers_cached_tokens_are_recorded_reported_and_shown() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "alpha\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "a.txt"})),
        Step::text("alpha"),
    ])
    .with_prefix_cache();
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    let out =
        env.swivalctl(&daemon, &p).args(["run", "--no-history", "--report", "r.json", "read a.txt"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&std::fs::read(p.join("r.json")).unwrap()).unwrap();
    let calls: Vec<&Value> =
        report["timeline"].as_array().unwrap().iter().filter(|e| e["type"] == "llm_call").collect();
    assert_eq!(calls[0]["cached_tokens"], 0, "nothing cached before the first: {report:#}");
    let second = calls[1]["cached_tokens"].as_u64().unwrap();
    assert!(second > 0 && second < calls[1]["prompt_tokens"].as_u64().unwrap(), "{report:#}");
    assert_eq!(report["stats"]["cached_tokens"], second, "{report:#}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{second} from the server's cache")), "{stderr}");
}

#[test]
fn a_new_sessions_first_request_starts_as_the_last_ones_so_the_server_keeps_the_system_prompt_and_tools() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("AGENTS.md"), "Use tabs.\n").unwrap();
    let mock = MockProvider::start(vec![Step::text("one"), Step::text("two")]).with_prefix_cache();
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let mut runs = Vec::new();
    for task in ["what is 1 + 0?", "and what is 1 + 1?"] {
        let sid = c.ok("session/create", json!({"base_dir": p, "config": config}))["session_id"].clone();
        let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
        assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
        runs.push(run);
    }
    let requests = mock.requests();
    let system = |r: &Value| r["messages"][0]["content"].as_str().unwrap().to_owned();
    let (a, b) = (system(&requests[0]), system(&requests[1]));
    // The date is the day's, so nothing in the prompt changes from one run
    // to the next within a day (a test running across midnight UTC would
    // see its last line differ, and only that).
    let last = a.lines().last().unwrap();
    assert!(last.starts_with("Current date: ") && last.ends_with(" (UTC)") && last.len() == 30, "{last}");
    assert!(a.contains("Use tabs."), "{a}");
    assert_eq!(a.rsplit_once('\n').unwrap().0, b.rsplit_once('\n').unwrap().0, "the system prompts differ");
    assert_eq!(requests[0]["tools"], requests[1]["tools"]);
    // The mock's cache (the bytes a request shares with the one before)
    // serves the second run's system prompt, as a server's would.
    let report = c.ok("report/get", json!({"run_id": runs[1]}));
    let call = report["timeline"].as_array().unwrap().iter().find(|e| e["type"] == "llm_call").unwrap().clone();
    let cached = call["cached_tokens"].as_u64().unwrap();
    let kept = b.rsplit_once('\n').unwrap().0.len() as u64;
    assert!(cached >= kept / 4, "{cached} cached tokens, a system prompt of {kept} bytes before its date");
}
