//! `swivalctl run` as a user at a real terminal (tmux: `send-keys`,
//! `capture-pane`): in ask mode the question shows the exact argv, why the
//! use is high-risk, and offers no "always" for a use asked every time; a
//! "no" typed at the prompt keeps the command from running.

use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{bin, TestEnv, IO_TIMEOUT};

/// A private tmux server for one test, killed when it drops.
struct Tmux {
    socket: std::path::PathBuf,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").arg("-S").arg(&self.socket).args(args).output().expect("tmux is installed");
        assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen, waiting (up to [`IO_TIMEOUT`]) until it shows `text`.
    fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + IO_TIMEOUT;
        loop {
            let screen = self.run(&["capture-pane", "-p", "-J", "-S", "-200", "-t", "t"]);
            if screen.contains(text) {
                return screen;
            }
            assert!(Instant::now() < deadline, "the terminal never showed {text:?}; it shows:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.socket).arg("kill-server").output();
    }
}

/// `swivalctl ARGS` in `dir` as a shell line, in the test's environment.
fn shell_line(env: &TestEnv, socket: &Path, dir: &Path, args: &str) -> String {
    let root = env.root();
    format!(
        "cd '{}' && env -i PATH='{}' HOME='{}/home' XDG_CONFIG_HOME='{r}/config' XDG_STATE_HOME='{r}/state' \
         XDG_CACHE_HOME='{r}/cache' XDG_RUNTIME_DIR='{r}/run' SWIVALD_SOCKET='{}' TERM=xterm '{}' {args}; echo EXIT=$?; sleep 600",
        dir.display(),
        std::env::var("PATH").unwrap_or_default(),
        root.display(),
        socket.display(),
        bin("swivalctl").display(),
        r = root.display(),
    )
}

#[test]
fn a_high_risk_question_at_the_terminal_shows_argv_and_why_and_no_keeps_it_from_running() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let marker = p.join("PWNED");
    let program = format!("BEGIN{{system(\"touch {}\")}}", marker.display());
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "run_command", json!({"command": ["awk", program]})),
        Step::text("gave up"),
    ]);
    env.global_config(&format!(
        "provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\ncommands = \"ask\"\n",
        mock.base_url()
    ));
    let tmux = Tmux { socket: env.root().join("tmux.sock") };
    let line = shell_line(&env, &daemon.socket, &p, "run 'count the lines'");
    tmux.run(&["new-session", "-d", "-s", "t", "-x", "200", "-y", "50", &line]);

    let screen = tmux.wait_for("(default no):");
    assert!(screen.contains("[high risk]"), "{screen}");
    assert!(screen.contains("argv: [\"awk\",\"BEGIN{system(\\\"touch"), "the exact argv: {screen}");
    assert!(screen.contains("why: "), "{screen}");
    assert!(!screen.contains("[a] always"), "no always for a use asked every time: {screen}");
    tmux.run(&["send-keys", "-t", "t", "n", "Enter"]);
    let screen = tmux.wait_for("EXIT=");
    assert!(screen.contains("gave up") && screen.contains("EXIT=0"), "{screen}");
    assert!(!marker.exists(), "the rejected command ran");
    let sent = mock.requests_text();
    assert!(sent.contains("rejected") || sent.contains("denied") || sent.contains("not approved"), "{sent}");
}
