//! Hiding follows the file: the model's commands rename, move or hard-link
//! the directories above a hidden path (`os.rename('conf', 'conf2')`), and
//! neither a command nor a file tool reads the hidden file afterwards,
//! under its old name or any new one.

use serde_json::json;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

const SECRET: &str = "TOKEN-5d1e9b";

/// A python3 one-liner as a `run_command` call.
fn py(id: &str, code: &str) -> Step {
    Step::tool_call(id, "run_command", json!({"command": ["python3", "-c", code]}))
}

#[test]
fn renaming_moving_or_linking_above_a_hidden_path_uncovers_nothing() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::create_dir_all(p.join("conf")).unwrap();
    std::fs::write(p.join("conf/.env"), format!("KEY={SECRET}\n")).unwrap();
    std::fs::create_dir_all(p.join("data/keys")).unwrap();
    std::fs::write(p.join("data/keys/k.pem"), SECRET).unwrap();
    let tries = "import os\n\
        for a, b in [('conf', 'conf2'), ('data', 'd2'), ('data/keys', 'k2'), ('conf/.env', 'e2')]:\n\
        \x20   try:\n\
        \x20       os.rename(a, b); print('renamed', a)\n\
        \x20   except OSError as e:\n\
        \x20       print('refused', a, e.errno)\n\
        for a, b in [('conf/.env', 'linked'), ('data/keys/k.pem', 'linked2')]:\n\
        \x20   try:\n\
        \x20       os.link(a, b); print('linked', a)\n\
        \x20   except OSError as e:\n\
        \x20       print('refused link', a, e.errno)\n";
    let reader = "import glob\n\
        for f in glob.glob('**/*', recursive=True) + glob.glob('**/.*', recursive=True):\n\
        \x20   try:\n\
        \x20       print(f, open(f).read())\n\
        \x20   except Exception as e:\n\
        \x20       print(f, type(e).__name__)\n";
    let mock = MockProvider::start(vec![
        py("move", tries),
        py("read", reader),
        Step::tool_call("r1", "read_file", json!({"file_path": "conf/.env"})),
        Step::tool_call("r2", "read_file", json!({"file_path": "conf2/.env"})),
        Step::tool_call("r3", "read_file", json!({"file_path": "d2/keys/k.pem"})),
        Step::tool_call("r4", "read_file", json!({"file_path": "linked"})),
        Step::text("done"),
    ]);
    let hide = [p.join("conf/.env"), p.join("data/keys")];
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m",
                     "allowed_commands": ["python3"], "sandbox_hide": hide, "max_turns": 20});
    let mut c = daemon.nd();
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "tidy"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");

    let results = mock.tool_results();
    let moved = &results["move"];
    assert!(!moved.contains("renamed") && !moved.contains("linked "), "{moved}");
    assert_eq!(moved.matches("refused").count(), 6, "{moved}");
    assert!(!mock.requests_text().contains(SECRET), "a hidden secret reached the provider");
    for r in ["r1", "r2", "r3", "r4"] {
        assert!(results[r].starts_with("error:"), "{r}: {}", results[r]);
    }
    assert_eq!(std::fs::read_to_string(p.join("conf/.env")).unwrap(), format!("KEY={SECRET}\n"));
    assert!(p.join("data/keys/k.pem").exists() && !p.join("conf2").exists() && !p.join("linked").exists());
}
