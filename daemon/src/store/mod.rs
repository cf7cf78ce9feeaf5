//! Persistence: sessions, their conversations, runs and events in SQLite
//! (`$XDG_STATE_HOME/swival/swivald.db`).
//!
//! Architecture invariant: only this module touches SQLite. Writes are
//! short and happen under one mutex; WAL mode keeps them cheap and makes a
//! SIGKILL at any moment leave a consistent database.

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use swival_protocol::{Event, Outcome, RunId, RunInfo, RunResult, Seq, SessionId};

/// A database failure, with the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused an operation.
    #[error("database {path}: {source}")]
    Sqlite { path: PathBuf, source: rusqlite::Error },
    /// A stored JSON value did not decode.
    #[error("database {path}: corrupt stored value: {message}")]
    Corrupt { path: PathBuf, message: String },
}

/// One stored session row.
#[derive(Debug, Clone)]
pub struct SessionRow {
    /// Its id.
    pub id: SessionId,
    /// Base directory.
    pub base_dir: String,
    /// Title.
    pub title: Option<String>,
    /// Effective config (JSON, secrets redacted), for display.
    pub config: Value,
    /// The `session/create` config as sent (null when none), to rebuild
    /// the session after a restart.
    pub request: Value,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// Whether it was closed.
    pub closed: bool,
    /// Last event seq.
    pub last_seq: u64,
    /// Number of runs.
    pub run_count: u64,
}

/// One stored run row.
#[derive(Debug, Clone)]
pub struct RunRow {
    /// Its id.
    pub id: RunId,
    /// Its session.
    pub session_id: SessionId,
    /// The task.
    pub task: String,
    /// The result, once finished.
    pub result: Option<RunResult>,
    /// Swival's report JSON, once finished.
    pub report: Option<Value>,
    /// RFC 3339 start time.
    pub started_at: String,
}

impl RunRow {
    /// The protocol's summary of this run.
    pub fn info(&self) -> RunInfo {
        RunInfo {
            run_id: self.id.clone(),
            task: self.task.clone(),
            running: self.result.is_none(),
            outcome: self.result.as_ref().map(|r| r.outcome),
            started_at: self.started_at.clone(),
        }
    }
}

/// The daemon's database.
pub struct Store {
    /// The connection; one writer at a time.
    conn: Mutex<Connection>,
    /// The file, for error messages.
    path: PathBuf,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    base_dir TEXT NOT NULL,
    title TEXT,
    config TEXT NOT NULL,
    request TEXT NOT NULL DEFAULT 'null',
    created_at TEXT NOT NULL,
    closed INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session_id, idx)
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    task TEXT NOT NULL,
    started_at TEXT NOT NULL,
    result TEXT,
    report TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_session ON runs (session_id, started_at);
CREATE TABLE IF NOT EXISTS trusted_projects (
    path TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL,
    trusted_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_projects (
    session_id TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
";

impl Store {
    /// Open (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let err = |source| StoreError::Sqlite { path: path.to_owned(), source };
        if let Some(dir) = path.parent() {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
        }
        let conn = Connection::open(path).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        Ok(Store { conn: Mutex::new(conn), path: path.to_owned() })
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&conn).map_err(|source| StoreError::Sqlite { path: self.path.clone(), source })
    }

    fn decode<T: serde::de::DeserializeOwned>(&self, text: &str) -> Result<T, StoreError> {
        serde_json::from_str(text).map_err(|e| StoreError::Corrupt { path: self.path.clone(), message: e.to_string() })
    }

    /// Record a new session.
    pub fn insert_session(&self, row: &SessionRow) -> Result<(), StoreError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO sessions (id, base_dir, title, config, request, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![row.id.0, row.base_dir, row.title, row.config.to_string(), row.request.to_string(), row.created_at],
            )
            .map(drop)
        })
    }

    /// Every session, oldest first.
    pub fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        self.select_sessions(None)
    }

    /// Sessions, all of them or the one with `only`'s id, oldest first.
    fn select_sessions(&self, only: Option<&SessionId>) -> Result<Vec<SessionRow>, StoreError> {
        let rows = self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT s.id, s.base_dir, s.title, s.config, s.request, s.created_at, s.closed, s.last_seq,
                        (SELECT COUNT(*) FROM runs r WHERE r.session_id = s.id)
                 FROM sessions s WHERE ?1 IS NULL OR s.id = ?1 ORDER BY s.created_at, s.rowid",
            )?;
            let rows = st.query_map(params![only.map(|id| id.0.as_str())], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, bool>(6)?,
                    r.get::<_, i64>(7)?,
                    r.get::<_, i64>(8)?,
                ))
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        rows.into_iter()
            .map(|(id, base_dir, title, config, request, created_at, closed, last_seq, runs)| {
                Ok(SessionRow {
                    id: SessionId(id),
                    base_dir,
                    title,
                    config: self.decode(&config)?,
                    request: self.decode(&request)?,
                    created_at,
                    closed,
                    last_seq: last_seq as u64,
                    run_count: runs as u64,
                })
            })
            .collect()
    }

    /// One session.
    pub fn session(&self, id: &SessionId) -> Result<Option<SessionRow>, StoreError> {
        Ok(self.select_sessions(Some(id))?.pop())
    }

    /// The SHA-256 of the project config content the user trusted for
    /// `path`, if any (one per path: trusting new content replaces it).
    pub fn trusted_project(&self, path: &str) -> Result<Option<String>, StoreError> {
        self.with(|c| {
            c.query_row("SELECT sha256 FROM trusted_projects WHERE path = ?1", params![path], |r| r.get(0)).optional()
        })
    }

    /// Record that the user trusts `path` with content `sha256`.
    pub fn trust_project(&self, path: &str, sha256: &str, at: &str) -> Result<(), StoreError> {
        self.with(|c| {
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
        self.with(|c| {
            c.execute(
                "INSERT OR REPLACE INTO session_projects (session_id, sha256) VALUES (?1, ?2)",
                params![id.0, sha256],
            )
            .map(drop)
        })
    }

    /// Mark a session closed.
    pub fn close_session(&self, id: &SessionId) -> Result<(), StoreError> {
        self.with(|c| c.execute("UPDATE sessions SET closed = 1 WHERE id = ?1", params![id.0]).map(drop))
    }

    /// The stored conversation.
    pub fn messages(&self, id: &SessionId) -> Result<Vec<Value>, StoreError> {
        let bodies = self.with(|c| {
            let mut st = c.prepare("SELECT body FROM messages WHERE session_id = ?1 ORDER BY idx")?;
            let rows = st.query_map(params![id.0], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        bodies.iter().map(|b| self.decode(b)).collect()
    }

    /// Store message `idx` (insert or replace).
    pub fn put_message(&self, id: &SessionId, idx: usize, body: &Value) -> Result<(), StoreError> {
        self.with(|c| {
            c.execute(
                "INSERT OR REPLACE INTO messages (session_id, idx, body) VALUES (?1, ?2, ?3)",
                params![id.0, idx as i64, body.to_string()],
            )
            .map(drop)
        })
    }

    /// Replace the whole stored conversation (after a rewrite or compaction).
    pub fn replace_messages(&self, id: &SessionId, messages: &[Value]) -> Result<(), StoreError> {
        self.with(|c| {
            let tx = c.unchecked_transaction()?;
            tx.execute("DELETE FROM messages WHERE session_id = ?1", params![id.0])?;
            for (i, m) in messages.iter().enumerate() {
                tx.execute(
                    "INSERT INTO messages (session_id, idx, body) VALUES (?1, ?2, ?3)",
                    params![id.0, i as i64, m.to_string()],
                )?;
            }
            tx.commit()
        })
    }

    /// Record a run that has just started.
    pub fn insert_run(&self, run: &RunRow) -> Result<(), StoreError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO runs (id, session_id, task, started_at) VALUES (?1, ?2, ?3, ?4)",
                params![run.id.0, run.session_id.0, run.task, run.started_at],
            )
            .map(drop)
        })
    }

    /// Record a run's result and report.
    pub fn finish_run(&self, id: &RunId, result: &RunResult, report: &Value) -> Result<(), StoreError> {
        let result = serde_json::to_string(result).expect("results serialize");
        self.with(|c| {
            c.execute(
                "UPDATE runs SET result = ?2, report = ?3 WHERE id = ?1",
                params![id.0, result, report.to_string()],
            )
            .map(drop)
        })
    }

    /// One run.
    pub fn run(&self, id: &RunId) -> Result<Option<RunRow>, StoreError> {
        let row = self.with(|c| {
            c.query_row(
                "SELECT id, session_id, task, started_at, result, report FROM runs WHERE id = ?1",
                params![id.0],
                run_tuple,
            )
            .optional()
        })?;
        row.map(|t| self.run_row(t)).transpose()
    }

    /// A session's runs, oldest first.
    pub fn runs(&self, session: &SessionId) -> Result<Vec<RunRow>, StoreError> {
        let rows = self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, session_id, task, started_at, result, report FROM runs WHERE session_id = ?1 ORDER BY started_at, rowid",
            )?;
            let rows = st.query_map(params![session.0], run_tuple)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        rows.into_iter().map(|t| self.run_row(t)).collect()
    }

    /// Runs without a result: in flight when the daemon last stopped.
    pub fn unfinished_runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let rows = self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, session_id, task, started_at, result, report FROM runs WHERE result IS NULL ORDER BY started_at",
            )?;
            let rows = st.query_map([], run_tuple)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        rows.into_iter().map(|t| self.run_row(t)).collect()
    }

    fn run_row(&self, t: RunTuple) -> Result<RunRow, StoreError> {
        let (id, session_id, task, started_at, result, report) = t;
        Ok(RunRow {
            id: RunId(id),
            session_id: SessionId(session_id),
            task,
            started_at,
            result: result.map(|r| self.decode(&r)).transpose()?,
            report: report.map(|r| self.decode(&r)).transpose()?,
        })
    }

    /// Append an event, giving it the session's next seq. `finish` (when the
    /// event ends a run) is written in the same transaction, so a run's
    /// result and its terminal event are stored together or not at all.
    pub fn append_event(
        &self,
        event: &mut Event,
        finish: Option<(&RunId, &RunResult, &Value)>,
    ) -> Result<(), StoreError> {
        let session = event.session_id.0.clone();
        self.with(|c| {
            let tx = c.unchecked_transaction()?;
            let seq: i64 = tx.query_row(
                "UPDATE sessions SET last_seq = last_seq + 1 WHERE id = ?1 RETURNING last_seq",
                params![session],
                |r| r.get(0),
            )?;
            event.seq = Seq(seq as u64);
            let body = serde_json::to_string(&*event).expect("events serialize");
            tx.execute("INSERT INTO events (session_id, seq, body) VALUES (?1, ?2, ?3)", params![session, seq, body])?;
            if let Some((run, result, report)) = finish {
                let result = serde_json::to_string(result).expect("results serialize");
                tx.execute(
                    "UPDATE runs SET result = ?2, report = ?3 WHERE id = ?1",
                    params![run.0, result, report.to_string()],
                )?;
            }
            tx.commit()
        })
    }

    /// Stored events with `seq >= from`, in order, at most `limit`.
    pub fn events_from(&self, session: &SessionId, from: u64, limit: usize) -> Result<Vec<Event>, StoreError> {
        let bodies = self.with(|c| {
            let mut st =
                c.prepare("SELECT body FROM events WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3")?;
            let rows = st.query_map(params![session.0, from as i64, limit as i64], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        bodies.iter().map(|b| self.decode(b)).collect()
    }
}

type RunTuple = (String, String, String, String, Option<String>, Option<String>);

fn run_tuple(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunTuple> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
}

/// The result recorded for a run the daemon lost (crash or kill).
pub fn interrupted_result(run: &RunId) -> RunResult {
    RunResult {
        run_id: run.clone(),
        outcome: Outcome::Interrupted,
        answer: None,
        exit_code: Outcome::Interrupted.exit_code(),
        error: Some("the daemon stopped while this run was in flight; start a new run to continue".into()),
        stats: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use swival_protocol::EventKind;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("db.sqlite")).unwrap();
        (dir, s)
    }

    fn session(s: &Store) -> SessionId {
        let id = SessionId("s_1".into());
        s.insert_session(&SessionRow {
            id: id.clone(),
            base_dir: "/tmp".into(),
            title: None,
            config: serde_json::json!({}),
            request: serde_json::Value::Null,
            created_at: "2026-01-01T00:00:00Z".into(),
            closed: false,
            last_seq: 0,
            run_count: 0,
        })
        .unwrap();
        id
    }

    #[test]
    fn events_get_consecutive_seqs_from_one() {
        let (_d, s) = store();
        let id = session(&s);
        for _ in 0..3 {
            let mut e = Event {
                seq: Seq(0),
                session_id: id.clone(),
                run_id: None,
                time: "t".into(),
                kind: EventKind::Warning { message: "w".into() },
            };
            s.append_event(&mut e, None).unwrap();
        }
        let seqs: Vec<u64> = s.events_from(&id, 2, 100).unwrap().iter().map(|e| e.seq.0).collect();
        assert_eq!(seqs, [2, 3]);
        assert_eq!(s.session(&id).unwrap().unwrap().last_seq, 3);
    }

    #[test]
    fn messages_round_trip_in_order() {
        let (_d, s) = store();
        let id = session(&s);
        s.put_message(&id, 0, &serde_json::json!({"role": "system", "content": "a"})).unwrap();
        s.put_message(&id, 1, &serde_json::json!({"role": "user", "content": "b"})).unwrap();
        let m = s.messages(&id).unwrap();
        assert_eq!(m[1]["content"], "b");
        s.replace_messages(&id, &m[..1]).unwrap();
        assert_eq!(s.messages(&id).unwrap().len(), 1);
    }
}
