//! Crash safety: SIGKILL of the daemon mid-run loses nothing.

use serde_json::json;
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::{processes_mentioning, script, wait_until, TestEnv};

#[test]
fn kill_9_mid_run_then_restart_marks_the_run_interrupted_and_the_session_continues() {
    let env = TestEnv::new();
    let project = env.project("p");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::text("first answer"), Step::gated(Step::text("never delivered"), &gate)]);
    let mut daemon = env.start_daemon();
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    let sid = c.ok("session/create", json!({"base_dir": project, "config": config}))["session_id"].clone();
    let done = c.ok("run/start", json!({"session_id": sid, "task": "first task"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": done}))["outcome"], "success");
    let inflight = c.ok("run/start", json!({"session_id": sid, "task": "second task"}))["run_id"].clone();
    mock.wait_for_requests(2);
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    daemon.wait_exit();
    drop(c);

    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let list = c.ok("session/list", json!({}));
    assert_eq!(list["sessions"][0]["session_id"], sid);
    let detail = c.ok("session/get", json!({"session_id": sid}));
    let runs = detail["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["outcome"], "success");
    assert_eq!(runs[1]["run_id"], inflight);
    assert_eq!(runs[1]["outcome"], "interrupted");
    assert_eq!(c.ok("run/wait", json!({"run_id": inflight}))["outcome"], "interrupted");
    // The interrupted run's stream ends with its one run_finished.
    c.ok("session/subscribe", json!({"session_id": sid, "from_seq": 1}));
    let mut finished = 0;
    loop {
        let ev = c.read();
        if ev["method"] != "session/event" {
            continue;
        }
        let ev = &ev["params"]["result"];
        if ev["type"] == "run_finished" {
            finished += 1;
            if ev["run_id"] == inflight {
                assert_eq!(ev["outcome"], "interrupted");
                break;
            }
        }
    }
    assert_eq!(finished, 2);

    // A new run works, and the provider sees the earlier conversation.
    mock.push(Step::text("third answer"));
    let mut c2 = daemon.nd();
    let run = c2.ok("run/start", json!({"session_id": sid, "task": "third task"}))["run_id"].clone();
    assert_eq!(c2.ok("run/wait", json!({"run_id": run}))["answer"], "third answer");
    let last = mock.requests().last().unwrap().clone();
    let text = last["messages"].to_string();
    assert!(text.contains("first task") && text.contains("first answer") && text.contains("third task"), "{text}");
}

#[test]
fn ctrl_c_sigterm_or_sighup_in_swivalctl_cancels_the_run_and_exits_128_plus_the_signal() {
    use nix::sys::signal::Signal;
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    for (signal, code) in [(Signal::SIGINT, 130), (Signal::SIGTERM, 143), (Signal::SIGHUP, 129)] {
        let project = env.project(&format!("p{code}"));
        let gate = Gate::new();
        let mock = MockProvider::start(vec![Step::gated(Step::text("too late"), &gate)]);
        let child = env
            .swivalctl(&daemon, &project)
            .args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m", "wait"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        mock.wait_for_requests(1);
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{signal}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout.is_empty());
        // The run in the daemon was cancelled, not left running.
        let sessions = c.ok("session/list", json!({}))["sessions"].as_array().unwrap().clone();
        let session = sessions.iter().find(|s| s["base_dir"].as_str().unwrap().ends_with(&format!("p{code}"))).unwrap();
        let detail = c.ok("session/get", json!({"session_id": session["session_id"]}));
        assert_eq!(detail["runs"][0]["outcome"], "cancelled", "{signal}: {detail:#}");
        gate.open();
    }
}

/// A filter or reviewer that starts a grandchild (whose command line names
/// the script's directory), leaves a marker once both run, and never ends.
const STUCK_SCRIPT: &str = r#"#!/usr/bin/env python3
import os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
sys.stdin.read()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", here])
open(os.path.join(here, os.path.basename(__file__) + ".started"), "w").close()
time.sleep(600)
"#;

#[test]
fn sigterm_with_runs_in_flight_interrupts_them_kills_their_children_and_exits_0() {
    let env = TestEnv::new();
    let scripts = env.project("scripts");
    let filter = script(&scripts, "stuck-filter.py", STUCK_SCRIPT);
    let reviewer = script(&scripts, "stuck-reviewer.py", STUCK_SCRIPT);
    let gate = Gate::new();
    let on_provider = MockProvider::start(vec![Step::gated(Step::text("never"), &gate)]);
    let on_filter = MockProvider::start(vec![Step::text("never asked")]);
    let on_reviewer = MockProvider::start(vec![Step::text("an answer under review")]);
    let mut daemon = env.start_daemon();
    let mut c = daemon.nd();
    let mut start = |name: &str, mock: &MockProvider, extra: serde_json::Value| {
        let mut config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        let sid =
            c.ok("session/create", json!({"base_dir": env.project(name), "config": config}))["session_id"].clone();
        c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone()
    };
    let runs = [
        start("waits-on-provider", &on_provider, json!({})),
        start("waits-on-filter", &on_filter, json!({"llm_filter": filter})),
        start("waits-on-reviewer", &on_reviewer, json!({"reviewer": reviewer})),
    ];
    on_provider.wait_for_requests(1);
    wait_until("the filter and the reviewer to start", || {
        scripts.join("stuck-filter.py.started").exists() && scripts.join("stuck-reviewer.py.started").exists()
    });
    let scripts_dir = scripts.display().to_string();
    assert!(processes_mentioning(&scripts_dir).len() >= 4, "two scripts and two grandchildren should be running");

    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", env.log());
    assert!(!env.socket().exists(), "the socket file is removed on exit");
    wait_until("the filter, the reviewer and their children to be killed", || {
        processes_mentioning(&scripts_dir).is_empty()
    });
    assert_eq!(on_filter.request_count(), 0, "the filtered call never went out");

    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    for run in runs {
        let r = c.ok("run/wait", json!({"run_id": run}));
        assert_eq!(r["outcome"], "interrupted", "{r}");
    }
    gate.open();
    assert!(processes_mentioning(&env.root().display().to_string()).is_empty(), "a child outlived its test");
}

#[test]
fn sigkill_at_many_moments_never_leaves_a_run_finished_without_its_start_or_a_gap() {
    const CYCLES: usize = 50;
    let env = TestEnv::new();
    let project = env.project("p");
    // Each run: a few tool turns, so kills land before, during and after them.
    let mut steps = Vec::new();
    for i in 0..CYCLES {
        steps.push(Step::tool_call(&format!("t{i}a"), "think", json!({"thought": "one"})));
        steps.push(Step::tool_call(&format!("t{i}b"), "think", json!({"thought": "two"})));
        steps.push(Step::text("done"));
    }
    let mock = MockProvider::start(steps);
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    let mut sessions = Vec::new();
    for cycle in 0..CYCLES {
        let mut daemon = env.start_daemon();
        let mut c = daemon.nd();
        let sid = c.ok("session/create", json!({"base_dir": project, "config": config}))["session_id"].clone();
        c.ok("session/subscribe", json!({"session_id": sid}));
        c.ok("run/start", json!({"session_id": sid, "task": format!("task {cycle}")}));
        // Kill after a different number of events each cycle (0 = at once).
        let mut seen = 0;
        while seen < cycle % 7 {
            let m = c.read();
            if m["method"] == "session/event" {
                seen += 1;
                if m["params"]["result"]["type"] == "run_finished" {
                    break;
                }
            }
        }
        daemon.signal(nix::sys::signal::Signal::SIGKILL);
        daemon.wait_exit();
        sessions.push(sid);
    }
    // One last start marks what was in flight; then every stream must hold.
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    for sid in &sessions {
        c.ok("session/subscribe", json!({"session_id": sid, "from_seq": 1}));
        let mut seqs = Vec::new();
        let mut started = Vec::new();
        let mut finished = Vec::new();
        loop {
            let m = c.read();
            if m["method"] != "session/event" || &m["params"]["result"]["session_id"] != sid {
                continue;
            }
            let ev = m["params"]["result"].clone();
            seqs.push(ev["seq"].as_u64().unwrap());
            match ev["type"].as_str() {
                Some("run_started") => started.push(ev["run_id"].clone()),
                Some("run_finished") => {
                    assert!(started.contains(&ev["run_id"]), "{sid}: run_finished before run_started: {ev}");
                    finished.push(ev["run_id"].clone());
                    break;
                }
                _ => {}
            }
        }
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "{sid}: gap or duplicate");
        assert_eq!(finished.len(), 1, "{sid}");
        let detail = c.ok("session/get", json!({"session_id": sid}));
        let runs = detail["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1, "{sid}: {detail}");
        assert!(!runs[0]["running"].as_bool().unwrap(), "{sid}: a run is still marked running");
    }
    drop(c);
    drop(daemon);
    let db = env.root().join("state/swival/swivald.db");
    let check = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('pragma integrity_check').fetchone()[0])",
        ])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), "ok", "{}", String::from_utf8_lossy(&check.stderr));
}
