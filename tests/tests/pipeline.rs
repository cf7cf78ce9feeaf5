//! The filter chain, the process runner's modes and reviewer rounds, end to
//! end with real scripts.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{processes_mentioning, script, NdConn, TestEnv, REDACT_FILTER as REDACT};

fn provider(mock: &MockProvider) -> Value {
    json!({"provider": "generic", "base_url": mock.base_url(), "model": "mock-model"})
}

fn with(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

fn run_to_end(c: &mut NdConn, base: &Path, config: Value, task: &str) -> (String, Value) {
    let sid =
        c.ok("session/create", json!({"base_dir": base, "config": config}))["session_id"].as_str().unwrap().to_owned();
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    (sid, c.ok("run/wait", json!({"run_id": run})))
}

#[test]
fn redacting_filter_keeps_the_url_from_the_provider_but_not_from_the_tool() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let filter = script(&project, "redact.py", REDACT);
    let mock = MockProvider::start(vec![
        Step::tool_call(
            "c1",
            "write_file",
            json!({"file_path": "links.txt", "content": "see http://internal.example.corp/wiki"}),
        ),
        Step::tool_call("c2", "read_file", json!({"file_path": "links.txt"})),
        Step::text("noted"),
    ]);
    let mut c = daemon.nd();
    let cfg = with(provider(&mock), json!({"llm_filter": filter}));
    let (_, r) = run_to_end(&mut c, &project, cfg, "collect links from http://internal.example.corp/index");
    assert_eq!(r["outcome"], "success", "{r}");
    assert_eq!(mock.request_count(), 3);
    let sent = mock.requests_text();
    assert!(!sent.contains("internal.example.corp"), "the provider saw the internal URL: {sent}");
    assert!(sent.contains("[REDACTED]"));
    let written = std::fs::read_to_string(project.join("links.txt")).unwrap();
    assert_eq!(written, "see http://internal.example.corp/wiki");
}

#[test]
fn each_filter_failure_blocks_with_swivals_message_and_sends_nothing() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let py = |body: &str| format!("#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\n{body}\n");
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "allow_false_reason",
            py(r#"print(json.dumps({"allow": False, "reason": "contains secrets"}))"#),
            "LLM filter blocked request: contains secrets",
        ),
        ("allow_false", py(r#"print(json.dumps({"allow": False}))"#), "LLM filter blocked request: blocked by filter"),
        (
            "nonzero_valid_json",
            py("print(json.dumps({\"messages\": req[\"messages\"]}))\nsys.exit(3)"),
            "LLM filter blocked request: filter exited with code 3",
        ),
        ("invalid_json", py("print('{not json')"), "LLM filter blocked request: filter returned invalid JSON"),
        ("empty_stdout", py("pass"), "LLM filter blocked request: filter returned invalid JSON"),
        ("array", py("print('[]')"), "LLM filter blocked request: filter output is not a JSON object"),
        ("missing_messages", py("print('{}')"), "LLM filter blocked request: filter output missing 'messages' key"),
        (
            "invalid_role",
            py(r#"print(json.dumps({"messages": [{"role": "robot", "content": "x"}]}))"#),
            "has invalid role",
        ),
        (
            "tool_without_id",
            py(r#"print(json.dumps({"messages": [{"role": "tool", "content": "x"}]}))"#),
            "(tool) missing tool_call_id",
        ),
        (
            "call_without_id",
            py(
                r#"print(json.dumps({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}]}))"#,
            ),
            "tool_calls[0] missing id",
        ),
        (
            "call_without_name",
            py(
                r#"print(json.dumps({"messages": [{"role": "assistant", "tool_calls": [{"id": "a", "function": {}}]}]}))"#,
            ),
            "tool_calls[0] missing function.name",
        ),
    ];
    for (name, body, expected) in cases {
        let project = env.project(name);
        script(&project, "f.py", &body);
        let mock = MockProvider::start(vec![Step::text("should never be asked")]);
        let report = project.join("report.json");
        let out = env
            .swivalctl(&daemon, &project)
            .args([
                "run",
                "--provider",
                "generic",
                "--base-url",
                &mock.base_url(),
                "--model",
                "m",
                "--llm-filter",
                "./f.py",
                "--report",
            ])
            .arg(&report)
            .arg("task")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(expected), "{name}: expected {expected:?} in {stderr}");
        assert_eq!(mock.request_count(), 0, "{name}: the provider received a request");
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(r["result"]["outcome"], "error", "{name}");
        assert!(out.stdout.is_empty(), "{name}");
    }
}

#[test]
fn filter_timeout_blocks_the_call() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    script(&project, "slow.sh", "#!/bin/sh\nsleep 30\n");
    std::fs::write(project.join("swival.toml"), "[[filters]]\ncommand = \"./slow.sh\"\ntimeout_s = 1\n").unwrap();
    let mock = MockProvider::start(vec![Step::text("never")]);
    let mut c = daemon.nd();
    c.ok("project/trust", json!({"base_dir": project}));
    let (_, r) = run_to_end(&mut c, &project, provider(&mock), "t");
    assert_eq!(r["outcome"], "error");
    assert!(r["error"].as_str().unwrap().contains("filter command timed out after 1s"), "{r}");
    assert_eq!(mock.request_count(), 0);
    assert!(
        processes_mentioning(&project.join("slow.sh").display().to_string()).is_empty(),
        "the slow filter was left running"
    );
}

#[test]
fn missing_filter_executable_is_a_setup_error_exit_1() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![]);
    let report = project.join("r.json");
    let out = env
        .swivalctl(&daemon, &project)
        .args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--llm-filter", "./nope.sh", "--report"])
        .arg(&report)
        .arg("t")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("llm_filter executable not found or not executable"), "{stderr}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["result"]["outcome"], "error");
}

#[test]
fn second_stage_gets_the_first_stages_output_and_never_runs_after_a_block() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    script(
        &project,
        "stage1.py",
        "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nm = req['messages']\nm.append({'role': 'user', 'content': 'added by stage 1'})\nprint(json.dumps({'messages': m}))\n",
    );
    script(
        &project,
        "stage2.py",
        "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nopen('stage2-saw.json', 'w').write(json.dumps(req))\nprint(json.dumps({'messages': req['messages']}))\n",
    );
    script(&project, "block.py", "#!/usr/bin/env python3\nimport sys\nsys.stdin.read()\nprint('{\"allow\": false, \"reason\": \"stage 1 says no\"}')\n");
    let mock = MockProvider::start(vec![Step::text("ok")]);
    let mut c = daemon.nd();
    let cfg = with(provider(&mock), json!({"llm_filter": ["./stage1.py", "./stage2.py"]}));
    let (_, r) = run_to_end(&mut c, &project, cfg, "t");
    assert_eq!(r["outcome"], "success");
    let saw: Value = serde_json::from_str(&std::fs::read_to_string(project.join("stage2-saw.json")).unwrap()).unwrap();
    assert_eq!(saw["call_kind"], "agent");
    assert_eq!(saw["provider"], "generic");
    assert!(saw["tools"].is_array());
    assert_eq!(saw["messages"].as_array().unwrap().last().unwrap()["content"], "added by stage 1");
    assert!(mock.requests_text().contains("added by stage 1"));

    std::fs::remove_file(project.join("stage2-saw.json")).unwrap();
    let cfg = with(provider(&mock), json!({"llm_filter": ["./block.py", "./stage2.py"]}));
    let (_, r) = run_to_end(&mut c, &project, cfg, "t");
    assert!(r["error"].as_str().unwrap().contains("stage 1 says no"));
    assert!(!project.join("stage2-saw.json").exists(), "stage 2 ran after stage 1 blocked");
}

const WORKER: &str = r#"#!/usr/bin/env python3
import json, os, sys
for line in sys.stdin:
    req = json.loads(line)
    with open("worker-pids.txt", "a") as f:
        f.write(f"{os.getpid()}\n")
    if "DIE" in json.dumps(req["messages"]):
        os._exit(1)
    print(json.dumps({"id": req["id"], "messages": req["messages"]}), flush=True)
"#;

#[test]
fn persistent_worker_serves_every_call_and_a_dead_worker_fails_closed_then_restarts() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    script(&project, "worker.py", WORKER);
    std::fs::write(project.join("swival.toml"), "[[filters]]\ncommand = \"./worker.py\"\nmode = \"persistent\"\n")
        .unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "think", json!({"thought": "one"})),
        Step::tool_call("c2", "think", json!({"thought": "two"})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    c.ok("project/trust", json!({"base_dir": project}));
    let (sid, r) = run_to_end(&mut c, &project, provider(&mock), "three calls");
    assert_eq!(r["outcome"], "success", "{r}");
    let pids = std::fs::read_to_string(project.join("worker-pids.txt")).unwrap();
    let pids: Vec<&str> = pids.lines().collect();
    assert_eq!(pids.len(), 3);
    assert!(pids.iter().all(|p| *p == pids[0]), "one worker serves every call: {pids:?}");

    // The worker dies on this call: it fails closed, nothing is sent.
    let before = mock.request_count();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "DIE now"}))["run_id"].clone();
    let r = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(r["outcome"], "error");
    assert!(r["error"].as_str().unwrap().starts_with("LLM filter blocked request:"), "{r}");
    assert_eq!(mock.request_count(), before);

    // A fresh worker serves the next call (the earlier DIE message is still
    // in the conversation, so start a new session for the restart check).
    std::fs::remove_file(project.join("worker-pids.txt")).unwrap();
    mock.push(Step::text("back"));
    let (_, r) = run_to_end(&mut c, &project, provider(&mock), "again");
    assert_eq!(r["answer"], "back", "{r}");
    let new_pid = std::fs::read_to_string(project.join("worker-pids.txt")).unwrap();
    assert_ne!(new_pid.trim(), pids[0], "the worker was restarted");
}

const REVIEWER: &str = r#"#!/usr/bin/env python3
import json, os, sys
answer = sys.stdin.read()
with open(os.path.join(sys.argv[1], "review-log.jsonl"), "a") as f:
    f.write(json.dumps({"args": sys.argv[1:], "task": os.environ.get("SWIVAL_TASK"),
        "round": os.environ.get("SWIVAL_REVIEW_ROUND"), "model": os.environ.get("SWIVAL_MODEL"), "answer": answer}) + "\n")
if os.environ["SWIVAL_REVIEW_ROUND"] == "1":
    print("Please mention the tests.")
    sys.exit(1)
sys.exit(0)
"#;

#[test]
fn reviewer_retry_then_accept_runs_two_rounds_and_delivers_only_the_final_answer() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    script(&project, "review.py", REVIEWER);
    let mock = MockProvider::start(vec![Step::text("first draft"), Step::text("final answer, tests mentioned")]);
    let out = env
        .swivalctl(&daemon, &project)
        .args([
            "run",
            "--provider",
            "generic",
            "--base-url",
            &mock.base_url(),
            "--model",
            "mock-model",
            "--reviewer",
            "./review.py",
            "do it",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "final answer, tests mentioned\n");
    let second = mock.requests()[1]["messages"].as_array().unwrap().clone();
    let feedback = second.last().unwrap();
    assert_eq!(feedback["role"], "user");
    let text = feedback["content"].as_str().unwrap();
    assert!(
        text.starts_with("[REVIEWER FEEDBACK — Round 1]\n") && text.contains("Please mention the tests."),
        "{text}"
    );
    let log: Vec<Value> = std::fs::read_to_string(project.join("review-log.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(log.len(), 2);
    let canonical = project.canonicalize().unwrap().display().to_string();
    assert_eq!(log[0]["args"], json!([canonical]));
    assert_eq!(log[0]["task"], "do it");
    assert_eq!(log[0]["round"], "1");
    assert_eq!(log[1]["round"], "2");
    assert_eq!(log[0]["model"], "mock-model");
    assert_eq!(log[0]["answer"], "first draft");
    let history = std::fs::read_to_string(project.join(".swival/HISTORY.md")).unwrap();
    assert!(history.contains("final answer") && !history.contains("first draft"));
}

#[test]
fn reviewer_errors_accept_with_a_warning() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let cases = [
        ("exit2", "#!/bin/sh\ncat >/dev/null\nexit 2\n", "exited with code 2"),
        ("exit7", "#!/bin/sh\ncat >/dev/null\nexit 7\n", "exited with code 7"),
        ("timeout", "#!/bin/sh\nsleep 30\n", "timed out"),
        ("bad-interpreter", "#!/nonexistent/interpreter\nexit 0\n", "failed"),
    ];
    let mut c = daemon.nd();
    for (name, body, expected) in cases {
        let project = env.project(name);
        let reviewer = script(&project, "review.sh", body);
        let mock = MockProvider::start(vec![Step::text("the answer")]);
        let cfg = with(provider(&mock), json!({"reviewer": reviewer, "reviewer_timeout_s": 1}));
        let sid = c.ok("session/create", json!({"base_dir": project, "config": cfg}))["session_id"].clone();
        c.ok("session/subscribe", json!({"session_id": sid}));
        c.ok("run/start", json!({"session_id": sid, "task": "t"}));
        let mut warning = None;
        let end = loop {
            let m = c.read();
            if m["method"] != "session/event" {
                continue;
            }
            let ev = m["params"]["result"].clone();
            if ev["type"] == "warning" {
                warning = Some(ev["message"].as_str().unwrap().to_owned());
            }
            if ev["type"] == "run_finished" {
                break ev;
            }
        };
        assert_eq!(end["outcome"], "success", "{name}: {end}");
        assert_eq!(end["answer"], "the answer", "{name}");
        let warning = warning.unwrap_or_default();
        assert!(warning.contains(expected), "{name}: warning {warning:?}");
    }
}

#[test]
fn a_deleted_reviewer_blocks_instead_of_waving_the_answer_through() {
    // Swival accepts an answer when its reviewer cannot start; a reviewer
    // removed after the session pinned it is a change to policy, so the
    // run fails closed instead.
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let project = env.project("p");
    let reviewer = script(&project, "review.sh", "#!/bin/sh\nexit 0\n");
    let mock = MockProvider::start(vec![Step::text("the answer")]);
    let cfg = with(provider(&mock), json!({"reviewer": reviewer}));
    let sid = c.ok("session/create", json!({"base_dir": project, "config": cfg}))["session_id"].clone();
    std::fs::remove_file(&reviewer).unwrap();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    let r = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(r["outcome"], "blocked", "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(error.contains("review.sh") && error.contains("unreadable"), "{error}");
    assert_eq!(r["answer"], Value::Null, "{r}");
}

#[test]
fn max_review_rounds_reached_accepts_the_last_answer() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let reviewer = script(&project, "never.sh", "#!/bin/sh\ncat >/dev/null\necho 'still not good'\nexit 1\n");
    let mock = MockProvider::start(vec![Step::text("a1"), Step::text("a2"), Step::text("a3")]);
    let mut c = daemon.nd();
    let cfg = with(provider(&mock), json!({"reviewer": reviewer, "max_review_rounds": 2}));
    let (_, r) = run_to_end(&mut c, &project, cfg, "t");
    assert_eq!(r["outcome"], "success");
    assert_eq!(r["answer"], "a2");
    assert_eq!(r["stats"]["review_rounds"], 2);
    assert_eq!(mock.request_count(), 2);
}

#[test]
fn policy_status_lists_stages_and_reviewer_with_digests() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let filter = script(&project, "f.py", REDACT);
    let reviewer = script(&project, "r.py", REVIEWER);
    std::fs::write(project.join("swival.toml"), "[[filters]]\ncommand = \"./f.py\"\nmode = \"persistent\"\n").unwrap();
    let mut c = daemon.nd();
    c.ok("project/trust", json!({"base_dir": project}));
    let cfg = json!({"provider": "generic", "base_url": "http://127.0.0.1:9/v1", "reviewer": reviewer});
    let sid = c.ok("session/create", json!({"base_dir": project, "config": cfg}))["session_id"].clone();
    let st = c.ok("policy/status", json!({"session_id": sid}));
    let stage = &st["filters"][0];
    assert_eq!(stage["mode"], "persistent");
    use sha2_like::hex_sha256;
    assert_eq!(stage["files"][0]["sha256"], hex_sha256(&std::fs::read(&filter).unwrap()));
    assert_eq!(st["reviewer"]["files"][0]["sha256"], hex_sha256(&std::fs::read(&reviewer).unwrap()));
    assert!(st["sandbox"]["mode"].is_string());
}

/// SHA-256 via the system's sha256sum, so the test does not share code with the daemon.
mod sha2_like {
    pub fn hex_sha256(bytes: &[u8]) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sha256sum");
        child.stdin.take().unwrap().write_all(bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().to_owned()
    }
}

#[test]
fn sixteen_sessions_with_filter_and_reviewer_finish_and_leave_no_children() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let shared = env.project("scripts");
    let filter = script(&shared, "pass-filter.py", REDACT);
    let reviewer = script(&shared, "ok-reviewer.sh", "#!/bin/sh\ncat >/dev/null\nexit 0\n");
    let mut c = daemon.nd();
    let mut runs = Vec::new();
    let mut mocks = Vec::new();
    for i in 0..16 {
        let project = env.project(&format!("s{i}"));
        let mock = MockProvider::start(vec![
            Step::tool_call("c", "think", json!({"thought": "x"})),
            Step::text(format!("answer {i}")),
        ]);
        let cfg = with(provider(&mock), json!({"llm_filter": filter, "reviewer": reviewer}));
        let sid = c.ok("session/create", json!({"base_dir": project, "config": cfg}))["session_id"].clone();
        runs.push((i, c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone()));
        mocks.push(mock);
    }
    for (i, run) in runs {
        let r = c.ok("run/wait", json!({"run_id": run}));
        assert_eq!(r["answer"], format!("answer {i}"), "{r}");
    }
    let scripts_dir = shared.display().to_string();
    assert!(processes_mentioning(&scripts_dir).is_empty(), "children left behind");
}

/// A one-shot identity filter.
const IDENTITY: &str = r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
print(json.dumps({"messages": req["messages"]}))
"#;

#[test]
fn prespawned_processes_and_persistent_workers_unused_for_the_idle_time_are_stopped() {
    let env = TestEnv::new();
    env.daemon_settings("process_idle_timeout_s = 0.2");
    let daemon = env.start_daemon();
    let project = env.project("p");
    script(&project, "idle-pre.py", IDENTITY);
    script(&project, "idle-worker.py", WORKER);
    std::fs::write(
        project.join("swival.toml"),
        "[[filters]]\ncommand = \"./idle-pre.py\"\nprespawn = 1\n\n\
         [[filters]]\ncommand = \"./idle-worker.py\"\nmode = \"persistent\"\n",
    )
    .unwrap();
    let mock = MockProvider::start(vec![Step::text("one"), Step::text("two")]);
    let mut c = daemon.nd();
    c.ok("project/trust", json!({"base_dir": project}));
    let (sid, r) = run_to_end(&mut c, &project, provider(&mock), "first");
    assert_eq!(r["answer"], "one", "{r}");
    let worker = std::fs::read_to_string(project.join("worker-pids.txt")).unwrap();

    // The call left the worker running and, once served, started the next
    // filter process; neither is used again, so both are stopped. Without
    // the idle stop they would wait until the daemon stops.
    swival_tests::wait_until("the idle filter processes to be stopped", || {
        processes_mentioning("idle-pre.py").is_empty() && processes_mentioning("idle-worker.py").is_empty()
    });
    assert!(env.log().contains("unused for"), "the stop is logged:\n{}", env.log());

    // The next call starts afresh.
    std::fs::remove_file(project.join("worker-pids.txt")).unwrap();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "second"}))["run_id"].clone();
    let r = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(r["answer"], "two", "{r}");
    let restarted = std::fs::read_to_string(project.join("worker-pids.txt")).unwrap();
    assert_ne!(restarted.trim(), worker.trim(), "a fresh worker served the second call");
}
