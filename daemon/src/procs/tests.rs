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
        limits: None,
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

/// A one-shot script that logs `started PID` when it starts and `served
/// PID` once it has read its input, and answers `{"pid": PID}`; it holds
/// its answer until a file `release` exists beside it.
const LOGS_ITS_LIFE: &str = r#"
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
def log(line):
    with open(os.path.join(here, "life.log"), "a") as f:
        f.write(line + "\n")
log("started %d" % os.getpid())
sys.stdin.read()
while not os.path.exists(os.path.join(here, "release")):
    time.sleep(0.01)
log("served %d" % os.getpid())
print(json.dumps({"pid": os.getpid()}))
"#;

/// A call of `script` with an empty JSON object as input.
fn call(script: &Script, mode: Mode) -> Call<'_> {
    Call { script, mode, input: b"{}", timeout: Duration::from_secs(60), max_stdout: 1024 }
}

/// The pids of the processes ready in the pool of `script` at `size`.
fn ready(runner: &ProcessRunner, script: &Script, size: u32) -> Vec<i32> {
    let pools = runner.pools.lock().unwrap();
    let Some(pool) = pools.get(&(script.clone(), size)) else { return Vec::new() };
    let ready = pool.item.ready.lock().unwrap();
    ready.iter().filter_map(Spawned::pgid).collect()
}

/// Whether the refill of the pool of `script` at `size` (a background
/// task) has finished: nothing but the runner holds the pool.
fn refilled(runner: &ProcessRunner, script: &Script, size: u32) -> bool {
    runner.pools.lock().unwrap().get(&(script.clone(), size)).is_some_and(|pool| Arc::strong_count(&pool.item) == 1)
}

/// Let the pool's refill run, for up to a minute, until `size` processes
/// of `script` are ready and the refill is over.
async fn until_ready(runner: &ProcessRunner, script: &Script, size: u32) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pids = ready(runner, script, size);
        if pids.len() == size as usize && refilled(runner, script, size) {
            return pids;
        }
        assert!(Instant::now() < deadline, "the pool of {script:?} was not refilled within a minute");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test]
async fn a_prespawned_process_starts_once_the_call_before_it_is_served_and_a_changed_script_never_serves() {
    let dir = tempfile::tempdir().unwrap();
    let mut script = script(dir.path(), LOGS_ITS_LIFE);
    script.pins = pin::pin_argv(&script.argv, dir.path(), &std::env::var_os("PATH").unwrap_or_default());
    assert_eq!(script.pins.len(), 2, "python3 and the script are pinned");
    let runner = Arc::new(ProcessRunner::new(4));
    let cancel = CancellationToken::new();
    let pid = |out: Output| serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["pid"].as_i64().unwrap();
    let log = || std::fs::read_to_string(dir.path().join("life.log")).unwrap_or_default();

    // The pool is empty at first: the call starts its own process, and
    // nothing else starts while that process serves it.
    let held = {
        let (runner, script) = (runner.clone(), script.clone());
        tokio::spawn(async move { runner.call(call(&script, Mode::Prespawn(1)), &CancellationToken::new()).await })
    };
    while !log().contains("started") {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(ready(&runner, &script, 1), Vec::<i32>::new(), "a process was started beside the call");
    std::fs::write(dir.path().join("release"), "").unwrap();
    let first = pid(held.await.unwrap().unwrap());

    // Once it is served the pool starts the next one, which serves the next call.
    let [next] = until_ready(&runner, &script, 1).await[..] else { unreachable!() };
    let second = pid(runner.call(call(&script, Mode::Prespawn(1)), &cancel).await.unwrap());
    assert_eq!(second, i64::from(next), "the second call is served by the prespawned process");
    assert_eq!(log(), format!("started {first}\nserved {first}\nstarted {second}\nserved {second}\n"));

    // A pool of another size is a pool of its own.
    runner.call(call(&script, Mode::Prespawn(2)), &cancel).await.unwrap();
    assert_eq!(until_ready(&runner, &script, 2).await.len(), 2);

    // The script changes while a process started from it waits: the call
    // fails closed and that process is never given the input.
    let [waiting] = until_ready(&runner, &script, 1).await[..] else { unreachable!() };
    std::fs::write(dir.path().join("worker.py"), format!("{LOGS_ITS_LIFE}\n# changed\n")).unwrap();
    let err = runner.call(call(&script, Mode::Prespawn(1)), &cancel).await.expect_err("a changed script never serves");
    assert!(matches!(err, ProcError::Changed { .. }), "{err}");
    assert_eq!(ready(&runner, &script, 1), vec![waiting], "the waiting process was not taken");
    assert!(!log().contains(&format!("served {waiting}")), "{}", log());
    runner.shutdown().await;
}

/// A persistent worker answering `{"id": N, "pid": PID}` to every line.
const ANSWERS_ITS_PID: &str = r#"
import json, os, sys
for line in sys.stdin:
    print(json.dumps({"id": json.loads(line)["id"], "pid": os.getpid()}), flush=True)
"#;

/// Whether process `pid` has ended (gone, or a zombie not yet reaped).
fn ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Wait, up to a minute, until process `pid` has ended.
async fn until_ended(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ended(pid) {
        assert!(Instant::now() < deadline, "process {pid} still runs a minute after it was stopped");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn pools_and_workers_unused_for_the_idle_time_are_stopped_and_held_ones_are_kept() {
    let runner = Arc::new(ProcessRunner::new(4));
    let cancel = CancellationToken::new();
    let idle = Duration::from_secs(3600);
    let later = || Instant::now() + 2 * idle;

    // A pool with a process waiting, and a running worker.
    let pooled_dir = tempfile::tempdir().unwrap();
    let pooled = script(pooled_dir.path(), LOGS_ITS_LIFE);
    std::fs::write(pooled_dir.path().join("release"), "").unwrap();
    runner.call(call(&pooled, Mode::Prespawn(1)), &cancel).await.unwrap();
    let [waiting] = until_ready(&runner, &pooled, 1).await[..] else { unreachable!() };
    let worker_dir = tempfile::tempdir().unwrap();
    let worker = script(worker_dir.path(), ANSWERS_ITS_PID);
    runner.call(call(&worker, Mode::Persistent), &cancel).await.unwrap();
    let worker_pid = runner.worker_pid(&worker).await.expect("the worker runs") as i32;

    // Used within the idle time: kept.
    assert_eq!(runner.retire_idle(Instant::now(), idle), 0);
    assert_eq!(ready(&runner, &pooled, 1), vec![waiting]);
    assert!(!ended(worker_pid));

    // A pool whose process is serving a call is kept however long ago it
    // was asked for; the idle worker is stopped.
    let held_dir = tempfile::tempdir().unwrap();
    let held = script(held_dir.path(), LOGS_ITS_LIFE);
    let serving = {
        let (runner, held) = (runner.clone(), held.clone());
        tokio::spawn(async move { runner.call(call(&held, Mode::Prespawn(1)), &CancellationToken::new()).await })
    };
    let log = || std::fs::read_to_string(held_dir.path().join("life.log")).unwrap_or_default();
    while !log().contains("started") {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(runner.retire_idle(later(), idle), 2, "the idle pool and worker are stopped, the held pool is not");
    assert_eq!(ready(&runner, &pooled, 1), Vec::<i32>::new());
    assert!(runner.pools.lock().unwrap().contains_key(&(held.clone(), 1)), "the pool serving a call was stopped");
    assert_eq!(runner.worker_pid(&worker).await, None);
    until_ended(waiting).await;
    until_ended(worker_pid).await;

    // Once served, the held pool goes idle too; the next call for a
    // stopped script starts afresh.
    std::fs::write(held_dir.path().join("release"), "").unwrap();
    serving.await.unwrap().unwrap();
    until_ready(&runner, &held, 1).await;
    assert_eq!(runner.retire_idle(later(), idle), 1);
    runner.call(call(&worker, Mode::Persistent), &cancel).await.unwrap();
    let restarted = runner.worker_pid(&worker).await.expect("a fresh worker runs") as i32;
    assert_ne!(restarted, worker_pid);
    runner.shutdown().await;
}
