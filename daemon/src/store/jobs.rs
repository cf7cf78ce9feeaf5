//! The writer jobs that store a new session, a conversation message and
//! an event (with a run's row or result in the same step): what one write
//! does inside the writer's transaction.

use super::writer::Tx;
use super::SessionRow;
use rusqlite::{params, Connection};
use swival_protocol::{Event, Seq, SessionId};

/// The writes of a new session: its row (with its worktree's), the
/// project config content it accepted, the policy files it pinned and the conversation it starts
/// with (a fork's).
pub(super) fn session_job(
    row: &SessionRow,
    project: Option<String>,
    pins: Vec<(String, String)>,
    messages: Vec<String>,
) -> impl FnMut(&Connection) -> rusqlite::Result<()> + Send + 'static {
    let (id, base, title) = (row.id.0.clone(), row.base_dir.clone(), row.title.clone());
    let (config, request, created) = (row.config.to_string(), row.request.to_string(), row.created_at.clone());
    let worktree = row.worktree.clone();
    let parent = row.parent.clone();
    move |c| {
        c.prepare_cached(
            "INSERT INTO sessions (id, base_dir, title, config, request, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![id, base, title, config, request, created])?;
        if let Some(sha256) = &project {
            super::policy::put_session_project(c, &id, sha256)?;
        }
        if let Some(worktree) = &worktree {
            super::worktree::put_worktree(c, &id, worktree)?;
        }
        if let Some(parent) = &parent {
            super::subagents::put_parent(c, &id, parent)?;
        }
        let mut insert = c.prepare_cached("INSERT INTO messages (session_id, idx, body) VALUES (?1, ?2, ?3)")?;
        for (idx, body) in messages.iter().enumerate() {
            insert.execute(params![id, idx as i64, body])?;
        }
        super::policy::put_session_pins(c, &id, &pins)
    }
}

/// The writer job storing message `idx` of session `id` (insert or replace).
pub(super) fn message_job(
    id: &SessionId,
    idx: usize,
    body: String,
) -> impl FnMut(&Connection) -> rusqlite::Result<()> + Send {
    let id = id.0.clone();
    move |c| {
        c.prepare_cached("INSERT OR REPLACE INTO messages (session_id, idx, body) VALUES (?1, ?2, ?3)")?
            .execute(params![id, idx as i64, body])
            .map(drop)
    }
}

/// The writer job storing `template` with the session's next seq (and a
/// run's row or result in the same step); it returns the seq. The number
/// counts as used only once every statement of the job succeeded.
pub(super) fn event_job(
    mut template: Event,
    start: Option<(String, String, String, String)>,
    finish: Option<(String, String, String)>,
) -> impl FnMut(&mut Tx<'_>) -> rusqlite::Result<i64> + Send + 'static {
    let session = template.session_id.0.clone();
    move |tx: &mut Tx<'_>| {
        let c = tx.conn;
        if let Some(row) = &start {
            insert_run(c, row)?;
        }
        let seq = tx.seqs.next(c, &session)?;
        template.seq = Seq(seq as u64);
        let body = serde_json::to_string(&template).expect("events serialize");
        c.prepare_cached("INSERT INTO events (session_id, seq, body) VALUES (?1, ?2, ?3)")?
            .execute(params![session, seq, body])?;
        if let Some((run, result, report)) = &finish {
            c.prepare_cached("UPDATE runs SET result = ?2, report = ?3 WHERE id = ?1")?
                .execute(params![run, result, report])?;
        }
        tx.seqs.used(&session, seq);
        Ok(seq)
    }
}

/// Insert a run row (id, session, task, start time); a session with no
/// title takes one from the task (see `runs::title_of`).
fn insert_run(c: &Connection, row: &(String, String, String, String)) -> rusqlite::Result<()> {
    c.prepare_cached("INSERT INTO runs (id, session_id, task, started_at) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![row.0, row.1, row.2, row.3])?;
    if let Some(title) = super::runs::title_of(&row.2) {
        c.prepare_cached("UPDATE sessions SET title = ?2 WHERE id = ?1 AND coalesce(title, '') = ''")?
            .execute(params![row.1, title])?;
    }
    Ok(())
}
