//! Sessions' loops: a row each (the loop as JSON, its session and status
//! beside it for the queries that need them), so loops survive the daemon
//! restarting.

use super::{Store, StoreError};
use rusqlite::params;
use swival_protocol::{Loop, SessionId};

impl Store {
    /// The loops (one session's, or all; only active ones unless `all`),
    /// oldest first.
    pub fn loops(&self, session: Option<&SessionId>, all: bool) -> Result<Vec<Loop>, StoreError> {
        let bodies: Vec<String> = self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT body FROM loops WHERE (?1 IS NULL OR session_id = ?1) AND (?2 OR status = 'active')
                 ORDER BY created_at, loop_id",
            )?;
            let rows = st.query_map(params![session.map(|s| s.0.as_str()), all], |r| r.get(0))?;
            rows.collect()
        })?;
        bodies.iter().map(|b| self.decode_loop(b)).collect()
    }

    /// Loop `id`, if stored.
    pub fn loop_(&self, id: &str) -> Result<Option<Loop>, StoreError> {
        use rusqlite::OptionalExtension;
        let body: Option<String> = self.with(|c| {
            c.prepare_cached("SELECT body FROM loops WHERE loop_id = ?1")?.query_row([id], |r| r.get(0)).optional()
        })?;
        body.map(|b| self.decode_loop(&b)).transpose()
    }

    /// Store `l` (replacing its earlier row).
    pub async fn put_loop(&self, l: &Loop) -> Result<(), StoreError> {
        let body = serde_json::to_string(l).expect("a loop serializes");
        let (id, session, status, created) =
            (l.loop_id.clone(), l.session_id.0.clone(), l.status.as_str(), l.created_at.clone());
        self.write_async(move |c| {
            c.prepare_cached(
                "INSERT OR REPLACE INTO loops (loop_id, session_id, status, created_at, body) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![id, session, status, created, body])
            .map(drop)
        })
        .await
    }

    fn decode_loop(&self, body: &str) -> Result<Loop, StoreError> {
        serde_json::from_str(body)
            .map_err(|e| StoreError::Corrupt { path: self.path.clone(), message: format!("a stored loop: {e}") })
    }
}
