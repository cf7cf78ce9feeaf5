//! What the store keeps for policy: the project configs the user trusted,
//! the content each session accepted, the scripts each session pinned, and
//! a session's config request as `session/configure` changes it.

use super::{Store, StoreError};
use rusqlite::{params, Connection, OptionalExtension};
use swival_protocol::SessionId;

impl Store {
    /// The SHA-256 of the project config content the user trusted for
    /// `path`, if any (one per path: trusting new content replaces it).
    pub fn trusted_project(&self, path: &str) -> Result<Option<String>, StoreError> {
        self.with(|c| {
            c.query_row("SELECT sha256 FROM trusted_projects WHERE path = ?1", params![path], |r| r.get(0)).optional()
        })
    }

    /// Record that the user trusts `path` with content `sha256`.
    pub async fn trust_project(&self, path: &str, sha256: &str, at: &str) -> Result<(), StoreError> {
        let (path, sha256, at) = (path.to_owned(), sha256.to_owned(), at.to_owned());
        self.write_async(move |c| {
            c.execute(
                "INSERT OR REPLACE INTO trusted_projects (path, sha256, trusted_at) VALUES (?1, ?2, ?3)",
                params![path, sha256, at],
            )
            .map(drop)
        })
        .await
    }

    /// The project config content a session accepted when it was created
    /// (trusted, or `--trust`), so it loads again after a restart.
    pub fn session_project(&self, id: &SessionId) -> Result<Option<String>, StoreError> {
        self.with(|c| {
            c.query_row("SELECT sha256 FROM session_projects WHERE session_id = ?1", params![id.0], |r| r.get(0))
                .optional()
        })
    }

    /// The policy files session `id` pinned when it was created: path → SHA-256.
    pub fn session_pins(&self, id: &SessionId) -> Result<std::collections::HashMap<String, String>, StoreError> {
        self.with(|c| {
            let mut st = c.prepare_cached("SELECT path, sha256 FROM session_pins WHERE session_id = ?1")?;
            let rows = st.query_map(params![id.0], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            rows.collect()
        })
    }

    /// Store session `id`'s new config request and effective config, and
    /// record the files its pipeline pins now (those recorded before keep
    /// their hashes: `pins` carries them), in one commit.
    pub async fn reconfigure_session(
        &self,
        id: &SessionId,
        request: &serde_json::Value,
        config: &serde_json::Value,
        pins: Vec<(String, String)>,
    ) -> Result<(), StoreError> {
        let (id, request, config) = (id.0.clone(), request.to_string(), config.to_string());
        self.write_async(move |c| {
            c.prepare_cached("UPDATE sessions SET request = ?2, config = ?3 WHERE id = ?1")?
                .execute(params![id, request, config])?;
            put_session_pins(c, &id, &pins)
        })
        .await
    }
}

/// Remember the project config content session `id` accepted.
pub(super) fn put_session_project(c: &Connection, id: &str, sha256: &str) -> rusqlite::Result<()> {
    c.prepare_cached("INSERT OR REPLACE INTO session_projects (session_id, sha256) VALUES (?1, ?2)")?
        .execute(params![id, sha256])
        .map(drop)
}

/// Record what session `id` pinned: (path, SHA-256) pairs.
pub(super) fn put_session_pins(c: &Connection, id: &str, pins: &[(String, String)]) -> rusqlite::Result<()> {
    let mut insert =
        c.prepare_cached("INSERT OR REPLACE INTO session_pins (session_id, path, sha256) VALUES (?1, ?2, ?3)")?;
    for (path, sha) in pins {
        insert.execute(params![id, path, sha])?;
    }
    Ok(())
}
