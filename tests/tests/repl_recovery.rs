//! A daemon crash under an open REPL, in a real terminal (tmux): the REPL
//! starts the daemon again as every other command would, the run the crash
//! cut short is shown as interrupted by the daemon's stop (live, and on a
//! `--session` replay) with `/continue` offered, `/status` and `/report`
//! tell what the interrupted run did and sent, `/continue` finishes it, and
//! a daemon that cannot start gives one line naming why and the session.
//! SIGTERM ends the REPL (143) at its prompt and during a run, and gives
//! the terminal back as it was.

use serde_json::json;
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::tmux::{shell_line, shell_line_with, Tmux};
use swival_tests::{bin, TestEnv};

/// What an interrupted run is shown with.
const INTERRUPTED: &str = "the run was interrupted: swivald stopped while it was in flight. /continue resumes it";

/// Stop the daemon the REPL started (`swivalctl daemon stop`).
fn stop_daemon(env: &TestEnv, socket: &Path) {
    let out = env.command(&bin("swivalctl")).arg("--socket").arg(socket).args(["daemon", "stop"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The lines of `screen` after the last one containing `mark`.
fn after<'a>(screen: &'a str, mark: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines.iter().rposition(|l| l.contains(mark)).unwrap_or(0);
    lines[at..].to_vec()
}

#[test]
fn a_killed_daemon_is_started_again_the_run_shows_as_interrupted_and_continue_finishes_it() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let socket = daemon.socket.clone();
    let p = env.project("p");
    std::fs::write(p.join("notes.txt"), "the build uses make\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "read_file", json!({"file_path": "notes.txt"})),
        Step::hang(),
        Step::text("finished after the restart"),
    ])
    .with_context_length(10_000);
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    let tmux = Tmux::new(&env);
    tmux.start(&shell_line(&env, &socket, &p, "repl"));
    tmux.at_prompt("read the notes");
    tmux.wait_for("→ read_file(");
    mock.wait_for_requests(2);
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    daemon.wait_exit();
    tmux.wait_for("swivald was not running; started it (pid");
    let screen = tmux.wait_for(INTERRUPTED);
    let warned = screen.lines().find(|l| l.contains(INTERRUPTED)).unwrap();
    assert!(warned.trim_start().starts_with("⚠ Warning: the run was"), "a line of its own: {warned:?}\n{screen}");
    assert!(!screen.contains("interrupted, question aborted"), "not shown as a Ctrl-C: {screen}");

    // What happened is told: the context that was sent, the call it made.
    tmux.at_prompt("/status");
    let screen = tmux.wait_for("(1 run)");
    let status = after(&screen, "/status").join("\n");
    assert!(status.contains("context: ~") && status.contains("/ 10,000 tokens (") && status.contains("%)"), "{status}");
    assert!(status.contains("last run: interrupted, 1 turns"), "{status}");
    tmux.at_prompt("/report");
    let screen = tmux.wait_for("\"tool_calls_total\": 1");
    let report = after(&screen, "/report").join("\n");
    assert!(report.contains("interrupted (the daemon stopped while this run was in flight"), "{report}");
    assert!(!report.contains("null"), "{report}");

    // Another terminal attaching replays it with the same words.
    let sessions = swival_tests::NdConn::connect(&socket).ok("session/list", json!({}));
    let id = sessions["sessions"][0]["session_id"].as_str().unwrap().to_owned();
    let other = Tmux::named(&env, "replay");
    other.start(&shell_line(&env, &socket, &p, &format!("repl --session {id}")));
    let replayed = other.wait_for(INTERRUPTED);
    assert!(replayed.contains("swival> read the notes") && replayed.contains("→ read_file("), "{replayed}");
    other.type_line("/exit");
    other.wait_for("EXIT=0");

    tmux.at_prompt("/continue");
    tmux.wait_for("finished after the restart");
    let resumed = &mock.requests()[2];
    let roles: Vec<&str> = resumed["messages"].as_array().unwrap().iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"], "the conversation goes on where it stopped");
    let screen = tmux.wait_for("ctx ");
    assert!(after(&screen, "finished after the restart").iter().any(|l| l.contains("ctx ") && l.contains("% · ")));
    tmux.at_prompt("/exit");
    tmux.wait_for("EXIT=0");
    stop_daemon(&env, &socket);
}

#[test]
fn a_daemon_that_cannot_start_again_gives_one_line_with_why_and_the_session() {
    let env = TestEnv::new();
    let mut daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("made")]);
    let p = env.project("p");
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    let tmux = Tmux::new(&env);
    tmux.start(&shell_line_with(&env, &daemon.socket, &p, "SWIVALCTL_RECONNECT_S=5", "repl"));
    // The session, made at the first task, is the one to come back to.
    tmux.at_prompt("make the session");
    tmux.wait_for("made");
    tmux.prompt_ready();
    // The daemon cannot start again: its settings no longer parse.
    env.daemon_settings("this is = = not toml");
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    daemon.wait_exit();
    let screen = tmux.wait_for("EXIT=");
    assert!(screen.contains("EXIT=1") && screen.contains("swivalctl repl --session s_"), "{screen}");
    let lost = after(&screen, "reconnecting");
    let line = lost.iter().find(|l| l.contains("swivalctl repl --session")).unwrap();
    assert!(line.contains("could not be started"), "why: {line}");
    assert_eq!(lost.iter().filter(|l| l.contains("swivalctl")).count(), 1, "one line: {screen}");
}

/// The live `swivalctl repl` processes working in `dir` (not the shell
/// that started them, nor another test's).
fn repl_processes(dir: &Path) -> Vec<i32> {
    let swivalctl = bin("swivalctl");
    let all = swival_tests::processes_mentioning(&format!("{} repl", swivalctl.display()));
    all.into_iter().filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir)).collect()
}

#[test]
fn sigterm_ends_the_repl_at_its_prompt_and_in_a_run_and_leaves_the_terminal_sane() {
    for at_prompt in [true, false] {
        let env = TestEnv::new();
        let daemon = env.start_daemon();
        let p = env.project("p");
        let mock = MockProvider::start(vec![Step::hang()]);
        env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
        let tmux = Tmux::new(&env);
        // After the REPL: its exit code, then whether the terminal is
        // still raw (`-icanon` found: RAW=0).
        let args = "repl; echo CODE=$?; stty -a | tr ' ' '\\n' | grep -x -- -icanon; echo RAW=$?";
        tmux.start(&shell_line(&env, &daemon.socket, &p, args));
        tmux.prompt_ready();
        if !at_prompt {
            tmux.at_prompt("wait for the model");
            mock.wait_for_requests(1);
        }
        let pids = repl_processes(&p);
        assert_eq!(pids.len(), 1, "one REPL: {pids:?}");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pids[0]), nix::sys::signal::Signal::SIGTERM).unwrap();
        let screen = tmux.wait_for("RAW=");
        assert!(screen.contains("CODE=143"), "{screen}");
        assert!(screen.contains("RAW=1"), "the terminal is not left raw: {screen}");
    }
}
