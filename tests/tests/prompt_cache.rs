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
