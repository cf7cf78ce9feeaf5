//! Change sets as stored: what a run (or an undo) changed in its project,
//! one row per set with its files as JSON. A row names contents by git
//! blob id: those a command's snapshots saw live in the project's snapshot
//! store (`changes/`), those a file tool reported here (`change_blobs`, by
//! project root), stored with the set that names them in one commit.

use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use swival_protocol::{ChangeSetKind, ChangeSource, SessionId};

/// One side of a file's change: what was at its path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    /// Its git blob id (of the content, or a symlink's target); `None`
    /// for a file over the snapshot size limit, kept by size and hash only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// `st_mode` with its type bits (`0o100644`, `0o120000` for a symlink).
    pub mode: u32,
    /// A file over the snapshot size limit: its size and hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub big: Option<BigFile>,
}

/// A file over the snapshot size limit, recorded by size and SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BigFile {
    /// Size in bytes.
    pub size: u64,
    /// SHA-256, hex.
    pub sha256: String,
}

/// One path a set changed: what was there before and after (`None`:
/// nothing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Relative to the project's root.
    pub path: String,
    /// Before the set.
    pub before: Option<FileState>,
    /// After the set.
    pub after: Option<FileState>,
    /// The calls that changed it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by: Vec<ChangeSource>,
    /// Another session's command ran at the same time and changed it too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
}

/// A stored change set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeSetRow {
    /// The run's id, or the undo's (`u_…`).
    pub id: String,
    /// The session.
    pub session_id: SessionId,
    /// The run (for an undo, the run of the set it reverted).
    pub run_id: Option<String>,
    /// The project's root.
    pub root: String,
    /// What made it.
    pub kind: ChangeSetKind,
    /// The set an undo reverted.
    pub reverts: Option<String>,
    /// The undo that reverted this set.
    pub reverted_by: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// Its files, by path.
    pub files: Vec<FileRecord>,
}

type Tuple = (String, String, Option<String>, String, String, Option<String>, Option<String>, String, String);

const COLUMNS: &str = "id, session_id, run_id, root, kind, reverts, reverted_by, created_at, files";

fn tuple(r: &rusqlite::Row<'_>) -> rusqlite::Result<Tuple> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?))
}

fn row((id, session, run_id, root, kind, reverts, reverted_by, created_at, files): Tuple) -> ChangeSetRow {
    ChangeSetRow {
        id,
        session_id: SessionId(session),
        run_id,
        root,
        kind: if kind == "revert" { ChangeSetKind::Revert } else { ChangeSetKind::Run },
        reverts,
        reverted_by,
        created_at,
        // Written by this module only; a row that does not read lists nothing.
        files: serde_json::from_str(&files).unwrap_or_default(),
    }
}

impl Store {
    /// The change set `id`.
    pub fn change_set(&self, id: &str) -> Result<Option<ChangeSetRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM change_sets WHERE id = ?1");
        let t = self.with(|c| c.prepare_cached(&sql)?.query_row(params![id], tuple).optional())?;
        Ok(t.map(row))
    }

    /// The sets of project `root` made after `created_at`, oldest first.
    pub fn change_sets_after(&self, root: &str, created_at: &str) -> Result<Vec<ChangeSetRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM change_sets WHERE root = ?1 AND created_at > ?2 ORDER BY created_at");
        let rows = self.with(|c| {
            let mut st = c.prepare_cached(&sql)?;
            let rows = st.query_map(params![root, created_at], tuple)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        Ok(rows.into_iter().map(row).collect())
    }

    /// Every blob the stored sets of project `root` name: what its
    /// snapshot store must keep.
    pub fn blobs_of(&self, root: &str) -> Result<HashSet<String>, StoreError> {
        let files: Vec<String> = self.with(|c| {
            let mut st = c.prepare_cached("SELECT files FROM change_sets WHERE root = ?1")?;
            let rows = st.query_map(params![root], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        // A set that does not read keeps nothing from being collected: it
        // is an error, not an empty set.
        let mut blobs = HashSet::new();
        for f in &files {
            let records: Vec<FileRecord> = self.decode(f)?;
            let states = records.into_iter().flat_map(|r| [r.before, r.after]).flatten();
            blobs.extend(states.filter_map(|s| s.blob));
        }
        Ok(blobs)
    }

    /// Store a new set, with the contents of `blobs` (a file tool's) in
    /// the same commit; with `reverts`, mark that set reverted by it.
    pub async fn put_change_set(&self, set: ChangeSetRow, blobs: Vec<(String, Arc<[u8]>)>) -> Result<(), StoreError> {
        let files = serde_json::to_string(&set.files).expect("records serialize");
        self.write_async(move |c| {
            put_blobs(c, &set.root, &blobs)?;
            let kind = match set.kind {
                ChangeSetKind::Run => "run",
                ChangeSetKind::Revert => "revert",
            };
            c.prepare_cached(&format!(
                "INSERT OR REPLACE INTO change_sets ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ))?
            .execute(params![
                set.id,
                set.session_id.0,
                set.run_id,
                set.root,
                kind,
                set.reverts,
                set.reverted_by,
                set.created_at,
                files
            ])?;
            if let Some(reverted) = &set.reverts {
                c.prepare_cached("UPDATE change_sets SET reverted_by = ?1 WHERE id = ?2")?
                    .execute(params![set.id, reverted])?;
            }
            Ok(())
        })
        .await
    }

    /// Keep contents a run's file tools reported before its set is stored
    /// (they grew past its budget); a collection drops those no stored set
    /// names once the run no longer records.
    pub async fn put_change_blobs(&self, root: String, blobs: Vec<(String, Arc<[u8]>)>) -> Result<(), StoreError> {
        self.write_async(move |c| put_blobs(c, &root, &blobs)).await
    }

    /// The contents among `ids` kept here for project `root`.
    pub fn change_blobs(&self, root: &str, ids: &[String]) -> Result<HashMap<String, Vec<u8>>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare_cached("SELECT data FROM change_blobs WHERE root = ?1 AND id = ?2")?;
            let mut out = HashMap::new();
            for id in ids {
                if let Some(data) = st.query_row(params![root, id], |r| r.get::<_, Vec<u8>>(0)).optional()? {
                    out.insert(id.clone(), data);
                }
            }
            Ok(out)
        })
    }

    /// Drop the contents of project `root` that `keep` does not name; how
    /// many went.
    pub async fn prune_change_blobs(&self, root: String, keep: HashSet<String>) -> Result<u64, StoreError> {
        self.write_async(move |c| {
            let ids: Vec<String> = {
                let mut st = c.prepare_cached("SELECT id FROM change_blobs WHERE root = ?1")?;
                let rows = st.query_map(params![root], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            let mut gone = 0;
            let mut delete = c.prepare_cached("DELETE FROM change_blobs WHERE root = ?1 AND id = ?2")?;
            for id in ids.iter().filter(|id| !keep.contains(*id)) {
                gone += delete.execute(params![root, id])? as u64;
            }
            Ok(gone)
        })
        .await
    }

    /// The projects with contents kept here.
    pub fn change_blob_roots(&self) -> Result<Vec<String>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare_cached("SELECT DISTINCT root FROM change_blobs")?;
            let rows = st.query_map([], |r| r.get(0))?;
            rows.collect()
        })
    }

    /// The bytes of every content kept here.
    pub fn change_blob_bytes(&self) -> Result<u64, StoreError> {
        self.with(|c| c.query_row("SELECT COALESCE(SUM(LENGTH(data)), 0) FROM change_blobs", [], |r| r.get(0)))
    }

    /// Mark `paths` of set `id` as shared with another session's command.
    pub async fn mark_shared(&self, id: &str, paths: Vec<String>) -> Result<(), StoreError> {
        let Some(mut set) = self.change_set(id)? else { return Ok(()) };
        set.files.iter_mut().filter(|f| paths.contains(&f.path)).for_each(|f| f.shared = true);
        let (id, files) = (set.id, serde_json::to_string(&set.files).expect("records serialize"));
        self.write_async(move |c| {
            c.prepare_cached("UPDATE change_sets SET files = ?1 WHERE id = ?2")?.execute(params![files, id]).map(drop)
        })
        .await
    }
}

/// Insert `blobs` of project `root` (a content already there is left).
fn put_blobs(c: &rusqlite::Connection, root: &str, blobs: &[(String, Arc<[u8]>)]) -> rusqlite::Result<()> {
    let mut st = c.prepare_cached("INSERT OR IGNORE INTO change_blobs (root, id, data) VALUES (?1, ?2, ?3)")?;
    for (id, data) in blobs {
        st.execute(params![root, id, &data[..]])?;
    }
    Ok(())
}
