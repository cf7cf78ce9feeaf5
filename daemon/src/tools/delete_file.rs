//! `delete_file`: Swival's soft delete. The file moves to
//! `.swival/trash/<id>/<name>` under the base dir and a line is appended to
//! `.swival/trash/index.jsonl`; entries older than 7 days go, and the trash
//! is kept under 50 MB (oldest first). A lock file serialises sessions that
//! share a base dir. The trash is reached through
//! [`beneath::swival_dir`]: nothing in it is followed through a symlink.
//! A file deleted though the task named only something inside it gets a
//! note after Swival's text (`asked.rs`), and the outcome says so.

use super::path::Access;
use super::{asked, CallInput, Tool, ToolBox, ToolError};
use crate::beneath::{self, Beneath, How, Kind, Missing};
use crate::toolcall::{Change, Content, ToolOutcome, UnaskedDelete};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use std::ffi::OsString;
use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime};
use swival_protocol::ToolKind;

/// Delete a file by moving it to the trash. Cannot delete directories.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteFile {
    /// Path to the file to delete.
    pub file_path: String,
}

impl Tool for DeleteFile {
    const NAME: &'static str = "delete_file";
    const KIND: ToolKind = ToolKind::Delete;
    const ALIASES: &'static [&'static str] = &["remove_file"];

    fn paths(&self) -> Vec<String> {
        vec![self.file_path.clone()]
    }

    fn run(self, tb: &mut ToolBox, call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        delete_file(tb, &self, call)
    }
}

/// Trash entries older than this are removed.
const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The trash is kept under this many bytes.
const MAX_BYTES: u64 = 50 * 1024 * 1024;

/// Largest file whose text is compared with the task (bytes).
const MAX_COMPARED: u64 = 512 * 1024;

/// `delete_file`; the call's id is recorded in the trash index, and its
/// task tells whether the file itself was asked for (`asked.rs`).
pub fn delete_file(tb: &mut ToolBox, args: &DeleteFile, call: &CallInput) -> Result<ToolOutcome, ToolError> {
    let requested = args.file_path.as_str();
    let resolved = tb.policy.resolve(requested, Access::Write)?;
    // The entry itself: a symlink is trashed, not its target.
    let (source, rel) = tb.entry(requested)?;
    let meta = source.metadata(&rel).map_err(|e| match e {
        beneath::Error::Symlink(_) => tb.io_error(requested, "delete", e),
        _ => ToolError::refused(format!("file not found: {requested}")),
    })?;
    let is_link = meta.kind == Kind::Symlink;
    if meta.is_dir() {
        return Err(ToolError::refused(format!("{requested} is a directory. delete_file only removes regular files and symlinks (no recursive directory removal). List the directory with list_files, then delete each file individually.")));
    }
    if !is_link {
        tb.check_write(&resolved, requested, true)?;
    }
    // What it held, read before it moves (the change's `before`, whatever
    // happens to the trash), and for a file, to tell what the task named
    // inside it.
    let before = super::write::content_at(&source, &rel);
    let compared = !is_link && !call.task.trim().is_empty() && meta.len <= MAX_COMPARED;
    let held = before.as_ref().and_then(Content::bytes).filter(|_| compared);
    let held = held.filter(|b| b.len() as u64 <= MAX_COMPARED && !super::files::looks_binary(b));
    // The policy's words when `.swival` leads outside; `swival_dir` refuses
    // any symlinked `.swival`.
    tb.policy.resolve(".swival/trash", Access::Write)?;
    let trash = open_trash(&tb.policy.base).map_err(|e| ToolError::refused(format!("cannot use the trash: {e}")))?;
    let _lock = lock(&trash)?;
    prune(&trash, None);
    let id = trash_id();
    trash
        .mkdir_all(Path::new(&id))
        .map_err(|e| ToolError::refused(format!("cannot create .swival/trash/{id}: {e}")))?;
    let name = rel.file_name().map(OsString::from).unwrap_or_else(|| OsString::from("file"));
    source
        .rename(&rel, &trash, &Path::new(&id).join(&name))
        .map_err(|e| ToolError::refused(format!("cannot move {requested} to the trash: {e}")))?;
    if !is_link {
        // Recreating the same path later is a new file, not an overwrite.
        tb.tracker.mark(&resolved);
    }
    prune(&trash, Some(&id));
    index(&trash, &id, requested, call.id);
    let text = format!("Trashed {requested} -> .swival/trash/{id}");
    let trashed = format!(".swival/trash/{id}/{}", name.to_string_lossy());
    let held = held.map(|b| String::from_utf8_lossy(b).into_owned());
    let change = Change { path: source.path_of(&rel), before, after: None, moved_from: None };
    let outcome = match held.and_then(|h| unasked(call.task, requested, &resolved, &h, trashed)) {
        // Swival's text first, as it is; the note after it.
        Some((note, unasked)) => ToolOutcome::warned(format!("{text}\n{note}")).with_unasked(Some(unasked)),
        None => ToolOutcome::ok(text),
    };
    Ok(outcome.with_change(Some(change)))
}

/// Append the deletion to the trash index. The file is already in the
/// trash; a failed index line loses only the record, so it is logged
/// rather than reported as a failed delete.
fn index(trash: &Beneath, id: &str, requested: &str, call_id: &str) {
    let entry = super::json_text(&IndexEntry {
        trash_id: id,
        original_path: requested,
        timestamp: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        tool_call_id: call_id,
    });
    let appended = trash.open_file(Path::new("index.jsonl"), How::Append).and_then(|mut f| Ok(writeln!(f, "{entry}")?));
    if let Err(e) = appended {
        tracing::warn!(error = %e, "cannot append to the trash index");
    }
}

/// The note and the record of a deletion of `requested` (at `resolved`,
/// holding `text`, now at `trashed`) the task did not ask for, when the
/// task named something inside it.
fn unasked(
    task: &str,
    requested: &str,
    resolved: &Path,
    text: &str,
    trashed: String,
) -> Option<(String, UnaskedDelete)> {
    let defined = super::lang::top_level_names(resolved, text);
    let named = asked::named_inside(task, requested, text, &defined);
    if named.is_empty() {
        return None;
    }
    let note = asked::note(&named, requested, text.lines().count(), &defined, &trashed);
    Some((note, UnaskedDelete { path: requested.to_owned(), trashed, named }))
}

/// One line of the trash index (Swival's fields, in its order).
#[derive(Serialize)]
struct IndexEntry<'a> {
    /// The entry's directory under the trash.
    trash_id: &'a str,
    /// The path as the model wrote it.
    original_path: &'a str,
    /// When, RFC 3339 UTC.
    timestamp: String,
    /// The model's id for the call.
    tool_call_id: &'a str,
}

/// 32 random hex digits, like Python's `uuid4().hex`.
fn trash_id() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// `<base>/.swival/trash`, created if missing, opened beneath the base dir.
fn open_trash(base: &Path) -> Result<Beneath, beneath::Error> {
    let swival = beneath::swival_dir(base, Missing::Create)?;
    swival.mkdir_all(Path::new("trash"))?;
    swival.open_dir(Path::new("trash"))
}

/// An exclusive lock on `.swival/trash/.lock`, held until dropped.
fn lock(trash: &Beneath) -> Result<nix::fcntl::Flock<std::fs::File>, ToolError> {
    let file = trash
        .open_file(Path::new(".lock"), How::Lock)
        .map_err(|e| ToolError::refused(format!("cannot open the trash lock: {e}")))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| ToolError::refused(format!("cannot lock the trash: {e}")))
}

/// Drop entries older than [`MAX_AGE`], then the oldest until the trash is
/// under [`MAX_BYTES`]. `keep` (the entry just added) is never dropped but
/// counts toward the size.
fn prune(trash: &Beneath, keep: Option<&str>) {
    let Ok(listed) = trash.list(Path::new("")) else {
        return;
    };
    let now = SystemTime::now();
    let mut entries: Vec<(SystemTime, u64, OsString)> = Vec::new();
    for e in listed {
        if !e.meta.is_dir() {
            continue;
        }
        let mtime = e.meta.modified;
        let kept = keep.is_some_and(|k| e.name == k);
        if !kept && now.duration_since(mtime).unwrap_or_default() > MAX_AGE {
            let _ = trash.remove_tree(Path::new(&e.name));
            continue;
        }
        entries.push((mtime, trash.tree_size(Path::new(&e.name)), e.name));
    }
    entries.sort_by_key(|(mtime, _, _)| *mtime);
    let mut total: u64 = entries.iter().map(|(_, size, _)| size).sum();
    for (_, size, name) in entries {
        if total <= MAX_BYTES {
            break;
        }
        if keep.is_some_and(|k| name == k) {
            continue;
        }
        let _ = trash.remove_tree(Path::new(&name));
        total -= size;
    }
}

#[cfg(test)]
mod tests {
    use super::super::read_file::read_file;
    use super::super::test_toolbox as toolbox;
    use super::super::write::READ_FIRST;
    use super::*;

    /// A call with the model's id `id`, in a run whose task is `task`.
    fn call<'a>(id: &'a str, task: &'a str) -> CallInput<'a> {
        CallInput { id, task, ..CallInput::default() }
    }

    #[test]
    fn delete_moves_the_file_to_the_trash_and_indexes_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("gone.txt"), "bye").unwrap();
        let mut tb = toolbox(d.path());
        read_file(&mut tb, &args!({"file_path": "gone.txt"}), None).unwrap();
        let out = delete_file(&mut tb, &args!({"file_path": "gone.txt"}), &call("call_7", "")).unwrap().text;
        let id = out.strip_prefix("Trashed gone.txt -> .swival/trash/").unwrap();
        assert_eq!(id.len(), 32);
        assert!(!d.path().join("gone.txt").exists());
        let trashed = d.path().join(".swival/trash").join(id).join("gone.txt");
        assert_eq!(std::fs::read_to_string(trashed).unwrap(), "bye");
        let index = std::fs::read_to_string(d.path().join(".swival/trash/index.jsonl")).unwrap();
        let line: serde_json::Value = serde_json::from_str(index.trim()).unwrap();
        assert_eq!(line["trash_id"], id);
        assert_eq!(line["original_path"], "gone.txt");
        assert_eq!(line["tool_call_id"], "call_7");
        assert!(line["timestamp"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn delete_needs_a_read_first_and_refuses_directories() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), "x").unwrap();
        std::fs::create_dir(d.path().join("dir")).unwrap();
        let mut tb = toolbox(d.path());
        assert!(delete_file(&mut tb, &args!({"file_path": "f"}), &call("", ""))
            .unwrap_err()
            .to_string()
            .starts_with(READ_FIRST));
        let err = delete_file(&mut tb, &args!({"file_path": "dir"}), &call("", "")).unwrap_err().render();
        assert!(err.contains("is a directory"), "{err}");
        let err = delete_file(&mut tb, &args!({"file_path": "nope"}), &call("", "")).unwrap_err().render();
        assert_eq!(err, "error: file not found: nope");
    }

    #[test]
    fn a_symlink_is_trashed_itself_without_a_read() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("target"), "t").unwrap();
        std::os::unix::fs::symlink(d.path().join("target"), d.path().join("link")).unwrap();
        delete_file(&mut toolbox(d.path()), &args!({"file_path": "link"}), &call("", "")).unwrap();
        assert!(d.path().join("target").exists());
        assert!(std::fs::symlink_metadata(d.path().join("link")).is_err());
    }

    #[test]
    fn old_trash_entries_are_pruned() {
        let d = tempfile::tempdir().unwrap();
        let old = d.path().join("old");
        std::fs::create_dir_all(&old).unwrap();
        let long_ago = SystemTime::now() - Duration::from_secs(8 * 24 * 3600);
        std::fs::File::open(&old).unwrap().set_modified(long_ago).unwrap();
        std::fs::create_dir_all(d.path().join("new")).unwrap();
        prune(&Beneath::open(d.path()).unwrap(), None);
        assert!(!old.exists());
        assert!(d.path().join("new").exists());
    }

    #[test]
    fn deleting_a_file_the_task_names_a_function_of_gets_a_note_and_a_record() {
        let d = tempfile::tempdir().unwrap();
        let util = "def helper(x):\n    return x\n\ndef main():\n    pass\n";
        std::fs::write(d.path().join("util.py"), util).unwrap();
        let mut tb = toolbox(d.path());
        read_file(&mut tb, &args!({"file_path": "util.py"}), None).unwrap();
        let task = "delete the unused function `helper` in util.py";
        let out = delete_file(&mut tb, &args!({"file_path": "util.py"}), &call("c1", task)).unwrap();
        let (swival, note) = out.text.split_once('\n').unwrap();
        let id = swival.strip_prefix("Trashed util.py -> .swival/trash/").unwrap();
        let trashed = format!(".swival/trash/{id}/util.py");
        assert!(note.starts_with("Note: the task names `helper`, which was inside this file; the whole file (5 lines, defining helper, main) is gone."), "{note}");
        assert!(note.contains(&format!("move_from=\"{trashed}\"")), "{note}");
        assert!(out.warned && !out.failed);
        let unasked = out.unasked.unwrap();
        assert_eq!((unasked.path.as_str(), unasked.trashed.as_str()), ("util.py", trashed.as_str()));
        assert_eq!(unasked.named, ["helper"]);
        // The way back the note gives works.
        let back = format!(r#"{{"file_path": "util.py", "move_from": "{trashed}"}}"#);
        assert!(!tb.call("write_file", &back).starts_with("error"));
        assert_eq!(std::fs::read_to_string(d.path().join("util.py")).unwrap(), util);
    }

    #[test]
    fn deleting_a_file_the_task_asks_for_or_names_nothing_of_gets_swivals_text_alone() {
        let d = tempfile::tempdir().unwrap();
        let mut tb = toolbox(d.path());
        for task in ["delete util.py", "tidy the project up", ""] {
            std::fs::write(d.path().join("util.py"), "def helper():\n    pass\n").unwrap();
            read_file(&mut tb, &args!({"file_path": "util.py"}), None).unwrap();
            let out = delete_file(&mut tb, &args!({"file_path": "util.py"}), &call("c", task)).unwrap();
            assert!(!out.text.contains('\n') && !out.warned && out.unasked.is_none(), "{task}: {}", out.text);
        }
    }
}
