//! `read_file` and `read_multiple_files` with Swival's output format and
//! caps: numbered lines, 50 KB per response, long lines cut, a
//! "continue from" hint and a checksum trailer. A read that returns at
//! least one line counts for the read-before-write guard.

use super::args::{self, Later};
use super::builtin::{FileRequest, ReadFile, ReadMultipleFiles};
use super::path::Access;
use super::{ToolBox, ToolError};
use crate::beneath::{Beneath, How, Kind, Meta};
use crate::toolcall::type_name;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Most bytes of file content one response carries, by default
/// (`max_output_kb`; see [`super::OutputCaps`]).
pub const MAX_READ_BYTES: usize = 50 * 1024;
/// Lines longer than this many characters are cut.
pub const MAX_LINE_CHARS: usize = 2000;
/// A NUL byte in this many leading bytes marks a file as binary.
pub const BINARY_SNIFF: usize = 8 * 1024;
/// Default number of lines per read, by default (`max_output_lines`).
pub const DEFAULT_LIMIT: usize = 2000;
/// Most files in one `read_multiple_files` call.
pub(super) const MAX_BATCH: usize = 20;

/// First 8 hex digits of the SHA-256 of `bytes` (Swival's checksum).
pub fn checksum(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..4])
}

/// Whether `bytes` look binary (a NUL in the first 8 KB).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_SNIFF)].contains(&0)
}

/// A line cut to [`MAX_LINE_CHARS`] with a marker saying how long it was.
pub fn cut_line(line: &str) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None => line.into(),
        Some((at, _)) => format!("{}… [line truncated: {} chars]", &line[..at], line.chars().count()).into(),
    }
}

/// Which part of a file to read.
#[derive(Debug, Clone, Copy)]
struct Window {
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
    fn new(
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
    fn first(default_limit: usize) -> Window {
        Window { offset: 1, limit: default_limit.max(1), tail: None }
    }

    /// How the request reads in a `read_multiple_files` section.
    fn describe(&self) -> String {
        match self.tail {
            Some(t) => format!("tail={t}"),
            None => format!("offset={} limit={}", self.offset, self.limit),
        }
    }
}

impl ReadFile {
    /// The part of the file asked for.
    fn window(&self, default_limit: usize) -> Result<Window, ToolError> {
        Window::new(self.offset, self.limit, self.tail_lines, &self.tail, default_limit)
    }
}

impl FileRequest {
    /// The part of the file asked for.
    fn window(&self, default_limit: usize) -> Result<Window, ToolError> {
        Window::new(self.offset, self.limit, self.tail_lines, &self.tail, default_limit)
    }
}

/// One page of a text file.
struct Page {
    /// `N: text` lines joined by `\n`.
    body: String,
    /// Lines after the page.
    remaining: usize,
    /// Where the next page starts (from 1).
    next_offset: usize,
    /// Checksum of the whole file.
    checksum: String,
    /// Whether the page counts as a read for the write guard (a line came
    /// back, or the file is empty).
    counts_as_read: bool,
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

/// What `requested` (resolved to `path`) is, opened beneath its root.
pub(super) enum Opened {
    /// It does not exist.
    Missing,
    /// A directory, to list.
    Dir(Beneath, PathBuf),
    /// A file, open for reading.
    File(std::fs::File),
}

/// Open the resolved `path` for reading, beneath the directory it lies in.
pub(super) fn open_for_read(tb: &ToolBox, path: &Path, requested: &str) -> Result<Opened, ToolError> {
    let (dir, rel) = tb.beneath(path)?;
    let file = match dir.open_file(&rel, How::Read) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => return Ok(Opened::Missing),
        Err(e) => return Err(tb.io_error(requested, "read", e)),
    };
    match Meta::of(&file) {
        Ok(m) if m.is_dir() => Ok(Opened::Dir(dir, rel)),
        Ok(_) => Ok(Opened::File(file)),
        Err(e) => Err(ToolError::refused(format!("cannot read {requested}: {e}"))),
    }
}

/// Read one page of the text file `file` (opened for `requested`).
fn read_page(mut file: std::fs::File, requested: &str, w: Window, max_bytes: usize) -> Result<Page, ToolError> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| ToolError::refused(format!("cannot read {requested}: {e}")))?;
    page_of(bytes, requested, w, max_bytes)
}

/// One page of a file's `bytes`, as [`read_page`] shows it.
fn page_of(bytes: Vec<u8>, requested: &str, w: Window, max_bytes: usize) -> Result<Page, ToolError> {
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
fn list_dir(tb: &ToolBox, dir: &Beneath, rel: &Path, requested: &str) -> Result<String, ToolError> {
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

/// One `=== FILE: … ===` section of `read_multiple_files`.
struct Section {
    /// The section's text.
    text: String,
    /// Whether the file was read.
    ok: bool,
    /// The file to mark as read if the section makes it into the output.
    read: Option<PathBuf>,
}

fn section(title: &str, request: &str, result: Result<(PathBuf, Page), ToolError>) -> Section {
    let mut s = format!("=== FILE: {title} ===\n");
    match result {
        Ok((path, page)) => {
            let _ = write!(
                s,
                "status: ok\nrequest: {request}\ncontent_truncated: {}\nchecksum: {}",
                page.remaining > 0,
                page.checksum
            );
            if !page.body.is_empty() {
                s.push('\n');
                s.push_str(&page.body);
            }
            if page.remaining > 0 {
                let _ = write!(s, "\n[next_offset={}]", page.next_offset);
            }
            Section { text: s, ok: true, read: page.counts_as_read.then_some(path) }
        }
        Err(e) => {
            let _ = write!(s, "status: error\nrequest: {request}\n{}", e.render());
            Section { text: s, ok: false, read: None }
        }
    }
}

/// Read one entry of a batch: a path string or a [`FileRequest`] (one
/// whose `file_path` is not a string is refused as missing).
fn batch_entry(tb: &ToolBox, index: usize, spec: &Value) -> Section {
    let default_request = &format!("offset=1 limit={}", tb.caps.read_lines);
    let (requested, window) = match spec {
        Value::String(s) => (s.as_str(), Ok(Window::first(tb.caps.read_lines))),
        Value::Object(o) => {
            let Some(requested) = o.get("file_path").and_then(Value::as_str) else {
                let title = format!("file {}", index + 1);
                return section(&title, default_request, Err(ToolError::refused("missing file_path")));
            };
            let request = args::parse::<FileRequest>(spec).map_err(ToolError::from);
            (requested, request.and_then(|r| r.window(tb.caps.read_lines)))
        }
        other => {
            return section(
                &format!("file {}", index + 1),
                default_request,
                Err(ToolError::refused(format!(
                    "expected a path string or an object with file_path, got {}",
                    type_name(other)
                ))),
            )
        }
    };
    let window = match window {
        Ok(w) => w,
        Err(e) => return section(requested, default_request, Err(e)),
    };
    let request = window.describe();
    let result = tb.policy.resolve(requested, Access::Read).map_err(ToolError::from).and_then(|path| {
        let file = match open_for_read(tb, &path, requested)? {
            Opened::Dir(..) => return Err(ToolError::refused("is a directory, use read_file to list directories")),
            Opened::Missing => return Err(ToolError::refused(format!("path does not exist: {requested}"))),
            Opened::File(f) => f,
        };
        read_page(file, requested, window, tb.caps.read_bytes).map(|page| (path, page))
    });
    section(requested, &request, result)
}

/// `read_multiple_files`: up to 20 `files`, one section each, 50 KB for
/// the whole batch; errors are per file.
pub fn read_multiple_files(tb: &mut ToolBox, args: &ReadMultipleFiles) -> Result<String, ToolError> {
    let files = match &args.files {
        Value::Array(a) if !a.is_empty() => a,
        _ => return Err(ToolError::refused("read_multiple_files requires a non-empty 'files' array. Each entry is either a path string or an object like {\"file_path\": \"...\", \"offset\": 1, \"limit\": 200}. To read a single file, use read_file instead.")),
    };
    if files.len() > MAX_BATCH {
        return Err(ToolError::refused(format!(
            "too many files requested ({}), maximum is {MAX_BATCH}; split the batch",
            files.len()
        )));
    }
    let (mut ok, mut failed, mut used) = (0, 0, 0);
    let mut sections: Vec<String> = Vec::new();
    let mut skipped = 0;
    for (i, spec) in files.iter().enumerate() {
        let section = batch_entry(tb, i, spec);
        let size = section.text.len() + 2;
        if used + size > tb.caps.read_bytes && !sections.is_empty() {
            // Unlike Swival, the section that did not fit counts as skipped
            // and is not marked read: the model never saw it.
            skipped = files.len() - i;
            break;
        }
        if section.ok {
            ok += 1;
        } else {
            failed += 1;
        }
        if let Some(p) = &section.read {
            tb.tracker.mark(p);
        }
        used += size;
        sections.push(section.text);
    }
    let mut out = format!("files_succeeded: {ok}\nfiles_with_errors: {failed}\nbatch_truncated: {}", skipped > 0);
    for s in &sections {
        out.push_str("\n\n");
        out.push_str(s);
    }
    if skipped > 0 {
        let _ = write!(
            out,
            "\n\n[batch_truncated: {skipped} file(s) skipped due to size limit; read them in another call]"
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::test_toolbox as toolbox;
    use super::*;
    use serde_json::json;

    #[test]
    fn read_numbers_lines_and_ends_with_checksum() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "one\ntwo\n").unwrap();
        let out = read_file(&mut toolbox(d.path()), &args!({"file_path": "a.txt"}), None).unwrap();
        assert_eq!(out, format!("1: one\n2: two\n[checksum={}]", checksum(b"one\ntwo\n")));
    }

    #[test]
    fn large_file_reads_in_pages_that_cover_it_all() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (0..4000).map(|i| format!("line {i} {}\n", "x".repeat(40))).collect();
        std::fs::write(d.path().join("big.txt"), &text).unwrap();
        let mut tb = toolbox(d.path());
        let mut offset = 1;
        let mut seen = Vec::new();
        loop {
            let out = read_file(&mut tb, &args!({"file_path": "big.txt", "offset": offset}), None).unwrap();
            assert!(out.len() <= MAX_READ_BYTES + 200);
            for l in out.lines().filter(|l| !l.starts_with('[')) {
                let (_, body) = l.split_once(": ").unwrap();
                seen.push(format!("{body}\n"));
            }
            match out.lines().find_map(|l| l.split("use offset=").nth(1)) {
                Some(rest) => offset = rest.trim_end_matches(" to continue]").parse().unwrap(),
                None => break,
            }
        }
        assert_eq!(seen.concat(), text);
    }

    #[test]
    fn max_output_lines_and_kb_set_the_default_limit_and_the_byte_cap() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (1..=50).map(|i| format!("line {i} {}\n", "x".repeat(40))).collect();
        std::fs::write(d.path().join("f.txt"), text).unwrap();
        let mut tb = toolbox(d.path());
        tb.caps = crate::tools::OutputCaps { read_bytes: 1024, read_lines: 3 };
        let out = read_file(&mut tb, &args!({"file_path": "f.txt"}), None).unwrap();
        assert!(out.starts_with("1: line 1 ") && out.contains("\n3: line 3 ") && !out.contains("4: line 4"), "{out}");
        assert!(out.contains("[47 more lines, use offset=4 to continue]"), "{out}");
        let out = read_file(&mut tb, &args!({"file_path": "f.txt", "limit": 50}), None).unwrap();
        assert!(out.contains("more lines, use offset=") && out.len() < 1024 + 100, "{out}");
        let schema = &tb.schemas()[0]["function"]["parameters"]["properties"]["limit"];
        assert_eq!(
            (&schema["default"], schema["description"].as_str().unwrap()),
            (&json!(3), "Maximum number of lines to return. Defaults to 3.")
        );
    }

    #[test]
    fn long_lines_are_cut_with_a_marker() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("l.txt"), "y".repeat(5000)).unwrap();
        let out = read_file(&mut toolbox(d.path()), &args!({"file_path": "l.txt"}), None).unwrap();
        assert!(out.contains("[line truncated: 5000 chars]"));
        assert!(out.len() < 2200);
    }

    #[test]
    fn tail_lines_reads_the_end_and_conflicts_with_offset() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("t.txt"), "a\nb\nc\nd\n").unwrap();
        let mut tb = toolbox(d.path());
        let out = read_file(&mut tb, &args!({"file_path": "t.txt", "tail_lines": 2}), None).unwrap();
        assert!(out.starts_with("3: c\n4: d\n[checksum="), "{out}");
        let err = read_file(&mut tb, &args!({"file_path": "t.txt", "tail_lines": 2, "offset": 2}), None)
            .unwrap_err()
            .render();
        assert!(err.contains("cannot combine 'offset' and 'tail_lines'"));
    }

    #[test]
    fn binary_and_missing_files_are_errors_naming_the_path() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("b.bin"), b"ab\0cd").unwrap();
        let mut tb = toolbox(d.path());
        let err = read_file(&mut tb, &args!({"file_path": "b.bin"}), None).unwrap_err().render();
        assert!(err.starts_with("error: binary file detected: b.bin"));
        let err = read_file(&mut tb, &args!({"file_path": "nope.txt"}), None).unwrap_err().render();
        assert!(err.starts_with("error: path does not exist: nope.txt"));
    }

    #[test]
    fn directory_read_lists_entries_with_slashes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("f.txt"), "").unwrap();
        let out = read_file(&mut toolbox(d.path()), &args!({"file_path": "."}), None).unwrap();
        assert_eq!(out, "f.txt\nsub/");
    }

    #[test]
    fn read_multiple_files_gives_one_section_per_file_and_errors_inline() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "alpha\n").unwrap();
        std::fs::create_dir(d.path().join("dir")).unwrap();
        let out = read_multiple_files(
            &mut toolbox(d.path()),
            &args!({"files": ["a.txt", {"file_path": "missing.txt"}, {"file_path": "dir"}, 7]}),
        )
        .unwrap();
        assert!(out.starts_with("files_succeeded: 1\nfiles_with_errors: 3\nbatch_truncated: false\n\n=== FILE: a.txt ===\nstatus: ok\nrequest: offset=1 limit=2000\ncontent_truncated: false\nchecksum: "), "{out}");
        assert!(out.contains("1: alpha"));
        assert!(out.contains(
            "=== FILE: missing.txt ===\nstatus: error\nrequest: offset=1 limit=2000\nerror: path does not exist: missing.txt"
        ));
        assert!(out.contains("error: is a directory, use read_file to list directories"));
        assert!(out.contains("=== FILE: file 4 ==="));
    }

    #[test]
    fn read_multiple_files_refuses_more_than_twenty() {
        let d = tempfile::tempdir().unwrap();
        let files: Vec<String> = (0..21).map(|i| format!("f{i}")).collect();
        let err = read_multiple_files(&mut toolbox(d.path()), &args!({ "files": files })).unwrap_err().render();
        assert!(err.contains("maximum is 20"));
    }

    #[test]
    fn read_multiple_files_stops_at_the_batch_budget() {
        let d = tempfile::tempdir().unwrap();
        let big = "z".repeat(1000) + "\n";
        for i in 0..3 {
            std::fs::write(d.path().join(format!("{i}.txt")), big.repeat(30)).unwrap();
        }
        let mut tb = toolbox(d.path());
        let out = read_multiple_files(&mut tb, &args!({"files": ["0.txt", "1.txt", "2.txt"]})).unwrap();
        assert!(tb.tracker.seen(&tb.policy.base.join("0.txt")));
        assert!(
            !tb.tracker.seen(&tb.policy.base.join("1.txt")),
            "a skipped file was never shown, so it does not count as read"
        );
        assert!(out.contains("batch_truncated: true"), "{}", &out[..200]);
        assert!(out.ends_with("[batch_truncated: 2 file(s) skipped due to size limit; read them in another call]"));
    }

    #[test]
    fn a_read_counts_for_the_write_guard_only_when_lines_came_back() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "x\n").unwrap();
        let mut tb = toolbox(d.path());
        let path = tb.policy.base.join("a.txt");
        read_file(&mut tb, &args!({"file_path": "a.txt", "offset": 5}), None).unwrap_err().render();
        assert!(!tb.tracker.seen(&path));
        read_file(&mut tb, &args!({"file_path": "a.txt"}), None).unwrap();
        assert!(tb.tracker.seen(&path));
    }
}
