//! `swivalctl acp` driven by an ACP client we did not write: the official
//! SDK (`@agentclientprotocol/sdk` from npm, installed by `.ci/run` into
//! `tests/acp/`), through `tests/acp/driver.mjs`. Every `session/update`
//! is also validated against the SDK's published JSON schema.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Stdio};
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::{bin, script, Daemon, TestEnv};

fn acp_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("acp");
    assert!(
        dir.join("node_modules/@agentclientprotocol/sdk").is_dir(),
        "the ACP client SDK is missing: run `npm ci --prefix tests/acp` (.ci/run does)"
    );
    dir
}

/// One driver process: the official client talking to `swivalctl acp`.
struct Driver {
    child: Child,
    lines: BufReader<ChildStdout>,
    seen: Vec<Value>,
}

impl Driver {
    fn start(env: &TestEnv, daemon: &Daemon, scenario: Value) -> Driver {
        let mut child = env
            .command(Path::new("node"))
            .arg(acp_dir().join("driver.mjs"))
            .arg(bin("swivalctl"))
            .arg(scenario.to_string())
            .env("SWIVALD_SOCKET", &daemon.socket)
            .stdout(Stdio::piped())
            .spawn()
            .expect("node runs (install Node.js)");
        let lines = BufReader::new(child.stdout.take().expect("stdout"));
        Driver { child, lines, seen: Vec::new() }
    }

    /// The next message the client saw (`None`: the driver ended).
    fn next(&mut self) -> Option<Value> {
        let mut line = String::new();
        if self.lines.read_line(&mut line).expect("read driver output") == 0 {
            return None;
        }
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("driver printed {line:?}: {e}"));
        assert_ne!(v["type"], "invalid", "an update does not validate against the ACP schema: {v}");
        self.seen.push(v.clone());
        Some(v)
    }

    /// Read until a message matches, returning it.
    fn until(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        while let Some(v) = self.next() {
            if pred(&v) {
                return v;
            }
        }
        panic!("the driver ended before {what}; it saw:\n{}", self.dump());
    }

    /// Everything until the driver exits.
    fn finish(mut self) -> Vec<Value> {
        while self.next().is_some() {}
        let status = self.child.wait().expect("wait driver");
        assert!(status.success(), "driver failed ({status}); it saw:\n{}", self.dump());
        self.seen
    }

    fn dump(&self) -> String {
        self.seen.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
    }
}

fn result<'a>(seen: &'a [Value], op: &str) -> &'a Value {
    let r = seen.iter().find(|v| v["type"] == "result" && v["op"] == op);
    &r.unwrap_or_else(|| panic!("no {op} result in:\n{}", dump(seen)))["result"]
}

fn updates(seen: &[Value]) -> Vec<&Value> {
    seen.iter().filter(|v| v["type"] == "update").map(|v| &v["update"]).collect()
}

fn dump(seen: &[Value]) -> String {
    seen.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
}

/// The kinds of updates, in order, without the slash-command list; a
/// message streamed in several chunks counts once.
fn kinds(seen: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = updates(seen)
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or_default().to_owned())
        .filter(|k| k != "available_commands_update")
        .collect();
    out.dedup_by(|a, b| a == b && a.ends_with("_chunk"));
    out
}

fn text_of(seen: &[Value], kind: &str) -> String {
    updates(seen)
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect()
}

fn provider_config(env: &TestEnv, mock: &MockProvider, extra: &str) {
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n{extra}", mock.base_url()));
}

fn edit_script() -> Vec<Step> {
    vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "calc.py"})),
        Step::tool_call(
            "c2",
            "edit_file",
            json!({"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
        ),
        Step::text("Fixed add."),
    ]
}

#[test]
fn a_prompt_streams_a_read_an_edit_with_its_diff_and_the_answer_then_a_second_client_loads_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    let mock = MockProvider::start(edit_script());
    provider_config(&env, &mock, "");
    let cwd = p.display().to_string();
    let seen = Driver::start(
        &env,
        &daemon,
        json!({"steps": [{"op": "new", "cwd": cwd}, {"op": "prompt", "text": "make add add"}]}),
    )
    .finish();

    let init = result(&seen, "initialize");
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{init}");
    let session = result(&seen, "new")["sessionId"].as_str().expect("a session id").to_owned();
    assert_eq!(result(&seen, "prompt")["stopReason"], "end_turn", "{}", dump(&seen));
    // The prompt is the editor's own: it is not echoed back while live.
    assert_eq!(
        kinds(&seen),
        ["tool_call", "tool_call_update", "tool_call", "tool_call_update", "agent_message_chunk"],
        "{}",
        dump(&seen)
    );
    let ups = updates(&seen);
    let calls: Vec<&&Value> = ups.iter().filter(|u| u["sessionUpdate"] == "tool_call").collect();
    assert_eq!(calls[0]["kind"], "read");
    assert_eq!(calls[0]["title"], "Read calc.py");
    assert_eq!(calls[0]["locations"][0]["path"], p.join("calc.py").display().to_string());
    assert_eq!(calls[1]["kind"], "edit");
    let edit_done = ups.iter().filter(|u| u["sessionUpdate"] == "tool_call_update").nth(1).unwrap();
    assert_eq!(edit_done["status"], "completed", "{edit_done}");
    let diff = &edit_done["content"][0];
    assert_eq!(diff["type"], "diff", "{edit_done}");
    assert_eq!(diff["oldText"], "def add(a, b):\n    return a - b\n");
    assert_eq!(diff["newText"], "def add(a, b):\n    return a + b\n");
    assert_eq!(text_of(&seen, "agent_message_chunk"), "Fixed add.");
    assert_eq!(std::fs::read_to_string(p.join("calc.py")).unwrap(), "def add(a, b):\n    return a + b\n");

    // A second client process loads the session: the same conversation,
    // replayed, then the load answers; the session is listed for its cwd.
    let again = Driver::start(
        &env,
        &daemon,
        json!({"steps": [{"op": "load", "session_id": session, "cwd": cwd}, {"op": "list", "cwd": cwd}]}),
    )
    .finish();
    result(&again, "load");
    assert_eq!(kinds(&again)[0], "user_message_chunk", "{}", dump(&again));
    assert_eq!(kinds(&again)[1..], kinds(&seen), "{}", dump(&again));
    assert_eq!(text_of(&again, "user_message_chunk"), "make add add");
    assert_eq!(text_of(&again, "agent_message_chunk"), "Fixed add.");
    let replayed_diff = updates(&again)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["content"][0]["type"] == "diff")
        .cloned()
        .expect("the edit's diff is replayed");
    assert_eq!(replayed_diff["content"][0], *diff, "{}", dump(&again));
    let listed = &result(&again, "list")["sessions"];
    assert!(listed.as_array().unwrap().iter().any(|s| s["sessionId"] == session.as_str()), "{listed}");
}

#[test]
fn cancel_mid_run_answers_the_prompt_with_cancelled() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::hang()]);
    provider_config(&env, &mock, "");
    let scenario = json!({"steps": [
        {"op": "new", "cwd": p.display().to_string()},
        {"op": "prompt", "text": "think for a long time", "cancel_on": "sent"},
    ]});
    let seen = Driver::start(&env, &daemon, scenario).finish();
    assert_eq!(result(&seen, "prompt")["stopReason"], "cancelled", "{}", dump(&seen));
}

#[test]
fn the_todo_list_becomes_the_editors_plan_from_the_events_data() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call("t1", "todo", json!({"action": "add", "tasks": ["read the code", "fix the bug"]})),
        Step::tool_call("t2", "todo", json!({"action": "done", "tasks": ["read the code"]})),
        Step::text("planned"),
    ]);
    provider_config(&env, &mock, "");
    let scenario =
        json!({"steps": [{"op": "new", "cwd": p.display().to_string()}, {"op": "prompt", "text": "plan it"}]});
    let seen = Driver::start(&env, &daemon, scenario).finish();
    let plans: Vec<&Value> = updates(&seen).into_iter().filter(|u| u["sessionUpdate"] == "plan").collect();
    assert_eq!(plans.len(), 2, "{}", dump(&seen));
    let entries = |plan: &Value| -> Vec<(String, String)> {
        plan["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["content"].as_str().unwrap().to_owned(), e["status"].as_str().unwrap().to_owned()))
            .collect()
    };
    let pending = |t: &str| (t.to_owned(), "pending".to_owned());
    assert_eq!(entries(plans[0]), [pending("read the code"), pending("fix the bug")]);
    assert_eq!(entries(plans[1]), [("read the code".to_owned(), "completed".to_owned()), pending("fix the bug")]);
}

#[test]
fn a_filter_block_is_a_refusal_with_its_reason_shown() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let dir = env.root().join("scripts");
    std::fs::create_dir_all(&dir).unwrap();
    let filter = script(
        &dir,
        "block.py",
        "#!/usr/bin/env python3\nimport sys, json\nsys.stdin.read()\n\
         print(json.dumps({\"allow\": False, \"reason\": \"no secrets leave this machine\"}))\n",
    );
    let mock = MockProvider::start(vec![Step::text("never sent")]);
    provider_config(&env, &mock, &format!("llm_filter = \"{}\"\n", filter.display()));
    let scenario = json!({"steps": [{"op": "new", "cwd": p.display().to_string()}, {"op": "prompt", "text": "hello"}]});
    let seen = Driver::start(&env, &daemon, scenario).finish();
    assert_eq!(result(&seen, "prompt")["stopReason"], "refusal", "{}", dump(&seen));
    let shown = text_of(&seen, "agent_message_chunk");
    assert!(shown.contains("no secrets leave this machine"), "{}", dump(&seen));
    assert_eq!(mock.request_count(), 0, "the blocked call reached the provider");
}

#[test]
fn closing_the_editor_mid_run_leaves_the_run_going_and_a_new_client_loads_the_rest() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("notes.txt"), "hello\n").unwrap();
    let gate = Gate::new();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "notes.txt"})),
        Step::gated(Step::text("The notes say hello."), &gate),
    ]);
    provider_config(&env, &mock, "");
    let cwd = p.display().to_string();
    let mut first = Driver::start(
        &env,
        &daemon,
        json!({"steps": [{"op": "new", "cwd": cwd}, {"op": "prompt", "text": "read notes", "exit_on": "tool_call_update"}]}),
    );
    let session = first.until("session/new", |v| v["op"] == "new")["result"]["sessionId"].as_str().unwrap().to_owned();
    first.until("the editor exits", |v| v["type"] == "exiting");
    let _ = first.finish();

    // The run waits on the provider; a new client loads the session and
    // sees the answer arrive live once the provider replies.
    let mut second = Driver::start(
        &env,
        &daemon,
        json!({"steps": [{"op": "load", "session_id": session, "cwd": cwd}, {"op": "wait_text", "text": "The notes say hello."}]}),
    );
    second.until("session/load", |v| v["type"] == "result" && v["op"] == "load");
    gate.open();
    let seen = second.finish();
    let ups = kinds(&seen);
    assert_eq!(ups[..3], ["user_message_chunk", "tool_call", "tool_call_update"], "{}", dump(&seen));
    assert_eq!(text_of(&seen, "agent_message_chunk"), "The notes say hello.", "{}", dump(&seen));
}

/// A session where commands need approval, running `touch ./one`, then
/// `touch ./two` (the same command on another file of the project, both
/// there already, dated 2001), then answering.
fn ask_session(answer: &str) -> (TestEnv, Daemon, MockProvider, PathBuf, Vec<Value>) {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    for name in ["one", "two"] {
        let f = std::fs::File::create(p.join(name)).unwrap();
        f.set_modified(old_time()).unwrap();
    }
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "run_command", json!({"command": ["touch", "./one"]})),
        Step::tool_call("c2", "run_command", json!({"command": ["touch", "./two"]})),
        Step::text("done"),
    ]);
    provider_config(&env, &mock, "commands = \"ask\"\n");
    // The user's global config enables commands, so no project trust is needed.
    let scenario = json!({
        "permission": answer,
        "steps": [{"op": "new", "cwd": p.display().to_string()}, {"op": "prompt", "text": "touch things"}],
    });
    let seen = Driver::start(&env, &daemon, scenario).finish();
    (env, daemon, mock, p, seen)
}

fn permission_requests(seen: &[Value]) -> Vec<&Value> {
    seen.iter().filter(|v| v["type"] == "permission").map(|v| &v["params"]).collect()
}

/// Whether an editor's tool call id is the model's call `id` (the run's
/// id comes first).
fn is_call(v: &Value, id: &str) -> bool {
    v.as_str().is_some_and(|s| s.ends_with(&format!("/{id}")))
}

fn tool_update<'a>(seen: &'a [Value], id: &str) -> &'a Value {
    updates(seen)
        .into_iter()
        .rfind(|u| u["sessionUpdate"] == "tool_call_update" && is_call(&u["toolCallId"], id))
        .unwrap_or_else(|| panic!("no update of {id} in:\n{}", dump(seen)))
}

#[test]
fn a_rejected_permission_is_an_error_result_and_the_run_goes_on() {
    let (_env, _daemon, _mock, p, seen) = ask_session("reject_once");
    let asked = permission_requests(&seen);
    assert_eq!(asked.len(), 2, "each rejected-once command is asked again:\n{}", dump(&seen));
    assert!(is_call(&asked[0]["toolCall"]["toolCallId"], "c1"), "{}", asked[0]);
    assert_eq!(asked[0]["toolCall"]["title"], "Approve `touch`?");
    assert_eq!(asked[0]["toolCall"]["content"][0]["content"]["text"], "```\ntouch ./one\n```");
    let kinds: Vec<&str> =
        asked[0]["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    let c1 = tool_update(&seen, "c1");
    assert_eq!(c1["status"], "failed", "{c1}");
    assert!(c1["content"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .starts_with("error: user denied command bucket 'touch'"));
    assert!(!touched(&p, "one") && !touched(&p, "two"), "a rejected command ran");
    assert_eq!(result(&seen, "prompt")["stopReason"], "end_turn");
}

#[test]
fn allow_always_is_asked_once_for_the_same_command_on_other_project_paths() {
    let (_env, _daemon, _mock, p, seen) = ask_session("allow_always");
    assert_eq!(permission_requests(&seen).len(), 1, "{}", dump(&seen));
    assert_eq!(tool_update(&seen, "c1")["status"], "completed");
    assert_eq!(tool_update(&seen, "c2")["status"], "completed");
    assert!(touched(&p, "one") && touched(&p, "two"));
}

/// 2001, as the files of [`ask_session`] are dated.
fn old_time() -> std::time::SystemTime {
    std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000)
}

/// Whether `touch` ran on the file `name` of `p`.
fn touched(p: &std::path::Path, name: &str) -> bool {
    std::fs::metadata(p.join(name)).unwrap().modified().unwrap() != old_time()
}

#[test]
fn reads_see_the_editors_unsaved_buffer_and_a_refused_path_is_never_asked_for() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let file = p.join("notes.txt");
    std::fs::write(&file, "saved text\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "notes.txt"})),
        Step::tool_call("c2", "read_file", json!({"file_path": "/etc/hostname"})),
        Step::text("read"),
    ]);
    provider_config(&env, &mock, "");
    let scenario = json!({
        "buffers": {file.display().to_string(): "unsaved text in the editor\n"},
        "steps": [{"op": "new", "cwd": p.display().to_string()}, {"op": "prompt", "text": "read the notes"}],
    });
    let seen = Driver::start(&env, &daemon, scenario).finish();
    assert_eq!(result(&seen, "prompt")["stopReason"], "end_turn", "{}", dump(&seen));
    let shown = &tool_update(&seen, "c1")["content"][0]["content"]["text"];
    assert!(shown.as_str().unwrap().starts_with("1: unsaved text in the editor"), "{shown}");
    // A path the policy refuses is never asked of the editor.
    let asked: Vec<&Value> = seen.iter().filter(|v| v["type"] == "read").map(|v| &v["path"]).collect();
    assert_eq!(asked, [&json!(file.display().to_string())], "{}", dump(&seen));
    assert_eq!(tool_update(&seen, "c2")["status"], "failed");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "saved text\n");
}

#[test]
fn a_call_an_after_llm_call_hook_asks_about_goes_to_the_editor_and_a_rejection_keeps_it_from_running() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let dir = env.root().join("scripts");
    std::fs::create_dir_all(&dir).unwrap();
    let hook = script(
        &dir,
        "ask-writes.py",
        "#!/usr/bin/env python3\nimport sys, json\nreq = json.load(sys.stdin)\n\
         ask = [c['id'] for c in req['assistant']['tool_calls'] if c['name'] == 'write_file']\n\
         print(json.dumps({'ask': ask, 'reason': 'writes need a look'}))\n",
    );
    let mock = MockProvider::start(vec![
        Step::tool_call("w1", "write_file", json!({"file_path": "new.txt", "content": "hello"})),
        Step::text("I was not allowed to write."),
    ]);
    let hooks = format!("[[hooks]]\npoint = \"after_llm_call\"\ncommand = \"{}\"\n", hook.display());
    provider_config(&env, &mock, &hooks);
    let scenario = json!({
        "permission": "reject_once",
        "steps": [{"op": "new", "cwd": p.display().to_string()}, {"op": "prompt", "text": "write new.txt"}],
    });
    let seen = Driver::start(&env, &daemon, scenario).finish();
    let asked = permission_requests(&seen);
    assert_eq!(asked.len(), 1, "{}", dump(&seen));
    assert!(is_call(&asked[0]["toolCall"]["toolCallId"], "w1"), "{}", asked[0]);
    let w1 = tool_update(&seen, "w1");
    assert_eq!(w1["status"], "failed");
    let text = w1["content"][0]["content"]["text"].as_str().unwrap();
    assert!(text.contains("the user did not approve this call (writes need a look)"), "{text}");
    assert!(!p.join("new.txt").exists());
    assert_eq!(result(&seen, "prompt")["stopReason"], "end_turn");
}

#[test]
fn the_editors_mcp_servers_reach_the_model() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/node_modules/.bin/mcp-server-everything");
    assert!(server.exists(), "{} is missing: run `npm ci --prefix tests/mcp`", server.display());
    let mock = MockProvider::start(vec![
        Step::tool_call("m1", "mcp__ev__echo", json!({"message": "from the editor's server"})),
        Step::text("echoed"),
    ]);
    provider_config(&env, &mock, "");
    let servers = json!([{"name": "ev", "command": server.display().to_string(), "args": [], "env": []}]);
    let scenario = json!({"steps": [
        {"op": "new", "cwd": p.display().to_string(), "mcpServers": servers},
        {"op": "prompt", "text": "echo something"},
    ]});
    let seen = Driver::start(&env, &daemon, scenario).finish();
    assert_eq!(result(&seen, "prompt")["stopReason"], "end_turn", "{}", dump(&seen));
    let m1 = tool_update(&seen, "m1");
    assert_eq!(m1["status"], "completed", "{m1}");
    assert!(m1["content"][0]["content"]["text"].as_str().unwrap().contains("from the editor's server"), "{m1}");
}

#[test]
fn two_editors_and_swivalctl_run_share_one_daemon_each_with_its_own_sessions() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let (p1, p2, p3) = (env.project("one"), env.project("two"), env.project("three"));
    let mock = MockProvider::start(vec![Step::text("done"), Step::text("done"), Step::text("done")]);
    provider_config(&env, &mock, "");
    let scenario =
        |p: &Path| json!({"steps": [{"op": "new", "cwd": p.display().to_string()}, {"op": "prompt", "text": "hi"}]});
    let (a, b) = (Driver::start(&env, &daemon, scenario(&p1)), Driver::start(&env, &daemon, scenario(&p2)));
    let run = env.swivalctl(&daemon, &p3).args(["run", "hello"]).output().unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let (a, b) = (a.finish(), b.finish());
    for seen in [&a, &b] {
        assert_eq!(result(seen, "prompt")["stopReason"], "end_turn", "{}", dump(seen));
        assert_eq!(text_of(seen, "agent_message_chunk"), "done", "{}", dump(seen));
    }
    assert_ne!(result(&a, "new")["sessionId"], result(&b, "new")["sessionId"]);
    let mut c = daemon.nd();
    let listed = c.ok("session/list", json!({}));
    let dirs: std::collections::BTreeSet<&str> =
        listed["sessions"].as_array().unwrap().iter().map(|s| s["base_dir"].as_str().unwrap()).collect();
    assert_eq!(dirs.len(), 3, "{listed}");
}

#[test]
fn with_log_diagnostics_go_to_the_file_and_stdout_stays_clean() {
    let env = TestEnv::new();
    let log = env.root().join("acp.log");
    // A socket under a regular file, where no daemon can listen: swivalctl says so.
    let file = env.root().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let out = env
        .command(&bin("swivalctl"))
        .arg("--socket")
        .arg(file.join("swivald.sock"))
        .args(["acp", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let written = std::fs::read_to_string(&log).unwrap();
    assert!(written.contains("swivalctl: error:"), "{written}");
}

#[test]
fn compact_is_offered_to_the_editor_and_compacts_the_session_without_a_run() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("big.txt"), format!("{}\n", "y".repeat(3000))).unwrap();
    let mut steps: Vec<Step> =
        (0..4).map(|i| Step::tool_call(&format!("c{i}"), "read_file", json!({"file_path": "big.txt"}))).collect();
    steps.push(Step::text("read"));
    let mock = MockProvider::start(steps);
    provider_config(&env, &mock, "");
    let cwd = p.display().to_string();
    let steps = json!([{"op": "new", "cwd": cwd}, {"op": "prompt", "text": "read big.txt"}, {"op": "prompt", "text": "/compact"}]);
    let seen = Driver::start(&env, &daemon, json!({ "steps": steps })).finish();
    let offered = seen.iter().find(|v| v["update"]["sessionUpdate"] == "available_commands_update");
    assert!(offered.is_some_and(|v| v.to_string().contains("\"compact\"")), "{}", dump(&seen));
    assert!(text_of(&seen, "agent_message_chunk").contains("Compacted (truncate_tool_results)"), "{}", dump(&seen));
    assert_eq!(mock.request_count(), 5, "no model call for /compact");
}

#[test]
fn the_editor_sees_model_and_reasoning_options_and_setting_the_model_changes_the_next_request() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("with the other model")]).with_more_models(&["other"]);
    provider_config(&env, &mock, "");
    let cwd = p.display().to_string();
    let steps = json!([
        {"op": "new", "cwd": cwd},
        {"op": "set_config", "config_id": "reasoning_effort", "value": "loud"},
        {"op": "set_config", "config_id": "model", "value": "other"},
        {"op": "prompt", "text": "hi"},
    ]);
    let seen = Driver::start(&env, &daemon, json!({ "steps": steps })).finish();
    let options = &result(&seen, "new")["configOptions"];
    assert_eq!(options[0]["id"], "model", "{options}");
    assert_eq!(options[0]["currentValue"], "m", "{options}");
    // The models the server serves are offered, the current one first.
    let values: Vec<&str> =
        options[0]["options"].as_array().unwrap().iter().filter_map(|o| o["value"].as_str()).collect();
    assert_eq!(values.first(), Some(&"m"), "{options}");
    assert!(values.contains(&"other"), "{options}");
    assert_eq!(options[1]["category"], "thought_level", "{options}");
    let refused = seen.iter().find(|v| v["type"] == "error" && v["op"] == "set_config");
    assert!(refused.is_some_and(|v| v.to_string().contains("not loud")), "{}", dump(&seen));
    assert_eq!(result(&seen, "set_config")["configOptions"][0]["currentValue"], "other", "{}", dump(&seen));
    mock.wait_for_requests(1);
    assert_eq!(mock.requests()[0]["model"], "other");
}

mod commands;
