//! The sandbox end to end: commands run through the real swivald binary's
//! helper mode (Landlock, namespaces, seccomp as this kernel allows), and
//! `fetch_url` against local test servers. Where the kernel cannot enforce
//! something, the test prints `SKIPPED: … because …` and returns; it never
//! passes by not checking.
//!
//! All network traffic stays on loopback: the allowed test server listens
//! on 127.0.0.2, the forbidden one on 127.0.0.1, and every other address
//! named here is refused before any connection is made.

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use swivald::sandboxed::{self as sandbox, fetch_url, run_command, Cidr, CommandEnv, CommandPolicy, FetchEnv};
use swivald::sandboxed::{FetchFormat, ProcessRunner, SandboxCapabilities, SandboxMode};
use tokio_util::sync::CancellationToken;

/// Where test commands are looked up (not the pyenv shims on the dev PATH).
const TEST_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

fn helper() -> PathBuf {
    swival_tests::bin("swivald")
}

/// A process runner as the daemon has one (its default `max_children`).
fn runner() -> Arc<ProcessRunner> {
    Arc::new(ProcessRunner::new(64))
}

async fn capabilities() -> SandboxCapabilities {
    let caps = sandbox::probe(&helper()).await;
    println!("kernel sandbox capabilities: {caps:?}");
    caps
}

/// An OS-sandboxed environment allowing `names` in `base`.
fn os_env(
    base: &Path,
    names: &[&str],
    network: bool,
    caps: &SandboxCapabilities,
    hide: Vec<PathBuf>,
) -> (CommandEnv, sandbox::SandboxStatus) {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let map = sandbox::resolve_whitelist(&names, base, TEST_PATH.as_ref())
        .unwrap_or_else(|e| panic!("test programs must be installed: {e}"));
    let base = base.canonicalize().unwrap();
    let input = sandbox::PlanInput {
        mode: SandboxMode::Os,
        network_allowed: network,
        write_dirs: vec![base.clone()],
        socket: hide.into_iter().next(),
        ..sandbox::PlanInput::default()
    };
    let env_vars = sandbox::allowed_environment(std::env::vars_os(), &[]);
    let (env, status) =
        CommandEnv::new(CommandPolicy::Whitelist(map), &base, input, caps, helper(), env_vars, runner());
    println!("sandbox status: {}", status.summary());
    for w in &status.not_enforced {
        println!("not enforced: {w}");
    }
    (env, status)
}

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

async fn run(env: &CommandEnv, a: &[&str], timeout_s: u64) -> String {
    let out = run_command(env, &argv(a), Duration::from_secs(timeout_s), &CancellationToken::new()).await.text;
    println!("$ {a:?}\n{out}");
    out
}

#[tokio::test]
async fn probe_and_status_agree() {
    let caps = capabilities().await;
    let base = tempfile::tempdir().unwrap();
    let (env, status) = os_env(base.path(), &["true"], false, &caps, vec![]);
    assert_eq!(status.filesystem_confined, caps.landlock_abi.is_some());
    assert_eq!(env.plan.is_some(), caps.any());
    if caps.landlock_abi.is_none() {
        assert!(
            status.not_enforced.iter().any(|w| w.contains("Landlock")),
            "a missing Landlock must be reported: {status:?}"
        );
    }
    if status.network_block.is_none() {
        assert!(
            status.not_enforced.iter().any(|w| w.contains("command_network")),
            "an unremoved network must be reported: {status:?}"
        );
    }
    assert_eq!(run(&env, &["true"], 10).await, "(no output)");
}

const WRITE_SCRIPT: &str = r#"
import sys, tempfile
open("inside.txt", "w").write("inside")
print("inside: ok")
with tempfile.NamedTemporaryFile(dir=None) as f:
    print("tmpdir: ok")
try:
    open(sys.argv[1], "w").write("outside")
    print("outside: WRITTEN")
except PermissionError as e:
    print("outside: denied", e.errno)
"#;

#[tokio::test]
async fn writes_outside_the_base_dir_are_denied_by_the_kernel() {
    let caps = capabilities().await;
    if caps.landlock_abi.is_none() {
        println!(
            "SKIPPED: filesystem confinement, because Landlock is unavailable here: {}",
            caps.landlock_error.as_deref().unwrap_or("?")
        );
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escape.txt");
    let (env, status) = os_env(base.path(), &["python3"], false, &caps, vec![]);
    assert!(status.filesystem_confined);
    let out = run(&env, &["python3", "-c", WRITE_SCRIPT, target.to_str().unwrap()], 30).await;
    assert_eq!(out, "inside: ok\ntmpdir: ok\noutside: denied 13\n");
    assert_eq!(std::fs::read_to_string(base.path().join("inside.txt")).unwrap(), "inside");
    assert!(!target.exists(), "the write outside went through");
}

#[tokio::test]
async fn builtin_mode_does_not_confine_and_says_so() {
    let caps = capabilities().await;
    let base = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escape.txt");
    let names = vec!["python3".to_owned()];
    let map = sandbox::resolve_whitelist(&names, base.path(), TEST_PATH.as_ref()).unwrap();
    let canonical = base.path().canonicalize().unwrap();
    let input = sandbox::PlanInput {
        mode: SandboxMode::Builtin,
        write_dirs: vec![canonical.clone()],
        ..sandbox::PlanInput::default()
    };
    let (env, status) =
        CommandEnv::new(CommandPolicy::Whitelist(map), &canonical, input, &caps, helper(), vec![], runner());
    assert!(env.plan.is_none() && !status.filesystem_confined);
    assert!(!status.not_enforced.is_empty());
    let out = run(&env, &["python3", "-c", WRITE_SCRIPT, target.to_str().unwrap()], 30).await;
    assert!(out.ends_with("outside: WRITTEN\n"), "{out}");
}

const CONNECT_SCRIPT: &str = r#"
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
    print("connected")
except OSError as e:
    print("blocked:", e.errno)
"#;

#[tokio::test]
async fn network_is_removed_unless_allowed() {
    let caps = capabilities().await;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let base = tempfile::tempdir().unwrap();

    let (env, status) = os_env(base.path(), &["python3"], false, &caps, vec![]);
    match status.network_block {
        None => println!(
            "SKIPPED: network removal, because neither user namespaces ({}) nor seccomp ({}) work here",
            caps.user_namespaces_error.as_deref().unwrap_or("?"),
            caps.seccomp_error.as_deref().unwrap_or("?")
        ),
        Some(how) => {
            println!("network removed by {how:?}");
            let out = run(&env, &["python3", "-c", CONNECT_SCRIPT, &port], 30).await;
            assert!(out.starts_with("blocked:"), "{out}");
        }
    }

    let (env, status) = os_env(base.path(), &["python3"], true, &caps, vec![]);
    assert!(status.network_allowed && status.network_block.is_none());
    let out = run(&env, &["python3", "-c", CONNECT_SCRIPT, &port], 30).await;
    assert_eq!(out, "connected\n");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_ok(), "the listener saw no connection");
}

#[tokio::test]
async fn timeout_kills_the_command_and_its_grandchild() {
    let caps = capabilities().await;
    let base = tempfile::tempdir().unwrap();
    let (env, _) = os_env(base.path(), &["sh"], false, &caps, vec![]);
    // Pids inside a PID namespace are not the host's: find the processes
    // by an argument no other test uses. Neither would ever end by itself:
    // a runner that waited for them hangs, and the test runner's timeout
    // (.config/nextest.toml) fails it.
    let script = "sleep 86400.101 & echo started; sleep 86400.101";
    let out = run(&env, &["sh", "-c", script], 1).await;
    assert_eq!(out, "error: command timed out after 1s\nstarted\n");
    assert!(swival_tests::no_process_with_arg("86400.101"), "a process of the command survived");
}

#[tokio::test]
async fn setsid_and_double_forked_descendants_die_with_the_command() {
    let caps = capabilities().await;
    if !caps.pid_namespace {
        println!("SKIPPED: PID namespaces are unavailable here: {:?}", caps.pid_namespace_error);
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let (env, status) = os_env(base.path(), &["sh"], false, &caps, vec![]);
    assert!(status.pid_namespace);
    // Both escape the process group; the command itself returns at once.
    let script = "setsid sleep 60.202 >/dev/null 2>&1 & (sh -c 'sleep 60.202 >/dev/null 2>&1 &') ; echo $$";
    let out = run(&env, &["sh", "-c", script], 30).await;
    // The command is the first child of the namespace's init (pid 1).
    assert_eq!(out, "2\n", "the command does not run in its own PID namespace");
    assert!(swival_tests::no_process_with_arg("60.202"), "a setsid or double-forked process survived");
}

#[tokio::test]
async fn commands_see_only_their_own_processes_in_proc() {
    let caps = capabilities().await;
    if !caps.pid_namespace {
        println!("SKIPPED: PID namespaces are unavailable here: {:?}", caps.pid_namespace_error);
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let (env, _) = os_env(base.path(), &["ls"], false, &caps, vec![]);
    let out = run(&env, &["ls", "/proc"], 30).await;
    let pids: Vec<&str> = out.lines().filter(|l| l.chars().all(|c| c.is_ascii_digit())).collect();
    // init (1) and ls itself.
    assert_eq!(pids, ["1", "2"], "{out}");
}

#[tokio::test]
async fn large_output_spills_whole_with_a_preview() {
    let caps = capabilities().await;
    let base = tempfile::tempdir().unwrap();
    let (env, _) = os_env(base.path(), &["seq"], false, &caps, vec![]);
    let out = run(&env, &["seq", "1", "5000"], 30).await;
    assert!(out.starts_with("Command output too large for context ("), "{out}");
    assert!(out.contains("[preview]\n1\n2\n3\n"), "{out}");
    assert!(out.contains("[... preview includes lines 1-50; use read_file offset=51 for more]"));
    let rel = out.lines().find_map(|l| l.strip_prefix("Full output saved to: ")).unwrap();
    assert!(rel.starts_with(".swival/cmd_output_"), "{rel}");
    let expected: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(base.path().join(rel)).unwrap(), expected);
}

#[tokio::test]
async fn arguments_reach_the_program_literally_and_others_are_refused() {
    let caps = capabilities().await;
    let base = tempfile::tempdir().unwrap();
    let (env, _) = os_env(base.path(), &["echo", "ls"], false, &caps, vec![]);
    assert_eq!(run(&env, &["echo", "$(id)", "; rm -rf x", "`id`"], 10).await, "$(id) ; rm -rf x `id`\n");
    std::fs::write(base.path().join("a.txt"), "").unwrap();
    assert_eq!(run(&env, &["ls"], 10).await, "a.txt\n");
    assert_eq!(run(&env, &["rm", "a.txt"], 10).await, "error: command 'rm' is not allowed. Allowed commands: echo, ls");
    assert!(base.path().join("a.txt").exists());
}

#[tokio::test]
async fn daemon_socket_is_hidden_from_commands() {
    let caps = capabilities().await;
    let base = tempfile::tempdir().unwrap();
    let socket_dir = tempfile::tempdir().unwrap();
    let socket = socket_dir.path().join("swivald.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();

    // The socket itself hidden: connecting is refused.
    let (env, status) = os_env(base.path(), &["python3"], true, &caps, vec![socket.clone()]);
    if !status.daemon_socket_hidden {
        println!(
            "SKIPPED: hiding swivald's socket, because user namespaces do not work here: {}",
            caps.user_namespaces_error.as_deref().unwrap_or("?")
        );
        return;
    }
    let out = run(&env, &["python3", "-c", UNIX_CONNECT_SCRIPT, socket.to_str().unwrap()], 30).await;
    assert!(out.starts_with("refused:"), "{out}");

    // Its directory hidden: nothing to see.
    let (env, status) = os_env(base.path(), &["ls"], true, &caps, vec![socket_dir.path().to_owned()]);
    assert!(status.daemon_socket_hidden);
    assert_eq!(run(&env, &["ls", "-A", socket_dir.path().to_str().unwrap()], 10).await, "(no output)");

    // Without hiding, the same connection works (the test is not vacuous).
    let (env, _) = os_env(base.path(), &["python3"], true, &caps, vec![]);
    let out = run(&env, &["python3", "-c", UNIX_CONNECT_SCRIPT, socket.to_str().unwrap()], 30).await;
    assert_eq!(out, "connected\n");
}

const UNIX_CONNECT_SCRIPT: &str = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    print("connected")
except OSError as e:
    print("refused:", e.errno)
"#;

#[test]
fn helper_refuses_to_run_when_its_plan_cannot_be_applied() {
    let spec = r#"{"program":"/bin/echo","plan":{"landlock":true,"write_dirs":["/nonexistent/swivald-test"],"net":null,"hide_paths":[]}}"#;
    let out =
        std::process::Command::new(helper()).args(["--sandbox-exec", spec, "--", "echo", "ran"]).output().unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(out.stdout.is_empty(), "the command ran unconfined");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("swivald sandbox: Landlock: cannot open /nonexistent/swivald-test"), "{err}");
}

// ---- fetch_url ----

/// A tiny HTTP server on one loopback address, for a bounded time.
struct TestServer {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

type Route = fn(&str, SocketAddr) -> (u16, Vec<(String, String)>, Vec<u8>);

impl TestServer {
    fn start(ip: &str, route: Route) -> TestServer {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (hits.clone(), stop.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !s.load(Ordering::Relaxed) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((conn, _)) => {
                        h.fetch_add(1, Ordering::Relaxed);
                        serve(conn, addr, route);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        TestServer { addr, hits, stop }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(conn: std::net::TcpStream, addr: SocketAddr, route: Route) {
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reader = BufReader::new(&conn);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    loop {
        let mut h = String::new();
        match reader.read_line(&mut h) {
            Ok(0) | Err(_) => break,
            Ok(_) if h == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let (status, headers, body) = route(&path, addr);
    let mut out = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut conn = conn;
    let _ = conn.write_all(out.as_bytes());
    let _ = conn.write_all(&body);
}

const PAGE: &str = "<!doctype html><html><head><title>Test page</title><script>var secret = 1;</script></head><body><h1>Hello sandbox</h1><p>A paragraph with <a href=\"/next\">a link</a>.</p><ul><li>first</li><li>second</li></ul></body></html>";

/// The allowed server: a page, redirects, binary and large content.
fn allowed_routes(path: &str, _me: SocketAddr) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let h = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
    match path {
        "/" => (200, h("Content-Type", "text/html; charset=utf-8"), PAGE.into()),
        "/hop" => (302, h("Location", "/"), Vec::new()),
        "/loop" => (302, h("Location", "/loop"), Vec::new()),
        "/png" => (200, h("Content-Type", "image/png"), vec![0x89, b'P', b'N', b'G']),
        "/big" => (200, h("Content-Type", "text/plain"), "0123456789\n".repeat(6000).into()),
        p if p.starts_with("/to-loopback/") => {
            let port = &p["/to-loopback/".len()..];
            (302, h("Location", &format!("http://127.0.0.1:{port}/")), Vec::new())
        }
        _ => (404, Vec::new(), b"no".to_vec()),
    }
}

/// The forbidden server: anything it serves would be a leak.
fn forbidden_routes(_path: &str, _me: SocketAddr) -> (u16, Vec<(String, String)>, Vec<u8>) {
    (200, vec![("Content-Type".into(), "text/plain".into())], b"internal secret".to_vec())
}

fn fetch_env(base: &Path) -> FetchEnv {
    FetchEnv {
        base_dir: base.to_owned(),
        allow_networks: vec!["127.0.0.2/32".parse::<Cidr>().unwrap()],
        max_inline: 50 * 1024,
    }
}

async fn fetch(env: &FetchEnv, url: &str) -> String {
    let out = fetch_url(env, url, FetchFormat::Markdown, Duration::from_secs(10)).await.text;
    println!("fetch {url}\n{}", sandbox::truncate_utf8(&out, 2000));
    out
}

#[tokio::test]
async fn fetch_refuses_internal_addresses_names_and_schemes() {
    let base = tempfile::tempdir().unwrap();
    let env = fetch_env(base.path());
    for (url, addr) in [
        ("http://127.0.0.1/", "127.0.0.1"),
        ("http://10.0.0.1/", "10.0.0.1"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
        ("http://100.100.100.200/", "100.100.100.200"),
        ("http://[::1]/", "::1"),
        ("http://[fc00::1]/", "fc00::1"),
    ] {
        assert_eq!(
            fetch(&env, url).await,
            format!("error: url resolves to private/internal address ({addr}), blocked for security")
        );
    }
    // `localhost` resolves to loopback; 127.0.0.2/32 does not cover it.
    let out = fetch(&env, "http://localhost/").await;
    assert!(
        out.starts_with("error: url resolves to private/internal address (")
            && out.ends_with("), blocked for security"),
        "{out}"
    );
    let resolved: IpAddr =
        out["error: url resolves to private/internal address (".len()..].split(')').next().unwrap().parse().unwrap();
    assert!(resolved.is_loopback(), "{resolved}");
    assert_eq!(
        fetch(&env, "file:///etc/passwd").await,
        "error: url scheme 'file' is not allowed, must be http or https"
    );
    assert_eq!(fetch(&env, "ftp://127.0.0.2/x").await, "error: url scheme 'ftp' is not allowed, must be http or https");
}

#[tokio::test]
async fn fetch_refuses_a_redirect_from_an_allowed_server_to_loopback() {
    let base = tempfile::tempdir().unwrap();
    let env = fetch_env(base.path());
    let allowed = TestServer::start("127.0.0.2", allowed_routes);
    let internal = TestServer::start("127.0.0.1", forbidden_routes);
    let port = internal.addr.port();
    let out = fetch(&env, &allowed.url(&format!("/to-loopback/{port}"))).await;
    assert_eq!(out, "error: url resolves to private/internal address (127.0.0.1), blocked for security");
    assert_eq!(allowed.hits.load(Ordering::Relaxed), 1);
    assert_eq!(internal.hits.load(Ordering::Relaxed), 0, "the internal server was contacted");
    assert_eq!(fetch(&env, &allowed.url("/loop")).await, "error: too many redirects (limit is 10)");
    assert_eq!(allowed.hits.load(Ordering::Relaxed), 1 + 11);
}

#[tokio::test]
async fn fetch_converts_an_allowed_html_page_to_text() {
    let base = tempfile::tempdir().unwrap();
    let env = fetch_env(base.path());
    let server = TestServer::start("127.0.0.2", allowed_routes);
    let url = server.url("/hop");
    let out = fetch(&env, &url).await;
    let header = format!("[UNTRUSTED EXTERNAL CONTENT]\nsource: fetch_url\norigin: {url}\npolicy: ");
    assert!(out.starts_with(&header), "{out}");
    assert!(out.contains("# Hello sandbox"), "{out}");
    assert!(out.contains("A paragraph with [a link][1]."), "{out}");
    assert!(out.contains("* first\n* second"), "{out}");
    assert!(!out.contains("<p>") && !out.contains("var secret"), "{out}");

    let text = fetch_url(&env, &url, FetchFormat::Text, Duration::from_secs(10)).await.text;
    assert!(text.contains("\nHello sandbox\n"), "{text}");
    let html = fetch_url(&env, &url, FetchFormat::Html, Duration::from_secs(10)).await.text;
    assert!(html.ends_with(PAGE), "{html}");
}

#[tokio::test]
async fn fetch_refuses_binary_and_spills_large_pages() {
    let base = tempfile::tempdir().unwrap();
    let env = fetch_env(base.path());
    let server = TestServer::start("127.0.0.2", allowed_routes);
    assert_eq!(
        fetch(&env, &server.url("/png")).await,
        "error: binary content (content-type: image/png), cannot display as text"
    );
    let out = fetch(&env, &server.url("/big")).await;
    assert!(out.starts_with("[UNTRUSTED EXTERNAL CONTENT]\n"), "{out}");
    assert!(out.contains("too large for context (64.5KB)"), "{out}");
    let rel = out.lines().find_map(|l| l.strip_prefix("Full output saved to: ")).unwrap();
    let saved = std::fs::read_to_string(base.path().join(rel)).unwrap();
    assert!(saved.starts_with("[UNTRUSTED EXTERNAL CONTENT]\nsource: fetch_url\n"));
    assert!(saved.ends_with(&"0123456789\n".repeat(6000)));
}
