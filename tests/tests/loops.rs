//! Loops (Swival's `/loop`) owned by the daemon: each firing is a run in a
//! fresh git worktree (the checkout untouched), applied with `swivalctl
//! apply`; Swival's failure rules; a restart fires once, not a burst.
//! Real daemon, real client, real git, mock provider.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{create_session, wait_until, NdConn, TestEnv};

fn config(mock: &MockProvider) -> Value {
    json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true})
}

/// A git checkout with one committed file.
fn git_project(env: &TestEnv, name: &str) -> std::path::PathBuf {
    let p = env.project(name);
    std::fs::write(p.join("README.md"), "hello\n").unwrap();
    for args in
        [&["init", "-q"][..], &["add", "-A"], &["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"]]
    {
        let ok = std::process::Command::new("git").args(args).current_dir(&p).status().unwrap().success();
        assert!(ok, "git {args:?}");
    }
    p
}

/// A daemon whose loops may fire every second and retry at once.
fn daemon(env: &TestEnv) -> swival_tests::Daemon {
    env.daemon_settings("loop_min_interval_s = 1\nloop_backoff_base_s = 0");
    env.start_daemon()
}

/// Subscribe to `sid` from `from` and read its `loop` events until `until`
/// holds for one; every loop event read, that one last.
fn loop_events(c: &mut NdConn, sid: &str, from: u64, mut until: impl FnMut(&Value) -> bool) -> Vec<Value> {
    c.ok("session/subscribe", json!({"session_id": sid, "from_seq": from}));
    let mut seen = Vec::new();
    loop {
        let msg = c.read();
        let event = &msg["params"]["result"];
        if msg["method"] != "session/event" || event["type"] != "loop" {
            continue;
        }
        seen.push(event.clone());
        if until(event) {
            return seen;
        }
    }
}

fn actions(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["action"].as_str().unwrap()).collect()
}

fn git_status(dir: &Path) -> String {
    let out = std::process::Command::new("git").args(["status", "--porcelain"]).current_dir(dir).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_loop_every_second_fires_in_its_own_worktree_and_its_work_is_applied() {
    let env = TestEnv::new();
    let daemon = daemon(&env);
    let p = git_project(&env, "p");
    let mock = MockProvider::start(vec![
        Step::tool_call("w1", "write_file", json!({"file_path": "report.txt", "content": "all green\n"})),
        Step::text("wrote report.txt"),
    ]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    let added = c.ok("loop/add", json!({"session_id": sid, "prompt": "write the report", "schedule": {"every_s": 1}}));
    let id = added["loop"]["loop_id"].as_str().unwrap().to_owned();
    let events = loop_events(&mut daemon.nd(), &sid, 1, |e| e["action"] == "succeeded");
    assert_eq!(actions(&events), ["added", "fired", "succeeded"], "{events:?}");
    let firing = events[1]["loop"]["last_session"].as_str().unwrap().to_owned();
    assert_ne!(firing, sid, "a firing is a session of its own");
    assert!(!p.join("report.txt").exists(), "the checkout is untouched");
    assert_eq!(git_status(&p), "", "the checkout is untouched");

    // It fires again, a second later, in another fresh worktree; that
    // firing changes nothing, and leaves no worktree or branch behind.
    let again = loop_events(&mut daemon.nd(), &sid, 1, |e| e["action"] == "succeeded" && e["loop"]["fires"] == 2);
    let second = again.last().unwrap()["loop"]["last_session"].as_str().unwrap().to_owned();
    assert_ne!(second, firing);
    let branches = std::process::Command::new("git").args(["branch", "--list", "swival/*"]).current_dir(&p).output();
    let branches = String::from_utf8(branches.unwrap().stdout).unwrap();
    assert!(branches.contains(&firing) && !branches.contains(&second), "{branches}");
    let info = c.ok("session/get", json!({"session_id": second}))["info"].clone();
    assert_eq!(info["state"], "closed", "{info}");
    assert!(info.get("worktree").is_none_or(Value::is_null), "{info}");
    let removed = env.swivalctl(&daemon, &p).args(["loop", "rm", &id]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&removed.stdout).trim(), "cancelled 1 loop");

    let diff = env.swivalctl(&daemon, &p).args(["diff", "--session", &firing, "--stat"]).output().unwrap();
    assert!(String::from_utf8_lossy(&diff.stdout).contains("created   report.txt"), "{diff:?}");
    let applied = env.swivalctl(&daemon, &p).args(["apply", &firing]).output().unwrap();
    assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));
    assert_eq!(std::fs::read_to_string(p.join("report.txt")).unwrap(), "all green\n");
    // Each firing is in the inbox, the first with what it changed.
    let entries = c.ok("inbox/list", json!({}))["entries"].as_array().unwrap().clone();
    let first = entries.iter().find(|e| e["session_id"] == json!(firing)).expect("the first firing's entry");
    assert_eq!((first["trigger"].clone(), first["outcome"].clone()), (json!("loop"), json!("succeeded")));
    assert_eq!((first["files"].clone(), first["worktree"].clone()), (json!(["report.txt"]), json!(true)));
    assert_eq!(first["source_id"], json!(id));
}

#[test]
fn a_loop_failing_six_times_in_a_row_is_warned_at_three_and_cancelled() {
    let env = TestEnv::new();
    let daemon = daemon(&env);
    let p = git_project(&env, "p");
    let steps = (0..8).map(|_| Step::error(400, "bad request: the model is gone", "invalid_request_error")).collect();
    let mock = MockProvider::start(steps);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("loop/add", json!({"session_id": sid, "prompt": "check", "schedule": {"every_s": 1}}));
    let events = loop_events(&mut daemon.nd(), &sid, 1, |e| e["action"] == "cancelled");
    let kinds: Vec<&str> = actions(&events).into_iter().filter(|a| *a != "fired").collect();
    assert_eq!(
        kinds,
        ["added", "failed", "failed", "failed", "warned", "failed", "failed", "failed", "cancelled"],
        "{events:?}"
    );
    let last = &events.last().unwrap()["loop"];
    assert_eq!((last["status"].clone(), last["fires"].clone()), (json!("cancelled"), json!(6)));
    assert!(last["last_error"].as_str().unwrap().contains("the model is gone"), "{last}");
    assert_eq!(mock.request_count(), 6, "no seventh firing");
    let listed = c.ok("loop/list", json!({}));
    assert_eq!(listed["loops"], json!([]), "a cancelled loop is no longer listed as active");
    let all = c.ok("loop/list", json!({"all": true}));
    assert_eq!(all["loops"][0]["status"], "cancelled");
}

#[test]
fn a_loop_survives_a_restart_and_fires_once_not_a_burst_after_a_long_pause() {
    let env = TestEnv::new();
    let mut first = daemon(&env);
    let p = git_project(&env, "p");
    let mock = MockProvider::start(Vec::new());
    let mut c = first.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("loop/add", json!({"session_id": sid, "prompt": "look", "schedule": {"every_s": 1}}));
    loop_events(&mut first.nd(), &sid, 1, |e| e["action"] == "succeeded");
    first.signal(nix::sys::signal::Signal::SIGTERM);
    first.wait_exit();
    drop(c);
    // Down for more than three intervals past the last firing.
    let stopped = std::time::Instant::now();
    wait_until("three intervals to pass", || stopped.elapsed() > std::time::Duration::from_secs(4));

    let second = env.start_daemon();
    let mut c = second.nd();
    let before = c.ok("session/get", json!({"session_id": sid}))["info"]["last_seq"].as_u64().unwrap();
    let after_restart = |e: &Value| e["action"] == "fired";
    let mut fired = Vec::new();
    let mut from = before + 1;
    while fired.len() < 2 {
        let events = loop_events(&mut second.nd(), &sid, from, after_restart);
        let last = events.last().unwrap().clone();
        from = last["seq"].as_u64().unwrap() + 1;
        fired.push(last);
    }
    let time = |e: &Value| humantime::parse_rfc3339(e["loop"]["last_fire_at"].as_str().unwrap()).unwrap();
    let gap = time(&fired[1]).duration_since(time(&fired[0])).unwrap();
    assert!(gap >= std::time::Duration::from_secs(1), "one catch-up firing, then the interval: {gap:?}");
    c.ok("loop/remove", json!({"all": true}));
}

#[test]
fn loops_are_refused_past_their_caps_and_outside_git_naming_what_to_do() {
    let env = TestEnv::new();
    env.daemon_settings("max_loops = 5");
    let daemon = daemon(&env);
    let mock = MockProvider::start(Vec::new());
    let mut c = daemon.nd();
    let plain = create_session(&mut c, &env.project("plain"), config(&mock));
    let refused = c.call("loop/add", json!({"session_id": plain, "prompt": "x", "schedule": {"every_s": 3600}}));
    assert!(refused["error"]["message"].as_str().unwrap().contains("is not in a git repository"), "{refused}");
    let sid = create_session(&mut c, &git_project(&env, "p"), config(&mock));
    for _ in 0..4 {
        c.ok("loop/add", json!({"session_id": sid, "prompt": "x", "schedule": {"every_s": 3600}}));
    }
    let fifth = c.call("loop/add", json!({"session_id": sid, "prompt": "x", "schedule": {"every_s": 3600}}));
    assert!(fifth["error"]["message"].as_str().unwrap().contains("already has 4 active loops"), "{fifth}");
    let other = create_session(&mut c, &git_project(&env, "q"), config(&mock));
    c.ok("loop/add", json!({"session_id": other, "prompt": "x", "schedule": {"every_s": 3600}}));
    let past = c.call("loop/add", json!({"session_id": other, "prompt": "x", "schedule": {"every_s": 3600}}));
    let message = past["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_loops (5)") && message.contains("swivald.toml"), "{past}");
    let fast = c.call("loop/add", json!({"session_id": other, "prompt": "x", "schedule": {"every_s": 0}}));
    assert!(fast["error"]["message"].as_str().unwrap().contains("loop_min_interval_s"), "{fast}");
    // Closing a session cancels its loops.
    c.ok("session/close", json!({"session_id": sid}));
    let left = c.ok("loop/list", json!({}))["loops"].as_array().unwrap().len();
    assert_eq!(left, 1, "only the other session's loop is left");
    c.ok("loop/remove", json!({"all": true}));
}

#[test]
fn swivalctl_and_the_repl_add_list_and_remove_loops() {
    use swival_tests::tmux::{shell_line, Tmux};
    let env = TestEnv::new();
    let daemon = daemon(&env);
    let p = git_project(&env, "p");
    let mock = MockProvider::start(Vec::new());
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    let out =
        env.swivalctl(&daemon, &p).args(["loop", "add", "--every", "2 hours", "check the build"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("loop l_") && said.contains(": every 2h, next at "), "{said}");
    let listed = env.swivalctl(&daemon, &p).arg("loops").output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.starts_with("active loops:\n  l_") && listed.contains("prompt=\"check the build\""), "{listed}");

    let tmux = Tmux::new(&env);
    tmux.start(&shell_line(&env, &daemon.socket, &p, "repl"));
    tmux.at_prompt("/loop 1h pull and test");
    let screen = tmux.wait_for("interval=1h prompt='pull and test'");
    assert!(screen.contains("[loop l_") && screen.contains(" registered]"), "{screen}");
    tmux.wait_for("firing in session s_");
    // The firing's end shows in the inbox at the next prompt.
    tmux.wait_for("] done. next fire at");
    tmux.at_prompt("");
    tmux.wait_for("» inbox #");
    tmux.at_prompt("/loops");
    tmux.wait_for("prompt=\"pull and test\"");
    tmux.at_prompt("/status");
    tmux.wait_for("loops: 1 active");
    tmux.at_prompt("/unloop all");
    tmux.wait_for("cancelled 1 loop");
    tmux.at_prompt("/exit");
    tmux.wait_for("EXIT=0");
    let rm = env.swivalctl(&daemon, &p).args(["loop", "rm", "all"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&rm.stdout).trim(), "cancelled 1 loop");
}

#[test]
fn a_loops_budgets_stop_it_and_a_firing_past_its_time_is_cancelled_as_failed() {
    let env = TestEnv::new();
    let daemon = daemon(&env);
    let p = git_project(&env, "p");
    let mock = MockProvider::start(vec![Step::hang()]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    let budget = json!({"max_runs": 2, "max_seconds": 1});
    c.ok("loop/add", json!({"session_id": sid, "prompt": "x", "schedule": {"every_s": 1}, "budget": budget}));
    let events = loop_events(&mut daemon.nd(), &sid, 1, |e| e["action"] == "budget_limited");
    let kinds: Vec<&str> = actions(&events).into_iter().filter(|a| *a != "fired").collect();
    assert_eq!(kinds, ["added", "failed", "succeeded", "budget_limited"], "{events:?}");
    let first_failure = events.iter().find(|e| e["action"] == "failed").unwrap();
    let why = first_failure["loop"]["last_error"].as_str().unwrap();
    assert!(why.contains("ran longer than its max_seconds (1 s)"), "{why}");
    let last = &events.last().unwrap()["loop"];
    assert_eq!((last["status"].clone(), last["fires"].clone()), (json!("budget_limited"), json!(2)));
    assert!(last["last_error"].as_str().unwrap().contains("fired the most times it may (2)"), "{last}");
    assert_eq!(mock.request_count(), 2, "no third firing");
}

#[test]
fn the_daily_token_ceiling_stops_goals_and_skips_loop_firings_naming_its_key() {
    let env = TestEnv::new();
    env.daemon_settings("max_background_tokens_per_day = 1");
    let daemon = daemon(&env);
    let p = git_project(&env, "p");
    let mock = MockProvider::start(vec![Step::tool_call("l1", "list_files", json!({})), Step::text("listed")]);
    let mut c = daemon.nd();
    let sid = create_session(&mut c, &p, config(&mock));
    c.ok("goal/set", json!({"session_id": sid, "objective": "look around"}));
    c.ok("session/subscribe", json!({"session_id": sid, "from_seq": 1}));
    let stuck = loop {
        let msg = c.read();
        let event = &msg["params"]["result"];
        if event["type"] == "goal" && event["goal"]["status"] == "stuck" {
            break event["goal"].clone();
        }
    };
    assert_eq!(stuck["runs"], 1, "{stuck}");
    assert!(stuck["last_blocker"].as_str().unwrap().contains("max_background_tokens_per_day (1)"), "{stuck}");
    let mut c = daemon.nd();
    let other = create_session(&mut c, &p, config(&mock));
    let refused = c.call("goal/set", json!({"session_id": other, "objective": "more"}));
    assert!(refused["error"]["message"].as_str().unwrap().contains("max_background_tokens_per_day"), "{refused}");
    c.ok("loop/add", json!({"session_id": other, "prompt": "x", "schedule": {"every_s": 3600}}));
    let skipped = loop_events(&mut daemon.nd(), &other, 1, |e| e["action"] == "skipped");
    let why = skipped.last().unwrap()["loop"]["last_error"].as_str().unwrap().to_owned();
    assert!(why.contains("max_background_tokens_per_day (1)"), "{why}");
    let status = c.ok("policy/status", json!({"session_id": other}))["background"].clone();
    assert_eq!(status["max_background_tokens_per_day"], 1, "{status}");
    assert!(status["tokens_today"].as_u64().unwrap() > 0, "{status}");
    assert_eq!(mock.request_count(), 2, "nothing ran past the ceiling");
    c.ok("loop/remove", json!({"all": true}));
}

#[test]
fn the_background_bounds_show_in_swivalctl_config_and_status() {
    let env = TestEnv::new();
    env.daemon_settings("max_background_tokens_per_day = 5000");
    let daemon = daemon(&env);
    let p = env.project("p");
    let config = env.swivalctl(&daemon, &p).arg("config").output().unwrap();
    let config = String::from_utf8_lossy(&config.stdout);
    let line = "# background work (swivald.toml): max_background_runs = 4, max_loops = 16, goal_max_runs = 20, \
                0 of max_background_tokens_per_day = 5000 used today";
    assert!(config.contains(line), "{config}");
    let status = env.swivalctl(&daemon, &p).arg("status").output().unwrap();
    assert!(String::from_utf8_lossy(&status.stdout).contains("background work: max_background_runs = 4"), "{status:?}");
}
