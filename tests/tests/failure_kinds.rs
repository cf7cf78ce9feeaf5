//! How a run ended without an answer travels as a kind (`failure` in the
//! run's result and its `run_finished`), so a client branches on it and
//! never on the daemon's words.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{script, NdConn, TestEnv};

/// Run `task` in a new session of `project` with `cfg`; the result, and
/// the `run_finished` event's end, which must agree.
fn run(c: &mut NdConn, project: &std::path::Path, cfg: Value) -> Value {
    let sid = c.ok("session/create", json!({"base_dir": project, "config": cfg}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    let events = swival_tests::events_until_finished(c, sid.as_str().unwrap(), 1);
    let end = events.last().unwrap();
    assert_eq!(end["failure"], result["failure"], "run_finished and run/wait disagree: {end} {result}");
    result
}

#[test]
fn each_way_a_run_fails_has_its_kind_beside_swivals_words() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let mock = MockProvider::start(vec![
        Step::text("fine"),
        Step::tool_call("a", "think", json!({"thought": "one"})),
        Step::text("blocked answer"),
    ]);
    let provider = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    let with = |extra: Value| {
        let mut cfg = provider.clone();
        cfg.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        cfg
    };

    let ok = run(&mut c, &env.project("ok"), provider.clone());
    assert_eq!((ok["outcome"].as_str(), ok.get("failure")), (Some("success"), None), "{ok}");

    let p = env.project("filter");
    let filter = script(
        &p,
        "f.py",
        "#!/usr/bin/env python3\nimport json, sys\njson.load(sys.stdin)\nprint(json.dumps({'allow': False}))\n",
    );
    let r = run(&mut c, &p, with(json!({"llm_filter": filter.display().to_string()})));
    assert_eq!((r["outcome"].as_str(), r["failure"].as_str()), (Some("error"), Some("filter_blocked")), "{r}");
    assert!(r["error"].as_str().unwrap().starts_with("LLM filter blocked request"), "Swival's words stay: {r}");

    let r = run(&mut c, &env.project("exhausted"), with(json!({"max_turns": 1})));
    assert_eq!((r["outcome"].as_str(), r["failure"].as_str()), (Some("exhausted"), Some("exhausted")), "{r}");

    let p = env.project("hook");
    let hook = script(&p, "h.py", "#!/usr/bin/env python3\nimport json, sys\njson.load(sys.stdin)\nprint(json.dumps({'block': True, 'reason': 'no'}))\n");
    let hooks = json!([{"point": "before_response_emit", "command": hook.display().to_string()}]);
    let r = run(&mut c, &p, with(json!({"hooks": hooks})));
    assert_eq!((r["outcome"].as_str(), r["failure"].as_str()), (Some("blocked"), Some("hook_blocked")), "{r}");

    let closed = json!({"provider": "generic", "base_url": "http://127.0.0.1:9/v1", "model": "m", "retries": 1});
    let r = run(&mut c, &env.project("provider"), closed);
    assert_eq!((r["outcome"].as_str(), r["failure"].as_str()), (Some("error"), Some("provider")), "{r}");
}
