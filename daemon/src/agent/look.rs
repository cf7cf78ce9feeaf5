//! Look before answering: a first answer given without a single tool
//! call, to a task about the project or its files, gets one nudge to look
//! first, with the top of the project as a cheap hint (once a run). Small models
//! answer "what does this project do?" or "which file defines
//! parse_date?" from nothing; a question that needs no files ("what is
//! 2 + 2?") is never nudged, and neither is one whose named files were
//! read up front (the caller checks).

use std::path::Path;

/// Entries of the project's top level named in the nudge.
const TOP_ENTRIES: usize = 20;

/// Words that make a task about the project as a whole.
const PROJECT_WORDS: &[&str] =
    &["project", "repo", "repository", "codebase", "code base", "this code", "readme", "this directory", "this folder"];

/// Words that make a task about the project's files: what they hold.
const FILE_WORDS: &[&str] = &[
    "file",
    "files",
    "function",
    "functions",
    "class",
    "classes",
    "method",
    "methods",
    "module",
    "modules",
    "define",
    "defines",
    "defined",
    "variable",
    "variables",
    "constant",
    "constants",
    "config",
    "setting",
    "settings",
    "dependency",
    "dependencies",
];

/// The nudge for a first answer to `task` given without looking, when the
/// task is about the project in `base`; `None` when it is not.
pub fn nudge(task: &str, base: &Path) -> Option<String> {
    if !about_project(task) {
        return None;
    }
    let top = top_level(base);
    let listing = match top.is_empty() {
        true => "(nothing)".to_owned(),
        false => top.join(", "),
    };
    Some(format!(
        "You answered without looking at the project: no file was read. The question is about this project, so \
         check before answering. Its top level holds: {listing}. Read the files the question is about (a README \
         first for what the project is), then answer from what they say."
    ))
}

/// Whether `task` is about the project: it uses a word of
/// [`PROJECT_WORDS`] or [`FILE_WORDS`].
fn about_project(task: &str) -> bool {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let project = PROJECT_WORDS.iter().any(|w| match w.contains(' ') {
        true => lower.contains(w),
        false => words.contains(w),
    });
    project || FILE_WORDS.iter().any(|w| words.contains(w))
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
    fn project_questions_are_nudged_and_others_are_not() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("README.md"), "x").unwrap();
        std::fs::create_dir(d.path().join("src")).unwrap();
        let n = nudge("what does this project do?", d.path()).unwrap();
        assert!(n.contains("README.md, src/"), "{n}");
        assert!(nudge("summarise the README", d.path()).is_some());
        assert!(nudge("Which file defines the function parse_date?", d.path()).is_some());
        assert!(nudge("Where is the timeout setting?", d.path()).is_some());
        assert!(nudge("what is 2 + 2?", d.path()).is_none());
        assert!(nudge("what is the capital of France?", d.path()).is_none());
        assert!(nudge("hello there", d.path()).is_none());
    }
}
