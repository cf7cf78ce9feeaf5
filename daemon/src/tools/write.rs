//! `write_file` (content or `move_from`) and `edit_file`: the tools that
//! change files, behind the path policy's write check and the
//! read-before-write guard. The matching itself is in `edit.rs`.

use super::builtin::{EditFile, ReadFile, WriteFile};
use super::edit;
use super::files::checksum;
use super::path::Access;
use super::{ToolBox, ToolError};
use crate::beneath::{self, Beneath, How, Kind};
use crate::toolcall::ToolOutcome;
use serde_json::Value;
use std::io::Write as _;
use std::path::Path;
use swival_protocol::FileChange;

/// Swival's text for the read-before-write guard.
pub const READ_FIRST: &str = "cannot write to an existing file that hasn't been read first. Use read_file to inspect the current contents before modifying.";

/// The guard's error when the file cannot be shown: Swival's line, then
/// the exact call to make next.
pub fn read_first(requested: &str) -> ToolError {
    /// The read to make.
    #[derive(serde::Serialize)]
    struct Read<'a> {
        /// The file.
        file_path: &'a str,
    }
    let call = super::json_text(&Read { file_path: requested });
    ToolError::refused(format!("{READ_FIRST}\nNext: call read_file with {call}, then retry this call."))
}

impl ToolBox {
    /// The read-before-write guard: an existing file (`exists`, as seen
    /// beneath its root) may be changed only after this session read or
    /// wrote it.
    pub(super) fn check_write(&mut self, path: &Path, requested: &str, exists: bool) -> Result<(), ToolError> {
        if self.must_read_first(path, exists) {
            return Err(self.read_for_the_model(requested));
        }
        Ok(())
    }

    /// The guard's error, with the read done for the model: Swival's line,
    /// then the file as `read_file` shows it (which counts as read), so the
    /// next call can be made against what is there instead of a round
    /// trip a small model often never makes.
    pub(super) fn read_for_the_model(&mut self, requested: &str) -> ToolError {
        match super::files::read_file(self, &ReadFile::whole(requested), None) {
            Ok(content) => ToolError::refused(format!(
                "{READ_FIRST}\nIt has now been read for you; its current content follows. Retry your change \
                 against this text (old_string must match it exactly).\n{content}"
            )),
            Err(_) => read_first(requested),
        }
    }

    /// Whether the guard refuses to change `path` now.
    fn must_read_first(&self, path: &Path, exists: bool) -> bool {
        self.read_guard && exists && !self.tracker.seen(path)
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
            let before = match &existing {
                Some(m) if m.len <= MAX_CHANGE_TEXT => dir.read(&rel).ok(),
                _ => None,
            };
            create_parent(tb, &dir, &rel, requested)?;
            dir.open_file(&rel, How::Truncate)
                .and_then(|mut f| Ok(f.write_all(content.as_bytes())?))
                .map_err(|e| tb.io_error(requested, "write", e))?;
            let futile = futile_note(tb, &path, before.as_deref(), content.as_bytes());
            tb.tracker.wrote(&path, content.as_bytes());
            let note = match &before {
                Some(old) => super::near::dropped_lines_note(&String::from_utf8_lossy(old), &content),
                None if existing.is_none() => tb.new_file_note(requested, &path),
                None => None,
            };
            // A file too large to have been read before is not checked.
            let old_text = before.as_deref().map(String::from_utf8_lossy);
            let checks = (tb.edit_checks && (existing.is_none() || old_text.is_some()))
                .then(|| super::syntax::notes(&path, old_text.as_deref(), &content))
                .flatten();
            let note = [note, checks, futile.clone()].into_iter().flatten().reduce(|a, b| format!("{a}\n{b}"));
            let changed = match existing.is_none() || before.is_some() {
                true => change(&path, before, content.as_bytes()),
                false => None,
            };
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
            Ok(outcome.with_change(changed).with_futile(futile))
        }
        (None, Some(source)) => move_file(tb, requested, &path, source).map(ToolOutcome::ok),
    }
}

/// The note of a write that left the file's text as it was.
const UNCHANGED_NOTE: &str = "The file already had this content: nothing changed. If the task needs a change, \
write the content with the change made.";

/// The note of a write that left the file's text as this session's last
/// write or edit of it had: small models repeat the write that succeeded.
const MADE_NOTE: &str = "The file already had this content, from your own earlier change: nothing changed now. \
If the task is done, stop calling tools and answer in one or two sentences: what you changed.";

/// The note of a write or edit that put the file back to a content it had
/// earlier in the run: small models write two versions back and forth.
const RESTORED_NOTE: &str = "This put the file back to a content it already had earlier in this run, so an \
earlier change of yours is now undone. Do not write these versions again: if the task is done, stop calling \
tools and answer in one or two sentences; if not, make the one change the task asks for.";

/// Texts longer than this are left out of a [`FileChange`].
const MAX_CHANGE_TEXT: u64 = 64 * 1024;

/// What a write did to `path`, for an editor's diff; `None` when a text is
/// too long or not UTF-8.
fn change(path: &Path, before: Option<Vec<u8>>, after: &[u8]) -> Option<FileChange> {
    let small = |b: &[u8]| b.len() as u64 <= MAX_CHANGE_TEXT;
    if !small(after) || before.as_deref().is_some_and(|b| !small(b)) {
        return None;
    }
    let old_text = match before {
        Some(b) => Some(String::from_utf8(b).ok()?),
        None => None,
    };
    let new_text = std::str::from_utf8(after).ok()?.to_owned();
    Some(FileChange { path: path.display().to_string(), old_text, new_text })
}

/// Create the missing directories above `rel`, each beneath the last.
fn create_parent(tb: &ToolBox, dir: &Beneath, rel: &Path, requested: &str) -> Result<(), ToolError> {
    match rel.parent() {
        Some(parent) => dir.mkdir_all(parent).map_err(|e| tb.io_error(requested, "create the directories for", e)),
        None => Ok(()),
    }
}

/// Rename `source` to `dest` (a file or a symlink, never a directory).
fn move_file(tb: &mut ToolBox, requested: &str, dest: &Path, source: &str) -> Result<String, ToolError> {
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
    create_parent(tb, &dest_dir, &dest_rel, requested)?;
    source_dir.rename(&source_rel, &dest_dir, &dest_rel).map_err(|e| match e {
        beneath::Error::Symlink(_) => tb.io_error(requested, "write", e),
        e => ToolError::refused(format!("cannot move {source} to {requested}: {e}")),
    })?;
    tb.tracker.mark(dest);
    Ok(format!("Moved {source} -> {requested}"))
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
    dir.open_file(&rel, How::Rewrite)
        .and_then(|mut f| Ok(f.write_all(updated.as_bytes())?))
        .map_err(|e| io_fail("write", e))?;
    tb.misses.clear();
    // From disk, so the next edit's checksum guard agrees with it.
    let written = dir.read(&rel).unwrap_or_else(|_| updated.into_bytes());
    let futile = futile_note(tb, &path, Some(content.as_bytes()), &written);
    tb.tracker.wrote(&path, &written);
    let after = String::from_utf8_lossy(&written);
    let checks = tb.edit_checks.then(|| super::syntax::notes(&path, Some(&content), &after)).flatten();
    let changed = change(&path, Some(content.into_bytes()), &written);
    let mut result = format!("Edited {requested}\n[checksum={}]{copied}", checksum(&written));
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

/// What the model is told of a write or edit that left `path` as it
/// was (`before`, when known) or put back a content it had earlier in the
/// run; `None` for a change. Call before the tracker notes the write.
fn futile_note(tb: &mut ToolBox, path: &Path, before: Option<&[u8]>, after: &[u8]) -> Option<String> {
    let same =
        before.is_some_and(|b| String::from_utf8_lossy(b).trim_end() == String::from_utf8_lossy(after).trim_end());
    // What this session wrote there last, written again.
    let again = before.is_some_and(|b| tb.tracker.wrote_last(path, b));
    let restored = tb.tracker.restored(path, before, after);
    match (same, again, restored) {
        // A small model "fixes" a file by writing back what it read.
        (true, false, _) => Some(UNCHANGED_NOTE.to_owned()),
        (true, true, _) => Some(MADE_NOTE.to_owned()),
        (false, _, true) => Some(RESTORED_NOTE.to_owned()),
        (false, _, false) => None,
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
    let notes = super::repair::unread(&mut old, true, 1);
    if notes.is_empty() {
        return None;
    }
    super::repair::unread(&mut new, true, 1);
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

#[cfg(test)]
mod tests {
    use super::super::files::read_file;
    use super::super::test_toolbox as toolbox;
    use super::*;

    #[test]
    fn overwrite_needs_a_read_first() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("e.txt"), "old").unwrap();
        let mut tb = toolbox(d.path());
        let err = write_file(&mut tb, &args!({"file_path": "e.txt", "content": "new"})).unwrap_err().to_string();
        assert!(err.starts_with(READ_FIRST), "{err}");
        assert!(err.contains("It has now been read for you") && err.contains("old"), "the content is shown: {err}");
        // The refusal showed the file: it counts as read.
        write_file(&mut tb, &args!({"file_path": "e.txt", "content": "new"})).unwrap();
        assert_eq!(std::fs::read_to_string(d.path().join("e.txt")).unwrap(), "new");
    }

    #[test]
    fn the_guard_is_off_with_no_read_guard() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("e.txt"), "old").unwrap();
        let mut tb = toolbox(d.path());
        tb.read_guard = false;
        write_file(&mut tb, &args!({"file_path": "e.txt", "content": "new"})).unwrap();
    }

    #[test]
    fn writing_back_what_the_file_had_says_nothing_changed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("p.py"), "x = 1\n").unwrap();
        let mut tb = toolbox(d.path());
        tb.read_guard = false;
        let out = write_file(&mut tb, &args!({"file_path": "p.py", "content": "x = 1"})).unwrap();
        assert!(out.text.contains(UNCHANGED_NOTE), "{}", out.text);
        let out = write_file(&mut tb, &args!({"file_path": "p.py", "content": "x = 2\n"})).unwrap();
        assert!(!out.text.contains("nothing changed"), "{}", out.text);
        // The same write again: the change is the session's own, made.
        let out = write_file(&mut tb, &args!({"file_path": "p.py", "content": "x = 2\n"})).unwrap();
        assert!(out.text.contains(MADE_NOTE) && !out.text.contains(UNCHANGED_NOTE), "{}", out.text);
        // So after an edit.
        edit_file(&mut tb, &args!({"file_path": "p.py", "old_string": "x = 2", "new_string": "x = 3"})).unwrap();
        let out = write_file(&mut tb, &args!({"file_path": "p.py", "content": "x = 3\n"})).unwrap();
        assert!(out.text.contains(MADE_NOTE), "{}", out.text);
    }

    #[test]
    fn a_write_or_edit_back_to_an_earlier_content_is_futile_and_an_identical_edit_fails_at_once() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("p.py"), "x = 1\n").unwrap();
        let mut tb = toolbox(d.path());
        // Unread, and never looked up: it could change nothing.
        let same = args!({"file_path": "p.py", "old_string": "x = 1", "new_string": "x = 1"});
        let out = edit_file(&mut tb, &same).unwrap();
        assert!(out.failed && out.text.starts_with("error: edit_file: old_string and new_string are identical"));
        assert_eq!(out.futile.as_deref(), Some(out.text.as_str()));
        tb.read_guard = false;
        let write = |tb: &mut ToolBox, content: &str| write_file(tb, &args!({"file_path": "p.py", "content": content}));
        assert!(write(&mut tb, "x = 2\n").unwrap().futile.is_none());
        let back = write(&mut tb, "x = 1\n").unwrap();
        assert!(back.warned && back.text.contains(RESTORED_NOTE), "{}", back.text);
        assert_eq!(back.futile.as_deref(), Some(RESTORED_NOTE));
        let edit = args!({"file_path": "p.py", "old_string": "x = 1", "new_string": "x = 2"});
        assert_eq!(edit_file(&mut tb, &edit).unwrap().futile.as_deref(), Some(RESTORED_NOTE));
        assert_eq!(write(&mut tb, "x = 2\n").unwrap().futile.as_deref(), Some(MADE_NOTE));
        // A new run may make the change again.
        tb.tracker.new_run();
        assert!(write(&mut tb, "x = 1\n").unwrap().futile.is_none());
    }

    #[test]
    fn new_files_and_parents_are_created() {
        let d = tempfile::tempdir().unwrap();
        let out = write_file(&mut toolbox(d.path()), &args!({"file_path": "x/y/z.txt", "content": "hi"})).unwrap().text;
        assert_eq!(out, format!("Wrote 2 bytes to x/y/z.txt\n[checksum={}]", checksum(b"hi")));
    }

    #[test]
    fn content_and_move_from_are_exclusive() {
        let d = tempfile::tempdir().unwrap();
        let mut tb = toolbox(d.path());
        let both = args!({"file_path": "a", "content": "x", "move_from": "b"});
        assert!(write_file(&mut tb, &both).unwrap_err().render().contains("mutually exclusive"));
        let neither = args!({"file_path": "a"});
        assert!(write_file(&mut tb, &neither)
            .unwrap_err()
            .render()
            .contains("exactly one of 'content' or 'move_from'"));
    }

    #[test]
    fn move_from_renames_files_and_symlinks_but_not_directories() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "A").unwrap();
        std::os::unix::fs::symlink("a-target", d.path().join("link")).unwrap();
        std::fs::create_dir(d.path().join("dir")).unwrap();
        let mut tb = toolbox(d.path());
        let out = write_file(&mut tb, &args!({"file_path": "sub/b.txt", "move_from": "a.txt"})).unwrap().text;
        assert_eq!(out, "Moved a.txt -> sub/b.txt");
        assert_eq!(std::fs::read_to_string(d.path().join("sub/b.txt")).unwrap(), "A");
        assert!(!d.path().join("a.txt").exists());
        write_file(&mut tb, &args!({"file_path": "link2", "move_from": "link"})).unwrap();
        assert_eq!(std::fs::read_link(d.path().join("link2")).unwrap(), Path::new("a-target"));
        let err = write_file(&mut tb, &args!({"file_path": "d2", "move_from": "dir"})).unwrap_err().render();
        assert!(err.contains("is a directory"), "{err}");
        let err =
            write_file(&mut tb, &args!({"file_path": "sub/b.txt", "move_from": "sub/b.txt"})).unwrap_err().render();
        assert!(err.contains("same location"), "{err}");
    }

    #[test]
    fn move_onto_an_unread_existing_file_is_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "A").unwrap();
        std::fs::write(d.path().join("b"), "B").unwrap();
        let err =
            write_file(&mut toolbox(d.path()), &args!({"file_path": "b", "move_from": "a"})).unwrap_err().to_string();
        assert!(err.starts_with(READ_FIRST) && err.contains("It has now been read for you"), "{err}");
    }

    #[test]
    fn edit_replaces_and_returns_the_new_checksum() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("e.rs"), "let a = 1;\n").unwrap();
        let mut tb = toolbox(d.path());
        read_file(&mut tb, &args!({"file_path": "e.rs"}), None).unwrap();
        let out = edit_file(
            &mut tb,
            &args!({"file_path": "e.rs", "old_string": "1", "new_string": "2",
                    "checksum": checksum(b"let a = 1;\n")}),
        )
        .unwrap()
        .text;
        assert_eq!(out, format!("Edited e.rs\n[checksum={}]", checksum(b"let a = 2;\n")));
    }

    #[test]
    fn edit_needs_a_read_and_a_matching_checksum() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("e.rs"), "x\n").unwrap();
        let mut tb = toolbox(d.path());
        std::fs::write(d.path().join("e.rs"), "x\nx\n").unwrap();
        let args = args!({"file_path": "e.rs", "old_string": "x", "new_string": "y", "checksum": "00000000"});
        let err = edit_file(&mut tb, &args).unwrap_err().to_string();
        assert!(err.starts_with(READ_FIRST), "two matches need a read: {err}");
        std::fs::write(d.path().join("e.rs"), "x\n").unwrap();
        read_file(&mut tb, &args!({"file_path": "e.rs"}), None).unwrap();
        let err = edit_file(&mut tb, &args).unwrap_err().render();
        assert!(err.starts_with("error: edit_file: checksum mismatch"), "{err}");
        assert!(err.ends_with("(in e.rs)"), "{err}");
        // A malformed checksum is ignored.
        let args = args!({"file_path": "e.rs", "old_string": "x", "new_string": "y", "checksum": "abc"});
        edit_file(&mut tb, &args).unwrap();
    }

    #[test]
    fn an_unread_file_is_edited_when_old_string_occurs_exactly_once() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("c.py"), "limit = 10\nname = 'a'\n").unwrap();
        let mut tb = toolbox(d.path());
        let once = args!({"file_path": "c.py", "old_string": "limit = 10", "new_string": "limit = 20"});
        edit_file(&mut tb, &once).unwrap();
        assert_eq!(std::fs::read_to_string(d.path().join("c.py")).unwrap(), "limit = 20\nname = 'a'\n");
        // Not found as written (even if a fuzzy match would find it), or
        // replace_all: a read comes first.
        std::fs::write(d.path().join("d.py"), "a = 1\n").unwrap();
        std::fs::write(d.path().join("e.py"), "a = 1\n").unwrap();
        let fuzzy = args!({"file_path": "d.py", "old_string": "a  =  1", "new_string": "a = 2"});
        assert!(edit_file(&mut tb, &fuzzy).unwrap_err().to_string().starts_with(READ_FIRST));
        let all = args!({"file_path": "e.py", "old_string": "a = 1", "new_string": "a = 2", "replace_all": true});
        assert!(edit_file(&mut tb, &all).unwrap_err().to_string().starts_with(READ_FIRST));
        // Refused, but shown: the same call now runs.
        edit_file(&mut tb, &all).unwrap();
        assert_eq!(std::fs::read_to_string(d.path().join("e.py")).unwrap(), "a = 2\n");
    }

    #[test]
    fn edit_of_a_missing_file_says_to_use_write_file() {
        let d = tempfile::tempdir().unwrap();
        let err =
            edit_file(&mut toolbox(d.path()), &args!({"file_path": "n.rs", "old_string": "x", "new_string": "y"}))
                .unwrap_err()
                .render();
        assert_eq!(err, "error: file does not exist: n.rs; use write_file to create it");
    }

    #[test]
    fn edit_errors_put_the_path_on_the_first_line() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("e.rs"), "a\na\n").unwrap();
        let mut tb = toolbox(d.path());
        read_file(&mut tb, &args!({"file_path": "e.rs"}), None).unwrap();
        let err = edit_file(&mut tb, &args!({"file_path": "e.rs", "old_string": "a", "new_string": "b"}))
            .unwrap_err()
            .render();
        let first = err.lines().next().unwrap();
        assert!(first.starts_with("error: edit_file: multiple matches (2 found)"), "{err}");
        assert!(first.ends_with("(in e.rs)"), "{err}");
        assert!(err.contains("\n  line 2: 'a'"), "{err}");
    }

    #[test]
    fn read_files_numbers_and_checksum_copied_into_old_string_are_left_out() {
        let d = tempfile::tempdir().unwrap();
        let calc = "def total(xs):\n    s = 0\n    for i in range(len(xs) - 1):\n        s += xs[i]\n    return s\n";
        std::fs::write(d.path().join("calc.py"), calc).unwrap();
        let mut tb = toolbox(d.path());
        read_file(&mut tb, &args!({"file_path": "calc.py"}), None).unwrap();
        // The whole read_file output, checksum line included, as old_string.
        let old = format!("{calc}[checksum=40a8430f]");
        let new = calc.replace(" - 1", "");
        let out = edit_file(&mut tb, &args!({"file_path": "calc.py", "old_string": old, "new_string": new})).unwrap();
        assert!(out.text.contains("auto-corrected: left out the '[checksum=…]' line"), "{}", out.text);
        assert_eq!(std::fs::read_to_string(d.path().join("calc.py")).unwrap(), new);
        // One numbered line, in both strings.
        let numbered =
            args!({"file_path": "calc.py", "old_string": "5:     return s", "new_string": "5:     return s * 1"});
        let out = edit_file(&mut tb, &numbered).unwrap();
        assert!(out.text.contains("left out the line numbers"), "{}", out.text);
        assert!(std::fs::read_to_string(d.path().join("calc.py")).unwrap().ends_with("    return s * 1\n"));
        // Text the file has with a number in it is not touched.
        std::fs::write(d.path().join("list.txt"), "1: apples\n2: pears\n").unwrap();
        read_file(&mut tb, &args!({"file_path": "list.txt"}), None).unwrap();
        let listed = args!({"file_path": "list.txt", "old_string": "2: pears", "new_string": "2: plums"});
        let out = edit_file(&mut tb, &listed).unwrap();
        assert!(!out.text.contains("auto-corrected"), "{}", out.text);
        assert_eq!(std::fs::read_to_string(d.path().join("list.txt")).unwrap(), "1: apples\n2: plums\n");
    }

    #[test]
    fn protected_files_cannot_be_edited() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("swival.toml"), "x = 1\n").unwrap();
        let err = edit_file(
            &mut toolbox(d.path()),
            &args!({"file_path": "swival.toml", "old_string": "1", "new_string": "2"}),
        )
        .unwrap_err()
        .render();
        assert!(err.contains("protected"), "{err}");
    }
}
