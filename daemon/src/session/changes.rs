//! `run/changes` and `run/revert`: which change set a request means (a
//! run or undo by id, or a session's last run), refused in one line when
//! there is none to show or put back; the work is `changes/`'s.

use super::{SessionError, Sessions};
use crate::changes::{ChangeError, Changes};
use crate::store::ChangeSetRow;
use swival_protocol::{ChangesRef, RunChanges, RunChangesParams, RunId, RunRevertParams, RunRevertResult};

impl Sessions {
    /// `run/changes`.
    pub async fn changes(&self, p: RunChangesParams) -> Result<RunChanges, SessionError> {
        let (changes, set) = self.change_set(&p.which)?;
        changes.show(&set, !p.no_diff).await.map_err(|e| gone(&set.id, e))
    }

    /// `run/revert`: put back what the set named changed. A set undone and
    /// redone (undo of the undo, any number of times) has its changes in
    /// the tree again: the last redo is what is undone. One whose last undo
    /// stands is refused, naming the undo that brings its changes back.
    pub async fn revert(&self, p: RunRevertParams) -> Result<RunRevertResult, SessionError> {
        let (changes, asked) = self.change_set(&p.which)?;
        let (set, undone) = self.latest_of(asked.clone())?;
        if undone {
            return Err(SessionError::Refused(format!(
                "{} was already undone by {}; to bring its changes back, undo that: `swivalctl undo {}`",
                asked.id,
                asked.reverted_by.as_deref().unwrap_or_default(),
                set.id
            )));
        }
        if let Some(run) = self.shared.store.runs(&set.session_id)?.into_iter().find(|r| r.result.is_none()) {
            return Err(SessionError::Busy { session: set.session_id.clone(), run: run.id });
        }
        let done = changes.revert(&set, p.force).await.map_err(|e| gone(&set.id, e))?;
        Ok(RunRevertResult {
            id: set.id,
            applied: done.applied,
            revert_id: done.revert_id,
            reverted: done.reverted,
            conflicts: done.conflicts,
            not_restorable: done.not_restorable,
            failed: done.failed,
        })
    }

    /// The last of the chain `set`, its undo, the undo of that, …, and
    /// whether the changes of `set` are out of the tree (an odd chain).
    fn latest_of(&self, set: ChangeSetRow) -> Result<(ChangeSetRow, bool), SessionError> {
        let mut tip = set;
        let mut undone = false;
        while let Some(next) = tip.reverted_by.clone() {
            let Some(row) = self.shared.store.change_set(&next)? else { break };
            tip = row;
            undone = !undone;
        }
        Ok((tip, undone))
    }

    /// The set `which` names, with the stores.
    fn change_set(&self, which: &ChangesRef) -> Result<(&Changes, ChangeSetRow), SessionError> {
        let changes = self.shared.changes.as_deref().ok_or_else(|| {
            SessionError::NoChanges(
                "changes are not recorded: snapshots are off in swivald.toml (`snapshots = false`)".to_owned(),
            )
        })?;
        let id = match (&which.run_id, &which.session_id) {
            (Some(id), _) => id.clone(),
            (None, Some(session)) => {
                self.shared.store.session(session)?.ok_or_else(|| SessionError::NotFound(session.clone()))?;
                let last = self.shared.store.runs(session)?.pop();
                let last = last.ok_or_else(|| SessionError::NoChanges(format!("session {session} has no runs yet")))?;
                last.id.0
            }
            (None, None) => {
                return Err(SessionError::Refused("name a run (`run_id`) or a session (`session_id`)".to_owned()))
            }
        };
        if let Some(set) = self.shared.store.change_set(&id)? {
            return Ok((changes, set));
        }
        let run = RunId(id.clone());
        match self.shared.store.run(&run)? {
            None => Err(SessionError::RunNotFound(run)),
            Some(row) if row.result.is_none() => Err(SessionError::Refused(format!(
                "run {id} is still running; its changes can be seen and undone once it ends: wait for it \
                 (`swivalctl wait {id}`) or cancel it (`swivalctl cancel {id}`)"
            ))),
            Some(_) => Err(SessionError::NoChanges(format!(
                "run {id} has no recorded changes (it ran before they were recorded, with snapshots off or git \
                 missing, in a home directory, a snapshot failed, or its session was pruned); nothing was changed"
            ))),
        }
    }
}

/// The failure of `run/changes` or `run/revert` on set `id`: its
/// snapshot unreadable (nothing was changed), or a write that failed.
fn gone(id: &str, e: ChangeError) -> SessionError {
    match e {
        ChangeError::Missing(_) | ChangeError::Git(_) => {
            SessionError::NoChanges(format!("the snapshot of {id} cannot be read ({e}); nothing was changed"))
        }
        ChangeError::Store(e) => SessionError::Store(e),
        e => SessionError::Internal(format!("putting back {id} failed part way, some files may be back: {e}")),
    }
}
