//! `write_file`: a file's whole content written, or `move_from` renamed
//! onto it, behind the path policy's write check and the
//! read-before-write guard (`write.rs`).

use super::files::checksum;
use super::path::Access;
use super::write::{content_at, failed_write, put, track, MAX_COMPARED_TEXT};
use super::{CallInput, Tool, ToolBox, ToolError};
use crate::beneath::{self, Beneath, How};
use crate::toolcall::{Change, Content, ToolOutcome};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;
use swival_protocol::ToolKind;

/// Create or overwrite a file with content, or atomically rename move_from to file_path (not both). Parent directories are created.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFile {
    /// Destination path.
    pub file_path: String,
    /// The content to write. Do not set with move_from.
    #[schemars(with = "Option<String>")]
    pub content: Value,
    /// Source path to atomically rename to file_path. Do not set with content. If the destination already exists, it must have been read or written first.
    pub move_from: Option<String>,
}

impl Tool for WriteFile {
    const NAME: &'static str = "write_file";
    const KIND: ToolKind = ToolKind::Edit;
    const ALIASES: &'static [&'static str] = &["create_file", "save_file"];

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        // The one tool whose success may carry a warning.
        write_file(tb, &self)
    }

    /// What read_file's output adds, copied back into `content` (a YAML
    /// file may well be `1: a` `2: b`, so its numbers stay).
    fn repair(args: &mut serde_json::Map<String, Value>) -> Vec<String> {
        let yaml =
            args.get("file_path").and_then(Value::as_str).is_some_and(|p| p.ends_with(".yaml") || p.ends_with(".yml"));
        match args.get_mut("content") {
            Some(Value::String(content)) => super::read_file::unread(content, !yaml, 2),
            _ => Vec::new(),
        }
    }

    fn paths(&self) -> Vec<String> {
        std::iter::once(self.file_path.clone()).chain(self.move_from.clone()).collect()
    }

    fn kind(&self) -> ToolKind {
        if self.move_from.is_some() {
            ToolKind::Move
        } else {
            ToolKind::Edit
        }
    }
}

/// `write_file`: exactly one of `content` and `move_from`. A write that
/// may not be what the task wanted (`near.rs`) succeeds with a warning
/// note.
pub fn write_file(tb: &mut ToolBox, args: &WriteFile) -> Result<ToolOutcome, ToolError> {
    let requested = args.file_path.as_str();
    // Empty strings count as "not given", as in Swival.
    let content = match &args.content {
        Value::Null => None,
        Value::String(s) if s.is_empty() && args.move_from.is_some() => None,
        Value::String(s) => Some(s.clone()),
        // A model sending an object for a JSON file: write it as JSON.
        other => Some(serde_json::to_string_pretty(other).unwrap_or_default()),
    };
    let move_from = args.move_from.as_deref().filter(|s| !s.is_empty());
    let path = tb.policy.resolve(requested, Access::Write)?;
    match (content, move_from) {
        (Some(_), Some(_)) => Err(ToolError::refused(format!("write_file received both 'content' and 'move_from'. These are mutually exclusive: set 'content' (a string) to create or overwrite {requested}, OR set 'move_from' (a source path) to atomically rename that path to {requested}. Drop whichever one does not apply and retry."))),
        (None, None) => Err(ToolError::refused(format!("write_file requires exactly one of 'content' or 'move_from'. To create or overwrite {requested}, pass 'content' as a string (use \"\" for an empty file). To rename an existing file to {requested}, pass 'move_from' with the source path. Retry with one of these arguments."))),
        (Some(content), None) => {
            let (dir, rel) = tb.beneath(&path)?;
            let existing = dir.metadata(&rel).ok();
            if existing.is_some_and(|m| m.is_dir()) {
                return Err(ToolError::refused(format!(
                    "{requested} is a directory; give a file path"
                )));
            }
            tb.check_write(&path, requested, existing.is_some())?;
            let held = existing.and_then(|_| content_at(&dir, &rel));
            create_parent(tb, &dir, &rel, requested)?;
            let mode = match put(&dir, &rel, How::Truncate, content.as_bytes()) {
                Ok(mode) => mode,
                Err(e) => return Ok(failed_write(tb.io_error(requested, "write", e), &path, held)),
            };
            let change = Change::written(path.clone(), held, Content::file(content.as_bytes(), mode));
            let futile = track(tb, &change);
            // What it held, when small enough to compare with what is written.
            let before = change.before.as_ref().and_then(Content::bytes);
            let before = before.filter(|b| b.len() as u64 <= MAX_COMPARED_TEXT);
            let note = match before {
                Some(old) => super::near::dropped_lines_note(&String::from_utf8_lossy(old), &content),
                None if existing.is_none() => tb.new_file_note(requested, &path),
                None => None,
            };
            // A file too large to have been compared is not checked.
            let old_text = before.map(String::from_utf8_lossy);
            let checks = (tb.edit_checks && (existing.is_none() || old_text.is_some()))
                .then(|| super::lang::notes(&path, old_text.as_deref(), &content))
                .flatten();
            let note = [note, checks, futile.clone()].into_iter().flatten().reduce(|a, b| format!("{a}\n{b}"));
            let mut result =
                format!("Wrote {} bytes to {requested}\n[checksum={}]", content.len(), checksum(content.as_bytes()));
            let outcome = match note {
                Some(note) => {
                    result.push_str(super::near::NOTE);
                    result.push_str(&note);
                    ToolOutcome::warned(result)
                }
                None => ToolOutcome::ok(result),
            };
            Ok(outcome.with_change(Some(change)).with_futile(futile))
        }
        (None, Some(source)) => move_file(tb, requested, &path, source),
    }
}

/// Create the missing directories above `rel`, each beneath the last.
fn create_parent(tb: &ToolBox, dir: &Beneath, rel: &Path, requested: &str) -> Result<(), ToolError> {
    match rel.parent() {
        Some(parent) => dir.mkdir_all(parent).map_err(|e| tb.io_error(requested, "create the directories for", e)),
        None => Ok(()),
    }
}

/// Rename `source` to `dest` (a file or a symlink, never a directory).
fn move_file(tb: &mut ToolBox, requested: &str, dest: &Path, source: &str) -> Result<ToolOutcome, ToolError> {
    let (dest_dir, dest_rel) = tb.beneath(dest)?;
    let existing = dest_dir.metadata(&dest_rel).ok();
    if existing.is_some_and(|m| m.is_dir()) {
        return Err(ToolError::refused(format!("{requested} is a directory; give the destination's full file path")));
    }
    tb.check_write(dest, requested, existing.is_some())?;
    let resolved_source = tb.policy.resolve(source, Access::Write)?;
    if resolved_source == dest {
        return Err(ToolError::refused(format!("write_file move_from='{source}' and file_path='{requested}' resolve to the same location, so the rename would be a no-op. To rename a file, set file_path to the new destination path.")));
    }
    // The entry itself, so a symlink is moved rather than its target.
    let (source_dir, source_rel) = tb.entry(source)?;
    let meta = source_dir.metadata(&source_rel).map_err(|e| match e {
        beneath::Error::Symlink(_) => tb.io_error(source, "read", e),
        _ => ToolError::refused(format!("move_from not found: {source}")),
    })?;
    if meta.is_dir() {
        return Err(ToolError::refused(format!("move_from='{source}' is a directory. write_file's move_from only renames regular files and symlinks, not directories. Use run_command with 'mv' to move a directory.")));
    }
    // What the rename puts an end to.
    let replaced = existing.and_then(|_| content_at(&dest_dir, &dest_rel));
    create_parent(tb, &dest_dir, &dest_rel, requested)?;
    source_dir.rename(&source_rel, &dest_dir, &dest_rel).map_err(|e| match e {
        beneath::Error::Symlink(_) => tb.io_error(requested, "write", e),
        e => ToolError::refused(format!("cannot move {source} to {requested}: {e}")),
    })?;
    tb.tracker.mark(dest);
    let change = Change {
        path: dest.to_owned(),
        before: replaced,
        after: Some(Content::At(dest.to_owned())),
        moved_from: Some(source_dir.path_of(&source_rel)),
    };
    Ok(ToolOutcome::ok(format!("Moved {source} -> {requested}")).with_change(Some(change)))
}
