//! A run happens in its caller's world: the environment of the `swivalctl`
//! process supplies provider keys, PATH, and the whole environment of the
//! user's scripts, while the daemon's own environment does not leak in;
//! the caller's environment is never stored.

use serde_json::json;
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{bin, script, Daemon, TestEnv};

/// A script that appends what it sees of two variables to `out/<name>`,
/// then prints `reply` (a Python expression over the parsed stdin `req`,
/// or `None` to print nothing).
fn recorder(dir: &Path, out: &Path, name: &str, reply: &str) -> String {
    let body = format!(
        "#!/usr/bin/env python3\nimport json, os, sys\nraw = sys.stdin.read()\n\
         req = json.loads(raw) if raw.strip().startswith('{{') else raw\n\
         with open({out:?}, 'a') as f:\n    \
         f.write('CALLER_ONLY=%s DAEMON_ONLY=%s\\n' % (os.environ.get('CALLER_ONLY', 'unset'), os.environ.get('DAEMON_ONLY', 'unset')))\n\
         reply = {reply}\nif reply is not None:\n    print(json.dumps(reply))\n",
        out = out.join(name).display().to_string(),
    );
    script(dir, name, &body).display().to_string()
}

/// The daemon, started with a variable only it has.
fn daemon_with_its_own_variable(env: &TestEnv) -> Daemon {
    let mut cmd = env.command(&bin("swivald"));
    cmd.env("DAEMON_ONLY", "from-daemon");
    Daemon::spawn(env, cmd, &[]).unwrap_or_else(|e| panic!("swivald did not start: {e}\n{}", env.log()))
}

#[test]
fn filter_hook_and_reviewer_see_the_callers_environment_not_the_daemons() {
    let env = TestEnv::new();
    let daemon = daemon_with_its_own_variable(&env);
    let p = env.project("p");
    let out = env.root().join("seen");
    std::fs::create_dir_all(&out).unwrap();
    let scripts = env.root().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let filter = recorder(&scripts, &out, "filter.py", r#"{"messages": req["messages"]}"#);
    let hook = recorder(&scripts, &out, "hook.py", "{}");
    let reviewer = recorder(&scripts, &out, "reviewer.py", "None");
    env.global_config(&format!("[[hooks]]\npoint = \"before_llm_call\"\ncommand = \"{hook}\"\n"));
    let mock = MockProvider::start(vec![Step::text("done")]);
    let run = env
        .swivalctl(&daemon, &p)
        .args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m"])
        .args(["--llm-filter", &filter, "--reviewer", &reviewer, "task"])
        .env("CALLER_ONLY", "from-caller")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    for name in ["filter.py", "hook.py", "reviewer.py"] {
        let seen = std::fs::read_to_string(out.join(name)).unwrap_or_else(|e| panic!("{name} did not run: {e}"));
        assert_eq!(seen.lines().next(), Some("CALLER_ONLY=from-caller DAEMON_ONLY=unset"), "{name}: {seen}");
    }
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                let bytes = std::fs::read(&path).unwrap_or_default();
                if bytes.windows(needle.len()).any(|w| w == needle) {
                    hits.push(path.display().to_string());
                }
            }
        }
    }
    hits
}

#[test]
fn the_provider_key_comes_from_the_callers_environment_and_is_stored_nowhere() {
    const KEY: &str = "sk-or-caller-7f3a9c1e";
    const NEW_KEY: &str = "sk-or-rotated-52b8d0aa";
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("first"), Step::text("second"), Step::text("third")]);
    std::fs::write(
        p.join("swival.toml"),
        format!("provider = \"openrouter\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()),
    )
    .unwrap();
    let report = env.root().join("report.json");
    let run = env
        .swivalctl(&daemon, &p)
        .args(["run", "--trust", "--json", "--report"])
        .arg(&report)
        .arg("task")
        .env("OPENROUTER_API_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(mock.request_headers()[0]["authorization"], format!("Bearer {KEY}"));
    let events = String::from_utf8_lossy(&run.stdout);
    let session = events
        .lines()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()?["session_id"].as_str().map(str::to_owned))
        .expect("events name their session");

    // session/get shows the names of the caller's variables, never values.
    let mut c = daemon.nd();
    let got = c.ok("session/get", json!({"session_id": session}));
    let names = got["environment"].as_array().expect("the caller's variable names").clone();
    assert!(names.contains(&json!("OPENROUTER_API_KEY")), "{names:?}");
    assert!(!got.to_string().contains(KEY), "session/get shows no value");
    assert!(!events.contains(KEY), "no event holds the key");
    drop(c);

    // After a restart, the session continued from a shell gets that shell's
    // environment again, and a changed key is used from that run on.
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    daemon.wait_exit();
    let daemon = env.start_daemon();
    let again = env
        .swivalctl(&daemon, &p)
        .args(["run", "--session", &session, "again"])
        .env("OPENROUTER_API_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(mock.request_headers()[1]["authorization"], format!("Bearer {KEY}"));
    let rotated = env
        .swivalctl(&daemon, &p)
        .args(["run", "--session", &session, "once more"])
        .env("OPENROUTER_API_KEY", NEW_KEY)
        .output()
        .unwrap();
    assert_eq!(rotated.status.code(), Some(0), "{}", String::from_utf8_lossy(&rotated.stderr));
    assert_eq!(mock.request_headers()[2]["authorization"], format!("Bearer {NEW_KEY}"));

    // Nothing under the test's home (state, cache, config, projects, the
    // report, the daemon's log) holds either key.
    for key in [KEY, NEW_KEY] {
        let hits = files_containing(env.root(), key.as_bytes());
        assert!(hits.is_empty(), "{key} found in {hits:?}");
    }
    assert!(std::fs::read_to_string(&report).unwrap().contains("\"outcome\": \"success\""));
}

#[test]
fn an_api_key_flag_is_kept_out_of_the_store() {
    const KEY: &str = "sk-flag-0c4e81d2";
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("ok")]);
    let run = env
        .swivalctl(&daemon, &p)
        .args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m"])
        .args(["--api-key", KEY, "task"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(mock.request_headers()[0]["authorization"], format!("Bearer {KEY}"));
    let hits = files_containing(env.root(), KEY.as_bytes());
    assert!(hits.is_empty(), "the key was written to {hits:?}");
}

#[test]
fn a_whitelisted_command_resolves_through_the_callers_path() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let tools = env.root().join("caller-bin");
    std::fs::create_dir_all(&tools).unwrap();
    script(&tools, "mytool", "#!/bin/sh\necho found-on-the-callers-path\n");
    env.global_config("allowed_commands = [\"mytool\"]\n");
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "run_command", json!({"command": ["mytool"]})),
        Step::text("ran it"),
    ]);
    let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
    let run = env
        .swivalctl(&daemon, &p)
        .args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m"])
        .args(["--allowed-commands", "mytool", "run it"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let second = mock.requests()[1]["messages"].to_string();
    assert!(second.contains("found-on-the-callers-path"), "{second}");

    // The daemon's PATH alone does not have it: without the caller's PATH
    // the whitelist names a command that does not exist.
    let mock = MockProvider::start(vec![Step::text("unused")]);
    let run = env
        .swivalctl(&daemon, &p)
        .args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m"])
        .args(["--allowed-commands", "mytool", "run it"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_ne!(run.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("mytool"), "{stderr}");

    // `swivalctl policy check` answers for the caller's PATH too.
    let check =
        env.swivalctl(&daemon, &p).args(["policy", "check", "--", "mytool"]).env("PATH", &path).output().unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{said}{}", String::from_utf8_lossy(&check.stderr));
    assert!(said.contains(&tools.join("mytool").display().to_string()), "{said}");
}
