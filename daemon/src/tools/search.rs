//! `list_files` and `grep` with Swival's output. Unlike Swival, the walk
//! (the `ignore` crate) honours `.gitignore`/`.ignore` files, even outside a
//! git repository; `.git` is always pruned and hidden files are included.
//! Results are newest first by mtime and stop at 100, saying so.
//!
//! The walk itself goes by path names, so a directory swapped for a symlink
//! mid-walk could show it names from elsewhere: every file it reports is
//! therefore checked again beneath its root ([`ToolBox::beneath`]), which
//! follows no symlink, and `grep` reads each file opened that way.

use super::builtin::{Grep, ListFiles};
use super::files::{cut_line, looks_binary};
use super::path::{Access, FilesMode, PathError};
use super::{ToolBox, ToolError};
use crate::beneath::Kind;
use globset::{GlobBuilder, GlobMatcher};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

/// Most paths `list_files` returns.
pub const MAX_LIST: usize = 100;
/// Most matches `grep` returns.
pub const MAX_GREP: usize = 100;
/// The walk stops after visiting this many files.
const MAX_WALK: usize = 20_000;

/// A file found by the walk.
pub(super) struct Found {
    /// Absolute path, as walked (what the model sees).
    pub(super) path: PathBuf,
    /// The canonical path the policy accepted (a symlink's target), to open.
    pub(super) real: PathBuf,
    /// Modification time, for newest-first order.
    mtime: SystemTime,
}

/// The metadata of the file at the canonical `real`, looked up beneath its
/// root; `None` unless it is a regular file reachable without a symlink.
fn file_beneath(tb: &ToolBox, real: &Path) -> Option<super::beneath::Meta> {
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
fn sort_newest_first(found: &mut [Found]) {
    found.sort_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| a.path.cmp(&b.path)));
}

/// A glob where `*` stays within one path component and `**` crosses them.
fn glob(pattern: &str) -> Result<GlobMatcher, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::refused(format!("invalid glob pattern '{pattern}': {e}")))
}

/// Swival refuses `..` in relative patterns, which could reach outside.
fn check_relative_pattern(pattern: &str) -> Result<(), ToolError> {
    if Path::new(pattern).components().any(|c| c == Component::ParentDir) || pattern.split('\\').any(|c| c == "..") {
        return Err(ToolError::refused(format!(
            "pattern '{pattern}' contains '..', which is not allowed; set 'path' to the directory to search instead"
        )));
    }
    Ok(())
}

/// Split an absolute glob into the literal directory it starts from and the
/// rest: `/opt/lib/**/*.rs` → (`/opt/lib`, `**/*.rs`).
fn split_absolute_glob(pattern: &str) -> (String, String) {
    let parts: Vec<&str> = pattern.split('/').collect();
    let at = parts.iter().position(|p| p.contains(['*', '?', '[', ']', '{', '}'])).unwrap_or(parts.len());
    let root = parts[..at].join("/");
    let rest = parts[at..].join("/");
    (if root.is_empty() { "/".into() } else { root }, if rest.is_empty() { "*".into() } else { rest })
}

/// Expand a leading `~` in a pattern the way paths are expanded.
fn expand_tilde(pattern: &str, home: Option<&std::path::Path>) -> Result<String, ToolError> {
    if pattern == "~" || pattern.starts_with("~/") {
        let home = home.ok_or(PathError::NoHome)?;
        return Ok(format!("{}{}", home.display(), &pattern[1..]));
    }
    if pattern.starts_with('~') {
        return Err(ToolError::refused(format!(
            "pattern '{pattern}' uses ~user syntax, which is not supported; use an absolute path"
        )));
    }
    Ok(pattern.to_owned())
}

/// Resolve the `path` argument of a search for reading; it must exist.
fn search_root(tb: &ToolBox, path: &str) -> Result<PathBuf, ToolError> {
    let root = tb.policy.resolve(path, Access::Read)?;
    if !root.exists() {
        return Err(ToolError::refused(format!("path does not exist: {path}")));
    }
    Ok(root)
}

/// `list_files`.
pub fn list_files(tb: &mut ToolBox, args: &ListFiles) -> Result<String, ToolError> {
    let pattern = expand_tilde(&args.pattern, tb.policy.home.as_deref())?;
    let mut path = args.path.as_deref().unwrap_or(".").to_owned();
    let pattern = if pattern.starts_with('/') {
        let (root, rest) = split_absolute_glob(&pattern);
        path = root;
        rest
    } else {
        check_relative_pattern(&pattern)?;
        pattern
    };
    let matcher = glob(&pattern)?;
    let root = search_root(tb, &path)?;
    if root.is_file() {
        return Ok(tb.policy.display(&root));
    }
    if !root.is_dir() {
        return Err(ToolError::refused(format!("path is not a directory: {path}")));
    }
    let (mut found, walk_cut) = walk(tb, &root, |rel| matcher.is_match(rel));
    if found.is_empty() {
        return Ok(if walk_cut {
            format!("No files matched the pattern in the first {MAX_WALK} entries visited. Search stopped early — narrow the path or use a more specific pattern.")
        } else {
            "No files matched the pattern.".into()
        });
    }
    sort_newest_first(&mut found);
    let total = found.len();
    let mut out = String::new();
    let mut shown = 0;
    for f in found.iter().take(MAX_LIST) {
        let line = tb.policy.display(&f.path);
        if out.len() + line.len() + 1 > tb.caps.read_bytes {
            break;
        }
        if shown > 0 {
            out.push('\n');
        }
        out.push_str(&line);
        shown += 1;
    }
    let mut notes = Vec::new();
    if walk_cut {
        notes.push(format!("Search stopped after visiting {MAX_WALK} entries; results may be incomplete and not globally sorted by mtime."));
    }
    if shown < total {
        notes.push(format!("Showing first {shown} of {total} matches (by mtime, newest first)."));
    }
    if !notes.is_empty() {
        let _ = write!(out, "\n({} Narrow the path or pattern.)", notes.join(" "));
    }
    Ok(out)
}

/// One matching line.
struct Hit {
    /// Index into the searched files.
    file: usize,
    /// Line number, from 1.
    line: usize,
}

/// A searched file with at least one match.
struct Searched {
    found: Found,
    /// Its lines, kept for context output.
    lines: Vec<String>,
}

/// Whether `include` accepts a file, as Swival: the glob against the path
/// relative to the root, or its last component against the file name.
fn include_filter(include: Option<&str>) -> Result<impl Fn(&str) -> bool, ToolError> {
    let matchers = match include {
        None => None,
        Some(inc) => {
            let last = inc.rsplit('/').next().unwrap_or(inc);
            Some((glob(inc)?, glob(last)?))
        }
    };
    Ok(move |rel: &str| match &matchers {
        None => true,
        Some((full, name)) => full.is_match(rel) || name.is_match(rel.rsplit('/').next().unwrap_or(rel)),
    })
}

/// The files `grep` looks at: `root` itself when it is a file (whatever
/// `include` says), else the walk under it filtered by `include`.
fn grep_candidates(tb: &ToolBox, root: &Path, path: &str, include: Option<&str>) -> Result<Vec<Found>, ToolError> {
    if root.is_file() {
        let mtime = file_beneath(tb, root).map_or(SystemTime::UNIX_EPOCH, |m| m.modified);
        return Ok(vec![Found { path: root.to_owned(), real: root.to_owned(), mtime }]);
    }
    if !root.is_dir() {
        return Err(ToolError::refused(format!("path is not a directory: {path}")));
    }
    Ok(walk(tb, root, include_filter(include)?).0)
}

/// Every line of `candidates` matching `regex`; binary and non-UTF-8 files
/// are skipped silently, as in Swival.
fn search_files(tb: &ToolBox, candidates: Vec<Found>, regex: &regex::Regex) -> (Vec<Searched>, Vec<Hit>) {
    let mut searched: Vec<Searched> = Vec::new();
    let mut hits: Vec<Hit> = Vec::new();
    for found in candidates {
        // Opened beneath its root: a file whose path changed since the walk
        // into a symlink is skipped, never read.
        let Ok((dir, rel)) = tb.beneath(&found.real) else {
            continue;
        };
        let Ok(bytes) = dir.read(&rel) else {
            continue;
        };
        if looks_binary(&bytes) {
            continue;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let before = hits.len();
        for (i, line) in text.lines().enumerate() {
            if regex.is_match(line) {
                hits.push(Hit { file: searched.len(), line: i + 1 });
            }
        }
        if hits.len() > before {
            searched.push(Searched { found, lines: text.lines().map(str::to_owned).collect() });
        }
    }
    (searched, hits)
}

/// `grep`.
pub fn grep(tb: &mut ToolBox, args: &Grep) -> Result<String, ToolError> {
    let pattern = args.pattern.as_str();
    let path = args.path.as_deref().unwrap_or(".");
    let include = args.include.as_deref();
    let case_insensitive = args.case_insensitive.unwrap_or(false);
    let context = args.context_lines.unwrap_or(0).max(0) as usize;
    if let Some(inc) = include {
        // As in Swival, checked only when the file tools are not unrestricted.
        if tb.policy.files != FilesMode::All {
            check_relative_pattern(inc)?;
        }
    }
    let regex = regex::RegexBuilder::new(pattern).case_insensitive(case_insensitive).build().map_err(|e| {
        ToolError::refused(format!(
            "invalid regex '{pattern}': {e}\n(The syntax is Rust's regex crate: no lookaround or backreferences.)"
        ))
    })?;
    let root = search_root(tb, path)?;
    let candidates = grep_candidates(tb, &root, path, include)?;
    let (searched, mut hits) = search_files(tb, candidates, &regex);
    if hits.is_empty() {
        return Ok("No matches found.".into());
    }
    hits.sort_by(|a, b| {
        let (fa, fb) = (&searched[a.file].found, &searched[b.file].found);
        fb.mtime.cmp(&fa.mtime).then_with(|| fa.path.cmp(&fb.path)).then(a.line.cmp(&b.line))
    });
    let total = hits.len();
    hits.truncate(MAX_GREP);
    Ok(format_grep(tb, &searched, &hits, total, context))
}

/// Swival's grep output: a count, then per file a `<path>:` heading and
/// `  Line n: text` lines; with context, match lines end in `  <<<` and
/// blocks are separated by `  --`.
fn format_grep(tb: &ToolBox, searched: &[Searched], hits: &[Hit], total: usize, context: usize) -> String {
    let mut out = format!("Found {total} match{}", if total == 1 { "" } else { "es" });
    let mut byte_cut = false;
    let mut push = |out: &mut String, line: String| -> bool {
        if out.len() + line.len() + 1 > tb.caps.read_bytes {
            byte_cut = true;
            return false;
        }
        out.push('\n');
        out.push_str(&line);
        true
    };
    let mut i = 0;
    'files: while i < hits.len() {
        let file = hits[i].file;
        let mut lines_hit: Vec<usize> = Vec::new();
        while i < hits.len() && hits[i].file == file {
            lines_hit.push(hits[i].line);
            i += 1;
        }
        let s = &searched[file];
        if !push(&mut out, format!("\n{}:", tb.policy.display(&s.found.path))) {
            break;
        }
        // Blocks of (first, last) line numbers, merged when they touch.
        let mut blocks: Vec<(usize, usize)> = Vec::new();
        for &l in &lines_hit {
            let (first, last) = (l.saturating_sub(context).max(1), (l + context).min(s.lines.len()));
            match blocks.last_mut() {
                Some(b) if first <= b.1 + 1 => b.1 = b.1.max(last),
                _ => blocks.push((first, last)),
            }
        }
        for (bi, &(first, last)) in blocks.iter().enumerate() {
            if bi > 0 && context > 0 && !push(&mut out, "  --".into()) {
                break 'files;
            }
            for n in first..=last {
                let is_hit = lines_hit.binary_search(&n).is_ok();
                let marker = if context > 0 && is_hit { "  <<<" } else { "" };
                let text = cut_line(&s.lines[n - 1]);
                if !push(&mut out, format!("  Line {n}: {text}{marker}")) {
                    break 'files;
                }
            }
        }
    }
    if total > hits.len() || byte_cut {
        out.push_str("\n(Results truncated: showing first 100 matches. Use a more specific pattern or path.)");
    }
    out
}

#[cfg(test)]
mod tests {
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
