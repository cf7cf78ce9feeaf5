//! Faults end to end (SPEC §10): a provider that breaks its replies, rate
//! limits or hangs; a client that vanishes mid-run; a filter that floods
//! stdout; many connections at once; oversized and malformed messages. Each
//! gets a clear error and the rest keeps working. SIGKILL and SIGTERM of the
//! daemon are in `restart.rs`.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::{
    events_until_finished, http_post, init_params, processes_mentioning, rss_kib, script, Daemon, NdConn, TestEnv,
};

/// Create a session on `mock` with extra config keys; returns its id.
fn create_session(c: &mut NdConn, base: &Path, mock: &MockProvider, extra: Value) -> String {
    let mut config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "mock-model"});
    for (k, v) in extra.as_object().expect("extra config is an object") {
        config[k] = v.clone();
    }
    let created = c.ok("session/create", json!({"base_dir": base, "config": config}));
    created["session_id"].as_str().expect("session id").to_owned()
}

/// Start a run and collect its events up to `run_finished`.
fn run_events(c: &mut NdConn, session: &str, task: &str) -> Vec<Value> {
    c.ok("run/start", json!({"session_id": session, "task": task}));
    events_until_finished(c, session, 1)
}

/// The daemon answers a fresh connection.
fn assert_serving(daemon: &Daemon) {
    let status = daemon.nd().ok("daemon/status", json!({}));
    assert_eq!(status["pid"], json!(daemon.pid()), "daemon/status from another process: {status}");
}

/// One provider fault, then a good reply: the fault is retried once (one
/// `retry` event naming what failed) and the run succeeds with the good
/// reply only. Returns the retry event.
fn fault_is_retried_then_the_run_succeeds(fault: Step, stream: bool) -> Value {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![fault, Step::text("recovered answer")]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &project, &mock, json!({"stream": stream}));
    let events = run_events(&mut c, &sid, "t");
    let end = events.last().expect("events end with run_finished");
    assert_eq!(end["outcome"], "success", "the run should survive one provider fault: {events:#?}");
    assert_eq!(end["answer"], "recovered answer");
    assert_eq!(end["stats"]["provider_retries"], 1, "{end}");
    assert_eq!(mock.request_count(), 2, "one failed attempt and one good one");
    let retries: Vec<&Value> = events.iter().filter(|e| e["type"] == "retry").collect();
    assert_eq!(retries.len(), 1, "exactly one retry event: {events:#?}");
    assert_eq!(retries[0]["attempt"], 1);
    assert!(!retries[0]["reason"].as_str().unwrap_or_default().is_empty(), "the retry says why: {}", retries[0]);
    if stream {
        // Deltas of the failed attempt were already sent; what follows the
        // retry event is the reply that counts.
        let after_retry = events.iter().skip_while(|e| e["type"] != "retry");
        let text: String =
            after_retry.filter(|e| e["type"] == "text_delta").map(|e| e["text"].as_str().unwrap()).collect();
        assert_eq!(text, "recovered answer", "the deltas after the retry are the answer: {events:#?}");
    }
    assert_serving(&daemon);
    retries[0].clone()
}

#[test]
fn stream_dropped_mid_way_is_retried_and_the_run_succeeds() {
    let retry = fault_is_retried_then_the_run_succeeds(Step::drop_mid_stream(), true);
    assert!(retry["reason"].as_str().unwrap().contains("provider request failed"), "{retry}");
}

#[test]
fn truncated_sse_is_retried_and_the_run_succeeds() {
    let retry = fault_is_retried_then_the_run_succeeds(Step::truncated_sse(), true);
    let reason = retry["reason"].as_str().unwrap();
    assert!(reason.contains("provider"), "{retry}");
}

#[test]
fn garbage_json_reply_is_retried_and_the_run_succeeds() {
    let retry = fault_is_retried_then_the_run_succeeds(Step::garbage(), false);
    assert!(retry["reason"].as_str().unwrap().contains("not JSON"), "{retry}");
}

/// A run allowed one attempt per call succeeds, with no retry and no
/// backoff: resends on a fresh connection are not retries.
fn succeeds_with_one_attempt(c: &mut NdConn, project: &Path, mock: &MockProvider) {
    let sid = create_session(c, project, mock, json!({"retries": 1}));
    let events = run_events(c, &sid, "t");
    let end = events.last().expect("events end with run_finished");
    assert_eq!(end["outcome"], "success", "{events:#?}");
    assert_eq!(end["stats"]["provider_retries"], 0, "{end}");
    assert!(events.iter().all(|e| e["type"] != "retry"), "no backoff: {events:#?}");
}

#[test]
fn connection_dropped_before_any_reply_is_sent_again_at_once_not_retried() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![Step::drop_connection(), Step::text("recovered answer")]);
    let mut c = daemon.nd();
    succeeds_with_one_attempt(&mut c, &project, &mock);
    assert_eq!(mock.request_count(), 2);
}

#[test]
fn a_server_closing_idle_keep_alive_connections_costs_no_retry() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    std::fs::write(project.join("a.txt"), "alpha\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "a.txt"})),
        Step::tool_call("c2", "list_files", json!({})),
        Step::text("done"),
    ])
    .with_stale_keep_alive();
    let mut c = daemon.nd();
    succeeds_with_one_attempt(&mut c, &project, &mock);
    assert!(mock.stale_drops() >= 1, "the pooled connection was reused and found closed");
    assert_eq!(mock.request_count(), 3);
}

#[test]
fn rate_limit_retry_after_header_sets_the_retry_delay() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![
        Step::error(429, "rate limited, slow down", "rate_limit_error").with_retry_after(1),
        Step::text("after the wait"),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &project, &mock, json!({}));
    let events = run_events(&mut c, &sid, "t");
    let retry = events.iter().find(|e| e["type"] == "retry").expect("a retry event");
    // The header says 1 s; the backoff base here is 0.01 s, so 1.0 can only come from the header.
    assert_eq!(retry["delay_s"].as_f64(), Some(1.0), "Retry-After: 1 must set the delay: {retry}");
    let reason = retry["reason"].as_str().unwrap();
    assert!(reason.contains("429") && reason.contains("rate limited, slow down"), "{retry}");
    let end = events.last().unwrap();
    assert_eq!((end["outcome"].as_str(), end["answer"].as_str()), (Some("success"), Some("after the wait")), "{end}");
}

#[test]
fn provider_hang_past_provider_timeout_fails_the_run_naming_the_timeout() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let mock = MockProvider::start(vec![Step::hang()]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &project, &mock, json!({"provider_timeout": 1, "retries": 1}));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["outcome"], "error", "{result}");
    assert_eq!(result["exit_code"], 1, "{result}");
    let error = result["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("timed out") && error.contains("provider_timeout"),
        "the error must name the timeout: {error}"
    );
    assert_eq!(mock.request_count(), 1, "retries = 1 means a single attempt");

    // The daemon still serves, and the same session takes another run.
    assert_serving(&daemon);
    mock.push(Step::text("prompt this time"));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "again"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["answer"], "prompt this time");
}

#[test]
fn client_vanishing_mid_run_leaves_the_run_to_finish_and_its_result_readable() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("p");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("finished without its client"), &gate)]);
    let mut a = daemon.nd();
    let sid = create_session(&mut a, &project, &mock, json!({"stream": true}));
    a.ok("session/subscribe", json!({"session_id": sid, "from_seq": 1}));
    let run = a.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    // A run/wait that will never be read, then the client is gone.
    a.send_raw(
        json!({"jsonrpc": "2.0", "id": 99, "method": "run/wait", "params": {"run_id": run}}).to_string().as_bytes(),
    );
    mock.wait_for_requests(1);
    drop(a);

    gate.open();
    let mut b = daemon.nd();
    let result = b.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["outcome"], "success", "{result}");
    assert_eq!(result["answer"], "finished without its client");
    let events = events_until_finished(&mut b, &sid, 1);
    assert_eq!(events.iter().filter(|e| e["type"] == "run_finished").count(), 1, "{events:#?}");
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "every event stored, in order");
    assert_serving(&daemon);
}

/// A filter that reads the request, then writes 100 MB to stdout.
const FLOOD_ONESHOT: &str = r#"#!/usr/bin/env python3
import sys
sys.stdin.read()
chunk = b"x" * (1 << 20)
for _ in range(100):
    sys.stdout.buffer.write(chunk)
"#;

/// A persistent worker that answers its first request with a 100 MB line.
const FLOOD_PERSISTENT: &str = r#"#!/usr/bin/env python3
import sys
sys.stdin.readline()
chunk = b"x" * (1 << 20)
for _ in range(100):
    sys.stdout.buffer.write(chunk)
sys.stdout.buffer.write(b"\n")
"#;

#[test]
fn filter_flooding_stdout_fails_closed_and_the_daemon_stays_small() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let scripts = env.project("scripts");
    let oneshot = script(&scripts, "flood.py", FLOOD_ONESHOT);
    let persistent = script(&scripts, "flood-worker.py", FLOOD_PERSISTENT);
    let mut c = daemon.nd();
    let cases = [
        (
            "oneshot",
            json!({"command": oneshot, "mode": "oneshot"}),
            "wrote more than 33554432 bytes to stdout and was killed",
        ),
        ("persistent", json!({"command": persistent, "mode": "persistent"}), "line longer than 33554432 bytes"),
    ];
    for (mode, stage, expected) in cases {
        let project = env.project(mode);
        let mock = MockProvider::start(vec![Step::text("must never be asked")]);
        let sid = create_session(&mut c, &project, &mock, json!({"filters": [stage]}));
        let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
        let result = c.ok("run/wait", json!({"run_id": run}));
        assert_eq!(result["outcome"], "error", "{mode}: {result}");
        let error = result["error"].as_str().unwrap_or_default();
        assert!(error.starts_with("LLM filter blocked request:"), "{mode}: fails closed as a filter block: {error}");
        assert!(error.contains(expected), "{mode}: the error must name the flood ({expected:?}): {error}");
        assert_eq!(mock.request_count(), 0, "{mode}: nothing may reach the provider");
    }
    assert_serving(&daemon);
    let rss_mib = rss_kib(daemon.pid()) / 1024;
    assert!(rss_mib < 200, "swivald holds {rss_mib} MiB after two 100 MB floods; output must be bounded, not kept");
    let scripts_dir = scripts.display().to_string();
    swival_tests::wait_until("the flooding filters to be killed", || processes_mentioning(&scripts_dir).is_empty());
    assert!(processes_mentioning(&env.root().display().to_string()).is_empty(), "a child outlived its test");
}

#[test]
fn two_hundred_simultaneous_connections_are_all_answered() {
    const N: usize = 200;
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let all_connected = std::sync::Barrier::new(N);
    // A connection that answered initialize has been accepted; status asked
    // after every one has must count all of them.
    let all_initialized = std::sync::Barrier::new(N);
    let all_answered = std::sync::Barrier::new(N);
    let statuses: Vec<Value> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..N)
            .map(|_| {
                s.spawn(|| {
                    let mut c = daemon.nd();
                    all_connected.wait();
                    let init = c.ok("initialize", init_params());
                    assert_eq!(init["server"]["name"], "swivald", "{init}");
                    all_initialized.wait();
                    let status = c.ok("daemon/status", json!({}));
                    // Hold the connection until every other one was answered too.
                    all_answered.wait();
                    status
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("a connection thread failed")).collect()
    });
    assert_eq!(statuses.len(), N);
    for status in &statuses {
        assert_eq!(status["pid"], json!(daemon.pid()));
        assert_eq!(status["connections"], N, "every status was asked once all {N} connections were accepted: {status}");
    }
    assert_serving(&daemon);
}

#[test]
fn oversized_messages_are_refused_on_both_framings_without_being_buffered() {
    let env = TestEnv::new();
    let daemon = env.start_daemon_with(&["--max-message-size", "4096"]);
    // Newline-delimited: a 100 MB line. The daemon reads and drops it as it
    // arrives, so writing it all before reading cannot block.
    let mut other = daemon.nd();
    other.ok("initialize", init_params());
    let mut w = UnixStream::connect(&daemon.socket).unwrap();
    w.set_read_timeout(Some(swival_tests::IO_TIMEOUT)).unwrap();
    let mut r = BufReader::new(w.try_clone().unwrap());
    w.write_all(br#"{"jsonrpc":"2.0","id":1,"method":"daemon/status","params":{"pad":""#).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..100 {
        w.write_all(&chunk).unwrap();
    }
    w.write_all(b"\"}}\n").unwrap();
    let reply = read_json_line(&mut r);
    assert_eq!(reply["error"]["code"], -32007, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("exceeds max_message_size (4096 bytes)"), "the error names the limit: {message}");
    let rss_mib = rss_kib(daemon.pid()) / 1024;
    assert!(rss_mib < 100, "swivald holds {rss_mib} MiB after refusing a 100 MB line: it buffered it");
    // The same connection, and the others, still work.
    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"daemon/status\"}\n").unwrap();
    let after = read_json_line(&mut r);
    assert_eq!(after["result"]["pid"], json!(daemon.pid()), "{after}");
    assert_eq!(other.ok("daemon/status", json!({}))["pid"], json!(daemon.pid()));

    // HTTP: a 64 KiB body gets 413, and the daemon keeps serving HTTP.
    let big =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"daemon/status","params":{{"pad":"{}"}}}}"#, "x".repeat(64 << 10));
    let (code, body) = http_post_refused_body(&daemon.socket, &big);
    assert_eq!(code, 413, "{body}");
    let (code, body) = http_post(&daemon.socket, r#"{"jsonrpc":"2.0","id":2,"method":"daemon/status"}"#);
    assert_eq!(code, 200, "{body}");
    assert_serving(&daemon);
}

#[test]
fn each_kind_of_malformed_line_gets_an_error_and_the_connection_keeps_working() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    c.ok("initialize", init_params());
    let cases: Vec<(&str, Vec<u8>, i64)> = vec![
        ("not UTF-8", b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}".to_vec(), -32700),
        ("cut short", br#"{"jsonrpc":"2.0","id":1,"method":"daemon/st"#.to_vec(), -32700),
        ("two objects on one line", br#"{"jsonrpc":"2.0","id":1,"method":"daemon/status"}{"id":2}"#.to_vec(), -32700),
        ("empty object", b"{}".to_vec(), -32600),
        ("empty batch", b"[]".to_vec(), -32600),
        ("a string", br#""daemon/status""#.to_vec(), -32600),
        ("null", b"null".to_vec(), -32600),
        ("object id", br#"{"jsonrpc":"2.0","id":{},"method":"daemon/status"}"#.to_vec(), -32600),
        ("numeric method", br#"{"jsonrpc":"2.0","id":1,"method":5}"#.to_vec(), -32600),
        ("params not a structure", br#"{"jsonrpc":"2.0","id":1,"method":"session/get","params":7}"#.to_vec(), -32602),
    ];
    for (what, line, code) in cases {
        c.send_raw(&line);
        let reply = c.read();
        assert_eq!(reply["error"]["code"], code, "{what}: {reply}");
        assert!(!reply["error"]["message"].as_str().unwrap_or_default().is_empty(), "{what}: no message: {reply}");
        assert_eq!(c.ok("daemon/status", json!({}))["pid"], json!(daemon.pid()), "{what}: connection broken");
    }
    // A batch of non-requests gets one error per item, however deeply nested.
    let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
    for (what, line, items) in
        [("two non-requests", "[1, \"x\"]".to_owned(), 2), ("a million levels of nesting", deep, 1)]
    {
        c.send_raw(line.as_bytes());
        let reply = c.read();
        let errors = reply.as_array().unwrap_or_else(|| panic!("{what}: a batch gets an array: {reply}"));
        assert!(errors.len() == items && errors.iter().all(|i| i["error"]["code"] == -32600), "{what}: {reply}");
        assert_eq!(c.ok("daemon/status", json!({}))["pid"], json!(daemon.pid()), "{what}: connection broken");
    }
    // The HTTP framing: a malformed body gets a parse error, and the next request works.
    let (_, body) = http_post(&daemon.socket, "{not json");
    let reply: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("HTTP parse error body {body:?}: {e}"));
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    let (code, _) = http_post(&daemon.socket, r#"{"jsonrpc":"2.0","id":1,"method":"daemon/status"}"#);
    assert_eq!(code, 200);
    assert_serving(&daemon);
}

/// One reply line from a raw connection, parsed.
fn read_json_line(r: &mut BufReader<UnixStream>) -> Value {
    let mut line = String::new();
    let n = r.read_line(&mut line).expect("read a reply line");
    assert!(n > 0, "the daemon closed the connection instead of replying");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad reply {line:?}: {e}"))
}

/// POST `body` and read the reply up to EOF, or up to a reset after it: a
/// server refusing a body it did not read closes with the rest unread, and
/// on a Unix socket that ends the reply with ECONNRESET instead of EOF.
fn http_post_refused_body(socket: &Path, body: &str) -> (u16, String) {
    let mut s = UnixStream::connect(socket).expect("connect");
    s.set_read_timeout(Some(swival_tests::IO_TIMEOUT)).unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    // The server may answer and close before the body is all written.
    let _ = s.write_all(head.as_bytes()).and_then(|()| s.write_all(body.as_bytes()));
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match std::io::Read::read(&mut s, &mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("reading the HTTP reply failed: {e}"),
        }
    }
    let out = String::from_utf8_lossy(&out).into_owned();
    let status = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out)
}

#[test]
fn without_a_trust_store_a_plain_http_provider_still_works_and_the_log_says_why_https_will_not() {
    let env = TestEnv::new();
    // An empty certificate file as the only source: no certificate at all.
    let empty = env.root().join("no-certificates.pem");
    std::fs::write(&empty, "").unwrap();
    let mut cmd = env.command(&swival_tests::bin("swivald"));
    cmd.env("SSL_CERT_FILE", &empty);
    let daemon = Daemon::spawn(&env, cmd, &[]).unwrap_or_else(|e| panic!("swivald did not start: {e}\n{}", env.log()));
    let project = env.project("p");
    let mock = MockProvider::start(vec![Step::text("fine")]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &project, &mock, json!({}));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    let r = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(r["answer"], "fine", "{r}");
    assert!(env.log().contains("cannot use the system's trust store"), "{}", env.log());
}
