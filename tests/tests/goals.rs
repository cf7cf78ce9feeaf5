//! Goals (Swival's `/goal`) owned by the daemon: it works on a session's
//! goal run after run until the model calls `complete_goal`, a budget is
//! spent, it is paused, or it is stuck; across a SIGKILL and a restart.
//! Real daemon, real client, mock provider.

use serde_json::{json, Value};
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::{create_session, NdConn, TestEnv};

fn config(mock: &MockProvider) -> Value {
    json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true})
}

/// Read `sid`'s events from the start until a `goal` event whose goal has
/// `status` and no run in flight; that goal.
fn goal_reaches(c: &mut NdConn, sid: &str, status: &str) -> Value {
    c.ok("session/subscribe", json!({"session_id": sid, "from_seq": 1}));
    loop {
        let msg = c.read();
        if msg["method"] != "session/event" {
            continue;
        }
        let event = &msg["params"]["result"];
        let goal = &event["goal"];
        if event["type"] == "goal" && goal["status"] == status && goal.get("current_run").is_none() {
            return goal.clone();
        }
    }
}

/// The text of every message of request `n` (0-based), joined.
fn request_text(mock: &MockProvider, n: usize) -> String {
    mock.texts_of(n).join("\n")
}

/// The names of the tools offered in request `n`.
fn offered(mock: &MockProvider, n: usize) -> Vec<String> {
    let tools = mock.requests()[n]["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
}

fn runs(c: &mut NdConn, sid: &str) -> Vec<Value> {
    c.ok("session/get", json!({"session_id": sid}))["runs"].as_array().unwrap().clone()
}

#[test]
fn a_goal_that_needs_three_runs_ends_when_the_model_calls_complete_goal() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("notes.txt"), "step one\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::text("a plain answer"),
        Step::tool_call("r1", "read_file", json!({"file_path": "notes.txt"})),
        Step::text("read the notes; next I write the summary"),
        Step::tool_call("w1", "write_file", json!({"file_path": "summary.txt", "content": "one\n"})),
        Step::text("wrote the summary; next I check it"),
        Step::tool_call("g1", "complete_goal", json!({})),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    // A run that is not a goal's is not offered complete_goal.
    let run = c.ok("run/start", json!({"session_id": sid, "task": "hello"}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}));
    assert!(!offered(&mock, 0).contains(&"complete_goal".to_owned()), "{:?}", offered(&mock, 0));

    let set = c.ok("goal/set", json!({"session_id": sid, "objective": "summarise notes.txt into summary.txt"}));
    assert_eq!(set["goal"]["status"], "active", "{set}");
    let goal = goal_reaches(&mut daemon.nd(), &sid, "complete");
    assert_eq!(goal["runs"], 3, "{goal}");
    assert_eq!(goal["last_run"], runs(&mut c, &sid).last().unwrap()["run_id"]);
    assert!(goal["tokens_used"].as_u64().unwrap() > 0, "{goal}");
    assert_eq!(std::fs::read_to_string(p.join("summary.txt")).unwrap(), "one\n");
    assert_eq!(goal["files"], json!(["summary.txt"]), "what its runs changed: {goal}");
    // Its inbox entry lists what all its runs changed, not only the last.
    let entries = c.ok("inbox/list", json!({}))["entries"].clone();
    assert_eq!(entries[0]["files"], json!(["summary.txt"]), "{entries}");
    let runs_now = runs(&mut c, &sid);
    assert_eq!(entries[0]["changed_by"], json!([runs_now[2]["run_id"]]), "the run that changed it: {entries}");

    // The start message, then two continuations with the objective fenced
    // as data and what was used so far; complete_goal offered to each.
    assert_eq!(mock.request_count(), 6);
    let first = request_text(&mock, 1);
    assert!(first.contains("[goal start]"), "{first}");
    assert!(first.contains("<<<OBJECTIVE\nsummarise notes.txt into summary.txt\nOBJECTIVE>>>"), "{first}");
    for n in [3, 5] {
        let text = request_text(&mock, n);
        let last_user = text.rsplit("[goal continuation]").next().unwrap();
        assert!(text.contains("[goal continuation]") && last_user.contains("Tokens used: "), "{text}");
        assert!(offered(&mock, n).contains(&"complete_goal".to_owned()));
    }
    // The model's last answer stays its own, never repeated as the user's.
    let continuation = request_text(&mock, 5);
    let told = continuation.rsplit("[goal continuation]").next().unwrap();
    assert!(!told.contains("wrote the summary"), "{told}");
    let all = runs(&mut c, &sid);
    assert_eq!(all.len(), 4, "the user's run and the goal's three: {all:?}");
    let last = c.ok("run/wait", json!({"run_id": all[3]["run_id"]}));
    assert_eq!(last["answer"], "Goal completed.", "{last}");
    // Swival's report `goal`: set by the first run, completed by the last.
    let first = c.ok("report/get", json!({"run_id": all[1]["run_id"]}))["stats"]["goal"].clone();
    assert_eq!((first["created_count"].clone(), first["completed_count"].clone()), (json!(1), json!(0)), "{first}");
    assert_eq!(first["current"]["status"], "active");
    let report = c.ok("report/get", json!({"run_id": all[3]["run_id"]}))["stats"]["goal"].clone();
    assert_eq!((report["created_count"].clone(), report["completed_count"].clone()), (json!(0), json!(1)));
    assert_eq!(report["current"]["status"], "complete");
    assert_eq!(report["current"]["runs"], 3);
    assert_eq!(report["current"]["tokens_used"], goal["tokens_used"], "the report and the goal agree");
    let plain = c.ok("report/get", json!({"run_id": all[0]["run_id"]}));
    assert!(plain["stats"].get("goal").is_none(), "a run that is not a goal's has none");
    // Nothing more runs for a complete goal.
    assert_eq!(c.ok("goal/get", json!({"session_id": sid}))["goal"]["status"], "complete");
}

#[test]
fn a_goal_stops_at_its_token_budget_refusing_work_but_letting_the_model_wrap_up() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call("w1", "write_file", json!({"file_path": "out.txt", "content": "x\n"})),
        Step::text("ran out of budget; nothing written"),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "write out.txt", "token_budget": 20}));
    let goal = goal_reaches(&mut daemon.nd(), &sid, "budget_limited");
    assert_eq!(goal["runs"], 1, "{goal}");
    assert!(goal["tokens_used"].as_u64().unwrap() >= 20, "{goal}");
    assert!(goal["last_blocker"].as_str().unwrap().contains("token budget is spent"), "{goal}");
    assert!(!p.join("out.txt").exists(), "the write after the budget was spent is refused");
    let results = mock.tool_results();
    assert!(results["w1"].contains("goal token budget is exhausted"), "{results:?}");
    assert!(request_text(&mock, 1).contains("[goal budget limit]"));
    assert_eq!(mock.request_count(), 2, "no nudge to act while wrapping up, and no run starts once spent");
    // A spent goal does not resume; replacing it starts anew.
    let refused = c.call("goal/resume", json!({"session_id": sid}));
    assert!(refused["error"]["message"].as_str().unwrap().contains("only a paused or stuck goal resumes"), "{refused}");
}

#[test]
fn a_run_that_answers_without_acting_leaves_the_goal_stuck_until_resumed() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::text("I need the staging password to go on"),
        Step::tool_call("g1", "complete_goal", json!({})),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "deploy to staging"}));
    let stuck = goal_reaches(&mut daemon.nd(), &sid, "stuck");
    assert_eq!(stuck["last_blocker"], "I need the staging password to go on", "{stuck}");
    assert_eq!(mock.request_count(), 1, "a stuck goal waits instead of burning its budget");
    let resumed = c.ok("goal/resume", json!({"session_id": sid}));
    assert_eq!(resumed["goal"]["status"], "active");
    let done = goal_reaches(&mut daemon.nd(), &sid, "complete");
    assert_eq!(done["runs"], 2, "{done}");
}

#[test]
fn the_loop_guards_verdict_leaves_the_goal_stuck() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.py"), "x = 1\n").unwrap();
    let edit = json!({"file_path": "a.py", "old_string": "y = 5", "new_string": "y = 6"});
    let steps: Vec<Step> = (0..10).map(|i| Step::tool_call(&format!("c{i}"), "edit_file", edit.clone())).collect();
    let mock = MockProvider::start(steps);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "set y to 6"}));
    let stuck = goal_reaches(&mut daemon.nd(), &sid, "stuck");
    assert!(stuck["last_blocker"].as_str().unwrap().contains("loop guards"), "{stuck}");
    assert_eq!(stuck["runs"], 1);
}

#[test]
fn a_paused_goal_lets_its_run_finish_starts_no_other_and_resumes() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![
        Step::gated(Step::tool_call("r1", "list_files", json!({})), &gate),
        Step::text("listed the files"),
        Step::tool_call("g1", "complete_goal", json!({})),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "list the files"}));
    mock.wait_for_requests(1);
    let paused = c.ok("goal/pause", json!({"session_id": sid}));
    assert_eq!(paused["goal"]["status"], "paused");
    gate.open();
    let after = goal_reaches(&mut daemon.nd(), &sid, "paused");
    assert_eq!(after["runs"], 1, "{after}");
    assert_eq!(after["last_next_step"], "listed the files");
    assert_eq!(mock.request_count(), 2, "no run starts while paused");
    c.ok("goal/resume", json!({"session_id": sid}));
    let done = goal_reaches(&mut daemon.nd(), &sid, "complete");
    assert_eq!(done["runs"], 2);
    assert_eq!(runs(&mut c, &sid).len(), 2);
}

#[test]
fn a_goal_goes_on_after_the_daemon_is_killed_and_restarted() {
    let env = TestEnv::new();
    let p = env.project("p");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![
        Step::tool_call("r1", "list_files", json!({})),
        Step::text("listed; next I read"),
        Step::gated(Step::text("never delivered"), &gate),
        Step::tool_call("g1", "complete_goal", json!({})),
    ]);
    let mut daemon = env.start_daemon();
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "look around"}));
    // The second run waits for its model: kill the daemon there.
    mock.wait_for_requests(3);
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    daemon.wait_exit();
    drop(c);

    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let done = goal_reaches(&mut daemon.nd(), &sid, "complete");
    assert_eq!(done["runs"], 3, "the interrupted run counts, and one more finished it: {done}");
    let all = runs(&mut c, &sid);
    let outcomes: Vec<&str> = all.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["success", "interrupted", "success"], "{all:?}");
    // The restart is said in the session's events.
    c.ok("session/subscribe", json!({"session_id": sid, "from_seq": 1}));
    loop {
        let msg = c.read();
        if msg["params"]["result"]["type"] == "goal" && msg["params"]["result"]["action"] == "restarted" {
            break;
        }
    }
    gate.open();
}

#[test]
fn the_daemon_wide_cap_refuses_a_goal_naming_its_key() {
    let env = TestEnv::new();
    env.daemon_settings("max_background_runs = 1");
    let daemon = env.start_daemon();
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("waiting"), &gate)]);
    let mut c = daemon.nd();
    let a = create_session(&mut c, &env.project("a"), config(&mock));
    let b = create_session(&mut c, &env.project("b"), config(&mock));
    c.ok("goal/set", json!({"session_id": a, "objective": "first"}));
    let refused = c.call("goal/set", json!({"session_id": b, "objective": "second"}));
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_background_runs (1)") && message.contains("swivald.toml"), "{refused}");
    // Another goal of the same session is refused too, unless replaced.
    let again = c.call("goal/set", json!({"session_id": a, "objective": "other"}));
    assert!(again["error"]["message"].as_str().unwrap().contains("replace it"), "{again}");
    gate.open();
}

#[test]
fn swivalctl_sets_shows_lists_and_clears_goals() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("I cannot tell what 'it' is")]);
    let cfg = p.join("swival.toml");
    std::fs::write(&cfg, format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()))
        .unwrap();
    let out =
        env.swivalctl(&daemon, &p).args(["goal", "set", "--trust", "--max-runs", "3", "fix it"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let sid = stdout.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(stdout.starts_with("goal g_") && sid.starts_with("s_"), "{stdout}");
    goal_reaches(&mut daemon.nd(), &sid, "stuck");
    let show = env.swivalctl(&daemon, &p).args(["goal", "show", &sid]).output().unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains(": stuck\n  objective: fix it\n"), "{show}");
    assert!(show.contains("1/3 runs") && show.contains("blocker: I cannot tell what 'it' is"), "{show}");
    let list = env.swivalctl(&daemon, &p).arg("goals").output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(list.starts_with(&format!("{sid}  stuck")) && list.contains("fix it"), "{list}");
    let clear = env.swivalctl(&daemon, &p).args(["goal", "clear", &sid]).output().unwrap();
    assert!(String::from_utf8_lossy(&clear.stdout).contains("cleared"));
    let list = env.swivalctl(&daemon, &p).args(["goals", "--json"]).output().unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&list.stdout).unwrap(), json!([]));
}

#[test]
fn the_repl_sets_a_goal_shows_its_runs_and_its_state_and_pauses_only_an_active_one() {
    use swival_tests::tmux::{shell_line, Tmux};
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("todo.txt"), "one\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("r1", "read_file", json!({"file_path": "todo.txt"})),
        Step::text("read it; next I finish"),
        Step::tool_call("g1", "complete_goal", json!({})),
    ]);
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    let tmux = Tmux::new(&env);
    tmux.start(&shell_line(&env, &daemon.socket, &p, "repl"));
    tmux.at_prompt("/goal read todo.txt and be done");
    let screen = tmux.wait_for("goal completed: read todo.txt and be done");
    assert!(screen.contains("goal created: read todo.txt and be done"), "{screen}");
    assert!(screen.contains("goal run 1 of at most 20") && screen.contains("goal run 2 of at most 20"), "{screen}");
    assert!(screen.contains("read_file"), "the goal's tool calls show: {screen}");
    tmux.at_prompt("/goal");
    let screen = tmux.wait_for(": complete");
    assert!(screen.contains("objective: read todo.txt and be done"), "{screen}");
    assert!(screen.contains("2/20 runs"), "{screen}");
    tmux.at_prompt("/goal pause");
    tmux.wait_for("no active goal to pause");
    tmux.at_prompt("/status");
    let screen = tmux.wait_for("goal: complete");
    assert!(screen.contains("read todo.txt and be done"), "{screen}");
    tmux.at_prompt("/exit");
    tmux.wait_for("EXIT=0");
}

/// A daemon whose `verify_command` passes only once answer.txt says `fixed`.
fn checked_daemon(env: &TestEnv) -> swival_tests::Daemon {
    let check = env.project("tools").join("check.sh");
    std::fs::write(
        &check,
        "#!/bin/sh\ngrep -qx fixed answer.txt && exit 0\necho 'FAIL: answer.txt is not fixed'\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&check, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.global_config(&format!("verify_command = \"{}\"\n", check.display()));
    env.start_daemon()
}

fn write(text: &str, id: &str) -> Step {
    Step::tool_call(id, "write_file", json!({"file_path": "answer.txt", "content": format!("{text}\n")}))
}

#[test]
fn complete_goal_after_a_failed_check_with_nothing_changed_does_not_complete_it() {
    let env = TestEnv::new();
    let daemon = checked_daemon(&env);
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        write("wrong", "w1"),
        Step::tool_call("g1", "complete_goal", json!({})),
        // Told the check failed, the model insists, changing nothing.
        Step::tool_call("g2", "complete_goal", json!({})),
        // The next run fixes it.
        write("fixed", "w2"),
        Step::tool_call("g3", "complete_goal", json!({})),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "make the check pass"}));
    let done = goal_reaches(&mut daemon.nd(), &sid, "complete");
    assert_eq!(done["runs"], 2, "the insisting run did not complete it: {done}");
    assert!(request_text(&mock, 3).contains("[goal continuation]"));
    assert_eq!(std::fs::read_to_string(p.join("answer.txt")).unwrap(), "fixed\n");
}

#[test]
fn complete_goal_stands_only_once_the_projects_check_passes() {
    let env = TestEnv::new();
    let daemon = checked_daemon(&env);
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        write("wrong", "w1"),
        Step::tool_call("g1", "complete_goal", json!({})),
        // The check failed: the model is told, and goes on in the same run.
        Step::tool_call("r1", "read_file", json!({"file_path": "answer.txt"})),
        write("fixed", "w2"),
        Step::tool_call("g2", "complete_goal", json!({})),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "make the check pass"}));
    let done = goal_reaches(&mut daemon.nd(), &sid, "complete");
    assert_eq!(done["runs"], 1, "{done}");
    assert!(request_text(&mock, 2).contains("FAIL: answer.txt is not fixed"), "the check's failure went back");
    assert_eq!(mock.request_count(), 5);
}

#[test]
fn a_failed_check_in_an_earlier_run_still_holds_and_notes_alone_are_not_progress() {
    let env = TestEnv::new();
    let daemon = checked_daemon(&env);
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        write("wrong", "w1"),
        Step::tool_call("g1", "complete_goal", json!({})),
        Step::text("I will look again"),
        // The next run claims the goal without changing anything.
        Step::tool_call("g2", "complete_goal", json!({})),
        // And the one after only takes notes, then answers.
        Step::tool_call(
            "t1",
            "think",
            json!({"thought": "hmm", "thought_number": 1, "total_thoughts": 1, "next_thought_needed": false}),
        ),
        Step::text("nothing to do"),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "make the check pass"}));
    let stuck = goal_reaches(&mut daemon.nd(), &sid, "stuck");
    assert_eq!(stuck["runs"], 2, "the claim after a failed check did not complete it: {stuck}");
    assert_eq!(stuck["last_check"], false, "{stuck}");
    assert!(stuck["last_blocker"].as_str().unwrap().starts_with("complete_goal was turned down"), "{stuck}");
    c.ok("goal/resume", json!({"session_id": sid}));
    let mut follow = daemon.nd();
    follow.ok("session/subscribe", json!({"session_id": sid, "from_seq": 1}));
    let again = loop {
        let event = follow.read()["params"]["result"].clone();
        if event["type"] == "goal" && event["goal"]["status"] == "stuck" && event["goal"]["runs"] == 3 {
            break event["goal"].clone();
        }
    };
    assert_eq!(again["last_blocker"], "nothing to do", "notes alone are not progress: {again}");
}

#[test]
fn a_goals_wall_time_cancels_its_run_when_it_runs_out() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::hang()]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "wait forever", "max_seconds": 1}));
    let limited = goal_reaches(&mut daemon.nd(), &sid, "budget_limited");
    assert!(limited["last_blocker"].as_str().unwrap().starts_with("it used its time"), "{limited}");
    assert!(limited["time_used_seconds"].as_f64().unwrap() >= 1.0, "{limited}");
    let last = runs(&mut c, &sid);
    assert_eq!(last[0]["outcome"], "cancelled", "{last:?}");
}
