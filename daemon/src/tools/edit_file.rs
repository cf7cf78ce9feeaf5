//! `edit_file`: `old_string` replaced by `new_string` in an existing file,
//! behind the same checks as `write_file` (`write.rs`); the matching
//! itself is `edit.rs`'s.

use super::edit;
use super::files::checksum;
use super::path::Access;
use super::write::{failed_write, put, track};
use super::{CallInput, Tool, ToolBox, ToolError};
use crate::beneath::{self, Beneath, How, Kind};
use crate::toolcall::{Change, Content, ToolOutcome};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::Path;
use swival_protocol::ToolKind;

/// Replace old_string with new_string in an existing file. Prefer over write_file for edits.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFile {
    /// Path to the file to edit.
    pub file_path: String,
    /// The exact text to find and replace.
    pub old_string: String,
    /// The replacement text.
    pub new_string: String,
    /// Replace all occurrences.
    #[schemars(extend("default" = false))]
    pub replace_all: Option<bool>,
    /// 1-based line number from read_file. When old_string matches multiple times, only replace the match that touches this line.
    pub line_number: Option<i64>,
    /// Optional [checksum=...] value from your last read_file, write_file or edit_file of this file. The edit is refused if the file changed since.
    pub checksum: Option<String>,
}

impl Tool for EditFile {
    const NAME: &'static str = "edit_file";
    const KIND: ToolKind = ToolKind::Edit;
    const ALIASES: &'static [&'static str] = &["replace_in_file", "str_replace"];

    fn paths(&self) -> Vec<String> {
        vec![self.file_path.clone()]
    }

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        edit_file(tb, &self)
    }
}

/// `edit_file`.
pub fn edit_file(tb: &mut ToolBox, args: &EditFile) -> Result<ToolOutcome, ToolError> {
    let requested = args.file_path.as_str();
    let (old, new) = (args.old_string.as_str(), args.new_string.as_str());
    if old == new && !old.is_empty() {
        // Nothing to look up: this edit changes nothing whatever the file holds.
        let error = ToolOutcome::from(edit_error(&edit::EditError::Identical.to_string(), requested));
        let note = error.text.clone();
        return Ok(error.with_futile(Some(note)));
    }
    let replace_all = args.replace_all.unwrap_or(false);
    let line_number = args.line_number.filter(|&n| n > 0).map(|n| n as usize);
    let path = tb.policy.resolve(requested, Access::Write)?;
    let (dir, rel) = edited_file(tb, requested, &path)?;
    // An unread file may still be edited when `old_string` occurs in it
    // exactly once, as written: the match shows the model knows the text
    // (the guard is against blind overwrites). Checked once it is read.
    let unread = tb.must_read_first(&path, true);
    let fail = |reason: String| edit_error(&reason, requested);
    let io_fail = |what: &'static str, e: beneath::Error| match e {
        beneath::Error::Symlink(_) => tb.io_error(requested, what, e),
        e => fail(format!("cannot {what} the file: {e}")),
    };
    let bytes = dir.read(&rel).map_err(|e| io_fail("read", e))?;
    let matches_once = || std::str::from_utf8(&bytes).is_ok_and(|t| !old.is_empty() && t.matches(old).count() == 1);
    if unread && (replace_all || !matches_once()) {
        return Err(tb.read_for_the_model(requested));
    }
    // Only a well-formed checksum is a guard; models sometimes send junk.
    if let Some(expected) =
        args.checksum.as_deref().map(str::trim).filter(|c| c.len() == 8 && c.chars().all(|ch| ch.is_ascii_hexdigit()))
    {
        let actual = checksum(&bytes);
        if !expected.eq_ignore_ascii_case(&actual) {
            return Err(fail(format!("checksum mismatch: you sent {expected}, the file now has {actual}. The file changed since you last read it. Re-read and retry.")));
        }
    }
    if old.is_empty() {
        return Err(fail(edit::EditError::EmptyOld.to_string()));
    }
    let content = String::from_utf8(bytes)
        .map_err(|e| fail(format!("the file is not valid UTF-8 text ({e}); edit_file only handles text files")))?;
    let mut copied = String::new();
    let updated = match edit::replace(&content, old, new, replace_all, line_number) {
        Ok(updated) => updated,
        Err(edit::EditError::NotFound(closest)) => match unread_edit(&content, (old, new), replace_all, line_number) {
            Some((updated, notes)) => {
                copied = format!("\n(auto-corrected: {})", notes.join("; "));
                updated
            }
            None => return Err(edit_error(&tb.missed(&path, requested, (old, new), &content, closest), requested)),
        },
        Err(e) => return Err(fail(e.to_string())),
    };
    let mode = match put(&dir, &rel, How::Rewrite, updated.as_bytes()) {
        Ok(mode) => mode,
        Err(e) => {
            // Rewritten in place, so its mode is as it was.
            let mode = dir.metadata(&rel).map_or(0o100644, |m| m.mode);
            return Ok(failed_write(io_fail("write", e), &path, Some(Content::file(content.into_bytes(), mode))));
        }
    };
    tb.misses.clear();
    // From disk, so the next edit's checksum guard agrees with it.
    let written = dir.read(&rel).unwrap_or_else(|_| updated.into_bytes());
    let after = String::from_utf8_lossy(&written);
    let checks = tb.edit_checks.then(|| super::lang::notes(&path, Some(&content), &after)).flatten();
    let mut result = format!("Edited {requested}\n[checksum={}]{copied}", checksum(&written));
    let before = Content::file(content.into_bytes(), mode);
    let changed = Some(Change::written(path.clone(), Some(before), Content::file(written, mode)));
    let futile = track(tb, changed.as_ref().expect("made above"));
    match [checks, futile.clone()].into_iter().flatten().reduce(|a, b| format!("{a}\n{b}")) {
        Some(note) => {
            result.push_str(super::near::NOTE);
            result.push_str(&note);
            Ok(ToolOutcome::warned(result).with_change(changed).with_futile(futile))
        }
        None => Ok(ToolOutcome::ok(result).with_change(changed)),
    }
}

/// The file `edit_file` changes, as a regular file beneath its root; an
/// error naming what to do when it is something else or missing.
fn edited_file(tb: &ToolBox, requested: &str, path: &Path) -> Result<(Beneath, std::path::PathBuf), ToolError> {
    let (dir, rel) = tb.beneath(path)?;
    match dir.metadata(&rel) {
        Ok(m) if m.kind == Kind::File => Ok((dir, rel)),
        Ok(_) => Err(ToolError::refused(format!("{requested} is not a regular file; edit_file edits text files"))),
        Err(e) if e.is_not_found() => {
            let plain = format!("file does not exist: {requested}; use write_file to create it");
            Err(tb.missing_file(requested, path, plain))
        }
        Err(e) => Err(tb.io_error(requested, "read", e)),
    }
}

/// The edit of `old` to `new` with what read_file adds to a file's lines
/// taken out of both (its `N: ` numbers, its `[checksum=…]` line: a small
/// model copies them into old_string), when `old` as sent was not found
/// and that edit applies; with what was left out.
fn unread_edit(
    content: &str,
    (old, new): (&str, &str),
    replace_all: bool,
    line_number: Option<usize>,
) -> Option<(String, Vec<String>)> {
    let (mut old, mut new) = (old.to_owned(), new.to_owned());
    let notes = super::read_file::unread(&mut old, true, 1);
    if notes.is_empty() {
        return None;
    }
    super::read_file::unread(&mut new, true, 1);
    let updated = edit::replace(content, &old, &new, replace_all, line_number).ok()?;
    Some((updated, notes))
}

/// Swival's edit error shape, `error: edit_file: <reason> (in <path>)`;
/// details on later lines (candidates, closest match) follow the first.
fn edit_error(reason: &str, requested: &str) -> ToolError {
    match reason.split_once('\n') {
        Some((first, rest)) => ToolError::refused(format!("edit_file: {first} (in {requested})\n{rest}")),
        None => ToolError::refused(format!("edit_file: {reason} (in {requested})")),
    }
}
