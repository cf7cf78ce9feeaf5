//! The three hook points end to end: command hooks and client (RPC) hooks,
//! their merge rules, failures, and what a block withholds.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{script, NdConn, TestEnv};

fn hook_config(mock: &MockProvider, hooks: Value) -> Value {
    json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "hooks": hooks})
}

fn run(c: &mut NdConn, base: &Path, config: Value, task: &str) -> (String, Value) {
    let r = c.call("session/create", json!({"base_dir": base, "config": config}));
    let sid = r["result"]["session_id"].as_str().unwrap_or_else(|| panic!("session/create: {r}")).to_owned();
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    (sid, c.ok("run/wait", json!({"run_id": run})))
}

/// A Python hook answering `reply` (a Python expression over `req`).
fn py_hook(dir: &Path, name: &str, reply: &str) -> String {
    let body = format!(
        "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nopen('{name}.log', 'a').write(json.dumps(req) + '\\n')\nprint(json.dumps({reply}))\n"
    );
    script(dir, name, &body).display().to_string()
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn before_llm_call_narrows_tools_first_messages_writer_wins_and_block_sends_nothing() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let keep = py_hook(&p, "keep.py", r#"{"tools": ["read_file"]}"#);
    let m1 =
        py_hook(&p, "m1.py", r#"{"messages": req["messages"][:1] + [{"role": "user", "content": "from hook one"}]}"#);
    let m2 = py_hook(&p, "m2.py", r#"{"messages": [{"role": "user", "content": "from hook two"}]}"#);
    let mock = MockProvider::start(vec![Step::text("ok")]);
    let hooks = json!([
        {"point": "before_llm_call", "command": keep},
        {"point": "before_llm_call", "command": m1, "priority": 1},
        {"point": "before_llm_call", "command": m2, "priority": 2},
    ]);
    let mut c = daemon.nd();
    let (_, r) = run(&mut c, &p, hook_config(&mock, hooks), "original task");
    assert_eq!(r["outcome"], "success", "{r}");
    let req = &mock.requests()[0];
    assert_eq!(tool_names(req), ["read_file"]);
    let sent = req["messages"].to_string();
    assert!(
        sent.contains("from hook one") && !sent.contains("from hook two") && !sent.contains("original task"),
        "{sent}"
    );

    let block = py_hook(&p, "block.py", r#"{"block": True, "reason": "tainted context"}"#);
    let mock = MockProvider::start(vec![Step::text("never")]);
    let out = env
        .swivalctl(&daemon, &p)
        .args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m", "t"])
        .env("SWIVALD_SOCKET", &daemon.socket)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "no hooks in this session yet");
    std::fs::write(p.join("swival.toml"), format!("[[hooks]]\npoint = \"before_llm_call\"\ncommand = \"{block}\"\n"))
        .unwrap();
    let trusted = env.swivalctl(&daemon, &p).args(["trust"]).output().unwrap();
    assert_eq!(trusted.status.code(), Some(0), "{}", String::from_utf8_lossy(&trusted.stdout));
    let before = mock.request_count();
    let out = env
        .swivalctl(&daemon, &p)
        .args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m", "t"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("tainted context"), "{stderr}");
    assert_eq!(mock.request_count(), before, "a blocked call sends nothing");
}

#[test]
fn after_llm_call_drops_one_of_two_calls_and_a_block_runs_no_tool() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let keep_first = py_hook(
        &p,
        "keep.py",
        r#"{"tool_calls": [c["id"] for c in req["assistant"]["tool_calls"][:1]], "reason": "only one write per turn"}"#,
    );
    let mock = MockProvider::start(vec![
        Step::tool_calls(vec![
            ("c1", "write_file", json!({"file_path": "a.txt", "content": "A"})),
            ("c2", "write_file", json!({"file_path": "b.txt", "content": "B"})),
        ]),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let (_, r) = run(&mut c, &p, hook_config(&mock, json!([{"point": "after_llm_call", "command": keep_first}])), "t");
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(p.join("a.txt").exists());
    assert!(!p.join("b.txt").exists(), "the dropped call ran");
    let second = &mock.requests()[1]["messages"];
    let dropped = second.as_array().unwrap().iter().find(|m| m["tool_call_id"] == "c2").unwrap();
    assert_eq!(dropped["content"], "error: blocked by policy: only one write per turn");

    let block = py_hook(&p, "block.py", r#"{"block": True, "reason": "no writes today"}"#);
    let mock =
        MockProvider::start(vec![Step::tool_call("c1", "write_file", json!({"file_path": "c.txt", "content": "C"}))]);
    let (_, r) = run(&mut c, &p, hook_config(&mock, json!([{"point": "after_llm_call", "command": block}])), "t");
    assert_eq!(r["outcome"], "blocked");
    assert_eq!(r["exit_code"], 1);
    assert!(r["error"].as_str().unwrap().contains("no writes today"));
    assert!(!p.join("c.txt").exists(), "a tool ran after a block");
}

#[test]
fn before_response_emit_redaction_reaches_client_history_and_stored_conversation() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let redact = py_hook(&p, "redact.py", r#"{"content": req["content"].replace("4111-1111", "[card]")}"#);
    let mock = MockProvider::start(vec![Step::text("the card is 4111-1111")]);
    let mut c = daemon.nd();
    let (sid, r) =
        run(&mut c, &p, hook_config(&mock, json!([{"point": "before_response_emit", "command": redact}])), "t");
    assert_eq!(r["answer"], "the card is [card]");
    let history = std::fs::read_to_string(p.join(".swival/HISTORY.md")).unwrap();
    assert!(history.contains("the card is [card]") && !history.contains("4111"), "{history}");
    let detail = c.ok("session/get", json!({"session_id": sid}));
    let stored = detail["messages"].to_string();
    assert!(stored.contains("the card is [card]") && !stored.contains("4111"), "{stored}");
}

#[test]
fn before_response_emit_block_withholds_the_answer_everywhere() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let block = py_hook(&p, "block.py", r#"{"block": True, "reason": "contains PII"}"#);
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "think", json!({"thought": "SECRET-ANSWER draft"})),
        Step::text("SECRET-ANSWER final"),
        Step::text("next run answer"),
    ]);
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "stream": true, "cache": true,
        "hooks": [{"point": "before_response_emit", "command": block}]});
    let mut c = daemon.nd();
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    c.ok("session/subscribe", json!({"session_id": sid}));
    let run_id = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    let end = loop {
        let m = c.read();
        if m["method"] == "session/event" {
            let ev = m["params"]["result"].clone();
            assert_ne!(ev["type"], "text_delta", "answer text streamed before the hooks ran: {ev}");
            if ev["type"] == "run_finished" {
                break ev;
            }
        }
    };
    assert_eq!(end["outcome"], "blocked");
    assert_eq!(end["answer"], Value::Null);
    assert!(end["error"].as_str().unwrap().contains("contains PII"));
    assert!(
        !p.join(".swival/HISTORY.md").exists()
            || !std::fs::read_to_string(p.join(".swival/HISTORY.md")).unwrap().contains("SECRET")
    );
    let report = c.ok("report/get", json!({"run_id": run_id})).to_string();
    assert!(!report.contains("SECRET-ANSWER"), "{report}");
    assert_eq!(c.ok("cache/stats", json!({}))["entries"], 0, "the withheld run left replies in the cache");
    // The next run's request carries none of it.
    std::fs::write(p.join("swival.toml"), "").unwrap();
    let r2 = c.ok("run/start", json!({"session_id": sid, "task": "again"}))["run_id"].clone();
    let _ = c.ok("run/wait", json!({"run_id": r2}));
    let last = mock.requests().last().unwrap().to_string();
    assert!(!last.contains("SECRET-ANSWER"), "{last}");
    let stored = c.ok("session/get", json!({"session_id": sid}))["messages"].to_string();
    assert!(!stored.contains("SECRET-ANSWER"));
}

#[test]
fn crashing_hanging_and_garbage_hooks_block_unless_ignored() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let crash = script(&p, "crash.sh", "#!/bin/sh\ncat >/dev/null\nexit 3\n").display().to_string();
    let hang = script(&p, "hang.sh", "#!/bin/sh\nsleep 30\n").display().to_string();
    let garbage = script(&p, "garbage.sh", "#!/bin/sh\ncat >/dev/null\necho 'not json at all'\n").display().to_string();
    let mut c = daemon.nd();
    for (name, cmd) in [("crash", &crash), ("hang", &hang), ("garbage", &garbage)] {
        for on_failure in ["block", "ignore"] {
            let mock = MockProvider::start(vec![Step::text("fine")]);
            let hooks = json!([{"point": "before_llm_call", "command": cmd, "timeout_s": 1, "on_failure": on_failure}]);
            let (_, r) = run(&mut c, &p, hook_config(&mock, hooks), "t");
            if on_failure == "block" {
                assert_eq!(r["outcome"], "blocked", "{name}: {r}");
                assert_eq!(mock.request_count(), 0, "{name}");
            } else {
                assert_eq!(r["outcome"], "success", "{name} ignored: {r}");
                assert_eq!(r["answer"], "fine");
            }
        }
    }
}

/// A client hook on its own connection, answering with `answer` (None: never).
fn rpc_hook(
    socket: &Path,
    name: &str,
    priority: i64,
    timeout_ms: u64,
    on_failure: &str,
    answer: Option<Value>,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) -> std::thread::JoinHandle<()> {
    let mut c = NdConn::connect(socket);
    c.ok("hooks/register", json!({"name": name, "points": ["before_llm_call"], "priority": priority, "timeout_ms": timeout_ms, "on_failure": on_failure}));
    let name = name.to_owned();
    std::thread::spawn(move || {
        while let Some(m) = c.read_opt() {
            if m["method"] != "hooks/invoke" {
                continue;
            }
            log.lock().unwrap().push(format!("rpc:{name}"));
            if let Some(a) = &answer {
                let call_id = m["params"]["result"]["call_id"].clone();
                c.send_raw(json!({"jsonrpc": "2.0", "id": 99, "method": "hooks/respond", "params": {"call_id": call_id, "result": a}}).to_string().as_bytes());
            }
        }
    })
}

#[test]
fn rpc_hook_is_consulted_until_its_client_disconnects_and_a_silent_one_times_out() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut c = daemon.nd();
    {
        // A client hook narrowing the tools.
        let mut hook = NdConn::connect(&daemon.socket);
        hook.ok("hooks/register", json!({"name": "narrow", "points": ["before_llm_call"]}));
        let mock = MockProvider::start(vec![Step::text("ok")]);
        let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
        let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
        let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
        let inv = loop {
            let m = hook.read();
            if m["method"] == "hooks/invoke" {
                break m["params"]["result"].clone();
            }
        };
        assert_eq!(inv["point"], "before_llm_call");
        assert_eq!(inv["payload"]["run_id"], run);
        let r = hook.ok("hooks/respond", json!({"call_id": inv["call_id"], "result": {"tools": ["grep"]}}));
        assert_eq!(r["accepted"], true);
        assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
        assert_eq!(tool_names(&mock.requests()[0]), ["grep"]);
        let st = c.ok("policy/status", json!({"session_id": sid}));
        assert!(st["hooks"].to_string().contains("rpc:narrow"));
        drop(hook);
        // Once its connection is gone the hook disappears.
        loop {
            let st = c.ok("policy/status", json!({"session_id": sid}));
            if !st["hooks"].to_string().contains("rpc:narrow") {
                break;
            }
            std::thread::yield_now();
        }
        mock.push(Step::text("again"));
        let run = c.ok("run/start", json!({"session_id": sid, "task": "t2"}))["run_id"].clone();
        assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
        assert!(tool_names(mock.requests().last().unwrap()).len() > 1, "the departed hook was still consulted");
    }
    drop(c);
    drop(daemon);
    // A client hook that never answers times out into its on_failure
    // (a fresh daemon each, so the hooks do not meet).
    for (on_failure, outcome) in [("block", "blocked"), ("ignore", "success")] {
        let env = TestEnv::new();
        let daemon = env.start_daemon();
        let p = env.project("p");
        let _silent = rpc_hook(&daemon.socket, "silent", 0, 200, on_failure, None, log.clone());
        let mock = MockProvider::start(vec![Step::text("ok")]);
        let mut c = daemon.nd();
        let (_, r) = run(&mut c, &p, json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"}), "t");
        assert_eq!(r["outcome"], outcome, "{on_failure}: {r}");
        if on_failure == "block" {
            assert!(r["error"].as_str().unwrap().contains("no answer within 200 ms"), "{r}");
            assert_eq!(mock.request_count(), 0);
        }
    }
    assert_eq!(log.lock().unwrap().len(), 2, "the silent hook was invoked once per run");
}

#[test]
fn priorities_order_hooks_across_both_kinds_and_ties_keep_registration_order() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    // Registered first, priority 5.
    let _early = rpc_hook(&daemon.socket, "early", 5, 10_000, "block", Some(json!({})), log.clone());
    let order_hook = |name: &str| {
        let body = format!("#!/bin/sh\ncat >/dev/null\nprintf '{name}\\n' >> order.log\necho '{{}}'\n");
        script(&p, name, &body).display().to_string()
    };
    let a = order_hook("cmd_a");
    let b = order_hook("cmd_b");
    let mock = MockProvider::start(vec![Step::text("ok")]);
    let hooks = json!([
        {"point": "before_llm_call", "command": a, "priority": 5},
        {"point": "before_llm_call", "command": b, "priority": 1},
    ]);
    let mut c = daemon.nd();
    let (_, r) = run(&mut c, &p, hook_config(&mock, hooks), "t");
    assert_eq!(r["outcome"], "success", "{r}");
    // Events record the order in which hooks ran.
    let sessions = c.ok("session/list", json!({}));
    let sid = sessions["sessions"][0]["session_id"].clone();
    c.ok("session/subscribe", json!({"session_id": sid}));
    let mut order = Vec::new();
    loop {
        let m = c.read();
        if m["method"] != "session/event" {
            continue;
        }
        let ev = &m["params"]["result"];
        if ev["type"] == "hook" {
            order.push(ev["hook"].as_str().unwrap().rsplit('/').next().unwrap().to_owned());
        }
        if ev["type"] == "run_finished" {
            break;
        }
    }
    // cmd_b (priority 1) first; then the priority-5 tie in registration
    // order: the client hook registered before the session, then cmd_a.
    assert_eq!(order, ["cmd_b", "rpc:early", "cmd_a"]);
}
