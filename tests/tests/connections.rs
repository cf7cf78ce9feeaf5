//! What connections may cost the daemon, against the real swivald binary:
//! idle and stalled connections never lock a new client out, idle ones are
//! closed after `idle_timeout_s`, HTTP heads must arrive within
//! `header_read_timeout_s`, batches are bounded by `max_batch_len`.
//!
//! Nothing here depends on timing to pass: a closed connection is awaited
//! as an event (EOF), with the harness's IO timeout only as a safety net.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use swival_tests::{http_post, init_params, rss_kib, Daemon, TestEnv, IO_TIMEOUT};

/// An HTTP/1.1 request head cut off in the middle of a header.
const PARTIAL_HEAD: &[u8] = b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Ty";

/// Let this process (and the daemon it starts, which inherits the limit)
/// open as many files as the hard limit allows.
fn raise_open_file_limit(needed: u64) {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write `lim`.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = lim.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    // rlim_t is not u64 everywhere.
    #[allow(clippy::unnecessary_cast)]
    if (lim.rlim_cur as u64) < needed {
        panic!("this test needs {needed} open files, the hard limit is {}; raise it (ulimit -Hn)", lim.rlim_cur);
    }
}

fn connect(socket: &Path) -> UnixStream {
    let s = UnixStream::connect(socket).unwrap_or_else(|e| panic!("connect {}: {e}", socket.display()));
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s
}

/// Read until the daemon closes `s`; what it sent before. Panics when the
/// IO timeout passes first.
fn read_until_closed(s: &mut UnixStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return out,
            Err(e) => panic!("expected the daemon to close the connection: {e}"),
        }
    }
}

fn register_hook(c: &mut swival_tests::NdConn, name: &str) -> Value {
    c.ok("hooks/register", json!({"name": name, "points": ["before_llm_call"]}))
}

fn assert_status(daemon: &Daemon, status: &Value) {
    assert_eq!(status["pid"], json!(daemon.pid()), "{status}");
}

#[test]
fn two_thousand_idle_connections_do_not_stop_a_new_client_from_getting_status() {
    const IDLE: usize = 2000;
    raise_open_file_limit(2 * IDLE as u64 + 512);
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    // Default settings: max_connections is 1024, so the flood fills the
    // daemon and then keeps pushing on it.
    let mut held = Vec::with_capacity(IDLE);
    for i in 0..IDLE {
        match i % 3 {
            // One complete request answered, then nothing.
            0 => {
                let mut c = daemon.nd();
                assert_status(&daemon, &c.ok("daemon/status", json!({})));
                held.push(Held::Nd(c));
            }
            // Connected, never a byte.
            1 => held.push(Held::Raw(connect(&daemon.socket))),
            // An HTTP request head that never completes.
            _ => {
                let mut s = connect(&daemon.socket);
                s.write_all(PARTIAL_HEAD).unwrap();
                held.push(Held::Raw(s));
            }
        }
    }
    let mut c = daemon.nd();
    assert_status(&daemon, &c.ok("daemon/status", json!({})));
    let (code, body) = http_post(&daemon.socket, r#"{"jsonrpc":"2.0","id":1,"method":"daemon/status"}"#);
    assert_eq!(code, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_status(&daemon, &reply["result"]);
    drop(held);
}

/// A connection the flood test keeps open.
enum Held {
    /// A newline-delimited connection.
    Nd(#[allow(dead_code)] swival_tests::NdConn),
    /// A raw socket.
    Raw(#[allow(dead_code)] UnixStream),
}

#[test]
fn a_full_daemon_evicts_the_longest_idle_connection_and_refuses_only_when_all_are_busy() {
    let env = TestEnv::new();
    env.daemon_settings("max_connections = 3");
    let daemon = env.start_daemon();
    // Two connections hold a subscription (busy); one is idle.
    let mut sub1 = daemon.nd();
    register_hook(&mut sub1, "one");
    let mut sub2 = daemon.nd();
    register_hook(&mut sub2, "two");
    let mut idle = daemon.nd();
    idle.ok("initialize", init_params());

    // A fourth client takes the idle one's place.
    let mut fourth = daemon.nd();
    assert_status(&daemon, &fourth.ok("daemon/status", json!({})));
    idle.expect_closed();

    // Once the fourth holds a subscription too, every connection is busy:
    // a fifth is refused with `overloaded`, on either framing.
    register_hook(&mut fourth, "four");
    let mut fifth = connect(&daemon.socket);
    fifth.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon/status\"}\n").unwrap();
    let refusal = String::from_utf8(read_until_closed(&mut fifth)).unwrap();
    let refusal: Value = serde_json::from_str(refusal.trim()).unwrap_or_else(|e| panic!("{refusal:?}: {e}"));
    assert_eq!(refusal["error"]["code"], -32004, "{refusal}");
    assert!(refusal["error"]["message"].as_str().unwrap().contains("max_connections"), "{refusal}");
    // The daemon refuses after the first byte and closes with the rest
    // unread, which a Unix socket reports as a reset after the reply.
    let mut http = connect(&daemon.socket);
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"daemon/status"}"#;
    let request = format!("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    // The daemon may close after the first byte, before the rest is written:
    // a broken pipe here is the refusal, read below.
    let _ = http.write_all(request.as_bytes());
    let refusal = String::from_utf8(read_until_closed(&mut http)).unwrap();
    assert!(refusal.starts_with("HTTP/1.1 503"), "{refusal}");

    // The busy connections were left alone.
    for c in [&mut sub1, &mut sub2, &mut fourth] {
        assert_status(&daemon, &c.ok("daemon/status", json!({})));
    }
}

#[test]
fn http_clients_stalled_in_their_request_body_do_not_lock_a_new_client_out() {
    let env = TestEnv::new();
    env.daemon_settings("max_connections = 3");
    let daemon = env.start_daemon();
    // Complete heads announcing a body that never fully arrives: while
    // the body is awaited the connection counts as idle, so it can be
    // evicted for a new client.
    let stalled: Vec<UnixStream> = (0..3)
        .map(|_| {
            let mut s = connect(&daemon.socket);
            let head =
                "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
            s.write_all(head.as_bytes()).unwrap();
            s.write_all(b"{\"json").unwrap();
            s
        })
        .collect();
    let mut c = daemon.nd();
    assert_status(&daemon, &c.ok("daemon/status", json!({})));
    drop(stalled);
}

#[test]
fn idle_connection_is_closed_after_idle_timeout_but_one_with_a_subscription_is_not() {
    let env = TestEnv::new();
    env.daemon_settings("idle_timeout_s = 1");
    let daemon = env.start_daemon();
    // The subscriber's last request comes first: were it (wrongly) idle, it
    // would have been idle longer than the others, and closed before them.
    let mut subscriber = daemon.nd();
    register_hook(&mut subscriber, "watcher");
    let mut silent = connect(&daemon.socket);
    let mut idle = daemon.nd();
    assert_status(&daemon, &idle.ok("daemon/status", json!({})));

    idle.expect_closed();
    assert!(read_until_closed(&mut silent).is_empty());
    assert_status(&daemon, &subscriber.ok("daemon/status", json!({})));
    let status = daemon.nd().ok("daemon/status", json!({}));
    assert_eq!(status["connections"], 2, "the subscriber and the one asking: {status}");
}

#[test]
fn oversized_batch_gets_one_error_and_the_connection_keeps_working() {
    let env = TestEnv::new();
    env.daemon_settings("max_batch_len = 4");
    let daemon = env.start_daemon();
    let batch = |n: usize| {
        let calls: Vec<Value> = (0..n).map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "daemon/status"})).collect();
        Value::Array(calls).to_string()
    };
    let mut c = daemon.nd();
    c.send_raw(batch(5).as_bytes());
    let reply = c.read();
    assert_eq!(reply["error"]["code"], -32007, "one error, not one per request: {reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("batch of 5 requests exceeds max_batch_len (4)"), "{message}");
    assert!(message.contains("swivald.toml"), "{message}");
    assert_status(&daemon, &c.ok("daemon/status", json!({})));
    c.send_raw(batch(4).as_bytes());
    assert_eq!(c.read().as_array().map(Vec::len), Some(4), "a batch at the limit is served");

    // HTTP: the same error, and the next request is served.
    let (code, body) = http_post(&daemon.socket, &batch(5));
    assert_eq!(code, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["error"]["code"], -32007, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("max_batch_len (4)"), "{reply}");
    let (_, body) = http_post(&daemon.socket, &batch(4));
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap().as_array().map(Vec::len), Some(4), "{body}");

    // WebSocket: the same error too, and the connection goes on.
    use std::io::Write;
    let mut ws = swival_tests::ws::connect(&daemon.socket);
    ws.write_all(&swival_tests::ws::text(&batch(5))).unwrap();
    let reply: Value = serde_json::from_str(&swival_tests::ws::read(&mut ws)).unwrap();
    assert_eq!(reply["error"]["code"], -32007, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("max_batch_len (4)"), "{reply}");
    ws.write_all(&swival_tests::ws::text(&batch(4))).unwrap();
    let reply: Value = serde_json::from_str(&swival_tests::ws::read(&mut ws)).unwrap();
    assert_eq!(reply.as_array().map(Vec::len), Some(4), "{reply}");
}

#[test]
fn batch_of_three_hundred_thousand_requests_is_refused_without_growing_the_daemon() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    c.ok("initialize", init_params());
    let before = rss_kib(daemon.pid());
    // About 15 MiB, under the default max_message_size.
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"daemon/status"}"#;
    let line = format!("[{}]", vec![call; 314_000].join(","));
    c.send_raw(line.as_bytes());
    let reply = c.read();
    assert_eq!(reply["error"]["code"], -32007, "{}", &reply.to_string()[..200.min(reply.to_string().len())]);
    assert!(reply["error"]["message"].as_str().unwrap().contains("max_batch_len (1024)"), "{reply}");
    assert_status(&daemon, &c.ok("daemon/status", json!({})));
    // The same batch over HTTP.
    let (code, body) = http_post(&daemon.socket, &line);
    assert_eq!(code, 200, "{}", &body[..200.min(body.len())]);
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert!(reply["error"]["message"].as_str().unwrap().contains("max_batch_len (1024)"), "{reply}");
    let after = rss_kib(daemon.pid());
    eprintln!("swivald RSS: {before} KiB before, {after} KiB after refusing the batch on both framings");
    assert!(after / 1024 < 100, "swivald holds {} MiB after refusing the batch twice", after / 1024);
}

#[test]
fn http_client_that_stalls_in_its_request_head_is_disconnected() {
    let env = TestEnv::new();
    env.daemon_settings("header_read_timeout_s = 1");
    let daemon = env.start_daemon();
    // A head cut off in a header, and one cut off in what could still be an
    // HTTP/2 preface (before hyper knows which version it serves).
    for partial in [PARTIAL_HEAD, b"PRI * HTTP/2".as_slice()] {
        let mut s = connect(&daemon.socket);
        s.write_all(partial).unwrap();
        let answer = read_until_closed(&mut s);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer}");
    }
    // A prompt client is still served.
    let (code, body) = http_post(&daemon.socket, r#"{"jsonrpc":"2.0","id":1,"method":"daemon/status"}"#);
    assert_eq!(code, 200, "{body}");
}

#[test]
fn idle_websocket_is_closed_after_idle_timeout_but_one_with_a_subscription_is_not() {
    let env = TestEnv::new();
    env.daemon_settings("idle_timeout_s = 1");
    let daemon = env.start_daemon();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // The subscriber first, as in the newline-delimited test above.
    let (client, _subscription) = rt.block_on(async {
        let client = swivalctl::Client::connect(&daemon.socket).await.unwrap();
        let params: swival_protocol::HookRegisterParams =
            serde_json::from_value(json!({"name": "ws-watcher", "points": ["before_llm_call"]})).unwrap();
        let sub = client.subscribe::<swival_protocol::methods::typed::HooksRegister>(&params).await.unwrap();
        (client, sub)
    });
    // A WebSocket that completes its handshake and then says nothing.
    let mut ws = connect(&daemon.socket);
    ws.write_all(
        b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .unwrap();
    let seen = String::from_utf8_lossy(&read_until_closed(&mut ws)).into_owned();
    assert!(seen.starts_with("HTTP/1.1 101"), "the handshake completed before the close: {seen}");
    let status = rt.block_on(client.status()).expect("the subscribed WebSocket is still served");
    assert_eq!(status.pid as i32, daemon.pid());
}

#[test]
fn client_that_never_reads_its_replies_is_disconnected_instead_of_buffered() {
    let env = TestEnv::new();
    env.daemon_settings("max_reply_buffer_bytes = 65536");
    let daemon = env.start_daemon();
    let mut other = daemon.nd();
    other.ok("initialize", init_params());
    let mut s = connect(&daemon.socket);
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    let request = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon/status\"}\n".repeat(1000);
    // Up to 50 MB of requests, never reading a reply: the daemon must hang
    // up long before they are all written.
    let mut closed = None;
    for _ in 0..1000 {
        if let Err(e) = s.write_all(&request) {
            closed = Some(e);
            break;
        }
    }
    let e = closed.expect("the daemon kept reading requests whose replies nobody reads");
    assert!(
        matches!(e.kind(), std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset),
        "the daemon should have closed the connection: {e}"
    );
    assert!(env.log().contains("max_reply_buffer_bytes is 65536"), "{}", env.log());
    assert_status(&daemon, &other.ok("daemon/status", json!({})));
}
