//! Retention: sessions unused since a cutoff are deleted with everything
//! they hold (conversation, runs and reports, events, pins, checkpoint;
//! a worktree's row stays until the worktree is removed, see
//! `worktree.rs`), and the file is compacted.

use super::{Store, StoreError, LAST_USED};
use rusqlite::params;
use swival_protocol::SessionId;

/// The tables holding a session's rows, by `session_id`.
const SESSION_TABLES: &[&str] = &[
    "messages",
    "goals",
    "inbox",
    "loops",
    "runs",
    "events",
    "session_pins",
    "session_projects",
    "session_checkpoints",
    "change_sets",
    "session_parents",
];

impl Store {
    /// Delete the sessions whose last activity (creation, or their latest
    /// run's start) is before `cutoff` (RFC 3339, UTC), except those in
    /// `keep` and any with a run in flight; then compact the file. Returns
    /// the sessions deleted.
    pub fn prune(&self, cutoff: &str, keep: Vec<SessionId>) -> Result<Vec<SessionId>, StoreError> {
        let cutoff = cutoff.to_owned();
        let deleted = self.write(move |c| {
            let mut old = c.prepare_cached(&format!(
                "SELECT s.id FROM sessions s
                 WHERE {LAST_USED} < ?1
                   AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.session_id = s.id AND r.result IS NULL)
                   AND NOT EXISTS (SELECT 1 FROM goals g WHERE g.session_id = s.id AND g.status = 'active')
                   AND NOT EXISTS (SELECT 1 FROM loops l WHERE l.session_id = s.id AND l.status = 'active')"
            ))?;
            let ids: Vec<String> = old.query_map(params![cutoff], |r| r.get(0))?.collect::<Result<_, _>>()?;
            let ids: Vec<String> = ids.into_iter().filter(|id| !keep.iter().any(|k| k.0 == *id)).collect();
            for id in &ids {
                for table in SESSION_TABLES {
                    c.execute(&format!("DELETE FROM {table} WHERE session_id = ?1"), params![id])?;
                }
                c.execute("DELETE FROM sessions WHERE id = ?1", params![id])?;
            }
            Ok(ids)
        })?;
        if !deleted.is_empty() {
            // Compacting is best effort: the rows are gone either way.
            if let Err(e) = self.writer.alone(|c| c.execute_batch("VACUUM")) {
                tracing::warn!("sessions pruned, but the database could not be compacted: {e}");
            }
        }
        Ok(deleted.into_iter().map(SessionId).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{EventWith, SessionRow};
    use super::*;
    use swival_protocol::{Event, EventKind, Seq};

    fn add(store: &Store, id: &str, created_at: &str) -> SessionId {
        let id = SessionId(id.into());
        let row = SessionRow {
            id: id.clone(),
            base_dir: "/tmp".into(),
            title: None,
            config: serde_json::json!({}),
            request: serde_json::Value::Null,
            created_at: created_at.into(),
            last_used_at: created_at.into(),
            closed: false,
            last_seq: 0,
            run_count: 0,
            cost_usd: None,
            worktree: None,
            parent: None,
        };
        store.insert_session(&row).unwrap();
        id
    }

    #[test]
    fn old_sessions_go_with_their_rows_and_recent_or_kept_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db.sqlite")).unwrap();
        let old = add(&store, "s_old", "2026-01-01T00:00:00.000Z");
        let recent = add(&store, "s_recent", "2026-11-01T00:00:00.000Z");
        let kept = add(&store, "s_kept", "2026-01-01T00:00:00.000Z");
        store.put_message(&old, 0, &serde_json::json!({"role": "user", "content": "x"})).unwrap();
        let kind = EventKind::Warning { message: "w".into() };
        let mut e = Event { seq: Seq(0), session_id: old.clone(), run_id: None, time: "t".into(), kind };
        store.append_event(&mut e, EventWith::Nothing, Box::new(|_| {})).unwrap();
        let gone = store.prune("2026-06-01T00:00:00.000Z", vec![kept.clone()]).unwrap();
        assert_eq!(gone, std::slice::from_ref(&old));
        assert!(store.session(&old).unwrap().is_none());
        assert!(store.messages::<serde_json::Value>(&old).unwrap().is_empty());
        assert!(store.events_from(&old, 1, 10).unwrap().is_empty());
        assert!(store.session(&recent).unwrap().is_some() && store.session(&kept).unwrap().is_some());
    }
}
