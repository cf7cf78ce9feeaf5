//! What the store keeps for policy: the project configs the user trusted,
//! the content each session accepted, and the scripts each session pinned.

use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};
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
    pub fn trust_project(&self, path: &str, sha256: &str, at: &str) -> Result<(), StoreError> {
        let (path, sha256, at) = (path.to_owned(), sha256.to_owned(), at.to_owned());
        self.write(move |c| {
            c.execute(
                "INSERT OR REPLACE INTO trusted_projects (path, sha256, trusted_at) VALUES (?1, ?2, ?3)",
                params![path, sha256, at],
            )
            .map(drop)
        })
    }

    /// The project config content a session accepted when it was created
    /// (trusted, or `--trust`), so it loads again after a restart.
    pub fn session_project(&self, id: &SessionId) -> Result<Option<String>, StoreError> {
        self.with(|c| {
            c.query_row("SELECT sha256 FROM session_projects WHERE session_id = ?1", params![id.0], |r| r.get(0))
                .optional()
        })
    }

    /// Remember the project config content session `id` accepted.
    pub fn set_session_project(&self, id: &SessionId, sha256: &str) -> Result<(), StoreError> {
        let (id, sha256) = (id.clone(), sha256.to_owned());
        self.write(move |c| {
            c.execute(
                "INSERT OR REPLACE INTO session_projects (session_id, sha256) VALUES (?1, ?2)",
                params![id.0, sha256],
            )
            .map(drop)
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

    /// Record what session `id` pinned.
    pub fn set_session_pins(&self, id: &SessionId, pins: Vec<(String, String)>) -> Result<(), StoreError> {
        let id = id.0.clone();
        self.write(move |c| {
            let mut insert =
                c.prepare_cached("INSERT OR REPLACE INTO session_pins (session_id, path, sha256) VALUES (?1, ?2, ?3)")?;
            for (path, sha) in &pins {
                insert.execute(params![id, path, sha])?;
            }
            Ok(())
        })
    }
}
