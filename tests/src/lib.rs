//! The end-to-end test harness: start the real `swivald` binary on a
//! private socket in a temporary home, talk to it over raw sockets or the
//! real client library, and (for agent runs) stand in for the LLM provider
//! with the in-process mock in [`mock`].
//!
//! Nothing here mocks our own parts: the daemon, the socket, the client and
//! the scripts are the real ones.

pub mod mock;
pub mod tmux;
pub mod ws;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Safety net for blocking reads: a broken daemon fails the test instead of
/// hanging it. No test passes because of this limit.
pub const IO_TIMEOUT: Duration = Duration::from_secs(120);

/// Directory holding the workspace's built binaries (`target/debug`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let mut dir = exe.parent().expect("exe dir").to_owned();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir
}

/// Path of a workspace binary; panics with the fix when it was not built.
pub fn bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(p.is_file(), "{} is missing: build the workspace first (cargo build --workspace)", p.display());
    p
}

/// A private home for one test: XDG directories, a socket path, a log.
pub struct TestEnv {
    /// Removed when the test ends.
    pub dir: tempfile::TempDir,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    /// A fresh temporary home.
    pub fn new() -> TestEnv {
        let dir = tempfile::Builder::new().prefix("sv").tempdir_in("/tmp").expect("tempdir");
        for sub in ["config", "state", "cache", "run", "home"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path().join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        // Retries back off in milliseconds, not seconds, so fault tests stay quick.
        std::fs::create_dir_all(dir.path().join("config/swival")).unwrap();
        std::fs::write(dir.path().join("config/swival/swivald.toml"), "provider_backoff_base_s = 0.01\n").unwrap();
        TestEnv { dir }
    }

    /// A project directory (created empty) under this environment.
    pub fn project(&self, name: &str) -> PathBuf {
        let p = self.root().join("projects").join(name);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// Add lines to the daemon's settings (`swivald.toml`) before it starts.
    pub fn daemon_settings(&self, toml: &str) {
        let path = self.root().join("config/swival/swivald.toml");
        let mut f = std::fs::OpenOptions::new().append(true).open(path).expect("open swivald.toml");
        writeln!(f, "{toml}").expect("write swivald.toml");
    }

    /// Write the global Swival config (`config.toml`).
    pub fn global_config(&self, toml: &str) {
        std::fs::write(self.root().join("config/swival/config.toml"), toml).unwrap();
    }

    /// `swivalctl` with this environment, run in `cwd`, talking to `daemon`.
    pub fn swivalctl(&self, daemon: &Daemon, cwd: &Path) -> Command {
        let mut cmd = self.command(&bin("swivalctl"));
        cmd.current_dir(cwd).env("SWIVALD_SOCKET", &daemon.socket);
        cmd
    }

    /// The temporary home's root.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The default socket path for this environment.
    pub fn socket(&self) -> PathBuf {
        self.root().join("run/swival/swivald.sock")
    }

    /// Where the daemon's stderr goes.
    pub fn log_path(&self) -> PathBuf {
        self.root().join("swivald.stderr")
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// A command with this environment's variables and nothing inherited
    /// that could point at a real daemon or real config.
    pub fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root().join("home"))
            .env("XDG_CONFIG_HOME", self.root().join("config"))
            .env("XDG_STATE_HOME", self.root().join("state"))
            .env("XDG_CACHE_HOME", self.root().join("cache"))
            .env("XDG_DATA_HOME", self.root().join("data"))
            .env("XDG_RUNTIME_DIR", self.root().join("run"))
            .env("RUST_LOG", "info")
            .stdin(Stdio::null());
        cmd
    }

    /// Start swivald on the default socket and wait for READY=1.
    pub fn start_daemon(&self) -> Daemon {
        self.start_daemon_with(&[])
    }

    /// Start swivald with extra arguments and wait for READY=1.
    pub fn start_daemon_with(&self, args: &[&str]) -> Daemon {
        let cmd = self.command(&bin("swivald"));
        Daemon::spawn(self, cmd, args).unwrap_or_else(|e| panic!("swivald did not start: {e}\nlog:\n{}", self.log()))
    }
}

/// A running swivald. Killed (SIGKILL) if the test drops it still running.
pub struct Daemon {
    /// The process.
    pub child: Child,
    /// Its socket.
    pub socket: PathBuf,
    /// The service-manager notification socket it reports to.
    pub notify: UnixDatagram,
}

impl Daemon {
    /// Spawn `cmd` (swivald) with a notification socket, and wait until it
    /// sends READY=1. Returns the daemon's exit status as an error when it
    /// exits first.
    pub fn spawn(env: &TestEnv, mut cmd: Command, args: &[&str]) -> Result<Daemon, String> {
        let notify_path = env.root().join(format!("notify-{}", rand_suffix()));
        let notify = UnixDatagram::bind(&notify_path).expect("bind notify socket");
        notify.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        let log = std::fs::OpenOptions::new().create(true).append(true).open(env.log_path()).unwrap();
        cmd.args(args).env("NOTIFY_SOCKET", &notify_path).stdout(Stdio::null()).stderr(log);
        let mut child = cmd.spawn().map_err(|e| format!("spawn: {e}"))?;
        let socket = socket_arg(args).unwrap_or_else(|| env.socket());
        let mut daemon_notify = notify;
        loop {
            // READY=1, or the daemon exiting first (seen via a short poll of
            // try_wait between datagrams).
            daemon_notify.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
            match recv_line(&mut daemon_notify) {
                Some(msg) if msg.contains("READY=1") => break,
                Some(_) => continue,
                None => {
                    if let Ok(Some(status)) = child.try_wait() {
                        return Err(format!("swivald exited with {status} before READY=1"));
                    }
                }
            }
        }
        daemon_notify.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        Ok(Daemon { child, socket, notify: daemon_notify })
    }

    /// The daemon's pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Send a signal.
    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), sig).expect("signal daemon");
    }

    /// Wait for the daemon to exit (bounded by IO_TIMEOUT) and return its code.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + IO_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(std::time::Instant::now() < deadline, "swivald did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A newline-delimited JSON-RPC connection to this daemon.
    pub fn nd(&self) -> NdConn {
        NdConn::connect(&self.socket)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn socket_arg(args: &[&str]) -> Option<PathBuf> {
    args.windows(2).find(|w| w[0] == "--socket").map(|w| PathBuf::from(w[1]))
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// Receive one notification datagram as text; `None` on timeout.
pub fn recv_line(sock: &mut UnixDatagram) -> Option<String> {
    let mut buf = [0u8; 4096];
    match sock.recv(&mut buf) {
        Ok(n) => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
        Err(_) => None,
    }
}

/// A raw newline-delimited JSON-RPC connection.
pub struct NdConn {
    /// Lines from the daemon.
    reader: BufReader<UnixStream>,
    /// Lines to the daemon.
    writer: UnixStream,
    /// Next request id.
    next_id: u64,
    /// Notifications that arrived while `call` waited for its reply; `read`
    /// returns them first, so none is lost.
    held: std::collections::VecDeque<Value>,
}

impl NdConn {
    /// Connect to `socket`.
    pub fn connect(socket: &Path) -> NdConn {
        let s = UnixStream::connect(socket).unwrap_or_else(|e| panic!("connect {}: {e}", socket.display()));
        s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        NdConn { reader: BufReader::new(s.try_clone().unwrap()), writer: s, next_id: 1, held: Default::default() }
    }

    /// Write raw bytes followed by a newline.
    pub fn send_raw(&mut self, line: &[u8]) {
        self.writer.write_all(line).unwrap();
        self.writer.write_all(b"\n").unwrap();
    }

    /// The next message (held notifications first); panics on EOF.
    pub fn read(&mut self) -> Value {
        if let Some(held) = self.held.pop_front() {
            return held;
        }
        self.read_line()
    }

    /// Read one line and parse it; panics on EOF.
    fn read_line(&mut self) -> Value {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).expect("read reply");
        assert!(n > 0, "daemon closed the connection");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad reply {line:?}: {e}"))
    }

    /// Read one line; `None` on EOF.
    pub fn read_opt(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => serde_json::from_str(&line).ok(),
        }
    }

    /// Wait for the daemon to close the connection: panics on a line, or
    /// when [`IO_TIMEOUT`] passes first.
    pub fn expect_closed(&mut self) {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Ok(_) => panic!("expected the daemon to close the connection, got {line:?}"),
            Err(e) => panic!("expected the daemon to close the connection: {e}"),
        }
    }

    /// Call `method` and return the whole reply object.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let req = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(req.to_string().as_bytes());
        loop {
            let reply = self.read_line();
            if reply.get("id") == Some(&json!(id)) {
                return reply;
            }
            if reply.get("id").is_none() {
                self.held.push_back(reply);
                continue;
            }
        }
    }

    /// Call `method` and return its `result`, panicking on an error reply.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let reply = self.call(method, params);
        match reply.get("result") {
            Some(r) => r.clone(),
            None => panic!("{method} failed: {reply}"),
        }
    }
}

/// `initialize` params as a test client.
pub fn init_params() -> Value {
    json!({"client": {"name": "tests", "version": "0"}, "protocol_version": 1})
}

/// POST `body` over HTTP/1.1 on the Unix socket; returns (status, body).
pub fn http_post(socket: &Path, body: &str) -> (u16, String) {
    let mut s = UnixStream::connect(socket).expect("connect");
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let sent = write!(
        s,
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // A server refusing a body over its limit may answer and close before
    // reading all of it: the answer is still there to read.
    if let Err(e) = sent {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write the request: {e}");
    }
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read http reply");
    let status = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// Subscribe on a new connection to session `sid` from its first event and
/// read its events up to the first of type `kind`; that one (each read is
/// bounded by [`IO_TIMEOUT`]).
pub fn first_event(daemon: &Daemon, kind: &str, sid: &str) -> Value {
    let mut c = daemon.nd();
    c.ok("session/subscribe", json!({"session_id": sid, "from_seq": 1}));
    loop {
        let msg = c.read();
        if msg["method"] == "session/event" && msg["params"]["result"]["type"] == kind {
            return msg["params"]["result"].clone();
        }
    }
}

/// Start swivald as systemd would: `listener` as fd 3, `LISTEN_FDS=1`,
/// `LISTEN_PID` set to the daemon's own pid (by a shell that then execs
/// it), and a notification socket; returns once READY=1 arrives.
pub fn activated_daemon(env: &TestEnv, listener: &std::os::unix::net::UnixListener, path: &Path) -> Daemon {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let fd = listener.as_raw_fd();
    let mut cmd = env.command(Path::new("/bin/sh"));
    cmd.args(["-c", "LISTEN_PID=$$ exec \"$0\"", bin("swivald").to_str().unwrap()]).env("LISTEN_FDS", "1");
    // SAFETY: dup2 is async-signal-safe; it puts the listener on fd 3.
    unsafe {
        cmd.pre_exec(move || {
            // dup2 onto itself keeps FD_CLOEXEC, so clear it explicitly.
            if (fd != 3 && libc::dup2(fd, 3) < 0) || libc::fcntl(3, libc::F_SETFD, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut d =
        Daemon::spawn(env, cmd, &[]).unwrap_or_else(|e| panic!("activated swivald did not start: {e}\n{}", env.log()));
    d.socket = path.to_owned();
    d
}

/// Write an executable script (mode 0755) and return its path.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// Pids of live processes whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if stat.contains(") Z ") {
            continue;
        }
        if String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(needle) {
            out.push(pid);
        }
    }
    out
}

/// Resident set size of process `pid` in KiB (`VmRSS`), 0 when unknown.
pub fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Poll `cond` until it holds; fails the test naming `what` after
/// [`IO_TIMEOUT`]. For effects outside the protocol (a marker file a script
/// writes, a process going away), where there is nothing to block on.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + IO_TIMEOUT;
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "waited {IO_TIMEOUT:?} for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Wait for `child` to exit, bounded by [`IO_TIMEOUT`] (killed past it):
/// its status and stderr, read once it has exited.
pub fn exit_of(mut child: std::process::Child) -> (std::process::ExitStatus, String) {
    let deadline = std::time::Instant::now() + IO_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the process did not exit within {IO_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (status, err)
}

/// Create a session of `base` with `config` on `c`; its id.
pub fn create_session(c: &mut NdConn, base: &Path, config: Value) -> String {
    let r = c.call("session/create", json!({"base_dir": base, "config": config}));
    r["result"]["session_id"].as_str().unwrap_or_else(|| panic!("session/create: {r}")).to_owned()
}

/// Subscribe on `c` to `session` from `from_seq` and collect the events
/// (`params.result` of each `session/event`) up to the next `run_finished`.
pub fn events_until_finished(c: &mut NdConn, session: &str, from_seq: u64) -> Vec<Value> {
    c.ok("session/subscribe", json!({"session_id": session, "from_seq": from_seq}));
    read_until_finished(c, |_| {})
}

/// On a connection subscribed to a session, read events up to the next
/// `run_finished`, handing each to `each` as it arrives; the events.
pub fn read_until_finished(c: &mut NdConn, mut each: impl FnMut(&Value)) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let msg = c.read();
        if msg["method"] != "session/event" {
            continue;
        }
        let event = msg["params"]["result"].clone();
        each(&event);
        let done = event["type"] == "run_finished";
        events.push(event);
        if done {
            return events;
        }
    }
}

/// Whether no process on the machine has `arg` among its arguments,
/// waiting up to 5 s for processes that are being killed to go away
/// (a safety net: a passing test never waits for it).
pub fn no_process_with_arg(arg: &str) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        if processes_with_arg(arg).is_empty() {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Live (not zombie) processes with `arg` among their arguments.
pub fn processes_with_arg(arg: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let has = cmdline.split(|b| *b == 0).any(|a| a == arg.as_bytes());
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit(')').next().and_then(|s| s.split_whitespace().next()).unwrap_or("X");
            has && state != "Z" && state != "X"
        })
        .collect()
}

/// A filter (Python) that replaces `internal.example.corp` with
/// `[REDACTED]` in every message it is given.
pub const REDACT_FILTER: &str = r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
def scrub(v):
    if isinstance(v, str):
        return v.replace("internal.example.corp", "[REDACTED]")
    if isinstance(v, list):
        return [scrub(x) for x in v]
    if isinstance(v, dict):
        return {k: scrub(x) for k, x in v.items()}
    return v
print(json.dumps({"messages": scrub(req["messages"])}))
"#;

/// Create a session on `p` with `cfg`, run `task` to its end: the
/// session, the run and its result.
pub fn run_task(c: &mut NdConn, p: &Path, cfg: Value, task: &str) -> (String, Value, Value) {
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].as_str().unwrap().to_owned();
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    (sid, run, result)
}

/// The kinds of a run's `intervention` events, in order.
pub fn intervention_kinds(events: &[Value]) -> Vec<String> {
    let kinds = events.iter().filter(|e| e["type"] == "intervention");
    kinds.map(|e| e["kind"].as_str().unwrap().to_owned()).collect()
}
