//! Changes accounted for in the answer, both ways. A file `delete_file`
//! removed though the task named only something inside it
//! (`tools/asked.rs`) is remembered, and a final answer that does not
//! mention it gets one nudge to say why the whole file went or to put it
//! back (once a run, as the look-first nudge). A file already back in
//! place needs no word. And an answer that says it changed something, to
//! a task asking for a change, in a run whose every successful tool call
//! only read, gets one nudge to make the change first: a small model
//! answers "I changed the timeout to 60" after reading the file once. So
//! does an answer to a task that orders a change ("Fix it.") that says
//! nothing of why none was made: the model answers with the file it read.
//! Both hold too when the run changed files and then put each back as it
//! was: a small model told its edit broke the syntax undoes it and answers
//! "Fixed the syntax error".

use crate::toolcall::UnaskedDelete;
use std::collections::BTreeMap;
use std::path::Path;
use swival_protocol::{FileChange, ToolCounts};

/// The run's deletions the task did not ask for.
#[derive(Debug, Default)]
pub(super) struct Unasked {
    /// The deletions, in order.
    deleted: Vec<UnaskedDelete>,
    /// Whether the answer was nudged already.
    nudged: bool,
    /// Whether an answer claiming an unmade change was nudged already.
    unmade_nudged: bool,
    /// Each file a write or edit changed, by its path from the base dir: a
    /// hash of its text before the run's first change of it (`None`: it
    /// did not exist) and after the last.
    changed: BTreeMap<String, (Option<u64>, u64)>,
    /// Whether a write or edit changed a file without saying how (one too
    /// large for its change to be kept, a move): nothing is known undone.
    untracked: bool,
}

/// Tools that change only the files they name, each change seen in its
/// result ([`Unasked::changed`]).
const WRITING: &[&str] = &["edit_file", "write_file"];

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
    "give",
    "drop",
    "put",
    "swap",
    "switch",
    "turn",
    "enable",
    "disable",
    "raise",
    "lower",
    "reverse",
    "sort",
    "rewrite",
    "modify",
    "adjust",
    "restore",
    "extract",
    "split",
    "merge",
    "uncomment",
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

/// Words of an answer that says no change was needed, or why none was made.
const DENYING: &[&str] =
    &["already", "nothing", "unchanged", "stay", "stays", "remain", "remains", "cannot", "unable", "unnecessary"];

/// Words of an answer that gives a reason for making no change, beyond
/// [`DENYING`]: a negation ("it does not need one", "I couldn't find it").
const REASONING: &[&str] = &["no", "not", "couldn", "didn", "doesn", "isn", "won", "can", "correct", "fine"];

/// The nudge for an answer claiming a change nobody made.
pub(super) const UNMADE_NUDGE: &str = "Your answer says you made a change, but no file was changed in this run: \
every tool call so far only read. Make the change the task asks for (edit_file with old_string copied from the \
file, or write_file with the whole new content), then answer.";

/// The nudge for an answer to a task that asks for a change, when no
/// change was made and the answer says nothing of why.
pub(super) const UNMADE_SILENT_NUDGE: &str = "The task asks for a change, but no file was changed in this run: \
every tool call so far only read. Make the change the task asks for (edit_file with old_string copied from the \
file, or write_file with the whole new content), then answer. If no change is needed, answer saying why.";

impl Unasked {
    /// Remember what a successful call of tool `name` changed, to a file
    /// under `base`: `None` from a write or edit is a change not shown.
    pub(super) fn changed(&mut self, name: &str, change: Option<&FileChange>, base: &Path) {
        let Some(change) = change else {
            self.untracked |= WRITING.contains(&name);
            return;
        };
        let path = Path::new(&change.path);
        let path = path.strip_prefix(base).unwrap_or(path).display().to_string();
        let after = hash(&change.new_text);
        self.changed.entry(path).or_insert((change.old_text.as_deref().map(hash), after)).1 = after;
    }

    /// The files the run changed, when every change it made was undone
    /// (each file is as it was before its first change) and only writes
    /// and edits changed anything: `None` when a change stands, none was
    /// made, or another tool (a command) may have changed files.
    fn undone(&self, calls: &[(&str, &ToolCounts)]) -> Option<Vec<String>> {
        let writes_only =
            calls.iter().filter(|(_, c)| c.succeeded > 0).all(|(n, _)| READING.contains(n) || WRITING.contains(n));
        let all_back = self.changed.values().all(|(before, after)| *before == Some(*after));
        let known = writes_only && !self.untracked && !self.changed.is_empty();
        (known && all_back).then(|| self.changed.keys().cloned().collect())
    }

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

    /// The nudge for a final `answer` to `task`, given the run's tool
    /// `calls` (each tool's counts): an answer that claims a change, to a
    /// task asking for one, when every tool that succeeded only read or
    /// every change made was undone; or one that says nothing of why no
    /// change was made, to a task that orders one ("Fix it."), when every
    /// tool called only reads or the changes were undone. `None`
    /// otherwise: for a question, an answer that says no change was
    /// needed, and after the run's one nudge.
    pub(super) fn unmade<'a>(
        &mut self,
        task: &str,
        answer: &str,
        calls: impl Iterator<Item = (&'a String, &'a ToolCounts)>,
    ) -> Option<String> {
        let calls: Vec<(&str, &ToolCounts)> = calls.map(|(name, counts)| (name.as_str(), counts)).collect();
        let undone = self.undone(&calls);
        let only_read = calls.iter().filter(|(_, c)| c.succeeded > 0).all(|(name, _)| READING.contains(name));
        // A change tried and refused or failed is the answer's to explain.
        let never_tried = calls.iter().all(|(name, _)| READING.contains(name));
        let asks = !task.trim_end().ends_with('?') && has_word(task, ASKING);
        // "It is already fixed; nothing to change" claims nothing.
        let denies = has_word(answer, DENYING);
        let claims = has_word(answer, CLAIMING) && !denies && (only_read || undone.is_some());
        // A small model answers "Give greet a default name" with the file
        // it read, or with the task's own words.
        let silent = orders_a_change(task)
            && (never_tried || undone.is_some())
            && !denies
            && !has_word(answer, REASONING)
            && !answer.trim_end().ends_with('?');
        if !(claims || silent) || self.unmade_nudged || !asks {
            return None;
        }
        self.unmade_nudged = true;
        Some(match (undone, claims) {
            (Some(files), _) => format!(
                "The task asks for a change, but {} {} as at the start of the run: no change of this run stands. \
                 Make the change the task asks for, keeping the file valid, then answer. If no change is needed, \
                 answer saying why.",
                files.join(", "),
                if files.len() == 1 { "is" } else { "are" }
            ),
            (None, true) => UNMADE_NUDGE.to_owned(),
            (None, false) => UNMADE_SILENT_NUDGE.to_owned(),
        })
    }
}

/// A hash of a file's text, to tell whether it is back as it was.
fn hash(text: &str) -> u64 {
    crate::tools::text_hash(text.as_bytes())
}

/// Whether a sentence of `task` opens with a verb asking for a change
/// ("Fix it.", "Please give greet a default name"): an order, not a
/// question nor a request to explain ("Explain how to add a route").
fn orders_a_change(task: &str) -> bool {
    task.replace(". ", "\n").split(['\n', '!', ';', '?', ':']).any(|sentence| {
        let mut words =
            sentence.split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase());
        let first = words.next();
        let verb = if first.as_deref() == Some("please") { words.next() } else { first };
        verb.is_some_and(|v| ASKING.contains(&v.as_str()))
    })
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

    /// Tool counts: `(name, succeeded, failed)`.
    fn counts(calls: &[(&str, u64, u64)]) -> Vec<(String, ToolCounts)> {
        calls.iter().map(|&(n, succeeded, failed)| (n.to_owned(), ToolCounts { succeeded, failed })).collect()
    }

    fn unmade(unasked: &mut Unasked, task: &str, answer: &str, calls: &[(&str, u64, u64)]) -> Option<String> {
        let calls = counts(calls);
        unasked.unmade(task, answer, calls.iter().map(|(n, c)| (n, c)))
    }

    #[test]
    fn an_answer_claiming_a_change_after_only_reading_is_nudged_once() {
        let task = "Set the timeout in settings.json to 60.";
        let mut unasked = Unasked::default();
        let read = [("read_file", 1, 0), ("outline", 1, 0)];
        assert_eq!(
            unmade(&mut unasked, task, "I changed the timeout from 30 to 60.", &read),
            Some(UNMADE_NUDGE.to_owned())
        );
        assert_eq!(unmade(&mut unasked, task, "I changed the timeout.", &read), None, "once a run");
        let mut fresh = Unasked::default();
        let edited = [("read_file", 1, 0), ("edit_file", 1, 0)];
        assert_eq!(unmade(&mut fresh, task, "Changed the timeout to 60.", &edited), None, "a change was made");
        let failed_edit = [("read_file", 1, 0), ("edit_file", 0, 2)];
        assert_eq!(
            unmade(&mut fresh, task, "Changed it.", &failed_edit),
            Some(UNMADE_NUDGE.to_owned()),
            "the edit failed"
        );
        let mut fresh = Unasked::default();
        assert_eq!(unmade(&mut fresh, task, "The timeout is 30; it must stay so.", &read), None, "why not, said");
        assert_eq!(unmade(&mut fresh, task, "The timeout was already set to 60; nothing changed.", &read), None);
        assert_eq!(unmade(&mut fresh, "What changed in the timeout?", "It was changed to 30.", &read), None);
        assert_eq!(unmade(&mut fresh, "Explain settings.json", "I updated nothing.", &read), None, "asks no change");
        let ran = [("run_command", 1, 0)];
        assert_eq!(unmade(&mut fresh, task, "I set it to 60 with sed.", &ran), None, "a command may change files");
    }

    #[test]
    fn an_answer_silent_on_an_ordered_change_none_made_is_nudged_once() {
        let read = [("read_file", 1, 0)];
        let file = "The file is:\ndef greet(name):\n    return 'Hi ' + name";
        let ordered = "Give greet in hello.py a default name of 'there', so greet() returns 'Hi there'.";
        let mut unasked = Unasked::default();
        assert_eq!(unmade(&mut unasked, ordered, file, &read), Some(UNMADE_SILENT_NUDGE.to_owned()));
        assert_eq!(unmade(&mut unasked, ordered, file, &read), None, "once a run");
        let fix = "geometry.py fails with NameError: name 'math' is not defined. Fix it.";
        let fresh = || Unasked::default();
        assert_eq!(unmade(&mut fresh(), fix, "1: def hypot(a, b):", &read), Some(UNMADE_SILENT_NUDGE.to_owned()));
        assert_eq!(
            unmade(&mut fresh(), "fix calc.py", "done", &[]),
            Some(UNMADE_SILENT_NUDGE.to_owned()),
            "no call at all"
        );
        assert_eq!(
            unmade(&mut fresh(), &format!("please {ordered}"), file, &read),
            Some(UNMADE_SILENT_NUDGE.to_owned())
        );
        // Not an order, a question back, a reason given, a change tried, or made.
        let explain = "Explain how to add a default name to greet in hello.py.";
        assert_eq!(unmade(&mut fresh(), explain, file, &read), None);
        assert_eq!(unmade(&mut fresh(), ordered, "Which default name do you want?", &read), None);
        assert_eq!(unmade(&mut fresh(), ordered, "It cannot be done: greet is generated.", &read), None);
        assert_eq!(unmade(&mut fresh(), "Fix the bug in a.py.", "I couldn't find a bug in a.py.", &read), None);
        let refused = [("run_command", 0, 1)];
        assert_eq!(unmade(&mut fresh(), "make x", "done without it", &refused), None, "tried, refused");
        let edited = [("read_file", 1, 0), ("edit_file", 1, 0)];
        assert_eq!(unmade(&mut fresh(), ordered, "Done.", &edited), None);
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

    fn change(path: &str, old: Option<&str>, new: &str) -> FileChange {
        FileChange { path: path.into(), old_text: old.map(str::to_owned), new_text: new.into() }
    }

    #[test]
    fn an_answer_after_every_change_was_undone_is_nudged_once() {
        let base = Path::new("/p");
        let edited = [("read_file", 1, 0), ("edit_file", 2, 0)];
        let task = "greet() in hello.py should end with an exclamation mark. Fix it.";
        let mut unasked = Unasked::default();
        unasked.changed("edit_file", Some(&change("/p/hello.py", Some("a\n"), "a!\n")), base);
        assert_eq!(unmade(&mut unasked, task, "Done.", &edited), None, "the change stands");
        unasked.changed("edit_file", Some(&change("/p/hello.py", Some("a!\n"), "a\n")), base);
        let nudge = unmade(&mut unasked, task, "Fixed the syntax error in hello.py.", &edited).unwrap();
        assert!(nudge.starts_with("The task asks for a change, but hello.py is as at the start of the run"), "{nudge}");
        assert_eq!(unmade(&mut unasked, task, "Fixed it.", &edited), None, "once a run");
        // Silent answers too; a reason given, or a command run, is not nudged.
        let undone = || {
            let mut u = Unasked::default();
            u.changed("edit_file", Some(&change("/p/a.py", Some("x"), "y")), base);
            u.changed("edit_file", Some(&change("/p/a.py", Some("y"), "x")), base);
            u
        };
        assert!(unmade(&mut undone(), task, "def greet(name): ...", &edited).is_some());
        assert_eq!(unmade(&mut undone(), task, "No change is needed: it already ends with one.", &edited), None);
        let ran = [("edit_file", 2, 0), ("run_command", 1, 0)];
        assert_eq!(unmade(&mut undone(), task, "Fixed it.", &ran), None, "a command may have changed files");
        // A file created and then emptied is not back as it was.
        let mut created = Unasked::default();
        created.changed("write_file", Some(&change("/p/new.py", None, "")), base);
        assert_eq!(unmade(&mut created, task, "Fixed it.", &edited), None);
        // A change not shown (a file too large to keep it) may stand.
        let mut large = undone();
        large.changed("write_file", None, base);
        assert_eq!(unmade(&mut large, task, "Fixed it.", &edited), None);
        let mut read = undone();
        read.changed("read_file", None, base);
        assert!(unmade(&mut read, task, "Fixed it.", &edited).is_some());
    }
}
