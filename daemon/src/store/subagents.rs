//! Where a subagent's session comes from: a row of its own, written with
//! the session's, naming the parent session, the run and the subagent id.

use super::{Store, StoreError};
use rusqlite::{params, Connection};
use std::collections::HashMap;
use swival_protocol::{RunId, SessionId, SubagentOf};

/// Insert session `id`'s parent row (in the session's own commit).
pub(super) fn put_parent(c: &Connection, id: &str, p: &SubagentOf) -> rusqlite::Result<()> {
    c.prepare_cached(
        "INSERT INTO session_parents (session_id, parent_id, run_id, subagent_id) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![id, p.session_id.0, p.run_id.0, p.subagent_id])
    .map(drop)
}

impl Store {
    /// The parents of the subagent sessions (all, or `only`'s), by session id.
    pub(super) fn parents(&self, only: Option<&SessionId>) -> Result<HashMap<String, SubagentOf>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT session_id, parent_id, run_id, subagent_id FROM session_parents
                 WHERE ?1 IS NULL OR session_id = ?1",
            )?;
            let rows = st.query_map(params![only.map(|id| id.0.as_str())], |r| {
                let parent =
                    SubagentOf { session_id: SessionId(r.get(1)?), run_id: RunId(r.get(2)?), subagent_id: r.get(3)? };
                Ok((r.get::<_, String>(0)?, parent))
            })?;
            rows.collect()
        })
    }
}
