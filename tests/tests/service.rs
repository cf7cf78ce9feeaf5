//! Service integration: socket activation, notifications, signals, and the
//! swivalctl commands that manage the daemon.

use serde_json::json;
use swival_protocol::methods::{typed, NoParams};
use swival_tests::{bin, http_post, recv_line, TestEnv};

#[test]
fn socket_activation_notifies_ready_serves_and_notifies_stopping() {
    let env = TestEnv::new();
    let path = env.root().join("run/activated.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let mut daemon = swival_tests::activated_daemon(&env, &listener, &path);
    drop(listener); // the daemon holds its own copy (fd 3)
                    // READY=1 was seen by activated_daemon; now a request is served.
    let status = daemon.nd().ok("daemon/status", json!({}));
    assert_eq!(status["activation"], "systemd");
    assert_eq!(status["socket"], json!(path.display().to_string()));
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    let mut saw_stopping = false;
    while let Some(msg) = recv_line(&mut daemon.notify) {
        if msg.contains("STOPPING=1") {
            saw_stopping = true;
            break;
        }
    }
    assert!(saw_stopping, "no STOPPING=1 after SIGTERM");
    assert!(daemon.wait_exit().success());
    // systemd owns an activated socket's file: the daemon leaves it.
    assert!(path.exists());
}

#[test]
fn sigterm_exits_zero_and_removes_the_socket() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    assert!(env.socket().exists());
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    let status = daemon.wait_exit();
    assert_eq!(status.code(), Some(0), "{}", env.log());
    assert!(!env.socket().exists(), "socket file left behind");
}

#[test]
fn sigint_exits_zero_too() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    daemon.signal(nix::sys::signal::Signal::SIGINT);
    assert_eq!(daemon.wait_exit().code(), Some(0));
    assert!(!env.socket().exists());
}

#[test]
fn daemon_shutdown_answers_then_exits_zero() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let r = daemon.nd().ok("daemon/shutdown", json!({}));
    assert_eq!(r["stopping"], true);
    assert_eq!(daemon.wait_exit().code(), Some(0));
    assert!(!env.socket().exists());
}

#[test]
fn daemon_shutdown_over_http_answers_then_exits_zero() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let (code, body) = http_post(&daemon.socket, r#"{"jsonrpc":"2.0","id":3,"method":"daemon/shutdown"}"#);
    assert_eq!(code, 200, "{body}");
    let reply: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["result"]["stopping"], true, "{body}");
    assert_eq!(daemon.wait_exit().code(), Some(0));
    assert!(!env.socket().exists());
}

#[test]
fn daemon_shutdown_over_websocket_answers_then_exits_zero() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let reply = rt.block_on(async {
        let client = swivalctl::Client::connect(&daemon.socket).await.unwrap();
        // Not `Client::shutdown`, which also accepts a connection closed
        // before the reply: here the reply itself must arrive.
        client.request::<typed::DaemonShutdown>(&NoParams).await
    });
    assert!(reply.expect("the reply to daemon/shutdown").stopping);
    assert_eq!(daemon.wait_exit().code(), Some(0));
    assert!(!env.socket().exists());
}

#[test]
fn swivalctl_status_starts_a_daemon_when_none_runs() {
    let env = TestEnv::new();
    assert!(!env.socket().exists());
    let out = env.command(&bin("swivalctl")).args(["status", "--json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("started swivald"), "{stderr}");
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["socket"], json!(env.socket().display().to_string()));
    let pid = status["pid"].as_i64().unwrap();
    // A second status finds the same daemon and starts nothing.
    let out = env.command(&bin("swivalctl")).args(["status", "--json"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("started"));
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["pid"].as_i64(), Some(pid));
    // `daemon stop` stops it and the socket goes away.
    let out = env.command(&bin("swivalctl")).args(["daemon", "stop"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!env.socket().exists());
    assert!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_err() || zombie_or_gone(pid));
}

fn zombie_or_gone(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map(|s| s.contains(") Z ")).unwrap_or(true)
}

#[test]
fn swivalctl_socket_flag_and_env_select_the_daemon() {
    let env = TestEnv::new();
    let daemon = env.start_daemon_with(&["--socket", env.root().join("run/other/x.sock").to_str().unwrap()]);
    let out = env
        .command(&bin("swivalctl"))
        .args(["--socket", daemon.socket.to_str().unwrap(), "status", "--json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["pid"], json!(daemon.pid()));
    let out = env
        .command(&bin("swivalctl"))
        .env("SWIVALD_SOCKET", &daemon.socket)
        .args(["status", "--json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["pid"], json!(daemon.pid()));
}

#[test]
fn swivalctl_reports_why_a_daemon_could_not_start() {
    let env = TestEnv::new();
    // A socket directory that is too open makes swivald refuse to start.
    let dir = env.root().join("run/swival");
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = env.command(&bin("swivalctl")).arg("status").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("chmod 700"), "{stderr}");
}

#[test]
fn daemon_install_writes_units_with_the_absolute_daemon_path() {
    let env = TestEnv::new();
    let out = env.command(&bin("swivalctl")).args(["daemon", "install"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let unit_dir = env.root().join("config/systemd/user");
    let service = std::fs::read_to_string(unit_dir.join("swivald.service")).unwrap();
    let exe = std::fs::canonicalize(bin("swivald")).unwrap();
    assert!(service.contains(&format!("ExecStart={}\n", exe.display())), "{service}");
    assert!(service.contains("Type=notify"));
    let socket = std::fs::read_to_string(unit_dir.join("swivald.socket")).unwrap();
    assert!(socket.contains("SocketMode=0600"));
}

/// Threads of process `pid` whose name is tokio's (workers, and blocking
/// threads while they live).
fn tokio_threads(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).ok())
        .filter(|name| name.starts_with("tokio-r"))
        .count()
}

#[test]
fn worker_threads_sets_how_many_threads_run_the_daemons_tasks() {
    let env = TestEnv::new();
    env.daemon_settings("worker_threads = 3");
    let daemon = env.start_daemon();
    daemon.nd().ok("daemon/status", json!({}));
    let threads = tokio_threads(daemon.pid());
    assert!(threads >= 3, "{threads} tokio threads with worker_threads = 3");
}
