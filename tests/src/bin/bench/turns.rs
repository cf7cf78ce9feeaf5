//! The per-turn measures: a 6-call task on one session, and many
//! sessions at once. `bench turns` runs only these and prints them (for
//! iterating on the daemon's CPU per turn; BENCHMARKS.md is not touched).
//! With `SWIVALD_BENCH_WRAPPER` set (e.g. `valgrind --tool=callgrind`),
//! the daemon runs under that command and is stopped with SIGTERM at the
//! end, so a profiler writes its output. With `SWIVALD_BENCH_FILTERS` set
//! to a JSON list of filter stages (e.g.
//! `[{"command": "/path/worker.py", "mode": "persistent"}]`), the 6-call
//! runs go through them: for profiling a filter mode the same way.
//! `bench round-trips` prints the `daemon/status` round trips alone, the
//! wrapper applying too.

use super::{micros, millis, percentile};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{Daemon, NdConn, TestEnv};

/// Runs of the 6-call task measured.
pub const SIX_CALL_RUNS: u32 = 60;

/// [`SIX_CALL_RUNS`] runs of the 6-call task through `filters` (a list of
/// stages, usually none): wall time per turn of each (sorted), and the
/// daemon's CPU time per turn over them.
pub fn six_call_runs(nd: &mut NdConn, project: &Path, pid: i32, filters: &Value) -> (Vec<Duration>, Duration) {
    let cpu_before = cpu_time(pid);
    let mut per_turn: Vec<Duration> =
        (0..SIX_CALL_RUNS).map(|_| six_call_turn(nd, project, filters.clone()).0).collect();
    per_turn.sort();
    (per_turn, cpu_time(pid).saturating_sub(cpu_before) / (SIX_CALL_RUNS * 7))
}

/// This build's swivald, run through `SWIVALD_BENCH_WRAPPER` when set (a
/// profiler, or a script running another binary for a comparison).
pub fn wrapped_daemon(env: &TestEnv) -> Daemon {
    match std::env::var("SWIVALD_BENCH_WRAPPER") {
        Ok(wrapper) => {
            let mut words = wrapper.split_whitespace();
            let mut cmd = env.command(Path::new(words.next().expect("a wrapper command")));
            cmd.args(words).arg(swival_tests::bin("swivald"));
            Daemon::spawn(env, cmd, &[]).unwrap_or_else(|e| panic!("swivald did not start: {e}\n{}", env.log()))
        }
        Err(_) => env.start_daemon(),
    }
}

/// `bench turns [ROUNDS]`: the 6-call runs and ROUNDS (default 3) rounds of
/// 64 sessions × 10 turns, printed.
pub fn turns_only(rounds: usize) {
    let env = TestEnv::new();
    let daemon = wrapped_daemon(&env);
    let project = env.project("bench");
    std::fs::write(project.join("a.txt"), "hello\n").unwrap();
    let mut nd = daemon.nd();
    let before = cpu_times(daemon.pid());
    let filters = match std::env::var("SWIVALD_BENCH_FILTERS") {
        Ok(list) => serde_json::from_str(&list).expect("SWIVALD_BENCH_FILTERS is a JSON list of filter stages"),
        Err(_) => json!([]),
    };
    let (per_turn, cpu) = six_call_runs(&mut nd, &project, daemon.pid(), &filters);
    let after = cpu_times(daemon.pid());
    let turns = SIX_CALL_RUNS * 7;
    println!(
        "6-call task: wall per turn p50 {} / p99 {}; daemon CPU per turn {} (user {}, system {})",
        millis(percentile(&per_turn, 0.5)),
        millis(percentile(&per_turn, 0.99)),
        micros(cpu),
        micros((after.0 - before.0) / turns),
        micros((after.1 - before.1) / turns),
    );
    for _ in 0..rounds {
        let before = cpu_times(daemon.pid());
        let r = concurrent_round(&daemon, &project, 64, 10);
        let after = cpu_times(daemon.pid());
        let mut turns = r.turns.clone();
        turns.sort();
        println!(
            "64 × 10: {:.0} turns/s, wall per turn p50 {} / p99 {}, daemon CPU per turn {} (user {}, system {})",
            r.throughput,
            millis(percentile(&turns, 0.5)),
            millis(percentile(&turns, 0.99)),
            micros(r.cpu_per_turn),
            micros((after.0 - before.0) / 640),
            micros((after.1 - before.1) / 640),
        );
    }
    drop(nd);
    let mut daemon = daemon;
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    daemon.wait_exit();
}

/// CPU time (user + system) process `pid` has used so far.
pub fn cpu_time(pid: i32) -> Duration {
    let (user, system) = cpu_times(pid);
    user + system
}

/// User and system CPU time process `pid` has used so far.
fn cpu_times(pid: i32) -> (Duration, Duration) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<u64> = rest.split_whitespace().map(|f| f.parse().unwrap_or(0)).collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let at = |i: usize| Duration::from_secs_f64(fields.get(i).copied().unwrap_or(0) as f64 / hz);
    (at(11), at(12))
}

/// A task of `calls` read_file calls and a final answer (each call's
/// `limit` differs, so the loop guards see no repeat).
pub fn read_calls(calls: usize) -> Vec<Step> {
    let mut s: Vec<Step> = (0..calls)
        .map(|i| Step::tool_call(&format!("c{i}"), "read_file", json!({"file_path": "a.txt", "limit": 100 + i})))
        .collect();
    s.push(Step::text("done"));
    s
}

/// Create a session on `mock` in `project` without history; returns its id.
pub fn session(nd: &mut NdConn, project: &Path, mock: &MockProvider) -> String {
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let r = nd.ok("session/create", json!({"base_dir": project, "config": cfg}));
    r["session_id"].as_str().expect("session id").to_owned()
}

/// What one round of concurrent sessions measured.
pub struct Round {
    /// Turns finished per second, from the first run/start to the last run_finished.
    pub throughput: f64,
    /// Wall time of every turn, from its turn_started to the next turn_started or run_finished, as a subscriber sees them.
    pub turns: Vec<Duration>,
    /// The daemon's CPU time per turn.
    pub cpu_per_turn: Duration,
}

/// `sessions` sessions × `turns` turns at once (each turn one read_file call, the last the answer),
/// every session followed by one subscriber connection.
pub fn concurrent_round(daemon: &Daemon, project: &Path, sessions: usize, turns: usize) -> Round {
    let mocks: Vec<MockProvider> = (0..sessions).map(|_| MockProvider::start(read_calls(turns - 1))).collect();
    let mut ctl = daemon.nd();
    let mut sub = daemon.nd();
    let ids: Vec<String> = mocks.iter().map(|m| session(&mut ctl, project, m)).collect();
    for id in &ids {
        sub.ok("session/subscribe", json!({"session_id": id, "from_seq": 1}));
    }
    let cpu_before = cpu_time(daemon.pid());
    let started = Instant::now();
    for id in &ids {
        ctl.ok("run/start", json!({"session_id": id, "task": "read a.txt"}));
    }
    let mut stamps: HashMap<String, Vec<Instant>> = HashMap::new();
    let mut finished = 0;
    while finished < sessions {
        let msg = sub.read();
        let ev: &Value = &msg["params"]["result"];
        let kind = ev["type"].as_str().unwrap_or_default();
        if kind == "turn_started" || kind == "run_finished" {
            stamps.entry(ev["session_id"].as_str().unwrap_or_default().to_owned()).or_default().push(Instant::now());
        }
        if kind == "run_finished" {
            assert_eq!(ev["outcome"], "success", "{ev}");
            finished += 1;
        }
    }
    let elapsed = started.elapsed();
    let cpu = cpu_time(daemon.pid()).saturating_sub(cpu_before);
    let total = (sessions * turns) as u32;
    let turns: Vec<Duration> = stamps.values().flat_map(|s| s.windows(2).map(|w| w[1] - w[0])).collect();
    assert_eq!(turns.len(), total as usize, "every turn was seen");
    Round { throughput: f64::from(total) / elapsed.as_secs_f64(), turns, cpu_per_turn: cpu / total }
}

/// One 6-call run with `filters` on a fresh session: its wall time per
/// turn, and the last request the provider saw.
pub fn six_call_turn(nd: &mut NdConn, project: &Path, filters: Value) -> (Duration, Value) {
    let mock = MockProvider::start(read_calls(6));
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true, "filters": filters});
    let sid = nd.ok("session/create", json!({"base_dir": project, "config": cfg}))["session_id"].clone();
    let t = Instant::now();
    let run = nd.ok("run/start", json!({"session_id": sid, "task": "read a.txt six times"}))["run_id"].clone();
    let r = nd.ok("run/wait", json!({"run_id": run}));
    let turn = t.elapsed() / 7;
    assert_eq!(r["outcome"], "success", "{r}");
    (turn, mock.requests().pop().expect("the provider was called"))
}

/// `bench round-trips`: the round trips alone, printed (the daemon through
/// `SWIVALD_BENCH_WRAPPER` when set).
pub fn round_trips_only() {
    let env = swival_tests::TestEnv::new();
    let daemon = wrapped_daemon(&env);
    let mut nd = daemon.nd();
    let mut report = super::Report::default();
    drop(super::round_trips(&mut report, &daemon, &mut nd));
    for (measure, result, _) in &report.rows {
        println!("{measure}: {result}");
    }
}
