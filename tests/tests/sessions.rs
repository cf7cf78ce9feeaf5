//! Sessions a user can tell apart: a REPL makes its session at the first
//! task (opening and leaving makes none, and never deletes one it was
//! given), the daemon titles an untitled session from its first run's
//! task, and `swivalctl sessions` lists them newest first with when each
//! was last used, its project and its title, narrowed to a project on
//! request; `--json` keeps the exact RFC 3339 times, which a restart keeps.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::tmux::{shell_line, Tmux, PROMPT};
use swival_tests::{Daemon, TestEnv};

/// The daemon's sessions, as `session/list` gives them.
fn sessions(daemon: &Daemon) -> Vec<Value> {
    daemon.nd().ok("session/list", json!({}))["sessions"].as_array().expect("sessions").clone()
}

/// Global config for `mock`.
fn configure(env: &TestEnv, mock: &MockProvider) {
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
}

/// `swivalctl ARGS` in `cwd`: exit code, stdout, stderr.
fn ctl(env: &TestEnv, daemon: &Daemon, cwd: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = env.swivalctl(daemon, cwd).args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// Start a run of `session` with `task` and wait for it to end.
fn run(daemon: &Daemon, session: &str, task: &str) {
    let mut c = daemon.nd();
    let run = c.ok("run/start", json!({"session_id": session, "task": task}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}));
}

#[test]
fn opening_and_leaving_the_repl_makes_no_session_and_given_ones_are_never_deleted() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![]);
    configure(&env, &mock);
    let p = env.project("p");
    for (n, leave) in ["/exit", "C-d", "C-c"].into_iter().enumerate() {
        let tmux = Tmux::named(&env, &format!("open{n}"));
        tmux.start(&shell_line(&env, &daemon.socket, &p, "repl"));
        tmux.wait_for(PROMPT);
        tmux.at_prompt("/help");
        tmux.wait_for("Available commands:");
        tmux.at_prompt("/sessions");
        tmux.wait_for("no session in ");
        tmux.prompt_ready();
        match leave {
            "/exit" => tmux.type_line(leave),
            "C-c" => {
                tmux.keys(&["C-c"]);
                tmux.wait_for("Press Ctrl-C again or Ctrl-D to exit");
                tmux.keys(&["C-c"]);
            }
            key => tmux.keys(&[key]),
        }
        assert!(tmux.wait_for("EXIT=").contains("EXIT=0"));
    }
    assert!(sessions(&daemon).is_empty(), "{:?}", sessions(&daemon));

    // An editor's session with no run, opened and left with --session, stays.
    let id = swival_tests::create_session(&mut daemon.nd(), &p, json!({}));
    let tmux = Tmux::named(&env, "given");
    tmux.start(&shell_line(&env, &daemon.socket, &p, &format!("repl --session {id}")));
    tmux.wait_for(&format!("session {id} in"));
    tmux.at_prompt("/exit");
    tmux.wait_for("EXIT=0");
    let ids: Vec<Value> = sessions(&daemon).iter().map(|s| s["session_id"].clone()).collect();
    assert_eq!(ids, [json!(id)]);
    assert_eq!(mock.request_count(), 0);
}

#[test]
fn the_first_prompt_titles_the_repls_session_and_the_one_after_new() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("first answer"), Step::text("second answer")]);
    configure(&env, &mock);
    let p = env.project("p");
    let tmux = Tmux::new(&env);
    tmux.start(&shell_line(&env, &daemon.socket, &p, "repl"));
    tmux.wait_for(PROMPT);
    tmux.prompt_ready();
    tmux.run(&["send-keys", "-t", "t", "-l", "  why does the   parser fail in src/parse.rs \\"]);
    tmux.keys(&["Enter"]);
    tmux.type_line("on the empty input?");
    tmux.wait_for("first answer");
    tmux.at_prompt("/new");
    tmux.wait_for("context cleared");
    let long = format!("second topic {}", "x".repeat(80));
    tmux.at_prompt(&long);
    tmux.wait_for("second answer");
    assert_eq!(mock.request_count(), 2, "one request per prompt");
    tmux.at_prompt("/sessions");
    let screen = tmux.wait_for("/sessions all lists every project's");
    let list = sessions(&daemon);
    assert_eq!(list.len(), 2, "{list:?}");
    assert_eq!(list[0]["title"], "why does the parser fail in src/parse.rs", "the first line, spaces collapsed");
    let second = list[1]["title"].as_str().unwrap();
    assert!(second.starts_with("second topic xxx") && second.ends_with('…'), "{second}");
    assert_eq!(second.chars().count(), 60, "{second}");
    let (old, new) = (list[0]["session_id"].as_str().unwrap(), list[1]["session_id"].as_str().unwrap());
    // Newest first, the REPL's own marked, each with its title.
    let at = |s: &str| screen.rfind(s).unwrap_or_else(|| panic!("{s} missing: {screen}"));
    assert!(at(&format!("* {new}")) < at(&format!("  {old}")), "{screen}");
    assert!(
        screen.contains("why does the parser fail in src/parse.rs") && screen.contains("second topic xxx"),
        "{screen}"
    );
    tmux.at_prompt("/exit");
    tmux.wait_for("EXIT=0");
}

#[test]
fn sessions_lists_newest_first_with_last_use_project_and_title_and_narrows_to_a_project() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("one"), Step::text("two")]);
    configure(&env, &mock);
    let (p, q) = (env.project("p"), env.project("q"));
    std::fs::create_dir_all(p.join("sub")).unwrap();
    // A given title is kept, and shown as text, not obeyed.
    let mut c = daemon.nd();
    let titled = json!({"base_dir": p, "title": "mine \u{1b}]0;pwned\u{7}"});
    let a = c.ok("session/create", titled)["session_id"].as_str().unwrap().to_owned();
    run(&daemon, &a, "work in p");
    let (code, _, err) = ctl(&env, &daemon, &q, &["run", "count the words\nin every file"]);
    assert_eq!(code, 0, "{err}");
    let sub = swival_tests::create_session(&mut c, &p.join("sub"), json!({}));

    let (code, out, _) = ctl(&env, &daemon, &q, &["sessions", "--json"]);
    assert_eq!(code, 0);
    let listed: Value = serde_json::from_str(&out).unwrap();
    let listed = listed["sessions"].as_array().unwrap().clone();
    let used: Vec<&str> = listed.iter().map(|s| s["last_used_at"].as_str().unwrap()).collect();
    assert!(used.windows(2).all(|w| w[0] >= w[1]), "newest first: {used:?}");
    for s in &listed {
        let id = s["session_id"].as_str().unwrap();
        let detail = c.ok("session/get", json!({"session_id": id}));
        let runs = detail["runs"].as_array().unwrap();
        let expect = runs.last().map_or(&s["created_at"], |r| &r["started_at"]);
        assert_eq!(&s["last_used_at"], expect, "the latest run's start, or the creation: {s}");
        let t = s["last_used_at"].as_str().unwrap();
        assert!(t.len() == 24 && t.as_bytes()[10] == b'T' && t.ends_with('Z'), "RFC 3339: {t}");
    }
    let by_id = |id: &str| listed.iter().find(|s| s["session_id"] == id).unwrap().clone();
    assert_eq!(by_id(&a)["title"], "mine \u{1b}]0;pwned\u{7}", "--json is exact");
    let b = listed.iter().find(|s| s["base_dir"] == q.display().to_string()).unwrap();
    assert_eq!(b["title"], "count the words", "the first line of `run`'s task");

    let (code, out, _) = ctl(&env, &daemon, &q, &["sessions"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    let order: Vec<&str> = listed.iter().map(|s| s["session_id"].as_str().unwrap()).collect();
    assert_eq!(lines.len(), 3, "{out}");
    for (line, id) in lines.iter().zip(&order) {
        assert!(line.starts_with(id), "the order of --json: {out}");
        let human = ["just now", " min ago", "today ", "yesterday "].iter().any(|w| line.contains(w));
        assert!(human && !line.contains("Z "), "a local human time: {line}");
    }
    let line_of = |id: &str| *lines.iter().find(|l| l.starts_with(id)).unwrap();
    assert!(line_of(&a).contains(&format!("{}  mine ␛]0;pwned␇", p.display())), "{out}");
    assert!(line_of(&sub).contains(&p.join("sub").display().to_string()), "{out}");

    let (_, out, _) = ctl(&env, &daemon, &q, &["sessions", "--project", p.to_str().unwrap()]);
    let ids: Vec<&str> = out.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    let want: Vec<&str> = order.iter().copied().filter(|id| *id == a || *id == sub).collect();
    assert_eq!(ids, want, "p and beneath it: {out}");
    let (_, out, _) = ctl(&env, &daemon, &q, &["sessions", "--here", "--json"]);
    let here: Value = serde_json::from_str(&out).unwrap();
    let here: Vec<&Value> = here["sessions"].as_array().unwrap().iter().collect();
    assert_eq!(here.len(), 1, "{out}");
    assert_eq!(here[0]["base_dir"], q.display().to_string());
    let (_, out, err) = ctl(&env, &daemon, &p.join("sub"), &["sessions", "--project", "nowhere"]);
    assert!(out.is_empty() && err.contains("no session in"), "{out}{err}");
}

#[test]
fn last_use_and_a_title_from_the_first_run_survive_a_daemon_restart() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("done")]);
    configure(&env, &mock);
    let p = env.project("p");
    let id = swival_tests::create_session(&mut daemon.nd(), &p, json!({}));
    run(&daemon, &id, "\nrename the config loader\nthen tidy");
    let before = sessions(&daemon);
    assert_eq!(before[0]["title"], "rename the config loader");
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    daemon.wait_exit();
    let daemon = env.start_daemon();
    let after = sessions(&daemon);
    assert_eq!(after[0]["last_used_at"], before[0]["last_used_at"], "{after:?}");
    assert_eq!(after[0]["title"], before[0]["title"]);
    assert_ne!(after[0]["last_used_at"], Value::Null);
}
