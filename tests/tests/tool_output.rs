//! Tool output for people: `run` and the REPL (in a real terminal) show a
//! read's first lines on lines of their own with their numbers, an edit as
//! a diff with line numbers and counts, and never the notes the daemon
//! adds for the model (the finishing hint, a repair note),
//! which the model still reads; `continue.md` quotes the tools' output
//! without those notes either.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::tmux::{shell_line, Tmux};
use swival_tests::TestEnv;

/// The guards' hint after a change that succeeded (said to the model).
const HINT: &str = "If this change completes the task";

/// A project with a nine-line notes file and a wrong `add`.
fn project(env: &TestEnv) -> std::path::PathBuf {
    let p = env.project("p");
    let notes: String = (1..=9).map(|n| format!("note number {n}\n")).collect();
    std::fs::write(p.join("notes.txt"), notes).unwrap();
    std::fs::write(p.join("calc.py"), "def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n").unwrap();
    p
}

/// Read the notes, read and fix `add` (its path argument misnamed, so a
/// repair note follows the result), then answer.
fn script() -> Vec<Step> {
    vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "notes.txt"})),
        Step::tool_call("c2", "read_file", json!({"file_path": "calc.py"})),
        Step::tool_call("c3", "edit_file", json!({"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})),
        Step::text("fixed add"),
    ]
}

/// Every tool message the model was sent in request `n`.
fn tool_messages(mock: &MockProvider, n: usize) -> Vec<String> {
    mock.wait_for_requests(n + 1);
    let request: Value = mock.requests()[n].clone();
    let messages = request["messages"].as_array().unwrap().iter();
    messages.filter(|m| m["role"] == "tool").filter_map(|m| m["content"].as_str().map(str::to_owned)).collect()
}

/// What a person must see, and must not, of [`script`]'s run.
fn assert_shown_for_people(shown: &str) {
    assert!(
        shown.contains("\n    1: note number 1\n    2: note number 2\n"),
        "the read's first lines, each on its own line with its number:\n{shown}"
    );
    assert!(shown.contains("more lines\n"), "how many more lines the read had:\n{shown}");
    assert!(shown.contains("calc.py +1 -1\n"), "the edit's file and counts:\n{shown}");
    assert!(
        shown.contains("       2 -     return a - b\n       2 +     return a + b\n"),
        "the edit as a diff with line numbers:\n{shown}"
    );
    assert!(shown.contains("       1   def add(a, b):\n"), "a kept line around the change:\n{shown}");
    for model_only in [HINT, "auto-corrected"] {
        assert!(!shown.contains(model_only), "{model_only:?} is for the model, not the screen:\n{shown}");
    }
}

/// The model still reads the notes after the edit's output.
fn assert_model_reads_the_notes(mock: &MockProvider) {
    let results = tool_messages(mock, 3);
    let edit = results.last().unwrap();
    assert!(edit.starts_with("Edited calc.py\n[checksum="), "{edit}");
    assert!(edit.contains("auto-corrected") && edit.contains(HINT), "{edit}");
}

#[test]
fn run_shows_a_reads_lines_and_an_edit_as_a_diff_without_the_notes_for_the_model() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let mock = MockProvider::start(script());
    let out = env
        .swivalctl(&daemon, &p)
        .args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m", "fix add"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "fixed add");
    assert_shown_for_people(&stderr);
    assert!(!stderr.contains('\x1b'), "no colour when stderr is not a terminal:\n{stderr:?}");
    assert_model_reads_the_notes(&mock);
}

#[test]
fn the_repl_shows_the_same_in_a_terminal() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let mock = MockProvider::start(script());
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    let tmux = Tmux::new(&env);
    tmux.start(&shell_line(&env, &daemon.socket, &p, "repl --no-color"));
    tmux.wait_for("swival> ");
    tmux.type_line("fix add");
    let screen = tmux.wait_for("fixed add");
    assert_shown_for_people(&screen);
    assert_model_reads_the_notes(&mock);
}

#[test]
fn continue_md_quotes_the_tools_output_not_the_notes_for_the_model() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let mut steps = script();
    steps.truncate(3);
    steps.push(Step::hang());
    let mock = MockProvider::start(steps);
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    let sid = swival_tests::create_session(&mut c, &p, config);
    let run_id = c.ok("run/start", json!({"session_id": sid, "task": "fix add"}))["run_id"].clone();
    mock.wait_for_requests(4);
    c.ok("run/cancel", json!({"run_id": run_id}));
    assert_eq!(c.ok("run/wait", json!({"run_id": run_id}))["outcome"], "cancelled");
    let text = std::fs::read_to_string(p.join(".swival/continue.md")).unwrap();
    assert!(text.contains("called `edit_file`\n-   → Edited calc.py [checksum="), "{text}");
    assert!(!text.contains(HINT) && !text.contains("auto-corrected"), "{text}");
    assert!(Path::new(&p.join("calc.py")).exists());
}
