//! Changes the task did not ask for, accounted for in the answer: a file
//! `delete_file` removed though the task named only something inside it
//! (`tools/asked.rs`) is remembered, and a final answer that does not
//! mention it gets one nudge to say why the whole file went or to put it
//! back (once a run, as the look-first nudge). A file already back in
//! place needs no word.

use crate::toolcall::UnaskedDelete;
use std::path::Path;

/// The run's deletions the task did not ask for.
#[derive(Debug, Default)]
pub(super) struct Unasked {
    /// The deletions, in order.
    deleted: Vec<UnaskedDelete>,
    /// Whether the answer was nudged already.
    nudged: bool,
}

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
