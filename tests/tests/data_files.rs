//! A data file belongs to its server, also before it exists: the model's
//! commands try to plant a symlink at an MCP server's not-yet-existing
//! memory file (or on the way to it) so the server writes outside the
//! project; every try fails, the server keeps its own file, nothing
//! outside changes, and the model reads nothing of it. A link planted
//! before the server was configured stops the session from starting,
//! naming the file. The real memory server from npm (`tests/mcp/`).

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::create_session as create;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{NdConn, TestEnv};

fn memory_server(file: &Path) -> Value {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/node_modules/.bin/mcp-server-memory");
    assert!(bin.exists(), "{} is missing: run `npm ci --prefix tests/mcp` first", bin.display());
    json!({"mem": {"command": bin, "env": {"MEMORY_FILE_PATH": file}}})
}

fn config(mock: &MockProvider, extra: Value) -> Value {
    let mut cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    cfg.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    cfg
}

fn run_on(c: &mut NdConn, sid: &str) -> Value {
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}))
}

fn sh(id: &str, script: &str) -> Step {
    Step::tool_call(id, "run_command", json!({"command": ["sh", "-c", script]}))
}

#[test]
fn a_link_planted_at_a_memory_file_that_does_not_exist_yet_changes_nothing_outside() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let outside = env.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let keys = outside.join("authorized_keys");
    std::fs::write(&keys, "ssh-ed25519 AAAA the-users-key\n").unwrap();
    let file = p.join("memory/graph.jsonl");
    let k = keys.display();
    let entity = json!({"entities": [{"name": "attacker", "entityType": "key", "observations": ["ssh-rsa EVIL"]}]});
    let mock = MockProvider::start(vec![
        sh("l1", &format!("ln -sf {k} memory/graph.jsonl; echo rc=$?")),
        sh("l2", &format!("rm -f memory/graph.jsonl; ln -s {k} memory/graph.jsonl; echo rc=$?")),
        sh("l3", &format!("mv memory m2; mkdir -p memory; ln -s {k} memory/graph.jsonl; echo rc=$?")),
        sh("l4", &format!("rm -rf memory; ln -s {} memory; echo rc=$?", outside.display())),
        sh("cat", "cat memory/graph.jsonl; echo END"),
        Step::tool_call("m1", "mcp__mem__create_entities", entity),
        Step::tool_call("r1", "read_file", json!({"file_path": "memory/graph.jsonl"})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let cfg = config(&mock, json!({"mcp_servers": memory_server(&file), "allowed_commands": ["sh"]}));
    let sid = create(&mut c, &p, cfg);
    assert_eq!(run_on(&mut c, &sid)["outcome"], "success");

    assert_eq!(std::fs::read_to_string(&keys).unwrap(), "ssh-ed25519 AAAA the-users-key\n", "an outside file changed");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    let meta = std::fs::symlink_metadata(&file).unwrap();
    assert!(meta.is_file(), "the memory file is the server's own file");
    assert!(std::fs::read_to_string(&file).unwrap().contains("EVIL"), "the server wrote its own file");
    let tools = mock.tool_results();
    assert!(!tools["m1"].starts_with("error:"), "{}", tools["m1"]);
    assert!(!tools["cat"].contains("EVIL"), "the model read the server's data: {}", tools["cat"]);
    assert!(tools["r1"].starts_with("error:") && tools["r1"].contains("protected"), "{}", tools["r1"]);
    let st = c.ok("policy/status", json!({"session_id": sid}));
    assert_eq!(st["mcp_servers"][0]["data_files"], json!([{"path": file, "protected": true}]), "{st}");
}

#[test]
fn a_link_planted_before_the_server_was_configured_stops_the_session_and_is_named() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let outside = env.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let keys = outside.join("id_rsa");
    std::fs::write(&keys, "PRIVATE").unwrap();
    // An earlier session, without the server, let the model plant it.
    let mock =
        MockProvider::start(vec![sh("l", &format!("ln -s {} graph.jsonl", keys.display())), Step::text("planted")]);
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, config(&mock, json!({"allowed_commands": ["sh"]})));
    assert_eq!(run_on(&mut c, &sid)["outcome"], "success");
    assert!(std::fs::symlink_metadata(p.join("graph.jsonl")).unwrap().file_type().is_symlink());

    let mock = MockProvider::start(vec![Step::text("unused")]);
    let cfg = config(&mock, json!({"mcp_servers": memory_server(&p.join("graph.jsonl"))}));
    let r = c.call("session/create", json!({"base_dir": p, "config": cfg}));
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("graph.jsonl") && message.contains("symlink"), "{r}");
    assert_eq!(mock.request_count(), 0);
    assert_eq!(std::fs::read_to_string(&keys).unwrap(), "PRIVATE");
}
