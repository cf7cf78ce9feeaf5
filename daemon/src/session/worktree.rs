//! Sessions in their own git worktree (`session/create`'s `worktree`):
//! making one for a new session, `session/apply` (the worktree's work
//! brought into the user's checkout as uncommitted changes) and, with
//! `session/prune`, removing the worktrees of deleted sessions with their
//! branches kept. The git work is `changes::worktree`'s.
//!
//! A worktree session's project (its `swival.toml`, trust, pipeline and
//! pinned scripts) is the user's checkout, which the model cannot write;
//! its file tools, commands and write dirs are the worktree's (`work_dir`).
//! One lock orders every worktree change of the daemon: a prune never
//! sees a worktree whose session is still being stored, and two applies
//! never patch one checkout at once.

use super::{SessionError, Sessions};
use crate::changes::git::Git;
use crate::changes::worktree::{self, Created, WorktreeError};
use crate::store::{SessionRow, WorktreeRow};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use swival_protocol::{SessionApplyResult, SessionId, SessionPruneResult, WorktreeInfo};

/// The daemon's worktrees: where they go, the git that makes them and the
/// lock their changes take.
pub(crate) struct Worktrees {
    /// The git program.
    git: Git,
    /// Where worktrees go (`worktrees_dir`).
    root: PathBuf,
    /// Held by every creation, apply and removal.
    lock: tokio::sync::Mutex<()>,
}

impl Worktrees {
    /// Worktrees under `root`, made by the `git` found on the daemon's PATH.
    pub fn new(root: PathBuf) -> Worktrees {
        let git = Git::locate();
        if !git.available() {
            tracing::info!("no git program on the daemon's PATH: sessions cannot have a worktree");
        }
        Worktrees { git, root, lock: tokio::sync::Mutex::new(()) }
    }
}

/// Where a session of `base_dir` works: its base dir, or in `worktree`
/// (see [`Sessions::worktree_of`]) the same place in it.
pub(super) fn work_dir(base_dir: &str, worktree: Option<&WorktreeRow>) -> PathBuf {
    let base = PathBuf::from(base_dir);
    match worktree {
        None => base,
        Some(w) => match base.strip_prefix(&w.origin) {
            Ok(inside) => Path::new(&w.path).join(inside),
            Err(_) => PathBuf::from(&w.path),
        },
    }
}

/// The repository directory a worktree session's commands may read but
/// never write (its worktree's `.git` file points into it).
pub(super) fn git_dir(worktree: Option<&WorktreeRow>) -> Option<PathBuf> {
    worktree.map(|w| PathBuf::from(&w.git_dir))
}

/// The worktree's `.git` file, which neither the file tools nor commands
/// may change (the daemon's own git calls never read it either).
pub(super) fn git_file(worktree: Option<&WorktreeRow>) -> Option<PathBuf> {
    worktree.map(|w| Path::new(&w.path).join(".git"))
}

/// A stored worktree as `session/list` and `session/get` show it.
pub(super) fn info(w: &WorktreeRow) -> WorktreeInfo {
    WorktreeInfo {
        path: w.path.clone(),
        branch: w.branch.clone(),
        origin: w.origin.clone(),
        base_commit: w.base_commit.clone(),
        applied_commit: w.applied_commit.clone(),
    }
}

/// A worktree just made, as its session stores it, and the warnings about
/// what of the user's checkout it does not have.
pub(super) struct Made {
    /// What git made.
    pub created: Created,
    /// The session's row for it.
    pub row: WorktreeRow,
    /// The uncommitted changes it lacks, by name, and what of the
    /// checkout's context could not be carried into it, and why.
    pub warnings: Vec<String>,
}

/// Names shown in a warning before `and N more`.
const NAMES_SHOWN: usize = 5;

/// `names` for a warning: the first few, then how many more.
fn some_names(names: &[String]) -> String {
    let shown = names.iter().take(NAMES_SHOWN).cloned().collect::<Vec<_>>().join(", ");
    match names.len().saturating_sub(NAMES_SHOWN) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

impl Sessions {
    /// The worktree session `row` works in: its own or, for a subagent,
    /// its parent's, so a child spawned in a worktree session changes the
    /// same worktree (the parent owns it: its apply and prune).
    pub(super) fn worktree_of(&self, row: &SessionRow) -> Result<Option<WorktreeRow>, SessionError> {
        match (&row.worktree, &row.parent) {
            (Some(own), _) => Ok(Some(own.clone())),
            (None, Some(parent)) => Ok(self.shared.store.session(&parent.session_id)?.and_then(|p| p.worktree)),
            (None, None) => Ok(None),
        }
    }

    /// The lock every worktree change takes, held by a session/create
    /// with `worktree` until the session is stored.
    pub(super) async fn worktree_lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.shared.worktrees.lock.lock().await
    }

    /// Make session `id`'s worktree of the checkout `base` is in.
    pub(super) async fn make_worktree(&self, base: &Path, id: &SessionId) -> Result<Made, SessionError> {
        let w = &self.shared.worktrees;
        let created = worktree::create(&w.git, &w.root, base, &id.0).await?;
        if let Ok(inside) = base.strip_prefix(&created.origin) {
            // A base dir that HEAD does not have (untracked) is made, empty.
            let _ = std::fs::create_dir_all(created.path.join(inside));
        }
        let shown = |p: &Path| p.display().to_string();
        let row = WorktreeRow {
            origin: shown(&created.origin),
            git_dir: shown(&created.git_dir),
            admin_dir: shown(&created.admin_dir),
            path: shown(&created.path),
            branch: created.branch.clone(),
            base_commit: created.base_commit.clone(),
            applied_commit: None,
        };
        // The instruction files, memory and skills the user meant it to have.
        let work = work_dir(&base.display().to_string(), Some(&row));
        let from = base.to_owned();
        let carried = tokio::task::spawn_blocking(move || super::carry::carry(&from, &work))
            .await
            .map_err(|e| SessionError::Internal(format!("carrying the checkout's context failed: {e}")))?;
        let inside = base.strip_prefix(&created.origin).unwrap_or(Path::new(""));
        let carried_files: std::collections::HashSet<PathBuf> = carried.files.iter().map(|f| inside.join(f)).collect();
        let left_out: Vec<String> = created
            .uncommitted
            .iter()
            .filter(|f| !carried_files.contains(*f))
            .map(|f| f.display().to_string())
            .collect();
        let mut warnings = Vec::new();
        if !left_out.is_empty() {
            warnings.push(format!(
                "{} file(s) with uncommitted changes in {} are not in the worktree {}: {}; it starts from the last commit",
                left_out.len(),
                row.origin,
                row.path,
                some_names(&left_out)
            ));
        }
        warnings.extend(carried.left_out.iter().map(|why| format!("not carried into the worktree: {why}")));
        Ok(Made { created, row, warnings })
    }

    /// Undo a worktree whose session could not be made.
    pub(super) async fn discard_worktree(&self, made: &Made) {
        worktree::discard(&self.shared.worktrees.git, &made.created).await;
    }

    /// `session/apply`: commit the worktree's work to its branch, then
    /// apply what is new since the last apply to the user's checkout as
    /// uncommitted changes, all or nothing. Refused while the session runs.
    pub async fn apply(&self, id: &SessionId) -> Result<SessionApplyResult, SessionError> {
        let row = self.shared.store.session(id)?.ok_or_else(|| SessionError::NotFound(id.clone()))?;
        if let (None, Some(parent)) = (&row.worktree, &row.parent) {
            if self.worktree_of(&row)?.is_some() {
                let parent = &parent.session_id;
                return Err(SessionError::Refused(format!(
                    "session {id} is a subagent of {parent} and works in its worktree; apply that: swivalctl apply {parent}"
                )));
            }
        }
        let w = row.worktree.ok_or_else(|| SessionError::NotWorktree(id.clone()))?;
        if let Some(run) = self.shared.store.unfinished_runs()?.into_iter().find(|r| r.session_id == *id) {
            return Err(SessionError::Busy { session: id.clone(), run: run.id });
        }
        let _held = self.worktree_lock().await;
        let git = &self.shared.worktrees.git;
        worktree::commit_work(
            git,
            Path::new(&w.path),
            Path::new(&w.admin_dir),
            Path::new(&w.origin),
            &format!("swivald: the work of session {id}"),
        )
        .await?;
        let origin = Path::new(&w.origin);
        let head = worktree::branch_head(git, origin, &w.branch).await?;
        let from = w.applied_commit.as_deref().unwrap_or(&w.base_commit);
        let done = worktree::apply(git, origin, from, &head).await?;
        if done.applied && head != from {
            self.shared.store.set_applied(id, &head).await?;
        }
        Ok(SessionApplyResult {
            applied: done.applied,
            files: done.files,
            conflicts: done.conflicts,
            branch: w.branch,
            commit: head,
        })
    }

    /// `session/prune`: delete the sessions unused for `older_than` (see
    /// [`Sessions::prune`]), then remove the worktrees no session owns and
    /// collect the snapshot stores.
    pub async fn prune_all(
        self: &Arc<Self>,
        older_than: std::time::Duration,
    ) -> Result<SessionPruneResult, SessionError> {
        let sessions = self.clone();
        let removed = tokio::task::spawn_blocking(move || sessions.prune(older_than))
            .await
            .map_err(|e| SessionError::Internal(format!("pruning sessions failed: {e}")))??;
        let (worktrees_removed, branches_kept) = self.prune_worktrees().await?;
        // What only the deleted sessions' runs named leaves the snapshot
        // stores; a failure here loses nothing and is said in the log.
        if let Some(changes) = &self.shared.changes {
            match changes.collect().await {
                Ok(c) => tracing::info!(
                    "snapshot stores collected: {} objects and {} stores removed, {} → {} bytes",
                    c.objects_removed,
                    c.stores_removed,
                    c.bytes_before,
                    c.bytes_after
                ),
                Err(e) => tracing::warn!("collecting the snapshot stores failed: {e}"),
            }
        }
        Ok(SessionPruneResult { removed, worktrees_removed, branches_kept })
    }

    /// Close session `id` and remove its worktree and branch, which hold
    /// nothing worth keeping (a loop firing that changed no file): the
    /// session stays readable, and can no longer run.
    pub async fn discard_worktree_of(&self, id: &SessionId) -> Result<(), SessionError> {
        self.close(id).await?;
        let _held = self.worktree_lock().await;
        let Some(w) = self.shared.store.session(id)?.and_then(|row| row.worktree) else { return Ok(()) };
        let created = Created {
            origin: PathBuf::from(&w.origin),
            git_dir: PathBuf::from(&w.git_dir),
            admin_dir: PathBuf::from(&w.admin_dir),
            path: PathBuf::from(&w.path),
            branch: w.branch.clone(),
            base_commit: w.base_commit.clone(),
            uncommitted: Vec::new(),
        };
        worktree::discard(&self.shared.worktrees.git, &created).await;
        self.shared.store.forget_worktree(&id.0).await?;
        Ok(())
    }

    /// Remove the worktree of every deleted session, its work committed
    /// to its branch first; the worktrees removed and the branches kept.
    pub async fn prune_worktrees(&self) -> Result<(Vec<String>, Vec<String>), SessionError> {
        let _held = self.worktree_lock().await;
        let (mut removed, mut kept) = (Vec::new(), Vec::new());
        for (sid, w) in self.shared.store.orphan_worktrees()? {
            let (path, admin, common) = (Path::new(&w.path), Path::new(&w.admin_dir), Path::new(&w.git_dir));
            match worktree::remove(&self.shared.worktrees.git, path, admin, common, Path::new(&w.origin)).await {
                Ok(()) => {
                    self.shared.store.forget_worktree(&sid).await?;
                    removed.push(w.path);
                    kept.push(w.branch);
                }
                Err(e) => tracing::warn!("the worktree {} of deleted session {sid} was kept: {e}", w.path),
            }
        }
        if !removed.is_empty() {
            tracing::info!("removed {} worktree(s) of deleted sessions; kept their branches", removed.len());
        }
        Ok((removed, kept))
    }
}

impl From<WorktreeError> for SessionError {
    fn from(e: WorktreeError) -> SessionError {
        match e {
            WorktreeError::NotARepository(_) => SessionError::Config(e.to_string()),
            other => SessionError::Worktree(other.to_string()),
        }
    }
}
