//! The inbox (`inbox.rs`): one row per entry, numbered as written, kept
//! with its session (pruned with it); and the tokens background runs used
//! each day, for the daily ceiling.

use super::{Store, StoreError};
use rusqlite::params;
use swival_protocol::InboxEntry;

impl Store {
    /// Write `entry` (its `seq` is given here); the entry as stored.
    pub async fn put_inbox(&self, entry: InboxEntry) -> Result<InboxEntry, StoreError> {
        // Numbered by SQLite, never reused (AUTOINCREMENT): an entry
        // written after a prune is never hidden behind a client's after_seq.
        self.write_async(move |c| {
            c.prepare_cached("INSERT INTO inbox (session_id, created_at, body) VALUES (?1, ?2, '')")?
                .execute(params![entry.session_id.0, entry.created_at])?;
            let mut entry = entry.clone();
            entry.seq = c.last_insert_rowid() as u64;
            let body = serde_json::to_string(&entry).expect("an inbox entry serializes");
            c.prepare_cached("UPDATE inbox SET body = ?1 WHERE seq = ?2")?.execute(params![body, entry.seq as i64])?;
            Ok(entry)
        })
        .await
    }

    /// Entries after `after`, newest first, at most `limit`; and the
    /// highest seq written.
    pub fn inbox(&self, after: u64, limit: u64) -> Result<(Vec<InboxEntry>, u64), StoreError> {
        let (bodies, last): (Vec<String>, i64) = self.with(|c| {
            let mut st = c.prepare_cached("SELECT body FROM inbox WHERE seq > ?1 ORDER BY seq DESC LIMIT ?2")?;
            let bodies = st.query_map(params![after as i64, limit as i64], |r| r.get(0))?.collect::<Result<_, _>>()?;
            let last =
                c.query_row("SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'inbox'), 0)", [], |r| {
                    r.get(0)
                })?;
            Ok((bodies, last))
        })?;
        let entries = bodies
            .iter()
            .map(|b| {
                serde_json::from_str(b).map_err(|e| StoreError::Corrupt {
                    path: self.path.clone(),
                    message: format!("an inbox entry: {e}"),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok((entries, last.max(0) as u64))
    }

    /// Add `tokens` to background runs' use on `day`.
    pub async fn add_background_tokens(&self, day: &str, tokens: u64) -> Result<(), StoreError> {
        let day = day.to_owned();
        self.write_async(move |c| {
            c.prepare_cached(
                "INSERT INTO background_tokens (day, tokens) VALUES (?1, ?2)
                 ON CONFLICT(day) DO UPDATE SET tokens = tokens + excluded.tokens",
            )?
            .execute(params![day, tokens as i64])
            .map(drop)
        })
        .await
    }

    /// Background runs' tokens on `day`.
    pub fn background_tokens(&self, day: &str) -> Result<u64, StoreError> {
        use rusqlite::OptionalExtension;
        let n: Option<i64> = self.with(|c| {
            c.prepare_cached("SELECT tokens FROM background_tokens WHERE day = ?1")?
                .query_row([day], |r| r.get(0))
                .optional()
        })?;
        Ok(n.unwrap_or(0).max(0) as u64)
    }
}
