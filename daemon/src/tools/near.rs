//! What a small model most likely meant when its path or its write went
//! astray: the existing file of the same name when it invents a directory
//! (`src/util.py` for `util.py`), and the lines a whole-file write dropped
//! when it rewrote a file to add to it. Only files the model may read
//! anyway are ever named.

use super::path::Access;
use super::{ToolBox, ToolError};
use std::path::Path;

/// How a note on a successful write starts (on a line of its own).
pub(super) const NOTE: &str = crate::toolcall::WARNING;

/// At most this many dropped lines are quoted back.
const QUOTED: usize = 3;

impl ToolBox {
    /// The one other existing file named like `missing` (which does not
    /// exist): one this session read or wrote, or one at the top of the
    /// base directory; as the model should write it. `None` when there is
    /// none, or more than one.
    pub(super) fn same_name_elsewhere(&self, missing: &Path) -> Option<String> {
        let name = missing.file_name()?;
        let top = self.policy.base.join(name);
        let seen = self.tracker.paths().filter(|p| p.file_name() == Some(name) && *p != missing && **p != top);
        let mut readable = seen.chain((top != missing).then_some(&top)).filter_map(|p| self.readable(p));
        let first = readable.next()?;
        readable.next().is_none().then_some(first)
    }

    /// How the model names `path`, when it is a regular file the path
    /// policy lets it read.
    fn readable(&self, path: &Path) -> Option<String> {
        let shown = match path.strip_prefix(&self.policy.base) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        };
        let resolved = self.policy.resolve(&shown, Access::Read).ok().filter(|r| r == path)?;
        let (dir, rel) = self.beneath(&resolved).ok()?;
        let meta = dir.metadata(&rel).ok()?;
        (meta.kind == super::beneath::Kind::File).then_some(shown)
    }

    /// The error for a file `requested` names that does not exist, with
    /// the file the model likely meant and the call to make with it;
    /// `otherwise` when there is no such file.
    pub(super) fn missing_file(&self, requested: &str, missing: &Path, otherwise: String) -> ToolError {
        ToolError::refused(match self.same_name_elsewhere(missing) {
            Some(alt) => format!(
                "file does not exist: {requested}. {alt} exists: if you meant it, retry this call with \
                 \"file_path\": \"{alt}\"."
            ),
            None => otherwise,
        })
    }

    /// What a successful `write_file` of a new file adds to its result when
    /// a file of that name already exists elsewhere.
    pub(super) fn new_file_note(&self, requested: &str, created: &Path) -> Option<String> {
        self.same_name_elsewhere(created).map(|alt| {
            format!(
                "{requested} is a new file, and {alt} already exists. If the task is about {alt}, \
                 change {alt} instead."
            )
        })
    }
}

/// What a successful whole-file write adds to its result when it dropped
/// at least half of the file's earlier non-blank lines: the model often
/// rewrites a file to add one function and loses the rest.
pub(super) fn dropped_lines_note(before: &str, after: &str) -> Option<String> {
    let kept: std::collections::HashSet<&str> = after.lines().map(str::trim).collect();
    let old: Vec<&str> = before.lines().filter(|l| !l.trim().is_empty()).collect();
    let gone: Vec<&str> = old.iter().copied().filter(|l| !kept.contains(l.trim())).collect();
    if gone.is_empty() || gone.len() * 2 < old.len() {
        return None;
    }
    let quoted: Vec<String> = gone.iter().take(QUOTED).map(|l| format!("`{}`", l.trim())).collect();
    Some(format!(
        "this replaced the whole file, and {} of its {} earlier lines are gone ({}{}). If the task was to \
         add or change only part of the file, write it again with those lines kept, or use edit_file.",
        gone.len(),
        old.len(),
        quoted.join(", "),
        if gone.len() > QUOTED { ", …" } else { "" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_toolbox;

    #[test]
    fn an_invented_directory_points_at_the_file_of_that_name() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("util.py"), "x").unwrap();
        let base = d.path().canonicalize().unwrap();
        let tb = test_toolbox(d.path());
        assert_eq!(tb.same_name_elsewhere(&base.join("src/util.py")).as_deref(), Some("util.py"));
        assert_eq!(tb.same_name_elsewhere(&base.join("src/other.py")), None);
        let err = tb.missing_file("src/util.py", &base.join("src/util.py"), "plain".into()).render();
        assert!(err.starts_with("error: file does not exist: src/util.py. util.py exists"), "{err}");
        assert!(err.contains(r#""file_path": "util.py""#), "{err}");
        assert_eq!(tb.missing_file("src/x.py", &base.join("src/x.py"), "plain".into()).render(), "error: plain");
    }

    #[test]
    fn files_read_elsewhere_count_and_two_candidates_name_none() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a")).unwrap();
        std::fs::write(d.path().join("a/m.py"), "x").unwrap();
        let base = d.path().canonicalize().unwrap();
        let mut tb = test_toolbox(d.path());
        assert_eq!(tb.same_name_elsewhere(&base.join("b/m.py")), None, "unread and not at the top");
        tb.tracker.mark(&base.join("a/m.py"));
        assert_eq!(tb.same_name_elsewhere(&base.join("b/m.py")).as_deref(), Some("a/m.py"));
        std::fs::write(d.path().join("m.py"), "y").unwrap();
        assert_eq!(tb.same_name_elsewhere(&base.join("b/m.py")), None, "two candidates: no guess");
    }

    #[test]
    fn files_the_policy_refuses_are_never_named() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("keys")).unwrap();
        std::fs::write(d.path().join("keys/id.pem"), "secret").unwrap();
        std::fs::write(outside.path().join("id.pem"), "secret").unwrap();
        let base = d.path().canonicalize().unwrap();
        // Each the one candidate, even marked as seen (which the model
        // could never have made happen).
        let mut tb = test_toolbox(d.path());
        tb.tracker.mark(&base.join("keys/id.pem"));
        assert_eq!(tb.same_name_elsewhere(&base.join("src/id.pem")).as_deref(), Some("keys/id.pem"));
        tb.policy.hidden.push(base.join("keys"));
        assert_eq!(tb.same_name_elsewhere(&base.join("src/id.pem")), None, "hidden");
        let mut tb = test_toolbox(d.path());
        tb.tracker.mark(&outside.path().canonicalize().unwrap().join("id.pem"));
        assert_eq!(tb.same_name_elsewhere(&base.join("src/id.pem")), None, "outside the base dir");
    }

    #[test]
    fn a_rewrite_that_drops_most_lines_is_noted() {
        let note =
            dropped_lines_note("def add(a, b):\n    return a + b\n", "def multiply(a, b):\n    return a * b").unwrap();
        assert!(note.contains("2 of its 2 earlier lines are gone (`def add(a, b):`, `return a + b`)"), "{note}");
        assert_eq!(dropped_lines_note("a\nb\nc\nd\n", "a\nb\nc\nD\n"), None, "one line of four changed");
        assert_eq!(dropped_lines_note("a\n", "x\na\n"), None, "kept and added");
    }
}
