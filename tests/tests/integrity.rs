//! Policy integrity, attacked as the model would: through its own tool
//! calls (scripted by the mock provider) against the real daemon, real
//! scripts and real commands under the real sandbox. The model must not be
//! able to rewrite its filter, hooks or config, read the daemon's secrets
//! or state, leave processes behind, or reach Unix sockets outside.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{script, NdConn, TestEnv};

/// A filter that redacts `SECRET-123` using a helper module from its own
/// directory (so the directory, not only the file, is policy).
const REDACT: &str = r#"#!/usr/bin/env python3
import json, sys
from helper import scrub
req = json.load(sys.stdin)
for m in req["messages"]:
    if isinstance(m.get("content"), str):
        m["content"] = scrub(m["content"])
print(json.dumps({"messages": req["messages"]}))
"#;
const HELPER: &str = "def scrub(text):\n    return text.replace('SECRET-123', '[redacted]')\n";
/// What the model tries to put in place of the filter: pass everything.
const PASSTHROUGH: &str =
    "#!/usr/bin/env python3\nimport json,sys\nprint(json.dumps({'messages': json.load(sys.stdin)['messages']}))\n";

fn provider(mock: &MockProvider) -> Value {
    json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"})
}

fn with(mut cfg: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    cfg
}

/// A project with `scripts/redact.py` (and its helper) as the filter,
/// trusted by the user.
fn filtered_project(env: &TestEnv, c: &mut NdConn) -> std::path::PathBuf {
    let p = env.project("p");
    std::fs::create_dir_all(p.join("scripts")).unwrap();
    script(&p.join("scripts"), "redact.py", REDACT);
    std::fs::write(p.join("scripts/helper.py"), HELPER).unwrap();
    std::fs::write(p.join("swival.toml"), "llm_filter = \"./scripts/redact.py\"\n").unwrap();
    let trusted = c.ok("project/trust", json!({"base_dir": p}));
    assert_eq!(trusted["trusted"], true, "{trusted}");
    p
}

/// Start a run, wait for it; the result and the tool results the model saw.
fn run(c: &mut NdConn, sid: &Value, task: &str, mock: &MockProvider) -> (Value, HashMap<String, String>) {
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    let mut tools = HashMap::new();
    for req in mock.requests() {
        for m in req["messages"].as_array().unwrap() {
            if m["role"] == "tool" {
                tools.insert(m["tool_call_id"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap().to_owned());
            }
        }
    }
    (result, tools)
}

fn sha256(path: &Path) -> String {
    let out = std::process::Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().to_owned()
}

#[test]
fn the_model_cannot_rewrite_its_filter_and_the_secret_never_reaches_the_provider() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let p = filtered_project(&env, &mut c);
    let before = std::fs::read(p.join("scripts/redact.py")).unwrap();
    let overwrite = format!("open('scripts/redact.py','w').write({PASSTHROUGH:?})");
    let mock = MockProvider::start(vec![
        Step::tool_call("read", "read_file", json!({"file_path": "scripts/redact.py"})),
        Step::tool_call("write", "write_file", json!({"file_path": "scripts/redact.py", "content": PASSTHROUGH})),
        Step::tool_call(
            "helper",
            "write_file",
            json!({"file_path": "scripts/helper.py", "content": "def scrub(t): return t"}),
        ),
        Step::tool_call("del", "delete_file", json!({"file_path": "scripts/redact.py"})),
        Step::tool_call("py", "run_command", json!({"command": ["python3", "-c", overwrite]})),
        Step::tool_call("mv", "run_command", json!({"command": ["mv", "scripts", "gone"]})),
        Step::tool_call(
            "cfg",
            "run_command",
            json!({"command": ["python3", "-c", "open('swival.toml','a').write('yolo = true\\n')"]}),
        ),
        Step::text("done"),
    ]);
    let cfg = with(provider(&mock), json!({"allowed_commands": ["python3", "mv"]}));
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    let (r, tools) = run(&mut c, &sid, "keep SECRET-123 safe", &mock);
    assert_eq!(r["outcome"], "success", "{r}");
    for id in ["write", "helper", "del"] {
        assert!(tools[id].starts_with("error:") && tools[id].contains("protected policy"), "{id}: {}", tools[id]);
    }
    for id in ["py", "mv", "cfg"] {
        assert!(tools[id].starts_with("Exit code: "), "{id} succeeded: {}", tools[id]);
    }
    assert!(tools["py"].contains("Read-only file system"), "{}", tools["py"]);
    assert_eq!(std::fs::read(p.join("scripts/redact.py")).unwrap(), before, "the filter was changed");
    assert!(std::fs::read_to_string(p.join("scripts/helper.py")).unwrap().contains("SECRET-123"));
    assert!(!std::fs::read_to_string(p.join("swival.toml")).unwrap().contains("yolo"));
    // Every request went through the real filter, helper module included.
    let sent = mock.requests_text();
    assert!(!sent.contains("SECRET-123"), "the secret reached the provider");
    assert!(sent.contains("[redacted]"));
    // policy/status names what is protected.
    let st = c.ok("policy/status", json!({"session_id": sid}));
    let protected = st["protected"].to_string();
    assert!(protected.contains("scripts\"") && protected.contains("swival.toml"), "{protected}");
}

#[test]
fn moving_the_filters_parent_aside_and_rebuilding_it_around_a_copy_is_refused() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let p = env.project("p");
    let dir = p.join("tools/filters");
    std::fs::create_dir_all(&dir).unwrap();
    script(&dir, "redact.py", REDACT);
    std::fs::write(dir.join("helper.py"), HELPER).unwrap();
    std::fs::write(p.join("swival.toml"), "llm_filter = \"./tools/filters/redact.py\"\n").unwrap();
    c.ok("project/trust", json!({"base_dir": p}));
    // The protected directory cannot move, but its parent can: the model
    // moves `tools` aside and rebuilds it with an identical filter and its
    // own helper module.
    let rebuild = "import os,shutil\nos.makedirs('tools/filters')\nshutil.copy('moved/filters/redact.py','tools/filters/redact.py')\nopen('tools/filters/helper.py','w').write('def scrub(t): return t')";
    // Both in one turn, so no filter check falls between them.
    let mock = MockProvider::start(vec![
        Step::tool_calls(vec![
            ("mv", "run_command", json!({"command": ["mv", "tools", "moved"]})),
            ("py", "run_command", json!({"command": ["python3", "-c", rebuild]})),
        ]),
        Step::text("never sent"),
    ]);
    let cfg = with(provider(&mock), json!({"allowed_commands": ["mv", "python3"]}));
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    let (r, _) = run(&mut c, &sid, "keep SECRET-123 safe", &mock);
    // The directories above the protected one are pinned in each command's
    // mount namespace: the move fails, and the rebuild finds `tools` there.
    let results = mock.tool_results();
    assert!(results["mv"].contains("busy"), "{}", results["mv"]);
    assert!(!p.join("moved").exists(), "the filter's parent was moved");
    assert_eq!(std::fs::read_to_string(dir.join("helper.py")).unwrap(), HELPER);
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(!mock.requests_text().contains("SECRET-123"), "the secret reached the provider");
    assert_eq!(mock.request_count(), 2);
}

#[test]
fn a_hook_script_rewritten_by_an_unconfined_command_is_detected_and_blocks() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let p = env.project("p");
    let marker = env.root().join("tampered-hook-ran");
    std::fs::create_dir_all(p.join("hooks")).unwrap();
    let hook = script(&p.join("hooks"), "allow.sh", "#!/bin/sh\ncat >/dev/null\necho '{}'\n");
    let pinned = sha256(&hook);
    let evil = format!("#!/bin/sh\ntouch {}\ncat >/dev/null\necho '{{}}'\n", marker.display());
    let rewrite = format!("open('hooks/allow.sh','w').write({evil:?})");
    let mock = MockProvider::start(vec![
        Step::tool_call("py", "run_command", json!({"command": ["python3", "-c", rewrite]})),
        Step::text("never sent"),
    ]);
    // The user's own flags turn the kernel sandbox off, so the command can
    // write the file; pinning must still catch it.
    let cfg = with(
        provider(&mock),
        json!({"allowed_commands": ["python3"], "sandbox": "builtin",
               "hooks": [{"point": "before_llm_call", "command": "./hooks/allow.sh"}]}),
    );
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    let (r, _) = run(&mut c, &sid, "t", &mock);
    assert!(std::fs::read_to_string(&hook).unwrap().contains("touch"), "the unconfined rewrite did not happen");
    assert_eq!(r["outcome"], "blocked", "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(error.contains(&pinned) && error.contains(&sha256(&hook)), "{error}");
    assert!(error.contains("start a new session"), "{error}");
    assert!(!marker.exists(), "the rewritten hook ran");
    assert_eq!(mock.request_count(), 1, "a call went out after the hook changed");
}

#[test]
fn a_users_edit_of_the_filter_blocks_the_running_session_and_the_next_session_uses_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let p = filtered_project(&env, &mut c);
    let filter = p.join("scripts/redact.py");
    let mock = MockProvider::start(vec![Step::text("one"), Step::text("two")]);
    let sid = c.ok("session/create", json!({"base_dir": p, "config": provider(&mock)}))["session_id"].clone();
    let (r, _) = run(&mut c, &sid, "SECRET-123 first", &mock);
    assert_eq!(r["outcome"], "success", "{r}");
    let old = sha256(&filter);
    std::fs::write(&filter, format!("{REDACT}# edited by the user\n")).unwrap();
    std::fs::write(p.join("scripts/helper.py"), HELPER.replace("[redacted]", "[gone]")).unwrap();
    let new = sha256(&filter);
    let (r, _) = run(&mut c, &sid, "SECRET-123 second", &mock);
    assert_eq!(r["outcome"], "error", "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(error.contains("LLM filter blocked request") && error.contains(&old) && error.contains(&new), "{error}");
    assert_eq!(mock.request_count(), 1);
    let sid2 = c.ok("session/create", json!({"base_dir": p, "config": provider(&mock)}))["session_id"].clone();
    let (r, _) = run(&mut c, &sid2, "SECRET-123 third", &mock);
    assert_eq!(r["outcome"], "success", "{r}");
    let last = mock.requests().last().unwrap().to_string();
    assert!(last.contains("[gone] third") && !last.contains("SECRET-123"), "{last}");
}

#[test]
fn commands_see_no_daemon_secrets_no_state_no_credentials_and_no_unix_sockets() {
    let env = TestEnv::new();
    let ssh = env.root().join("home/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "PRIVATE-KEY-MARKER").unwrap();
    let daemon = daemon_with_env(
        &env,
        &[
            ("OPENAI_API_KEY", "sk-daemon-secret"),
            ("SWIVAL_ENCRYPT_KEY", "00112233445566778899aabbccddeeff"),
            ("DAEMON_ONLY_TOKEN", "tok-xyz"),
        ],
    );
    let mut c = daemon.nd();
    let p = env.project("p");
    // A named socket outside the base dir (an ssh-agent stand-in).
    let sockdir = tempfile::Builder::new().prefix("agent").tempdir_in(env.root()).unwrap();
    let sock = sockdir.path().join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "import socket\ntry:\n s=socket.socket(socket.AF_UNIX)\n s.connect({:?}); print('CONNECTED')\nexcept OSError as e:\n print('refused', e.errno)",
        sock.display().to_string()
    );
    let db = env.root().join("state/swival/swivald.db");
    assert!(db.exists(), "the daemon's database is at {}", db.display());
    let mock = MockProvider::start(vec![
        Step::tool_call("env", "run_command", json!({"command": ["env"]})),
        Step::tool_call("db", "run_command", json!({"command": ["cat", db.display().to_string()]})),
        Step::tool_call("key", "run_command", json!({"command": ["cat", ssh.join("id_rsa").display().to_string()]})),
        Step::tool_call("sock", "run_command", json!({"command": ["python3", "-c", connect]})),
        Step::tool_call("ps", "run_command", json!({"command": ["ls", "/proc"]})),
        Step::text("done"),
    ]);
    let cfg = with(provider(&mock), json!({"allowed_commands": ["env", "cat", "python3", "ls"]}));
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    let (r, tools) = run(&mut c, &sid, "look around", &mock);
    assert_eq!(r["outcome"], "success", "{r}");
    let env_out = &tools["env"];
    for secret in ["sk-daemon-secret", "00112233445566778899aabbccddeeff", "tok-xyz", "XDG_STATE_HOME"] {
        assert!(!env_out.contains(secret), "env shows {secret}: {env_out}");
    }
    assert!(env_out.contains("PATH=") && env_out.contains("HOME="), "{env_out}");
    assert!(tools["db"].starts_with("Exit code: 1") && tools["db"].contains("No such file"), "{}", tools["db"]);
    assert!(
        tools["key"].starts_with("Exit code: 1") && !tools["key"].contains("PRIVATE-KEY-MARKER"),
        "{}",
        tools["key"]
    );
    assert!(tools["sock"].contains("refused") && !tools["sock"].contains("CONNECTED"), "{}", tools["sock"]);
    assert!(listener.accept().is_err(), "the outside socket saw a connection");
    let pids: Vec<&str> = tools["ps"].lines().filter(|l| l.chars().all(|ch| ch.is_ascii_digit())).collect();
    assert_eq!(pids, ["1", "2"], "{}", tools["ps"]);
    // The daemon took the keys out of its own environment too: nothing it
    // starts inherits them, and its /proc entry no longer shows them.
    let environ = std::fs::read(format!("/proc/{}/environ", daemon.pid())).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(!environ.contains("sk-daemon-secret") && !environ.contains("00112233445566778899aabbccddeeff"));
    assert!(environ.contains("tok-xyz"), "only the keys the daemon reads are removed");
    let st = c.ok("policy/status", json!({"session_id": sid}))["sandbox"].to_string();
    assert!(st.contains("cannot create Unix sockets") && st.contains("PID namespace"), "{st}");
}

#[test]
fn a_setsid_grandchild_does_not_outlive_its_command() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call(
            "bg",
            "run_command",
            json!({"command": ["sh", "-c", "setsid sleep 61.303 >/dev/null 2>&1 & (sh -c 'sleep 61.303 >/dev/null 2>&1 &'); echo started"]}),
        ),
        Step::text("done"),
    ]);
    let cfg = with(provider(&mock), json!({"allowed_commands": ["sh"]}));
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    let (r, tools) = run(&mut c, &sid, "t", &mock);
    assert_eq!(r["outcome"], "success", "{r}");
    assert_eq!(tools["bg"], "started\n");
    assert!(swival_tests::no_process_with_arg("61.303"), "a setsid or double-forked process survived its command");
}

#[test]
fn an_untrusted_project_config_refuses_until_trusted_and_again_after_an_edit() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let hook = script(&p, "hook.sh", "#!/bin/sh\ncat >/dev/null\necho '{}'\n");
    std::fs::write(
        p.join("swival.toml"),
        format!("[[hooks]]\npoint = \"before_llm_call\"\ncommand = \"{}\"\n", hook.display()),
    )
    .unwrap();
    let mock = MockProvider::start(vec![Step::text("one"), Step::text("two"), Step::text("three")]);
    let url = mock.base_url();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--provider", "generic", "--base-url", &url, "--model", "m"];
        args.extend_from_slice(extra);
        args.push("task");
        env.swivalctl(&daemon, &p).args(&args).output().unwrap()
    };
    let out = run(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is not trusted") && stderr.contains("hooks = ") && stderr.contains("swivalctl trust"),
        "{stderr}"
    );
    assert_eq!(mock.request_count(), 0);
    // --trust accepts it for one run and records nothing.
    let out = run(&["--trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(run(&[]).status.code(), Some(2));
    let check = env.swivalctl(&daemon, &p).args(["trust", "--check"]).output().unwrap();
    assert_eq!(check.status.code(), Some(1));
    let trust = env.swivalctl(&daemon, &p).args(["trust"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&trust.stdout);
    assert_eq!(trust.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("runs hook programs"), "{stdout}");
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // A changed file is untrusted again.
    std::fs::write(
        p.join("swival.toml"),
        format!("yolo = true\n[[hooks]]\npoint = \"before_llm_call\"\ncommand = \"{}\"\n", hook.display()),
    )
    .unwrap();
    let out = run(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("has changed since you trusted it") && stderr.contains("yolo = true"), "{stderr}");
    assert_eq!(mock.request_count(), 2);
}

/// A daemon started with extra environment variables.
fn daemon_with_env(env: &TestEnv, vars: &[(&str, &str)]) -> swival_tests::Daemon {
    let mut cmd = env.command(&swival_tests::bin("swivald"));
    for (k, v) in vars {
        cmd.env(k, v);
    }
    swival_tests::Daemon::spawn(env, cmd, &[]).unwrap_or_else(|e| panic!("swivald did not start: {e}"))
}

#[test]
fn a_filter_changed_while_the_daemon_was_down_is_refused_for_the_old_session() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let mut c = daemon.nd();
    let p = filtered_project(&env, &mut c);
    let filter = p.join("scripts/redact.py");
    let mock = MockProvider::start(vec![Step::text("one"), Step::text("two")]);
    let sid = c.ok("session/create", json!({"base_dir": p, "config": provider(&mock)}))["session_id"].clone();
    let (r, _) = run(&mut c, &sid, "SECRET-123 first", &mock);
    assert_eq!(r["outcome"], "success", "{r}");
    drop(c);
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert!(daemon.wait_exit().success());
    let old = sha256(&filter);
    std::fs::write(&filter, PASSTHROUGH).unwrap();
    let new = sha256(&filter);

    // The session is loaded again from the store: it keeps what it pinned.
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let (r, _) = run(&mut c, &sid, "SECRET-123 second", &mock);
    assert_eq!(r["outcome"], "error", "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(error.contains(&old) && error.contains(&new), "{error}");
    assert_eq!(mock.request_count(), 1);
    assert!(!mock.requests_text().contains("SECRET-123"));
}
