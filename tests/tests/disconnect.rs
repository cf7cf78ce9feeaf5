//! A run and the client that started it: `swivalctl run` killed with
//! SIGKILL takes its run with it (`cancel_on_disconnect`), `--detach` and
//! a client that did not ask leave theirs going; SIGTERM ends `swivalctl`
//! and the daemon even while a run is blocked in its setup, on a server
//! that never answers.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Stdio};
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::{create_session, exit_of, http_post, processes_with_arg, wait_until, Daemon, NdConn, TestEnv};

/// `swivalctl run` of `task` on `project` against `mock`, its output piped.
fn swivalctl_run(env: &TestEnv, daemon: &Daemon, project: &Path, mock: &MockProvider, extra: &[&str]) -> Child {
    let mut cmd = env.swivalctl(daemon, project);
    cmd.args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m"]);
    cmd.args(extra).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// The one run of the one session on `project`.
fn only_run(c: &mut NdConn, project: &Path) -> Value {
    let sessions = c.ok("session/list", json!({}))["sessions"].as_array().unwrap().clone();
    let base = project.display().to_string();
    let session = sessions.iter().find(|s| s["base_dir"] == base.as_str()).expect("the run's session");
    let detail = c.ok("session/get", json!({"session_id": session["session_id"]}));
    detail["runs"][0].clone()
}

fn signal(child: &Child, sig: Signal) {
    kill(Pid::from_raw(child.id() as i32), sig).unwrap();
}

#[test]
fn swivalctl_run_killed_with_sigkill_cancels_its_run_and_detach_does_not() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();

    let killed = env.project("killed");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("nobody reads this"), &gate)]);
    let child = swivalctl_run(&env, &daemon, &killed, &mock, &["wait for me"]);
    mock.wait_for_requests(1);
    signal(&child, Signal::SIGKILL);
    exit_of(child);
    let run = only_run(&mut c, &killed)["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["outcome"], "cancelled", "{result:#}");
    gate.open();

    let detached = env.project("detached");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("done while away"), &gate)]);
    let out =
        swivalctl_run(&env, &daemon, &detached, &mock, &["--detach", "go on without me"]).wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(run.starts_with("r_"), "{run}");
    gate.open();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["outcome"], "success", "{result:#}");
    assert_eq!(result["answer"], "done while away");
}

#[test]
fn a_connection_that_asked_cancels_its_run_when_it_ends_and_one_that_did_not_leaves_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut watcher = daemon.nd();
    for (asked, outcome) in [(true, "cancelled"), (false, "success")] {
        let gate = Gate::new();
        let mock = MockProvider::start(vec![Step::gated(Step::text("the answer"), &gate)]);
        let p = env.project(&format!("p-{asked}"));
        let mut c = daemon.nd();
        let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
        let sid = create_session(&mut c, &p, cfg);
        let params = json!({"session_id": sid, "task": "t", "cancel_on_disconnect": asked});
        let run = c.ok("run/start", params)["run_id"].clone();
        mock.wait_for_requests(1);
        drop(c);
        if !asked {
            gate.open();
        }
        let result = watcher.ok("run/wait", json!({"run_id": run}));
        assert_eq!(result["outcome"], outcome, "cancel_on_disconnect {asked}: {result:#}");
        gate.open();
    }
}

#[test]
fn cancel_on_disconnect_over_http_post_is_refused_naming_the_framing() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let sid = create_session(
        &mut c,
        &env.project("p"),
        json!({"provider": "generic", "base_url": "http://127.0.0.1:9", "model": "m"}),
    );
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "run/start",
        "params": {"session_id": sid, "task": "t", "cancel_on_disconnect": true}});
    let (status, reply) = http_post(&env.socket(), &body.to_string());
    assert_eq!(status, 200, "{reply}");
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("cancel_on_disconnect") && message.contains("HTTP POST"), "{message}");
    let detail = c.ok("session/get", json!({"session_id": sid}));
    assert_eq!(detail["runs"].as_array().unwrap().len(), 0, "no run started: {detail:#}");
}

/// An MCP server that reads its input and never answers: a run's setup
/// waits on it.
fn silent_server(env: &TestEnv) -> String {
    let script = swival_tests::script(env.root(), "never-answers.sh", "#!/bin/sh\nwhile read line; do :; done\n");
    env.global_config(&format!("[mcp_servers.silent]\ncommand = \"{}\"\n", script.display()));
    script.display().to_string()
}

#[test]
fn sigterm_ends_swivalctl_and_the_daemon_while_a_run_is_blocked_in_setup() {
    let env = TestEnv::new();
    let server = silent_server(&env);
    // Neither a grace nor a start timeout lets the run end on its own.
    env.daemon_settings("shutdown_grace_s = 600\nmcp_start_timeout_s = 600\n");
    let mut daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("never asked")]);

    let p = env.project("client");
    let child = swivalctl_run(&env, &daemon, &p, &mock, &["blocked in setup"]);
    wait_until("the silent server to start", || !processes_with_arg(&server).is_empty());
    signal(&child, Signal::SIGTERM);
    let (status, stderr) = exit_of(child);
    assert_eq!(status.code(), Some(143), "{stderr}");
    let mut c = daemon.nd();
    let run = only_run(&mut c, &p)["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "cancelled");

    let p = env.project("daemon");
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    let sid = create_session(&mut c, &p, cfg);
    let run = c.ok("run/start", json!({"session_id": sid, "task": "blocked again"}))["run_id"].clone();
    wait_until("the silent server to start again", || !processes_with_arg(&server).is_empty());
    daemon.signal(Signal::SIGTERM);
    assert!(daemon.wait_exit().success());
    let daemon = env.start_daemon();
    let result = daemon.nd().ok("run/wait", json!({"run_id": run}));
    // Ended by the shutdown, and stored by it: not a run found lost at
    // the next start.
    assert_eq!(result["outcome"], "interrupted", "{result:#}");
    assert_eq!(result["error"], "the daemon shut down while this run was in flight", "{result:#}");
    assert_eq!(mock.request_count(), 0);
}
