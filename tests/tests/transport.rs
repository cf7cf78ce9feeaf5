//! The socket and both framings, against the real swivald binary.

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use swival_tests::{http_post, init_params, TestEnv};

#[test]
fn ndjson_initialize_and_status_replies() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let init = c.ok("initialize", init_params());
    assert_eq!(init["server"]["name"], "swivald");
    assert_eq!(init["protocol_version"], 1);
    assert!(init["capabilities"]["methods"].as_array().unwrap().contains(&json!("daemon/status")));
    let status = c.ok("daemon/status", json!({}));
    assert_eq!(status["pid"], json!(daemon.pid()));
    assert_eq!(status["connections"], 1);
    assert_eq!(status["socket"], json!(env.socket().display().to_string()));
    assert!(status["uptime_s"].as_f64().unwrap() >= 0.0);
}

#[test]
fn newer_protocol_version_is_refused() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let reply =
        daemon.nd().call("initialize", json!({"client": {"name": "t", "version": "9"}, "protocol_version": 99}));
    assert_eq!(reply["error"]["code"], -32008, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("upgrade swivald"));
}

#[test]
fn malformed_line_gets_parse_error_and_connection_keeps_working() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    c.send_raw(b"{this is not json");
    let reply = c.read();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert_eq!(reply["id"], Value::Null);
    let status = c.ok("daemon/status", json!({}));
    assert_eq!(status["pid"], json!(daemon.pid()));
}

#[test]
fn invalid_request_gets_invalid_request_error() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    c.send_raw(br#"{"jsonrpc":"1.0","id":5,"method":"daemon/status"}"#);
    let reply = c.read();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_eq!(reply["id"], 5);
}

#[test]
fn unknown_method_gets_method_not_found() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let reply = daemon.nd().call("no/such/method", json!({}));
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
}

#[test]
fn bad_params_get_invalid_params() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let reply = daemon.nd().call("initialize", json!({"client": 3}));
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}

#[test]
fn notification_gets_no_reply() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    // A notification, then a call: the first line back must answer the call.
    c.send_raw(br#"{"jsonrpc":"2.0","method":"daemon/status"}"#);
    c.send_raw(br#"{"jsonrpc":"2.0","id":"after","method":"daemon/status"}"#);
    let reply = c.read();
    assert_eq!(reply["id"], "after", "the notification was answered: {reply}");
}

#[test]
fn batch_gets_one_array_reply_without_notifications() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    c.send_raw(br#"[{"jsonrpc":"2.0","id":1,"method":"daemon/status"},{"jsonrpc":"2.0","method":"daemon/status"},{"jsonrpc":"2.0","id":2,"method":"nope"}]"#);
    let reply = c.read();
    let items = reply.as_array().expect("batch reply is an array");
    assert_eq!(items.len(), 2, "{reply}");
    assert_eq!(items[0]["id"], 1);
    assert_eq!(items[1]["error"]["code"], -32601);
}

#[test]
fn over_limit_message_gets_error_and_daemon_keeps_serving() {
    let env = TestEnv::new();
    let daemon = env.start_daemon_with(&["--max-message-size", "4096"]);
    let mut c = daemon.nd();
    let big =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"daemon/status","params":{{"pad":"{}"}}}}"#, "x".repeat(10_000));
    c.send_raw(big.as_bytes());
    let reply = c.read();
    assert_eq!(reply["error"]["code"], -32007, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("max_message_size"));
    // Same connection, then a new one, both still served.
    assert_eq!(c.ok("daemon/status", json!({}))["pid"], json!(daemon.pid()));
    assert_eq!(daemon.nd().ok("daemon/status", json!({}))["pid"], json!(daemon.pid()));
    // So has the WebSocket framing, and its connection goes on too.
    use std::io::Write;
    let mut ws = swival_tests::ws::connect(&daemon.socket);
    ws.write_all(&swival_tests::ws::text(&big)).unwrap();
    let reply: Value = serde_json::from_str(&swival_tests::ws::read(&mut ws)).unwrap();
    assert_eq!(reply["error"]["code"], -32007, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("max_message_size"), "{reply}");
    ws.write_all(&swival_tests::ws::text(r#"{"jsonrpc":"2.0","id":2,"method":"daemon/status"}"#)).unwrap();
    let reply: Value = serde_json::from_str(&swival_tests::ws::read(&mut ws)).unwrap();
    assert_eq!(reply["result"]["pid"], json!(daemon.pid()), "{reply}");
    // The HTTP framing has the same limit.
    let (code, _) = http_post(&daemon.socket, &big);
    assert_eq!(code, 413);
}

#[test]
fn http_post_returns_the_same_results() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let (code, body) = http_post(&daemon.socket, r#"{"jsonrpc":"2.0","id":7,"method":"daemon/status"}"#);
    assert_eq!(code, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["result"]["pid"], json!(daemon.pid()));
    let (_, body) = http_post(
        &daemon.socket,
        &json!({"jsonrpc":"2.0","id":8,"method":"initialize","params":init_params()}).to_string(),
    );
    let nd_init = daemon.nd().ok("initialize", init_params());
    let http_init: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(http_init["result"], nd_init);
}

#[test]
fn client_library_speaks_websocket_over_the_socket() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let client = swivalctl::Client::connect(&daemon.socket).await.unwrap();
        let init = client.initialize("tests").await.unwrap();
        assert_eq!(init.server.name, "swivald");
        let status = client.status().await.unwrap();
        assert_eq!(status.pid as i32, daemon.pid());
        // The WebSocket connection counts as open while it lives.
        assert_eq!(status.connections, 1);
    });
}

#[test]
fn socket_is_0600_in_a_0700_directory() {
    let env = TestEnv::new();
    let _daemon = env.start_daemon();
    let sock_mode = std::fs::metadata(env.socket()).unwrap().permissions().mode() & 0o777;
    let dir_mode = std::fs::metadata(env.socket().parent().unwrap()).unwrap().permissions().mode() & 0o777;
    assert_eq!(sock_mode, 0o600);
    assert_eq!(dir_mode, 0o700);
}

#[test]
fn socket_dir_open_to_group_or_others_refuses_to_start() {
    let env = TestEnv::new();
    let dir = env.root().join("run/swival");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env.command(&swival_tests::bin("swivald")).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&dir.display().to_string()), "{err}");
    assert!(err.contains("chmod 700"), "{err}");
}

#[test]
fn socket_dir_owned_by_another_user_refuses_to_start() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIPPED: making a directory owned by another user needs root (chown)");
        return;
    }
    let env = TestEnv::new();
    let dir = env.root().join("run/swival");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    nix::unistd::chown(&dir, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    let out = env.command(&swival_tests::bin("swivald")).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("owned by uid 65534"), "{err}");
    assert!(err.contains(&dir.display().to_string()), "{err}");
}

#[test]
fn second_daemon_on_the_same_path_exits_and_first_keeps_serving() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let out = env.command(&swival_tests::bin("swivald")).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already serving"), "{err}");
    assert_eq!(daemon.nd().ok("daemon/status", json!({}))["pid"], json!(daemon.pid()));
}

#[test]
fn stale_socket_file_is_replaced() {
    let env = TestEnv::new();
    let dir = env.socket().parent().unwrap().to_owned();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // A socket file nobody listens on, as a crashed daemon leaves behind.
    drop(std::os::unix::net::UnixListener::bind(env.socket()).unwrap());
    assert!(env.socket().exists());
    let daemon = env.start_daemon();
    assert_eq!(daemon.nd().ok("daemon/status", json!({}))["pid"], json!(daemon.pid()));
    assert!(env.log().contains("removing stale socket"), "{}", env.log());
}

#[test]
fn client_of_another_uid_is_refused() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIPPED: running a client as another uid (65534) needs root");
        return;
    }
    // The peer check is what is under test, so the filesystem must let the
    // other user reach the socket: hand swivald a world-reachable socket
    // through socket activation.
    let env = TestEnv::new();
    let open_dir = env.root().join("open");
    std::fs::create_dir(&open_dir).unwrap();
    std::fs::set_permissions(env.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = open_dir.join("s.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let daemon = swival_tests::activated_daemon(&env, &listener, &path);
    let probe = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(60)
try:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon/status"}\n')
    data = s.recv(4096)
except (BrokenPipeError, ConnectionResetError):
    data = b""
print("REPLY" if data else "CLOSED")
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", probe, path.to_str().unwrap()])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("CLOSED"), "uid 65534 got: {stdout} {}", String::from_utf8_lossy(&out.stderr));
    assert!(env.log().contains("refused a connection from uid 65534"), "{}", env.log());
    // Our own uid is still served on the same socket.
    assert_eq!(daemon.nd().ok("daemon/status", json!({}))["pid"], json!(daemon.pid()));
}

use std::os::unix::process::CommandExt;
