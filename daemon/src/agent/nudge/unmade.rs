//! An answer from a run that set out to change files and has no change
//! standing gets one nudge to make the change, or to say why none is
//! needed: a small model whose `delete_file build/` was refused answers
//! "I added a clean target", or undoes its own edit after being told it
//! broke the syntax and answers "Fixed".
//!
//! The run set out to change files when it called a tool that writes,
//! moves or deletes one (the registry's kinds), whether the call
//! succeeded or not; no change stands when every call that succeeded
//! only read (a read, a search, a fetch, a note), or when each file the
//! run wrote is back as it was before its first change and only writes
//! changed anything. A command or an MCP tool may have changed files, so
//! a run that ran one is never nudged, and a run that only read (a
//! summary, an explanation) never is either. The signals read no
//! language: the task and the answer are looked at only for a question
//! mark (a task that asks is answered, and an answer that asks back
//! waits for the user). Once a run.

use crate::toolcall::Change;
use crate::tools::registry;
use std::collections::BTreeMap;
use std::path::Path;
use swival_protocol::{ToolCounts, ToolKind};

/// What the run changed, to tell whether any change stands.
#[derive(Debug, Default)]
pub(in crate::agent) struct Unmade {
    /// Each file a write or edit changed, by its path from the base dir: a
    /// hash of its text before the run's first change of it (`None`: it
    /// did not exist) and after the last.
    changed: BTreeMap<String, (Option<u64>, u64)>,
    /// Whether a write or edit changed a file without saying how (one too
    /// large for its change to be kept, a move): nothing is known undone.
    untracked: bool,
    /// Whether the answer was nudged already.
    nudged: bool,
}

/// What the model is told when every change it tried failed.
pub(in crate::agent) const NONE_MADE: &str = "No change of this run stands: every change you tried failed, and \
every tool call that succeeded only read. Make the change the task asks for now (edit_file with old_string copied \
from the file, or write_file with the whole new content), then answer. If no change is needed, give your answer \
again and say why.";

/// Whether a call of `name` sets out to change a file.
fn writes(name: &str) -> bool {
    matches!(registry::kind(name), ToolKind::Edit | ToolKind::Move | ToolKind::Delete)
}

/// Whether a call of `name` only reads: it changes nothing, here or on
/// another server.
fn reads(name: &str) -> bool {
    matches!(
        registry::kind(name),
        ToolKind::Read | ToolKind::Search | ToolKind::Fetch | ToolKind::Think | ToolKind::Plan
    )
}

impl Unmade {
    /// Remember what a successful call of tool `name` changed, to a file
    /// under `base`: a file written whose bytes the change does not hold
    /// (a move, a deletion, one too large) is a change not known undone.
    pub(in crate::agent) fn changed(&mut self, name: &str, change: Option<&Change>, base: &Path) {
        let written = change.and_then(|c| Some((c, c.after.as_ref()?.bytes()?)));
        let Some((change, after)) = written.filter(|(c, _)| c.moved_from.is_none()) else {
            self.untracked |= change.is_some() || registry::kind(name) == ToolKind::Edit;
            return;
        };
        let before = match &change.before {
            Some(content) => match content.bytes() {
                Some(bytes) => Some(hash(bytes)),
                None => {
                    self.untracked = true;
                    return;
                }
            },
            None => None,
        };
        let path = change.path.strip_prefix(base).unwrap_or(&change.path).display().to_string();
        let after = hash(after);
        self.changed.entry(path).or_insert((before, after)).1 = after;
    }

    /// The files the run changed, when every change it made was undone
    /// (each file is as it was before its first change) and only writes
    /// and edits changed anything: `None` when a change stands, none was
    /// made, or another tool (a command) may have changed files.
    fn undone(&self, calls: &[(&str, &ToolCounts)]) -> Option<Vec<String>> {
        let writes_only =
            calls.iter().filter(|(_, c)| c.succeeded > 0).all(|(n, _)| reads(n) || registry::kind(n) == ToolKind::Edit);
        let all_back = self.changed.values().all(|(before, after)| *before == Some(*after));
        let known = writes_only && !self.untracked && !self.changed.is_empty();
        (known && all_back).then(|| self.changed.keys().cloned().collect())
    }

    /// The nudge for a final `answer` to `task`, given the run's tool
    /// `calls` (each tool's counts), when the run tried a change and none
    /// stands; `None` when one does, a command may have made one, none
    /// was tried, the task or the answer asks something, and after the
    /// run's one nudge.
    pub(in crate::agent) fn nudge<'a>(
        &mut self,
        task: &str,
        answer: &str,
        calls: impl Iterator<Item = (&'a String, &'a ToolCounts)>,
    ) -> Option<String> {
        if self.nudged || super::asks(task) || super::asks(answer) {
            return None;
        }
        let calls: Vec<(&str, &ToolCounts)> = calls.map(|(name, counts)| (name.as_str(), counts)).collect();
        let only_read = calls.iter().filter(|(_, c)| c.succeeded > 0).all(|(name, _)| reads(name));
        let tried = calls.iter().any(|(name, _)| writes(name));
        let undone = self.undone(&calls);
        if !(only_read && tried) && undone.is_none() {
            return None;
        }
        self.nudged = true;
        Some(match undone {
            Some(files) => format!(
                "No change of this run stands: {} {} as at the start of the run. If the task asks for a change, \
                 make it now, keeping the file valid, then answer. If the task asks for no change, or none is \
                 needed, give your answer again and say so.",
                files.join(", "),
                if files.len() == 1 { "is" } else { "are" }
            ),
            None => NONE_MADE.to_owned(),
        })
    }
}

/// A hash of a file's text, to tell whether it is back as it was.
fn hash(bytes: &[u8]) -> u64 {
    crate::tools::text_hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolcall::Content;

    /// Tool counts: `(name, succeeded, failed)`.
    fn counts(calls: &[(&str, u64, u64)]) -> Vec<(String, ToolCounts)> {
        calls.iter().map(|&(n, succeeded, failed)| (n.to_owned(), ToolCounts { succeeded, failed })).collect()
    }

    fn nudge(unmade: &mut Unmade, task: &str, answer: &str, calls: &[(&str, u64, u64)]) -> Option<String> {
        let calls = counts(calls);
        unmade.nudge(task, answer, calls.iter().map(|(n, c)| (n, c)))
    }

    /// A run's calls: `(name, succeeded, failed)`.
    type Calls<'a> = &'a [(&'a str, u64, u64)];

    const READ: &[(&str, u64, u64)] = &[("read_file", 1, 0), ("outline", 1, 0)];
    const FAILED: &[(&str, u64, u64)] = &[("read_file", 1, 0), ("edit_file", 0, 2)];
    const EDITED: &[(&str, u64, u64)] = &[("read_file", 1, 0), ("edit_file", 1, 0)];

    #[test]
    fn an_answer_after_changes_that_all_failed_is_nudged_in_every_language_unless_a_question_is_asked() {
        let refused = &[("read_file", 1, 0), ("delete_file", 0, 2)];
        let cases: &[(&str, &str, Calls, bool)] = &[
            ("Set the timeout in settings.json to 60.", "I changed the timeout to 60.", FAILED, true),
            ("Mets le timeout de settings.json à 60.", "J'ai changé le timeout à 60.", FAILED, true),
            ("Setze den Timeout in settings.json auf 60.", "Timeout auf 60 geändert.", FAILED, true),
            ("把 settings.json 的 timeout 设为 60。", "已将 timeout 改为 60。", FAILED, true),
            ("add a clean target to the Makefile", "Added a clean target, declared .PHONY.", refused, true),
            ("Ajoute une cible clean au Makefile", "Cible clean ajoutée.", refused, true),
            // Nothing tried: a summary, an explanation, a reply read off a file.
            ("Summarize the README.", "It is a calculator daemon.", READ, false),
            ("Résume le README.", "C'est un démon calculatrice.", READ, false),
            ("Set the timeout in settings.json to 60.", "I changed the timeout to 60.", READ, false),
            ("t", "the whole answer", &[], false),
            // A change stands, or a command may have made one.
            ("Set the timeout to 60.", "Done.", EDITED, false),
            ("Mets le timeout à 60.", "Fait.", EDITED, false),
            ("Set it to 60.", "With sed.", &[("edit_file", 0, 1), ("run_command", 1, 0)], false),
            ("Set it to 60.", "Done.", &[("edit_file", 0, 1), ("mcp__fs__write", 1, 0)], false),
            // A question is answered; an answer asking back waits.
            ("Which function handles /password-reset?", "reset_password in routes.py", FAILED, false),
            ("Quelle fonction gère /password-reset ?", "reset_password dans routes.py", FAILED, false),
            ("Welche Funktion verarbeitet /password-reset?", "reset_password in routes.py", FAILED, false),
            ("Add a default name to greet.", "Which default name do you want?", FAILED, false),
            ("Ajoute un nom par défaut à greet.", "Quel nom par défaut voulez-vous ?", FAILED, false),
        ];
        for &(task, answer, calls, nudged) in cases {
            let mut unmade = Unmade::default();
            let said = nudge(&mut unmade, task, answer, calls);
            assert_eq!(said.is_some(), nudged, "{task} / {answer}: {said:?}");
            if nudged {
                assert_eq!(said.as_deref(), Some(NONE_MADE));
                assert_eq!(nudge(&mut unmade, task, answer, calls), None, "once a run");
            }
        }
    }

    fn change(path: &str, old: Option<&str>, new: &str) -> Change {
        let text = |t: &str| Content::file(t.as_bytes(), 0o100644);
        Change::written(path.into(), old.map(text), text(new))
    }

    #[test]
    fn an_answer_after_every_change_was_undone_is_nudged_once() {
        let base = Path::new("/p");
        let edited = [("read_file", 1, 0), ("edit_file", 2, 0)];
        let task = "greet() in hello.py should end with an exclamation mark. Fix it.";
        let mut unmade = Unmade::default();
        unmade.changed("edit_file", Some(&change("/p/hello.py", Some("a\n"), "a!\n")), base);
        assert_eq!(nudge(&mut unmade, task, "Done.", &edited), None, "the change stands");
        unmade.changed("edit_file", Some(&change("/p/hello.py", Some("a!\n"), "a\n")), base);
        let said = nudge(&mut unmade, task, "Fixed the syntax error in hello.py.", &edited).unwrap();
        assert!(said.starts_with("No change of this run stands: hello.py is as at the start of the run"), "{said}");
        assert_eq!(nudge(&mut unmade, task, "Fixed it.", &edited), None, "once a run");
        let undone = || {
            let mut u = Unmade::default();
            u.changed("edit_file", Some(&change("/p/a.py", Some("x"), "y")), base);
            u.changed("edit_file", Some(&change("/p/a.py", Some("y"), "x")), base);
            u
        };
        assert!(nudge(&mut undone(), task, "def greet(name): ...", &edited).is_some());
        let ran = [("edit_file", 2, 0), ("run_command", 1, 0)];
        assert_eq!(nudge(&mut undone(), task, "Fixed it.", &ran), None, "a command may have changed files");
        // A file created and then emptied is not back as it was.
        let mut created = Unmade::default();
        created.changed("write_file", Some(&change("/p/new.py", None, "")), base);
        assert_eq!(nudge(&mut created, task, "Fixed it.", &edited), None);
        // A change not shown (a file too large to keep it) may stand.
        let mut large = undone();
        large.changed("write_file", None, base);
        assert_eq!(nudge(&mut large, task, "Fixed it.", &edited), None);
        let mut read = undone();
        read.changed("read_file", None, base);
        assert!(nudge(&mut read, task, "Fixed it.", &edited).is_some());
    }
}
