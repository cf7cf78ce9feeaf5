//! The response cache: hits without a provider call, stays on under
//! filters, misses when a filter script changes, shares identical calls.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::{script, NdConn, TestEnv};

fn run(c: &mut NdConn, base: &Path, config: &Value, task: &str) -> Value {
    let sid = c.ok("session/create", json!({"base_dir": base, "config": config}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}))
}

#[test]
fn same_task_twice_is_answered_from_the_cache_without_a_provider_call() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("cached answer")]);
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "cache": true});
    let mut c = daemon.nd();
    assert_eq!(run(&mut c, &p, &cfg, "what is 6 x 7")["answer"], "cached answer");
    assert_eq!(mock.request_count(), 1);
    let second = run(&mut c, &p, &cfg, "what is 6 x 7");
    assert_eq!(second["answer"], "cached answer");
    assert_eq!(mock.request_count(), 1, "the second run reached the provider");
    let stats = c.ok("cache/stats", json!({}));
    assert_eq!(stats["hits"], 1);
    assert_eq!(stats["entries"], 1);
    // Without cache = true nothing is looked up.
    mock.push(Step::text("fresh"));
    let off = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    assert_eq!(run(&mut c, &p, &off, "what is 6 x 7")["answer"], "fresh");
    assert_eq!(c.ok("cache/clear", json!({}))["removed"], 1);
}

#[test]
fn cache_stays_on_under_a_filter_and_misses_after_the_script_changes() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let body = "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nprint(json.dumps({'messages': req['messages']}))\n";
    let filter = script(&p, "identity.py", body);
    let mock = MockProvider::start(vec![Step::text("one"), Step::text("two")]);
    let cfg =
        json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "cache": true, "llm_filter": filter});
    let mut c = daemon.nd();
    assert_eq!(run(&mut c, &p, &cfg, "t")["answer"], "one");
    assert_eq!(run(&mut c, &p, &cfg, "t")["answer"], "one");
    assert_eq!(mock.request_count(), 1, "the filter turned the cache off");
    std::fs::write(&filter, format!("{body}# changed\n")).unwrap();
    assert_eq!(run(&mut c, &p, &cfg, "t")["answer"], "two");
    assert_eq!(mock.request_count(), 2, "a changed filter script must miss");
}

#[test]
fn two_identical_requests_at_the_same_moment_make_one_provider_call() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let a = env.project("a");
    let b = env.project("b");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("shared answer"), &gate), Step::text("second call")]);
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "cache": true});
    let mut c = daemon.nd();
    let sa = c.ok("session/create", json!({"base_dir": a, "config": cfg}))["session_id"].clone();
    let sb = c.ok("session/create", json!({"base_dir": b, "config": cfg}))["session_id"].clone();
    let ra = c.ok("run/start", json!({"session_id": sa, "task": "same question"}))["run_id"].clone();
    mock.wait_for_requests(1);
    let rb = c.ok("run/start", json!({"session_id": sb, "task": "same question"}))["run_id"].clone();
    // Wait until the second session is parked on the first one's call.
    while c.ok("cache/stats", json!({}))["waiting"] != 1 {
        std::thread::yield_now();
    }
    gate.open();
    assert_eq!(c.ok("run/wait", json!({"run_id": ra}))["answer"], "shared answer");
    assert_eq!(c.ok("run/wait", json!({"run_id": rb}))["answer"], "shared answer");
    assert_eq!(mock.request_count(), 1);
    assert_eq!(c.ok("cache/stats", json!({}))["shared"], 1);
}
