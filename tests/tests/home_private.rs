//! A home is private by default: stores no list names — a database
//! client's password file, a vault token, a new tool's token, notes —
//! are invisible to a whitelisted interpreter and to the file tools under
//! `files = "all"`, while the project under the home, the toolchains and
//! git's config stay usable; `sandbox_expose` shows one path more, and
//! `policy/status` says what commands see.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{NdConn, TestEnv};

/// Made-up secrets no list of credential stores names.
const STORES: &[&str] = &[
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    ".config/acme-cli/token.json",
    ".local/share/newtool/session.key",
    "notes/passwords.txt",
    "old-projects/client/.env",
];

/// A python3 program that prints what it can read of each path, and the
/// home's entries.
fn reader(home: &Path, paths: &[&str]) -> String {
    let paths: Vec<String> = paths.iter().map(|p| home.join(p).display().to_string()).collect();
    format!(
        "import os\nprint('HOME', sorted(os.listdir({home:?})))\nfor p in {}:\n    try:\n        print(p, open(p).read())\n    except Exception as e:\n        print(p, 'unreadable:', type(e).__name__)\n",
        serde_json::to_string(&paths).unwrap(),
        home = home.display().to_string()
    )
}

fn run(c: &mut NdConn, base: &Path, steps: Vec<Step>, extra: Value) -> (MockProvider, Value) {
    let mock = MockProvider::start(steps);
    let mut cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "files": "all",
                         "allowed_commands": ["python3"], "max_turns": 40, "no_history": true});
    cfg.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let sid = c.ok("session/create", json!({"base_dir": base, "config": cfg}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "read"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    let st = c.ok("policy/status", json!({"session_id": sid}));
    (mock, st)
}

/// The test home: every store of [`STORES`] holding a secret, git's
/// config, a toolchain reached through a symlink (a dotfile manager's, or
/// one pointing elsewhere), and a project under `work/p`.
fn home_with_stores(env: &TestEnv) -> (std::path::PathBuf, std::path::PathBuf) {
    let home = env.root().join("home").canonicalize().unwrap();
    for (i, p) in STORES.iter().enumerate() {
        let path = home.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("SECRET-{i}-TOKEN")).unwrap();
    }
    std::fs::write(home.join(".gitconfig"), "[user]\n\tname = Tester\n").unwrap();
    std::fs::create_dir_all(home.join("toolchains/cargo/registry")).unwrap();
    std::fs::write(home.join("toolchains/cargo/registry/marker"), "crates").unwrap();
    std::os::unix::fs::symlink("toolchains/cargo", home.join(".cargo")).unwrap();
    let p = home.join("work/p");
    std::fs::create_dir_all(&p).unwrap();
    (home, p)
}

#[test]
fn stores_no_list_names_are_invisible_while_project_toolchains_and_git_config_work() {
    let env = TestEnv::new();
    let (home, p) = home_with_stores(&env);
    let daemon = env.start_daemon();
    let mut c = daemon.nd();

    let mut steps = vec![Step::tool_call(
        "py",
        "run_command",
        json!({"command": ["python3", "-c", reader(&home, &[".gitconfig", ".cargo/registry/marker"])]}),
    )];
    steps.push(Step::tool_call("py2", "run_command", json!({"command": ["python3", "-c", reader(&home, STORES)]})));
    steps.push(Step::tool_call("w", "write_file", json!({"file_path": "made.txt", "content": "ok"})));
    steps.push(Step::tool_call(
        "py3",
        "run_command",
        json!({"command": ["python3", "-c", "print(open('made.txt').read()); open('by-command.txt', 'w').write('x')"]}),
    ));
    for (i, s) in STORES.iter().enumerate() {
        steps.push(Step::tool_call(&format!("r{i}"), "read_file", json!({"file_path": home.join(s)})));
    }
    steps.push(Step::tool_call("ls", "list_files", json!({"pattern": "**/*", "path": home})));
    steps.push(Step::tool_call("grep", "grep", json!({"pattern": "TOKEN", "path": home})));
    steps.push(Step::text("done"));
    let (mock, st) = run(&mut c, &p, steps, json!({}));

    let sent = mock.requests_text();
    assert!(!sent.contains("-TOKEN"), "a secret reached the provider");
    let tools = mock.tool_results();
    assert!(
        tools["py"].contains("[user]") && tools["py"].contains("crates"),
        "toolchains and git config: {}",
        tools["py"]
    );
    let listing = tools["py2"].lines().find(|l| l.starts_with("HOME")).unwrap_or_default();
    for hidden in [".pgpass", "notes", "old-projects", ".config", ".vault-token"] {
        assert!(!listing.contains(&format!("'{hidden}'")), "{hidden} is listed: {listing}");
    }
    assert!(listing.contains("'work'") && listing.contains("'.gitconfig'"), "{listing}");
    assert_eq!(tools["py2"].matches("unreadable: FileNotFoundError").count(), STORES.len(), "{}", tools["py2"]);
    assert!(
        tools["py3"].contains("ok") && p.join("by-command.txt").exists(),
        "the project under the home works: {}",
        tools["py3"]
    );
    for i in 0..STORES.len() {
        let r = &tools[&format!("r{i}")];
        assert!(r.starts_with("error:") && r.contains("hidden"), "{}: {r}", STORES[i]);
    }
    for name in [".pgpass", ".my.cnf", ".vault-token", "acme-cli", "newtool", "passwords.txt", "old-projects"] {
        assert!(!tools["ls"].contains(name), "list_files shows {name}: {}", tools["ls"]);
    }
    assert!(tools["ls"].contains(".gitconfig"), "{}", tools["ls"]);
    assert!(!tools["grep"].contains("TOKEN"), "{}", tools["grep"]);
    let enforced = st["sandbox"]["enforced"].to_string();
    assert!(enforced.contains(&format!("commands see nothing of {}", home.display())), "{enforced}");
}

#[test]
fn what_the_user_exposes_is_shown_to_commands_and_file_tools() {
    let env = TestEnv::new();
    let (home, p) = home_with_stores(&env);
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let notes = home.join("notes");
    let steps = vec![
        Step::tool_call(
            "py",
            "run_command",
            json!({"command": ["python3", "-c", reader(&home, &["notes/passwords.txt"])]}),
        ),
        Step::tool_call("r", "read_file", json!({"file_path": notes.join("passwords.txt")})),
        Step::text("done"),
    ];
    let (mock, _) = run(&mut c, &p, steps, json!({"sandbox_expose": [notes]}));
    let tools = mock.tool_results();
    assert!(tools["py"].contains("SECRET-5-TOKEN"), "{}", tools["py"]);
    assert!(tools["r"].contains("SECRET-5-TOKEN"), "{}", tools["r"]);
}
