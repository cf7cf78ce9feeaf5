//! A model server on this machine that is not running fails the run after
//! one quick retry, naming the URL and how to start a server, instead of
//! backing off for half a minute; a remote one keeps Swival's retries.

use serde_json::Value;
use swival_tests::TestEnv;

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn a_refused_loopback_server_fails_after_one_retry_naming_the_url() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let url = format!("http://127.0.0.1:{}/v1", closed_port());
    let out = env
        .swivalctl(&daemon, &p)
        .args(["run", "--json", "--provider", "generic", "--model", "m", "--base-url", &url, "hello"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let retries = events.iter().filter(|e| e["type"] == "retry").count();
    assert!(retries <= 1, "{retries} retries: {stdout}");
    let end = events.iter().find(|e| e["type"] == "run_finished").expect("the run ends");
    assert_eq!(end["outcome"], "error", "{end}");
    let error = end["error"].as_str().unwrap_or_default();
    assert!(error.contains(&format!("no model server answers at {url}")), "{error}");
    assert!(error.contains("start the server"), "{error}");

    // A local preset's words say how to start one.
    let out = env
        .swivalctl(&daemon, &p)
        .args(["run", "--provider", "llamacpp", "--model", "m", "--base-url", &url, "hello"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("llama-server -m MODEL.gguf"), "{stderr}");
}
