//! The walk under `list_files` and `grep` (`list_files.rs`, `grep.rs`),
//! and `outline`'s directory survey. Unlike Swival, the walk
//! (the `ignore` crate) honours `.gitignore`/`.ignore` files, even outside a
//! git repository; `.git` is always pruned and hidden files are included.
//! Results are newest first by mtime and stop at 100, saying so.
//!
//! The walk itself goes by path names, so a directory swapped for a symlink
//! mid-walk could show it names from elsewhere: every file it reports is
//! therefore checked again beneath its root ([`ToolBox::beneath`]), which
//! follows no symlink, and `grep` reads each file opened that way.

use super::path::Access;
use super::{ToolBox, ToolError};
use crate::beneath::Kind;
use globset::{GlobBuilder, GlobMatcher};
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

/// The walk stops after visiting this many files.
pub(super) const MAX_WALK: usize = 20_000;

/// A file found by the walk.
pub(super) struct Found {
    /// Absolute path, as walked (what the model sees).
    pub(super) path: PathBuf,
    /// The canonical path the policy accepted (a symlink's target), to open.
    pub(super) real: PathBuf,
    /// Modification time, for newest-first order.
    pub(super) mtime: SystemTime,
}

/// The metadata of the file at the canonical `real`, looked up beneath its
/// root; `None` unless it is a regular file reachable without a symlink.
pub(super) fn file_beneath(tb: &ToolBox, real: &Path) -> Option<super::beneath::Meta> {
    let (dir, rel) = tb.beneath(real).ok()?;
    dir.metadata(&rel).ok().filter(|m| m.kind == Kind::File)
}

/// The walk of `root` every listing makes: ignore files honoured, hidden
/// files included, `.git` and the policy's hidden paths pruned, no
/// symlink followed, in name order.
fn walker(tb: &ToolBox, root: &Path) -> ignore::WalkBuilder {
    let policy = tb.policy.clone();
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| e.file_name() != ".git" && !policy.conceals(e.path()));
    builder
}

/// The entries directly in the directory `root` that [`walk`] would
/// visit, by name, each with whether it is a directory (a symlink is not,
/// whatever it leads to).
pub(super) fn entries(tb: &ToolBox, root: &Path) -> Vec<(String, bool)> {
    let walker = walker(tb, root).max_depth(Some(1)).build();
    walker
        .filter_map(Result::ok)
        .filter(|e| e.depth() == 1 && !tb.policy.conceals(e.path()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.file_type().is_some_and(|t| t.is_dir())))
        .collect()
}

/// Walk `root` for files, honouring ignore files, skipping `.git`, and
/// keeping those `keep` accepts (given the path relative to `root`).
/// Returns the files and whether the walk stopped at [`MAX_WALK`].
pub(super) fn walk(tb: &ToolBox, root: &Path, keep: impl Fn(&str) -> bool) -> (Vec<Found>, bool) {
    let walker = walker(tb, root).build();
    let mut found = Vec::new();
    let mut visited = 0;
    for entry in walker.filter_map(Result::ok) {
        let Some(ft) = entry.file_type() else {
            continue;
        };
        if ft.is_dir() {
            continue;
        }
        visited += 1;
        if visited > MAX_WALK {
            return (found, true);
        }
        let path = entry.path();
        if tb.policy.conceals(path) {
            continue;
        }
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        if !keep(&rel.to_string_lossy()) {
            continue;
        }
        // Symlinks count when they lead to a file the policy allows; a
        // regular file under the (canonical) root is inside it already,
        // unless the tree changed during the walk: both are checked again
        // beneath their root.
        let real = if ft.is_symlink() {
            match path.to_str().map(|p| tb.policy.resolve(p, Access::Read)) {
                Some(Ok(real)) => real,
                _ => continue,
            }
        } else {
            path.to_owned()
        };
        let Some(meta) = file_beneath(tb, &real) else {
            continue;
        };
        found.push(Found { path: path.to_owned(), real, mtime: meta.modified });
    }
    (found, false)
}

/// Newest first, then by path.
pub(super) fn sort_newest_first(found: &mut [Found]) {
    found.sort_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| a.path.cmp(&b.path)));
}

/// A glob where `*` stays within one path component and `**` crosses them.
pub(super) fn glob(pattern: &str) -> Result<GlobMatcher, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::refused(format!("invalid glob pattern '{pattern}': {e}")))
}

/// Swival refuses `..` in relative patterns, which could reach outside.
pub(super) fn check_relative_pattern(pattern: &str) -> Result<(), ToolError> {
    if Path::new(pattern).components().any(|c| c == Component::ParentDir) || pattern.split('\\').any(|c| c == "..") {
        return Err(ToolError::refused(format!(
            "pattern '{pattern}' contains '..', which is not allowed; set 'path' to the directory to search instead"
        )));
    }
    Ok(())
}

/// Resolve the `path` argument of a search for reading; it must exist.
pub(super) fn search_root(tb: &ToolBox, path: &str) -> Result<PathBuf, ToolError> {
    let root = tb.policy.resolve(path, Access::Read)?;
    if !root.exists() {
        return Err(ToolError::refused(format!("path does not exist: {path}")));
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::super::grep::grep;
    use super::super::list_files::list_files;
    use super::super::test_toolbox as toolbox;
    use super::*;
    use std::time::Duration;

    /// Write `name` with an mtime `age_s` seconds in the past.
    fn file(dir: &Path, name: &str, body: &str, age_s: u64) {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(age_s))
            .unwrap();
    }

    #[test]
    fn list_files_is_newest_first_relative_to_the_base() {
        let d = tempfile::tempdir().unwrap();
        file(d.path(), "src/old.rs", "", 300);
        file(d.path(), "src/new.rs", "", 10);
        file(d.path(), "src/mid.rs", "", 100);
        file(d.path(), "README.md", "", 1);
        let out = list_files(&mut toolbox(d.path()), &args!({"pattern": "**/*.rs"})).unwrap();
        assert_eq!(out, "src/new.rs\nsrc/mid.rs\nsrc/old.rs");
        let out = list_files(&mut toolbox(d.path()), &args!({"pattern": "*.rs", "path": "src"})).unwrap();
        assert_eq!(out, "src/new.rs\nsrc/mid.rs\nsrc/old.rs");
    }

    #[test]
    fn hidden_directories_are_neither_listed_nor_searched() {
        let d = tempfile::tempdir().unwrap();
        file(d.path(), ".ssh/id_rsa", "PRIVATE KEY", 0);
        file(d.path(), "notes.txt", "PRIVATE KEY mentioned", 0);
        let mut tb = toolbox(d.path());
        tb.policy.hidden = vec![tb.policy.base.join(".ssh")];
        let out = list_files(&mut tb, &args!({"pattern": "**/*"})).unwrap();
        assert_eq!(out, "notes.txt");
        let out = grep(&mut tb, &args!({"pattern": "PRIVATE"})).unwrap();
        assert!(out.contains("notes.txt") && !out.contains("id_rsa"), "{out}");
    }

    #[test]
    fn list_files_honours_gitignore_and_prunes_git() {
        let d = tempfile::tempdir().unwrap();
        file(d.path(), ".gitignore", "target/\n*.log\n", 0);
        file(d.path(), "target/debug/x.rs", "", 0);
        file(d.path(), "a.log", "", 0);
        file(d.path(), ".git/config.rs", "", 0);
        file(d.path(), "keep.rs", "", 0);
        let out = list_files(&mut toolbox(d.path()), &args!({"pattern": "**/*"})).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.contains(&"keep.rs") && lines.contains(&".gitignore"), "{out}");
        assert_eq!(lines.len(), 2, "{out}");
    }

    #[test]
    fn list_files_stops_at_100_and_says_so() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..150 {
            file(d.path(), &format!("f{i:03}.txt"), "", i);
        }
        let out = list_files(&mut toolbox(d.path()), &args!({"pattern": "*.txt"})).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 101);
        assert_eq!(lines[0], "f000.txt");
        assert_eq!(
            lines[100],
            "(Showing first 100 of 150 matches (by mtime, newest first). Narrow the path or pattern.)"
        );
    }

    #[test]
    fn list_files_refuses_dotdot_patterns_and_checks_absolute_roots() {
        let d = tempfile::tempdir().unwrap();
        let mut tb = toolbox(d.path());
        let err = list_files(&mut tb, &args!({"pattern": "../*"})).unwrap_err().render();
        assert!(err.contains("'..'"), "{err}");
        let err = list_files(&mut tb, &args!({"pattern": "/etc/*.conf"})).unwrap_err().render();
        assert!(err.contains("outside base directory"), "{err}");
        assert_eq!(list_files(&mut tb, &args!({"pattern": "*.nothing"})).unwrap(), "No files matched the pattern.");
    }

    #[test]
    fn list_files_skips_symlinks_leading_outside() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("p");
        file(d.path(), "secret.txt", "s", 0);
        file(&base, "in.txt", "", 0);
        std::os::unix::fs::symlink(d.path().join("secret.txt"), base.join("link.txt")).unwrap();
        let out = list_files(&mut toolbox(&base), &args!({"pattern": "*.txt"})).unwrap();
        assert_eq!(out, "in.txt");
    }

    #[test]
    fn grep_groups_by_file_newest_first() {
        let d = tempfile::tempdir().unwrap();
        file(d.path(), "old.rs", "fn a() {}\nlet x = 1;\nfn b() {}\n", 100);
        file(d.path(), "new.rs", "fn c() {}\n", 1);
        file(d.path(), "bin.dat", "fn \0 binary", 0);
        let out = grep(&mut toolbox(d.path()), &args!({"pattern": "^fn "})).unwrap();
        assert_eq!(
            out,
            "Found 3 matches\n\nnew.rs:\n  Line 1: fn c() {}\n\nold.rs:\n  Line 1: fn a() {}\n  Line 3: fn b() {}"
        );
    }

    #[test]
    fn grep_include_case_and_context() {
        let d = tempfile::tempdir().unwrap();
        file(d.path(), "a.py", "one\nTWO\nthree\nfour\nfive\nsix\ntwo\n", 0);
        file(d.path(), "b.txt", "two\n", 0);
        let out = grep(
            &mut toolbox(d.path()),
            &args!({"pattern": "two", "include": "*.py", "case_insensitive": true, "context_lines": 1}),
        )
        .unwrap();
        assert_eq!(
            out,
            "Found 2 matches\n\na.py:\n  Line 1: one\n  Line 2: TWO  <<<\n  Line 3: three\n  --\n  Line 6: six\n  Line 7: two  <<<"
        );
    }

    #[test]
    fn grep_stops_at_100_and_says_so() {
        let d = tempfile::tempdir().unwrap();
        let body: String = (0..150).map(|i| format!("hit {i}\n")).collect();
        file(d.path(), "many.txt", &body, 0);
        let out = grep(&mut toolbox(d.path()), &args!({"pattern": "hit"})).unwrap();
        assert!(out.starts_with("Found 150 matches\n"));
        assert_eq!(out.matches("  Line ").count(), 100);
        assert!(out.ends_with("\n(Results truncated: showing first 100 matches. Use a more specific pattern or path.)"));
    }

    #[test]
    fn grep_respects_gitignore_and_reports_bad_regex() {
        let d = tempfile::tempdir().unwrap();
        file(d.path(), ".gitignore", "ignored.txt\n", 0);
        file(d.path(), "ignored.txt", "needle\n", 0);
        let mut tb = toolbox(d.path());
        assert_eq!(grep(&mut tb, &args!({"pattern": "needle"})).unwrap(), "No matches found.");
        let err = grep(&mut tb, &args!({"pattern": "(unclosed"})).unwrap_err().render();
        assert!(err.starts_with("error: invalid regex '(unclosed'"), "{err}");
    }
}
