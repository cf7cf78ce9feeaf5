//! A file `delete_file` removed though the task named only something
//! inside it (`tools/asked.rs` tells) is remembered, and a final answer
//! that does not name it gets one nudge to say why the whole file went
//! or to put it back (once a run). A file already back in place needs no
//! word. The signal is a path: the answer names the file, in any
//! language, or it does not.

use crate::toolcall::UnaskedDelete;
use std::path::Path;

/// The run's deletions the task did not ask for.
#[derive(Debug, Default)]
pub(in crate::agent) struct DeletedUnasked {
    /// The deletions, in order.
    deleted: Vec<UnaskedDelete>,
    /// Whether the answer was nudged already.
    nudged: bool,
}

impl DeletedUnasked {
    /// Remember a deletion the task did not ask for.
    pub(in crate::agent) fn deleted(&mut self, deletion: UnaskedDelete) {
        self.deleted.push(deletion);
    }

    /// The nudge for a final `answer` that does not name a file deleted
    /// unasked and not restored under `base`; `None` when there is none,
    /// or after the run's one nudge.
    pub(in crate::agent) fn nudge(&mut self, answer: &str, base: &Path) -> Option<String> {
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
    fn an_answer_silent_on_the_deleted_file_is_nudged_once_in_any_language() {
        let d = tempfile::tempdir().unwrap();
        let mut none = DeletedUnasked::default();
        assert_eq!(none.nudge("Done.", d.path()), None, "nothing deleted");
        let cases = [
            ("Removed the unused function.", true),
            ("J'ai supprimé la fonction inutilisée.", true),
            ("Unbenutzte Funktion entfernt.", true),
            ("I deleted Util.py: everything in it was unused.", false),
            ("J'ai supprimé util.py : tout était inutilisé.", false),
            ("已删除 util.py。", false),
        ];
        for (answer, nudged) in cases {
            let mut unasked = DeletedUnasked::default();
            unasked.deleted(deletion());
            let nudge = unasked.nudge(answer, d.path());
            assert_eq!(nudge.is_some(), nudged, "{answer}");
            if let Some(nudge) = nudge {
                assert!(nudge.starts_with("You deleted util.py (now .swival/trash/ab/util.py), though the task named only `helper` inside it"), "{nudge}");
                assert_eq!(unasked.nudge(answer, d.path()), None, "once a run");
            }
        }
    }

    #[test]
    fn a_file_put_back_is_not_nudged() {
        let d = tempfile::tempdir().unwrap();
        let mut unasked = DeletedUnasked::default();
        unasked.deleted(deletion());
        std::fs::write(d.path().join("util.py"), "x").unwrap();
        assert_eq!(unasked.nudge("Done.", d.path()), None, "restored");
        assert!(!unasked.nudged);
    }
}
