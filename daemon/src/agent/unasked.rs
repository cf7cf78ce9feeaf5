//! Changes accounted for in the answer, both ways. A file `delete_file`
//! removed though the task named only something inside it
//! (`tools/asked.rs`) is remembered, and a final answer that does not
//! mention it gets one nudge to say why the whole file went or to put it
//! back (once a run, as the look-first nudge). A file already back in
//! place needs no word. And an answer that says it changed something, to
//! a task asking for a change, in a run whose every successful tool call
//! only read, gets one nudge to make the change first: a small model
//! answers "I changed the timeout to 60" after reading the file once.

use crate::toolcall::UnaskedDelete;
use std::path::Path;

/// The run's deletions the task did not ask for.
#[derive(Debug, Default)]
pub(super) struct Unasked {
    /// The deletions, in order.
    deleted: Vec<UnaskedDelete>,
    /// Whether the answer was nudged already.
    nudged: bool,
    /// Whether an answer claiming an unmade change was nudged already.
    unmade_nudged: bool,
}

/// Tools that change nothing: a run whose successful calls are all of
/// these made no change.
const READING: &[&str] =
    &["read_file", "read_multiple_files", "list_files", "grep", "outline", "think", "todo", "fetch_url"];

/// Words of a task that asks for a change.
const ASKING: &[&str] = &[
    "fix",
    "change",
    "set",
    "rename",
    "add",
    "remove",
    "delete",
    "create",
    "update",
    "replace",
    "make",
    "write",
    "edit",
    "implement",
    "refactor",
    "move",
    "correct",
    "insert",
    "append",
    "bump",
    "increase",
    "decrease",
    "convert",
];

/// Words of an answer that says a change was made.
const CLAIMING: &[&str] = &[
    "changed",
    "updated",
    "fixed",
    "renamed",
    "added",
    "removed",
    "created",
    "replaced",
    "modified",
    "edited",
    "deleted",
    "corrected",
    "wrote",
    "moved",
    "inserted",
    "appended",
    "implemented",
    "refactored",
    "converted",
    "increased",
    "decreased",
    "bumped",
    "set",
];

/// Words of an answer that says no change was needed or made.
const DENYING: &[&str] = &["already", "nothing", "unchanged"];

/// The nudge for an answer claiming a change nobody made.
pub(super) const UNMADE_NUDGE: &str = "Your answer says you made a change, but no file was changed in this run: \
every tool call so far only read. Make the change the task asks for (edit_file with old_string copied from the \
file, or write_file with the whole new content), then answer.";

impl Unasked {
    /// Remember a deletion the task did not ask for.
    pub(super) fn deleted(&mut self, deletion: UnaskedDelete) {
        self.deleted.push(deletion);
    }

    /// The nudge for a final `answer` that does not mention a file deleted
    /// unasked and not restored under `base`; `None` when there is none,
    /// or after the run's one nudge.
    pub(super) fn nudge(&mut self, answer: &str, base: &Path) -> Option<String> {
        if self.nudged {
            return None;
        }
        let answer = answer.to_lowercase();
        let unmentioned: Vec<String> = self
            .deleted
            .iter()
            .filter(|d| !base.join(&d.path).exists() && !mentions(&answer, &d.path))
            .map(|d| {
                format!(
                    "You deleted {} (now {}), though the task named only {} inside it, and your answer does not say \
                     so. If deleting the whole file was right, answer again and say why; if not, restore it with \
                     write_file(file_path=\"{}\", move_from=\"{}\"), make the change the task asked for, then answer.",
                    d.path,
                    d.trashed,
                    crate::tools::listed(&d.named),
                    d.path,
                    d.trashed
                )
            })
            .collect();
        self.nudged = !unmentioned.is_empty();
        self.nudged.then(|| unmentioned.join("\n"))
    }

    /// The nudge for a final `answer` to `task` that claims a change when
    /// the tools that succeeded (`succeeded`) only read; `None` otherwise,
    /// for a question, and after the run's one nudge.
    pub(super) fn unmade<'a>(
        &mut self,
        task: &str,
        answer: &str,
        mut succeeded: impl Iterator<Item = &'a str>,
    ) -> Option<&'static str> {
        let asks = !task.trim_end().ends_with('?') && has_word(task, ASKING);
        // "It is already fixed; nothing to change" claims nothing.
        let claims = has_word(answer, CLAIMING) && !has_word(answer, DENYING);
        if self.unmade_nudged || !asks || !claims || !succeeded.all(|t| READING.contains(&t)) {
            return None;
        }
        self.unmade_nudged = true;
        Some(UNMADE_NUDGE)
    }
}

/// Whether `text` has one of `words` as a word, in any case.
fn has_word(text: &str, words: &[&str]) -> bool {
    text.to_lowercase().split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| words.contains(&w))
}

/// Whether `answer` (lowercase) names the file `path`, by its path or its
/// file name.
fn mentions(answer: &str, path: &str) -> bool {
    let path = path.trim_start_matches("./").to_lowercase();
    let name = Path::new(&path).file_name().and_then(|n| n.to_str()).unwrap_or(&path).to_owned();
    answer.contains(&path) || answer.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deletion() -> UnaskedDelete {
        UnaskedDelete {
            path: "util.py".into(),
            trashed: ".swival/trash/ab/util.py".into(),
            named: vec!["helper".into()],
        }
    }

    #[test]
    fn an_answer_silent_on_the_deleted_file_is_nudged_once() {
        let d = tempfile::tempdir().unwrap();
        let mut unasked = Unasked::default();
        assert_eq!(unasked.nudge("Done.", d.path()), None, "nothing deleted");
        unasked.deleted(deletion());
        let nudge = unasked.nudge("Removed the unused function.", d.path()).unwrap();
        assert!(
            nudge.starts_with(
                "You deleted util.py (now .swival/trash/ab/util.py), though the task named only `helper` inside it"
            ),
            "{nudge}"
        );
        assert_eq!(unasked.nudge("Removed it.", d.path()), None, "once a run");
    }

    #[test]
    fn an_answer_claiming_a_change_after_only_reading_is_nudged_once() {
        let task = "Set the timeout in settings.json to 60.";
        let mut unasked = Unasked::default();
        let read = || ["read_file", "outline"].into_iter();
        assert_eq!(unasked.unmade(task, "I changed the timeout from 30 to 60.", read()), Some(UNMADE_NUDGE));
        assert_eq!(unasked.unmade(task, "I changed the timeout.", read()), None, "once a run");
        let mut fresh = Unasked::default();
        let edited = ["read_file", "edit_file"].into_iter();
        assert_eq!(fresh.unmade(task, "Changed the timeout to 60.", edited), None, "a change was made");
        assert_eq!(fresh.unmade(task, "The timeout is 30; it must stay so.", read()), None, "no claim");
        assert_eq!(fresh.unmade(task, "The timeout was already set to 60; nothing changed.", read()), None);
        assert_eq!(fresh.unmade("What changed in the timeout?", "It was changed to 30.", read()), None, "a question");
        assert_eq!(fresh.unmade("Explain settings.json", "I updated nothing.", read()), None, "asks for no change");
        let ran = ["run_command"].into_iter();
        assert_eq!(fresh.unmade(task, "I set it to 60 with sed.", ran), None, "a command may change files");
    }

    #[test]
    fn an_answer_naming_the_file_or_a_file_put_back_is_not_nudged() {
        let d = tempfile::tempdir().unwrap();
        let mut unasked = Unasked::default();
        unasked.deleted(deletion());
        assert_eq!(unasked.nudge("I deleted Util.py: everything in it was unused.", d.path()), None);
        std::fs::write(d.path().join("util.py"), "x").unwrap();
        assert_eq!(unasked.nudge("Done.", d.path()), None, "restored");
        assert!(!unasked.nudged);
    }
}
