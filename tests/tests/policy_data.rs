//! Policy commands that write their own data keep working: only code is
//! pinned (the program, the script an interpreter runs), files given as
//! data — a database, a memory file, a log — are not hash-checked, and
//! inside the base dir the model still cannot change them. Real MCP
//! servers from npm (`mcp-server-sqlite-npx`, `@modelcontextprotocol/
//! server-memory`, in `tests/mcp/`), real filter and hook scripts.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use swival_tests::create_session as create;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{script, NdConn, TestEnv};

/// A server installed from npm into `tests/mcp/`.
fn npm_bin(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("mcp/node_modules/.bin/{name}"));
    assert!(p.exists(), "{} is missing: run `npm ci --prefix tests/mcp` first", p.display());
    p.display().to_string()
}

fn provider(mock: &MockProvider) -> Value {
    json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true})
}

fn with(mut cfg: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    cfg
}

fn run_on(c: &mut NdConn, sid: &str, task: &str) -> Value {
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}))
}

/// One step inserting `n` into the table of both servers.
fn inserts(run: &str, values: std::ops::Range<u32>) -> Vec<Step> {
    values
        .map(|n| {
            let sql = json!({"query": format!("INSERT INTO t (n) VALUES ({n})")});
            Step::tool_calls(vec![
                (&format!("{run}-in-{n}"), "mcp__inside__write_query", sql.clone()),
                (&format!("{run}-out-{n}"), "mcp__outside__write_query", sql),
            ])
        })
        .collect()
}

/// The model's calls: twenty to each server over three runs (a table,
/// eighteen rows, a count), then attempts on the inside database.
fn sqlite_steps() -> Vec<Step> {
    let table = json!({"query": "CREATE TABLE t (n INTEGER)"});
    let count = json!({"query": "SELECT count(*) AS c FROM t"});
    let mut steps = vec![Step::tool_calls(vec![
        ("a-in-0", "mcp__inside__create_table", table.clone()),
        ("a-out-0", "mcp__outside__create_table", table),
    ])];
    steps.extend(inserts("a", 1..10));
    steps.push(Step::text("first"));
    steps.extend(inserts("b", 10..15));
    steps.push(Step::text("second"));
    steps.extend(inserts("c", 15..19));
    steps.push(Step::tool_calls(vec![
        ("c-in-count", "mcp__inside__read_query", count.clone()),
        ("c-out-count", "mcp__outside__read_query", count),
    ]));
    steps.push(Step::text("third"));
    // The model then goes after the inside database.
    steps.push(Step::tool_calls(vec![
        ("w", "write_file", json!({"file_path": "data.db", "content": "gone"})),
        ("sh", "run_command", json!({"command": ["sh", "-c", "echo gone > data.db"]})),
        ("rm", "run_command", json!({"command": ["sh", "-c", "rm -f data.db; mv data.db x.db"]})),
    ]));
    steps.push(Step::text("tried"));
    steps
}

#[test]
fn sqlite_servers_writing_their_databases_answer_twenty_calls_across_sessions_and_a_restart() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let p = env.project("p");
    let outside = env.root().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    let outside_db = outside.join("log.db");
    let servers = json!({
        "inside": {"command": npm_bin("mcp-server-sqlite-npx"), "args": ["./data.db"]},
        "outside": {"command": npm_bin("mcp-server-sqlite-npx"), "args": [outside_db]},
    });
    let mock = MockProvider::start(sqlite_steps());
    let cfg = with(provider(&mock), json!({"mcp_servers": servers, "allowed_commands": ["sh"]}));

    let mut c = daemon.nd();
    let a = create(&mut c, &p, cfg.clone());
    let b = create(&mut c, &p, cfg);
    assert_eq!(run_on(&mut c, &a, "fill it")["outcome"], "success");
    assert_eq!(run_on(&mut c, &b, "more")["outcome"], "success");
    assert!(p.join("data.db").metadata().unwrap().len() > 0 && outside_db.metadata().unwrap().len() > 0);

    // What the session pinned is code only; the databases are its data.
    let st = c.ok("policy/status", json!({"session_id": a}));
    for s in st["mcp_servers"].as_array().unwrap() {
        let files = s["files"].as_array().unwrap();
        assert!(files.len() == 1 && files[0]["path"].as_str().unwrap().ends_with("sqlite-npx"), "only code: {s}");
    }
    let data = |name: &str| {
        st["mcp_servers"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap()["data_files"].clone()
    };
    assert_eq!(data("inside"), json!([{"path": p.join("data.db"), "protected": true}]));
    assert_eq!(data("outside"), json!([{"path": outside_db, "protected": true}]));

    drop(c);
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert!(daemon.wait_exit().success());
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    assert_eq!(run_on(&mut c, &a, "after the restart")["outcome"], "success");

    let tools = mock.tool_results();
    let mcp: Vec<_> = tools.iter().filter(|(id, _)| id.contains("-in-") || id.contains("-out-")).collect();
    assert_eq!(mcp.len(), 40, "twenty calls to each server");
    for (id, text) in &mcp {
        assert!(!text.starts_with("error:") && !text.contains("changed since"), "{id}: {text}");
    }
    for id in ["c-in-count", "c-out-count"] {
        assert!(tools[id].contains("18"), "every insert landed: {id}: {}", tools[id]);
    }

    // The model cannot replace the protected database.
    let before = std::fs::read(p.join("data.db")).unwrap();
    assert_eq!(run_on(&mut c, &a, "break it")["outcome"], "success");
    let tools = mock.tool_results();
    assert!(tools["w"].starts_with("error:") && tools["w"].contains("protected"), "{}", tools["w"]);
    // A command sees the database as an empty device: what it writes goes nowhere.
    assert!(!tools["sh"].starts_with("error:"), "{}", tools["sh"]);
    assert!(tools["rm"].starts_with("Exit code: ") && !tools["rm"].starts_with("Exit code: 0"), "{}", tools["rm"]);
    assert_eq!(std::fs::read(p.join("data.db")).unwrap(), before, "the database was changed by the model");
}

#[test]
fn a_memory_server_given_its_file_in_the_environment_keeps_it_and_the_model_cannot_touch_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::create_dir_all(p.join("memory")).unwrap();
    let file = p.join("memory/graph.jsonl");
    let servers = json!({"mem": {"command": npm_bin("mcp-server-memory"), "env": {"MEMORY_FILE_PATH": file}}});
    let entity = json!({"entities": [{"name": "swivald", "entityType": "project", "observations": ["a daemon"]}]});
    let observe = |n: u32| json!({"observations": [{"entityName": "swivald", "contents": [format!("fact {n}")]}]});
    let mock = MockProvider::start(vec![
        Step::tool_call("m0", "mcp__mem__create_entities", entity),
        Step::tool_call("m1", "mcp__mem__add_observations", observe(1)),
        Step::text("first"),
        Step::tool_call("m2", "mcp__mem__add_observations", observe(2)),
        Step::tool_call("m3", "mcp__mem__read_graph", json!({})),
        Step::tool_call("w", "write_file", json!({"file_path": "memory/graph.jsonl", "content": "{}"})),
        Step::text("second"),
    ]);
    let mut c = daemon.nd();
    let cfg = with(provider(&mock), json!({"mcp_servers": servers}));
    let (a, b) = (create(&mut c, &p, cfg.clone()), create(&mut c, &p, cfg));
    assert_eq!(run_on(&mut c, &a, "remember")["outcome"], "success");
    assert_eq!(run_on(&mut c, &b, "recall")["outcome"], "success");
    let tools = mock.tool_results();
    for id in ["m0", "m1", "m2", "m3"] {
        assert!(!tools[id].starts_with("error:"), "{id}: {}", tools[id]);
    }
    assert!(tools["m3"].contains("fact 1") && tools["m3"].contains("fact 2"), "{}", tools["m3"]);
    assert!(tools["w"].starts_with("error:") && tools["w"].contains("protected"), "{}", tools["w"]);
    assert!(std::fs::read_to_string(&file).unwrap().contains("fact 2"));
    let st = c.ok("policy/status", json!({"session_id": b}));
    assert_eq!(st["mcp_servers"][0]["data_files"], json!([{"path": file, "protected": true}]));
}

/// A filter that appends a line to the log its `--log` names, and passes
/// the messages on.
const LOGGING_FILTER: &str = "#!/usr/bin/env python3\nimport json, sys\n\
log = sys.argv[sys.argv.index('--log') + 1]\n\
req = json.load(sys.stdin)\n\
open(log, 'a').write('call\\n')\n\
print(json.dumps({'messages': req['messages']}))\n";

/// A `before_llm_call` hook that appends a line to its `--log` and
/// changes nothing.
const LOGGING_HOOK: &str = "#!/usr/bin/env python3\nimport json, sys\n\
log = sys.argv[sys.argv.index('--log') + 1]\n\
json.load(sys.stdin)\n\
open(log, 'a').write('hook\\n')\n\
print('{}')\n";

fn think(i: usize) -> Step {
    Step::tool_call(&format!("t{i}"), "think", json!({"thought": format!("step {i}")}))
}

#[test]
fn a_filter_and_a_hook_writing_their_logs_keep_working_over_ten_turns() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::create_dir_all(p.join("policy")).unwrap();
    std::fs::create_dir_all(p.join("logs")).unwrap();
    let filter = script(&p.join("policy"), "filter.py", LOGGING_FILTER);
    let hook = script(&p.join("policy"), "hook.py", LOGGING_HOOK);
    let filter_log: PathBuf = p.join("logs/filter.log");
    let hook_log = env.root().join("hook.log");
    // Logs kept from earlier sessions: existing files named as arguments.
    std::fs::write(&filter_log, "").unwrap();
    std::fs::write(&hook_log, "").unwrap();
    let mut steps: Vec<Step> = (0..9).map(think).collect();
    steps.push(Step::tool_call("w", "write_file", json!({"file_path": "logs/filter.log", "content": "forged"})));
    steps.push(Step::text("done"));
    let mock = MockProvider::start(steps);
    let cfg = with(
        provider(&mock),
        json!({
            "max_turns": 20,
            // The refused write ends the script: no answer nudge after it.
            "disable_nudges": ["unmade"],
            "llm_filter": [format!("{} --log {}", filter.display(), filter_log.display())],
            "hooks": [{"point": "before_llm_call", "command": format!("{} --log {}", hook.display(), hook_log.display())}],
        }),
    );
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, cfg);
    let r = run_on(&mut c, &sid, "take eleven turns");
    assert_eq!(r["outcome"], "success", "{r}");
    assert_eq!(mock.request_count(), 11);
    assert_eq!(std::fs::read_to_string(&filter_log).unwrap().lines().count(), 11, "every call went through the filter");
    assert_eq!(std::fs::read_to_string(&hook_log).unwrap().lines().count(), 11, "and through the hook");
    let tools = mock.tool_results();
    assert!(tools["w"].starts_with("error:") && tools["w"].contains("protected"), "{}", tools["w"]);
    let st = c.ok("policy/status", json!({"session_id": sid}));
    let f = &st["filters"][0];
    assert_eq!(f["data_files"], json!([{"path": filter_log, "protected": true}]), "{f}");
    assert!(f["files"].to_string().contains("filter.py") && !f["files"].to_string().contains("filter.log"), "{f}");
    assert_eq!(st["hooks"][0]["data_files"], json!([{"path": hook_log, "protected": true}]));
}

/// Every file under `dir` with its size and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            out.extend(snapshot(&entry.path()));
        }
        out.push((entry.path(), meta.len(), meta.modified().unwrap()));
    }
    out.sort();
    out
}

#[test]
fn policy_questions_about_a_hundred_old_sessions_load_nothing_start_nothing_and_touch_nothing() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("unused")]);
    let servers = json!({"db": {"command": npm_bin("mcp-server-sqlite-npx"), "args": ["./data.db"]}});
    let cfg = with(provider(&mock), json!({"mcp_servers": servers, "allowed_commands": ["ls"]}));
    let mut c = daemon.nd();
    let mut projects = Vec::new();
    let mut sessions = Vec::new();
    for i in 0..100 {
        if i % 10 == 0 {
            projects.push(env.project(&format!("p{i}")));
        }
        sessions.push(create(&mut c, projects.last().unwrap(), cfg.clone()));
    }
    for p in &projects {
        // A spill file old enough for a session in use to sweep away.
        std::fs::create_dir_all(p.join(".swival")).unwrap();
        let spill = std::fs::File::create(p.join(".swival/cmd_output_old.txt")).unwrap();
        spill.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(86_400)).unwrap();
    }
    drop(c);
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert!(daemon.wait_exit().success());

    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let before: Vec<_> = projects.iter().map(|p| snapshot(p)).collect();
    for sid in &sessions {
        let st = c.ok("policy/status", json!({"session_id": sid}));
        assert_eq!(st["mcp_servers"][0]["running"], false, "{st}");
        assert_eq!(st["mcp_servers"][0]["data_files"][0]["protected"], true, "{st}");
        let check = c.ok("policy/check", json!({"session_id": sid, "argv": ["ls"]}));
        assert_eq!(check["allowed"], true, "{check}");
        c.ok("session/get", json!({"session_id": sid}));
    }
    let status = c.ok("daemon/status", json!({}));
    assert_eq!(status["live_sessions"], 0, "{status}");
    assert_eq!(c.ok("mcp/status", json!({}))["servers"], json!([]), "no server was started or leased");
    let after: Vec<_> = projects.iter().map(|p| snapshot(p)).collect();
    assert_eq!(before, after, "a base dir changed");
    // The database exists since each project's first session was created
    // (empty, so it could be hidden), and nothing since changed it.
    assert!(projects
        .iter()
        .all(|p| p.join(".swival/cmd_output_old.txt").exists() && p.join("data.db").metadata().unwrap().len() == 0));
}
