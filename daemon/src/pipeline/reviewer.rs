//! Reviewer rounds with Swival's contract: argv = the command plus the base
//! dir, stdin = the answer, `SWIVAL_TASK`, `SWIVAL_REVIEW_ROUND`,
//! `SWIVAL_MODEL` in the environment; exit 0 accepts, 1 asks for another
//! pass with stdout as feedback, anything else (including a timeout or a
//! reviewer that cannot start) accepts with a warning.

use crate::procs::{Call, Mode, ProcError, ProcessRunner, Script};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Largest feedback read from a reviewer.
const MAX_STDOUT: usize = 4 * 1024 * 1024;

/// How the next user message begins after a rejected answer.
pub fn feedback_message(round: u64, feedback: &str) -> String {
    format!(
        "[REVIEWER FEEDBACK — Round {round}]\n\
         A reviewer checked your answer and asked for another pass. Address the feedback below with \
         concrete tool actions (read, edit, run) rather than only rewording the answer; if something \
         cannot be done, say so and show the evidence.\n\n{feedback}"
    )
}

/// The configured reviewer.
#[derive(Debug, Clone)]
pub struct Reviewer {
    /// The command, without the base dir argument.
    pub argv: Vec<String>,
    /// The session's base dir (last argument and working directory).
    pub base_dir: std::path::PathBuf,
    /// The environment it runs in (the caller's).
    pub base: crate::procs::CallerEnv,
    /// `SWIVAL_ENCRYPT_KEY` for it: an explicitly configured key, as Swival
    /// exports it.
    pub encrypt_key: Option<crate::config::Secret>,
    /// Kill after this long.
    pub timeout: Duration,
    /// Most rounds.
    pub max_rounds: u64,
    /// The command line, for messages.
    pub display: String,
    /// The files it runs, pinned when the session started.
    pub pins: Vec<crate::procs::Pinned>,
}

/// What one round decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Exit 0.
    Accept,
    /// Exit 1: another pass, with this feedback.
    Retry(String),
    /// Anything else: accept, with this warning.
    Error(String),
    /// The run was cancelled during the review.
    Cancelled,
    /// The reviewer's pinned files changed: the run is blocked (fail
    /// closed), unlike Swival's accept-on-error.
    Tampered(String),
}

/// One round's record (report timeline and event).
#[derive(Debug, Clone)]
pub struct Round {
    /// Exit code, when the reviewer exited normally.
    pub exit_code: Option<i32>,
    /// Its stdout.
    pub feedback: String,
    /// Its stderr.
    pub stderr: String,
}

impl Reviewer {
    /// Review `answer` in round `round` (from 1).
    pub async fn review(
        &self,
        runner: &ProcessRunner,
        answer: &str,
        task: &str,
        model: &str,
        round: u64,
        cancel: &CancellationToken,
    ) -> (Verdict, Round) {
        let mut argv = self.argv.clone();
        argv.push(self.base_dir.display().to_string());
        let mut env =
            vec![("SWIVAL_TASK".to_owned(), task.to_owned()), ("SWIVAL_REVIEW_ROUND".to_owned(), round.to_string())];
        if !model.is_empty() {
            env.push(("SWIVAL_MODEL".to_owned(), model.to_owned()));
        }
        if let Some(key) = &self.encrypt_key {
            env.push((crate::secrets::ENCRYPT_KEY_ENV.to_owned(), key.expose().to_owned()));
        }
        let script = Script { argv, cwd: self.base_dir.clone(), base: self.base.clone(), env, pins: self.pins.clone() };
        let call = Call {
            script: &script,
            mode: Mode::Oneshot,
            input: answer.as_bytes(),
            timeout: self.timeout,
            max_stdout: MAX_STDOUT,
        };
        let out = match runner.call(call, cancel).await {
            Ok(out) => out,
            Err(ProcError::Cancelled { .. }) => {
                return (Verdict::Cancelled, Round { exit_code: None, feedback: String::new(), stderr: String::new() })
            }
            // A tampered reviewer must not wave an answer through.
            Err(e @ ProcError::Changed { .. }) => {
                let why = format!("reviewer {}: {e}", self.display);
                return (
                    Verdict::Tampered(why),
                    Round { exit_code: None, feedback: String::new(), stderr: String::new() },
                );
            }
            Err(e) => {
                let why = format!("reviewer {} failed ({e}); accepting the answer", self.display);
                return (
                    Verdict::Error(why),
                    Round { exit_code: None, feedback: String::new(), stderr: String::new() },
                );
            }
        };
        let round_rec = Round {
            exit_code: out.code,
            feedback: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        let verdict = match out.code {
            Some(0) => Verdict::Accept,
            Some(1) => Verdict::Retry(round_rec.feedback.clone()),
            Some(code) => {
                Verdict::Error(format!("reviewer {} exited with code {code}; accepting the answer", self.display))
            }
            None => Verdict::Error(format!("reviewer {} was killed by a signal; accepting the answer", self.display)),
        };
        (verdict, round_rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_message_starts_with_the_round_header() {
        let m = feedback_message(2, "fix the test");
        assert!(m.starts_with("[REVIEWER FEEDBACK — Round 2]\n"));
        assert!(m.ends_with("\n\nfix the test"));
    }
}
