//! Checks at edit time, end to end: an edit that breaks a Python file's
//! syntax is told so in its result, with the line; an edit to a file that
//! was already broken is not blamed; a rewrite that drops a function is
//! named; `edit_checks = false` turns the checks off.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

/// Run `calls` (name, arguments) in one session with `extra` config; the
/// results in order.
fn results(env: &TestEnv, extra: Value, calls: Vec<(&str, Value)>) -> Vec<String> {
    let daemon = env.start_daemon();
    let p = env.project("p");
    let ids: Vec<String> = (0..calls.len()).map(|i| format!("c{i}")).collect();
    let mut script: Vec<Step> = calls.iter().zip(&ids).map(|((n, a), id)| Step::tool_call(id, n, a.clone())).collect();
    script.push(Step::text("done"));
    let mock = MockProvider::start(script);
    let mut config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let mut c = daemon.nd();
    let sid =
        c.ok("session/create", json!({"base_dir": p, "config": config}))["session_id"].as_str().unwrap().to_owned();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "fix it"}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}));
    let got = mock.tool_results();
    ids.iter().map(|id| got[id].clone()).collect()
}

#[test]
fn an_edit_that_breaks_python_is_told_and_one_to_a_broken_file_is_not() {
    let env = TestEnv::new();
    let p = env.project("p");
    std::fs::write(p.join("geo.py"), "import math\n\ndef dist(x, y):\n    return math.sqrt(x * x + y * y)\n").unwrap();
    std::fs::write(p.join("old.py"), "def f(:\n    pass\n\ndef g():\n    return 1\n").unwrap();
    let out = results(
        &env,
        json!({}),
        vec![
            ("read_file", json!({"file_path": "geo.py"})),
            (
                "edit_file",
                json!({"file_path": "geo.py", "old_string": "return math.sqrt(x * x + y * y)", "new_string": "return import math; math.sqrt(x * x + y * y)"}),
            ),
            ("read_file", json!({"file_path": "old.py"})),
            ("edit_file", json!({"file_path": "old.py", "old_string": "return 1", "new_string": "return 2"})),
            ("write_file", json!({"file_path": "geo.py", "content": "import math\n"})),
        ],
    );
    assert!(out[1].contains("Python syntax error at line 4") && out[1].contains("return import math"), "{}", out[1]);
    assert!(!out[3].contains("syntax error"), "an already broken file is not blamed: {}", out[3]);
    assert!(out[4].contains("removed a definition the file had: `dist`"), "{}", out[4]);
}

#[test]
fn edit_checks_can_be_turned_off() {
    let env = TestEnv::new();
    let out = results(
        &env,
        json!({"edit_checks": false}),
        vec![("write_file", json!({"file_path": "bad.py", "content": "def f(:\n"}))],
    );
    assert!(!out[0].contains("syntax error"), "{}", out[0]);
}

#[test]
fn a_rename_that_leaves_a_use_behind_names_it_and_one_that_renames_all_does_not() {
    let env = TestEnv::new();
    let p = env.project("p");
    std::fs::write(p.join("greeting.py"), "msg = 'hello'\nprint(msg)\n").unwrap();
    std::fs::write(p.join("main.py"), "from util import add_numbers\n\nprint(add_numbers(2, 3))\n").unwrap();
    let out = results(
        &env,
        json!({}),
        vec![
            ("read_file", json!({"file_path": "greeting.py"})),
            (
                "edit_file",
                json!({"file_path": "greeting.py", "old_string": "msg = 'hello'", "new_string": "message = 'hello'"}),
            ),
            (
                "edit_file",
                json!({"file_path": "greeting.py", "old_string": "print(msg)", "new_string": "print(message)"}),
            ),
            ("read_file", json!({"file_path": "main.py"})),
            (
                "edit_file",
                json!({"file_path": "main.py", "old_string": "import add_numbers", "new_string": "import add"}),
            ),
        ],
    );
    assert!(out[1].contains("left a name used but no longer defined: `msg` (line 2: `print(msg)`)"), "{}", out[1]);
    assert!(!out[1].contains("If this change completes the task"), "no push to finish: {}", out[1]);
    assert!(!out[2].contains("no longer defined"), "every use renamed: {}", out[2]);
    assert!(out[4].contains("`add_numbers` (line 3: `print(add_numbers(2, 3))`)"), "{}", out[4]);
}
