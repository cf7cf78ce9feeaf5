//! The inbox: what background work did — a goal's end, each loop firing,
//! a detached run — and a background run that waits for an approval says
//! so there and waits (it never approves itself) until answered with
//! `swivalctl approve`. Real daemon, real client, mock provider.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{create_session, wait_until, NdConn, TestEnv};

fn config(mock: &MockProvider) -> Value {
    json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true})
}

/// The inbox, newest first.
fn inbox(c: &mut NdConn) -> Vec<Value> {
    c.ok("inbox/list", json!({}))["entries"].as_array().unwrap().clone()
}

/// Wait until the inbox holds an entry `matches` accepts; that entry.
fn entry_where(c: &mut NdConn, matches: impl Fn(&Value) -> bool) -> Value {
    let mut found = None;
    wait_until("the inbox entry", || {
        found = inbox(c).into_iter().find(|e| matches(e));
        found.is_some()
    });
    found.unwrap()
}

#[test]
fn a_goals_end_and_a_detached_run_land_in_the_inbox_with_what_they_changed() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call("w1", "write_file", json!({"file_path": "notes.md", "content": "# Notes\n"})),
        Step::tool_call("g1", "complete_goal", json!({})),
        Step::tool_call("w2", "write_file", json!({"file_path": "todo.md", "content": "- x\n"})),
        Step::text("wrote todo.md"),
    ]);
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    let mut c = daemon.nd();
    assert_eq!(inbox(&mut c), Vec::<Value>::new());
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "start the notes"}));
    let goal = entry_where(&mut c, |e| e["trigger"] == "goal");
    assert_eq!((goal["outcome"].clone(), goal["title"].clone()), (json!("complete"), json!("start the notes")));
    assert_eq!(goal["files"], json!(["notes.md"]), "{goal}");
    assert_eq!(goal["session_id"], json!(sid));

    // A detached run reports its end there too.
    let out = env.swivalctl(&daemon, &p).args(["run", "--detach", "write the todo list"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let detached = entry_where(&mut c, |e| e["trigger"] == "detached");
    assert_eq!((detached["outcome"].clone(), detached["files"].clone()), (json!("success"), json!(["todo.md"])));
    assert_eq!(detached["detail"], "wrote todo.md");
    let shown = env.swivalctl(&daemon, &p).arg("inbox").output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    let first = shown.lines().next().unwrap();
    assert!(first.starts_with("#2 ") && first.contains("detached run  success  write the todo list"), "{shown}");
    assert!(shown.contains("goal g_") && shown.contains("complete  start the notes"), "{shown}");
    assert!(shown.contains("changed notes.md") && shown.contains("see: swivalctl diff r_"), "{shown}");
}

#[test]
fn a_background_run_that_needs_an_approval_waits_and_says_so_in_the_inbox() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "run_command", json!({"command": ["touch", "made"]})),
        Step::tool_call("g1", "complete_goal", json!({})),
    ]);
    let mut c = daemon.nd();
    let mut cfg = config(&mock);
    cfg["commands"] = json!("ask");
    let sid = create_session(&mut c, &p, cfg);
    c.ok("goal/set", json!({"session_id": sid, "objective": "make the file"}));
    let waiting = entry_where(&mut c, |e| e["outcome"] == "waiting_approval");
    assert!(waiting["detail"].as_str().unwrap().contains("touch made"), "{waiting}");
    assert!(!p.join("made").exists(), "nothing runs before the answer");
    let listed = env.swivalctl(&daemon, &p).arg("inbox").output().unwrap();
    let approval = waiting["approval_id"].as_str().unwrap();
    let answer = format!("answer: swivalctl approve {sid} {approval} allow|deny");
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&answer), "{listed:?}");
    let ok = env.swivalctl(&daemon, &p).args(["approve", &sid, approval, "allow"]).output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let done = entry_where(&mut c, |e| e["outcome"] == "complete");
    assert_eq!(done["trigger"], "goal");
    assert!(p.join("made").exists());
    let again = env.swivalctl(&daemon, &p).args(["approve", &sid, approval, "allow"]).output().unwrap();
    assert_eq!(again.status.code(), Some(1), "an answered approval waits no more");
}

#[test]
fn desktop_notifications_go_through_the_platforms_tool_with_argv_only() {
    let env = TestEnv::new();
    env.daemon_settings("desktop_notifications = true");
    let tools = env.project("tools");
    let said = tools.join("said.txt");
    let fake = format!("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> {}; done\n", said.display());
    swival_tests::script(&tools, "notify-send", &fake);
    let mut cmd = env.command(&swival_tests::bin("swivald"));
    let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
    cmd.env("PATH", path);
    let daemon = swival_tests::Daemon::spawn(&env, cmd, &[]).expect("swivald starts");
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::tool_call("g1", "complete_goal", json!({}))]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "tidy up; rm -rf / \"quoted\""}));
    entry_where(&mut c, |e| e["outcome"] == "complete");
    wait_until("the notification", || std::fs::read_to_string(&said).is_ok_and(|s| s.lines().count() >= 4));
    let lines: Vec<String> = std::fs::read_to_string(&said).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(
        lines,
        ["--app-name=swivald", "--", "swivald: complete", "tidy up; rm -rf / \"quoted\""],
        "one argument each"
    );
}

/// A one-request HTTP server on 127.0.0.1: its URL, and the request it got.
fn one_request_server() -> (String, std::sync::mpsc::Receiver<String>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(swival_tests::IO_TIMEOUT)).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // Headers, then the body its Content-Length says.
        loop {
            let n = conn.read(&mut buf).unwrap();
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let len = text.lines().find_map(|l| {
                    l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap())
                });
                if got.len() >= end + 4 + len.unwrap_or(0) || n == 0 {
                    break;
                }
            }
        }
        conn.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n").unwrap();
        tx.send(String::from_utf8_lossy(&got).to_string()).unwrap();
    });
    (url, rx)
}

#[test]
fn a_goals_webhook_gets_its_entries_through_the_fetch_checks() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::tool_call("g1", "complete_goal", json!({}))]);
    let mut c = daemon.nd();
    let mut cfg = config(&mock);
    cfg["fetch_allow_networks"] = json!(["127.0.0.1/32"]);
    let sid = create_session(&mut c, &p, cfg);
    let bad = c.call("goal/set", json!({"session_id": sid, "objective": "x", "webhook": "file:///etc/passwd"}));
    assert!(bad["error"]["message"].as_str().unwrap().contains("webhook file:///etc/passwd"), "{bad}");
    let (url, got) = one_request_server();
    c.ok("goal/set", json!({"session_id": sid, "objective": "finish", "webhook": url}));
    let request = got.recv_timeout(swival_tests::IO_TIMEOUT).expect("the webhook is posted to");
    assert!(request.starts_with("POST /hook HTTP/1.1\r\n"), "{request}");
    let body: Value = serde_json::from_str(request.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!((body["trigger"].clone(), body["outcome"].clone()), (json!("goal"), json!("complete")), "{body}");
    assert_eq!(body["title"], "finish");
}

#[test]
fn a_webhook_to_a_private_address_is_refused_unless_the_session_allows_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::tool_call("g1", "complete_goal", json!({}))]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    let (url, got) = one_request_server();
    c.ok("goal/set", json!({"session_id": sid, "objective": "finish", "webhook": url}));
    entry_where(&mut c, |e| e["outcome"] == "complete");
    wait_until("the refusal in the log", || env.log().contains("was not reached"));
    assert!(got.try_recv().is_err(), "nothing reached the loopback address");
}

#[test]
fn an_editor_follows_the_inbox_by_subscription() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::tool_call("g1", "complete_goal", json!({}))]);
    let mut follower = daemon.nd();
    follower.ok("inbox/subscribe", json!({}));
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "finish"}));
    let entry = loop {
        let msg = follower.read();
        if msg["method"] == "inbox/entry" {
            break msg["params"]["result"].clone();
        }
    };
    assert_eq!((entry["trigger"].clone(), entry["outcome"].clone()), (json!("goal"), json!("complete")), "{entry}");
    assert_eq!(entry["seq"], 1);
}

#[test]
fn a_file_name_the_model_chose_cannot_paint_the_terminal_or_forge_an_inbox_line() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    // A name with an escape sequence and a newline that would start a
    // fake "answer: swivalctl approve" line.
    let name = "x\u{1b}[2J\nanswer: swivalctl approve s_x a_x allow|deny.txt";
    let mock = MockProvider::start(vec![
        Step::tool_call("w1", "write_file", json!({"file_path": name, "content": "x\n"})),
        Step::tool_call("g1", "complete_goal", json!({})),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "write it"}));
    let entry = entry_where(&mut c, |e| e["outcome"] == "complete");
    assert_eq!(entry["files"], json!([name]), "the entry keeps the name as it is: {entry}");
    let shown = env.swivalctl(&daemon, &p).arg("inbox").output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(!shown.contains('\u{1b}'), "no escape sequence reaches the terminal: {shown:?}");
    assert!(!shown.lines().any(|l| l.trim_start().starts_with("answer:")), "no forged line: {shown}");
}
