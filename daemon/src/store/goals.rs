//! Sessions' goals: at most one per session, a row of its own (the goal
//! as JSON, its status beside it for the queries that need it), so a goal
//! survives the daemon restarting.

use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};
use swival_protocol::{Goal, SessionId};

impl Store {
    /// Session `id`'s goal, if it has one.
    pub fn goal(&self, id: &SessionId) -> Result<Option<Goal>, StoreError> {
        let body: Option<String> = self.with(|c| {
            c.prepare_cached("SELECT body FROM goals WHERE session_id = ?1")?
                .query_row(params![id.0], |r| r.get(0))
                .optional()
        })?;
        body.map(|b| self.decode_goal(&b)).transpose()
    }

    /// Every stored goal, the most recently changed first.
    pub fn goals(&self) -> Result<Vec<Goal>, StoreError> {
        let bodies: Vec<String> = self.with(|c| {
            let mut st = c.prepare_cached("SELECT body FROM goals ORDER BY updated_at DESC")?;
            let rows = st.query_map([], |r| r.get(0))?;
            rows.collect()
        })?;
        bodies.iter().map(|b| self.decode_goal(b)).collect()
    }

    /// Store `goal` as its session's (replacing any).
    pub async fn put_goal(&self, goal: &Goal) -> Result<(), StoreError> {
        let body = serde_json::to_string(goal).expect("a goal serializes");
        let (id, status, updated) = (goal.session_id.0.clone(), goal.status.as_str(), goal.updated_at.clone());
        self.write_async(move |c| {
            c.prepare_cached(
                "INSERT OR REPLACE INTO goals (session_id, status, updated_at, body) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![id, status, updated, body])
            .map(drop)
        })
        .await
    }

    /// Remove session `id`'s goal.
    pub async fn delete_goal(&self, id: &SessionId) -> Result<(), StoreError> {
        let id = id.0.clone();
        self.write_async(move |c| c.prepare_cached("DELETE FROM goals WHERE session_id = ?1")?.execute([&id]).map(drop))
            .await
    }

    fn decode_goal(&self, body: &str) -> Result<Goal, StoreError> {
        serde_json::from_str(body)
            .map_err(|e| StoreError::Corrupt { path: self.path.clone(), message: format!("a stored goal: {e}") })
    }
}
