//! Budgets the source tree keeps: ARCHITECTURE.md names every daemon file
//! and stays a map; `Result<_, String>` (an error a caller cannot branch
//! on) and hand-built JSON (`json!`) stay rare in the daemon's code outside
//! tests — at most half of what the second core step started from (14 and
//! 62), and lower as code moves to typed errors and wire types.

use super::{non_test_lines, root, rust_files, test_file};
use std::path::PathBuf;

/// Most `Result<_, String>` in the daemon's code outside tests.
const MAX_STRING_ERRORS: usize = 7;
/// Most `json!` in the daemon's code outside tests.
const MAX_JSON_MACROS: usize = 31;

/// Each daemon file as its path from the root and its text.
fn daemon_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&root().join("daemon/src"), &mut files);
    let rel = |p: &PathBuf| p.strip_prefix(root()).expect("under the root").display().to_string();
    files.iter().map(|p| (rel(p), std::fs::read_to_string(p).expect("a source file"))).collect()
}

/// Where `text`'s code outside tests does what `hit` finds, as `file:line`.
fn places(files: &[(String, String)], hit: impl Fn(&str) -> bool) -> Vec<String> {
    let inside = |rel: &str| test_file(rel.strip_prefix("daemon/src/").unwrap_or(rel));
    let outside = files.iter().filter(|(rel, _)| !inside(rel));
    outside
        .flat_map(|(rel, text)| {
            non_test_lines(text).into_iter().filter(|(_, l)| hit(l)).map(move |(n, _)| format!("{rel}:{n}"))
        })
        .collect()
}

/// Whether `line` declares a `Result` whose error is a bare `String`.
fn string_error(line: &str) -> bool {
    line.match_indices("Result<").any(|(i, _)| {
        let rest = &line[i..];
        let end = rest.find(['{', ';', '=']).unwrap_or(rest.len());
        rest[..end].trim_end().trim_end_matches(['>', ')', ',', ' ']).ends_with(", String")
    })
}

#[test]
fn architecture_md_names_every_daemon_file_and_stays_short() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let missing: Vec<String> = daemon_files().into_iter().map(|(rel, _)| rel).filter(|f| !doc.contains(f)).collect();
    assert!(missing.is_empty(), "ARCHITECTURE.md does not name {missing:?}: add each to its module's paragraph");
    let lines = doc.lines().count();
    assert!(lines < 250, "ARCHITECTURE.md has {lines} lines: keep it a map (under 250), details in module docs");
}

#[test]
fn string_errors_and_hand_built_json_stay_rare_in_the_daemon() {
    let files = daemon_files();
    let errors = places(&files, string_error);
    assert!(
        errors.len() <= MAX_STRING_ERRORS,
        "{} Result<_, String> outside tests (at most {MAX_STRING_ERRORS}): {errors:?} — give the error a type \
         (thiserror) whose variants say what went wrong",
        errors.len()
    );
    let json = places(&files, |l| l.contains("json!"));
    assert!(
        json.len() <= MAX_JSON_MACROS,
        "{} json! outside tests (at most {MAX_JSON_MACROS}): {json:?} — write a type deriving Serialize",
        json.len()
    );
}

#[test]
fn a_string_error_is_found_in_any_result_but_not_in_a_map_of_strings() {
    assert!(string_error("fn f() -> Result<Vec<Value>, String> {"));
    assert!(string_error("    opened: OnceLock<Result<Arc<Cache>, String>>,"));
    assert!(!string_error("fn f() -> Result<HashMap<String, String>, StoreError> {"));
    assert!(!string_error("fn f() -> Result<(), ToolError> {"));
}
