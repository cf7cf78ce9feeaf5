//! The git worktree a session works in (`session/create`'s `worktree`): a
//! row of its own, written with the session's, so where the worktree is,
//! its branch, the commit it started from and what `session/apply` last
//! brought into the user's checkout survive a restart. A pruned session's
//! row stays until `session/prune` has removed its worktree.

use super::{Store, StoreError};
use rusqlite::{params, Connection};
use std::collections::HashMap;
use swival_protocol::SessionId;

/// A stored worktree of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeRow {
    /// The top of the user's checkout it was made from.
    pub origin: String,
    /// The repository's common git directory (`<origin>/.git`), which the
    /// worktree's `.git` file points into.
    pub git_dir: String,
    /// The worktree's own git directory (`<git_dir>/worktrees/<name>`).
    pub admin_dir: String,
    /// The worktree's directory.
    pub path: String,
    /// Its branch, `swival/<session_id>`.
    pub branch: String,
    /// The commit it started from.
    pub base_commit: String,
    /// The branch's commit last applied to the checkout, if any.
    pub applied_commit: Option<String>,
}

/// Insert session `id`'s worktree row (in the session's own commit).
pub(super) fn put_worktree(c: &Connection, id: &str, w: &WorktreeRow) -> rusqlite::Result<()> {
    c.prepare_cached(
        "INSERT INTO session_worktrees (session_id, origin, git_dir, admin_dir, path, branch, base_commit, applied_commit)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![id, w.origin, w.git_dir, w.admin_dir, w.path, w.branch, w.base_commit, w.applied_commit])
    .map(drop)
}

impl Store {
    /// The worktrees of the sessions that have one (all, or `only`'s).
    pub(super) fn worktrees(&self, only: Option<&SessionId>) -> Result<HashMap<String, WorktreeRow>, StoreError> {
        self.select_worktrees("?1 IS NULL OR session_id = ?1", only)
    }

    /// The worktrees whose session was deleted (`session/prune` removes
    /// them), by session id.
    pub fn orphan_worktrees(&self) -> Result<HashMap<String, WorktreeRow>, StoreError> {
        let orphan = "?1 IS NULL AND session_id NOT IN (SELECT id FROM sessions)";
        self.select_worktrees(orphan, None)
    }

    /// The worktree rows matching `filter` (SQL over `session_id`, with
    /// `?1` the session `only`).
    fn select_worktrees(
        &self,
        filter: &str,
        only: Option<&SessionId>,
    ) -> Result<HashMap<String, WorktreeRow>, StoreError> {
        let sql = format!(
            "SELECT session_id, origin, git_dir, admin_dir, path, branch, base_commit, applied_commit
             FROM session_worktrees WHERE {filter}"
        );
        self.with(|c| {
            let mut st = c.prepare_cached(&sql)?;
            let rows = st.query_map(params![only.map(|id| id.0.as_str())], |r| {
                let row = WorktreeRow {
                    origin: r.get(1)?,
                    git_dir: r.get(2)?,
                    admin_dir: r.get(3)?,
                    path: r.get(4)?,
                    branch: r.get(5)?,
                    base_commit: r.get(6)?,
                    applied_commit: r.get(7)?,
                };
                Ok((r.get::<_, String>(0)?, row))
            })?;
            rows.collect()
        })
    }

    /// Forget the worktree of deleted session `id` (it was removed).
    pub async fn forget_worktree(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.write_async(move |c| c.execute("DELETE FROM session_worktrees WHERE session_id = ?1", [&id]).map(drop))
            .await
    }

    /// Record that session `id`'s branch was applied up to `commit`.
    pub async fn set_applied(&self, id: &SessionId, commit: &str) -> Result<(), StoreError> {
        let (id, commit) = (id.0.clone(), commit.to_owned());
        self.write_async(move |c| {
            c.prepare_cached("UPDATE session_worktrees SET applied_commit = ?2 WHERE session_id = ?1")?
                .execute(params![id, commit])
                .map(drop)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::super::SessionRow;
    use super::*;

    #[test]
    fn a_worktree_row_is_stored_with_its_session_and_remembers_what_was_applied() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let store = Store::open(&path).unwrap();
        let worktree = WorktreeRow {
            origin: "/p".into(),
            git_dir: "/p/.git".into(),
            admin_dir: "/p/.git/worktrees/s_1".into(),
            path: "/w/s_1".into(),
            branch: "swival/s_1".into(),
            base_commit: "abc".into(),
            applied_commit: None,
        };
        let row = SessionRow {
            id: SessionId("s_1".into()),
            base_dir: "/p".into(),
            title: None,
            config: serde_json::json!({}),
            request: serde_json::Value::Null,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            last_used_at: "2026-01-01T00:00:00.000Z".into(),
            closed: false,
            last_seq: 0,
            run_count: 0,
            cost_usd: None,
            worktree: Some(worktree.clone()),
            parent: None,
        };
        store.insert_session(&row).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(store.set_applied(&row.id, "def")).unwrap();
        drop(store);
        let again = Store::open(&path).unwrap().session(&row.id).unwrap().unwrap();
        assert_eq!(again.worktree, Some(WorktreeRow { applied_commit: Some("def".into()), ..worktree.clone() }));
        // A deleted session's worktree stays on record until it is removed.
        let store = Store::open(&path).unwrap();
        assert!(store.orphan_worktrees().unwrap().is_empty());
        store.prune("2027-01-01T00:00:00.000Z", Vec::new()).unwrap();
        assert_eq!(store.orphan_worktrees().unwrap().into_keys().collect::<Vec<_>>(), ["s_1"]);
        rt.block_on(store.forget_worktree("s_1")).unwrap();
        assert!(store.orphan_worktrees().unwrap().is_empty());
    }
}
