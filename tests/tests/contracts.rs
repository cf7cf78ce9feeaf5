//! Typed contracts between the daemon and its clients, so a client
//! branches on data and never on the daemon's words: how a run ended
//! without an answer travels as a kind (`failure` in the run's result and
//! its `run_finished`), and a client knows its own runs by the token it
//! gave `run/start`, echoed in `run_started`.

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

#[test]
fn run_started_echoes_the_client_token_and_only_to_the_run_that_sent_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let mock = MockProvider::start(vec![Step::text("one"), Step::text("two")]);
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    let sid = c.ok("session/create", json!({"base_dir": env.project("p"), "config": cfg}))["session_id"].clone();
    let first =
        c.ok("run/start", json!({"session_id": sid, "task": "same", "client_token": "editor:7"}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": first}));
    let second = c.ok("run/start", json!({"session_id": sid, "task": "same"}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": second}));
    // Every event of both runs, as any client subscribed to the session sees them.
    let mut watcher = daemon.nd();
    let mut events = swival_tests::events_until_finished(&mut watcher, sid.as_str().unwrap(), 1);
    events.extend(swival_tests::read_until_finished(&mut watcher, |_| {}));
    let started = |run: &Value| events.iter().find(|e| e["type"] == "run_started" && e["run_id"] == *run).cloned();
    let first_started = started(&first).expect("the first run's run_started");
    assert_eq!(first_started["client_token"], "editor:7", "{first_started}");
    let second_started = started(&second).expect("the second run's run_started");
    assert!(
        second_started.get("client_token").is_none(),
        "a run started without a token carries none: {second_started}"
    );
}

#[test]
fn a_scripts_stderr_line_names_its_kind_and_command_apart() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let p = env.project("p");
    let filter = script(
        &p,
        "noisy filter.py",
        "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nprint('checked', file=sys.stderr)\nprint(json.dumps({'messages': req['messages']}))\n",
    );
    let mock = MockProvider::start(vec![Step::text("ok")]);
    let command = format!("'{}'", filter.display());
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "llm_filter": command});
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    let events = swival_tests::events_until_finished(&mut c, sid.as_str().unwrap(), 1);
    let line = events.iter().find(|e| e["type"] == "stderr").expect("the filter's stderr line");
    assert_eq!(line["source"], "filter", "{line}");
    assert_eq!(line["text"], "checked", "{line}");
    assert!(
        line["command"].as_str().unwrap().contains("noisy filter.py"),
        "a command with a space stays whole: {line}"
    );
}
