//! The benchmark: starts the release daemon and the mock provider at zero
//! latency, measures the numbers BENCHMARKS.md reports, and rewrites that
//! file. Run it with:
//!
//! ```sh
//! cargo build --release --workspace && cargo run --release -p swival-tests --bin bench
//! ```

use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{init_params, TestEnv};

const COMMAND: &str = "cargo build --release --workspace && cargo run --release -p swival-tests --bin bench";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Latencies of `n` calls made by `call`, sorted.
fn measure(n: usize, mut call: impl FnMut()) -> Vec<Duration> {
    for _ in 0..n / 10 {
        call();
    }
    let mut out: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            call();
            t.elapsed()
        })
        .collect();
    out.sort();
    out
}

/// One keep-alive HTTP/1.1 POST; returns the body.
fn http_call(reader: &mut BufReader<UnixStream>, writer: &mut UnixStream, body: &str) -> String {
    write!(
        writer,
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut len = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut buf = vec![0; len];
    reader.read_exact(&mut buf).unwrap();
    String::from_utf8(buf).unwrap()
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned()))
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cpu}, {cores} cores, Linux {}", kernel.trim())
}

fn main() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let pid = daemon.pid();
    let mut rows: Vec<(String, String, String)> = Vec::new();

    let idle_rss = rss_kib(pid);
    rows.push((
        "idle RSS of swivald after start".into(),
        format!("{:.1} MiB", idle_rss as f64 / 1024.0),
        "≤ 20 MB".into(),
    ));

    // Newline-delimited round trip.
    let mut nd = daemon.nd();
    nd.ok("initialize", init_params());
    let lat = measure(20_000, || {
        nd.ok("daemon/status", json!({}));
    });
    rows.push((
        "round trip `daemon/status`, newline-delimited (p50 / p99)".into(),
        format!("{} / {}", micros(percentile(&lat, 0.5)), micros(percentile(&lat, 0.99))),
        "p50 ≤ 100 µs".into(),
    ));

    // HTTP keep-alive round trip.
    let s = UnixStream::connect(&daemon.socket).unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let mut writer = s;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"daemon/status"}"#;
    let lat = measure(10_000, || {
        http_call(&mut reader, &mut writer, body);
    });
    rows.push((
        "round trip `daemon/status`, HTTP POST keep-alive (p50 / p99)".into(),
        format!("{} / {}", micros(percentile(&lat, 0.5)), micros(percentile(&lat, 0.99))),
        "p50 ≤ 100 µs".into(),
    ));

    // WebSocket through the client library.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = rt.block_on(swivalctl::Client::connect(&daemon.socket)).unwrap();
    let lat = measure(10_000, || {
        rt.block_on(client.status()).unwrap();
    });
    rows.push((
        "round trip `daemon/status`, WebSocket via the client library (p50 / p99)".into(),
        format!("{} / {}", micros(percentile(&lat, 0.5)), micros(percentile(&lat, 0.99))),
        "p50 ≤ 100 µs".into(),
    ));

    // A 6-call task: wall time per turn with a zero-latency mock.
    let project = env.project("bench");
    std::fs::write(project.join("a.txt"), "hello\n").unwrap();
    let six = || {
        let mut s: Vec<Step> =
            (0..6).map(|i| Step::tool_call(&format!("c{i}"), "read_file", json!({"file_path": "a.txt"}))).collect();
        s.push(Step::text("done"));
        s
    };
    let mut per_turn = Vec::new();
    for _ in 0..30 {
        let mock = MockProvider::start(six());
        let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
        let sid = nd.ok("session/create", json!({"base_dir": project, "config": cfg}))["session_id"].clone();
        let t = Instant::now();
        let run = nd.ok("run/start", json!({"session_id": sid, "task": "read a.txt six times"}))["run_id"].clone();
        let r = nd.ok("run/wait", json!({"run_id": run}));
        assert_eq!(r["outcome"], "success");
        per_turn.push(t.elapsed() / 7);
    }
    per_turn.sort();
    rows.push((
        "wall time per turn of a 6-call task, mock at zero latency (p50 / p99); upper bound on daemon overhead".into(),
        format!("{} / {}", millis(percentile(&per_turn, 0.5)), millis(percentile(&per_turn, 0.99))),
        "≤ 1 ms".into(),
    ));

    // One filter stage per mode, with a Python identity filter: the extra
    // wall time per turn over the unfiltered runs above.
    // The interpreter itself, not a version-manager shim in front of it.
    let python = if Path::new("/usr/bin/python3").exists() { "#!/usr/bin/python3" } else { "#!/usr/bin/env python3" };
    let oneshot = swival_tests::script(
        &project,
        "identity.py",
        &format!("{python}\nimport json, sys\nreq = json.load(sys.stdin)\nprint(json.dumps({{'messages': req['messages']}}))\n"),
    );
    let persistent = swival_tests::script(
        &project,
        "identity-worker.py",
        &format!("{python}\nimport json, sys\nfor line in sys.stdin:\n    req = json.loads(line)\n    print(json.dumps({{'id': req['id'], 'messages': req['messages']}}), flush=True)\n"),
    );
    let base_turn = percentile(&per_turn, 0.5);
    for (label, stage) in [
        ("oneshot", json!({"command": oneshot, "mode": "oneshot"})),
        ("prespawn = 2", json!({"command": oneshot, "mode": "oneshot", "prespawn": 2})),
        ("persistent", json!({"command": persistent, "mode": "persistent"})),
    ] {
        let mut turns = Vec::new();
        for _ in 0..15 {
            let mock = MockProvider::start(six());
            let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true, "filters": [stage.clone()]});
            let sid = nd.ok("session/create", json!({"base_dir": project, "config": cfg}))["session_id"].clone();
            let t = Instant::now();
            let run = nd.ok("run/start", json!({"session_id": sid, "task": "read a.txt six times"}))["run_id"].clone();
            let r = nd.ok("run/wait", json!({"run_id": run}));
            assert_eq!(r["outcome"], "success", "{r}");
            turns.push(t.elapsed() / 7);
        }
        turns.sort();
        let cost = percentile(&turns, 0.5).saturating_sub(base_turn);
        rows.push((
            format!("one filter stage, Python identity filter, {label}: added wall time per call (p50)"),
            millis(cost),
            if label == "persistent" { "≤ 0.5 ms".into() } else { "".into() },
        ));
    }

    // The same task through `swivalctl run`, end to end.
    let mut e2e = Vec::new();
    for _ in 0..20 {
        let mock = MockProvider::start(six());
        let t = Instant::now();
        let out = env
            .swivalctl(&daemon, &project)
            .args([
                "run",
                "--provider",
                "generic",
                "--base-url",
                &mock.base_url(),
                "--model",
                "m",
                "--no-history",
                "-q",
                "read a.txt",
            ])
            .output()
            .unwrap();
        assert!(out.status.success());
        e2e.push(t.elapsed());
    }
    e2e.sort();
    rows.push((
        "`swivalctl run` of a 6-call task, end to end (p50 / p99)".into(),
        format!("{} / {}", millis(percentile(&e2e, 0.5)), millis(percentile(&e2e, 0.99))),
        "≤ 50 ms".into(),
    ));

    // Memory per idle session.
    let before = rss_kib(pid);
    let n = 500;
    for _ in 0..n {
        nd.ok(
            "session/create",
            json!({"base_dir": project, "config": {"provider": "generic", "base_url": "http://127.0.0.1:9/v1"}}),
        );
    }
    let after = rss_kib(pid);
    rows.push((
        format!("RSS per idle session ({n} sessions created)"),
        format!("{:.1} KiB", (after.saturating_sub(before)) as f64 / n as f64),
        "≤ 256 KB".into(),
    ));
    rows.push((
        "RSS of swivald after all of the above".into(),
        format!("{:.1} MiB", rss_kib(pid) as f64 / 1024.0),
        "".into(),
    ));

    // Cold start to first reply.
    drop(nd);
    drop(client);
    drop(daemon);
    let mut cold = Vec::new();
    for _ in 0..10 {
        let env = TestEnv::new();
        let t = Instant::now();
        let d = env.start_daemon();
        let mut c = d.nd();
        c.ok("daemon/status", json!({}));
        cold.push(t.elapsed());
    }
    cold.sort();
    rows.push((
        "cold start to first reply (spawn, READY=1, one call; p50)".into(),
        millis(percentile(&cold, 0.5)),
        "≤ 50 ms".into(),
    ));

    let mut md = String::from("# Benchmarks\n\nProduced by:\n\n```sh\n");
    md.push_str(COMMAND);
    md.push_str("\n```\n\n");
    md.push_str(&format!("Machine: {}. Release build; mock provider in-process at zero latency.\n\n", machine()));
    md.push_str("| measure | result | target |\n|---|---|---|\n");
    for (m, r, t) in &rows {
        md.push_str(&format!("| {m} | {r} | {t} |\n"));
    }
    md.push_str("\nNot measured yet: 64 concurrent sessions × 10 turns, RSS per active session, socket-activated cold start (issue 9).\n");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../BENCHMARKS.md");
    std::fs::write(path, &md).expect("write BENCHMARKS.md");
    print!("{md}");
}
