//! Persistence: sessions, their conversations, runs and events in SQLite
//! (`$XDG_STATE_HOME/swival/swivald.db`).
//!
//! Architecture invariant: only this module touches SQLite. One thread
//! (`writer.rs`) owns the write connection and commits whatever is waiting
//! in one transaction; reads use their own connection and never wait for
//! a write (WAL). A SIGKILL at any moment leaves a consistent database;
//! the WAL is kept small (`journal_size_limit`).

mod changes;
mod checkpoint;
mod goals;
mod inbox;
mod jobs;
mod loops;
mod policy;
mod prune;
mod queue;
mod runs;
mod subagents;
mod worktree;
mod writer;

pub use changes::{BigFile, ChangeSetRow, FileRecord, FileState};
pub use checkpoint::CheckpointRow;
use jobs::{event_job, message_job, session_job};
pub use runs::{interrupted_result, RunRow};
use rusqlite::{params, Connection};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use swival_protocol::{Event, RunId, RunResult, Seq, SessionId};
pub use worktree::WorktreeRow;
use writer::Waiter;

/// A database failure, with the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused an operation.
    #[error("database {path}: {source}")]
    Sqlite { path: PathBuf, source: rusqlite::Error },
    /// The writer thread could not be started.
    #[error("database {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
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
    /// When it was last used, RFC 3339: its latest run's start, or its
    /// creation ([`LAST_USED`]); read, never written.
    pub last_used_at: String,
    /// Whether it was closed.
    pub closed: bool,
    /// Last event seq.
    pub last_seq: u64,
    /// Number of runs.
    pub run_count: u64,
    /// What its runs cost, summed over those priced (`stats.cost_usd`).
    pub cost_usd: Option<f64>,
    /// The git worktree it works in, if it was created with one.
    pub worktree: Option<WorktreeRow>,
    /// The run that spawned it, for a subagent's session.
    pub parent: Option<swival_protocol::SubagentOf>,
}

/// The daemon's database.
pub struct Store {
    /// The connection reads use.
    read: Mutex<Connection>,
    /// The thread every write goes through.
    writer: writer::Writer,
    /// The file, for error messages.
    path: PathBuf,
}

/// Each connection's page cache, in KiB (SQLite's default is 2,000): the
/// memory it holds grows to this as the database does.
const PAGE_CACHE_KIB: i64 = 512;

/// Largest WAL file kept between checkpoints.
const WAL_LIMIT_BYTES: i64 = 8 * 1024 * 1024;

/// A session's last use (in a query over `sessions s`): its latest run's
/// start, or its creation. Both are RFC 3339 UTC with milliseconds, so
/// they compare as text; runs are indexed by (session, start).
const LAST_USED: &str =
    "max(s.created_at, coalesce((SELECT max(r.started_at) FROM runs r WHERE r.session_id = s.id), ''))";

/// The tables. Events and messages are rows keyed by (session, number)
/// and kept in that key's b-tree alone (`WITHOUT ROWID`), so storing one
/// writes one page where a rowid table would write a table page and an
/// index page. A database made before keeps its rowid tables; every
/// statement here reads and writes both kinds the same.
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
) WITHOUT ROWID;
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
CREATE TABLE IF NOT EXISTS session_checkpoints (
    session_id TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    idx INTEGER NOT NULL,
    digest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_pins (
    session_id TEXT NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (session_id, path)
);
CREATE TABLE IF NOT EXISTS change_sets (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    run_id TEXT,
    root TEXT NOT NULL,
    kind TEXT NOT NULL,
    reverts TEXT,
    reverted_by TEXT,
    created_at TEXT NOT NULL,
    files TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS change_sets_by_root ON change_sets (root, created_at);
CREATE TABLE IF NOT EXISTS change_blobs (
    root TEXT NOT NULL, id TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (root, id)
);
CREATE TABLE IF NOT EXISTS session_parents (
    session_id TEXT PRIMARY KEY,
    parent_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    subagent_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_worktrees (
    session_id TEXT PRIMARY KEY,
    origin TEXT NOT NULL,
    git_dir TEXT NOT NULL,
    admin_dir TEXT NOT NULL,
    path TEXT NOT NULL,
    branch TEXT NOT NULL,
    base_commit TEXT NOT NULL,
    applied_commit TEXT
);
CREATE TABLE IF NOT EXISTS goals (
    session_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS loops (
    loop_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS inbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS background_tokens (
    day TEXT PRIMARY KEY,
    tokens INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
";

impl Store {
    /// Open (creating if needed) the database at `path`. When the normal
    /// way fails on an existing database (a full disk cannot hold the WAL's
    /// shared-memory index), it is opened to serve reads only, so the user
    /// can still read their sessions; writes then fail saying why.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        match Store::open_read_write(path) {
            Ok(store) => Ok(store),
            Err(e) if path.exists() => match Store::open_read_only(path) {
                Ok(store) => {
                    tracing::error!("{e}; serving reads only until the daemon restarts with free space");
                    Ok(store)
                }
                Err(_) => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// Reads only, through one connection in exclusive locking mode (which
    /// keeps the WAL index in memory, so it needs no new file).
    fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let err = |source| StoreError::Sqlite { path: path.to_owned(), source };
        let conn = Connection::open(path).map_err(err)?;
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE").map_err(err)?;
        conn.query_row("SELECT count(*) FROM sessions", [], |r| r.get::<_, i64>(0)).map_err(err)?;
        let why = format!(
            "the state disk ({}) had no space when the daemon started, so it serves reads only; free some space and restart it",
            path.display()
        );
        Ok(Store { read: Mutex::new(conn), writer: writer::Writer::refusing(why), path: path.to_owned() })
    }

    fn open_read_write(path: &Path) -> Result<Store, StoreError> {
        let err = |source| StoreError::Sqlite { path: path.to_owned(), source };
        if let Some(dir) = path.parent() {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
        }
        let open = || -> rusqlite::Result<Connection> {
            let conn = Connection::open(path)?;
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
            conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)?;
            Ok(conn)
        };
        let conn = open().map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(err)?;
        conn.pragma_update(None, "journal_size_limit", WAL_LIMIT_BYTES).map_err(err)?;
        // On a full disk an existing database still opens: creating what
        // already exists writes nothing.
        conn.execute_batch(SCHEMA).map_err(err)?;
        let read = open().map_err(err)?;
        let writer = writer::Writer::start(conn).map_err(|e| StoreError::Io { path: path.to_owned(), source: e })?;
        Ok(Store { read: Mutex::new(read), writer, path: path.to_owned() })
    }

    /// Run a query on the read connection.
    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let conn = self.read.lock().unwrap_or_else(|p| p.into_inner());
        f(&conn).map_err(|source| StoreError::Sqlite { path: self.path.clone(), source })
    }

    /// Run `f` in the writer's next commit; waits for disk space when the
    /// disk is full (see `writer.rs`).
    fn write<T: Send + 'static>(
        &self,
        f: impl FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.writer.write(true, f).map_err(|source| StoreError::Sqlite { path: self.path.clone(), source })
    }

    fn decode<T: serde::de::DeserializeOwned>(&self, text: &str) -> Result<T, StoreError> {
        serde_json::from_str(text).map_err(|e| StoreError::Corrupt { path: self.path.clone(), message: e.to_string() })
    }

    /// [`Store::write`] for async code: the task waits for the commit, the
    /// runtime's thread does not.
    async fn write_async<T: Send + 'static>(
        &self,
        f: impl FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.writer.write_async(true, f).await.map_err(|source| StoreError::Sqlite { path: self.path.clone(), source })
    }

    /// Record a new session, with the project config content it accepted,
    /// the policy files it pinned (path, SHA-256) and the messages it
    /// starts with, in one commit.
    pub async fn create_session(
        &self,
        row: &SessionRow,
        project: Option<String>,
        pins: Vec<(String, String)>,
        messages: Vec<String>,
    ) -> Result<(), StoreError> {
        self.write_async(session_job(row, project, pins, messages)).await
    }

    /// Record a new session (tests: sessions come from [`Store::create_session`]).
    #[cfg(test)]
    pub fn insert_session(&self, row: &SessionRow) -> Result<(), StoreError> {
        self.write(session_job(row, None, Vec::new(), Vec::new()))
    }

    /// Every session, oldest first.
    pub fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        self.select_sessions(None)
    }

    /// Sessions, all of them or the one with `only`'s id, oldest first.
    fn select_sessions(&self, only: Option<&SessionId>) -> Result<Vec<SessionRow>, StoreError> {
        let rows = self.with(|c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT s.id, s.base_dir, s.title, s.config, s.request, s.created_at, s.closed, s.last_seq,
                        (SELECT COUNT(*) FROM runs r WHERE r.session_id = s.id), {LAST_USED},
                        (SELECT SUM(json_extract(r.result, '$.stats.cost_usd')) FROM runs r WHERE r.session_id = s.id)
                 FROM sessions s WHERE ?1 IS NULL OR s.id = ?1 ORDER BY s.created_at, s.rowid"
            ))?;
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
                    r.get::<_, String>(9)?,
                    r.get::<_, Option<f64>>(10)?,
                ))
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        let mut worktrees = self.worktrees(only)?;
        let mut parents = self.parents(only)?;
        rows.into_iter()
            .map(
                |(id, base_dir, title, config, request, created_at, closed, last_seq, runs, last_used_at, cost_usd)| {
                    Ok(SessionRow {
                        worktree: worktrees.remove(&id),
                        parent: parents.remove(&id),
                        id: SessionId(id),
                        base_dir,
                        title,
                        config: self.decode(&config)?,
                        request: self.decode(&request)?,
                        created_at,
                        last_used_at,
                        closed,
                        last_seq: last_seq as u64,
                        run_count: runs as u64,
                        cost_usd,
                    })
                },
            )
            .collect()
    }

    /// One session.
    pub fn session(&self, id: &SessionId) -> Result<Option<SessionRow>, StoreError> {
        Ok(self.select_sessions(Some(id))?.pop())
    }

    /// Whether a session is closed (false when there is no such session).
    pub fn is_closed(&self, id: &SessionId) -> Result<bool, StoreError> {
        self.with(|c| {
            let closed =
                c.prepare_cached("SELECT closed FROM sessions WHERE id = ?1")?.query_row([&id.0], |r| r.get(0));
            match closed {
                Err(rusqlite::Error::QueryReturnedNoRows) => Ok(false),
                other => other,
            }
        })
    }

    /// Mark a session closed.
    pub async fn close_session(&self, id: &SessionId) -> Result<(), StoreError> {
        let id = id.0.clone();
        self.write_async(move |c| c.execute("UPDATE sessions SET closed = 1 WHERE id = ?1", params![id]).map(drop))
            .await
    }

    /// The stored conversation, each message read as a `T`.
    pub fn messages<T: serde::de::DeserializeOwned>(&self, id: &SessionId) -> Result<Vec<T>, StoreError> {
        let bodies = self.with(|c| {
            let mut st = c.prepare("SELECT body FROM messages WHERE session_id = ?1 ORDER BY idx")?;
            let rows = st.query_map(params![id.0], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        bodies.iter().map(|b| self.decode(b)).collect()
    }

    /// Store message `idx` (insert or replace).
    #[cfg(test)]
    pub fn put_message(&self, id: &SessionId, idx: usize, body: &Value) -> Result<(), StoreError> {
        self.write(message_job(id, idx, body.to_string()))
    }

    /// Queue message `idx` (already serialised) and return at once; `then`
    /// gets the outcome on the writer thread once its batch committed.
    /// Writes are committed in the order they were queued, so a later
    /// write that waits ([`Store::settle`]) finds this one stored.
    pub fn put_message_then(&self, id: &SessionId, idx: usize, body: String, then: Then<()>) {
        let path = self.path.clone();
        let then: writer::Then<()> = Box::new(move |r| then(r.map_err(|source| StoreError::Sqlite { path, source })));
        self.writer.write_then(true, Waiter::Detached, message_job(id, idx, body), then);
    }

    /// Wait until every write queued so far is committed.
    pub async fn settle(&self) -> Result<(), StoreError> {
        self.write_async(|_| Ok(())).await
    }

    /// Replace the whole stored conversation (after a rewrite or compaction).
    pub async fn replace_messages(&self, id: &SessionId, bodies: Vec<String>) -> Result<(), StoreError> {
        let id = id.0.clone();
        // The writer's savepoint makes the delete and the inserts one step.
        self.write_async(move |c| {
            c.execute("DELETE FROM messages WHERE session_id = ?1", params![id])?;
            let mut insert = c.prepare_cached("INSERT INTO messages (session_id, idx, body) VALUES (?1, ?2, ?3)")?;
            for (i, body) in bodies.iter().enumerate() {
                insert.execute(params![id, i as i64, body])?;
            }
            Ok(())
        })
        .await
    }

    /// Append an event, giving it the session's next seq, and wait for the
    /// commit. `with` is written in the same transaction (a run's row with
    /// its `run_started`, a run's result and report with its
    /// `run_finished`). `after` runs on the writer thread once committed,
    /// in commit order (the live broadcast), before this returns.
    #[cfg(test)]
    pub fn append_event(&self, event: &mut Event, with: EventWith<'_>, after: AfterEvent) -> Result<(), StoreError> {
        self.append(event, with, true, after)
    }

    /// Like [`Store::append_event`], but failing at once on a full disk
    /// (start-up bookkeeping must not stop the daemon from serving reads).
    pub fn append_event_now(
        &self,
        event: &mut Event,
        with: EventWith<'_>,
        after: AfterEvent,
    ) -> Result<(), StoreError> {
        self.append(event, with, false, after)
    }

    /// Queue an event and return at once: `after` runs on the writer thread
    /// once it is committed (in commit order), or a failure is logged.
    pub fn append_event_detached(&self, event: Event, after: AfterEvent) {
        let session = event.session_id.clone();
        let mut done = event.clone();
        let job = event_job(event, None, None);
        let path = self.path.clone();
        self.writer.write_tx_then(
            true,
            Waiter::Detached,
            job,
            Box::new(move |r| match r {
                Ok(seq) => {
                    done.seq = Seq(seq as u64);
                    after(&done);
                }
                Err(e) => {
                    tracing::error!("database {}: an event of session {session} was not stored: {e}", path.display())
                }
            }),
        );
    }

    fn append(
        &self,
        event: &mut Event,
        with: EventWith<'_>,
        wait_for_space: bool,
        after: AfterEvent,
    ) -> Result<(), StoreError> {
        let (reply, result) = std::sync::mpsc::sync_channel(1);
        self.queue_event(event, with, wait_for_space, Some(after), move |r| drop(reply.send(r)));
        let seq = writer::wait(result).map_err(|source| StoreError::Sqlite { path: self.path.clone(), source })?;
        event.seq = Seq(seq as u64);
        Ok(())
    }

    /// [`Store::append_event`] for async code: the task waits for the
    /// commit, the runtime's thread does not. Without `after`, nothing runs
    /// once committed: the caller publishes the event itself.
    pub async fn append_event_async(
        &self,
        event: &mut Event,
        with: EventWith<'_>,
        after: Option<AfterEvent>,
    ) -> Result<(), StoreError> {
        let (reply, result) = tokio::sync::oneshot::channel();
        self.queue_event(event, with, true, after, move |r| drop(reply.send(r)));
        let seq = result
            .await
            .unwrap_or_else(|_| Err(writer::stopped()))
            .map_err(|source| StoreError::Sqlite { path: self.path.clone(), source })?;
        event.seq = Seq(seq as u64);
        Ok(())
    }

    /// Queue `event` (and what goes `with` it); once its batch is done,
    /// `after` runs if it was stored, then `reply` gets its seq or error.
    fn queue_event(
        &self,
        event: &Event,
        with: EventWith<'_>,
        wait_for_space: bool,
        after: Option<AfterEvent>,
        reply: impl FnOnce(rusqlite::Result<i64>) + Send + 'static,
    ) {
        let finish = match with {
            EventWith::Finish(run, result, report) => {
                Some((run.0.clone(), serde_json::to_string(result).expect("results serialize"), report.to_string()))
            }
            _ => None,
        };
        let start = match with {
            EventWith::Start(run) => {
                Some((run.id.0.clone(), run.session_id.0.clone(), run.task.clone(), run.started_at.clone()))
            }
            _ => None,
        };
        let job = event_job(event.clone(), start, finish);
        let mut done = event.clone();
        self.writer.write_tx_then(
            wait_for_space,
            Waiter::Waiting,
            job,
            Box::new(move |r: rusqlite::Result<i64>| {
                if let (Ok(seq), Some(after)) = (&r, after) {
                    done.seq = Seq(*seq as u64);
                    after(&done);
                }
                reply(r);
            }),
        );
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

/// What runs on the writer thread once a queued write is committed (or failed).
pub type Then<T> = Box<dyn FnOnce(Result<T, StoreError>) + Send>;

/// What is written in the same commit as an event.
#[derive(Debug, Clone, Copy)]
pub enum EventWith<'a> {
    /// Nothing else (tests write bare events).
    #[cfg(test)]
    Nothing,
    /// The run row of the run this event starts (`run_started`).
    Start(&'a RunRow),
    /// The result and report of the run this event ends (`run_finished`).
    Finish(&'a RunId, &'a RunResult, &'a Value),
}

/// What runs on the writer thread once an event is committed.
pub type AfterEvent = Box<dyn FnOnce(&Event) + Send>;

#[cfg(test)]
mod tests;
