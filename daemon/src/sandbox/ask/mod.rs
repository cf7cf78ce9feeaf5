//! `commands = "ask"`: every command waits for a user's approval. Commands
//! are grouped in Swival's *buckets* (`git push`, `python3 -c`, `rm`, …),
//! which name the question and what "never" rejects; an "always" answer
//! covers the command as approved, its *shape* ([`shape`]: the exact
//! words, paths inside the project aside), and a command with any word the
//! user did not see is asked again, naming it. The question goes out as an
//! `approval_requested` event; any client may answer it with
//! `run/approve` (swivalctl on a terminal, an editor through `swivalctl
//! acp`). No answer within the timeout is a rejection: policy fails closed.
//!
//! An answer is bound to what will run. A use whose arguments make the
//! program run other code (`git -c core.fsmonitor=…`, `awk system()`,
//! `sed e`, `find -exec`, `env …`) has its own bucket, high-risk, asked
//! every time ([`risky`], [`bucket`]). A command that runs a file changed
//! during the session — a script, a Makefile, `package.json`, git's
//! hooks ([`files`]) — is asked again, naming the files, whatever was
//! answered for its bucket before ([`changes`]).
//!
//! Pre-approval comes only from the user's config (`approved_buckets`).
//! Swival also reads `.swival/approved_buckets`, a file under the base
//! directory, which the model can write; swivald does not.

pub mod bucket;
pub mod changes;
pub mod files;
mod lists;
mod matcher;
pub mod risky;
mod scripts;
mod sed;
pub mod shape;
#[cfg(test)]
mod tests;

#[cfg(test)]
use bucket::{bucket, high_risk};
pub use bucket::{classify, Verdict};
pub use changes::Changed;
pub use files::code_files;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use swival_protocol::{ApprovalDecision, SessionId};
use tokio::sync::oneshot;

/// `s` with control characters escaped, so a command shown to a user
/// cannot redraw the terminal or hide part of itself.
pub fn display(s: &str) -> String {
    s.chars().flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] }).collect()
}

/// The questions waiting for an answer, daemon-wide.
#[derive(Debug, Default)]
pub struct Approvals {
    pending: Mutex<HashMap<String, (SessionId, oneshot::Sender<ApprovalDecision>)>>,
}

impl Approvals {
    /// A new question for `session`: its id, and where the answer arrives.
    pub fn ask(&self, session: &SessionId) -> (String, oneshot::Receiver<ApprovalDecision>) {
        let id = format!("a_{:016x}", rand::random::<u64>());
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id.clone(), (session.clone(), tx));
        (id, rx)
    }

    /// Answer a question of `session`; false when none such waits.
    pub fn answer(&self, session: &SessionId, id: &str, decision: ApprovalDecision) -> bool {
        let mut pending = self.lock();
        match pending.get(id) {
            Some((owner, _)) if owner == session => {}
            _ => return false,
        }
        let (_, tx) = pending.remove(id).expect("checked above");
        tx.send(decision).is_ok()
    }

    /// Drop a question nobody answered.
    pub fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (SessionId, oneshot::Sender<ApprovalDecision>)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A question's place in [`Approvals`], given up when this drops.
pub struct Pending<'a>(pub &'a Approvals, pub String);

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.0.forget(&self.1);
    }
}

/// One session's ask mode: the buckets answered for the whole session,
/// and the files changed in it.
#[derive(Debug)]
pub struct AskGate {
    /// Where questions wait.
    pub approvals: Arc<Approvals>,
    /// How long a run waits for an answer.
    pub timeout: Duration,
    /// What the session answered, and what changed in it.
    answered: Mutex<Answers>,
}

/// A session's answers.
#[derive(Debug)]
struct Answers {
    /// Buckets the user's config approves whole (`approved_buckets`).
    buckets: BTreeSet<String>,
    /// Command shapes allowed always, by bucket (`shape.rs`).
    shapes: BTreeMap<String, BTreeSet<Vec<String>>>,
    /// Buckets rejected for the session.
    rejected: BTreeSet<String>,
    /// Files changed in the session, and contents "always" covered.
    changes: changes::Changes,
}

impl AskGate {
    /// A gate with the buckets the user's config approves; files changed
    /// from now on are the session's.
    pub fn new(approvals: Arc<Approvals>, timeout: Duration, approved: &[String]) -> AskGate {
        let buckets = approved.iter().map(|b| b.trim().to_owned()).filter(|b| !b.is_empty()).collect();
        let changes = changes::Changes::new(SystemTime::now());
        let answers = Answers { buckets, shapes: BTreeMap::new(), rejected: BTreeSet::new(), changes };
        AskGate { approvals, timeout, answered: Mutex::new(answers) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Answers> {
        self.answered.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the session already answered for a command of `bucket`
    /// and `shape` that runs `changed`: a rejection holds for every
    /// command of the bucket; an approval for the same shape only (or any
    /// of a bucket the config approves), and only when it runs no changed
    /// file.
    pub fn known(&self, bucket: &str, shape: &[String], changed: &[Changed]) -> Option<bool> {
        let a = self.lock();
        let approved = a.buckets.contains(bucket) || a.shapes.get(bucket).is_some_and(|s| s.contains(shape));
        if a.rejected.contains(bucket) {
            Some(false)
        } else if approved && changed.is_empty() {
            Some(true)
        } else {
            None
        }
    }

    /// The words of `shape` that no "always" of the session for the same
    /// program saw (empty when none was given, or when this very command
    /// was approved for `bucket`).
    pub fn unseen(&self, bucket: &str, shape: &[String]) -> Vec<String> {
        let a = self.lock();
        if a.shapes.get(bucket).is_some_and(|s| s.contains(shape)) {
            return Vec::new();
        }
        let same_program = a.shapes.values().flatten().filter(|s| s.first() == shape.first()).cloned().collect();
        shape::unseen(shape, &same_program)
    }

    /// Keep an "always" answer for the session: an approval for the
    /// command's `shape`, never for a bucket asked `every_time` (an "allow
    /// always" there allows this command once), covering the `changed`
    /// files as they are now; a rejection for the whole bucket.
    pub fn remember(&self, verdict: &Verdict, shape: &[String], decision: ApprovalDecision, changed: &[Changed]) {
        let bucket = verdict.bucket.as_str();
        let mut a = self.lock();
        match decision {
            ApprovalDecision::AllowAlways if !verdict.every_time => {
                a.shapes.entry(bucket.to_owned()).or_default().insert(shape.to_vec());
                a.changes.cover(bucket, changed);
            }
            ApprovalDecision::RejectAlways => {
                a.rejected.insert(bucket.to_owned());
            }
            _ => {}
        }
    }

    /// A file tool of the session wrote `path`.
    pub fn wrote(&self, path: &Path) {
        self.lock().changes.wrote(path);
    }

    /// The files among `files` changed in the session that no "always"
    /// for `bucket` covered. Reads and hashes files: call it off the
    /// runtime's threads.
    pub fn changed(&self, bucket: &str, files: &[PathBuf]) -> Vec<Changed> {
        // The hashing happens under the lock: questions of one session
        // come one at a time anyway.
        self.lock().changes.changed(bucket, files)
    }
}

/// The tool result of a command the user did not approve.
pub fn denied(bucket: &str) -> String {
    format!(
        "error: user denied command bucket '{bucket}'. Do not retry this command or another of its kind; \
         continue without it, or explain what you need in your answer."
    )
}
