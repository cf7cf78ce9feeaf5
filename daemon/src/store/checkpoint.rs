//! A session's context checkpoint (`session/checkpoint`, Swival's `/save`):
//! at most one per session, a row of its own so it survives a restart.

use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};
use swival_protocol::SessionId;

/// A stored checkpoint: where it stands in the conversation, and what the
/// conversation held before it then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRow {
    /// Its label.
    pub label: String,
    /// The number of messages before it (the index of the first message
    /// after it).
    pub index: usize,
    /// A digest of those messages as stored: a rewrite that changed any of
    /// them makes the checkpoint stale.
    pub digest: String,
}

impl Store {
    /// Session `id`'s checkpoint, if it has one.
    pub fn checkpoint(&self, id: &SessionId) -> Result<Option<CheckpointRow>, StoreError> {
        let row = self.with(|c| {
            c.prepare_cached("SELECT label, idx, digest FROM session_checkpoints WHERE session_id = ?1")?
                .query_row(params![id.0], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get(2)?)))
                .optional()
        })?;
        Ok(row.map(|(label, index, digest)| CheckpointRow { label, index: index.max(0) as usize, digest }))
    }

    /// Set session `id`'s checkpoint (replacing any), or with `None` clear it.
    pub async fn set_checkpoint(&self, id: &SessionId, row: Option<CheckpointRow>) -> Result<(), StoreError> {
        let id = id.0.clone();
        self.write_async(move |c| match &row {
            Some(row) => c
                .prepare_cached(
                    "INSERT OR REPLACE INTO session_checkpoints (session_id, label, idx, digest) VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![id, row.label, row.index as i64, row.digest])
                .map(drop),
            None => c.prepare_cached("DELETE FROM session_checkpoints WHERE session_id = ?1")?.execute([&id]).map(drop),
        })
        .await
    }
}
