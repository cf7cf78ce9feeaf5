//! `grep`: a regex searched in the files under a directory, matches
//! grouped by file, newest first, with Swival's output (the walk is
//! `search.rs`'s).

use super::files::{cut_line, looks_binary};
use super::path::FilesMode;
use super::search::{check_relative_pattern, file_beneath, glob, search_root, walk, Found};
use super::{CallInput, Tool, ToolBox, ToolError};
use crate::toolcall::ToolOutcome;
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::Path;
use std::time::SystemTime;
use swival_protocol::ToolKind;

/// Search file contents with a regex. Returns matches grouped by file with line numbers.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Grep {
    /// Regex pattern to search for (Rust regex syntax: no lookaround or backreferences).
    pub pattern: String,
    /// File or directory to search in, relative to base directory. Defaults to "." (base directory).
    #[schemars(extend("default" = "."))]
    pub path: Option<String>,
    /// Glob pattern to filter filenames, e.g. "*.py".
    pub include: Option<String>,
    /// If true, search case-insensitively.
    #[schemars(extend("default" = false))]
    pub case_insensitive: Option<bool>,
    /// Number of surrounding lines to show before and after each match.
    #[schemars(range(min = 0), extend("default" = 0))]
    pub context_lines: Option<i64>,
}

impl Tool for Grep {
    const NAME: &'static str = "grep";
    const KIND: ToolKind = ToolKind::Search;
    const ALIASES: &'static [&'static str] = &["search", "search_files"];

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        grep(tb, &self).map(ToolOutcome::ok)
    }
}

/// Most matches `grep` returns.
pub const MAX_GREP: usize = 100;

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
