//! Whether a task asked for a file to be deleted, or only for something
//! inside it: small models told to delete one unused function delete the
//! whole file. `delete_file` of a file the task does not ask to delete,
//! when the task names something the file held (an identifier in
//! backticks, a top-level definition's name, a quoted string), gets a note
//! saying what went and how to bring it back; the run then makes the model
//! account for it (`agent/unasked.rs`).
//!
//! "Asked" is read loosely, so that a plain request is never second-guessed:
//! a clause of the task with a delete verb shortly before the file's name
//! or path ("delete util.py", "remove the old file util.py") or shortly
//! after it ("util.py can be removed") asks for it, unless the name
//! follows `in`, `from`, `of`… ("delete `helper` in util.py"), which makes
//! the file where the thing to delete lives.

use super::named::looks_like_file;
use std::collections::BTreeSet;
use std::path::Path;

/// Words that ask for a deletion.
const DELETE_VERBS: &[&str] = &[
    "delete",
    "deletes",
    "deleting",
    "deleted",
    "remove",
    "removes",
    "removing",
    "removed",
    "rm",
    "drop",
    "drops",
    "dropping",
    "dropped",
    "erase",
    "erasing",
    "erased",
    "discard",
    "discarding",
    "rid",
    "trash",
];
/// Words before a file's name that make it where something lives.
const CONTAINERS: &[&str] = &["in", "from", "inside", "within", "of", "out"];
/// Words between a container word and the file's name.
const FILLERS: &[&str] = &["the", "a", "file", "module", "script", "source"];
/// Words before a file's name a delete verb may be.
const VERB_BEFORE: usize = 6;
/// Words after a file's name a delete verb may be.
const VERB_AFTER: usize = 3;
/// Shortest identifier or string taken as named.
const MIN_NAMED: usize = 3;
/// Things named at most.
const MAX_NAMED: usize = 5;
/// Definitions listed in the note at most.
const MAX_DEFINED: usize = 8;

/// What `task` names inside the file `requested` holding `text` (whose
/// top-level definitions are `defined`), when the task does not ask for
/// the file itself to go; empty otherwise.
pub(super) fn named_inside(task: &str, requested: &str, text: &str, defined: &BTreeSet<String>) -> Vec<String> {
    if task.trim().is_empty() || asks_for_file(task, requested) {
        return Vec::new();
    }
    let stem = Path::new(requested).file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let mut named: Vec<String> = Vec::new();
    let mut add = |name: &str| {
        if name != stem && !named.iter().any(|n| n == name) {
            named.push(name.to_owned());
        }
    };
    for span in quoted(task, '`').into_iter().filter(|s| !looks_like_file(s)) {
        identifiers(span).filter(|id| has_word(text, id)).for_each(&mut add);
    }
    identifiers(task).filter(|w| defined.contains(*w)).for_each(&mut add);
    for quote in ['"', '\''] {
        quoted(task, quote)
            .into_iter()
            .filter(|s| s.chars().count() >= MIN_NAMED && text.contains(*s))
            .for_each(&mut add);
    }
    named.truncate(MAX_NAMED);
    named
}

/// Whether `task` asks for the file `requested` itself to be deleted.
fn asks_for_file(task: &str, requested: &str) -> bool {
    let path = requested.trim_start_matches("./").to_lowercase();
    let name = Path::new(&path).file_name().and_then(|n| n.to_str()).unwrap_or(&path).to_owned();
    clauses(task).iter().any(|clause| {
        let words: Vec<String> = words(clause).map(|w| w.trim_start_matches("./").to_lowercase()).collect();
        let verb = |w: &String| DELETE_VERBS.contains(&w.as_str());
        words.iter().enumerate().filter(|(_, w)| **w == path || **w == name).any(|(i, _)| {
            let mut before = words[..i].iter().rev().skip_while(|w| FILLERS.contains(&w.as_str()));
            // "get rid of util.py" asks for the file; "the last line of util.py" does not.
            let inside = match (before.next().map(String::as_str), before.next().map(String::as_str)) {
                (Some("of"), Some("rid")) => false,
                (Some(w), _) => CONTAINERS.contains(&w),
                (None, _) => false,
            };
            let near = words[i.saturating_sub(VERB_BEFORE)..i].iter().any(verb)
                || words[i + 1..words.len().min(i + 1 + VERB_AFTER)].iter().any(verb);
            !inside && near
        })
    })
}

/// The clauses of `text`: split at line ends, `;`, `!`, `?` and a `.` that
/// ends a sentence (not the dot of `util.py`).
fn clauses(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let ends_sentence = c == '.' && chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        if matches!(c, '\n' | ';' | '!' | '?') || ends_sentence {
            out.push(&text[start..i]);
            start = i + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out
}

/// The words of `text`: runs of letters, digits and the characters of a
/// path (`_ . / - ~`), without a trailing dot.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | '~')))
        .map(|w| w.trim_matches('.'))
        .filter(|w| !w.is_empty())
}

/// The identifiers in `text` at least [`MIN_NAMED`] long.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.len() >= MIN_NAMED && w.starts_with(|c: char| c.is_alphabetic() || c == '_'))
}

/// The spans of `text` between pairs of `quote` (no line break inside).
fn quoted(text: &str, quote: char) -> Vec<&str> {
    let parts: Vec<&str> = text.split(quote).collect();
    // Odd parts lie between a pair; an unpaired last quote opens nothing.
    let inside = parts.len().saturating_sub(1) / 2;
    parts.iter().skip(1).step_by(2).take(inside).filter(|s| !s.is_empty() && !s.contains('\n')).copied().collect()
}

/// Whether `text` holds `word` as a whole identifier.
fn has_word(text: &str, word: &str) -> bool {
    let id = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back().is_none_or(|c| !id(c));
        let after = text[at + word.len()..].chars().next().is_none_or(|c| !id(c));
        before && after
    })
}

/// The note after Swival's text when `delete_file` removed the file
/// `requested` (`lines` long, defining `defined`), moved to `trashed`,
/// though the task named only `named` inside it.
pub(super) fn note(
    named: &[String],
    requested: &str,
    lines: usize,
    defined: &BTreeSet<String>,
    trashed: &str,
) -> String {
    let names = listed(named);
    let mut held = format!("{lines} line{}", if lines == 1 { "" } else { "s" });
    if !defined.is_empty() {
        let mut shown: Vec<&str> = defined.iter().take(MAX_DEFINED).map(String::as_str).collect();
        if defined.len() > MAX_DEFINED {
            shown.push("…");
        }
        held.push_str(&format!(", defining {}", shown.join(", ")));
    }
    let which = if named.len() == 1 { "which was" } else { "which were" };
    format!(
        "Note: the task names {names}, {which} inside this file; the whole file ({held}) is gone. If only {names} \
         should go, restore the file with write_file(file_path=\"{requested}\", move_from=\"{trashed}\") and edit \
         it instead. If deleting the whole file is right, say why in your answer."
    )
}

/// `names` in backticks, as a list in words: `a`, `b` and `c`.
pub fn listed(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UTIL: &str = "def helper(x):\n    return x\n\ndef main():\n    print(\"hello world\")\n";

    fn defined() -> BTreeSet<String> {
        ["helper", "main"].map(str::to_owned).into()
    }

    #[test]
    fn a_task_naming_a_function_inside_the_file_is_not_a_request_to_delete_it() {
        let task = "delete the unused function `helper` in util.py";
        assert_eq!(named_inside(task, "util.py", UTIL, &defined()), ["helper"]);
        assert_eq!(named_inside("Remove helper from util.py", "util.py", UTIL, &defined()), ["helper"]);
        assert_eq!(named_inside("drop the line \"hello world\"", "util.py", UTIL, &defined()), ["hello world"]);
    }

    #[test]
    fn a_task_asking_for_the_file_gets_no_note() {
        for task in [
            "delete util.py",
            "Remove the old file util.py; `helper` lives elsewhere now.",
            "util.py can be removed, nothing calls helper",
            "get rid of ./util.py",
        ] {
            assert_eq!(named_inside(task, "util.py", UTIL, &defined()), Vec::<String>::new(), "{task}");
        }
        assert!(named_inside("delete src/util.py", "./src/util.py", UTIL, &defined()).is_empty());
    }

    #[test]
    fn a_task_naming_nothing_inside_gets_no_note() {
        assert!(named_inside("clean up the project", "util.py", UTIL, &defined()).is_empty());
        assert!(named_inside("delete `unused_thing` in util.py", "util.py", UTIL, &defined()).is_empty());
        assert!(named_inside("delete `util.py`", "other.py", UTIL, &defined()).is_empty());
        assert!(named_inside("", "util.py", UTIL, &defined()).is_empty());
    }

    #[test]
    fn the_note_says_what_went_and_how_to_restore_it() {
        let note = note(&["helper".into()], "util.py", 5, &defined(), ".swival/trash/ab/util.py");
        assert_eq!(
            note,
            "Note: the task names `helper`, which was inside this file; the whole file (5 lines, defining helper, \
             main) is gone. If only `helper` should go, restore the file with write_file(file_path=\"util.py\", \
             move_from=\".swival/trash/ab/util.py\") and edit it instead. If deleting the whole file is right, say \
             why in your answer."
        );
        assert_eq!(listed(&["a".into(), "b".into(), "c".into()]), "`a`, `b` and `c`");
    }

    #[test]
    fn clauses_split_at_sentence_ends_but_not_inside_file_names() {
        assert_eq!(clauses("fix util.py. Then delete it; done"), ["fix util.py", " Then delete it", " done"]);
    }
}
