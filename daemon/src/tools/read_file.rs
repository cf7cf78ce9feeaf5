//! `read_file` with Swival's output format and caps: numbered lines,
//! 50 KB per response, long lines cut, a "continue from" hint and a
//! checksum trailer; a directory is listed. A read that returns at least
//! one line counts for the read-before-write guard.

use super::args::Later;
use super::files::{checksum, cut_line, looks_binary, open_for_read, Opened};
use super::path::Access;
use super::schema::{description_last, limit_defaults_to};
use super::{CallInput, Tool, ToolBox, ToolError};
use crate::beneath::{Beneath, Kind};
use crate::toolcall::ToolOutcome;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;
use swival_protocol::ToolKind;

/// Read a file as numbered lines. Use offset/limit to paginate forward, or tail_lines=N for the file end. Truncated output shows the next offset. Also lists directories.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFile {
    /// Path to the file or directory to read.
    pub file_path: String,
    /// 1-based line number to start reading from. Defaults to 1.
    #[schemars(extend("default" = 1))]
    pub offset: Option<i64>,
    /// Maximum number of lines to return.
    pub limit: Option<i64>,
    /// Number of lines to return from the end of the file. Mutually exclusive with offset; pass at most one of the two. To paginate within the tail, use the offset from the continuation hint in a follow-up call (without tail_lines).
    #[schemars(range(min = 1), transform = description_last)]
    pub tail_lines: Option<i64>,
    /// Swival's older name for `tail_lines`, read when that is absent.
    #[schemars(skip)]
    pub tail: Later<Option<i64>>,
}

impl ReadFile {
    /// A read of the whole of `file_path` (as far as the default limit goes).
    pub fn whole(file_path: &str) -> ReadFile {
        ReadFile {
            file_path: file_path.to_owned(),
            offset: None,
            limit: None,
            tail_lines: None,
            tail: Later::default(),
        }
    }

    /// The part of the file asked for.
    fn window(&self, default_limit: usize) -> Result<Window, ToolError> {
        Window::new(self.offset, self.limit, self.tail_lines, &self.tail, default_limit)
    }
}

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    const KIND: ToolKind = ToolKind::Read;
    const ALIASES: &'static [&'static str] = &["open_file", "cat", "view_file"];
    const EDITOR_TEXT: bool = true;

    fn run(self, tb: &mut ToolBox, call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        read_file(tb, &self, call.editor_text.take()).map(ToolOutcome::ok)
    }

    fn fit(parameters: &mut Value, read_lines: usize) {
        limit_defaults_to(&mut parameters["properties"], read_lines);
    }
}

/// Which part of a file to read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    /// First line, from 1.
    offset: usize,
    /// Most lines.
    limit: usize,
    /// Read the last N lines instead of from `offset`.
    tail: Option<usize>,
}

impl Window {
    /// The window `offset`/`limit`/`tail_lines` name (or Swival's older
    /// `tail`, read only when `tail_lines` is absent); `limit` defaults to
    /// `default_limit`.
    pub(super) fn new(
        offset: Option<i64>,
        limit: Option<i64>,
        tail_lines: Option<i64>,
        tail: &Later<Option<i64>>,
        default_limit: usize,
    ) -> Result<Window, ToolError> {
        let limit = match limit {
            Some(n) => n.max(1) as usize,
            None => default_limit.max(1),
        };
        let tail = match tail_lines {
            Some(t) => Some(t),
            None => tail.read("tail")?,
        };
        let tail = match (offset, tail) {
            (Some(o), Some(t)) if t > 1 => {
                return Err(ToolError::refused(format!(
                    "cannot combine 'offset' and 'tail_lines'. To read the last {t} lines, drop 'offset' and keep tail_lines={t}. To paginate forward from line {o}, drop 'tail_lines' and keep offset={o}."
                )))
            }
            (Some(_), Some(_)) => None,
            // Swival: tail_lines=1 with a larger limit means "the last `limit` lines".
            (None, Some(t)) if t <= 1 && limit > 1 => Some(limit),
            (None, Some(t)) => Some(t.max(1) as usize),
            (_, None) => None,
        };
        Ok(Window { offset: offset.unwrap_or(1).max(1) as usize, limit, tail })
    }

    /// The first `default_limit` lines (a bare path in a batch).
    pub(super) fn first(default_limit: usize) -> Window {
        Window { offset: 1, limit: default_limit.max(1), tail: None }
    }

    /// How the request reads in a `read_multiple_files` section.
    pub(super) fn describe(&self) -> String {
        match self.tail {
            Some(t) => format!("tail={t}"),
            None => format!("offset={} limit={}", self.offset, self.limit),
        }
    }
}

/// One page of a text file.
pub(super) struct Page {
    /// `N: text` lines joined by `\n`.
    pub(super) body: String,
    /// Lines after the page.
    pub(super) remaining: usize,
    /// Where the next page starts (from 1).
    pub(super) next_offset: usize,
    /// Checksum of the whole file.
    pub(super) checksum: String,
    /// Whether the page counts as a read for the write guard (a line came
    /// back, or the file is empty).
    pub(super) counts_as_read: bool,
}

/// Swival's friendly answers for two `.swival` files that may not exist yet.
fn missing_note(tb: &ToolBox, path: &Path) -> Option<&'static str> {
    let swival = tb.policy.base.join(".swival");
    if path == swival.join("memory/MEMORY.md") {
        return Some(".swival/memory/MEMORY.md does not exist yet. This file stores durable, reusable lessons (short bulleted notes) that persist across sessions. Create it when you learn something worth remembering — tool quirks, API pitfalls, syntax surprises, or project-specific conventions. For detailed topics, create separate files in .swival/memory/ and reference them from MEMORY.md.");
    }
    if path == swival.join("HISTORY.md") {
        return Some("No history yet. Update .swival/memory/MEMORY.md when you learn something worth remembering long-term about the project.");
    }
    None
}

/// Read one page of the text file `file` (opened for `requested`).
pub(super) fn read_page(
    mut file: std::fs::File,
    requested: &str,
    w: Window,
    max_bytes: usize,
) -> Result<Page, ToolError> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| ToolError::refused(format!("cannot read {requested}: {e}")))?;
    page_of(bytes, requested, w, max_bytes)
}

/// One page of a file's `bytes`, as [`read_page`] shows it.
pub(super) fn page_of(bytes: Vec<u8>, requested: &str, w: Window, max_bytes: usize) -> Result<Page, ToolError> {
    if looks_binary(&bytes) {
        return Err(ToolError::refused(format!("binary file detected: {requested}; read_file only shows text")));
    }
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        ToolError::refused(format!("failed to decode {requested} as UTF-8: {e}; read_file only shows UTF-8 text"))
    })?;
    // `lines()` splits on `\n` and drops a trailing `\r`, like Python's
    // `splitlines()` does for the common cases.
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let start = match w.tail {
        Some(t) => total.saturating_sub(t),
        None => w.offset - 1,
    };
    if start > 0 && start >= total {
        return Err(ToolError::refused(format!(
            "offset {} is past the end of {requested}, which has {total} lines; use a smaller offset or tail_lines",
            start + 1
        )));
    }
    let mut body = String::new();
    let mut emitted = 0;
    for (i, line) in lines.iter().enumerate().skip(start).take(w.limit) {
        let entry = format!("{}: {}", i + 1, cut_line(line));
        if body.len() + entry.len() + 1 > max_bytes && emitted > 0 {
            break;
        }
        if emitted > 0 {
            body.push('\n');
        }
        body.push_str(&entry);
        emitted += 1;
    }
    Ok(Page {
        counts_as_read: emitted > 0 || total == 0,
        body,
        remaining: total - start - emitted,
        next_offset: start + emitted + 1,
        checksum: checksum(&bytes),
    })
}

/// `read_file`.
pub fn read_file(
    tb: &mut ToolBox,
    args: &ReadFile,
    editor_text: Option<(std::path::PathBuf, String)>,
) -> Result<String, ToolError> {
    let requested = args.file_path.as_str();
    let path = tb.policy.resolve(requested, Access::Read)?;
    let window = args.window(tb.caps.read_lines)?;
    // An editor's unsaved text of this very path, fetched for this call.
    let page = match editor_text.filter(|(p, _)| *p == path) {
        Some((_, text)) => page_of(text.into_bytes(), requested, window, tb.caps.read_bytes)?,
        None => match open_for_read(tb, &path, requested)? {
            Opened::Missing => {
                if let Some(note) = missing_note(tb, &path) {
                    return Ok(note.into());
                }
                let plain = format!("path does not exist: {requested}; check the name with list_files");
                return Err(tb.missing_file(requested, &path, plain));
            }
            Opened::Dir(dir, rel) => return list_dir(tb, &dir, &rel, requested),
            Opened::File(f) => read_page(f, requested, window, tb.caps.read_bytes)?,
        },
    };
    if page.counts_as_read {
        tb.tracker.mark(&path);
    }
    let mut out = page.body;
    if page.remaining > 0 {
        let _ = write!(out, "\n[{} more lines, use offset={} to continue]", page.remaining, page.next_offset);
    }
    if !out.is_empty() {
        out.push('\n');
    }
    let _ = write!(out, "[checksum={}]", page.checksum);
    Ok(out)
}

/// The names in the directory `rel` beneath `dir`, directories marked
/// with `/` (symlinks are not followed to find out).
pub(super) fn list_dir(tb: &ToolBox, dir: &Beneath, rel: &Path, requested: &str) -> Result<String, ToolError> {
    let mut names: Vec<String> = dir
        .list(rel)
        .map_err(|e| tb.io_error(requested, "list", e))?
        .into_iter()
        .map(|e| {
            let mut n = e.name.to_string_lossy().into_owned();
            if e.meta.kind == Kind::Dir {
                n.push('/');
            }
            n
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Ok(format!("{requested} is an empty directory"));
    }
    let mut out = String::new();
    for n in names {
        if out.len() + n.len() + 1 > tb.caps.read_bytes {
            let _ = write!(out, "\n[truncated at {}KB]", tb.caps.read_bytes / 1024);
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&n);
    }
    Ok(out)
}

/// Take out of `content` what read_file's output adds to a file's lines
/// and a small model copies back: a last line `[checksum=…]`, and `N: `
/// before every line when the lines (at least `min_numbered`) are
/// numbered one after another.
pub(super) fn unread(content: &mut String, numbers: bool, min_numbered: usize) -> Vec<String> {
    let mut notes = Vec::new();
    let body = content.trim_end();
    if let Some((rest, last)) = body.rsplit_once('\n').or(Some(("", body))) {
        let trailer = last.strip_prefix("[checksum=").and_then(|t| t.strip_suffix(']'));
        if trailer.is_some_and(|hex| !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit())) {
            *content = format!("{rest}\n");
            notes.push("left out the '[checksum=…]' line: read_file shows it, it is not in the file".to_owned());
        }
    }
    if !numbers {
        return notes;
    }
    let numbered: Option<Vec<&str>> = content
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let (n, text) = line.split_once(": ").or_else(|| line.strip_suffix(':').map(|n| (n, "")))?;
            let n = n.trim().parse::<usize>().ok().filter(|&n| n > 0)?;
            Some((i, n, text))
        })
        .scan(None, |first: &mut Option<usize>, item| {
            let (i, n, text) = item?;
            let start = *first.get_or_insert(n - i.min(n));
            Some((n == start + i).then_some(text))
        })
        .collect();
    if let Some(lines) = numbered.filter(|l| l.len() >= min_numbered.max(1) && l.len() == content.lines().count()) {
        let ends = if content.ends_with('\n') { "\n" } else { "" };
        *content = format!("{}{ends}", lines.join("\n"));
        notes.push("left out the line numbers: read_file shows them, they are not in the file".to_owned());
    }
    notes
}
