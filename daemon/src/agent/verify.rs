//! Verify by running: once the model answers after changing files, the
//! project's own check runs — the user's `verify_command`, else one the
//! daemon detects with certainty (`cargo test` beside a `Cargo.toml`,
//! `npm test` for a `package.json` with a test script of its own, pytest
//! where the project configures it) — as a command runs: in the session's
//! sandbox, with its limits. A failure goes back to the model once, with
//! the end of the check's output; the run then ends with the truth in its
//! `verify` events and its report, whatever the model says.
//!
//! The model is the adversary: a detected check runs what the project's
//! files say (a `package.json` script, a `conftest.py`), so it runs only
//! where the session's command policy would run that program without
//! asking; the user's own `verify_command` runs as they wrote it.

use super::{LoopEnd, Run, RunContext};
use crate::beneath::read_for_model;
use crate::message::Message;
use crate::sandbox::command::run_argv;
use crate::sandbox::policy::{self, CommandPolicy};
use crate::sandbox::CommandEnv;
use crate::tools::parsed::ParsedCall;
use std::path::Path;
use std::time::Duration;
use swival_protocol::EventKind;

/// How long a check may run.
const TIMEOUT: Duration = Duration::from_secs(300);
/// Characters of its output the model and the event get (the end, where
/// a test runner sums up what failed).
const OUTPUT_TAIL: usize = 3000;
/// Bytes of a project file read to detect a check.
const DETECT_CAP: u64 = 256 << 10;
/// Checks a run makes at most: the first, and the one after the model was
/// told it failed.
pub(super) const MAX_CHECKS: u32 = 2;

/// The check a run makes, and how it runs.
pub(super) struct Check {
    /// Its argv.
    argv: Vec<String>,
    /// Where it comes from: `verify_command`, or the file it was detected from.
    source: String,
    /// How it runs (the session's commands, or any program for the user's own).
    env: CommandEnv,
}

/// What a run's check is, if it has one.
pub(super) fn check(ctx: RunContext<'_>) -> Option<Check> {
    if let Some(command) = &ctx.config.verify_command {
        // The user's own command: any program, looked up on the caller's PATH.
        let mut env = ctx.commands.clone();
        let path = ctx.env.var("PATH").unwrap_or_default();
        env.policy = CommandPolicy::Unrestricted { path: path.into() };
        return Some(Check { argv: command.argv.clone(), source: "verify_command".to_owned(), env });
    }
    // A detected check runs only what the model could run without asking:
    // not in ask mode, nor where hooks judge each command call.
    if ctx.commands.ask.is_some() || ctx.pipeline.hooks.any(crate::config::HookPoint::AfterLlmCall) {
        return None;
    }
    let (argv, source) = detect(ctx.base_dir)?;
    policy::check(&argv, &ctx.commands.policy, ctx.base_dir).ok()?;
    Some(Check { argv, source: source.to_owned(), env: ctx.commands.clone() })
}

/// The check a project's files say how to run, when they say it plainly.
fn detect(base: &Path) -> Option<(Vec<String>, &'static str)> {
    let read = |name: &str| read_for_model(base, Path::new(name), DETECT_CAP, &[]).ok();
    let text = |name: &str| read(name).map(|b| String::from_utf8_lossy(&b).into_owned());
    let argv = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    if read("Cargo.toml").is_some() {
        return Some((argv(&["cargo", "test", "--quiet"]), "Cargo.toml"));
    }
    if let Some(package) = text("package.json").and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok()) {
        let test = package.pointer("/scripts/test").and_then(serde_json::Value::as_str).unwrap_or("");
        // `npm init` writes a test script that only fails.
        if !test.is_empty() && !test.contains("no test specified") {
            return Some((argv(&["npm", "test", "--silent"]), "package.json"));
        }
    }
    let pyproject = text("pyproject.toml").and_then(|t| t.parse::<toml::Table>().ok());
    let configured = pyproject.as_ref().and_then(|p| p.get("tool")?.get("pytest")).is_some();
    for (file, says) in [("pytest.ini", read("pytest.ini").is_some()), ("conftest.py", read("conftest.py").is_some())] {
        if says {
            return Some((argv(&["python3", "-m", "pytest", "-q"]), file));
        }
    }
    configured.then(|| (argv(&["python3", "-m", "pytest", "-q"]), "pyproject.toml"))
}

impl Run<'_> {
    /// After an answer: when the run changed files, run its check; the
    /// message telling the model it failed, when the loop should go on.
    pub(super) async fn verify(&mut self, check: &Check, end: &LoopEnd, checks: &mut u32) -> Option<Message> {
        if !matches!(end, LoopEnd::Answer(_)) || !self.changed || *checks >= MAX_CHECKS {
            return None;
        }
        *checks += 1;
        self.changed = false;
        let command = shlex::try_join(check.argv.iter().map(String::as_str)).unwrap_or_else(|_| check.argv.join(" "));
        let turn = self.record.stats.turns;
        // What the check changes is recorded as a command's changes are.
        let arguments = serde_json::json!({ "command": check.argv }).to_string();
        let call = ParsedCall::read(&format!("verify_{turn}_{checks}"), crate::sandbox::COMMAND_TOOL, &arguments);
        let bracket = self.before_change(&call).await;
        let ran = run_argv(&check.env, &check.argv, TIMEOUT, self.ctx.cancel).await;
        self.after_change(bracket, turn, &call, None).await;
        if self.ctx.cancel.is_cancelled() {
            return None;
        }
        let (exit_code, output) = match ran {
            Ok(ran) => {
                let code = match ran.ending {
                    crate::procs::Ending::Exited(code) => Some(code),
                    _ => None,
                };
                (code, tail(&String::from_utf8_lossy(&ran.capture.bytes), OUTPUT_TAIL))
            }
            Err(why) => {
                // Nothing for the model to fix: the user is told.
                let message = format!("the project's check `{command}` could not run: {why}");
                self.ctx.events.emit(Some(self.ctx.run_id), EventKind::Warning { message });
                (None, why.to_string())
            }
        };
        let passed = exit_code == Some(0);
        let source = check.source.clone();
        let event =
            EventKind::Verify { turn, command: command.clone(), source, exit_code, passed, output: output.clone() };
        super::emit_recorded(self.ctx.events, self.ctx.run_id, &mut self.record, event);
        if passed || exit_code.is_none() || *checks >= MAX_CHECKS {
            return None;
        }
        let code = exit_code.unwrap_or_default();
        Some(Message::synthetic(format!(
            "The project's check `{command}` failed (exit code {code}) after your changes. The end of its output:\n\
             {output}\nFix what it reports, then answer again."
        )))
    }
}

/// The last `n` characters of `text`, with `…` when cut.
fn tail(text: &str, n: usize) -> String {
    let count = text.chars().count();
    match count.checked_sub(n) {
        Some(skip) if skip > 0 => format!("…{}", text.chars().skip(skip).collect::<String>()),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_is_detected_only_where_the_project_says_it_plainly() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(detect(d.path()), None);
        std::fs::write(
            d.path().join("package.json"),
            r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#,
        )
        .unwrap();
        assert_eq!(detect(d.path()), None, "npm's placeholder is no test");
        std::fs::write(d.path().join("pyproject.toml"), "[tool.pytest.ini_options]\naddopts = \"-q\"\n").unwrap();
        assert_eq!(detect(d.path()).unwrap().1, "pyproject.toml");
        std::fs::write(d.path().join("package.json"), r#"{"scripts": {"test": "node --test"}}"#).unwrap();
        assert_eq!(detect(d.path()).unwrap(), (vec!["npm".into(), "test".into(), "--silent".into()], "package.json"));
        std::fs::write(d.path().join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
        assert_eq!(detect(d.path()).unwrap().1, "Cargo.toml");
    }

    #[test]
    fn a_linked_project_file_says_nothing() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("Cargo.toml"), "[package]\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("Cargo.toml"), d.path().join("Cargo.toml")).unwrap();
        assert_eq!(detect(d.path()), None);
    }

    #[test]
    fn a_planted_fifo_detects_nothing_and_does_not_block() {
        let d = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&d.path().join("Cargo.toml"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        nix::unistd::mkfifo(&d.path().join("package.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(detect(d.path()), None);
    }

    #[test]
    fn the_tail_keeps_the_end() {
        assert_eq!(tail("abcdef", 3), "…def");
        assert_eq!(tail("abc", 3), "abc");
    }
}
