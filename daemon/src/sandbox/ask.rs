//! `commands = "ask"`: every command waits for a user's approval, per
//! Swival's *bucket* (`git push`, `python3 -c`, `rm`, …), which is also
//! what an "always" answer covers. The question goes out as an
//! `approval_requested` event; any client may answer it with
//! `run/approve` (swivalctl on a terminal, an editor through `swivalctl
//! acp`). No answer within the timeout is a rejection: policy fails closed.
//!
//! Pre-approval comes only from the user's config (`approved_buckets`).
//! Swival also reads `.swival/approved_buckets`, a file under the base
//! directory, which the model can write; swivald does not.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use swival_protocol::{ApprovalDecision, SessionId};
use tokio::sync::oneshot;

/// Programs whose bucket keeps the next word (`uv run pytest`).
const ONE_MORE_WORD: &[&[&str]] = &[&["uv", "run"], &["python3", "-m"], &["python", "-m"], &["npm", "run"]];
/// Buckets of two or three fixed words.
const FIXED: &[&[&str]] = &[
    &["uv", "pip", "install"],
    &["cargo", "test"],
    &["go", "test"],
    &["npm", "test"],
    &["npm", "install"],
    &["pip", "install"],
    &["git", "push"],
    &["git", "reset"],
    &["git", "clean"],
];
/// Interpreters, whose inline code or temporary script gets its own bucket.
const INTERPRETERS: &[&str] = &["python3", "python", "bash", "sh", "node", "bun", "ruby", "perl"];
/// Swival's high-risk buckets.
const HIGH_RISK: &[&str] = &[
    "rm",
    "git push",
    "git reset",
    "git clean",
    "docker",
    "kubectl",
    "curl",
    "wget",
    "npm install",
    "pip install",
    "uv pip install",
    "uv run -c",
    "<shell>",
    "bash -c",
    "sh -c",
    "python3 -c",
    "python -c",
    "node -e",
    "bun -e",
    "ruby -e",
    "ruby -c",
    "perl -e",
    "perl -c",
];

/// Swival's bucket of an argv.
pub fn bucket(argv: &[String]) -> String {
    let Some(first) = argv.first() else { return String::new() };
    let name = if first.contains('/') || first.contains('\\') { first.clone() } else { basename(first).to_owned() };
    let words: Vec<&str> = argv.iter().map(String::as_str).collect();
    let short = basename(first);
    let matches =
        |prefix: &[&str]| words.len() >= prefix.len() && short == prefix[0] && words[1..prefix.len()] == prefix[1..];
    if let Some(fixed) = FIXED.iter().find(|p| matches(p)) {
        return fixed.join(" ");
    }
    if let Some(prefix) = ONE_MORE_WORD.iter().find(|p| words.len() > p.len() && matches(p)) {
        return format!("{} {}", prefix.join(" "), words[prefix.len()]);
    }
    if INTERPRETERS.contains(&short) {
        if let Some(arg) = words.get(1) {
            if arg.starts_with("/tmp/") || arg.contains(".swival/tmp/") {
                return format!("{name} <temp-script>");
            }
        }
        let flags: Vec<&str> =
            words[1..].iter().take_while(|w| w.starts_with('-') && !w.starts_with("--")).copied().collect();
        if flags.iter().any(|f| f.contains('c')) {
            return format!("{name} -c");
        }
        if flags.iter().any(|f| f.contains('e')) {
            return format!("{name} -e");
        }
    }
    name
}

/// Whether Swival calls a bucket high-risk (path forms match by basename).
pub fn high_risk(bucket: &str) -> bool {
    let (program, rest) = bucket.split_once(' ').unwrap_or((bucket, ""));
    let short = basename(program);
    let key = if rest.is_empty() { short.to_owned() } else { format!("{short} {rest}") };
    HIGH_RISK.contains(&key.as_str())
}

fn basename(p: &str) -> &str {
    p.rsplit(['/', '\\']).next().unwrap_or(p)
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

/// One session's ask mode: the buckets answered for the whole session.
#[derive(Debug)]
pub struct AskGate {
    /// Where questions wait.
    pub approvals: Arc<Approvals>,
    /// How long a run waits for an answer.
    pub timeout: Duration,
    /// `(allowed, rejected)` buckets.
    answered: Mutex<(BTreeSet<String>, BTreeSet<String>)>,
}

impl AskGate {
    /// A gate with the buckets the user's config approves.
    pub fn new(approvals: Arc<Approvals>, timeout: Duration, approved: &[String]) -> AskGate {
        let allowed = approved.iter().map(|b| b.trim().to_owned()).filter(|b| !b.is_empty()).collect();
        AskGate { approvals, timeout, answered: Mutex::new((allowed, BTreeSet::new())) }
    }

    /// Whether the session already answered for `bucket`.
    pub fn known(&self, bucket: &str) -> Option<bool> {
        let a = self.answered.lock().unwrap_or_else(|e| e.into_inner());
        if a.0.contains(bucket) {
            Some(true)
        } else if a.1.contains(bucket) {
            Some(false)
        } else {
            None
        }
    }

    /// Keep an "always" answer for the session.
    pub fn remember(&self, bucket: &str, decision: ApprovalDecision) {
        let mut a = self.answered.lock().unwrap_or_else(|e| e.into_inner());
        match decision {
            ApprovalDecision::AllowAlways => a.0.insert(bucket.to_owned()),
            ApprovalDecision::RejectAlways => a.1.insert(bucket.to_owned()),
            _ => false,
        };
    }
}

/// The tool result of a command the user did not approve.
pub fn denied(bucket: &str) -> String {
    format!(
        "error: user denied command bucket '{bucket}'. Do not retry this command or another of its kind; \
         continue without it, or explain what you need in your answer."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(argv: &[&str]) -> String {
        bucket(&argv.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn buckets_follow_swivals_rules() {
        assert_eq!(b(&["git", "push", "origin", "main"]), "git push");
        assert_eq!(b(&["git", "status"]), "git");
        assert_eq!(b(&["uv", "run", "pytest", "-q"]), "uv run pytest");
        assert_eq!(b(&["python3", "-m", "pytest"]), "python3 -m pytest");
        assert_eq!(b(&["cargo", "test", "--all"]), "cargo test");
        assert_eq!(b(&["/usr/bin/ls", "-l"]), "/usr/bin/ls");
        assert_eq!(b(&["bash", "-lc", "echo hi"]), "bash -c");
        assert_eq!(b(&["perl", "-e", "print 1"]), "perl -e");
        assert_eq!(b(&["python3", "/tmp/x.py"]), "python3 <temp-script>");
        assert_eq!(b(&["python3", "script.py"]), "python3");
    }

    #[test]
    fn high_risk_buckets_match_by_basename() {
        assert!(high_risk("rm"));
        assert!(high_risk("/bin/bash -c"));
        assert!(high_risk("git push"));
        assert!(!high_risk("git"));
        assert!(!high_risk("ls"));
    }

    #[test]
    fn an_answer_reaches_only_its_own_sessions_question() {
        let approvals = Approvals::default();
        let mine = SessionId("s1".into());
        let (id, mut rx) = approvals.ask(&mine);
        assert!(!approvals.answer(&SessionId("s2".into()), &id, ApprovalDecision::AllowOnce));
        assert!(approvals.answer(&mine, &id, ApprovalDecision::RejectOnce));
        assert_eq!(rx.try_recv().unwrap(), ApprovalDecision::RejectOnce);
        assert!(!approvals.answer(&mine, &id, ApprovalDecision::AllowOnce), "answered twice");
    }

    #[test]
    fn always_answers_hold_for_the_session() {
        let gate = AskGate::new(Arc::default(), Duration::from_secs(1), &["make".into()]);
        assert_eq!(gate.known("make"), Some(true));
        assert_eq!(gate.known("rm"), None);
        gate.remember("rm", ApprovalDecision::RejectAlways);
        gate.remember("ls", ApprovalDecision::AllowOnce);
        assert_eq!(gate.known("rm"), Some(false));
        assert_eq!(gate.known("ls"), None);
    }
}
