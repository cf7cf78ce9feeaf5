//! What a Swival-contract filter costs when the model takes its time:
//! `bench filter-latency [ROUNDS]` prints it, and the full run reports it.
//! The mock answers every call after [`MODEL_LATENCY`]; a 6-call task runs
//! with no filter, then with a Python identity filter (one process per
//! call: the request JSON on stdin, `{"messages": [...]}` on stdout) as
//! `mode = "oneshot"`, at `prespawn = 1` and at `prespawn = 2`, and at
//! `prespawn = 1` once more with a filter that ends with `os._exit(0)`,
//! skipping the interpreter's teardown (what is left of a call once the
//! start-up is hidden). Each round runs every configuration once, in a
//! rotating order, so all of them see the same load on the machine.
//!
//! What is measured per call is the daemon's side of it: from the previous
//! answer leaving the mock (from `run/start` for the first call) to the
//! request arriving at the mock. The model's 200 ms, and the jitter of the
//! mock's timer, are not in it; the filter, the tool call and the request
//! building are. A prespawned process is meant to start during the 200 ms
//! before, so its start-up is not in it either.

use super::text::load_average;
use super::turns::read_calls;
use super::{millis, percentile, Report};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use swival_tests::mock::MockProvider;
use swival_tests::{NdConn, TestEnv};

/// How long the mock takes to answer each call: a fast hosted model.
pub const MODEL_LATENCY: Duration = Duration::from_millis(200);

/// Rounds in the full benchmark (about 7 s each, and one more not
/// counted); `bench filter-latency`
/// runs [`DEFAULT_ROUNDS`] unless told otherwise.
pub const FULL_RUN_ROUNDS: usize = 3;

/// Rounds of `bench filter-latency` without an argument.
const DEFAULT_ROUNDS: usize = 10;

/// Calls per run: six tool calls and the answer.
const CALLS: u32 = 7;

/// The shebang of the Python filters: the interpreter itself, not a
/// version-manager shim in front of it.
pub fn python_shebang() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "#!/usr/bin/python3"
    } else {
        "#!/usr/bin/env python3"
    }
}

/// A Swival-contract identity filter in `dir`: it reads the request from
/// stdin and writes its messages back unchanged.
pub fn identity_filter(dir: &Path) -> PathBuf {
    let body = format!(
        "{}\nimport json, sys\nreq = json.load(sys.stdin)\nprint(json.dumps({{'messages': req['messages']}}))\n",
        python_shebang()
    );
    swival_tests::script(dir, "identity.py", &body)
}

/// The same filter ending with `os._exit(0)` once its output is flushed:
/// the interpreter's teardown (freeing every object and module) is skipped.
fn quick_exit_filter(dir: &Path) -> PathBuf {
    let body = format!(
        "{}\nimport json, os, sys\nreq = json.load(sys.stdin)\nprint(json.dumps({{'messages': req['messages']}}), \
         flush=True)\nos._exit(0)\n",
        python_shebang()
    );
    swival_tests::script(dir, "identity-quick-exit.py", &body)
}

/// The label of the `os._exit(0)` configuration.
const QUICK_EXIT: &str = "prespawn = 1, the filter ending with `os._exit(0)`";

/// What one filter configuration added per call over the unfiltered
/// runs, in milliseconds (negative when the filtered runs were faster).
pub struct Added {
    /// The configuration (`oneshot`, `prespawn = 1`, ...).
    pub label: &'static str,
    /// The daemon's side of a call (p50), filtered minus unfiltered.
    pub p50: f64,
    /// The daemon's side of a filtered call at p99, minus an unfiltered
    /// call's p50 (a difference of two p99s is noise on either side and
    /// can come out negative).
    pub p99: f64,
    /// Wall time per call of whole runs, filtered minus unfiltered: the
    /// median over the rounds.
    pub wall: f64,
}

/// Milliseconds of `a` minus `b`, signed.
fn minus(a: Duration, b: Duration) -> f64 {
    (a.as_secs_f64() - b.as_secs_f64()) * 1e3
}

/// `ms` milliseconds for the report.
fn ms(ms: f64) -> String {
    format!("{ms:.2} ms")
}

/// Everything one measurement found.
pub struct Measured {
    /// One entry per filter configuration.
    pub added: Vec<Added>,
    /// The daemon's side of an unfiltered call (p50, p99).
    pub plain: (Duration, Duration),
    /// Calls measured per configuration.
    pub calls: usize,
    /// The load average when the rounds started.
    pub load: String,
    /// What the identity filter alone takes to serve a call once started,
    /// without swivald (p50): as written, and ending with `os._exit(0)`.
    pub alone: (Duration, Duration),
    /// The size of the request the filter is given, in KB.
    pub payload_kb: f64,
}

/// One 6-call run with `filters` on a fresh session, the mock answering
/// after [`MODEL_LATENCY`]: the daemon's side of each call, the run's wall
/// time, and the last request the provider saw.
fn run(nd: &mut NdConn, project: &Path, filters: &Value) -> (Vec<Duration>, Duration, Value) {
    let mock = MockProvider::start(read_calls(CALLS as usize - 1)).with_latency(MODEL_LATENCY);
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true, "filters": filters});
    let sid = nd.ok("session/create", json!({"base_dir": project, "config": cfg}))["session_id"].clone();
    let started = Instant::now();
    let run = nd.ok("run/start", json!({"session_id": sid, "task": "read a.txt six times"}))["run_id"].clone();
    let r = nd.ok("run/wait", json!({"run_id": run}));
    let wall = started.elapsed();
    assert_eq!(r["outcome"], "success", "{r}");
    let mut since = started;
    let calls = mock
        .request_times()
        .iter()
        .map(|t| {
            let own = t.arrived.saturating_duration_since(since);
            since = t.answered.expect("every call was answered");
            own
        })
        .collect();
    (calls, wall, mock.requests().pop().expect("the provider was called"))
}

/// What `script` alone takes to serve one call once it has started: a
/// few processes started together and given a second, then each in turn
/// fed `payload`, read to the end and awaited, as swivald does; no
/// swivald. p50.
fn alone(script: &Path, payload: &[u8]) -> Duration {
    let start = || {
        std::process::Command::new(script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start the filter")
    };
    let mut children: Vec<std::process::Child> = (0..15).map(|_| start()).collect();
    std::thread::sleep(Duration::from_secs(1));
    let mut lat: Vec<Duration> = children
        .iter_mut()
        .map(|c| {
            let t = Instant::now();
            // The payload fits in the pipe: written whole before the reply is read.
            c.stdin.take().expect("piped stdin").write_all(payload).unwrap();
            let mut out = Vec::new();
            c.stdout.take().expect("piped stdout").read_to_end(&mut out).unwrap();
            assert!(c.wait().unwrap().success() && out.starts_with(b"{\"messages\""));
            t.elapsed()
        })
        .collect();
    lat.sort();
    percentile(&lat, 0.5)
}

/// `rounds` rounds (after one not counted, which starts the pools) of the
/// configurations in `project`, on the daemon behind `nd`.
pub fn measure(nd: &mut NdConn, project: &Path, rounds: usize) -> Measured {
    let load = load_average();
    std::fs::write(project.join("a.txt"), "hello\n").unwrap();
    let filter = identity_filter(project);
    let quick = quick_exit_filter(project);
    let configs: [(&str, Value); 5] = [
        ("no filter", json!([])),
        ("oneshot", json!([{"command": filter, "mode": "oneshot"}])),
        ("prespawn = 1", json!([{"command": filter, "mode": "oneshot", "prespawn": 1}])),
        ("prespawn = 2", json!([{"command": filter, "mode": "oneshot", "prespawn": 2}])),
        (QUICK_EXIT, json!([{"command": quick, "mode": "oneshot", "prespawn": 1}])),
    ];
    let mut calls: Vec<Vec<Duration>> = vec![Vec::new(); configs.len()];
    let mut walls: Vec<Vec<Duration>> = vec![Vec::new(); configs.len()];
    let mut last = Value::Null;
    for round in 0..=rounds {
        for k in 0..configs.len() {
            let i = (round + k) % configs.len();
            let (own, wall, request) = run(nd, project, &configs[i].1);
            if round > 0 {
                calls[i].extend(own);
                walls[i].push(wall);
            }
            last = request;
        }
    }
    // The stage payload of the last call, as the filter is given it.
    let payload = json!({"provider": "generic", "model": "m", "call_kind": "agent",
        "messages": last["messages"], "tools": last["tools"]})
    .to_string();
    let alone = (alone(&filter, payload.as_bytes()), alone(&quick, payload.as_bytes()));
    for c in &mut calls {
        c.sort();
    }
    let p = |i: usize, q: f64| percentile(&calls[i], q);
    let added = (1..configs.len())
        .map(|i| {
            let mut per_round: Vec<f64> =
                walls[i].iter().zip(&walls[0]).map(|(f, u)| minus(*f, *u) / f64::from(CALLS)).collect();
            per_round.sort_by(f64::total_cmp);
            Added {
                label: configs[i].0,
                p50: minus(p(i, 0.5), p(0, 0.5)),
                p99: minus(p(i, 0.99), p(0, 0.5)),
                wall: per_round[per_round.len() / 2],
            }
        })
        .collect();
    let payload_kb = payload.len() as f64 / 1e3;
    Measured { added, plain: (p(0, 0.5), p(0, 0.99)), calls: calls[0].len(), load, alone, payload_kb }
}

/// The measure's title in BENCHMARKS.md, for `label`.
fn title(label: &str) -> String {
    format!(
        "one filter stage, Python identity filter, {label}, mock at {} ms per call: added wall time per call (p50 / p99)",
        MODEL_LATENCY.as_millis()
    )
}

/// Why `prespawn = 1` still adds what it does: the filter's own run,
/// most of it Python's teardown, which the contract puts on the call.
fn why(m: &Measured) -> String {
    let quick = m.added.iter().find(|a| a.label == QUICK_EXIT).map_or(f64::NAN, |a| a.p50);
    format!(
        "The process is started while the model answers, so what is left is its own run and swivald's side of it. \
         Driven alone (no swivald; started a second before, then fed the {:.1} KB request, read to the end and \
         awaited), the filter takes {} (p50) to serve a call, {} when it ends with `os._exit(0)`: most of it is \
         Python tearing its interpreter down at exit, and Swival's contract makes the exit status part of the \
         answer, so the request waits for it. Through swivald, the filter ending with `os._exit(0)` added {} \
         (p50) in the same rounds; `mode = \"persistent\"` has neither start-up nor teardown. {} calls per configuration; an unfiltered \
         call took {} (p50) of swivald's time between the model's answer and the next request; load average {} \
         when these rounds started.",
        m.payload_kb,
        millis(m.alone.0),
        millis(m.alone.1),
        ms(quick),
        m.calls,
        millis(m.plain.0),
        m.load
    )
}

/// The rows of the full run: the added time per call of each
/// configuration, `prespawn = 1` (the candidate default) held to 2 ms at
/// p50.
pub fn report(report: &mut Report, m: &Measured) {
    for a in &m.added {
        let result = format!("{} / {}", ms(a.p50), ms(a.p99));
        if a.label == "prespawn = 1" {
            report.target(&title(a.label), result, "p50 ≤ 2 ms", (a.p50, 2.0, "ms (p50)"), &why(m));
        } else {
            report.row(title(a.label), result);
        }
    }
}

/// `bench filter-latency [ROUNDS]`: the measure alone, printed, on a
/// daemon of its own; BENCHMARKS.md is not touched.
pub fn filter_latency_only(rounds: Option<usize>) {
    let rounds = rounds.unwrap_or(DEFAULT_ROUNDS);
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut nd = daemon.nd();
    let started = Instant::now();
    let m = measure(&mut nd, &env.project("filter-latency"), rounds);
    println!(
        "mock at {} ms per call; {rounds} rounds, {} calls per configuration; load average {} at the start, {} at the end; {:.0} s",
        MODEL_LATENCY.as_millis(),
        m.calls,
        m.load,
        load_average(),
        started.elapsed().as_secs_f64()
    );
    println!("no filter: the daemon's side of a call {} (p50) / {} (p99)", millis(m.plain.0), millis(m.plain.1));
    println!(
        "the filter alone, once started, serving a {:.1} KB request (p50): {}; ending with `os._exit(0)`: {}",
        m.payload_kb,
        millis(m.alone.0),
        millis(m.alone.1)
    );
    for a in &m.added {
        println!(
            "{}: added per call {} (p50) / {} (p99); whole runs: {} per call (median of rounds)",
            a.label,
            ms(a.p50),
            ms(a.p99),
            ms(a.wall)
        );
    }
}
