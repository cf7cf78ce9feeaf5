//! What the tools that change files share (`write_file.rs`,
//! `edit_file.rs`): the read-before-write guard, what a file held before
//! a write (its [`Change`]'s `before`), and the notes for a write that
//! changed nothing.

use super::read_file::{read_file, ReadFile};
use super::{ToolBox, ToolError};
use crate::beneath::{self, Beneath, How, Kind, Meta};
use crate::toolcall::{Change, Content, ToolOutcome};
use std::io::Write as _;
use std::path::Path;

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
        match read_file(self, &ReadFile::whole(requested), None) {
            Ok(content) => ToolError::refused(format!(
                "{READ_FIRST}\nIt has now been read for you; its current content follows. Retry your change \
                 against this text (old_string must match it exactly).\n{content}"
            )),
            Err(_) => read_first(requested),
        }
    }

    /// Whether the guard refuses to change `path` now.
    pub(super) fn must_read_first(&self, path: &Path, exists: bool) -> bool {
        self.read_guard && exists && !self.tracker.seen(path)
    }
}

/// The note of a write that left the file's text as it was.
pub(super) const UNCHANGED_NOTE: &str =
    "The file already had this content: nothing changed. If the task needs a change, \
write the content with the change made.";

/// The note of a write that left the file's text as this session's last
/// write or edit of it had: small models repeat the write that succeeded.
pub(super) const MADE_NOTE: &str =
    "The file already had this content, from your own earlier change: nothing changed now. \
If the task is done, stop calling tools and answer in one or two sentences: what you changed.";

/// The note of a write or edit that put the file back to a content it had
/// earlier in the run: small models write two versions back and forth.
pub(super) const RESTORED_NOTE: &str = "This put the file back to a content it already had earlier in this run, so an \
earlier change of yours is now undone. Do not write these versions again: if the task is done, stop calling \
tools and answer in one or two sentences; if not, make the one change the task asks for.";

/// Files over this many bytes are not compared with what is written over
/// them (the notes on dropped lines and checks).
pub(super) const MAX_COMPARED_TEXT: u64 = 64 * 1024;

/// Largest file whose bytes a [`Change`] holds; a larger one is held by
/// its digest.
const MAX_HELD: u64 = 16 * 1024 * 1024;

/// What is at `rel` beneath `dir` now, for a change's `before`: a
/// regular file's bytes (its digest when larger than [`MAX_HELD`]) or a
/// symlink's target; `None` for nothing, a directory or anything else.
pub(super) fn content_at(dir: &Beneath, rel: &Path) -> Option<Content> {
    let meta = match dir.open_file(rel, How::Read) {
        Ok(file) => (Meta::of(&file).ok()?, Some(file)),
        Err(beneath::Error::Symlink(_)) => (dir.metadata(rel).ok()?, None),
        Err(_) => return None,
    };
    match meta {
        // A link's mode as git records it, whatever its permission bits.
        (m, None) if m.kind == Kind::Symlink => Some(Content::file(dir.read_link(rel).ok()?, 0o120000)),
        (m, Some(file)) if m.kind == Kind::File && m.len > MAX_HELD => digest(file, m.mode),
        (m, Some(mut file)) if m.kind == Kind::File => {
            let mut bytes = Vec::with_capacity(m.len as usize);
            std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
            Some(Content::file(bytes, m.mode))
        }
        _ => None,
    }
}

/// A large file's content by its size and SHA-256, read in pieces.
fn digest(mut file: std::fs::File, mode: u32) -> Option<Content> {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    let size = std::io::copy(&mut file, &mut hasher).ok()?;
    let sha256 = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Some(Content::Digest { size, sha256, mode })
}

/// The outcome of a write that failed: its `error`, with what it left at
/// `path` (a write a full disk cut short) as the change from `before`, so
/// a file cut short is recorded and can be undone.
pub(super) fn failed_write(error: ToolError, path: &Path, before: Option<Content>) -> ToolOutcome {
    let left = Change::written(path.to_owned(), before, Content::At(path.to_owned()));
    ToolOutcome::from(error).with_change(Some(left))
}

/// Write `bytes` to `rel` beneath `dir`, opened `how`: the mode the file
/// has after, read from the descriptor written.
pub(super) fn put(dir: &Beneath, rel: &Path, how: How, bytes: &[u8]) -> Result<u32, beneath::Error> {
    let mut file = dir.open_file(rel, how)?;
    file.write_all(bytes)?;
    Ok(Meta::of(&file)?.mode)
}

/// A write or edit told to the read tracker (`change`, a file written),
/// and what the model is told of it when it gained nothing
/// ([`futile_note`]).
pub(super) fn track(tb: &mut ToolBox, change: &Change) -> Option<String> {
    let before = change.before.as_ref().and_then(Content::bytes);
    let after = change.after.as_ref().and_then(Content::bytes).unwrap_or_default();
    let note = futile_note(tb, &change.path, before, after);
    tb.tracker.wrote(&change.path, after);
    note
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

#[cfg(test)]
mod tests {
    use super::super::edit_file::edit_file;
    use super::super::files::checksum;
    use super::super::test_toolbox as toolbox;
    use super::super::write_file::write_file;
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
