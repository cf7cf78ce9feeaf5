//! `delete_file`: Swival's soft delete. The file moves to
//! `.swival/trash/<id>/<name>` under the base dir and a line is appended to
//! `.swival/trash/index.jsonl`; entries older than 7 days go, and the trash
//! is kept under 50 MB (oldest first). A lock file serialises sessions that
//! share a base dir.

use super::args::req_str;
use super::path::Access;
use super::write::rename_or_copy;
use super::ToolBox;
use serde_json::{json, Value};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Trash entries older than this are removed.
const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The trash is kept under this many bytes.
const MAX_BYTES: u64 = 50 * 1024 * 1024;

/// `delete_file {file_path}`.
pub fn delete_file(tb: &mut ToolBox, args: &Value, call_id: &str) -> Result<String, String> {
    let requested = req_str(args, "file_path")?;
    let resolved = tb.policy.resolve(requested, Access::Write)?;
    // The entry itself: a symlink is trashed, not its target.
    let original = tb.policy.unresolved(requested)?;
    let meta = std::fs::symlink_metadata(&original).map_err(|_| format!("error: file not found: {requested}"))?;
    let is_link = meta.file_type().is_symlink();
    if meta.is_dir() {
        return Err(format!("error: {requested} is a directory. delete_file only removes regular files and symlinks (no recursive directory removal). List the directory with list_files, then delete each file individually."));
    }
    if !is_link {
        tb.check_write(&resolved)?;
    }
    let trash = tb.policy.resolve(".swival/trash", Access::Write)?;
    std::fs::create_dir_all(&trash).map_err(|e| format!("error: cannot create {}: {e}", trash.display()))?;
    let _lock = lock(&trash)?;
    prune(&trash, None);
    let id = trash_id();
    let dir = trash.join(&id);
    std::fs::create_dir_all(&dir).map_err(|e| format!("error: cannot create {}: {e}", dir.display()))?;
    let name = original.file_name().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("file"));
    rename_or_copy(&original, &dir.join(name))
        .map_err(|e| format!("error: cannot move {requested} to the trash: {e}"))?;
    if !is_link {
        // Recreating the same path later is a new file, not an overwrite.
        tb.tracker.mark(&resolved);
    }
    prune(&trash, Some(&id));
    let entry = json!({
        "trash_id": id,
        "original_path": requested,
        "timestamp": humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        "tool_call_id": call_id,
    });
    // The file is already in the trash; a failed index line loses only the
    // record, so it is logged rather than reported as a failed delete.
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(trash.join("index.jsonl"))
        .and_then(|mut f| writeln!(f, "{entry}"));
    if let Err(e) = appended {
        tracing::warn!(error = %e, "cannot append to the trash index");
    }
    Ok(format!("Trashed {requested} -> .swival/trash/{id}"))
}

/// 32 random hex digits, like Python's `uuid4().hex`.
fn trash_id() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// An exclusive lock on `.swival/trash/.lock`, held until dropped.
fn lock(trash: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, String> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(trash.join(".lock"))
        .map_err(|e| format!("error: cannot open the trash lock: {e}"))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| format!("error: cannot lock the trash: {e}"))
}

fn tree_size(p: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(p).map(|rd| rd.filter_map(Result::ok).map(|e| tree_size(&e.path())).sum()).unwrap_or(0)
}

/// Drop entries older than [`MAX_AGE`], then the oldest until the trash is
/// under [`MAX_BYTES`]. `keep` (the entry just added) is never dropped but
/// counts toward the size.
fn prune(trash: &Path, keep: Option<&str>) {
    let Ok(rd) = std::fs::read_dir(trash) else {
        return;
    };
    let now = SystemTime::now();
    let mut entries: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    for e in rd.filter_map(Result::ok) {
        let path = e.path();
        let Ok(meta) = e.metadata() else { continue };
        if !meta.is_dir() {
            continue;
        }
        let mtime = meta.modified().unwrap_or(now);
        let kept = keep.is_some_and(|k| e.file_name() == k);
        if !kept && now.duration_since(mtime).unwrap_or_default() > MAX_AGE {
            let _ = std::fs::remove_dir_all(&path);
            continue;
        }
        entries.push((mtime, tree_size(&path), path));
    }
    entries.sort_by_key(|(mtime, _, _)| *mtime);
    let mut total: u64 = entries.iter().map(|(_, size, _)| size).sum();
    for (_, size, path) in entries {
        if total <= MAX_BYTES {
            break;
        }
        if keep.is_some_and(|k| path.file_name().is_some_and(|n| n == k)) {
            continue;
        }
        let _ = std::fs::remove_dir_all(&path);
        total -= size;
    }
}

#[cfg(test)]
mod tests {
    use super::super::files::read_file;
    use super::super::test_toolbox as toolbox;
    use super::super::write::READ_FIRST;
    use super::*;

    #[test]
    fn delete_moves_the_file_to_the_trash_and_indexes_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("gone.txt"), "bye").unwrap();
        let mut tb = toolbox(d.path());
        read_file(&mut tb, &json!({"file_path": "gone.txt"})).unwrap();
        let out = delete_file(&mut tb, &json!({"file_path": "gone.txt"}), "call_7").unwrap();
        let id = out.strip_prefix("Trashed gone.txt -> .swival/trash/").unwrap();
        assert_eq!(id.len(), 32);
        assert!(!d.path().join("gone.txt").exists());
        let trashed = d.path().join(".swival/trash").join(id).join("gone.txt");
        assert_eq!(std::fs::read_to_string(trashed).unwrap(), "bye");
        let index = std::fs::read_to_string(d.path().join(".swival/trash/index.jsonl")).unwrap();
        let line: Value = serde_json::from_str(index.trim()).unwrap();
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
        assert_eq!(delete_file(&mut tb, &json!({"file_path": "f"}), "").unwrap_err(), READ_FIRST);
        let err = delete_file(&mut tb, &json!({"file_path": "dir"}), "").unwrap_err();
        assert!(err.contains("is a directory"), "{err}");
        let err = delete_file(&mut tb, &json!({"file_path": "nope"}), "").unwrap_err();
        assert_eq!(err, "error: file not found: nope");
    }

    #[test]
    fn a_symlink_is_trashed_itself_without_a_read() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("target"), "t").unwrap();
        std::os::unix::fs::symlink(d.path().join("target"), d.path().join("link")).unwrap();
        delete_file(&mut toolbox(d.path()), &json!({"file_path": "link"}), "").unwrap();
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
        prune(d.path(), None);
        assert!(!old.exists());
        assert!(d.path().join("new").exists());
    }
}
