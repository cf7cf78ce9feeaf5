//! A real terminal for tests of what a user does interactively: a private
//! tmux server per test (`send-keys` to type, `capture-pane` to read the
//! screen), killed when the test ends. Every wait has a deadline.

use crate::{bin, TestEnv, IO_TIMEOUT};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A private tmux server for one test, killed when it drops.
pub struct Tmux {
    /// Its socket.
    socket: PathBuf,
}

impl Tmux {
    /// A server for `env`'s test (nothing runs until [`Tmux::start`]).
    pub fn new(env: &TestEnv) -> Tmux {
        Tmux::named(env, "tmux")
    }

    /// Another server for `env`'s test, on a socket of its own (one just
    /// killed may still hold the first socket's name).
    pub fn named(env: &TestEnv, name: &str) -> Tmux {
        Tmux { socket: env.root().join(format!("{name}.sock")) }
    }

    /// Start the terminal `t`, 200 × 50, running the shell `line`.
    pub fn start(&self, line: &str) {
        self.run(&["new-session", "-d", "-s", "t", "-x", "200", "-y", "50", line]);
    }

    /// Run a tmux command, which must succeed; its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").arg("-S").arg(&self.socket).args(args).output().expect("tmux is installed");
        assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Type `text` literally, then press Enter.
    pub fn type_line(&self, text: &str) {
        self.run(&["send-keys", "-t", "t", "-l", text]);
        self.keys(&["Enter"]);
    }

    /// Press keys (tmux names: `Enter`, `Up`, `C-c`, `C-d`, `Tab`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// The screen now, with up to 2000 lines of history.
    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-S", "-2000", "-t", "t"])
    }

    /// The screen, waiting (up to [`IO_TIMEOUT`]) until it shows `text`.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_for_count(text, 1)
    }

    /// The screen, waiting until it shows `text` at least `n` times.
    pub fn wait_for_count(&self, text: &str, n: usize) -> String {
        let deadline = Instant::now() + IO_TIMEOUT;
        loop {
            let screen = self.screen();
            if screen.matches(text).count() >= n {
                return screen;
            }
            assert!(Instant::now() < deadline, "the terminal never showed {text:?} {n} times; it shows:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The REPL's prompt.
pub const PROMPT: &str = "swival> ";

impl Tmux {
    /// Type `line` once the REPL's prompt is back and empty (keys typed
    /// before it would reach the terminal while no editor reads it).
    pub fn at_prompt(&self, line: &str) {
        self.prompt_ready();
        self.type_line(line);
    }

    /// Wait until the REPL's prompt is back and empty.
    pub fn prompt_ready(&self) {
        let deadline = Instant::now() + IO_TIMEOUT;
        loop {
            let screen = self.screen();
            if screen.lines().rev().find(|l| !l.trim().is_empty()).is_some_and(|l| l.trim_end() == PROMPT.trim_end()) {
                break;
            }
            assert!(Instant::now() < deadline, "the prompt never came back; the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.socket).arg("kill-server").output();
    }
}

/// `swivalctl ARGS` in `dir` as a shell line, in the test's environment
/// and nothing else of the test runner's (`NO_COLOR` keeps the screen
/// plain text); the pane stays after it exits, showing `EXIT=<code>`.
pub fn shell_line(env: &TestEnv, socket: &Path, dir: &Path, args: &str) -> String {
    shell_line_with(env, socket, dir, "", args)
}

/// [`shell_line`] with more variables (`NAME='value' …`) in swivalctl's
/// environment.
pub fn shell_line_with(env: &TestEnv, socket: &Path, dir: &Path, vars: &str, args: &str) -> String {
    let root = env.root();
    format!(
        "cd '{}' && env -i PATH='{}' HOME='{}/home' XDG_CONFIG_HOME='{r}/config' XDG_STATE_HOME='{r}/state' \
         XDG_CACHE_HOME='{r}/cache' XDG_DATA_HOME='{r}/data' XDG_RUNTIME_DIR='{r}/run' SWIVALD_SOCKET='{}' TERM=xterm NO_COLOR=1 {vars} '{}' {args}; \
         echo EXIT=$?; sleep 600",
        dir.display(),
        std::env::var("PATH").unwrap_or_default(),
        root.display(),
        socket.display(),
        bin("swivalctl").display(),
        r = root.display(),
    )
}
