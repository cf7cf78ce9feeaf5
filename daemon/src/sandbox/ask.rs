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
const INTERPRETERS: &[&str] =
    &["python3", "python", "bash", "sh", "zsh", "dash", "node", "bun", "deno", "ruby", "perl"];
/// Options of an interpreter that run code given on the command line.
const INLINE_CODE: &[&str] = &["--command", "--eval", "--print", "--exec", "-p", "-E", "-x"];
/// Programs that run another program: their bucket is the whole command,
/// high-risk, so an answer for one never covers another.
const WRAPPERS: &[&str] = &[
    "env", "nice", "nohup", "timeout", "xargs", "sudo", "doas", "command", "exec", "stdbuf", "time", "setsid",
    "chroot", "unshare", "busybox", "find",
];
/// Swival's high-risk buckets, and a few more of the same kind.
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
    "python3 -m pip",
    "python -m pip",
    "<shell>",
    "bash -c",
    "sh -c",
    "zsh -c",
    "dash -c",
    "python3 -c",
    "python -c",
    "node -e",
    "bun -e",
    "deno -e",
    "ruby -e",
    "ruby -c",
    "perl -e",
    "perl -c",
];

/// Swival's bucket of an argv, made harder to steer: the word rules apply
/// only to a bare program name (`./bin/cargo test` is its own path, never
/// `cargo test`); git's global options are skipped to find its
/// subcommand (`git -C . push` is `git push`); an interpreter with any
/// inline-code option is `<name> -c` or `-e`; a program that runs another
/// (`env`, `xargs`, `timeout`, …) is bucketed by its whole command line.
pub fn bucket(argv: &[String]) -> String {
    let Some(first) = argv.first() else { return String::new() };
    if first.contains('/') || first.contains('\\') {
        return display(first);
    }
    let name = first.as_str();
    if WRAPPERS.contains(&name) {
        return display(&argv.join(" "));
    }
    let mut words: Vec<&str> = argv.iter().map(String::as_str).collect();
    if name == "git" {
        words = git_words(&words);
    }
    if name == "npm" && words.get(1).is_some_and(|w| matches!(*w, "i" | "add" | "ci")) {
        words[1] = "install";
    }
    let matches = |prefix: &[&str]| words.len() >= prefix.len() && words[..prefix.len()] == *prefix;
    if let Some(fixed) = FIXED.iter().find(|p| matches(p)) {
        return fixed.join(" ");
    }
    if let Some(prefix) = ONE_MORE_WORD.iter().find(|p| words.len() > p.len() && matches(p)) {
        return display(&format!("{} {}", prefix.join(" "), words[prefix.len()]));
    }
    if INTERPRETERS.contains(&name) {
        if let Some(b) = interpreter_bucket(name, &words[1..]) {
            return b;
        }
    }
    display(name)
}

/// `git` followed by its subcommand and arguments, its global options
/// (`-C dir`, `-c k=v`, `--git-dir=…`, `--no-pager`, …) left out.
fn git_words<'a>(words: &[&'a str]) -> Vec<&'a str> {
    let mut out = vec![words[0]];
    let mut rest = words[1..].iter();
    while let Some(w) = rest.next() {
        match *w {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path" => {
                rest.next();
            }
            w if w.starts_with('-') => {}
            w => {
                out.push(w);
                out.extend(rest);
                break;
            }
        }
    }
    out
}

/// An interpreter's bucket when it runs inline code or a temporary script.
fn interpreter_bucket(name: &str, args: &[&str]) -> Option<String> {
    if let Some(first) = args.first() {
        if first.starts_with("/tmp/") || first.contains(".swival/tmp/") {
            return Some(format!("{name} <temp-script>"));
        }
    }
    let short = |a: &&&str, c: char| a.starts_with('-') && !a.starts_with("--") && a.contains(c);
    if args.iter().any(|a| short(&a, 'c') || *a == "--command") {
        return Some(format!("{name} -c"));
    }
    if args.iter().any(|a| short(&a, 'e') || INLINE_CODE.contains(a)) {
        return Some(format!("{name} -e"));
    }
    None
}

/// Whether a bucket is high-risk: Swival's list, and every bucket of a
/// whole command line (a wrapper) or a path.
pub fn high_risk(bucket: &str) -> bool {
    let program = bucket.split(' ').next().unwrap_or(bucket);
    HIGH_RISK.contains(&bucket) || WRAPPERS.contains(&program) || program.contains('/')
}

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
    fn the_model_cannot_steer_a_command_into_a_milder_bucket() {
        // A program it wrote is its own path, never the trusted name.
        assert_eq!(b(&["./bin/cargo", "test"]), "./bin/cargo");
        assert_eq!(b(&["/tmp/x/git", "push"]), "/tmp/x/git");
        // git's global options do not hide the subcommand.
        assert_eq!(b(&["git", "-C", ".", "push"]), "git push");
        assert_eq!(b(&["git", "--no-pager", "-c", "core.sshCommand=x", "reset", "--hard"]), "git reset");
        // Inline code is inline code wherever the option sits.
        assert_eq!(b(&["bash", "--norc", "-c", "id"]), "bash -c");
        assert_eq!(b(&["bash", "-o", "posix", "-c", "id"]), "bash -c");
        assert_eq!(b(&["python3", "-W", "ignore", "-c", "1"]), "python3 -c");
        assert_eq!(b(&["node", "--eval", "1"]), "node -e");
        assert_eq!(b(&["perl", "-E", "say 1"]), "perl -e");
        // Wrappers are bucketed by the whole command, and high-risk.
        assert_eq!(b(&["env", "FOO=1", "rm", "-rf", "x"]), "env FOO=1 rm -rf x");
        assert!(high_risk(&b(&["timeout", "5", "ls"])));
        assert_eq!(b(&["npm", "i", "left-pad"]), "npm install");
        assert_eq!(b(&["python3", "-m", "pip", "install", "x"]), "python3 -m pip");
        // Control characters are shown escaped.
        assert_eq!(display("ls\x1b[2K\rrm"), "ls\\u{1b}[2K\\rrm");
    }

    #[test]
    fn high_risk_buckets() {
        assert!(high_risk("rm"));
        assert!(high_risk("bash -c"));
        assert!(high_risk("git push"));
        assert!(high_risk("python3 -m pip"));
        assert!(high_risk("./bin/cargo"));
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
