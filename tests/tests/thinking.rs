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
