//! Putting a change set back (`run/revert`). Under the project's lock,
//! each file's content now is compared with what the set left: a file
//! changed since (by the user, another session, a later run) is a
//! conflict, and without `force` nothing is written. The rest get their
//! content before the set, byte for byte with its mode, written through
//! `beneath/` from the project's root (no symlink on the way is
//! followed); files the set created are removed, with the directories
//! they leave empty. The revert is a change set of its own, so it can be
//! reverted (redo).

use super::shadow::blob_id;
use super::{ChangeError, Changes};
use crate::beneath::{Beneath, Kind};
use crate::store::{ChangeSetRow, FileRecord, FileState};
use std::path::Path;
use swival_protocol::{ChangeSetKind, ChangeSource, RevertConflict};

/// What `run/revert` did.
#[derive(Debug, Clone)]
pub struct Reverted {
    /// Whether files were written.
    pub applied: bool,
    /// The revert's own set, when it wrote.
    pub revert_id: Option<String>,
    /// The paths put back.
    pub reverted: Vec<String>,
    /// Paths changed since: left alone.
    pub conflicts: Vec<RevertConflict>,
    /// Paths over the size limit: left alone.
    pub not_restorable: Vec<String>,
    /// Paths whose writing back failed, and why: left as they are.
    pub failed: Vec<RevertConflict>,
}

impl Changes {
    /// Put back what `set` changed; with `force`, all but the conflicts.
    pub async fn revert(&self, set: &ChangeSetRow, force: bool) -> Result<Reverted, ChangeError> {
        let project = self.project_of(&set.root);
        let mut locked = project.lock().await?;
        let root = Beneath::open(project.root()).map_err(|e| ChangeError::Io(e.into()))?;
        let later = self.store().change_sets_after(&set.root, &set.created_at)?;
        let mut todo: Vec<&FileRecord> = Vec::new();
        let mut out = Reverted {
            applied: false,
            revert_id: None,
            reverted: Vec::new(),
            conflicts: Vec::new(),
            not_restorable: Vec::new(),
            failed: Vec::new(),
        };
        for file in &set.files {
            if is_big(&file.before) || is_big(&file.after) {
                out.not_restorable.push(file.path.clone());
            } else if file.shared {
                let cause =
                    "another session's command ran at the same time as this run's and changed it too".to_owned();
                out.conflicts.push(RevertConflict { path: file.path.clone(), cause, by: None });
            } else if !same(&current(&root, &file.path), &file.after) {
                out.conflicts.push(conflict(file, &later, &set.id));
            } else {
                todo.push(file);
            }
        }
        if !out.conflicts.is_empty() && !force {
            return Ok(out);
        }
        let ids: Vec<String> = todo.iter().filter_map(|f| f.before.as_ref()?.blob.clone()).collect();
        let contents = self.contents(&set.root, &mut locked, &ids).await?;
        let todo = write_all(&root, todo, &contents, &mut out);
        out.applied = true;
        if !todo.is_empty() {
            let id = format!("u_{:016x}", rand::random::<u64>());
            let by = ChangeSource { tool: "revert".into(), call_id: String::new(), turn: 0, label: set.id.clone() };
            let files = todo
                .iter()
                .map(|f| FileRecord {
                    path: f.path.clone(),
                    before: f.after.clone(),
                    after: f.before.clone(),
                    by: vec![by.clone()],
                    shared: false,
                })
                .collect();
            let row = ChangeSetRow {
                id: id.clone(),
                session_id: set.session_id.clone(),
                run_id: set.run_id.clone(),
                root: set.root.clone(),
                kind: ChangeSetKind::Revert,
                reverts: Some(set.id.clone()),
                reverted_by: None,
                created_at: crate::clock::now(),
                files,
            };
            self.store().put_change_set(row, Vec::new()).await?;
            out.revert_id = Some(id);
        }
        Ok(out)
    }
}

/// Write `todo` back, each file's failure in `out.failed` and the rest
/// put back; the files written. Removals first, the deepest first, then
/// writes: a link that took a directory's place goes before the
/// directory's files come back, and a directory's files before the link
/// it replaced.
fn write_all<'a>(
    root: &Beneath,
    mut todo: Vec<&'a FileRecord>,
    contents: &std::collections::HashMap<String, Vec<u8>>,
    out: &mut Reverted,
) -> Vec<&'a FileRecord> {
    todo.sort_by(|a, b| match (a.before.is_none(), b.before.is_none()) {
        (true, true) => b.path.cmp(&a.path),
        (x, y) => y.cmp(&x).then_with(|| a.path.cmp(&b.path)),
    });
    let mut written = Vec::with_capacity(todo.len());
    for file in todo {
        match write_back(root, file, contents) {
            Ok(()) => {
                out.reverted.push(file.path.clone());
                written.push(file);
            }
            Err(e) => out.failed.push(RevertConflict { path: file.path.clone(), cause: e.to_string(), by: None }),
        }
    }
    out.reverted.sort();
    written
}

/// Whether a side is a file over the size limit.
fn is_big(state: &Option<FileState>) -> bool {
    state.as_ref().is_some_and(|s| s.big.is_some() || s.blob.is_none())
}

/// What is at `path` now: its blob id and type (`None`: nothing).
fn current(root: &Beneath, path: &str) -> Option<(String, u32)> {
    let rel = Path::new(path);
    let meta = root.metadata(rel).ok()?;
    match meta.kind {
        Kind::File => root.read(rel).ok().map(|b| (blob_id(&b), 0o100000)),
        Kind::Symlink => root.read_link(rel).ok().map(|t| (blob_id(&t), 0o120000)),
        // A directory is no file: where the set left nothing, it is as
        // the set left it; where it left a file, it is not.
        Kind::Dir => None,
        // A device or FIFO where a file was: not what the set left.
        Kind::Other => Some((String::new(), 0)),
    }
}

/// Whether what is there now is what the set left.
fn same(now: &Option<(String, u32)>, left: &Option<FileState>) -> bool {
    match (now, left) {
        (None, None) => true,
        (Some((blob, kind)), Some(state)) => {
            state.blob.as_deref() == Some(blob.as_str()) && state.mode & 0o170000 == *kind
        }
        _ => false,
    }
}

/// The conflict for a file changed since the set: which later set
/// changed it, when one did.
fn conflict(file: &FileRecord, later: &[ChangeSetRow], own: &str) -> RevertConflict {
    let by = later.iter().rev().find(|s| s.id != own && s.files.iter().any(|f| f.path == file.path));
    let cause = match by {
        Some(s) if s.kind == ChangeSetKind::Revert => {
            format!("undo {} changed it since", s.id)
        }
        Some(s) => {
            let call = s.files.iter().find(|f| f.path == file.path).and_then(|f| f.by.last());
            let how = call.map(|c| format!(" ({}, turn {})", c.tool, c.turn)).unwrap_or_default();
            format!("run {} of session {}{how} changed it since", s.id, s.session_id)
        }
        None => "changed outside swivald since the run (by you or another program)".to_owned(),
    };
    RevertConflict { path: file.path.clone(), cause, by: by.map(|s| s.id.clone()) }
}

/// Put one file back as it was before the set.
fn write_back(
    root: &Beneath,
    file: &FileRecord,
    contents: &std::collections::HashMap<String, Vec<u8>>,
) -> Result<(), crate::beneath::Error> {
    let rel = Path::new(&file.path);
    let Some(before) = &file.before else {
        match root.remove_file(rel) {
            Err(e) if !e.is_not_found() => return Err(e),
            _ => {}
        }
        // Directories the file's creation made, now empty.
        for dir in rel.ancestors().skip(1).filter(|d| !d.as_os_str().is_empty()) {
            if !root.remove_empty_dir(dir) {
                break;
            }
        }
        return Ok(());
    };
    let blob = before.blob.as_deref().unwrap_or_default();
    let bytes = contents.get(blob).map(Vec::as_slice).unwrap_or_default();
    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        root.mkdir_all(parent)?;
    }
    if before.mode & 0o170000 == 0o120000 {
        return root.symlink(bytes, rel);
    }
    if root.metadata(rel).is_ok_and(|m| m.kind == Kind::Symlink) {
        root.remove_file(rel)?;
    }
    root.replace_with_mode(rel, bytes, Some(before.mode & 0o7777))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_there_now_is_compared_by_content_and_type() {
        let file = FileState { blob: Some(blob_id(b"x")), mode: 0o100600, big: None };
        assert!(same(&Some((blob_id(b"x"), 0o100000)), &Some(file.clone())));
        assert!(!same(&Some((blob_id(b"y"), 0o100000)), &Some(file.clone())));
        assert!(!same(&Some((blob_id(b"x"), 0o120000)), &Some(file.clone())));
        assert!(!same(&None, &Some(file)));
        assert!(same(&None, &None));
    }
}
