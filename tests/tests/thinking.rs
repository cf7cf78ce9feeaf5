//! Swival's cleanup of a reply's thinking marks, through `swivalctl run`: a
//! stray leading `</think>` line always goes; `--sanitize-thinking` takes
//! whole `<think>…</think>` blocks out of the answer and the conversation.

use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

fn run(env: &TestEnv, daemon: &swival_tests::Daemon, mock: &MockProvider, extra: &[&str]) -> String {
    let p = env.project("p");
    let mut cmd = env.swivalctl(daemon, &p);
    cmd.args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m"]);
    let out = cmd.args(extra).arg("what is 2 + 2?").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_stray_mark_always_goes_and_think_blocks_go_when_asked() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("</think>\n\nThe answer is 4.")]);
    assert_eq!(run(&env, &daemon, &mock, &[]), "The answer is 4.\n");

    let thought = "<think>\nTwo and two make four.\n</think>\n\nThe answer is 4.";
    mock.push(Step::text(thought));
    assert_eq!(run(&env, &daemon, &mock, &[]), format!("{thought}\n"), "kept without the flag");
    mock.push(Step::text(thought));
    mock.push(Step::text("again"));
    assert_eq!(run(&env, &daemon, &mock, &["--sanitize-thinking"]), "The answer is 4.\n");
}

#[test]
fn a_reply_of_reasoning_alone_answers_with_it_streamed_or_not() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    for stream in [true, false] {
        let mock = MockProvider::start(vec![Step::reasoning_only("<think>\nfive it is\n</think>\nThe answer is 5.")]);
        let p = env.project(&format!("r-{stream}"));
        let cfg = serde_json::json!({"provider": "generic", "base_url": mock.base_url(), "model": "m",
            "stream": stream, "sanitize_thinking": true, "no_history": true});
        let (_, _, result) = swival_tests::run_task(&mut c, &p, cfg, "what is 2 + 3?");
        assert_eq!(result["outcome"], "success", "stream {stream}: {result:#}");
        assert_eq!(result["answer"], "The answer is 5.", "stream {stream}: {result:#}");
        assert_eq!(mock.request_count(), 1, "no empty-reply nudge: the reasoning was the answer");
    }
}

#[test]
fn reasoning_sent_apart_is_a_one_line_note_and_shown_whole_with_show_thinking_streamed_or_not() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let reasoning = "Two and two.\nThat makes four, SECRET-ish words.";
    for stream in ["true", "false"] {
        std::fs::write(p.join("swival.toml"), format!("stream = {stream}\n")).unwrap();
        let mock = MockProvider::start(vec![Step::thinking(reasoning, "The answer is 4.")]);
        mock.push(Step::thinking(reasoning, "The answer is 4."));
        let run = |extra: &[&str]| {
            let mut cmd = env.swivalctl(&daemon, &p);
            cmd.args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m", "--no-history"]);
            let out = cmd.args(extra).arg("what is 2 + 2?").output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
        };
        // Swival's collapsed note: lines, and a quarter of the characters.
        let (answer, progress) = run(&[]);
        assert_eq!(answer, "The answer is 4.\n", "stream {stream}");
        let tokens = reasoning.chars().count() / 4;
        let note = format!("  thinking: 2 lines / ~{tokens} tokens, hidden\n");
        assert!(progress.contains(&note), "stream {stream}: {progress}");
        assert!(!progress.contains("SECRET-ish"), "the reasoning is not shown: {progress}");
        // With the flag: the reasoning, on stderr only.
        let (answer, progress) = run(&["--show-thinking"]);
        assert_eq!(answer, "The answer is 4.\n", "stream {stream}");
        let shown = format!("thinking\n{}\n", reasoning);
        assert!(progress.contains(&shown), "stream {stream}: {progress}");
        assert!(!progress.contains("hidden"), "{progress}");
    }
}
