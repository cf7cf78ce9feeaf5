//! Sessions and runs end to end: the real daemon, the real swivalctl, the
//! in-process mock provider.

use serde_json::{json, Value};
use swival_tests::mock::{Gate, MockProvider, Step};
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
        Step::tool_call("call_2", "write_file", json!({"file_path": "out/summary.txt", "content": "two lines"})),
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
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Wrote out/summary.txt.\n", "stdout must hold only the answer");
    assert_eq!(std::fs::read_to_string(project.join("out/summary.txt")).unwrap(), "two lines");

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    let first = &reqs[0];
    assert_eq!(first["model"], "mock-model");
    assert_eq!(first["tool_choice"], "auto");
    assert!(first["max_tokens"].as_u64().unwrap() > 0);
    assert_eq!(first["messages"][0]["role"], "system");
    assert_eq!(first["messages"][1], json!({"role": "user", "content": "summarise notes"}));
    let tool_names: Vec<&str> =
        first["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert!(tool_names.contains(&"read_file") && tool_names.contains(&"write_file"));
    let second = reqs[1]["messages"].as_array().unwrap();
    let tool_msg = second.iter().find(|m| m["role"] == "tool").expect("tool result sent back");
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    assert!(tool_msg["content"].as_str().unwrap().contains("1: alpha"));
    let third = reqs[2]["messages"].as_array().unwrap();
    assert_eq!(third.iter().rfind(|m| m["role"] == "tool").unwrap()["tool_call_id"], "call_2");
    // The answer went to HISTORY.md.
    let history = std::fs::read_to_string(project.join(".swival/HISTORY.md")).unwrap();
    assert!(history.contains("Wrote out/summary.txt."));
}

/// Create a session on the mock over a raw connection.
fn create_session(c: &mut NdConn, base: &std::path::Path, mock: &MockProvider, extra: Value) -> String {
    let mut config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "mock-model"});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    let r = c.ok("session/create", json!({"base_dir": base, "config": config}));
    r["session_id"].as_str().unwrap().to_owned()
}

/// Subscribe on `c` and collect events until the run's `run_finished`.
fn events_until_finished(c: &mut NdConn, session: &str, from: u64) -> Vec<Value> {
    c.ok("session/subscribe", json!({"session_id": session, "from_seq": from}));
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
    let deltas: String =
        events.iter().filter(|e| e["type"] == "text_delta").map(|e| e["text"].as_str().unwrap()).collect();
    assert_eq!(deltas, "a streamed answer of several words");
    assert!(events.iter().filter(|e| e["type"] == "text_delta").count() >= 2);
    let last = events.last().unwrap();
    assert_eq!(last["run_id"], run);
    assert_eq!(last["answer"], "a streamed answer of several words");
    assert_eq!(mock.requests()[0]["stream"], true);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "seqs are consecutive from 1");
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

#[test]
fn eight_sessions_in_different_dirs_run_concurrently() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let mut runs = Vec::new();
    let mut mocks = Vec::new();
    for i in 0..8 {
        let project = env.project(&format!("p{i}"));
        let mock = MockProvider::start(vec![
            Step::tool_call("c1", "write_file", json!({"file_path": "out.txt", "content": format!("session {i}")})),
            Step::text(format!("done {i}")),
        ]);
        let sid = create_session(&mut c, &project, &mock, json!({}));
        let run = c.ok("run/start", json!({"session_id": sid, "task": format!("task {i}")}))["run_id"].clone();
        runs.push((i, project, run));
        mocks.push(mock);
    }
    for (i, project, run) in runs {
        let r = c.ok("run/wait", json!({"run_id": run}));
        assert_eq!(r["answer"], format!("done {i}"), "{r}");
        assert_eq!(std::fs::read_to_string(project.join("out.txt")).unwrap(), format!("session {i}"));
    }
}

#[test]
fn second_run_on_busy_session_is_refused() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("finally"), &gate)]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &project, &mock, json!({}));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "one"}))["run_id"].clone();
    mock.wait_for_requests(1);
    let busy = c.call("run/start", json!({"session_id": sid, "task": "two"}));
    assert_eq!(busy["error"]["code"], -32003, "{busy}");
    assert!(busy["error"]["message"].as_str().unwrap().contains("busy"));
    gate.open();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["answer"], "finally");
    // Once it finished, the session takes a new run.
    mock.push(Step::text("second"));
    let run2 = c.ok("run/start", json!({"session_id": sid, "task": "two"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run2}))["answer"], "second");
}

#[test]
fn transient_provider_errors_are_retried_with_events() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![
        Step::error(429, "slow down", "rate_limit").with_retry_after(0),
        Step::status(500, "oops"),
        Step::text("made it"),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &project, &mock, json!({}));
    c.ok("run/start", json!({"session_id": sid, "task": "t"}));
    let events = events_until_finished(&mut c, &sid, 1);
    let retries: Vec<&Value> = events.iter().filter(|e| e["type"] == "retry").collect();
    assert_eq!(retries.len(), 2, "{events:?}");
    assert!(retries[0]["reason"].as_str().unwrap().contains("429"));
    assert!(retries[1]["reason"].as_str().unwrap().contains("500"));
    let end = events.last().unwrap();
    assert_eq!(end["outcome"], "success");
    assert_eq!(end["answer"], "made it");
    assert_eq!(end["stats"]["provider_retries"], 2);
    assert_eq!(mock.request_count(), 3);
}

#[test]
fn unauthorized_is_not_retried_and_exits_1_with_the_providers_message() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![Step::error(401, "Incorrect API key provided", "invalid_request_error")]);
    let out = env.swivalctl(&daemon, &project).arg("run").args(provider_flags(&mock)).arg("t").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Incorrect API key provided"), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(mock.request_count(), 1, "a 401 must not be retried");
}

#[test]
fn looping_script_with_max_turns_2_exits_2() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(
        (0..5).map(|i| Step::tool_call(&format!("c{i}"), "think", json!({"thought": format!("step {i}")}))).collect(),
    );
    let out = env
        .swivalctl(&daemon, &project)
        .arg("run")
        .args(provider_flags(&mock))
        .args(["--max-turns", "2", "loop forever"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    // Two turns, then Swival's continue-here summary call (tests/tests/notes.rs).
    assert_eq!(mock.request_count(), 3);
    assert!(project.join(".swival/continue.md").exists());
}

#[test]
fn report_has_swivals_fields() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    std::fs::write(project.join("a.txt"), "x\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "a.txt"})),
        Step::tool_call("c2", "read_file", json!({"file_path": "../escape.txt"})),
        Step::text("ok"),
    ]);
    let report_path = env.root().join("report.json");
    let out = env
        .swivalctl(&daemon, &project)
        .arg("run")
        .args(provider_flags(&mock))
        .arg("--report")
        .arg(&report_path)
        .arg("read a")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&report_path).unwrap();
    assert!(text.ends_with("}\n"));
    let r: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["version"], 1);
    assert_eq!(r["task"], "read a");
    assert_eq!(r["result"]["outcome"], "success");
    assert_eq!(r["result"]["answer"], "ok");
    assert_eq!(r["result"]["exit_code"], 0);
    assert_eq!(r["stats"]["turns"], 3);
    assert_eq!(r["stats"]["llm_calls"], 3);
    assert_eq!(r["stats"]["tool_calls_by_name"]["read_file"], json!({"succeeded": 1, "failed": 1}));
    assert_eq!(r["stats"]["review_rounds"], 0);
    let types: Vec<&str> = r["timeline"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["llm_call", "tool_call", "llm_call", "tool_call", "llm_call"]);
}

#[test]
fn project_config_overrides_global_and_unknown_key_warns_naming_key_and_file() {
    let env = TestEnv::new();
    env.global_config("max_turns = 7\nmax_output_tokens = 1000\n");
    let daemon = env.start_daemon();
    let project = env.project("p");
    std::fs::write(project.join("swival.toml"), "max_turns = 3\n").unwrap();
    let mut c = daemon.nd();
    let r = c.ok(
        "session/create",
        json!({"base_dir": project, "config": {"provider": "generic", "base_url": "http://127.0.0.1:9/v1"}}),
    );
    assert_eq!(r["config"]["max_turns"], 3);
    assert_eq!(r["config"]["max_output_tokens"], 1000);
    let resolved = c.ok("config/resolve", json!({"base_dir": project}));
    assert!(resolved["sources"]["max_turns"].as_str().unwrap().ends_with("swival.toml"));
    assert!(resolved["sources"]["max_output_tokens"].as_str().unwrap().ends_with("config.toml"));

    // As in Swival, an unknown key loads with a warning naming it and the file.
    std::fs::write(project.join("swival.toml"), "max_trns = 3\n").unwrap();
    let r = c.ok("session/create", json!({"base_dir": project}));
    assert_eq!(
        r["warnings"][0],
        format!("{}: unknown config key 'max_trns'; did you mean 'max_turns'?", project.join("swival.toml").display())
    );
    assert_eq!(r["config"]["max_turns"], 7);
}

#[test]
fn session_create_refuses_relative_or_missing_base_dir() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    for bad in ["relative/dir", "/definitely/not/here"] {
        let err = c.call("session/create", json!({"base_dir": bad}));
        assert_eq!(err["error"]["code"], -32005, "{err}");
        assert!(err["error"]["message"].as_str().unwrap().contains(bad));
    }
}

#[test]
fn reattaching_with_from_seq_sees_every_event_exactly_once() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "think", json!({"thought": "first"})),
        Step::gated(Step::tool_call("c2", "think", json!({"thought": "second"})), &gate),
        Step::text("end"),
    ]);
    let mut a = daemon.nd();
    let sid = create_session(&mut a, &project, &mock, json!({}));
    a.ok("session/subscribe", json!({"session_id": sid, "from_seq": 1}));
    a.ok("run/start", json!({"session_id": sid, "task": "t"}));
    // Read until the first tool result, then vanish mid-run.
    let mut seen = Vec::new();
    loop {
        let msg = a.read();
        if msg["method"] != "session/event" {
            continue;
        }
        let ev = msg["params"]["result"].clone();
        let stop = ev["type"] == "tool_result";
        seen.push(ev);
        if stop {
            break;
        }
    }
    drop(a);
    mock.wait_for_requests(2);
    let last = seen.last().unwrap()["seq"].as_u64().unwrap();
    let mut b = daemon.nd();
    gate.open();
    seen.extend(events_until_finished(&mut b, &sid, last + 1));
    let seqs: Vec<u64> = seen.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "every event exactly once, in order");
    assert_eq!(seen.iter().filter(|e| e["type"] == "run_finished").count(), 1);
    assert_eq!(seen.last().unwrap()["type"], "run_finished");
}

#[test]
fn events_stream_over_websocket_through_the_client_library() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![Step::text("ws answer")]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let client = swivalctl::Client::connect(&daemon.socket).await.unwrap();
        let params = swival_protocol::SessionCreateParams {
            base_dir: project.display().to_string(),
            config: Some(swival_protocol::ConfigKeys::of(
                json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"}),
            )),
            title: None,
            trust: false,
            env: None,
            from: None,
            worktree: false,
        };
        let sid = client.create_session(&params).await.unwrap().session_id;
        let mut sub = client.subscribe_events(&sid, 1).await.unwrap();
        let run = client.start_run(&sid, "hello", None, None).await.unwrap();
        let mut kinds = Vec::new();
        while let Some(ev) = sub.next().await {
            let ev = ev.unwrap();
            assert_eq!(ev.run_id.as_ref(), Some(&run));
            let done = ev.kind.is_terminal();
            kinds.push(serde_json::to_value(&ev).unwrap()["type"].as_str().unwrap().to_owned());
            if done {
                break;
            }
        }
        assert_eq!(kinds.first().map(String::as_str), Some("run_started"));
        assert_eq!(kinds.last().map(String::as_str), Some("run_finished"));
        assert!(kinds.contains(&"llm_call".to_owned()));
    });
}

#[test]
fn empty_and_cut_off_replies_get_swivals_nudges() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![
        Step::empty(),
        Step::text_with_finish("half an ans", "length"),
        Step::text("the whole answer"),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &project, &mock, json!({}));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    let r = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(r["answer"], "the whole answer");
    assert_eq!(r["stats"]["turns"], 3);
    let reqs = mock.requests();
    let second = reqs[1]["messages"].to_string();
    assert!(second.contains("Your response was empty. Please continue working on the task using the available tools."));
    let third = reqs[2]["messages"].to_string();
    assert!(
        third.contains("Your response was cut off. Please use the provided tools to complete the task step by step.")
    );
    assert!(!third.contains("_swival_synthetic"), "internal keys are never sent");
}

#[test]
fn command_provider_gets_the_transcript_and_its_stdout_is_the_answer() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let script = project.join("model.sh");
    std::fs::write(&script, "#!/bin/sh\ncat > transcript.txt\necho \"answer from the command\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env
        .swivalctl(&daemon, &project)
        .args(["run", "--provider", "command", "--model", "./model.sh", "what is up"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "answer from the command\n");
    let transcript = std::fs::read_to_string(project.join("transcript.txt")).unwrap();
    assert!(transcript.starts_with("[system]\n"), "{transcript}");
    assert!(transcript.contains("\n\n[user]\nwhat is up"), "{transcript}");
}

#[test]
fn closed_session_refuses_new_runs() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &project, &mock, json!({}));
    assert_eq!(c.ok("session/close", json!({"session_id": sid}))["state"], "closed");
    let err = c.call("run/start", json!({"session_id": sid, "task": "t"}));
    assert!(err["error"]["message"].as_str().unwrap().contains("closed"), "{err}");
    assert_eq!(mock.request_count(), 0);
    let unknown = c.call("session/get", json!({"session_id": "s_nope"}));
    assert_eq!(unknown["error"]["code"], -32001);
}

#[test]
fn a_first_run_with_no_model_server_says_what_to_do() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = env
        .swivalctl(&daemon, &project)
        .args(["run", "--provider", "llamacpp", "--base-url", &format!("http://127.0.0.1:{port}/v1"), "task"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("no model server answers at http://127.0.0.1:{port}/v1 (provider llamacpp)")));
    for hint in ["LM Studio", "llama-server", "ollama serve", "--provider openai", "A first run with a local model"] {
        assert!(stderr.contains(hint), "{hint} missing from: {stderr}");
    }
}
