//! Swival's `run_shell_command`: a command line run as `sh -c` in the
//! command sandbox, offered only where any program may run. With a
//! whitelist or approvals it is not offered, and a call of it is refused:
//! a shell line is never a way around either.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{run_task, TestEnv};

fn config(mock: &MockProvider, commands: Value) -> Value {
    let mut c = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    for (k, v) in commands.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

fn offered(mock: &MockProvider) -> Vec<String> {
    let tools = mock.requests()[0]["tools"].clone();
    tools.as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn with_any_command_a_shell_line_runs_with_pipes_and_its_change_is_recorded() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("names.txt"), "carol\nalice\nbob\n").unwrap();
    let line = "sort names.txt | head -n 2 > first.txt && wc -l < first.txt";
    let mock = MockProvider::start(vec![
        Step::tool_call("s", "run_shell_command", json!({"command": line})),
        Step::text("sorted"),
    ]);
    let mut c = daemon.nd();
    let (_, run, result) = run_task(&mut c, &p, config(&mock, json!({"commands": "all"})), "sort the names");
    assert_eq!(result["outcome"], "success", "{result:#}");
    let names = offered(&mock);
    let at = |n: &str| names.iter().position(|x| x == n).unwrap();
    assert!(at("run_command") + 1 == at("run_shell_command"), "Swival's order: {names:?}");
    assert_eq!(std::fs::read_to_string(p.join("first.txt")).unwrap(), "alice\nbob\n");
    assert_eq!(mock.tool_results()["s"].trim(), "2");
    let changes = c.ok("run/changes", json!({"run_id": run}));
    assert_eq!(changes["files"][0]["path"], "first.txt", "{changes:#}");
    assert_eq!(changes["files"][0]["by"][0]["tool"], "run_shell_command");
}

#[test]
fn a_whitelist_or_approvals_offer_no_shell_and_a_call_of_it_runs_nothing() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    for (label, commands) in [("whitelist", json!({"allowed_commands": ["ls"]})), ("ask", json!({"commands": "ask"}))] {
        let p = env.project(label);
        // `ls` is allowed, `touch` is not: joined in one line they would
        // both run if the line went to a shell.
        let line = "ls && touch made-by-the-shell";
        let mock = MockProvider::start(vec![
            Step::tool_call("s", "run_shell_command", json!({"command": line})),
            Step::text("tried"),
        ]);
        let mut c = daemon.nd();
        let (_, _, result) = run_task(&mut c, &p, config(&mock, commands), "list and touch");
        assert_eq!(result["outcome"], "success", "{label}: {result:#}");
        assert!(!offered(&mock).contains(&"run_shell_command".to_owned()), "{label}: {:?}", offered(&mock));
        let answer = &mock.tool_results()["s"];
        assert!(answer.starts_with("error: unknown tool 'run_shell_command'"), "{label}: {answer}");
        assert!(!p.join("made-by-the-shell").exists(), "{label}: the shell ran");
    }
}

#[test]
fn run_python_is_offered_with_any_command_and_a_large_window_and_runs_in_the_sandbox() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let code = "import pathlib\nn = sum(range(10))\npathlib.Path('sum.txt').write_text(str(n))\nprint('sum', n)";
    let mock = MockProvider::start(vec![Step::tool_call("py", "run_python", json!({"code": code})), Step::text("45")]);
    let mut c = daemon.nd();
    let big = config(&mock, json!({"commands": "all", "max_context_tokens": 131072}));
    let (_, run, result) = run_task(&mut c, &p, big, "add the numbers below ten");
    assert_eq!(result["outcome"], "success", "{result:#}");
    assert!(offered(&mock).contains(&"run_python".to_owned()), "{:?}", offered(&mock));
    assert_eq!(mock.tool_results()["py"].trim(), "sum 45");
    assert_eq!(std::fs::read_to_string(p.join("sum.txt")).unwrap(), "45");
    let changes = c.ok("run/changes", json!({"run_id": run}));
    assert_eq!(changes["files"][0]["by"][0]["tool"], "run_python", "{changes:#}");

    // A small window, or approvals: not offered, and a call runs nothing.
    for (label, commands) in [
        ("small window", json!({"commands": "all", "max_context_tokens": 32768})),
        ("ask", json!({"commands": "ask", "max_context_tokens": 131072})),
    ] {
        let p = env.project(label);
        let mock = MockProvider::start(vec![
            Step::tool_call("py", "run_python", json!({"code": "open('x.txt', 'w').write('x')"})),
            Step::text("tried"),
        ]);
        let (_, _, result) = run_task(&mut c, &p, config(&mock, commands), "write x");
        assert_eq!(result["outcome"], "success", "{label}: {result:#}");
        assert!(!offered(&mock).contains(&"run_python".to_owned()), "{label}");
        assert!(mock.tool_results()["py"].starts_with("error: unknown tool 'run_python'"), "{label}");
        assert!(!p.join("x.txt").exists(), "{label}: the snippet ran");
    }
}
