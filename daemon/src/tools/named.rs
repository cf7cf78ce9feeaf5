//! Files the task names, read up front: a task that says "fix calc.py"
//! gets calc.py's content with it, as `read_file` shows it (and counted as
//! read), so the first model call can act instead of spending a turn on
//! the read — a turn small models often skip, answering or editing blind.
//! Only existing regular files the path policy lets the model read, at
//! most [`MAX_FILES`] of them and [`MAX_BYTES`] each. Ours, on by default;
//! `read_named_files = false` leaves the first request as Swival sends it,
//! the system prompt and the task alone (the session's run decides).

use super::ToolBox;

/// Most files read up front.
const MAX_FILES: usize = 3;
/// Larger files are left for the model to read.
const MAX_BYTES: u64 = 16 * 1024;

/// Words of `task` that look like file paths: a name with an extension or
/// a slash, trimmed of quotes and punctuation around it.
fn candidates(task: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for word in task.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '`' | '"' | '\'')) {
        let word = word.trim_matches(|c: char| matches!(c, '.' | ':' | '!' | '?') || c.is_whitespace());
        if looks_like_file(word) && !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// Whether a word of a task looks like a file path: a name with an
/// extension or a slash, not a URL.
pub(super) fn looks_like_file(word: &str) -> bool {
    let path = word.contains('/')
        || word.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && ext.len() <= 8
                && ext.starts_with(|c: char| c.is_ascii_alphabetic())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
        });
    path && !word.contains("://")
}

impl ToolBox {
    /// The files `task` names, read; `None` when it names none.
    pub fn read_named(&mut self, task: &str) -> Option<String> {
        let mut blocks = Vec::new();
        for name in candidates(task) {
            if blocks.len() == MAX_FILES {
                break;
            }
            let Ok(path) = self.policy.resolve(name, super::path::Access::Read) else { continue };
            let Ok((dir, rel)) = self.beneath(&path) else { continue };
            match dir.metadata(&rel) {
                Ok(m) if m.kind == super::beneath::Kind::File && m.len <= MAX_BYTES => {}
                _ => continue,
            }
            if let Ok(content) = super::read_file::read_file(self, &super::read_file::ReadFile::whole(name), None) {
                blocks.push(format!("=== {name} ===\n{content}"));
            }
        }
        (!blocks.is_empty()).then(|| {
            format!(
                "The task names these files; here they are as read_file shows them (they count as read):\n\n{}",
                blocks.join("\n\n")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_an_extension_or_a_slash_are_candidates() {
        let task = "calc.py: total() is wrong; see 'docs/notes' and README.md. Not e.g. or 3.5 or https://x.io/a.html";
        // Only candidates: a word naming no existing file is skipped later.
        assert_eq!(candidates(task), ["calc.py", "docs/notes", "README.md", "e.g"]);
    }

    #[test]
    fn existing_small_files_are_read_and_count_as_read() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("calc.py"), "x = 1\n").unwrap();
        std::fs::write(d.path().join("big.txt"), "y".repeat(20_000)).unwrap();
        let mut tb = crate::tools::test_toolbox(d.path());
        let text = tb.read_named("Fix calc.py and big.txt, not missing.py.").unwrap();
        assert!(text.contains("=== calc.py ===\n1: x = 1"), "{text}");
        assert!(!text.contains("big.txt") && !text.contains("missing.py"), "{text}");
        assert!(tb.tracker.seen(&d.path().canonicalize().unwrap().join("calc.py")));
        assert_eq!(tb.read_named("say hello"), None);
    }

    #[test]
    fn files_outside_the_policy_are_not_read() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        let mut tb = crate::tools::test_toolbox(d.path());
        let task = format!("summarise {}", outside.path().join("secret.txt").display());
        assert_eq!(tb.read_named(&task), None);
    }
}
