//! `swivalctl run` as a user at a real terminal (tmux: `send-keys`,
//! `capture-pane`): in ask mode the question shows the exact argv, why the
//! use is high-risk, and offers no "always" for a use asked every time; a
//! "no" typed at the prompt keeps the command from running.

use serde_json::json;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::tmux::{shell_line, Tmux};
use swival_tests::TestEnv;

#[test]
fn a_high_risk_question_at_the_terminal_shows_argv_and_why_and_no_keeps_it_from_running() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let marker = p.join("PWNED");
    let program = format!("BEGIN{{system(\"touch {}\")}}", marker.display());
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "run_command", json!({"command": ["awk", program]})),
        Step::text("gave up"),
    ]);
    env.global_config(&format!(
        "provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\ncommands = \"ask\"\n",
        mock.base_url()
    ));
    let tmux = Tmux::new(&env);
    tmux.start(&shell_line(&env, &daemon.socket, &p, "run 'count the lines'"));

    let screen = tmux.wait_for("(default no):");
    assert!(screen.contains("[high risk]"), "{screen}");
    assert!(screen.contains("argv: [\"awk\",\"BEGIN{system(\\\"touch"), "the exact argv: {screen}");
    assert!(screen.contains("why: "), "{screen}");
    assert!(!screen.contains("[a] always"), "no always for a use asked every time: {screen}");
    tmux.run(&["send-keys", "-t", "t", "n", "Enter"]);
    let screen = tmux.wait_for("EXIT=");
    assert!(screen.contains("gave up") && screen.contains("EXIT=0"), "{screen}");
    assert!(!marker.exists(), "the rejected command ran");
    let sent = mock.requests_text();
    assert!(sent.contains("rejected") || sent.contains("denied") || sent.contains("not approved"), "{sent}");
}
