//! MCP servers end to end, against real servers from npm that this project
//! did not write (`@modelcontextprotocol/server-everything` and
//! `server-filesystem`, installed into `tests/mcp/` by `npm ci --prefix
//! tests/mcp`): tools listed and called through the agent's one tool path,
//! `isError`, a crash reported then recovered, one process shared by
//! sessions and stopped when idle, none left after the daemon stops or is
//! killed, hooks that drop a call, and Swival's `.swival/mcp.json`.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use swival_tests::create_session as create;
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::{script, wait_until, NdConn, TestEnv};

/// A server installed from npm (`everything` or `filesystem`).
fn server(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("mcp/node_modules/.bin/mcp-server-{name}"));
    assert!(p.exists(), "{} is missing: run `npm ci --prefix tests/mcp` first", p.display());
    p.display().to_string()
}

fn config(mock: &MockProvider, servers: Value) -> Value {
    json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true, "mcp_servers": servers})
}

fn everything() -> Value {
    json!({"ev": {"command": server("everything")}})
}

fn run_on(c: &mut NdConn, sid: &str, task: &str) -> Value {
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}))
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
}

/// The content of the tool message answering call `id` in a request.
fn tool_result(req: &Value, id: &str) -> String {
    let messages = req["messages"].as_array().unwrap();
    let m = messages.iter().find(|m| m["tool_call_id"] == id).unwrap_or_else(|| panic!("no result for {id}: {req}"));
    m["content"].as_str().unwrap().to_owned()
}

fn mcp_status(c: &mut NdConn) -> Vec<Value> {
    c.ok("mcp/status", json!({}))["servers"].as_array().unwrap().clone()
}

fn pid_of(status: &[Value], name: &str) -> i32 {
    let s = status.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no server {name}: {status:?}"));
    s["pid"].as_i64().unwrap_or_else(|| panic!("{name} has no pid: {s}")) as i32
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().and_then(|s| s.split_whitespace().next()).unwrap_or("X");
    !stat.is_empty() && state != "Z" && state != "X"
}

#[test]
fn the_model_lists_and_calls_an_mcp_tool_and_the_result_reaches_the_next_request() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "mcp__ev__echo", json!({"message": "hello from the model"})),
        Step::tool_call("c2", "mcp__ev__get-sum", json!({"a": 2, "b": 3})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, config(&mock, everything()));
    let r = run_on(&mut c, &sid, "echo something");
    assert_eq!(r["outcome"], "success", "{r}");
    let requests = mock.requests();
    let names = tool_names(&requests[0]);
    assert!(names.contains(&"mcp__ev__echo".to_owned()) && names.contains(&"read_file".to_owned()), "{names:?}");
    let echo = requests[0]["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "mcp__ev__echo");
    let params = &echo.unwrap()["function"]["parameters"];
    assert_eq!(params["properties"]["message"]["type"], "string", "{params}");
    assert!(params.get("$schema").is_none(), "{params}");
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("## MCP Tools") && system.contains("- `mcp__ev__echo`: Echoes back"), "{system}");
    assert_eq!(tool_result(&requests[1], "c1"), "Echo: hello from the model");
    // A name the server spells with a dash, sanitized as Swival does (kept).
    assert!(tool_result(&requests[2], "c2").contains('5'), "{}", tool_result(&requests[2], "c2"));

    let report = c.ok("report/get", json!({"run_id": r["run_id"]}));
    assert_eq!(report["stats"]["tool_calls_by_name"]["mcp__ev__echo"], json!({"succeeded": 1, "failed": 0}));
    let policy = c.ok("policy/status", json!({"session_id": sid}));
    let ev = &policy["mcp_servers"][0];
    assert_eq!(
        (ev["name"].as_str(), ev["running"].as_bool(), ev["sessions"].as_u64()),
        (Some("ev"), Some(true), Some(1))
    );
    assert!(ev["files"][0]["sha256"].as_str().is_some_and(|s| s.len() == 64), "the server's program is pinned: {ev}");
    assert!(ev["tools"].as_array().unwrap().contains(&json!("mcp__ev__echo")), "{ev}");

    let out = env.swivalctl(&daemon, &p).args(["mcp", "status"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ev (stdio, running, pid") && text.contains("- mcp__ev__echo"), "{text}");
}

#[test]
fn an_is_error_result_becomes_an_error_tool_result() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let outside = env.project("outside");
    std::fs::write(outside.join("secret.txt"), "not for the model").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "mcp__fs__read_text_file", json!({"path": outside.join("secret.txt")})),
        Step::text("done"),
    ]);
    let servers = json!({"fs": {"command": server("filesystem"), "args": [p.display().to_string()]}});
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, config(&mock, servers));
    let r = run_on(&mut c, &sid, "read it");
    assert_eq!(r["outcome"], "success", "{r}");
    let result = tool_result(&mock.requests()[1], "c1");
    assert!(result.starts_with("error: ") && !result.contains("not for the model"), "{result}");
    let report = c.ok("report/get", json!({"run_id": r["run_id"]}));
    assert_eq!(report["stats"]["tool_calls_by_name"]["mcp__fs__read_text_file"]["failed"], 1);
}

#[test]
fn a_server_that_exits_mid_run_fails_that_call_and_starts_again_on_the_next() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "mcp__ev__echo", json!({"message": "one"})),
        Step::gated(Step::tool_call("c2", "mcp__ev__echo", json!({"message": "two"})), &gate),
        Step::tool_call("c3", "mcp__ev__echo", json!({"message": "three"})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, config(&mock, everything()));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    // The second request carries the first result; its reply is held.
    mock.wait_for_requests(2);
    let first = pid_of(&mcp_status(&mut c), "ev");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first), nix::sys::signal::Signal::SIGKILL).unwrap();
    wait_until("the killed server to be seen as stopped", || !mcp_status(&mut c)[0]["running"].as_bool().unwrap());
    gate.open();
    let r = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(r["outcome"], "success", "{r}");
    let requests = mock.requests();
    assert_eq!(tool_result(&requests[1], "c1"), "Echo: one");
    let failed = tool_result(&requests[2], "c2");
    assert!(failed.starts_with("error: MCP server 'ev' failed: the server exited"), "{failed}");
    assert!(failed.contains("started again on the next call"), "{failed}");
    assert_eq!(tool_result(&requests[3], "c3"), "Echo: three");
    let second = pid_of(&mcp_status(&mut c), "ev");
    assert_ne!(first, second, "a new process serves the next call");
}

#[test]
fn two_sessions_share_one_server_process_which_stops_once_idle() {
    let env = TestEnv::new();
    env.daemon_settings("mcp_idle_timeout_s = 0.2");
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("a"), Step::text("b")]);
    let mut c = daemon.nd();
    let one = create(&mut c, &p, config(&mock, everything()));
    let two = create(&mut c, &p, config(&mock, everything()));
    assert_eq!(run_on(&mut c, &one, "t")["outcome"], "success");
    assert_eq!(run_on(&mut c, &two, "t")["outcome"], "success");
    let status = mcp_status(&mut c);
    assert_eq!(status.len(), 1, "one server for both sessions: {status:?}");
    assert_eq!(status[0]["sessions"], 2, "{status:?}");
    let pid = pid_of(&status, "ev");
    assert!(alive(pid));

    c.ok("session/close", json!({"session_id": one}));
    assert_eq!(mcp_status(&mut c)[0]["sessions"], 1, "still used by the other session");
    assert!(alive(pid));
    c.ok("session/close", json!({"session_id": two}));
    wait_until("the idle server to stop", || mcp_status(&mut c).is_empty() && !alive(pid));
}

#[test]
fn no_server_process_remains_after_sigterm_or_after_sigkill_and_the_next_start() {
    let env = TestEnv::new();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("a"), Step::text("b")]);
    let start_server = |daemon: &swival_tests::Daemon| {
        let mut c = daemon.nd();
        let sid = create(&mut c, &p, config(&mock, everything()));
        assert_eq!(run_on(&mut c, &sid, "t")["outcome"], "success");
        pid_of(&mcp_status(&mut c), "ev")
    };

    let mut daemon = env.start_daemon();
    let pid = start_server(&daemon);
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert!(daemon.wait_exit().success());
    wait_until("the server to be gone after SIGTERM", || !alive(pid));

    let mut daemon = env.start_daemon();
    let pid = start_server(&daemon);
    let pid_file = env.root().join("state/swival/mcp").join(pid.to_string());
    assert!(pid_file.exists(), "a running server has a pid file for the next start");
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    daemon.wait_exit();
    let _next = env.start_daemon();
    wait_until("the orphaned server to be gone after the next start", || !alive(pid));
    assert!(!pid_file.exists(), "the next start removed the pid file");
}

#[test]
fn an_mcp_call_dropped_by_an_after_llm_call_hook_never_reaches_the_server() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let hook = script(
        &p,
        "drop_mcp.py",
        "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\n\
         keep = [c['id'] for c in req['assistant']['tool_calls'] if not c['name'].startswith('mcp__')]\n\
         print(json.dumps({'tool_calls': keep, 'reason': 'no MCP writes'}))\n",
    );
    let target = p.join("written-by-mcp.txt");
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "mcp__fs__write_file", json!({"path": target, "content": "x"})),
        Step::text("done"),
    ]);
    let mut cfg = config(&mock, json!({"fs": {"command": server("filesystem"), "args": [p.display().to_string()]}}));
    cfg["hooks"] = json!([{"point": "after_llm_call", "command": hook.display().to_string()}]);
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, cfg);
    let r = run_on(&mut c, &sid, "write it");
    assert_eq!(r["outcome"], "success", "{r}");
    assert_eq!(tool_result(&mock.requests()[1], "c1"), "error: blocked by policy: no MCP writes");
    assert!(!target.exists(), "the server wrote the file of a dropped call");
    // The same call without the hook does reach the server.
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "mcp__fs__write_file", json!({"path": target, "content": "x"})),
        Step::text("done"),
    ]);
    let sid = create(
        &mut c,
        &p,
        config(&mock, json!({"fs": {"command": server("filesystem"), "args": [p.display().to_string()]}})),
    );
    assert_eq!(run_on(&mut c, &sid, "write it")["outcome"], "success");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x");
}

/// `.swival/mcp.json` as Swival's documentation writes it.
fn write_mcp_json(p: &Path) -> PathBuf {
    std::fs::create_dir_all(p.join(".swival")).unwrap();
    let file = p.join(".swival/mcp.json");
    let body = json!({"mcpServers": {"everything": {"command": server("everything"), "args": [], "env": {}}}});
    std::fs::write(&file, serde_json::to_string_pretty(&body).unwrap()).unwrap();
    file
}

#[test]
fn a_swival_mcp_json_works_once_trusted_and_no_mcp_turns_it_off() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    write_mcp_json(&p);
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "mcp__everything__echo", json!({"message": "from json"})),
        Step::text("done"),
        Step::text("no tools"),
    ]);
    let base = ["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m", "--no-history"];

    let out = env.swivalctl(&daemon, &p).args(base).arg("t").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "an untrusted project file starts no server");
    assert!(stderr.contains(".swival/mcp.json mcpServers = everything: starts MCP server programs"), "{stderr}");
    assert_eq!(mock.request_count(), 0);

    let trusted = env.swivalctl(&daemon, &p).arg("trust").output().unwrap();
    assert_eq!(trusted.status.code(), Some(0), "{}", String::from_utf8_lossy(&trusted.stdout));
    let out = env.swivalctl(&daemon, &p).args(base).arg("t").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tool_result(&mock.requests()[1], "c1"), "Echo: from json");

    let out = env.swivalctl(&daemon, &p).args(base).args(["--no-mcp", "t"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!tool_names(&mock.requests()[2]).iter().any(|n| n.starts_with("mcp__")));
}

#[test]
fn mcp_config_names_a_json_file_in_place_of_the_projects_and_bad_config_says_what_is_wrong() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let elsewhere = env.project("conf");
    let file = write_mcp_json(&elsewhere);
    let mock = MockProvider::start(vec![Step::text("done")]);
    let base = ["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m", "--no-history"];
    let out = env.swivalctl(&daemon, &p).args(base).arg("--mcp-config").arg(&file).arg("t").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "the user's own file needs no trust: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(tool_names(&mock.requests()[0]).contains(&"mcp__everything__echo".to_owned()));

    let out =
        env.swivalctl(&daemon, &p).args(base).args(["--mcp-config", "/nonexistent/mcp.json", "t"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--mcp-config file not found: /nonexistent/mcp.json"), "{stderr}");

    let mut c = daemon.nd();
    let bad = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m",
        "mcp_servers": {"a__b": {"command": "x"}}});
    let r = c.call("session/create", json!({"base_dir": p, "config": bad}));
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("MCP server name 'a__b' must not contain double underscores"), "{r}");
    let both = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m",
        "mcp_servers": {"s": {"command": "x", "url": "http://127.0.0.1:9/mcp"}}});
    let r = c.call("session/create", json!({"base_dir": p, "config": both}));
    assert!(r["error"]["message"].as_str().unwrap_or_default().contains("cannot have both 'command' and 'url'"), "{r}");
}

#[test]
fn a_server_that_cannot_start_is_a_warning_and_its_calls_say_why() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("done")]);
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, config(&mock, json!({"gone": {"command": "no-such-mcp-server-xyz"}})));
    let r = run_on(&mut c, &sid, "t");
    assert_eq!(r["outcome"], "success", "{r}");
    let events = swival_tests::events_until_finished(&mut c, &sid, 0);
    let warned = events.iter().any(|e| {
        e["type"] == "warning"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("MCP server 'gone' could not start: executable not found"))
    });
    assert!(warned, "{events:?}");
}

/// server-everything's streamable HTTP mode on a free port, killed on drop.
struct HttpServer {
    /// The server process.
    child: std::process::Child,
    /// Its endpoint.
    url: String,
}

impl HttpServer {
    fn start() -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = std::process::Command::new(server("everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        wait_until("the HTTP MCP server to listen", || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        HttpServer { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_streamable_http_server_is_reached_by_url_with_its_headers() {
    let http = HttpServer::start();
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "mcp__web__echo", json!({"message": "over http"})),
        Step::text("done"),
    ]);
    let servers = json!({"web": {"url": http.url, "type": "http", "headers": {"X-Test": "1"}}});
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, config(&mock, servers));
    let r = run_on(&mut c, &sid, "t");
    assert_eq!(r["outcome"], "success", "{r}");
    assert_eq!(tool_result(&mock.requests()[1], "c1"), "Echo: over http");
    let status = mcp_status(&mut c);
    assert_eq!(
        (status[0]["transport"].as_str(), status[0]["running"].as_bool()),
        (Some("streamable-http"), Some(true))
    );
    assert!(!status[0].to_string().contains("X-Test"), "headers are never shown: {status:?}");
}

#[test]
fn sandbox_mcp_runs_a_server_under_the_command_sandbox() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let outside = env.project("outside");
    let (inside_file, outside_file) = (p.join("in.txt"), outside.join("out.txt"));
    let mock = MockProvider::start(vec![
        Step::tool_call("out", "mcp__fs__write_file", json!({"path": outside_file, "content": "x"})),
        Step::tool_call("in", "mcp__fs__write_file", json!({"path": inside_file, "content": "y"})),
        Step::text("done"),
    ]);
    // The server itself would allow both directories; the sandbox does not.
    let dirs = [p.display().to_string(), outside.display().to_string()];
    let mut cfg = config(&mock, json!({"fs": {"command": server("filesystem"), "args": dirs}}));
    cfg["sandbox_mcp"] = json!(true);
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, cfg);
    let st = c.ok("policy/status", json!({"session_id": sid}));
    if !st["sandbox"]["summary"].to_string().contains("Landlock") {
        eprintln!("SKIPPED: the kernel here does not confine programs: {}", st["sandbox"]);
        return;
    }
    let r = run_on(&mut c, &sid, "write both");
    assert_eq!(r["outcome"], "success", "{r}");
    let requests = mock.requests();
    let refused = tool_result(&requests[1], "out");
    assert!(refused.starts_with("error:"), "{refused}");
    assert!(!outside_file.exists(), "a confined server wrote outside the project");
    let written = tool_result(&requests[2], "in");
    assert!(!written.starts_with("error:"), "{written}");
    assert_eq!(std::fs::read_to_string(&inside_file).unwrap(), "y");
    let status = mcp_status(&mut c);
    assert!(status[0]["command"].as_str().unwrap().ends_with("(sandboxed)"), "{status:?}");
}

#[test]
fn an_mcp_server_gets_the_real_secret_where_the_model_wrote_its_ciphertext() {
    const GITHUB: &str = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("noted")]);
    let mut cfg = config(&mock, json!({"fs": {"command": server("filesystem"), "args": [p.display().to_string()]}}));
    cfg["encrypt_secrets"] = json!(true);
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, cfg);
    assert_eq!(run_on(&mut c, &sid, &format!("remember {GITHUB}"))["outcome"], "success");
    let body = mock.requests()[0]["messages"].to_string();
    let at = body.find("ghp_").expect("the ciphertext keeps the prefix");
    let cipher = &body[at..at + GITHUB.len()];
    assert_ne!(cipher, GITHUB);

    let target = p.join("token.txt");
    mock.push(Step::tool_call("w", "mcp__fs__write_file", json!({"path": target, "content": cipher})));
    mock.push(Step::text("written"));
    assert_eq!(run_on(&mut c, &sid, "write it")["outcome"], "success");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), GITHUB, "the server saw the decrypted argument");
    assert!(!mock.requests_text().contains(GITHUB), "the provider never saw the key");
}
