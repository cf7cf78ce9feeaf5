//! Retention: `swivalctl sessions prune --older-than AGE` deletes sessions
//! unused for that long, with everything they hold, and never one in use.

use serde_json::json;
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::TestEnv;

#[test]
fn prune_deletes_unused_sessions_and_keeps_one_in_use() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let p = env.project("p");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::text("one"), Step::gated(Step::text("two"), &gate)]);
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    let mut c = daemon.nd();
    let old = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": old, "task": "t"}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}));
    let busy = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    // A fresh daemon holds no session in memory.
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    daemon.wait_exit();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let running = c.ok("run/start", json!({"session_id": busy, "task": "t"}))["run_id"].clone();

    let out = env.swivalctl(&daemon, &p).args(["sessions", "--json", "prune", "--older-than", "0s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["removed"], json!([old]), "the session with a run in flight stays: {r}");
    let gone = c.call("session/get", json!({"session_id": old}));
    assert_eq!(gone["error"]["data"]["kind"], "session_not_found", "{gone}");
    gate.open();
    assert_eq!(c.ok("run/wait", json!({"run_id": running}))["outcome"], "success");

    let bad = env.swivalctl(&daemon, &p).args(["sessions", "prune", "--older-than", "3x"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("\"3x\" is not an age"), "{stderr}");
}
