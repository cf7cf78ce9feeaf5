//! `bench subscribers [SWIVALD]`: what a subscriber that stops reading
//! costs the daemon while a session streams. 100 newline-delimited and 20
//! WebSocket subscribers subscribe and never read while a session streams
//! fifty answers of about 16 KB; the daemon's RSS before and after, per
//! stalled subscriber. `SWIVALD` names another daemon binary to measure
//! (the previous commit's, for a comparison on the same machine);
//! `BENCH_REPEAT` (600) sets the answers' length in 27-byte phrases,
//! `BENCH_ND` and `BENCH_WS` the number of each kind of subscriber.

use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::net::UnixStream;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{rss_kib, Daemon, NdConn, TestEnv};

/// Newline-delimited and WebSocket subscribers that never read
/// (`BENCH_ND`, `BENCH_WS` change them).
fn counts() -> (usize, usize) {
    let get = |k: &str, d| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    (get("BENCH_ND", 100), get("BENCH_WS", 20))
}

fn run(c: &mut NdConn, sid: &Value) {
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
}

fn ws_subscriber(daemon: &Daemon, subscribe: &str) -> UnixStream {
    let mut s = swival_tests::ws::connect(&daemon.socket);
    s.write_all(&swival_tests::ws::text(subscribe)).unwrap();
    s
}

pub fn subscribers(daemon_binary: Option<String>) {
    let env = TestEnv::new();
    env.daemon_settings("subscriber_stall_s = 600");
    let daemon = match &daemon_binary {
        Some(path) => Daemon::spawn(&env, env.command(std::path::Path::new(path)), &[]).expect("start swivald"),
        None => env.start_daemon(),
    };
    let answer = "the answer goes on and on. "
        .repeat(std::env::var("BENCH_REPEAT").ok().and_then(|v| v.parse().ok()).unwrap_or(600));
    let mut steps = vec![Step::text("warm")];
    steps.extend((0..50).map(|_| Step::text(&answer)));
    let mock = MockProvider::start(steps);
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let sid = c.ok("session/create", json!({"base_dir": env.project("p"), "config": config}))["session_id"].clone();
    run(&mut c, &sid);
    let (nd, ws) = counts();
    let before = rss_kib(daemon.pid());
    let subscribe =
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/subscribe", "params": {"session_id": sid}}).to_string();
    let mut held: Vec<UnixStream> = (0..nd)
        .map(|_| {
            let mut s = UnixStream::connect(&daemon.socket).unwrap();
            s.write_all(format!("{subscribe}\n").as_bytes()).unwrap();
            s
        })
        .collect();
    held.extend((0..ws).map(|_| ws_subscriber(&daemon, &subscribe)));
    for _ in 0..50 {
        run(&mut c, &sid);
    }
    // What is still on its way to the subscribers has settled.
    c.ok("daemon/status", json!({}));
    let after = rss_kib(daemon.pid());
    let per = (after.saturating_sub(before)) as f64 / (nd + ws).max(1) as f64;
    println!(
        "daemon: {}\nRSS before: {before} KiB, after {nd} newline-delimited and {ws} WebSocket subscribers that never read while 51 runs streamed: {after} KiB\nper stalled subscriber: {per:.0} KiB",
        daemon_binary.as_deref().unwrap_or("this build")
    );
    drop(held);
}
