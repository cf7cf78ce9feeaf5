//! What the model is told when `edit_file`'s `old_string` is not in the
//! file, beyond the matcher's words: a short file shown whole to copy
//! from, and, when the same `old_string` misses the same file again, the
//! exact call that would apply to the closest match (when it is close)
//! or `write_file` of the whole short file. Small models repeat an
//! imagined `old_string` until the turns run out; this ends that.

use super::edit::{Closest, EditError};
use super::ToolBox;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A file this short (in lines) is shown whole after a miss with nothing
/// close, and may be rewritten with `write_file` after a repeated miss.
const SHORT_FILE_LINES: usize = 60;
/// A closest match at least this similar is offered as a ready call.
const READY_CALL_RATIO: f32 = 0.8;

/// The last `edit_file` miss: where, and what was sent.
#[derive(Debug, Default)]
pub struct Misses {
    /// The file and the `old_string` of the last miss.
    last: Option<(PathBuf, String)>,
}

impl Misses {
    /// Forget the last miss (an edit landed).
    pub fn clear(&mut self) {
        self.last = None;
    }
}

impl ToolBox {
    /// The reason of a missed edit of `path` (`requested` as the model
    /// named it), `content` its text.
    pub(super) fn missed(
        &mut self,
        path: &Path,
        requested: &str,
        sent: (&str, &str),
        content: &str,
        closest: Option<Closest>,
    ) -> String {
        let (old, new) = sent;
        let again = self.misses.last.as_ref().is_some_and(|(p, o)| p == path && o == old);
        self.misses.last = Some((path.to_owned(), old.to_owned()));
        // A small model sends the edit that just succeeded once more.
        let whole_line = |t: &str| content.lines().any(|l| l.trim() == t);
        let telling = !new.trim().is_empty() && (new.trim().len() >= 8 || whole_line(new.trim()));
        if let Some(at) = telling.then(|| content.find(new)).flatten() {
            let line = content[..at].matches('\n').count() + 1;
            return format!(
                "old_string not found, but new_string is in the file already (line {line}): the change looks \
                 made. Do not send it again; if the task is done, reply now with your final answer and call no tool."
            );
        }
        let lines: Vec<&str> = content.lines().collect();
        let short = lines.len() <= SHORT_FILE_LINES;
        let ready = closest.as_ref().filter(|c| c.ratio >= READY_CALL_RATIO).map(|c| c.lines.join("\n"));
        // A call that would change nothing (but spacing) is no help.
        let ready = ready.filter(|region| !region.split_whitespace().eq(new.split_whitespace()));
        let mut out = EditError::NotFound(closest).to_string();
        if ready.is_none() && short && !again {
            let _ = write!(out, "\nThe whole file ({} lines), to copy old_string from:", lines.len());
            for (i, l) in lines.iter().enumerate() {
                let _ = write!(out, "\n{}: {l}", i + 1);
            }
        }
        if !again {
            return out;
        }
        out.push_str("\nYou sent this same old_string before and it did not match then either.");
        match ready {
            Some(region) => {
                let call = serde_json::json!({"file_path": requested, "old_string": region, "new_string": new});
                let _ = write!(out, " This edit_file call applies your change to the closest match:\n{call}");
            }
            None if short => out.push_str(&format!(
                " The file has {} lines: write it whole with write_file (its full new content) instead of editing.",
                lines.len()
            )),
            None => {
                out.push_str(" Read the lines you want to change with read_file and copy old_string from them exactly.")
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_toolbox as toolbox;
    use super::*;

    #[test]
    fn a_short_file_is_shown_whole_and_a_repeat_gets_write_file() {
        let d = tempfile::tempdir().unwrap();
        let mut tb = toolbox(d.path());
        let p = d.path().join("a.py");
        let first = tb.missed(&p, "a.py", ("zzz", "y"), "def f():\n    return 1\n", None);
        assert!(first.contains("The whole file (2 lines)") && first.contains("\n2:     return 1"), "{first}");
        let again = tb.missed(&p, "a.py", ("zzz", "y"), "def f():\n    return 1\n", None);
        assert!(again.contains("same old_string before") && again.contains("write_file"), "{again}");
    }

    #[test]
    fn an_edit_made_already_says_so_and_offers_no_call_that_changes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let mut tb = toolbox(d.path());
        let p = d.path().join("deploy.yaml");
        let now = "name: web\nreplicas: 3\nimage: web:1.4\n";
        let out = tb.missed(&p, "deploy.yaml", ("replicas: 2", "replicas: 3"), now, None);
        assert!(out.starts_with("old_string not found, but new_string is in the file already (line 2)"), "{out}");
        assert!(out.contains("reply now with your final answer"), "{out}");
        // A short new_string found inside a longer line tells nothing.
        let out = tb.missed(&p, "deploy.yaml", ("zz", "we"), now, None);
        assert!(out.starts_with("old_string not found."), "{out}");
        // The closest region is new_string itself: no ready call to repeat it.
        let closest = || {
            Some(Closest {
                first_line: 1,
                lines: vec!["x = 3".into()],
                around: (vec![], vec![]),
                needle: "x = 2".into(),
                ratio: 0.8,
            })
        };
        let big: String = (0..60).map(|i| format!("y{i} = {i}\n")).collect::<String>() + "x = 3\n";
        tb.missed(&p, "a.py", ("x = 2", "x  =  3"), &big, closest());
        let again = tb.missed(&p, "a.py", ("x = 2", "x  =  3"), &big, closest());
        assert!(!again.contains("This edit_file call applies"), "{again}");
    }

    #[test]
    fn a_repeat_close_to_the_file_gets_the_exact_call() {
        let d = tempfile::tempdir().unwrap();
        let mut tb = toolbox(d.path());
        let p = d.path().join("a.py");
        let closest = || {
            Some(Closest {
                first_line: 2,
                lines: vec!["    return n * 2".into()],
                around: (vec!["def f(n):".into()], vec![]),
                needle: "return n*2".into(),
                ratio: 0.9,
            })
        };
        tb.missed(&p, "a.py", ("return n*2", "return n * 3"), "def f(n):\n    return n * 2\n", closest());
        let again = tb.missed(&p, "a.py", ("return n*2", "return n * 3"), "def f(n):\n    return n * 2\n", closest());
        assert!(
            again.contains(r#""old_string":"    return n * 2""#) && again.contains(r#""new_string":"return n * 3""#),
            "{again}"
        );
    }
}
