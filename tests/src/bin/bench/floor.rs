//! `bench floor [TURNS]`: what the least a turn must do costs on this
//! machine, without swivald — the floor under "swivald CPU time per turn".
//!
//! A child process does, per turn, only what no design of the daemon can
//! skip: send the chat request the last call of a 6-call task sends
//! (captured from swivald first) to the mock over HTTP with the daemon's
//! HTTP client (`Provider::http_client`, one kept-alive connection), read the streamed
//! reply and parse each SSE chunk as JSON, commit one event row to SQLite
//! (WAL, `synchronous = NORMAL`, as the store does), and write one
//! notification line to a Unix socket read by the parent. It runs on one
//! thread (a current-thread runtime, the statement inline), so no wake-up
//! of another thread is in it. Its CPU time (user + system, all its
//! threads, from `getrusage`) per turn is printed.
//!
//! swivald does more per turn than this (the tool call itself, the
//! conversation and report, events for the call, the tool and its result,
//! a run's RPCs and session set-up spread over its turns), so its CPU per
//! turn cannot go below this number on the same machine.

use super::micros;
use super::turns::six_call_turn;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::Duration;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

/// Turns measured by `bench floor` unless told otherwise.
const DEFAULT_TURNS: usize = 2000;
/// Turns measured in the full benchmark.
pub const FULL_RUN_TURNS: usize = 1000;
/// Turns run first and not counted (connection set-up, caches).
const WARM_UP: usize = 50;

/// The floor's CPU time per turn.
pub struct Floor {
    /// User time per turn.
    pub user: Duration,
    /// System time per turn.
    pub system: Duration,
}

impl Floor {
    /// User plus system time per turn.
    pub fn total(&self) -> Duration {
        self.user + self.system
    }
}

/// `bench floor [TURNS]`: capture a request from swivald, then measure.
pub fn floor(turns: Option<usize>) {
    let turns = turns.unwrap_or(DEFAULT_TURNS);
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("floor");
    std::fs::write(project.join("a.txt"), "hello\n").unwrap();
    let request = six_call_turn(&mut daemon.nd(), &project, json!([])).1;
    drop(daemon);
    let floor = measure(&request, turns);
    println!(
        "floor of a turn ({turns} turns, a {:.1} KB request): CPU per turn {} (user {}, system {})",
        serde_json::to_vec(&request).unwrap().len() as f64 / 1e3,
        micros(floor.total()),
        micros(floor.user),
        micros(floor.system),
    );
}

/// Run the child for `turns` turns (after a warm-up) sending `request`.
pub fn measure(request: &Value, turns: usize) -> Floor {
    let dir = tempfile::tempdir().unwrap();
    let request_file = dir.path().join("request.json");
    std::fs::write(&request_file, serde_json::to_vec(request).unwrap()).unwrap();
    let steps: Vec<Step> = (0..WARM_UP + turns)
        .map(|i| Step::tool_call(&format!("c{i}"), "read_file", json!({"file_path": "a.txt", "limit": 100 + i})))
        .collect();
    let mock = MockProvider::start(steps);
    let (ours, theirs) = UnixStream::pair().unwrap();
    let reader = std::thread::spawn(move || BufReader::new(ours).lines().map_while(Result::ok).count());
    // No proxy variables: the request goes straight to the mock, as swivald's do in the benchmark.
    let child = Command::new(std::env::current_exe().unwrap())
        .env_clear()
        .arg("floor-child")
        .arg(format!("{}/chat/completions", mock.base_url()))
        .arg(&request_file)
        .arg(dir.path().join("floor.db"))
        .arg(turns.to_string())
        .stdout(std::os::fd::OwnedFd::from(theirs))
        .stderr(Stdio::piped())
        .output()
        .expect("run the floor child");
    let notified = reader.join().unwrap();
    let report = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "the floor child failed: {report}");
    assert_eq!(notified, WARM_UP + turns, "one notification line per turn");
    let cpu: Value = serde_json::from_str(report.trim()).unwrap_or_else(|e| panic!("{e}: {report}"));
    let us = |k: &str| Duration::from_nanos((cpu[k].as_f64().expect("a number") * 1e3) as u64);
    Floor { user: us("user_us"), system: us("system_us") }
}

/// The child: `bench floor-child URL REQUEST_FILE DB TURNS`; its stdout is
/// the notification socket; its CPU per turn goes to stderr as JSON.
pub fn floor_child(args: &[String]) {
    let [url, request_file, db, turns] = args else { panic!("bench floor-child URL REQUEST_FILE DB TURNS") };
    let turns: usize = turns.parse().expect("a number of turns");
    let body = bytes::Bytes::from(std::fs::read(request_file).unwrap());
    let db = rusqlite::Connection::open(db).unwrap();
    db.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
         CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
             PRIMARY KEY (session_id, seq)) WITHOUT ROWID;",
    )
    .unwrap();
    let mut insert = db.prepare("INSERT INTO events (session_id, seq, body) VALUES (?1, ?2, ?3)").unwrap();
    let mut out = std::io::stdout().lock();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = swivald::provider_http_client();
    let event = r#"{"type":"tool_call_started","run_id":"r-0123456789abcdef","call_id":"c1","name":"read_file","arguments":{"file_path":"a.txt","limit":100}}"#;
    let mut started = None;
    for i in 0..WARM_UP + turns {
        if i == WARM_UP {
            started = Some(cpu_us());
        }
        let chunks = rt.block_on(async {
            let response = client
                .post(url)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .expect("the mock answers");
            let text = response.bytes().await.expect("the whole reply");
            let mut chunks = 0;
            for line in text.split(|&b| b == b'\n') {
                if let Some(data) = line.strip_prefix(b"data: ") {
                    if data != b"[DONE]" {
                        let _: Value = serde_json::from_slice(data).expect("a JSON chunk");
                        chunks += 1;
                    }
                }
            }
            chunks
        });
        assert!(chunks > 0, "the mock streamed no chunk");
        insert.execute(rusqlite::params!["s-0123456789abcdef", i as i64, event]).unwrap();
        writeln!(out, r#"{{"jsonrpc":"2.0","method":"session/event","params":{{"seq":{i},"event":{event}}}}}"#)
            .unwrap();
        out.flush().unwrap();
    }
    let (user0, system0) = started.expect("warm-up ran");
    let (user, system) = cpu_us();
    let n = turns as f64;
    eprintln!("{}", json!({"user_us": (user - user0) / n, "system_us": (system - system0) / n}));
}

/// This process's CPU time so far (all its threads), user and system, in
/// microseconds.
fn cpu_us() -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut usage), 0, "getrusage");
        usage
    };
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    (us(usage.ru_utime), us(usage.ru_stime))
}
