//! `review/run`: Swival's reviewer mode as a daemon method. The review is
//! a session of its own (started from the reviewed session when one is
//! named, so the same model, config, trust and pipeline judge), whose one
//! run sends Swival's review prompt with no system prompt and no tools;
//! the verdict is the reply's last `VERDICT:` line.

use super::{NewRun, SessionError, Sessions};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use swival_protocol::{ReviewRunParams, ReviewRunResult, ReviewVerdict, SessionCreateParams, SessionFrom};

/// Swival's review prompt, its placeholders filled in [`prompt`].
const TEMPLATE: &str = "You are reviewing a coding agent's work.

<task>
{task}
</task>

{verification_section}<answer>
{answer}
</answer>

Evaluate whether the answer correctly and completely addresses the task.
{custom_instructions}
You MUST end your response with exactly one of these lines:
  VERDICT: ACCEPT
  VERDICT: RETRY

If RETRY, explain what needs to be fixed above the verdict line. Be specific and actionable.";

impl Sessions {
    /// `review/run`.
    pub async fn review(&self, p: ReviewRunParams) -> Result<ReviewRunResult, SessionError> {
        if p.answer.trim().is_empty() {
            return Err(SessionError::Refused("empty answer on stdin".to_owned()));
        }
        let created = self.create(review_session(&p)).await?;
        let config = &created.config;
        let key = |k: &str| config.get(k).and_then(Value::as_str).map(str::to_owned);
        let base = Path::new(&p.base_dir);
        let home = p.env.as_ref().and_then(|e| e.get("HOME")).map(PathBuf::from);
        let hidden = self.review_hidden(home.as_deref());
        let task = match p.objective.clone().or_else(|| key("objective")) {
            Some(file) => Some(read(base, &file, "--objective", &hidden)?),
            None => p.task.clone().filter(|t| !t.is_empty()),
        };
        let task = task.ok_or_else(|| {
            SessionError::Refused("no task description (set SWIVAL_TASK or use --objective)".to_owned())
        })?;
        let verification = match p.verify.clone().or_else(|| key("verify")) {
            Some(file) => Some(read(base, &file, "--verify", &hidden)?),
            None => None,
        };
        let instructions = p.review_prompt.clone().or_else(|| key("review_prompt"));
        let text = prompt(&task, &p.answer, verification.as_deref(), instructions.as_deref());
        let run = NewRun { task: text, client_token: None, resume: false, bare: true, goal: None, id: None };
        let run_id = self.start_run(&created.session_id, run, None).await?;
        let result = self.wait(&run_id).await?;
        let reply = result.answer.clone().unwrap_or_default();
        let failed = result.error.filter(|_| reply.is_empty()).map(|e| format!("LLM call failed: {e}"));
        let (verdict, exit_code) = match verdict(&reply) {
            Some(ReviewVerdict::Accept) => (ReviewVerdict::Accept, 0),
            Some(_) => (ReviewVerdict::Retry, 1),
            None => (ReviewVerdict::Error, 2),
        };
        let session_id = created.session_id;
        Ok(ReviewRunResult { session_id, run_id, verdict, text: reply, exit_code, error: failed })
    }

    /// Where a file a review puts in its prompt may not be read from: the
    /// credential stores and the daemon's own files. The daemon's config
    /// dir is where the user keeps Swival's files (global skills, the
    /// criteria a global `verify` names beside config.toml), so only the
    /// config files in it are hidden, not the directory.
    pub(super) fn review_hidden(&self, home: Option<&Path>) -> Vec<PathBuf> {
        let mut hidden = crate::sandbox::default_hidden(home);
        let config_dir = crate::paths::config_dir();
        for dir in &self.shared.settings.daemon_dirs {
            if *dir == config_dir {
                hidden.extend([crate::config::global_config_path(), config_dir.join("swivald.toml")]);
            } else {
                hidden.push(dir.clone());
            }
        }
        hidden.extend(self.shared.settings.global_config.iter().cloned());
        hidden
    }
}

/// The review's session: the caller's config (or the reviewed session's)
/// made into one bare model call that reviews nothing itself.
fn review_session(p: &ReviewRunParams) -> SessionCreateParams {
    let mut config: Map<String, Value> = p.config.as_ref().map(|c| c.0.clone()).unwrap_or_default();
    for (k, v) in [
        ("no_system_prompt", true),
        ("read_named_files", false),
        ("no_history", true),
        ("no_memory", true),
        ("no_continue", true),
        ("self_review", false),
        ("subagents", false),
    ] {
        config.insert(k.into(), v.into());
    }
    config.insert("max_turns".into(), 1.into());
    // A reviewer of the review would review forever.
    config.insert("reviewer".into(), Value::Null);
    SessionCreateParams {
        base_dir: p.base_dir.clone(),
        config: Some(config.into()),
        title: Some("review".to_owned()),
        trust: p.trust,
        env: p.env.clone(),
        from: p.session_id.clone().map(|session_id| SessionFrom { session_id, conversation: false }),
        worktree: false,
    }
}

/// A file the review reads (relative to the base dir), as Swival says it
/// when it cannot.
fn read(base: &Path, file: &str, flag: &str, hidden: &[PathBuf]) -> Result<String, SessionError> {
    crate::pipeline::reviewer::read_review_file(base, Path::new(file), hidden)
        .map_err(|e| SessionError::Refused(format!("cannot read {flag} file: {e}")))
}

/// Swival's review prompt.
fn prompt(task: &str, answer: &str, verification: Option<&str>, instructions: Option<&str>) -> String {
    let verification = verification.map_or_else(String::new, |v| {
        format!("<verification>\n{v}\n</verification>\n\nThe answer must satisfy these verification criteria.\n\n")
    });
    let custom = instructions.map_or_else(String::new, |c| format!("{c}\n\n"));
    TEMPLATE
        .replace("{verification_section}", &verification)
        .replace("{custom_instructions}", &custom)
        .replace("{task}", task)
        .replace("{answer}", answer)
}

/// The verdict of the reply's last `VERDICT: ACCEPT|RETRY` line.
fn verdict(reply: &str) -> Option<ReviewVerdict> {
    reply.lines().rev().find_map(|line| {
        let rest = line.trim().strip_prefix("VERDICT:").or_else(|| {
            let head = line.trim().get(..8)?;
            head.eq_ignore_ascii_case("VERDICT:").then(|| &line.trim()[8..])
        })?;
        match rest.trim().to_ascii_uppercase().as_str() {
            "ACCEPT" => Some(ReviewVerdict::Accept),
            "RETRY" => Some(ReviewVerdict::Retry),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_verdict_line_decides_in_any_case() {
        assert_eq!(verdict("looks fine\nVERDICT: ACCEPT"), Some(ReviewVerdict::Accept));
        assert_eq!(verdict("VERDICT: ACCEPT\nno wait\n  verdict: retry  "), Some(ReviewVerdict::Retry));
        assert_eq!(verdict("VERDICT: MAYBE"), None);
        assert_eq!(verdict("the VERDICT: ACCEPT is mid-line"), None);
    }

    #[test]
    fn the_prompt_is_swivals_with_its_optional_sections() {
        let bare = prompt("t", "a", None, None);
        assert!(bare.contains("<task>\nt\n</task>\n\n<answer>\na\n</answer>"), "{bare}");
        assert!(bare.contains("addresses the task.\n\nYou MUST"), "{bare}");
        let full = prompt("t", "a", Some("c"), Some("be strict"));
        assert!(full.contains("</task>\n\n<verification>\nc\n</verification>\n\nThe answer must satisfy"), "{full}");
        assert!(full.contains("addresses the task.\nbe strict\n\n\nYou MUST"), "{full}");
    }
}
