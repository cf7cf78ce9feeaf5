//! Context compaction with a small configured window: old tool results are
//! cut, then a `summary` call goes through the filter chain, and the run
//! still completes.

use serde_json::{json, Value};
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::{script, TestEnv};

#[test]
fn long_conversation_in_a_small_window_is_compacted_through_the_pipeline() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let text: String = (0..60).map(|i| format!("line {i} of a long file with words in it\n")).collect();
    // Ten files: reading one file ten times would trip the repeat-loop guard.
    for i in 0..10 {
        std::fs::write(p.join(format!("big{i}.txt")), &text).unwrap();
    }
    let filter = script(
        &p,
        "kinds.py",
        "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nopen('kinds.log', 'a').write(req['call_kind'] + '\\n')\nprint(json.dumps({'messages': req['messages']}))\n",
    );
    let mut steps: Vec<Step> = (0..10)
        .map(|i| Step::tool_call(&format!("c{i}"), "read_file", json!({"file_path": format!("big{i}.txt")})))
        .collect();
    steps.extend((0..6).map(|_| Step::text("done")));
    let mock = MockProvider::start(steps);
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m",
        "max_context_tokens": 6000, "llm_filter": filter});
    let mut c = daemon.nd();
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "read the big files"}))["run_id"].clone();
    let r = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(r["stats"]["compactions"].as_u64().unwrap() >= 1, "{r}");
    let kinds = std::fs::read_to_string(p.join("kinds.log")).unwrap();
    assert!(kinds.lines().any(|k| k == "summary"), "the filter never saw a summary call: {kinds}");
    let report = c.ok("report/get", json!({"run_id": run}));
    let compactions: Vec<&Value> =
        report["timeline"].as_array().unwrap().iter().filter(|e| e["type"] == "compaction").collect();
    assert!(!compactions.is_empty());
    assert!(compactions[0]["tokens_after"].as_u64() < compactions[0]["tokens_before"].as_u64());
    // Every request after the first compaction fits the window better than before it.
    let sizes: Vec<usize> = mock.requests().iter().map(|r| r["messages"].to_string().len()).collect();
    assert!(sizes.iter().max().unwrap() / 4 < 12_000, "{sizes:?}");
}

/// A session on `mock` whose first run read six long files (one a turn)
/// and answered: old tool results to cut, middle turns to summarise.
/// `filter` is the session's `llm_filter`, when given.
fn session_after_long_reads(
    env: &TestEnv,
    c: &mut swival_tests::NdConn,
    mock: &MockProvider,
    filter: Option<&std::path::Path>,
) -> String {
    let p = env.project("p");
    let text: String = (0..40).map(|i| format!("line {i} of a long file with words in it\n")).collect();
    for i in 0..6 {
        std::fs::write(p.join(format!("big{i}.txt")), &text).unwrap();
    }
    for i in 0..6 {
        mock.push(Step::tool_call(&format!("c{i}"), "read_file", json!({"file_path": format!("big{i}.txt")})));
    }
    mock.push(Step::text("read them all"));
    let mut cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    if let Some(filter) = filter {
        cfg["llm_filter"] = json!(filter);
    }
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].as_str().unwrap().to_owned();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "read the big files"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    sid
}

/// The stored conversation of `sid`.
fn messages(c: &mut swival_tests::NdConn, sid: &str) -> Vec<Value> {
    c.ok("session/get", json!({"session_id": sid}))["messages"].as_array().unwrap().clone()
}

#[test]
fn session_compact_cuts_old_tool_results_between_runs() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let sid = session_after_long_reads(&env, &mut c, &mock, None);
    let before = messages(&mut c, &sid);
    let r = c.ok("session/compact", json!({"session_id": sid}));
    assert_eq!(r["strategy"], "truncate_tool_results", "{r}");
    assert!(r["tokens_after"].as_u64() < r["tokens_before"].as_u64(), "{r}");
    let after = messages(&mut c, &sid);
    assert_eq!(after.len(), before.len());
    assert!(Value::from(after.clone()).to_string().len() < Value::from(before).to_string().len());
    assert!(after.iter().any(|m| m["content"].as_str().is_some_and(|t| t.contains("cut to fit"))), "{after:?}");
    let event = swival_tests::first_event(&daemon, "compaction", &sid);
    assert_eq!((&event["turn"], &event["strategy"]), (&json!(0), &json!("truncate_tool_results")));
    assert!(event.get("run_id").is_none(), "{event}");
    assert_eq!(mock.request_count(), 7, "no provider call without drop");
}

#[test]
fn session_compact_with_drop_summarises_the_middle_through_the_pipeline() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let tools = env.project("tools");
    let filter = script(
        &tools,
        "kinds.py",
        "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nopen(sys.argv[0] + '.log', 'a').write(req['call_kind'] + '\\n')\nprint(json.dumps({'messages': req['messages']}))\n",
    );
    let sid = session_after_long_reads(&env, &mut c, &mock, Some(&filter));
    let before = messages(&mut c, &sid);
    mock.push(Step::text("They read six files of numbered lines."));
    let r = c.ok("session/compact", json!({"session_id": sid, "drop": true}));
    assert_eq!(r["strategy"], "truncate_tool_results+summarize_middle", "{r}");
    let after = messages(&mut c, &sid);
    assert!(after.len() < before.len(), "{} then {}", before.len(), after.len());
    let summary =
        after.iter().filter_map(|m| m["content"].as_str()).find(|t| t.starts_with("[Summary of earlier turns]"));
    assert!(summary.is_some_and(|s| s.contains("six files")), "{after:?}");
    let call = mock.requests().last().unwrap().clone();
    assert!(call["messages"][0]["content"].as_str().unwrap().starts_with("You summarise"), "{call}");
    assert_eq!(
        swival_tests::first_event(&daemon, "compaction", &sid)["strategy"],
        "truncate_tool_results+summarize_middle"
    );
    let kinds = std::fs::read_to_string(tools.join("kinds.py.log")).unwrap();
    assert_eq!(kinds.lines().last(), Some("summary"), "the filter saw: {kinds}");
    // The next run goes on from the compacted conversation.
    mock.push(Step::text("still here"));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "and now?"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["answer"], "still here");
    let sent = mock.requests().last().unwrap()["messages"].to_string();
    assert!(sent.contains("Summary of earlier turns") && sent.contains("and now?"), "{sent}");
}

#[test]
fn a_run_during_session_compact_is_refused_as_busy_and_close_cancels_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let sid = session_after_long_reads(&env, &mut c, &mock, None);
    let before = messages(&mut c, &sid);
    let gate = Gate::new();
    mock.push(Step::gated(Step::text("a summary never given"), &gate));
    let mut compacting = daemon.nd();
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "session/compact",
        "params": {"session_id": sid, "drop": true}});
    compacting.send_raw(request.to_string().as_bytes());
    mock.wait_for_requests(8);
    let busy = c.call("run/start", json!({"session_id": sid, "task": "meanwhile"}));
    assert_eq!(busy["error"]["code"], -32003, "{busy}");
    assert!(busy["error"]["message"].as_str().unwrap().contains("compacting"), "{busy}");
    c.ok("session/close", json!({"session_id": sid}));
    let reply = compacting.read();
    assert_eq!(reply["error"]["code"], -32001, "{reply}");
    assert_eq!(messages(&mut c, &sid), before, "a cancelled compaction changes nothing");
    gate.open();
}
