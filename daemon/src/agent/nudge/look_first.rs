//! Look before answering: a fresh run's first answer, given without a
//! single tool call and with nothing read up front, that names a file (a
//! path, or a name with an extension), in a project that holds files, gets one nudge to look first, with the
//! project's top level as a cheap hint (once a run; the caller checks the
//! run). Small models answer "which file defines parse_date?" with a file
//! they made up.
//!
//! The trigger reads no words, only names of files, which are the same in
//! every language: a question that names none ("what is 2 + 2?") is
//! answered at once, and an empty directory is never nudged.

use std::path::Path;

/// Entries of the project's top level named in the nudge.
const TOP_ENTRIES: usize = 20;

/// The nudge for a first `answer` given without looking, in the project
/// at `base`; `None` when it names no file, or the project holds nothing
/// to look at.
pub(in crate::agent) fn nudge(answer: &str, base: &Path) -> Option<String> {
    if !names_a_file(answer) {
        return None;
    }
    let top = top_level(base);
    (!top.is_empty()).then(|| {
        format!(
            "You answered without looking at the project: no file was read. If the task is about this project, \
             check before answering. Its top level holds: {}. Read the files the task is about (a README first for \
             what the project is), then answer from what they say. If the task needs no file of the project, give \
             the same answer again.",
            top.join(", ")
        )
    })
}

/// Whether `text` names a file: a word with a path separator (not a URL),
/// or one that ends in an extension (`dates.py`, `Makefile.am`), in any
/// script around it.
fn names_a_file(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || "\"'`()[]{}<>,;!?，。：？".contains(c)).any(|word| {
        let word = word.trim_end_matches(['.', ':']);
        if word.contains("://") {
            return false;
        }
        let path = word.contains('/') && word.chars().any(char::is_alphanumeric);
        let extension = word.rsplit_once('.').is_some_and(|(stem, ext)| {
            let stem = stem.rsplit('/').next().unwrap_or(stem);
            stem.chars().any(char::is_alphanumeric)
                && (1..=6).contains(&ext.chars().count())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        });
        path || extension
    })
}

/// The project's top-level entries, directories with a `/`, hidden ones
/// left out, sorted, at most [`TOP_ENTRIES`].
fn top_level(base: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(base) else { return Vec::new() };
    let mut names: Vec<String> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let slash = if e.file_type().is_ok_and(|t| t.is_dir()) { "/" } else { "" };
            (!name.starts_with('.')).then(|| format!("{name}{slash}"))
        })
        .collect();
    names.sort();
    names.truncate(TOP_ENTRIES);
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_file_in_a_project_with_files_is_nudged_with_its_top_level() {
        let empty = tempfile::tempdir().unwrap();
        std::fs::write(empty.path().join(".hidden"), "x").unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("README.md"), "x").unwrap();
        std::fs::create_dir(project.path().join("src")).unwrap();
        let many = tempfile::tempdir().unwrap();
        for i in 0..30 {
            std::fs::write(many.path().join(format!("f{i:02}")), "x").unwrap();
        }
        let asked = "Which file defines the function parse_date?";
        let cases: [(&Path, &str, &str, Option<&str>); 13] = [
            (project.path(), asked, "date_utils.py", Some("Its top level holds: README.md, src/.")),
            (project.path(), "Quel fichier définit la fonction parse_date ?", "date_utils.py", Some("README.md, src/")),
            (project.path(), "Welche Datei definiert parse_date?", "`date_utils.py`.", Some("README.md, src/")),
            (project.path(), "哪个文件定义了 parse_date？", "在 date_utils.py 中。", Some("README.md, src/")),
            (project.path(), "What does it do?", "src/app serves pages.", Some("README.md, src/")),
            (project.path(), "Document internal.example.corp", "Done.", None),
            (many.path(), asked, "dates.py", Some("f18, f19. Read")),
            (project.path(), "what is 2 + 2?", "4", None),
            (project.path(), "combien font 2 + 2 ?", "4.", None),
            (project.path(), "What is 2.5 + 1?", "3.5", None),
            (project.path(), "Where are the docs?", "At https://example.com/docs.html", None),
            (empty.path(), asked, "date_utils.py", None),
            (Path::new("/nonexistent/swivald-test"), asked, "date_utils.py", None),
        ];
        for (base, task, answer, said) in cases {
            let n = nudge(answer, base);
            match said {
                None => assert_eq!(n, None, "{task} / {answer}"),
                Some(part) => assert!(n.as_deref().is_some_and(|n| n.contains(part)), "{task} / {answer}: {n:?}"),
            }
        }
    }
}
