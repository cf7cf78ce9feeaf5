//! `read_multiple_files`: up to 20 reads in one call, each as
//! `read_file` reads (`read_file.rs`), errors inline per file, the batch
//! within one response's byte budget.

use super::args::{self, Later};
use super::files::{open_for_read, Opened};
use super::path::Access;
use super::read_file::{read_page, Page, Window};
use super::schema::{description_last, items_last, limit_defaults_to, Requests};
use super::{CallInput, Tool, ToolBox, ToolError};
use crate::toolcall::{type_name, ToolOutcome};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;
use swival_protocol::ToolKind;

/// Prefer this over multiple read_file calls when you know which files you need. Reads a batch, each with optional offset/limit/tail_lines. Per-file errors are inline; the batch never fails as a whole.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadMultipleFiles {
    /// List of file read requests.
    #[schemars(with = "Requests<FileRequest>", length(max = MAX_BATCH), transform = items_last)]
    pub files: Value,
}

/// One entry of `files` (no description: Swival's has none); a bare path
/// string is taken too.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct FileRequest {
    /// Path to the file to read.
    // Offered and checked here; `batch_entry` takes the path from the
    // entry before parsing it, to title a section even when this fails.
    #[allow(dead_code)]
    pub file_path: String,
    /// 1-based line number to start reading from. Defaults to 1.
    #[schemars(extend("default" = 1))]
    pub offset: Option<i64>,
    /// Maximum number of lines to return.
    pub limit: Option<i64>,
    /// Number of lines to return from the end of the file. Mutually exclusive with offset; pass at most one of the two.
    #[schemars(range(min = 1), transform = description_last)]
    pub tail_lines: Option<i64>,
    /// Swival's older name for `tail_lines`, read when that is absent.
    #[schemars(skip)]
    pub tail: Later<Option<i64>>,
}

impl FileRequest {
    /// The part of the file asked for.
    fn window(&self, default_limit: usize) -> Result<Window, ToolError> {
        Window::new(self.offset, self.limit, self.tail_lines, &self.tail, default_limit)
    }
}

impl Tool for ReadMultipleFiles {
    const NAME: &'static str = "read_multiple_files";
    const KIND: ToolKind = ToolKind::Read;

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        read_multiple_files(tb, &self).map(ToolOutcome::ok)
    }

    fn fit(parameters: &mut Value, read_lines: usize) {
        limit_defaults_to(&mut parameters["properties"]["files"]["items"]["properties"], read_lines);
    }
}

/// Most files in one `read_multiple_files` call.
pub(super) const MAX_BATCH: usize = 20;

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
