//! run_command and fetch_url through the daemon: the whitelist, the OS
//! sandbox as a session configures it, policy/check and policy/status.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{NdConn, TestEnv};

fn session(c: &mut NdConn, base: &Path, mock: &MockProvider, extra: Value) -> Value {
    let mut cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    for (k, v) in extra.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    c.call("session/create", json!({"base_dir": base, "config": cfg}))
}

/// Run one task and return the tool results the model was shown, by call id.
fn tool_results(c: &mut NdConn, sid: &Value, mock: &MockProvider) -> std::collections::HashMap<String, String> {
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    let r = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(r["outcome"], "success", "{r}");
    mock.tool_results()
}

#[test]
fn whitelisted_ls_runs_rm_is_refused_and_arguments_reach_the_program_literally() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("hello.txt"), "x").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("ls", "run_command", json!({"command": ["ls"]})),
        Step::tool_call("rm", "run_command", json!({"command": ["rm", "hello.txt"]})),
        Step::tool_call("echo", "run_command", json!({"command": ["echo", "$(id)", "; rm -rf x"]})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, json!({"allowed_commands": ["ls", "echo"]}))["result"]["session_id"].clone();
    let results = tool_results(&mut c, &sid, &mock);
    assert!(results["ls"].contains("hello.txt"), "{}", results["ls"]);
    assert!(results["rm"].starts_with("error:"), "{}", results["rm"]);
    assert!(p.join("hello.txt").exists());
    assert!(results["echo"].contains("$(id) ; rm -rf x"), "{}", results["echo"]);
    let tools = mock.requests()[0]["tools"].to_string();
    assert!(tools.contains("\"run_command\"") && tools.contains("\"fetch_url\""));
}

#[test]
fn commands_are_off_without_a_whitelist_and_a_whitelisted_name_inside_the_base_dir_is_refused() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("ok")]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, json!({}))["result"]["session_id"].clone();
    let _ = tool_results(&mut c, &sid, &mock);
    let tools = mock.requests()[0]["tools"].to_string();
    assert!(!tools.contains("run_command"), "run_command offered without allowed_commands");

    swival_tests::script(&p, "mytool", "#!/bin/sh\necho hi\n");
    let path = format!("{}:{}", p.display(), std::env::var("PATH").unwrap());
    // The daemon resolves names on its own PATH; a name that resolves into
    // the base dir is refused at session creation.
    drop(c);
    drop(daemon);
    let mut cmd = env.command(&swival_tests::bin("swivald"));
    cmd.env("PATH", &path);
    let daemon = swival_tests::Daemon::spawn(&env, cmd, &[]).unwrap();
    let mut c = daemon.nd();
    let r = session(&mut c, &p, &mock, json!({"allowed_commands": ["mytool"]}));
    assert_eq!(r["error"]["code"], -32005, "{r}");
    let r = session(&mut c, &p, &mock, json!({"allowed_commands": ["no-such-program-here"]}));
    assert!(r["error"]["message"].as_str().unwrap().contains("no-such-program-here"), "{r}");
}

#[test]
fn os_sandbox_confines_writes_and_network_as_configured() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let outside = env.root().join("outside.txt");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED");
    let mut c = daemon.nd();
    let probe = session(&mut c, &p, &MockProvider::start(vec![]), json!({"allowed_commands": ["sh"]}));
    let sid = probe["result"]["session_id"].clone();
    let st = c.ok("policy/status", json!({"session_id": sid}));
    if !st["sandbox"]["enforced"].to_string().contains("Landlock") {
        eprintln!("SKIPPED: the kernel here does not confine commands: {}", st["sandbox"]);
        return;
    }
    let mock = MockProvider::start(vec![
        Step::tool_call(
            "out",
            "run_command",
            json!({"command": ["sh", "-c", format!("echo x > {}", outside.display())]}),
        ),
        Step::tool_call("in", "run_command", json!({"command": ["sh", "-c", "echo x > inside.txt && echo WROTE"]})),
        Step::tool_call("net", "run_command", json!({"command": ["bash", "-c", connect]})),
        Step::text("done"),
    ]);
    let sid = session(&mut c, &p, &mock, json!({"allowed_commands": ["sh", "bash"]}))["result"]["session_id"].clone();
    let r = tool_results(&mut c, &sid, &mock);
    assert!(r["out"].contains("Permission denied") || r["out"].contains("ermission"), "{}", r["out"]);
    assert!(!outside.exists(), "a command wrote outside the base dir");
    assert!(r["in"].contains("WROTE") && p.join("inside.txt").exists(), "{}", r["in"]);
    assert!(!r["net"].contains("CONNECTED"), "network reachable with command_network off: {}", r["net"]);

    let mock = MockProvider::start(vec![
        Step::tool_call(
            "net",
            "run_command",
            json!({"command": ["bash", "-c", format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED")]}),
        ),
        Step::text("done"),
    ]);
    let sid = session(&mut c, &p, &mock, json!({"allowed_commands": ["bash"], "command_network": true}))["result"]
        ["session_id"]
        .clone();
    let r = tool_results(&mut c, &sid, &mock);
    assert!(r["net"].contains("CONNECTED"), "{}", r["net"]);
}

#[test]
fn policy_check_says_whether_a_command_would_run() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("swival.toml"), "allowed_commands = [\"ls\"]\n").unwrap();
    let out = env.swivalctl(&daemon, &p).args(["policy", "check", "--", "ls", "-la"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.starts_with("allowed: would run /") && stdout.contains("ls"), "{stdout}");
    let out = env.swivalctl(&daemon, &p).args(["policy", "check", "--", "rm", "-rf", "x"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.starts_with("refused:") && stdout.contains("rm"), "{stdout}");
}

#[test]
fn fetch_url_refuses_loopback_and_fetches_an_allowed_test_server() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in server.incoming().take(4) {
            let mut s = stream.unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body = "<html><body><h1>Title</h1><p>Hello from the test server.</p></body></html>";
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let url = format!("http://127.0.0.1:{port}/page");
    let mock = MockProvider::start(vec![
        Step::tool_call("blocked", "fetch_url", json!({"url": url})),
        Step::tool_call("file", "fetch_url", json!({"url": "file:///etc/passwd"})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, json!({}))["result"]["session_id"].clone();
    let r = tool_results(&mut c, &sid, &mock);
    assert!(r["blocked"].starts_with("error:") && r["blocked"].contains("127.0.0.1"), "{}", r["blocked"]);
    assert!(r["file"].starts_with("error:"), "{}", r["file"]);

    let mock = MockProvider::start(vec![Step::tool_call("ok", "fetch_url", json!({"url": url})), Step::text("done")]);
    let sid =
        session(&mut c, &p, &mock, json!({"fetch_allow_networks": ["127.0.0.1/32"]}))["result"]["session_id"].clone();
    let r = tool_results(&mut c, &sid, &mock);
    assert!(r["ok"].contains("Hello from the test server.") && !r["ok"].contains("<p>"), "{}", r["ok"]);
    assert!(r["ok"].contains("UNTRUSTED EXTERNAL CONTENT"));
}
