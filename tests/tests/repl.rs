//! `swivalctl repl` as a user works in it, in a real terminal (tmux), on a
//! real daemon with the mock provider: answers stream, tool calls show as
//! lines, history recalls prompts, Ctrl-C cancels a run and keeps the
//! session, approvals are answered inline, slash commands change the
//! session through the daemon, another terminal attaches and continues,
//! another client's run shows live, and a restarted daemon is reconnected
//! to without showing anything twice.

use serde_json::{json, Value};
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::tmux::{shell_line, Tmux, PROMPT};
use swival_tests::{Daemon, TestEnv};

/// A project configured for `mock`, with a REPL open on it in `tmux`.
fn repl(env: &TestEnv, daemon: &Daemon, mock: &MockProvider, extra: &str, args: &str) -> (Tmux, std::path::PathBuf) {
    let p = env.project("p");
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n{extra}", mock.base_url()));
    let tmux = Tmux::new(env);
    tmux.start(&shell_line(env, &daemon.socket, &p, args));
    tmux.wait_for(PROMPT);
    (tmux, p)
}

/// Type `line` once the prompt is back and empty.
fn at_prompt(tmux: &Tmux, line: &str) {
    tmux.at_prompt(line);
}

/// Wait until the prompt is back and empty.
fn prompt_ready(tmux: &Tmux) {
    tmux.prompt_ready();
}

/// The id of the only session of the daemon.
fn only_session(daemon: &Daemon) -> String {
    let list = daemon.nd().ok("session/list", json!({}));
    let sessions = list["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{list}");
    sessions[0]["session_id"].as_str().unwrap().to_owned()
}

/// The `n`th request the mock received (0-based).
fn request(mock: &MockProvider, n: usize) -> Value {
    mock.wait_for_requests(n + 1);
    mock.requests()[n].clone()
}

#[test]
fn a_prompt_streams_its_answer_with_tool_lines_and_up_recalls_it_and_exit_is_0() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "notes.txt"})),
        Step::text("## Result\n- the answer is **42**\n"),
    ]);
    let (tmux, p) = repl(&env, &daemon, &mock, "", "repl");
    std::fs::write(p.join("notes.txt"), "forty-two\n").unwrap();
    at_prompt(&tmux, "what is in notes.txt?");
    let screen = tmux.wait_for("the answer is");
    assert!(screen.contains("→ read_file({\"file_path\":\"notes.txt\"})"), "{screen}");
    assert!(screen.contains("## Result\n- the answer is **42**"), "plain text without colour: {screen}");
    assert!(request(&mock, 0)["stream"] == json!(true), "the answer streams");
    prompt_ready(&tmux);
    tmux.keys(&["Up"]);
    tmux.wait_for_count("swival> what is in notes.txt?", 2);
    tmux.keys(&["C-u"]);
    at_prompt(&tmux, "/exit");
    assert!(tmux.wait_for("EXIT=").contains("EXIT=0"));
}

#[test]
fn ctrl_c_cancels_a_slow_run_and_the_next_prompt_works_in_the_same_session() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("too late"), &gate), Step::text("second answer")]);
    let (tmux, _) = repl(&env, &daemon, &mock, "", "repl");
    at_prompt(&tmux, "take your time");
    mock.wait_for_requests(1);
    tmux.keys(&["C-c"]);
    tmux.wait_for("interrupted, question aborted.");
    gate.open();
    tmux.wait_for_count(PROMPT, 2);
    at_prompt(&tmux, "again");
    tmux.wait_for("second answer");
    let second = request(&mock, 1);
    let users: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(users.contains(&"take your time") && users.contains(&"again"), "the same conversation: {users:?}");
    only_session(&daemon);
    at_prompt(&tmux, "/quit");
    assert!(tmux.wait_for("EXIT=").contains("EXIT=0"));
}

#[test]
fn an_ask_mode_command_approved_with_a_is_not_asked_again() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "run_command", json!({"command": ["echo", "one"]})),
        Step::text("first done"),
        Step::tool_call("c2", "run_command", json!({"command": ["echo", "one"]})),
        Step::text("second done"),
    ]);
    let (tmux, _) = repl(&env, &daemon, &mock, "commands = \"ask\"\n", "repl");
    at_prompt(&tmux, "say one");
    let screen = tmux.wait_for("(default no):");
    assert!(screen.contains("? Run `echo one`?") && screen.contains("[a] always this command"), "{screen}");
    tmux.type_line("a");
    tmux.wait_for("first done");
    tmux.wait_for_count(PROMPT, 2);
    at_prompt(&tmux, "say two");
    let screen = tmux.wait_for("second done");
    assert_eq!(screen.matches("(default no):").count(), 1, "asked once: {screen}");
    let second = &mock.tool_results()["c2"];
    assert!(second.contains("one") && !second.contains("denied"), "the second command ran: {second}");
    at_prompt(&tmux, "/exit");
    tmux.wait_for("EXIT=0");
}

#[test]
fn another_terminal_attaches_sees_the_earlier_answer_and_continues_the_conversation() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("the first answer"), Step::text("the second answer")]);
    let (tmux, p) = repl(&env, &daemon, &mock, "", "repl");
    at_prompt(&tmux, "first question");
    tmux.wait_for("the first answer");
    tmux.wait_for_count(PROMPT, 2);
    at_prompt(&tmux, "/exit");
    tmux.wait_for("EXIT=0");
    drop(tmux);

    let id = only_session(&daemon);
    let second = Tmux::named(&env, "second");
    second.start(&shell_line(&env, &daemon.socket, &p, &format!("repl --session {id}")));
    let screen = second.wait_for(PROMPT);
    assert!(screen.contains("swival> first question") && screen.contains("the first answer"), "{screen}");
    at_prompt(&second, "second question");
    second.wait_for("the second answer");
    let sent = request(&mock, 1);
    let texts = sent["messages"].to_string();
    assert!(texts.contains("first question") && texts.contains("the first answer"), "{texts}");
    at_prompt(&second, "/exit");
    second.wait_for("EXIT=0");
}

#[test]
fn a_run_another_client_starts_on_the_session_shows_live() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "list_files", json!({"pattern": "*"})),
        Step::text("answer from elsewhere"),
    ]);
    // A REPL makes its session at its first task: this one works on an
    // editor's session, made before.
    let p = env.project("p");
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    let id = swival_tests::create_session(&mut daemon.nd(), &p, json!({}));
    let (tmux, _) = repl(&env, &daemon, &mock, "", &format!("repl --session {id}"));
    daemon.nd().ok("run/start", json!({"session_id": id, "task": "from an editor"}));
    let screen = tmux.wait_for("answer from elsewhere");
    assert!(screen.contains("another client started a run: from an editor"), "{screen}");
    assert!(screen.contains("→ list_files("), "{screen}");
    at_prompt(&tmux, "/exit");
    tmux.wait_for("EXIT=0");
}

#[test]
fn run_with_no_task_on_a_terminal_opens_the_repl() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("hello from the repl")]);
    let (tmux, _) = repl(&env, &daemon, &mock, "", "run");
    at_prompt(&tmux, "hi");
    tmux.wait_for("hello from the repl");
    prompt_ready(&tmux);
    tmux.keys(&["C-d"]);
    assert!(tmux.wait_for("EXIT=").contains("EXIT=0"));
}

#[test]
fn an_unknown_command_gets_the_closest_name_and_help_lists_commands() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![]);
    let (tmux, _) = repl(&env, &daemon, &mock, "", "repl");
    at_prompt(&tmux, "/stauts");
    tmux.wait_for("did you mean /status?");
    at_prompt(&tmux, "/foo");
    let screen = tmux.wait_for("unknown command /foo");
    assert!(screen.contains("unknown command /foo. Run /help to list commands."), "no far-off hint: {screen}");
    at_prompt(&tmux, "!! echo from-the-shell; exit 3");
    tmux.wait_for("\n  exit 3");
    assert!(tmux.screen().contains("\nfrom-the-shell\n"), "{}", tmux.screen());
    at_prompt(&tmux, "/help");
    let screen = tmux.wait_for("Available commands:");
    assert!(screen.contains("/exit, /quit") && screen.contains("/add-dir <path>"), "{screen}");
    prompt_ready(&tmux);
    tmux.keys(&["C-c"]);
    tmux.wait_for("Press Ctrl-C again or Ctrl-D to exit");
    tmux.keys(&["C-c"]);
    assert!(tmux.wait_for("EXIT=").contains("EXIT=0"));
    assert_eq!(mock.request_count(), 0);
}

#[test]
fn a_restarted_daemon_is_reconnected_to_and_events_resume_without_repeats() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("before the restart"), Step::text("after the restart")]);
    let (tmux, p) = repl(&env, &daemon, &mock, "", "repl");
    at_prompt(&tmux, "one");
    tmux.wait_for("before the restart");
    tmux.wait_for_count(PROMPT, 2);
    let id = only_session(&daemon);
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    daemon.wait_exit();
    tmux.wait_for("lost the connection to swivald; reconnecting");
    // The REPL starts it again, as any swivalctl command would.
    tmux.wait_for("swivald was not running; started it");
    tmux.wait_for("reconnected to swivald");
    swival_tests::NdConn::connect(&daemon.socket).ok("run/start", json!({"session_id": id, "task": "two"}));
    let screen = tmux.wait_for("after the restart");
    assert_eq!(screen.matches("before the restart").count(), 1, "nothing shown twice: {screen}");
    at_prompt(&tmux, "/exit");
    tmux.wait_for("EXIT=0");
    assert!(p.exists());
    let swivalctl = swival_tests::bin("swivalctl");
    let stopped =
        env.command(&swivalctl).arg("--socket").arg(&daemon.socket).args(["daemon", "stop"]).output().unwrap();
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
}

#[test]
fn status_shows_the_model_and_context_and_model_other_changes_the_next_request() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("first"), Step::text("second")]);
    let (tmux, _) = repl(&env, &daemon, &mock, "", "repl");
    at_prompt(&tmux, "hello");
    tmux.wait_for("first");
    tmux.wait_for_count(PROMPT, 2);
    at_prompt(&tmux, "/status");
    let screen = tmux.wait_for("(1 run)");
    assert!(screen.contains("model: m") && screen.contains("context: ~"), "{screen}");
    at_prompt(&tmux, "/model");
    let screen = tmux.wait_for_count("model: m", 2);
    assert!(screen.lines().any(|l| l.trim_end() == "  model: m"), "no JSON quotes: {screen}");
    at_prompt(&tmux, "/tools");
    let screen = tmux.wait_for("tools:");
    assert!(screen.contains("read_file ") && screen.contains("fetch_url "), "{screen}");
    assert!(!screen.contains("run_command "), "commands are off in this session: {screen}");
    at_prompt(&tmux, "/model other");
    tmux.wait_for("changed: model");
    at_prompt(&tmux, "again");
    tmux.wait_for("second");
    assert_eq!(request(&mock, 0)["model"], "m");
    assert_eq!(request(&mock, 1)["model"], "other", "the next request uses the new model");
    at_prompt(&tmux, "/exit");
    tmux.wait_for("EXIT=0");
}

#[test]
fn compact_records_a_compaction_and_clear_starts_a_fresh_conversation() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let long = "x".repeat(3000);
    let mut steps = Vec::new();
    for i in 0..4 {
        steps.push(Step::tool_call(&format!("c{i}"), "read_file", json!({"file_path": "big.txt"})));
    }
    steps.push(Step::text("read it all"));
    steps.push(Step::text("fresh answer"));
    let mock = MockProvider::start(steps);
    let (tmux, p) = repl(&env, &daemon, &mock, "", "repl");
    std::fs::write(p.join("big.txt"), format!("{long}\n")).unwrap();
    at_prompt(&tmux, "read big.txt four times");
    tmux.wait_for("read it all");
    tmux.wait_for_count(PROMPT, 2);
    let id = only_session(&daemon);
    at_prompt(&tmux, "/compact");
    tmux.wait_for("compacted: ");
    let events = daemon.nd().ok("session/get", json!({"session_id": id}));
    let tool_results: Vec<String> = events["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(tool_results.iter().any(|t| t.contains("cut to fit")), "old results were cut: {tool_results:?}");
    at_prompt(&tmux, "/clear");
    let screen = tmux.wait_for("context cleared");
    assert!(screen.contains(&id), "the old conversation is named: {screen}");
    at_prompt(&tmux, "new topic");
    tmux.wait_for("fresh answer");
    let last = request(&mock, 5);
    let messages = last["messages"].as_array().unwrap();
    assert!(!last["messages"].to_string().contains("read big.txt"), "a fresh conversation: {messages:?}");
    at_prompt(&tmux, "/exit");
    tmux.wait_for("EXIT=0");
}

#[test]
fn a_pasted_block_and_a_trailing_backslash_are_one_prompt_and_tab_completes_commands() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("got the paste"), Step::text("got the two lines")]);
    let (tmux, _) = repl(&env, &daemon, &mock, "", "repl");
    tmux.run(&["set-buffer", "-b", "paste", "first pasted line\nsecond pasted line"]);
    tmux.run(&["paste-buffer", "-p", "-b", "paste", "-t", "t"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("got the paste");
    prompt_ready(&tmux);
    tmux.run(&["send-keys", "-t", "t", "-l", "line one \\"]);
    tmux.keys(&["Enter"]);
    tmux.type_line("line two");
    tmux.wait_for("got the two lines");
    let user_texts = |n: usize| -> Vec<String> {
        let r = request(&mock, n);
        let users = r["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "user");
        users.filter_map(|m| m["content"].as_str().map(str::to_owned)).collect()
    };
    assert!(user_texts(0).contains(&"first pasted line\nsecond pasted line".to_owned()), "{:?}", user_texts(0));
    assert!(user_texts(1).contains(&"line one \nline two".to_owned()), "{:?}", user_texts(1));
    assert_eq!(mock.request_count(), 2, "two prompts, not four");
    prompt_ready(&tmux);
    tmux.run(&["send-keys", "-t", "t", "-l", "/sta"]);
    tmux.keys(&["Tab"]);
    tmux.wait_for("swival> /status ");
    tmux.keys(&["Enter"]);
    tmux.wait_for("sandbox:");
    at_prompt(&tmux, "/exit");
    tmux.wait_for("EXIT=0");
}

#[test]
fn continue_goes_on_without_a_new_message_and_save_restore_collapse_the_turns_since() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![
        Step::text("first answer"),
        Step::text("went on"),
        Step::tool_call("c1", "list_files", json!({"pattern": "*"})),
        Step::text("listed"),
        Step::text("a short summary of the listing"),
    ]);
    let (tmux, _) = repl(&env, &daemon, &mock, "", "repl");
    at_prompt(&tmux, "start");
    tmux.wait_for("first answer");
    tmux.wait_for_count(PROMPT, 2);
    at_prompt(&tmux, "/continue");
    tmux.wait_for("went on");
    let resumed = request(&mock, 1);
    let last = resumed["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "assistant", "no new user message: {last}");
    tmux.wait_for_count(PROMPT, 3);
    at_prompt(&tmux, "/save mark");
    tmux.wait_for("checkpoint saved: mark");
    at_prompt(&tmux, "/save again");
    tmux.wait_for("checkpoint already active (label='mark')");
    at_prompt(&tmux, "list the files");
    tmux.wait_for("listed");
    tmux.wait_for_count(PROMPT, 6);
    at_prompt(&tmux, "/restore");
    tmux.wait_for("snapshot: restored");
    let id = only_session(&daemon);
    let detail = daemon.nd().ok("session/get", json!({"session_id": id}));
    let text = detail["messages"].to_string();
    assert!(text.contains("[snapshot: mark]") && text.contains("a short summary of the listing"), "{text}");
    at_prompt(&tmux, "/unsave");
    tmux.wait_for("no active checkpoint to cancel");
    at_prompt(&tmux, "/exit");
    tmux.wait_for("EXIT=0");
}

#[test]
fn extend_reasoning_and_add_dir_change_the_next_run_and_bad_ones_change_nothing() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("configured")]);
    let (tmux, _) = repl(&env, &daemon, &mock, "", "repl");
    let extra = env.project("extra");
    at_prompt(&tmux, "/extend 7");
    tmux.wait_for("changed: max_turns");
    at_prompt(&tmux, "/extend zero");
    tmux.wait_for("invalid number: zero");
    at_prompt(&tmux, "/reasoning high");
    tmux.wait_for("changed: reasoning_effort");
    at_prompt(&tmux, &format!("/add-dir-ro {}", extra.display()));
    tmux.wait_for_count("changed: ", 3);
    at_prompt(&tmux, "/add-dir /no/such/dir");
    tmux.wait_for("not a directory: /no/such/dir");
    tmux.wait_for_count(PROMPT, 6);
    at_prompt(&tmux, "go");
    tmux.wait_for("configured");
    let sent = request(&mock, 0);
    assert_eq!(sent["reasoning_effort"], "high", "{sent}");
    let id = only_session(&daemon);
    let config = &daemon.nd().ok("session/get", json!({"session_id": id}))["config"];
    assert_eq!(config["max_turns"], 7, "{config}");
    assert!(config["allowed_dirs_ro"].to_string().contains("extra"), "{config}");
    at_prompt(&tmux, "/exit");
    tmux.wait_for("EXIT=0");
}

#[test]
fn remember_writes_agents_md_and_sessions_and_attach_switch_to_another_session() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("answer in the other session")]);
    let (tmux, p) = repl(&env, &daemon, &mock, "", "repl");
    at_prompt(&tmux, "/remember run tests with cargo nextest");
    tmux.wait_for("Created AGENTS.md with: run tests with cargo nextest");
    let agents = std::fs::read_to_string(p.join("AGENTS.md")).unwrap();
    assert!(agents.contains("## Conventions\n\n- run tests with cargo nextest\n"), "{agents}");
    let here = only_session(&daemon);
    let other = swival_tests::create_session(&mut daemon.nd(), &p, json!({}));
    let mut c = daemon.nd();
    let run = c.ok("run/start", json!({"session_id": other, "task": "elsewhere"}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}));
    at_prompt(&tmux, "/sessions");
    let screen = tmux.wait_for(&format!("* {here}"));
    assert!(screen.contains(&other), "{screen}");
    at_prompt(&tmux, &format!("/attach {other}"));
    let screen = tmux.wait_for(&format!("attached to session {other}"));
    assert!(screen.contains("swival> elsewhere") && screen.contains("answer in the other session"), "{screen}");
    at_prompt(&tmux, "/exit");
    tmux.wait_for("EXIT=0");
}

#[test]
fn diff_shows_what_the_last_run_changed_and_undo_puts_it_back_and_undo_of_the_undo_redoes() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![
        Step::tool_call("w", "write_file", json!({"file_path": "made.txt", "content": "made by the run\n"})),
        Step::text("wrote it"),
    ]);
    let (tmux, p) = repl(&env, &daemon, &mock, "", "repl");
    at_prompt(&tmux, "make a file");
    tmux.wait_for("wrote it");
    let screen = tmux.wait_for("/undo puts them back");
    assert!(screen.contains("changed 1 file: made.txt"), "{screen}");
    assert_eq!(std::fs::read_to_string(p.join("made.txt")).unwrap(), "made by the run\n");
    at_prompt(&tmux, "/diff");
    let screen = tmux.wait_for("+made by the run");
    assert!(
        screen.contains("1 file changed") && screen.contains("created") && screen.contains("write_file"),
        "{screen}"
    );
    at_prompt(&tmux, "/undo");
    let screen = tmux.wait_for("1 file put back");
    assert!(!p.join("made.txt").exists(), "{screen}");
    let undo_id =
        screen.split("swivalctl undo ").nth(1).and_then(|s| s.split(')').next()).expect("the redo id").to_owned();
    at_prompt(&tmux, &format!("/undo {undo_id}"));
    tmux.wait_for_count("1 file put back", 2);
    assert_eq!(std::fs::read_to_string(p.join("made.txt")).unwrap(), "made by the run\n");
    at_prompt(&tmux, "/exit");
}
