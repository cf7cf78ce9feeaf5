//! What reads sessions from the store without loading them
//! (`session/list`, `session/get`) and what deletes old ones
//! (`session/prune`).

use super::{worktree, SessionError, Sessions};
use crate::store::{RunRow, SessionRow};
use std::collections::HashSet;
use swival_protocol::{SessionDetail, SessionId, SessionInfo, SessionState};

impl Sessions {
    /// `session/prune`: delete the sessions unused for `older_than` (never
    /// one in memory, nor one with a run in flight) and compact the store.
    pub fn prune(&self, older_than: std::time::Duration) -> Result<Vec<SessionId>, SessionError> {
        let cutoff = std::time::SystemTime::now().checked_sub(older_than).unwrap_or(std::time::UNIX_EPOCH);
        let cutoff = humantime::format_rfc3339_millis(cutoff).to_string();
        let removed = self.shared.store.prune(&cutoff, self.live.ids())?;
        if !removed.is_empty() {
            tracing::info!("pruned {} session(s) unused since {cutoff}", removed.len());
        }
        Ok(removed)
    }

    /// `session/list`, from the store: a session is running while one of
    /// its runs has no result (a run's result and its `run_finished` are
    /// stored together, so this agrees with the event stream).
    pub fn list(&self) -> Result<Vec<SessionInfo>, SessionError> {
        let rows = self.shared.store.sessions()?;
        let running: HashSet<SessionId> =
            self.shared.store.unfinished_runs()?.into_iter().map(|r| r.session_id).collect();
        Ok(rows.iter().map(|row| info(row, running.contains(&row.id))).collect())
    }

    /// `session/get`, from the store.
    pub fn detail(&self, id: &SessionId) -> Result<SessionDetail, SessionError> {
        let row = self.shared.store.session(id)?.ok_or_else(|| SessionError::NotFound(id.clone()))?;
        let runs = self.shared.store.runs(id)?;
        let running = runs.iter().any(|r| r.result.is_none());
        Ok(SessionDetail {
            info: info(&row, running),
            config: swival_protocol::ConfigKeys::of(row.config.clone()),
            runs: runs.iter().map(RunRow::info).collect(),
            messages: self.shared.store.messages::<crate::message::Message>(id)?.iter().map(|m| m.item()).collect(),
            environment: Some(self.shared.callers.get(id).env).filter(|e| e.is_caller()).map(|e| e.names()),
        })
    }
}

/// A session as listed: its row, and whether a run of it is in flight.
pub(super) fn info(row: &SessionRow, running: bool) -> SessionInfo {
    SessionInfo {
        session_id: row.id.clone(),
        base_dir: row.base_dir.clone(),
        title: row.title.clone(),
        created_at: row.created_at.clone(),
        last_used_at: row.last_used_at.clone(),
        state: if row.closed {
            SessionState::Closed
        } else if running {
            SessionState::Running
        } else {
            SessionState::Idle
        },
        last_seq: swival_protocol::Seq(row.last_seq),
        run_count: row.run_count,
        worktree: row.worktree.as_ref().map(worktree::info),
        parent: row.parent.clone(),
        cost_usd: row.cost_usd,
    }
}
