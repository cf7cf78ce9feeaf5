//! Subscribers that do not read. A subscription is a cursor over the
//! stored log: one that stops reading holds its place and a few KiB, never
//! the backlog, is never closed for being slow, and when it reads again
//! gets every event from where it was, in order. Only one that reads
//! nothing for `subscriber_stall_s` is dropped, with a last notification
//! saying how to resume. Either way runs go on.

use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::net::UnixStream;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{rss_kib, wait_until, ws, TestEnv, IO_TIMEOUT};

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

/// Run task "t" on `sid` to its end: the result.
fn run_once(c: &mut swival_tests::NdConn, sid: &Value) -> Value {
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}))
}

/// A daemon dropping subscribers that read nothing for a second, and a
/// session on it whose run makes thousands of events: the daemon, the
/// mock, a connection and the session's id.
fn stalling_session(env: &TestEnv) -> (swival_tests::Daemon, MockProvider, swival_tests::NdConn, Value) {
    env.daemon_settings("subscriber_stall_s = 1");
    let daemon = env.start_daemon();
    let mock = busy_mock(800);
    let mut c = daemon.nd();
    // 800 turns of notes: past think's 200 the same note fails each turn,
    // which the loop guards would end as stuck; the stream is the test here.
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "max_turns": 1000,
        "storm_breaker": false});
    let sid = c.ok("session/create", json!({"base_dir": env.project("p"), "config": config}))["session_id"].clone();
    (daemon, mock, c, sid)
}

#[test]
fn a_websocket_subscriber_that_never_reads_is_dropped_with_a_notice_and_runs_go_on() {
    let env = TestEnv::new();
    let (daemon, _mock, mut c, sid) = stalling_session(&env);

    let mut ws = ws_subscribe(&daemon.socket, &sid);

    // The run is not held back by the subscriber that does not read.
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["outcome"], "success", "{result}");
    wait_until("the stalled subscriber to be dropped", || env.log().contains("dropped a subscriber"));

    // Once it reads again, the last thing it gets says how to resume.
    let texts = ws::read_until(&mut ws, "subscription dropped");
    let notice: Value = serde_json::from_str(texts.last().unwrap()).unwrap();
    let error = notice["params"]["error"].to_string();
    assert!(error.contains("subscriber_stall_s") && error.contains("from_seq"), "{notice}");
    assert!(texts.len() > 100, "events came before the notice");
    // Other requests are served as usual.
    assert_eq!(c.ok("daemon/status", json!({}))["pid"], json!(daemon.pid()));
}

/// Open a WebSocket on the daemon's socket and subscribe to `sid`.
fn ws_subscribe(socket: &std::path::Path, sid: &Value) -> UnixStream {
    let mut ws = ws::connect(socket);
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "session/subscribe", "params": {"session_id": sid}});
    ws.write_all(&ws::text(&subscribe.to_string())).unwrap();
    ws
}

/// The seqs of the events in `texts` (notifications; replies skipped).
fn seqs_of<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<u64> {
    texts
        .into_iter()
        .filter_map(|t| serde_json::from_str::<Value>(t).ok())
        .filter(|m| m["method"] == "session/event")
        .map(|m| m["params"]["result"]["seq"].as_u64().unwrap())
        .collect()
}

/// Read newline-delimited messages until the event with seq `last`; the seqs seen.
fn nd_read_through(s: UnixStream, last: u64) -> Vec<u64> {
    use std::io::BufRead;
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut seqs = Vec::new();
    for line in std::io::BufReader::new(s).lines() {
        let line = line.expect("a line from the daemon");
        seqs.extend(seqs_of([line.as_str()]));
        if seqs.last() == Some(&last) {
            break;
        }
    }
    seqs
}

#[test]
fn stalled_subscribers_cost_their_place_not_their_backlog_and_resume_with_no_gap() {
    let env = TestEnv::new();
    env.daemon_settings("subscriber_stall_s = 600");
    let daemon = env.start_daemon();
    // Fifty long answers after a first short one, streamed in pieces.
    let answer = "the answer goes on and on. ".repeat(600);
    let mut steps = vec![Step::text("warm")];
    steps.extend((0..50).map(|_| Step::text(&answer)));
    let mock = MockProvider::start(steps);
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let sid = c.ok("session/create", json!({"base_dir": env.project("p"), "config": config}))["session_id"].clone();
    let run = |c: &mut swival_tests::NdConn| run_once(c, &sid);
    assert_eq!(run(&mut c)["outcome"], "success");
    let before = rss_kib(daemon.pid());

    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "session/subscribe", "params": {"session_id": sid}});
    let nd: Vec<UnixStream> = (0..100)
        .map(|_| {
            let mut s = UnixStream::connect(&daemon.socket).unwrap();
            s.write_all(format!("{req}\n").as_bytes()).unwrap();
            s
        })
        .collect();
    let ws: Vec<UnixStream> = (0..20).map(|_| ws_subscribe(&daemon.socket, &sid)).collect();
    // A fresh client follows everything live while the runs go on.
    let mut fresh = daemon.nd();
    fresh.ok("session/subscribe", json!({"session_id": sid, "from_seq": 1}));
    for _ in 0..25 {
        assert_eq!(run(&mut c)["outcome"], "success");
    }
    let halfway = rss_kib(daemon.pid());
    for _ in 0..25 {
        assert_eq!(run(&mut c)["outcome"], "success");
    }
    let mut live = Vec::new();
    while live.iter().filter(|e: &&Value| e["type"] == "run_finished").count() < 51 {
        let msg = fresh.read();
        if msg["method"] == "session/event" {
            live.push(msg["params"]["result"].clone());
        }
    }
    let last = live.last().unwrap()["seq"].as_u64().unwrap();
    let all: Vec<u64> = (1..=last).collect();
    assert_eq!(live.iter().map(|e| e["seq"].as_u64().unwrap()).collect::<Vec<_>>(), all, "the fresh client saw a gap");
    let streamed = live.iter().map(|e| e.to_string().len()).sum::<usize>() / 1024;
    let after = rss_kib(daemon.pid());
    eprintln!(
        "swivald RSS: {before} KiB before, {halfway} KiB halfway, {after} KiB after 120 stalled subscribers while {streamed} KiB of events streamed"
    );
    // What a stalled subscriber holds does not grow with what streams: the
    // second half of the runs adds (next to) nothing.
    assert!(after < halfway + 120 * 8, "swivald grew from {halfway} KiB to {after} KiB in the second half");
    // Its connection, its place in the log and the line on its way (the
    // answer in run_finished, ~16 KB): ~49 KiB measured in a debug build;
    // 2 MiB before the subscription was a cursor, ~108 KiB while
    // jsonrpsee queued 16 notifications for each (BENCHMARKS.md).
    assert!(after < before + 120 * 64, "swivald grew from {before} KiB to {after} KiB: over 64 KiB per subscriber");

    // Each stalled subscriber reads at last: every event, in order, once.
    for s in nd {
        assert_eq!(nd_read_through(s, last), all, "a newline-delimited subscriber missed events");
    }
    for mut s in ws {
        let texts = ws::read_until(&mut s, &format!("\"seq\":{last},"));
        assert_eq!(seqs_of(texts.iter().map(String::as_str)), all, "a WebSocket subscriber missed events");
    }
    assert!(!env.log().contains("dropped a subscriber") && !env.log().contains("closing a connection"));
}

#[test]
fn a_newline_delimited_subscriber_that_never_reads_is_dropped_naming_where_to_resume_and_resumes_there() {
    let env = TestEnv::new();
    let (daemon, _mock, mut c, sid) = stalling_session(&env);
    let mut stalled = UnixStream::connect(&daemon.socket).unwrap();
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "session/subscribe", "params": {"session_id": sid}});
    stalled.write_all(format!("{req}\n").as_bytes()).unwrap();

    // The run is not held back by the subscriber that does not read.
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    wait_until("the stalled subscriber to be dropped", || env.log().contains("dropped a subscriber"));

    // Reading at last: events from seq 1 with no gap, then the notice.
    use std::io::BufRead;
    stalled.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut seqs = Vec::new();
    let mut notice = Value::Null;
    for line in std::io::BufReader::new(stalled).lines() {
        let msg: Value = serde_json::from_str(&line.expect("a line from the daemon")).unwrap();
        if msg["params"].get("error").is_some() {
            notice = msg;
            break;
        }
        seqs.extend(msg["params"]["result"]["seq"].as_u64());
    }
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "events before the notice came with a gap");
    let error = notice["params"]["error"].as_str().unwrap();
    let resume = format!("from_seq {}", seqs.len() + 1);
    assert!(error.contains("subscriber_stall_s") && error.contains(&resume), "expected {resume:?} in {notice}");
    assert!(seqs.len() > 10, "only {} events came before the notice", seqs.len());

    // Resuming where the notice says gives the next event first.
    let mut again = daemon.nd();
    again.ok("session/subscribe", json!({"session_id": sid, "from_seq": seqs.len() + 1}));
    let first = again.read();
    assert_eq!(first["params"]["result"]["seq"], json!(seqs.len() + 1), "{first}");
    assert_eq!(c.ok("daemon/status", json!({}))["pid"], json!(daemon.pid()));
}

#[test]
fn unsubscribing_on_a_newline_delimited_connection_ends_that_subscription_only() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("one"), Step::text("two")]);
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let sid = c.ok("session/create", json!({"base_dir": env.project("p"), "config": config}))["session_id"].clone();
    let run = |c: &mut swival_tests::NdConn| run_once(c, &sid);

    // Refusals are as before: a session that does not exist, bad params.
    let missing = c.call("session/subscribe", json!({"session_id": "nope"}));
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    assert!(missing["error"]["message"].as_str().unwrap().contains("nope"), "{missing}");
    let bad = c.call("session/subscribe", json!({"from_seq": 1}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");

    let mut s = daemon.nd();
    let kept = s.ok("session/subscribe", json!({"session_id": sid}));
    let ended = s.ok("session/subscribe", json!({"session_id": sid}));
    assert!(kept.is_u64() && ended.is_u64() && kept != ended, "{kept} {ended}");
    assert_eq!(s.ok("session/unsubscribe", json!([ended])), json!(true));
    assert_eq!(s.ok("session/unsubscribe", json!([ended])), json!(false), "already ended");
    assert_eq!(s.ok("session/unsubscribe", json!(["not an id"])), json!(false));
    // Another connection cannot end it.
    assert_eq!(c.ok("session/unsubscribe", json!([kept])), json!(false));

    assert_eq!(run(&mut c)["outcome"], "success");
    assert_eq!(run(&mut c)["outcome"], "success");
    let mut finished = 0;
    while finished < 2 {
        let msg = s.read();
        assert_eq!(msg["params"]["subscription"], kept, "an event of the ended subscription: {msg}");
        finished += usize::from(msg["params"]["result"]["type"] == "run_finished");
    }
}
