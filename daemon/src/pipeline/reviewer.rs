//! Reviewer rounds with Swival's contract: argv = the command plus the base
//! dir, stdin = the answer, `SWIVAL_TASK`, `SWIVAL_REVIEW_ROUND`,
//! `SWIVAL_MODEL` in the environment; exit 0 accepts, 1 asks for another
//! pass with stdout as feedback, anything else (including a timeout or a
//! reviewer that cannot start) accepts with a warning.

use crate::procs::{Call, Mode, ProcError, ProcessRunner, Script};
use std::path::{Path, PathBuf};
use std::time::Duration;
use swival_protocol::{EventKind, NoticeLevel};
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
    /// The files the session's own reviewer (`self_review`) puts in its
    /// prompt, which must be readable before each round.
    pub reads: Vec<ReviewFile>,
    /// What a review file may not be read from (credential stores, the
    /// daemon's own files), as `review/run` reads it.
    pub hidden: Vec<std::path::PathBuf>,
}

/// A file a review puts in its prompt, named by a config key.
#[derive(Debug, Clone)]
pub struct ReviewFile {
    /// The key naming it (`verify`).
    pub key: &'static str,
    /// The file, absolute or relative to the base dir.
    pub path: std::path::PathBuf,
    /// Where the key was set (a config file, or the session's flags).
    pub source: String,
}

/// Bytes of an objective or verify file read at most.
const REVIEW_FILE_MAX_BYTES: u64 = 1 << 20;

/// The text of a file a review puts in its prompt (`verify`, `objective`),
/// `file` absolute or relative to `base`: read the one way a file reaches
/// the model (`beneath::read_for_model`), so a link, a FIFO or a giant the
/// reviewed model planted is refused, not followed.
pub fn read_review_file(base: &Path, file: &Path, hidden: &[PathBuf]) -> std::io::Result<String> {
    let base = base.canonicalize()?;
    let bytes = crate::beneath::read_for_model(&base, file, REVIEW_FILE_MAX_BYTES, hidden)?;
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// What one round reviews.
pub struct Submission<'a> {
    /// The answer (the reviewer's stdin).
    pub answer: &'a str,
    /// The task (`SWIVAL_TASK`).
    pub task: &'a str,
    /// The model (`SWIVAL_MODEL`; empty: not set).
    pub model: &'a str,
    /// The round, from 1 (`SWIVAL_REVIEW_ROUND`).
    pub round: u64,
    /// Where the daemon is and which session answered (`SWIVALD_SOCKET`,
    /// `SWIVALD_SESSION`), for `swivalctl run --reviewer-mode`.
    pub daemon: Vec<(String, String)>,
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
    /// The run is blocked (fail closed), unlike Swival's accept-on-error:
    /// the reviewer's pinned files changed, or a file the review must read
    /// ([`Reviewer::reads`]) cannot be read.
    Blocked(String),
}

/// One round's record (its `review` event, which the report folds in).
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
    /// Why a file the review must read cannot be read, naming the file,
    /// the key and where it was set; `None` when all can be. Swival's
    /// reviewer would exit 2 and the answer would go out unchecked: here
    /// the criteria are policy, and policy fails closed.
    pub fn unreadable(&self) -> Option<String> {
        self.reads.iter().find_map(|f| {
            let e = read_review_file(&self.base_dir, &f.path, &self.hidden).err()?;
            Some(format!(
                "cannot read the {} file {} (set in {}): {e}; the review needs it: fix the path, or take the key out",
                f.key,
                self.base_dir.join(&f.path).display(),
                f.source
            ))
        })
    }

    /// Review `answer` in round `round` (from 1).
    pub async fn review(
        &self,
        runner: &ProcessRunner,
        s: Submission<'_>,
        cancel: &CancellationToken,
    ) -> (Verdict, Round) {
        let Submission { answer, task, model, round, daemon } = s;
        if let Some(why) = self.unreadable() {
            return (Verdict::Blocked(why), Round { exit_code: None, feedback: String::new(), stderr: String::new() });
        }
        let mut argv = self.argv.clone();
        argv.push(self.base_dir.display().to_string());
        let mut env =
            vec![("SWIVAL_TASK".to_owned(), task.to_owned()), ("SWIVAL_REVIEW_ROUND".to_owned(), round.to_string())];
        // Where the daemon is and whose answer this is (`--self-review`).
        env.extend(daemon);
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
                    Verdict::Blocked(why),
                    Round { exit_code: None, feedback: String::new(), stderr: String::new() },
                );
            }
            Err(e) => {
                let why = match e {
                    ProcError::Timeout { secs, .. } => {
                        format!("reviewer timed out after {secs}s, accepting answer as-is")
                    }
                    ProcError::Spawn { source, .. } => format!("reviewer failed to run: {source}"),
                    other => format!("reviewer failed to run: {other}"),
                };
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
            Some(code) => Verdict::Error(format!("Reviewer exited with code {code}, accepting answer as-is")),
            // Swival (Python) reports a signal as a negative exit code.
            None => match out.signal {
                Some(sig) => Verdict::Error(format!("Reviewer exited with code -{sig}, accepting answer as-is")),
                None => Verdict::Error("Reviewer was killed by a signal, accepting answer as-is".to_owned()),
            },
        };
        (verdict, round_rec)
    }
}

/// What Swival prints before a round starts.
pub fn sending_notice(round: u64) -> EventKind {
    EventKind::Notice { level: NoticeLevel::Info, message: format!("Review round {round}: sending answer to reviewer") }
}

/// What Swival prints after a round, in its order and words: the
/// reviewer's stderr (exit 2 only), then the acceptance, the feedback
/// that sends the agent back, or why the answer is accepted anyway.
/// A cancelled or tampered round prints nothing: the run ends.
pub fn round_events(round: u64, max_rounds: u64, verdict: &Verdict, rec: &Round) -> Vec<EventKind> {
    let warning = |message: String| EventKind::Warning { message };
    let mut out = Vec::new();
    if rec.exit_code == Some(2) && !rec.stderr.is_empty() {
        out.push(warning(format!("reviewer stderr: {}", rec.stderr.trim_end())));
    }
    match verdict {
        Verdict::Accept => out.push(EventKind::Notice {
            level: NoticeLevel::Success,
            message: format!("Reviewer accepted the answer (round {round})"),
        }),
        Verdict::Retry(_) if round >= max_rounds => {
            out.push(warning(format!("Max review rounds ({max_rounds}) reached, accepting answer")))
        }
        Verdict::Retry(feedback) => {
            let mut message = format!("[review round {round}] Reviewer requested changes:");
            let feedback = feedback.trim_end_matches(['\n', '\r']);
            if !feedback.is_empty() {
                message.push('\n');
                message.push_str(feedback);
            }
            out.push(EventKind::Notice { level: NoticeLevel::Info, message });
        }
        Verdict::Error(why) => out.push(warning(why.clone())),
        Verdict::Cancelled | Verdict::Blocked(_) => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(exit_code: Option<i32>, feedback: &str, stderr: &str) -> Round {
        Round { exit_code, feedback: feedback.into(), stderr: stderr.into() }
    }

    fn messages(events: Vec<EventKind>) -> Vec<String> {
        events
            .into_iter()
            .map(|e| match e {
                EventKind::Warning { message } => format!("Warning: {message}"),
                EventKind::Notice { message, .. } => message,
                other => panic!("unexpected event {other:?}"),
            })
            .collect()
    }

    #[test]
    fn rounds_print_swivals_lines() {
        let accept = round_events(2, 5, &Verdict::Accept, &rec(Some(0), "ok", ""));
        assert_eq!(messages(accept), ["Reviewer accepted the answer (round 2)"]);
        let retry = round_events(1, 5, &Verdict::Retry("fix it\n".into()), &rec(Some(1), "fix it\n", ""));
        assert_eq!(messages(retry), ["[review round 1] Reviewer requested changes:\nfix it"]);
        let capped = round_events(3, 3, &Verdict::Retry("more".into()), &rec(Some(1), "more", ""));
        assert_eq!(messages(capped), ["Warning: Max review rounds (3) reached, accepting answer"]);
        let why = "Reviewer exited with code 2, accepting answer as-is".to_owned();
        let exit2 = round_events(1, 5, &Verdict::Error(why.clone()), &rec(Some(2), "", "no VERDICT\n"));
        assert_eq!(messages(exit2), ["Warning: reviewer stderr: no VERDICT".to_owned(), format!("Warning: {why}")]);
        // stderr of any other exit code is not shown.
        let why = "Reviewer exited with code 7, accepting answer as-is".to_owned();
        let exit7 = round_events(1, 5, &Verdict::Error(why.clone()), &rec(Some(7), "", "noise"));
        assert_eq!(messages(exit7), [format!("Warning: {why}")]);
        assert!(round_events(1, 5, &Verdict::Blocked("x".into()), &rec(None, "", "")).is_empty());
    }

    #[test]
    fn feedback_message_starts_with_the_round_header() {
        let m = feedback_message(2, "fix the test");
        assert!(m.starts_with("[REVIEWER FEEDBACK — Round 2]\n"));
        assert!(m.ends_with("\n\nfix the test"));
    }
}
