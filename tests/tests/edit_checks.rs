//! Checks at edit time, end to end: an edit that breaks a Python file's
//! syntax is told so in its result, with the line; an edit to a file that
//! was already broken is not blamed; a rewrite that drops a function is
//! named; `edit_checks = false` turns the checks off. The language's own
//! checks too: `py_compile`, `node --check`, `make -n`, the TOML and JSON
//! parsers and the user's `edit_check_commands` name the first error they
//! find, a checker missing from the caller's PATH says nothing, and a
//! Makefile the model wrote cannot write outside the check's temp dir nor
//! reach the network.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

/// Run `calls` (name, arguments) in one session with `extra` config; the
/// results in order.
fn results(env: &TestEnv, extra: Value, calls: Vec<(&str, Value)>) -> Vec<String> {
    results_in(env, extra, None, calls)
}

/// [`results`] in the caller environment `caller` (`None`: the daemon's).
fn results_in(env: &TestEnv, extra: Value, caller: Option<Value>, calls: Vec<(&str, Value)>) -> Vec<String> {
    let daemon = env.start_daemon();
    let p = env.project("p");
    let ids: Vec<String> = (0..calls.len()).map(|i| format!("c{i}")).collect();
    let mut script: Vec<Step> = calls.iter().zip(&ids).map(|((n, a), id)| Step::tool_call(id, n, a.clone())).collect();
    script.push(Step::text("done"));
    let mock = MockProvider::start(script);
    let mut config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let mut c = daemon.nd();
    let mut create = json!({"base_dir": p, "config": config});
    if let Some(caller) = caller {
        create["env"] = caller;
    }
    let sid = c.ok("session/create", create)["session_id"].as_str().unwrap().to_owned();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "fix it"}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}));
    let got = mock.tool_results();
    ids.iter().map(|id| got[id].clone()).collect()
}

/// Whether `program` is on this machine's PATH; a test of its check says
/// it is skipped when not (`.ci/run` installs them).
fn have(program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    if !found {
        println!("SKIPPED: {program} is not installed here");
    }
    found
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

#[test]
fn py_compile_names_an_error_the_grammar_lets_through_and_leaves_no_bytecode() {
    let env = TestEnv::new();
    if !have("python3") {
        return;
    }
    let out = results(
        &env,
        json!({}),
        vec![("write_file", json!({"file_path": "calc.py", "content": "def add(a, a):\n    return a + a\n"}))],
    );
    assert!(
        out[0].contains("py_compile: calc.py:1: SyntaxError: duplicate argument 'a' in function definition"),
        "{}",
        out[0]
    );
    assert!(!env.project("p").join("__pycache__").exists(), "py_compile wrote bytecode into the project");
}

#[test]
fn node_check_names_a_second_declaration_of_a_function() {
    let env = TestEnv::new();
    if !have("node") {
        return;
    }
    let p = env.project("p");
    let scores = "export function topScores(xs) {\n  return xs.slice(0, 3);\n}\n";
    std::fs::write(p.join("scores.mjs"), scores).unwrap();
    let out = results(
        &env,
        json!({}),
        vec![
            ("read_file", json!({"file_path": "scores.mjs"})),
            (
                "edit_file",
                json!({"file_path": "scores.mjs", "old_string": "  return xs.slice(0, 3);\n}\n",
                       "new_string": "  return xs.slice(0, 3);\n}\n\nfunction topScores(xs) {\n  return xs;\n}\n"}),
            ),
        ],
    );
    let want = "node --check: scores.mjs:5: SyntaxError: Identifier 'topScores' has already been declared";
    assert!(out[1].contains(want), "{}", out[1]);
}

#[test]
fn make_n_names_a_recipe_line_without_a_tab_where_the_model_may_run_make() {
    let env = TestEnv::new();
    if !have("make") {
        return;
    }
    let makefile = json!({"file_path": "Makefile", "content": "all:\n    echo hi\n"});
    let out = results(&env, json!({"allowed_commands": ["make"]}), vec![("write_file", makefile.clone())]);
    assert!(out[0].contains("make -n: Makefile:2: missing separator."), "{}", out[0]);
    // Where the model may not run make, the check does not either: it
    // would run the Makefile's $(shell …).
    let env = TestEnv::new();
    let out = results(&env, json!({}), vec![("write_file", makefile)]);
    assert!(!out[0].contains("make -n"), "{}", out[0]);
}

#[test]
fn toml_and_json_parsers_name_what_the_grammars_accept() {
    let env = TestEnv::new();
    let out = results(
        &env,
        json!({}),
        vec![
            ("write_file", json!({"file_path": "app.toml", "content": "name = \"a\"\nport = 1\nname = \"b\"\n"})),
            (
                "write_file",
                json!({"file_path": "app.json", "content": "{\n  \"port\": 1, // the port\n  \"x\": 2\n}\n"}),
            ),
        ],
    );
    assert!(out[0].contains("TOML parser: app.toml:3: duplicate key"), "{}", out[0]);
    assert!(out[1].contains("JSON parser: app.json:2: "), "{}", out[1]);
}

#[test]
fn a_checker_missing_from_the_callers_path_says_nothing() {
    let env = TestEnv::new();
    let bin = env.root().join("empty-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let caller = json!({"PATH": bin, "HOME": env.root().join("home")});
    let content = "const topScores = 1;\nfunction topScores() {}\n";
    let out = results_in(
        &env,
        json!({}),
        Some(caller),
        vec![("write_file", json!({"file_path": "a.js", "content": content}))],
    );
    assert!(!out[0].contains("node --check") && !out[0].contains("Note:"), "{}", out[0]);
}

#[test]
fn edit_check_commands_from_the_global_config_run_the_users_checker() {
    let env = TestEnv::new();
    let tools = env.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let checker = swival_tests::script(
        &tools,
        "no-todo",
        "#!/bin/sh\nif grep -q TODO \"$1\"; then echo \"$1:1: a TODO is left\"; exit 1; fi\n",
    );
    env.global_config(&format!("[edit_check_commands]\ntxt = [\"{}\", \"{{path}}\"]\n", checker.display()));
    let out = results(
        &env,
        json!({}),
        vec![
            ("write_file", json!({"file_path": "notes.txt", "content": "TODO: all of it\n"})),
            ("write_file", json!({"file_path": "done.txt", "content": "all done\n"})),
        ],
    );
    assert!(out[0].contains("no-todo: notes.txt:1: a TODO is left"), "{}", out[0]);
    assert!(!out[1].contains("no-todo"), "{}", out[1]);
}

#[test]
fn a_makefile_the_model_wrote_writes_only_the_check_temp_dir_and_reaches_no_network() {
    let env = TestEnv::new();
    if !have("make") || !have("bash") {
        return;
    }
    let p = env.project("p");
    let outside = env.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let makefile = format!(
        "A := $(shell echo pwned > {project}/pwned.txt)\n\
         B := $(shell echo pwned > {outside}/pwned.txt)\n\
         T := $(shell echo tmp-ok > $$TMPDIR/t && cat $$TMPDIR/t)\n\
         N := $(shell bash -c 'echo > /dev/tcp/127.0.0.1/{port}' 2>/dev/null && echo net-open || echo net-closed)\n\
         $(error ran: $(T) $(N))\n",
        project = p.display(),
        outside = outside.display(),
    );
    let out = results(
        &env,
        json!({"allowed_commands": ["make"]}),
        vec![("write_file", json!({"file_path": "Makefile", "content": makefile}))],
    );
    // The check ran the Makefile (the temp dir written, read back)…
    assert!(out[0].contains("make -n: Makefile:5: ran: tmp-ok net-closed"), "{}", out[0]);
    // …and nothing else was written, nor connected to.
    assert!(!p.join("pwned.txt").exists(), "the check wrote into the project");
    assert!(!outside.join("pwned.txt").exists(), "the check wrote outside the project");
    assert!(listener.accept().is_err(), "the check reached the network");
}

#[test]
fn bash_n_names_an_unexpected_token() {
    let env = TestEnv::new();
    if !have("bash") {
        return;
    }
    let script = "#!/bin/bash\nif [ -f x ]; then\n  echo )\nfi\n";
    let out = results(&env, json!({}), vec![("write_file", json!({"file_path": "run.sh", "content": script}))]);
    assert!(out[0].contains("bash -n: run.sh:3: syntax error near unexpected token `)'"), "{}", out[0]);
}
