//! The runner's limits and a persistent worker that stops reading.

use super::*;

/// A persistent worker that, the first time it starts, never reads stdin
/// (it sleeps); every later start serves `{"id": N, "size": len(data)}`.
const STALLS_ONCE: &str = r#"
import json, os, sys, time
marker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "started")
if not os.path.exists(marker):
    open(marker, "w").close()
    time.sleep(600)
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({"id": req["id"], "size": len(req.get("data", ""))}), flush=True)
"#;

fn script(dir: &std::path::Path, body: &str) -> Script {
    let path = dir.join("worker.py");
    std::fs::write(&path, body).unwrap();
    Script {
        argv: vec!["python3".into(), path.display().to_string()],
        cwd: dir.to_owned(),
        base: CallerEnv::Daemon,
        env: Vec::new(),
        pins: Vec::new(),
    }
}

/// One of the model's commands, started directly with merged output.
fn command(argv: &[&str]) -> Launch {
    Launch {
        program: locate(argv[0], &std::env::var_os("PATH").unwrap_or_default()).expect("test program installed"),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: None,
        env: Env::Inherit(Vec::new()),
        io: Io::Merged,
        through: None,
    }
}

#[tokio::test]
async fn a_worker_that_stops_reading_stdin_times_out_and_the_next_call_starts_a_fresh_one() {
    let dir = tempfile::tempdir().unwrap();
    let script = script(dir.path(), STALLS_ONCE);
    let runner = ProcessRunner::new(4);
    // Far more than a pipe buffer holds: the write itself blocks.
    let big = serde_json::to_vec(&serde_json::json!({"data": "x".repeat(1024 * 1024)})).unwrap();
    let call = |input| Call {
        script: &script,
        mode: Mode::Persistent,
        input,
        timeout: Duration::from_secs(2),
        max_stdout: 1024,
    };
    let cancel = CancellationToken::new();
    let err = runner.call(call(&big), &cancel).await.expect_err("a stalled worker cannot answer");
    assert!(matches!(err, ProcError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("timed out"), "{err}");
    let stalled = dir.path().join("started");
    assert!(stalled.exists(), "the first worker ran");

    let out = runner.call(call(br#"{"data": "abc"}"#), &cancel).await.expect("a fresh worker serves");
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reply, serde_json::json!({"size": 3}));
    assert!(runner.worker_pid(&script).await.is_some());
    runner.shutdown().await;
}

#[tokio::test]
async fn the_models_commands_wait_for_a_slot_under_max_children() {
    let runner = Arc::new(ProcessRunner::new(1));
    let hold = CancellationToken::new();
    let first = {
        let (runner, hold) = (runner.clone(), hold.clone());
        tokio::spawn(async move {
            runner.run_merged(&command(&["sleep", "60"]), Duration::from_secs(60), 1024, &hold).await
        })
    };
    while runner.running() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The only slot is taken: the second command waits until cancelled
    // instead of running.
    let waiting = CancellationToken::new();
    let canceller = waiting.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        canceller.cancel();
    });
    let second = runner.run_merged(&command(&["echo", "hi"]), Duration::from_secs(10), 1024, &waiting).await;
    assert!(matches!(second, Err(ProcError::Cancelled { .. })), "{second:?}");

    hold.cancel();
    let first = first.await.unwrap().unwrap();
    assert_eq!(first.ending, Ending::Cancelled);
    assert_eq!(runner.running(), 0);
    let free = CancellationToken::new();
    let third = runner.run_merged(&command(&["echo", "hi"]), Duration::from_secs(10), 1024, &free).await;
    assert_eq!(third.unwrap().output.bytes, b"hi\n");
}

#[tokio::test]
async fn merged_output_keeps_the_order_and_the_cap() {
    let runner = ProcessRunner::new(1);
    let cancel = CancellationToken::new();
    let launch = command(&["sh", "-c", "echo out; echo err >&2; echo more"]);
    let m = runner.run_merged(&launch, Duration::from_secs(10), 1024, &cancel).await.unwrap();
    assert_eq!((m.ending, m.output.bytes.as_slice()), (Ending::Exited(0), &b"out\nerr\nmore\n"[..]));
    let m = runner.run_merged(&launch, Duration::from_secs(10), 5, &cancel).await.unwrap();
    assert_eq!((m.output.bytes.as_slice(), m.output.truncated), (&b"out\ne"[..], true));
}
