//! Swival's reviewer modes: `swivalctl run --reviewer-mode DIR` as a
//! reviewer script (answer on stdin, task from `SWIVAL_TASK` or
//! `--objective`, criteria from `--verify`, exit 0/1/2 on the verdict),
//! its one request exactly Swival's review prompt with no system prompt
//! and no tools; and `--self-review`, where a run's answers are judged by
//! the same model in a reviewer session, through the same filter chain.

use serde_json::{json, Value};
use std::io::Write as _;
use std::process::Stdio;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{script, Daemon, TestEnv, REDACT_FILTER as REDACT};

/// What Swival's review prompt starts with.
const REVIEW: &str = "You are reviewing a coding agent's work.";

/// `swivalctl run --reviewer-mode DIR ARGS…` with `answer` on stdin and
/// `SWIVAL_TASK` set: its exit code, stdout and stderr.
fn reviewer(
    env: &TestEnv,
    daemon: &Daemon,
    dir: &std::path::Path,
    args: &[&str],
    answer: &str,
) -> (i32, String, String) {
    let mut cmd = env.swivalctl(daemon, dir);
    cmd.args(["run", "--reviewer-mode", "."]).args(args).env("SWIVAL_TASK", "add a greeting to hello.txt");
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(answer.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// A project whose global config points at `mock`.
fn project(env: &TestEnv, mock: &MockProvider) -> std::path::PathBuf {
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    env.project("p")
}

#[test]
fn reviewer_mode_sends_swivals_prompt_alone_and_exits_on_the_verdict() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![
        Step::text("The greeting is there.\nVERDICT: ACCEPT"),
        Step::text("Missing the comma.\nVERDICT: RETRY"),
        Step::text("I am not sure."),
    ]);
    let p = project(&env, &mock);
    std::fs::write(p.join("criteria.md"), "hello.txt says hello\n").unwrap();

    let (code, out, _) =
        reviewer(&env, &daemon, &p, &["--verify", "criteria.md", "--review-prompt", "Be strict."], "I added it.");
    assert_eq!(code, 0);
    assert!(out.contains("VERDICT: ACCEPT"), "{out}");
    let request = &mock.requests()[0];
    let messages = request["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "no system prompt: {request:#}");
    assert_eq!(messages[0]["role"], "user");
    let expected = "You are reviewing a coding agent's work.\n\n<task>\nadd a greeting to hello.txt\n</task>\n\n\
        <verification>\nhello.txt says hello\n\n</verification>\n\nThe answer must satisfy these verification criteria.\n\n\
        <answer>\nI added it.\n</answer>\n\nEvaluate whether the answer correctly and completely addresses the task.\n\
        Be strict.\n\n\nYou MUST end your response with exactly one of these lines:\n  VERDICT: ACCEPT\n  VERDICT: RETRY\n\n\
        If RETRY, explain what needs to be fixed above the verdict line. Be specific and actionable.";
    assert_eq!(messages[0]["content"], expected);
    assert!(request.get("tools").is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)), "no tools: {request:#}");

    let (code, out, _) = reviewer(&env, &daemon, &p, &[], "I added it.");
    assert_eq!((code, out.contains("Missing the comma.")), (1, true), "{out}");
    let (code, _, err) = reviewer(&env, &daemon, &p, &[], "I added it.");
    assert_eq!(code, 2);
    assert!(err.contains("reviewer error: no VERDICT found in LLM response"), "{err}");
    let (code, _, err) = reviewer(&env, &daemon, &p, &[], "  \n");
    assert_eq!(code, 2);
    assert!(err.contains("reviewer error: empty answer on stdin"), "{err}");
    let (code, _, err) = reviewer(&env, &daemon, &p, &["--objective", "missing.md"], "I added it.");
    assert_eq!(code, 2);
    assert!(err.contains("reviewer error: cannot read --objective file"), "{err}");
}

#[test]
fn self_review_judges_each_answer_with_the_same_model_through_the_filter_chain() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock =
        MockProvider::start(vec![Step::text("done"), Step::text("done, with the link to internal.example.corp")]);
    mock.route(&[REVIEW, "<answer>\ndone\n</answer>"], vec![Step::text("Say where.\nVERDICT: RETRY")]);
    mock.route(&[REVIEW, "with the link"], vec![Step::text("Good.\nVERDICT: ACCEPT")]);
    let p = env.project("p");
    let filter = script(&p, "redact.py", REDACT);
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true,
        "self_review": true, "llm_filter": filter});
    let mut c = daemon.nd();
    let sid =
        c.ok("session/create", json!({"base_dir": p, "config": config}))["session_id"].as_str().unwrap().to_owned();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "document internal.example.corp"}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["outcome"], "success", "{result:#}");
    assert!(result["answer"].as_str().unwrap().contains("with the link"), "{result:#}");

    let reviews: Vec<Value> = mock.requests().into_iter().filter(|r| r.to_string().contains(REVIEW)).collect();
    assert_eq!(reviews.len(), 2, "one review per answer");
    let sent = serde_json::to_string(&reviews).unwrap();
    assert!(
        !sent.contains("internal.example.corp") && sent.contains("[REDACTED]"),
        "the filter ran on reviews: {sent}"
    );
    assert_eq!(reviews[0]["model"], "m", "the same model reviews");
    let report = c.ok("report/get", json!({"run_id": run}));
    assert_eq!(report["stats"]["review_rounds"], 2, "{report:#}");
}

#[test]
fn self_review_carries_the_verify_criteria_given_with_run() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("the answer")]);
    mock.route(&[REVIEW], vec![Step::text("Meets it.\nVERDICT: ACCEPT")]);
    let p = project(&env, &mock);
    std::fs::write(p.join("criteria.md"), "the answer names the capital\n").unwrap();
    let out = env
        .swivalctl(&daemon, &p)
        .args(["run", "--self-review", "--verify", "criteria.md", "what is the capital?"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reviews: Vec<Value> = mock.requests().into_iter().filter(|r| r.to_string().contains(REVIEW)).collect();
    assert_eq!(reviews.len(), 1, "one review");
    let sent = reviews[0].to_string();
    assert!(sent.contains("<verification>") && sent.contains("the answer names the capital"), "{sent}");
}

/// `swivalctl run --self-review TASK` in `dir`: (exit code, stdout, stderr).
fn self_review(env: &TestEnv, daemon: &Daemon, dir: &std::path::Path, task: &str) -> (i32, String, String) {
    let out = env.swivalctl(daemon, dir).args(["run", "--no-history", "--self-review", task]).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// The review requests `mock` got.
fn reviews(mock: &MockProvider) -> Vec<String> {
    mock.requests().into_iter().map(|r| r.to_string()).filter(|r| r.contains(REVIEW)).collect()
}

#[test]
fn a_verify_key_resolves_against_its_config_files_directory_and_reaches_the_self_review() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("Paris"), Step::text("Paris again")]);
    mock.route(&[REVIEW], vec![Step::text("Meets it.\nVERDICT: ACCEPT"), Step::text("Fine.\nVERDICT: ACCEPT")]);
    let global = env.root().join("config/swival");
    std::fs::write(global.join("criteria.md"), "the answer names a capital city\n").unwrap();
    env.global_config(&format!(
        "provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\nverify = \"criteria.md\"\n",
        mock.base_url()
    ));
    let p = env.project("p");
    std::fs::create_dir_all(p.join("sub")).unwrap();
    let (code, out, err) = self_review(&env, &daemon, &p, "what is the capital?");
    assert_eq!((code, out.as_str()), (0, "Paris\n"), "{err}");
    let sent = reviews(&mock);
    assert_eq!(sent.len(), 1, "one review: {err}");
    assert!(sent[0].contains("the answer names a capital city"), "the global file's criteria: {}", sent[0]);

    // A project's key, relative to swival.toml, wins; it is read even when
    // the run starts below the project.
    std::fs::create_dir_all(p.join("checks")).unwrap();
    std::fs::write(p.join("checks/criteria.md"), "the answer names the capital of France\n").unwrap();
    std::fs::write(p.join("swival.toml"), "verify = \"checks/criteria.md\"\n").unwrap();
    let trusted = env.swivalctl(&daemon, &p).args(["trust"]).output().unwrap();
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    let (code, _, err) = self_review(&env, &daemon, &p, "and now?");
    assert_eq!(code, 0, "{err}");
    let sent = reviews(&mock);
    assert!(sent[1].contains("the capital of France"), "the project's criteria: {}", sent[1]);
}

#[test]
fn a_verify_file_that_cannot_be_read_fails_the_run_naming_the_file_and_the_key() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("Paris")]);
    mock.route(&[REVIEW], vec![Step::text("Meets it.\nVERDICT: ACCEPT")]);
    env.global_config(&format!(
        "provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\nverify = \"missing.md\"\n",
        mock.base_url()
    ));
    let p = env.project("p");
    let (code, out, err) = self_review(&env, &daemon, &p, "what is the capital?");
    let missing = env.root().join("config/swival/missing.md");
    assert_ne!(code, 0, "not accepted unchecked: {out}{err}");
    assert!(out.is_empty(), "no answer is delivered: {out}");
    assert!(err.contains("verify") && err.contains(&missing.display().to_string()), "{err}");
    assert!(reviews(&mock).is_empty(), "nothing was reviewed without its criteria");
}

#[test]
fn a_verify_file_the_model_deletes_blocks_the_answer_instead_of_letting_it_through() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![
        // The first call reads it (the read guard), the second deletes it.
        Step::tool_call("d1", "delete_file", json!({"file_path": "checks/criteria.md"})),
        Step::tool_call("d2", "delete_file", json!({"file_path": "checks/criteria.md"})),
        Step::text("Paris"),
    ]);
    mock.route(&[REVIEW], vec![Step::text("Meets it.\nVERDICT: ACCEPT")]);
    let p = project(&env, &mock);
    std::fs::create_dir_all(p.join("checks")).unwrap();
    std::fs::write(p.join("checks/criteria.md"), "the answer names the capital of France\n").unwrap();
    std::fs::write(p.join("swival.toml"), "verify = \"checks/criteria.md\"\n").unwrap();
    let trusted = env.swivalctl(&daemon, &p).args(["trust"]).output().unwrap();
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    let (code, out, err) = self_review(&env, &daemon, &p, "what is the capital?");
    assert_eq!((code, out.as_str()), (1, ""), "blocked, not accepted unchecked: {err}");
    let file = p.canonicalize().unwrap().join("checks/criteria.md");
    assert!(err.contains("verify file") && err.contains(&file.display().to_string()), "{err}");
    assert!(reviews(&mock).is_empty(), "nothing was reviewed without its criteria");
}
