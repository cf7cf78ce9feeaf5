#![no_main]
//! The newline-delimited framing and dispatch, end to end inside one
//! process: the real daemon (`swivald::run`, with its accept loop,
//! peer check, framing sniff, line reader, size limit, batches,
//! notifications and every RPC handler) serves a private Unix socket, and
//! each fuzz input is written to a fresh connection as raw bytes, then the
//! write side is closed and everything the daemon answers is read to EOF.
//!
//! A panic anywhere in the daemon (libfuzzer-sys aborts on any panic, in any
//! thread), a connection that is never closed after the client's EOF, a
//! reply line that is not a JSON-RPC 2.0 message, or more replies than
//! request lines is a finding.
//!
//! Why this is safe to run on a developer machine: everything lives in a
//! temporary home; nothing a fuzz input can reach starts a process or opens
//! a network connection (that needs `run/start` on an existing session, and
//! session ids are random 64-bit values the input cannot know); and provider
//! traffic would be sent to a dead loopback proxy anyway.
//!
//! The daemon re-executes `/proc/self/exe --sandbox-probe` at start, so this
//! binary is its own sandbox helper, exactly as `swivald`'s `main` is.

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use swivald::{Listener, Settings};

/// How long the daemon gets to answer and close one connection.
const ANSWER_LIMIT: Duration = Duration::from_secs(20);
/// How long a restart after `daemon/shutdown` may take.
const RESTART_LIMIT: Duration = Duration::from_secs(30);
/// A small message limit, so inputs reach the over-limit path too.
const MAX_MESSAGE_SIZE: u64 = 1024;

/// The temporary home, removed at exit.
static HOME: OnceLock<PathBuf> = OnceLock::new();
/// The daemon's socket.
static SOCKET: OnceLock<PathBuf> = OnceLock::new();
/// How many times the daemon has stopped (and is being started again).
static STOPS: AtomicU64 = AtomicU64::new(0);

fuzz_target!(init: start_daemon(), |data: &[u8]| {
    let socket = SOCKET.get().expect("the daemon was started in init");
    // Counted before the input is sent: a daemon told to shut down may stop
    // (and count its stop) before this thread has read the reply's end.
    let stopped = STOPS.load(Ordering::SeqCst);
    let output = exchange(socket, data);
    if matches!(data.first(), Some(b'{' | b'[')) {
        check_ndjson_output(data, &output);
    }
    // After `daemon/shutdown` (it stops once its reply is written) the next input
    // should meet the restarted daemon, not one that is going away.
    if String::from_utf8_lossy(&output).contains("\"stopping\":true") {
        let deadline = Instant::now() + RESTART_LIMIT;
        while STOPS.load(Ordering::SeqCst) == stopped {
            assert!(Instant::now() < deadline, "the daemon did not stop within {RESTART_LIMIT:?} of daemon/shutdown");
            std::thread::sleep(Duration::from_millis(1));
        }
        wait_until_serving(socket);
    } else if output.is_empty() {
        // The input may have met a daemon that was stopping.
        wait_until_serving(socket);
    }
});

/// Be the sandbox helper when re-executed as one; otherwise start the
/// daemon on a private socket in a temporary home, serving again whenever a
/// fuzz input shuts it down (`daemon/shutdown`).
fn start_daemon() {
    if let Some(code) = swivald::main_if_helper() {
        std::process::exit(if code == std::process::ExitCode::SUCCESS { 0 } else { 1 });
    }
    let home = tempfile::Builder::new().prefix("swivald-fuzz").tempdir().expect("temporary home").keep();
    for (var, sub) in [
        ("HOME", "home"),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_RUNTIME_DIR", "run"),
    ] {
        std::fs::create_dir_all(home.join(sub)).expect("create the temporary home");
        // Still single-threaded: LLVMFuzzerInitialize runs before libFuzzer starts anything.
        std::env::set_var(var, home.join(sub));
    }
    for var in ["http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        std::env::set_var(var, "http://127.0.0.1:9");
    }
    std::env::remove_var("NO_PROXY");
    std::env::remove_var("no_proxy");
    let socket = home.join("run/swival/swivald.sock");
    let settings = Settings {
        socket: Some(socket.clone()),
        state_dir: Some(home.join("state")),
        cache_dir: Some(home.join("cache")),
        max_message_size: MAX_MESSAGE_SIZE,
        shutdown_grace_s: 0.5,
        ..Settings::default()
    };
    let first = Listener::bind(&socket).unwrap_or_else(|e| panic!("cannot bind {}: {e}", socket.display()));
    HOME.set(home).expect("init runs once");
    SOCKET.set(socket.clone()).expect("init runs once");
    // SAFETY: registering a plain extern "C" function with no captured state.
    unsafe { libc::atexit(remove_home) };
    std::thread::Builder::new()
        .name("swivald".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            let mut listener = first;
            loop {
                runtime
                    .block_on(swivald::run(settings.clone(), listener))
                    .expect("swivald stopped with an error");
                STOPS.fetch_add(1, Ordering::SeqCst);
                listener =
                    Listener::bind(&socket).unwrap_or_else(|e| panic!("cannot bind {} again: {e}", socket.display()));
            }
        })
        .expect("spawn the daemon thread");
}

extern "C" fn remove_home() {
    if let Some(home) = HOME.get() {
        let _ = std::fs::remove_dir_all(home);
    }
}

/// Write `data` on a new connection, close the write side, and read
/// everything until the daemon closes the connection.
fn exchange(socket: &Path, data: &[u8]) -> Vec<u8> {
    let mut stream = connect(socket);
    stream.set_read_timeout(Some(ANSWER_LIMIT)).unwrap();
    stream.set_write_timeout(Some(ANSWER_LIMIT)).unwrap();
    let writer = stream.try_clone().expect("clone the connection");
    let data_owned = data.to_vec();
    // Written from another thread: the daemon may answer before it has read
    // everything, and neither side may wait on the other's buffer.
    let sender = std::thread::spawn(move || {
        let mut writer = writer;
        // The daemon may close first (e.g. after shutdown); that is fine.
        let _ = writer.write_all(&data_owned);
        let _ = writer.shutdown(Shutdown::Write);
    });
    let mut output = Vec::new();
    let started = Instant::now();
    let mut buf = [0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => output.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // The listener went away under a queued connection during a restart.
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => panic!(
                "the daemon neither answered nor closed the connection within {:?} of the client's EOF; input: {:?}",
                started.elapsed(),
                String::from_utf8_lossy(data)
            ),
            Err(e) => panic!("reading the daemon's answer failed: {e}"),
        }
    }
    sender.join().expect("writer thread");
    output
}

/// Wait until a fresh connection gets an answer to `daemon/status`.
fn wait_until_serving(socket: &Path) {
    let deadline = Instant::now() + RESTART_LIMIT;
    let probe = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon/status\"}\n";
    while !String::from_utf8_lossy(&exchange(socket, probe)).contains("\"result\"") {
        assert!(Instant::now() < deadline, "the daemon did not serve again within {RESTART_LIMIT:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Connect, waiting out a restart after an input that said `daemon/shutdown`.
fn connect(socket: &Path) -> UnixStream {
    let deadline = Instant::now() + RESTART_LIMIT;
    loop {
        match UnixStream::connect(socket) {
            Ok(s) => return s,
            Err(e)
                if Instant::now() < deadline
                    && matches!(e.kind(), ErrorKind::NotFound | ErrorKind::ConnectionRefused) =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("the daemon stopped serving {}: {e}", socket.display()),
        }
    }
}

/// Every line the daemon wrote is a JSON-RPC 2.0 response (or batch of
/// them) or a subscription notification, and there is at most one
/// response line per request line.
fn check_ndjson_output(input: &[u8], output: &[u8]) {
    let text = std::str::from_utf8(output).unwrap_or_else(|e| panic!("reply is not UTF-8 ({e}): {output:?}"));
    assert!(text.is_empty() || text.ends_with('\n'), "the last reply line is not terminated: {text:?}");
    let request_lines = input.split(|&b| b == b'\n').count();
    let mut responses = 0;
    for line in text.lines() {
        let value: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("reply line is not JSON ({e}): {line:?}"));
        match &value {
            Value::Array(items) => {
                assert!(!items.is_empty(), "empty batch reply");
                items.iter().for_each(check_response);
                responses += 1;
            }
            Value::Object(obj) if obj.contains_key("method") => {
                assert_eq!(obj.get("jsonrpc"), Some(&Value::from("2.0")), "notification without jsonrpc 2.0: {line}");
                assert!(obj.get("params").is_some_and(Value::is_object), "notification without params: {line}");
            }
            _ => {
                check_response(&value);
                responses += 1;
            }
        }
    }
    assert!(
        responses <= request_lines,
        "{responses} responses to {request_lines} lines; input: {:?}\noutput: {text}",
        String::from_utf8_lossy(input)
    );
}

fn check_response(v: &Value) {
    let obj = v.as_object().unwrap_or_else(|| panic!("response is not an object: {v}"));
    assert_eq!(obj.get("jsonrpc"), Some(&Value::from("2.0")), "response without jsonrpc 2.0: {v}");
    let id = obj.get("id").unwrap_or_else(|| panic!("response without id: {v}"));
    assert!(matches!(id, Value::Null | Value::Number(_) | Value::String(_)), "response with id {id}: {v}");
    match (obj.get("result"), obj.get("error")) {
        (Some(_), None) => {}
        (None, Some(err)) => {
            assert!(err.get("code").is_some_and(Value::is_i64), "error without an integer code: {v}");
            let message = err.get("message").and_then(Value::as_str);
            assert!(message.is_some_and(|m| !m.is_empty()), "error without a message: {v}");
        }
        _ => panic!("a response needs exactly one of result and error: {v}"),
    }
}
