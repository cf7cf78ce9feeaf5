//! Subscribers that do not read: over WebSocket, one that leaves its
//! notifications unread past `subscriber_stall_s` is dropped with a last
//! notification saying how to resume; over newline-delimited JSON, a
//! connection whose unread replies pass `max_reply_buffer_bytes` is
//! closed. Either way runs go on and the daemon's memory stays bounded.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{rss_kib, wait_until, TestEnv, IO_TIMEOUT};

/// A mock that makes a run of `turns` turns, each with two tool calls:
/// thousands of events.
fn busy_mock(turns: usize) -> MockProvider {
    let mut steps = Vec::new();
    for i in 0..turns {
        steps.push(Step::tool_calls(vec![
            (&format!("a{i}"), "think", json!({"thought": "one"})),
            (&format!("b{i}"), "think", json!({"thought": "two"})),
        ]));
    }
    steps.push(Step::text("done"));
    MockProvider::start(steps)
}

/// A WebSocket client frame (text, masked with a zero key).
fn ws_text(payload: &str) -> Vec<u8> {
    let mut f = vec![0x81u8];
    let len = payload.len();
    if len < 126 {
        f.push(0x80 | len as u8);
    } else {
        f.push(0x80 | 126);
        f.extend_from_slice(&(len as u16).to_be_bytes());
    }
    f.extend_from_slice(&[0, 0, 0, 0]);
    f.extend_from_slice(payload.as_bytes());
    f
}

/// Read server frames until one's text contains `needle`; every text seen.
fn ws_read_until(s: &mut UnixStream, needle: &str) -> Vec<String> {
    let mut texts = Vec::new();
    loop {
        let mut head = [0u8; 2];
        s.read_exact(&mut head).expect("a frame from the daemon");
        let mut len = u64::from(head[1] & 0x7f);
        if len == 126 {
            let mut b = [0u8; 2];
            s.read_exact(&mut b).unwrap();
            len = u64::from(u16::from_be_bytes(b));
        } else if len == 127 {
            let mut b = [0u8; 8];
            s.read_exact(&mut b).unwrap();
            len = u64::from_be_bytes(b);
        }
        let mut payload = vec![0u8; len as usize];
        s.read_exact(&mut payload).unwrap();
        if head[0] & 0x0f == 0x8 {
            panic!("the daemon closed the WebSocket before {needle:?}");
        }
        let text = String::from_utf8_lossy(&payload).into_owned();
        let found = text.contains(needle);
        texts.push(text);
        if found {
            return texts;
        }
    }
}

#[test]
fn a_websocket_subscriber_that_never_reads_is_dropped_with_a_notice_and_runs_go_on() {
    let env = TestEnv::new();
    env.daemon_settings("subscriber_stall_s = 1");
    let daemon = env.start_daemon();
    let mock = busy_mock(800);
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "max_turns": 1000});
    let project = env.project("p");
    let sid = c.ok("session/create", json!({"base_dir": project, "config": config}))["session_id"].clone();

    let mut ws = UnixStream::connect(&daemon.socket).unwrap();
    ws.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    ws.write_all(
        b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        ws.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "session/subscribe", "params": {"session_id": sid}});
    ws.write_all(&ws_text(&subscribe.to_string())).unwrap();

    // The run is not held back by the subscriber that does not read.
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["outcome"], "success", "{result}");
    wait_until("the stalled subscriber to be dropped", || env.log().contains("dropped a subscriber"));

    // Once it reads again, the last thing it gets says how to resume.
    let texts = ws_read_until(&mut ws, "subscription dropped");
    let notice: Value = serde_json::from_str(texts.last().unwrap()).unwrap();
    let error = notice["params"]["error"].to_string();
    assert!(error.contains("subscriber_stall_s") && error.contains("from_seq"), "{notice}");
    assert!(texts.len() > 100, "events came before the notice");
    // Other requests are served as usual.
    assert_eq!(c.ok("daemon/status", json!({}))["pid"], json!(daemon.pid()));
}

#[test]
fn a_hundred_stuck_newline_subscribers_are_closed_and_memory_stays_bounded() {
    let env = TestEnv::new();
    env.daemon_settings("max_reply_buffer_bytes = 262144");
    let daemon = env.start_daemon();
    let mock = busy_mock(400);
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "max_turns": 1000});
    let project = env.project("p");
    let sid = c.ok("session/create", json!({"base_dir": project, "config": config}))["session_id"].clone();
    let before = rss_kib(daemon.pid());
    let stuck: Vec<UnixStream> = (0..100)
        .map(|_| {
            let mut s = UnixStream::connect(&daemon.socket).unwrap();
            let req = json!({"jsonrpc": "2.0", "id": 1, "method": "session/subscribe", "params": {"session_id": sid}});
            s.write_all(format!("{req}\n").as_bytes()).unwrap();
            s
        })
        .collect();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    wait_until("the stuck connections to be closed", || {
        env.log().matches("closing a connection whose client does not read its replies").count() >= 100
    });
    let after = rss_kib(daemon.pid());
    eprintln!("swivald RSS: {before} KiB before, {after} KiB after 100 stuck subscribers");
    // Each stuck subscriber may cost its connection's reply buffer (256 KiB
    // here), the events queued for it and the allocator's slack: the bound
    // stated in README is 1.3 MiB per stuck subscriber.
    assert!(after < before + 130 * 1024, "swivald grew from {before} KiB to {after} KiB");
    drop(stuck);
}
