//! The model's text drives no terminal: an answer, a tool's output and a
//! file name the model chose carry escape sequences (OSC 52 sets the
//! clipboard, OSC 0 the title, CSI clears the screen) and arrive shown,
//! not obeyed, in `swivalctl run` and in the REPL at a real terminal
//! (tmux); `--json` keeps the exact text.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::tmux::{shell_line, Tmux};
use swival_tests::TestEnv;

/// An answer that would set the clipboard, the title and clear the screen.
const ANSWER: &str = "done\u{1b}]52;c;cm0gLXJmIH4K\u{7}\u{1b}]0;pwned-title\u{1b}\\\u{1b}[2Jend";

/// The model reads a file whose name is an escape sequence (the failed
/// result names it) and answers with escapes.
fn steps() -> Vec<Step> {
    vec![Step::tool_call("c1", "read_file", json!({"file_path": "x\u{1b}]0;tool-title\u{7}.txt"})), Step::text(ANSWER)]
}

fn configure(env: &TestEnv, mock: &MockProvider) {
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
}

#[test]
fn run_shows_escapes_in_the_answer_and_tool_output_as_text_and_json_keeps_them() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(steps());
    configure(&env, &mock);
    let out = env.swivalctl(&daemon, &p).args(["run", "read it"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "a raw control byte on {name}: {text:?}");
    }
    assert!(stdout.contains("done␛]52;c;cm0gLXJmIH4K␇␛]0;pwned-title␛\\␛[2Jend"), "{stdout:?}");
    assert!(stderr.contains("␛]0;tool-title␇"), "the tool call and its error name the file, shown: {stderr:?}");

    let mock = MockProvider::start(steps());
    configure(&env, &mock);
    let out = env.swivalctl(&daemon, &p).args(["run", "--json", "read it"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answers: Vec<String> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "run_finished")
        .filter_map(|e| e["answer"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(answers, vec![ANSWER.to_owned()], "--json keeps the exact text: {stdout}");
}

#[test]
fn the_repl_shows_escapes_as_text_and_the_terminal_title_stays() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(steps());
    configure(&env, &mock);
    let tmux = Tmux::new(&env);
    tmux.start(&shell_line(&env, &daemon.socket, &p, "repl"));
    tmux.wait_for("swival> ");
    let title_before = tmux.run(&["display-message", "-p", "-t", "t", "#{pane_title}"]);
    tmux.type_line("read it");
    let screen = tmux.wait_for("end");
    assert!(screen.contains("␛]52;c;cm0gLXJmIH4K␇"), "{screen}");
    assert!(screen.contains("␛]0;tool-title␇"), "{screen}");
    let title = tmux.run(&["display-message", "-p", "-t", "t", "#{pane_title}"]);
    assert_eq!(title, title_before, "the model set the terminal's title");
    assert!(!title.contains("pwned") && !title.contains("tool-title"), "{title}");
}
