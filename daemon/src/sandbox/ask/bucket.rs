//! What a command is asked as: Swival's *bucket* (`git push`, `python3
//! -c`, `rm`, …) for an ordinary use, made harder to steer, and for a use
//! whose arguments make the program run other code the bucket of that
//! risk ([`super::risky`]), high-risk and asked every time.

use super::display;
use super::lists::{inline_code, interpreter_bucket, FIXED, HIGH_RISK, INTERPRETERS, ONE_MORE_WORD, RUNNERS};
use super::risky::{self, Pattern};

/// How one command line is asked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    /// What an answer names and "always" covers (control characters escaped).
    pub bucket: String,
    /// Swival's high-risk list, a path, or a risky use.
    pub high_risk: bool,
    /// Why it is high-risk, as the user reads it.
    pub reason: Option<String>,
    /// The arguments carry the code that runs: asked every time, an
    /// "always" answer allows it once (only `approved_buckets` pre-approves).
    pub every_time: bool,
}

/// How `argv` is asked: the bucket of a risky use it makes (after any
/// runner such as `uv run`), else Swival's bucket.
pub fn classify(argv: &[String]) -> Verdict {
    let words: Vec<&str> = argv.iter().map(String::as_str).collect();
    if words.is_empty() {
        return Verdict::default();
    }
    let Some(at) = runner_end(&words) else {
        let reason = "runs the command given after options swivald does not read".to_owned();
        return Verdict { bucket: display(&argv.join(" ")), high_risk: true, reason: Some(reason), every_time: true };
    };
    let program = program_name(words[at]);
    let hits = super::matcher::find(program, &words[at + 1..]);
    if let Some(hit) = hits.first() {
        let head = words[..=at].join(" ");
        let bucket = match (hit.pattern, &hit.name) {
            (Pattern::Wrapper, _) => argv.join(" "),
            (_, Some(name)) => format!("{head} {name}"),
            (_, None) => format!("{head} {}", inline_code(program, &words[at + 1..]).unwrap_or_default()),
        };
        let mut reasons: Vec<&str> = Vec::new();
        for h in &hits {
            if !reasons.contains(&h.reason) {
                reasons.push(h.reason);
            }
        }
        let reason = Some(reasons.join("; "));
        return Verdict { bucket: display(&bucket), high_risk: true, reason, every_time: true };
    }
    let bucket = bucket(argv);
    let reason = high_risk_reason(&bucket);
    Verdict { high_risk: reason.is_some(), reason: reason.map(str::to_owned), bucket, every_time: false }
}

/// Where the program a runner runs starts (`uv run pytest` → 2); `None`
/// when options follow the runner's words, which swivald does not read.
fn runner_end(words: &[&str]) -> Option<usize> {
    let mut at = 0;
    while RUNNERS.contains(&program_name(words[at])) && words.get(at + 1) == Some(&"run") {
        let mut next = at + 2;
        if words.get(next) == Some(&"--") {
            next += 1;
        }
        match words.get(next) {
            None => return Some(at),
            Some(w) if w.starts_with('-') => return None,
            Some(_) => at = next,
        }
    }
    Some(at)
}

/// A program's name without directory and version suffix (`python3.11`
/// → `python3`).
pub fn program_name(program: &str) -> &str {
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    match name.split_once('.') {
        Some((stem, ver)) if !ver.is_empty() && ver.chars().all(|c| c.is_ascii_digit() || c == '.') => stem,
        _ => name,
    }
}

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
    if risky::WRAPPERS.contains(&name) {
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
    if let (_, Some(at)) = super::scripts::git_globals(&words[1..]) {
        out.extend(&words[1 + at..]);
    }
    out
}

/// Why a Swival bucket is high-risk; `None` when it is not. Swival's
/// list, every bucket of a whole command line (a wrapper) and every path.
pub fn high_risk_reason(bucket: &str) -> Option<&'static str> {
    let program = bucket.split(' ').next().unwrap_or(bucket);
    if let Some((_, reason)) = HIGH_RISK.iter().find(|(b, _)| *b == bucket) {
        return Some(reason);
    }
    if risky::WRAPPERS.contains(&program) {
        return Some("runs the command given in its arguments");
    }
    program.contains('/').then_some("runs a program by its path, which may be one the model wrote")
}

/// Whether a bucket is high-risk ([`high_risk_reason`]).
#[cfg(test)]
pub fn high_risk(bucket: &str) -> bool {
    high_risk_reason(bucket).is_some()
}
