//! `list_files`: the files matching a glob under a directory, newest
//! first, with Swival's output (the walk is `search.rs`'s).

use super::path::PathError;
use super::search::{check_relative_pattern, glob, search_root, sort_newest_first, walk, MAX_WALK};
use super::{CallInput, Tool, ToolBox, ToolError};
use crate::toolcall::ToolOutcome;
use schemars::JsonSchema;
use serde::Deserialize;
use std::fmt::Write as _;
use swival_protocol::ToolKind;

/// Recursively list files matching a glob, relative to the base directory.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListFiles {
    /// Glob pattern to match files, e.g. "**/*.py", "src/**/*.ts".
    pub pattern: String,
    /// File or directory to search in, relative to base directory. Defaults to "." (base directory).
    #[schemars(extend("default" = "."))]
    pub path: Option<String>,
}

impl Tool for ListFiles {
    const NAME: &'static str = "list_files";
    const KIND: ToolKind = ToolKind::Search;
    const ALIASES: &'static [&'static str] = &["find", "ls", "list_directory"];

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        list_files(tb, &self).map(ToolOutcome::ok)
    }
}

/// Most paths `list_files` returns.
pub const MAX_LIST: usize = 100;

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
