//! Files the daemon reads for the model follow none of the model's links:
//! the model's own commands turn AGENTS.md, CLAUDE.md, a SKILL.md and the
//! reviewer's verify file into a symlink to a secret outside the project,
//! a FIFO, or a sparse gigabyte; the next session's requests carry none of
//! the secret, no session blocks, and the daemon still stops at once.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{create_session, events_until_finished, NdConn, TestEnv};

/// The secret every attack points at.
const SECRET: &str = "PRIVATE-KEY-8f3a1c";

/// The model runs `argv` through `run_command` in a session of `base`
/// that allows the program; the run's events.
fn model_runs(c: &mut NdConn, base: &Path, argv: &[&str]) -> Vec<Value> {
    let mock =
        MockProvider::start(vec![Step::tool_call("c1", "run_command", json!({"command": argv})), Step::text("ok")]);
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true,
        "allowed_commands": [argv[0]]});
    let sid = create_session(c, base, config);
    c.ok("run/start", json!({"session_id": sid, "task": "set up"}));
    let events = events_until_finished(c, &sid, 0);
    let result = events.iter().find(|e| e["type"] == "tool_result").expect("the command ran");
    assert_eq!(result["succeeded"], true, "{result}");
    events
}

/// A new session of `base` runs once; everything it sent the model, and
/// its warnings.
fn next_session(c: &mut NdConn, base: &Path, extra: Value) -> (String, Vec<String>) {
    let mock = MockProvider::start(vec![Step::text("done")]);
    let mut config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let sid = create_session(c, base, config);
    c.ok("run/start", json!({"session_id": sid, "task": "what are the rules here?"}));
    let events = events_until_finished(c, &sid, 0);
    let finished = events.iter().find(|e| e["type"] == "run_finished").unwrap();
    assert_eq!(finished["outcome"], "success", "{finished}");
    let warnings =
        events.iter().filter(|e| e["type"] == "warning").filter_map(|e| e["message"].as_str().map(str::to_owned));
    (mock.requests_text(), warnings.collect())
}

/// A secret file outside the project.
fn secret(env: &TestEnv) -> std::path::PathBuf {
    let dir = env.root().join("outside");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("id_rsa");
    std::fs::write(&path, format!("-----BEGIN-----\n{SECRET}\n")).unwrap();
    path
}

#[test]
fn instruction_files_linked_to_a_secret_by_the_model_never_reach_a_request() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let key = secret(&env);
    let mut c = daemon.nd();
    let key = key.to_str().unwrap();
    model_runs(&mut c, &p, &["ln", "-s", key, "AGENTS.md"]);
    model_runs(&mut c, &p, &["ln", "-s", key, "CLAUDE.md"]);
    assert!(std::fs::symlink_metadata(p.join("AGENTS.md")).unwrap().file_type().is_symlink());
    let (sent, warnings) = next_session(&mut c, &p, json!({}));
    assert!(!sent.contains(SECRET), "the secret reached the model: {sent}");
    assert!(warnings.iter().any(|w| w.contains("AGENTS.md") && w.contains("symlink")), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("CLAUDE.md") && w.contains("symlink")), "{warnings:?}");
}

#[test]
fn a_fifo_as_agents_md_blocks_no_session_and_not_the_daemons_shutdown() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let p = env.project("p");
    let mut c = daemon.nd();
    model_runs(&mut c, &p, &["mkfifo", "AGENTS.md"]);
    let (_, warnings) = next_session(&mut c, &p, json!({}));
    assert!(warnings.iter().any(|w| w.contains("AGENTS.md") && w.contains("not a regular file")), "{warnings:?}");
    let (_, again) = next_session(&mut c, &p, json!({}));
    assert_eq!(again.len(), warnings.len(), "every session goes on: {again:?}");
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert!(daemon.wait_exit().success());
}

#[test]
fn a_skill_file_linked_out_or_made_huge_by_the_model_is_skipped() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let key = secret(&env);
    std::fs::create_dir_all(p.join(".swival/skills/leak")).unwrap();
    std::fs::create_dir_all(p.join(".swival/skills/huge")).unwrap();
    let mut c = daemon.nd();
    model_runs(&mut c, &p, &["ln", "-s", key.to_str().unwrap(), ".swival/skills/leak/SKILL.md"]);
    model_runs(&mut c, &p, &["truncate", "-s", "1G", ".swival/skills/huge/SKILL.md"]);
    let rss_before = swival_tests::rss_kib(daemon.pid());
    let (sent, warnings) = next_session(&mut c, &p, json!({}));
    assert!(!sent.contains(SECRET), "{sent}");
    assert!(warnings.iter().any(|w| w.contains("leak/SKILL.md") && w.contains("symlink")), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("huge/SKILL.md") && w.contains("limit")), "{warnings:?}");
    let grown = swival_tests::rss_kib(daemon.pid()).saturating_sub(rss_before);
    assert!(grown < 256 * 1024, "the daemon grew by {grown} KiB reading a sparse SKILL.md");
}

#[test]
fn a_reviewers_verify_file_linked_to_a_secret_is_refused_not_sent() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let key = secret(&env);
    let mut c = daemon.nd();
    model_runs(&mut c, &p, &["ln", "-s", key.to_str().unwrap(), "criteria.md"]);
    let mock = MockProvider::start(vec![Step::text("VERDICT: ACCEPT")]);
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    let mut cmd = env.swivalctl(&daemon, &p);
    cmd.args(["run", "--reviewer-mode", ".", "--verify", "criteria.md"]).env("SWIVAL_TASK", "say hi");
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(b"hi").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot read --verify file") && stderr.contains("symlink"), "{stderr}");
    assert!(!mock.requests_text().contains(SECRET));
}
