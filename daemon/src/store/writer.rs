//! The one thread that writes the database. Callers hand it a job and wait
//! for the job's result, or go on and have the result handed to a callback;
//! the thread takes every job waiting at that moment and commits them in one
//! transaction (when one fails, the batch runs again with each job in its
//! own savepoint, so it does not undo the others). Concurrent sessions
//! therefore share commits instead of
//! queueing for one each, and a batch nobody waits for is held briefly so a
//! run's next events share its commit ([`super::queue`]).
//!
//! When the disk is full, the batch is rolled back and tried again until
//! space returns: what a caller was told is what ends up stored. Jobs that
//! must not wait for that (start-up bookkeeping) are failed instead.

use super::queue::Queue;
pub(super) use super::queue::Waiter;
use rusqlite::{Connection, ErrorCode};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Most jobs committed together.
const MAX_BATCH: usize = 512;
/// How long a caller waits before telling the runtime it is blocking.
const QUICK_WAIT: Duration = Duration::from_millis(20);

/// Most sessions whose last event number the writer keeps in memory;
/// past it the numbers are read from the database again as needed.
const MAX_CACHED_SEQS: usize = 4096;

/// Every session's last event number, kept by the writer so numbering an
/// event is not a read and an update of the session's row each time: the
/// row's `last_seq` is written once per session per batch, in the batch's
/// transaction. Numbers handed out in a batch become the known ones only
/// once it commits; a rolled-back batch forgets them.
#[derive(Debug, Default)]
pub(super) struct Seqs {
    /// Last numbers as committed.
    committed: std::collections::HashMap<String, i64>,
    /// Last numbers handed out in the batch being written.
    batch: std::collections::HashMap<String, i64>,
}

impl Seqs {
    /// The number after the last one `session` has (in this batch, as
    /// committed, or as stored); an error when there is no such session.
    pub(super) fn next(&self, c: &Connection, session: &str) -> rusqlite::Result<i64> {
        let last = match self.batch.get(session).or_else(|| self.committed.get(session)) {
            Some(last) => *last,
            None => c
                .prepare_cached("SELECT last_seq FROM sessions WHERE id = ?1")?
                .query_row([session], |r| r.get::<_, i64>(0))?,
        };
        Ok(last + 1)
    }

    /// `seq` was stored for `session` (by a job whose work all succeeded).
    pub(super) fn used(&mut self, session: &str, seq: i64) {
        self.batch.insert(session.to_owned(), seq);
    }

    /// Write the batch's last numbers into the sessions' rows.
    fn store(&self, c: &Connection) -> rusqlite::Result<()> {
        let mut update = c.prepare_cached("UPDATE sessions SET last_seq = ?2 WHERE id = ?1")?;
        for (session, seq) in &self.batch {
            update.execute(rusqlite::params![session, seq])?;
        }
        Ok(())
    }

    /// The batch committed: its numbers are the known ones now.
    fn committed(&mut self) {
        if self.committed.len() + self.batch.len() > MAX_CACHED_SEQS {
            self.committed.clear();
        }
        self.committed.extend(self.batch.drain());
    }

    /// The batch was rolled back: forget what it handed out.
    fn rolled_back(&mut self) {
        self.batch.clear();
    }
}

/// What a job works with inside the writer's transaction.
pub(super) struct Tx<'a> {
    /// The write connection.
    pub conn: &'a Connection,
    /// The sessions' event numbers.
    pub seqs: &'a mut Seqs,
}

/// A unit of work run inside the writer's transaction.
trait Job: Send {
    /// Do the work; may run again after the batch was rolled back.
    fn run(&mut self, tx: &mut Tx<'_>) -> rusqlite::Result<()>;
    /// Whether the caller would rather fail than wait for disk space.
    fn wait_for_space(&self) -> bool;
    /// Whether the job runs alone, outside any transaction (`VACUUM`).
    fn alone(&self) -> bool {
        false
    }
    /// Report the outcome: committed, or this job's error.
    fn done(self: Box<Self>, result: rusqlite::Result<()>);
}

/// What to do with a job's result once its batch committed (or it failed).
pub(super) type Then<T> = Box<dyn FnOnce(rusqlite::Result<T>) + Send>;

/// A job with a typed result, handed to `then` once the batch committed.
struct Typed<T, F> {
    f: F,
    out: Option<T>,
    wait_for_space: bool,
    alone: bool,
    then: Then<T>,
}

impl<T: Send, F: FnMut(&mut Tx<'_>) -> rusqlite::Result<T> + Send> Job for Typed<T, F> {
    fn run(&mut self, tx: &mut Tx<'_>) -> rusqlite::Result<()> {
        self.out = Some((self.f)(tx)?);
        Ok(())
    }

    fn wait_for_space(&self) -> bool {
        self.wait_for_space
    }

    fn alone(&self) -> bool {
        self.alone
    }

    fn done(mut self: Box<Self>, result: rusqlite::Result<()>) {
        let out = result.map(|()| self.out.take().expect("a committed job has run"));
        (self.then)(out);
    }
}

/// The writer thread and the way to it.
pub(super) struct Writer {
    /// Jobs go here; closed once the writer stops (or when there is none).
    jobs: Arc<Queue<Box<dyn Job>>>,
    /// The thread, joined on drop.
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Why writes are refused, when there is no thread.
    refusal: Option<String>,
}

impl Writer {
    /// Start the thread that owns `conn`.
    pub(super) fn start(conn: Connection) -> std::io::Result<Writer> {
        // Every statement the writer runs stays prepared.
        conn.set_prepared_statement_cache_capacity(64);
        let jobs = Arc::new(Queue::new(MAX_BATCH, true));
        let queue = jobs.clone();
        let thread = std::thread::Builder::new().name("swivald-store".into()).spawn(move || {
            // However the thread ends (a panic included), its queue goes
            // with it: waiters hear that the writer stopped, not nothing.
            let _abandon = Abandon(&queue);
            serve(conn, &queue)
        })?;
        Ok(Writer { jobs, thread: Mutex::new(Some(thread)), refusal: None })
    }

    /// A writer that refuses every write, saying `why`.
    pub(super) fn refusing(why: String) -> Writer {
        Writer { jobs: Arc::new(Queue::new(MAX_BATCH, false)), thread: Mutex::new(None), refusal: Some(why) }
    }

    /// Run `f` in the writer's next transaction and return its result once
    /// committed. With `wait_for_space`, a full disk makes this wait (and
    /// retry) until space returns; without, it fails with SQLITE_FULL.
    pub(super) fn write<T, F>(&self, wait_for_space: bool, f: F) -> rusqlite::Result<T>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (reply, result) = mpsc::sync_channel(1);
        self.write_then(
            wait_for_space,
            Waiter::Waiting,
            f,
            Box::new(move |r| {
                let _ = reply.send(r);
            }),
        );
        wait(result)
    }

    /// [`Writer::write`] for async code: the task waits for the commit, the
    /// runtime's thread does not (so a slow disk neither blocks a worker nor
    /// makes the runtime start threads to replace it).
    pub(super) async fn write_async<T, F>(&self, wait_for_space: bool, f: F) -> rusqlite::Result<T>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (reply, result) = tokio::sync::oneshot::channel();
        self.write_then(
            wait_for_space,
            Waiter::Waiting,
            f,
            Box::new(move |r| {
                let _ = reply.send(r);
            }),
        );
        result.await.unwrap_or_else(|_| Err(stopped()))
    }
}

/// Wait for a job's reply: at once when the commit is quick, else telling
/// the runtime (a full disk, a busy machine) so it moves its other tasks
/// off this thread meanwhile.
pub(super) fn wait<T>(result: mpsc::Receiver<rusqlite::Result<T>>) -> rusqlite::Result<T> {
    match result.recv_timeout(QUICK_WAIT) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(stopped()),
        Err(mpsc::RecvTimeoutError::Timeout) => blocking(|| result.recv().unwrap_or_else(|_| Err(stopped()))),
    }
}

impl Writer {
    /// Queue `f` for the writer's next transaction and return at once;
    /// `then` gets the result on the writer thread, in commit order, once
    /// the batch committed (waiting for disk space as [`Writer::write`]).
    /// `waiter` says whether something waits on `then` (the commit is not
    /// held for company) or not.
    pub(super) fn write_then<T, F>(&self, wait_for_space: bool, waiter: Waiter, mut f: F, then: Then<T>)
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.write_tx_then(wait_for_space, waiter, move |tx: &mut Tx<'_>| f(tx.conn), then);
    }

    /// [`Writer::write_then`] for a job that numbers events (`Tx::seqs`).
    pub(super) fn write_tx_then<T, F>(&self, wait_for_space: bool, waiter: Waiter, f: F, then: Then<T>)
    where
        T: Send + 'static,
        F: FnMut(&mut Tx<'_>) -> rusqlite::Result<T> + Send + 'static,
    {
        self.send(Box::new(Typed { f, out: None, wait_for_space, alone: false, then }), waiter);
    }

    /// Run `f` on the writer thread outside any transaction, between two
    /// batches (for `VACUUM`, which cannot run inside one), and return its
    /// result. A full disk fails it instead of waiting.
    pub(super) fn alone<F>(&self, mut f: F) -> rusqlite::Result<()>
    where
        F: FnMut(&Connection) -> rusqlite::Result<()> + Send + 'static,
    {
        let f = move |tx: &mut Tx<'_>| f(tx.conn);
        let (reply, result) = mpsc::sync_channel(1);
        let then: Then<()> = Box::new(move |r| {
            let _ = reply.send(r);
        });
        self.send(Box::new(Typed { f, out: None, wait_for_space: false, alone: true, then }), Waiter::Waiting);
        wait(result)
    }

    fn send(&self, job: Box<dyn Job>, waiter: Waiter) {
        if let Err(job) = self.jobs.push(job, waiter) {
            let why = match &self.refusal {
                Some(why) => rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
                    Some(why.clone()),
                ),
                None => stopped(),
            };
            job.done(Err(why));
        }
    }
}

/// Abandons the queue when dropped.
struct Abandon<'a>(&'a Queue<Box<dyn Job>>);

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.jobs.close();
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = t.join();
        }
    }
}

pub(super) fn stopped() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISUSE),
        Some("the database writer has stopped".into()),
    )
}

/// Run `f`, telling a multi-threaded tokio runtime that this thread blocks.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

fn is_full(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(ErrorCode::DiskFull)
}

/// The writer thread: batch, commit, answer, until the queue is closed
/// and empty. A job that runs alone ends the batch before it and runs
/// after it.
fn serve(conn: Connection, jobs: &Queue<Box<dyn Job>>) {
    let mut seqs = Seqs::default();
    while let Some(batch) = jobs.next_batch() {
        let mut group = Vec::with_capacity(batch.len());
        for job in batch {
            if job.alone() {
                if !group.is_empty() {
                    commit(&conn, &mut seqs, std::mem::take(&mut group));
                }
                run_alone(&conn, &mut seqs, job);
            } else {
                group.push(job);
            }
        }
        if !group.is_empty() {
            commit(&conn, &mut seqs, group);
        }
    }
}

fn run_alone(conn: &Connection, seqs: &mut Seqs, mut job: Box<dyn Job>) {
    let result = job.run(&mut Tx { conn, seqs });
    job.done(result);
}

/// Commit one batch, retrying while the disk is full.
fn commit(conn: &Connection, seqs: &mut Seqs, mut batch: Vec<Box<dyn Job>>) {
    let mut pause = Duration::from_millis(50);
    let mut warned = false;
    loop {
        let attempted = attempt(conn, seqs, &mut batch);
        match &attempted {
            Ok(_) => seqs.committed(),
            Err(_) => seqs.rolled_back(),
        }
        match attempted {
            Ok(results) => {
                for (job, result) in batch.into_iter().zip(results) {
                    job.done(result);
                }
                if warned {
                    tracing::warn!("the state disk has space again; writes go on");
                }
                return;
            }
            Err(e) if is_full(&e) => {
                // Jobs that would rather fail than wait leave the batch.
                let (wait, fail): (Vec<_>, Vec<_>) = batch.into_iter().partition(|j| j.wait_for_space());
                for job in fail {
                    job.done(Err(rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                        Some("database or disk is full".into()),
                    )));
                }
                batch = wait;
                if batch.is_empty() {
                    return;
                }
                if !warned {
                    tracing::error!(
                        "the state disk is full: {} write(s) wait and are retried until space returns; free some space",
                        batch.len()
                    );
                    warned = true;
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err(e) => {
                let text = e.to_string();
                for job in batch {
                    job.done(Err(rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                        Some(text.clone()),
                    )));
                }
                return;
            }
        }
    }
}

/// Run one statement of the writer's own (transaction control) from the
/// statement cache: they run for every job, and parsing them each time
/// cost more than the jobs' own statements.
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// One try: every job, then commit. `Err` (nothing kept) when the
/// transaction as a whole failed or a job hit a full disk. Jobs nearly
/// always succeed, so they first run without savepoints (two statements
/// fewer per job); when one fails, that transaction is rolled back and the
/// batch runs again with each job in its savepoint, so only the failed
/// one is undone.
fn attempt(
    conn: &Connection,
    seqs: &mut Seqs,
    batch: &mut [Box<dyn Job>],
) -> rusqlite::Result<Vec<rusqlite::Result<()>>> {
    control(conn, "BEGIN IMMEDIATE")?;
    let mut failed = None;
    for job in batch.iter_mut() {
        if let Err(e) = job.run(&mut Tx { conn, seqs: &mut *seqs }) {
            failed = Some(e);
            break;
        }
    }
    match failed {
        None => match seqs.store(conn).and_then(|()| control(conn, "COMMIT")) {
            Ok(()) => return Ok(batch.iter().map(|_| Ok(())).collect()),
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        },
        Some(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            seqs.rolled_back();
            if is_full(&e) {
                return Err(e);
            }
        }
    }
    attempt_each(conn, seqs, batch)
}

/// [`attempt`] with each job in its own savepoint.
fn attempt_each(
    conn: &Connection,
    seqs: &mut Seqs,
    batch: &mut [Box<dyn Job>],
) -> rusqlite::Result<Vec<rusqlite::Result<()>>> {
    control(conn, "BEGIN IMMEDIATE")?;
    let mut results = Vec::with_capacity(batch.len());
    for job in batch.iter_mut() {
        let step = control(conn, "SAVEPOINT job").and_then(|()| job.run(&mut Tx { conn, seqs: &mut *seqs }));
        match step {
            Ok(()) => results.push(control(conn, "RELEASE job")),
            Err(e) if is_full(&e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(e);
            }
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK TO job; RELEASE job");
                results.push(Err(e));
            }
        }
    }
    if let Err(e) = seqs.store(conn).and_then(|()| control(conn, "COMMIT")) {
        let _ = conn.execute_batch("ROLLBACK");
        return Err(e);
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions_table(last_seq: i64) -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE sessions (id TEXT PRIMARY KEY, last_seq INTEGER NOT NULL DEFAULT 0)").unwrap();
        c.execute("INSERT INTO sessions (id, last_seq) VALUES ('s', ?1)", [last_seq]).unwrap();
        c
    }

    /// A job inserting `v` into table `t` (failing on a duplicate).
    fn insert(v: i64, out: mpsc::Sender<rusqlite::Result<()>>) -> Box<dyn Job> {
        Box::new(Typed {
            f: move |tx: &mut Tx<'_>| tx.conn.execute("INSERT INTO t (v) VALUES (?1)", [v]).map(drop),
            out: None,
            wait_for_space: false,
            alone: false,
            then: Box::new(move |r| drop(out.send(r))),
        })
    }

    #[test]
    fn a_failing_job_undoes_only_itself_and_the_others_commit() {
        let c = sessions_table(0);
        c.execute_batch("CREATE TABLE t (v INTEGER PRIMARY KEY); INSERT INTO t (v) VALUES (2)").unwrap();
        let (tx, rx) = mpsc::channel();
        let batch = vec![insert(1, tx.clone()), insert(2, tx.clone()), insert(3, tx)];
        commit(&c, &mut Seqs::default(), batch);
        let results: Vec<bool> = rx.iter().map(|r| r.is_ok()).collect();
        assert_eq!(results, [true, false, true], "the duplicate fails, the others succeed");
        let stored: Vec<i64> =
            c.prepare("SELECT v FROM t ORDER BY v").unwrap().query_map([], |r| r.get(0)).unwrap().flatten().collect();
        assert_eq!(stored, [1, 2, 3]);
    }

    #[test]
    fn a_writer_that_panicked_says_it_stopped_instead_of_leaving_callers_waiting() {
        let writer = Writer::start(Connection::open_in_memory().unwrap()).unwrap();
        let crashed = writer.write(true, |_| -> rusqlite::Result<()> { panic!("a job that panics") });
        assert!(crashed.unwrap_err().to_string().contains("has stopped"));
        let after = writer.write(true, |_| Ok(()));
        assert!(after.unwrap_err().to_string().contains("has stopped"), "later writes are refused at once");
    }

    #[test]
    fn numbers_continue_from_the_row_and_a_rolled_back_batch_hands_its_numbers_out_again() {
        let c = sessions_table(7);
        let mut seqs = Seqs::default();
        assert_eq!(seqs.next(&c, "s").unwrap(), 8);
        seqs.used("s", 8);
        assert_eq!(seqs.next(&c, "s").unwrap(), 9, "the batch's own numbers count");
        seqs.rolled_back();
        assert_eq!(seqs.next(&c, "s").unwrap(), 8);
        seqs.used("s", 8);
        seqs.store(&c).unwrap();
        seqs.committed();
        let stored: i64 = c.query_row("SELECT last_seq FROM sessions WHERE id = 's'", [], |r| r.get(0)).unwrap();
        assert_eq!(stored, 8);
        // Known from memory now: the row is not read again.
        c.execute("UPDATE sessions SET last_seq = 100", []).unwrap();
        assert_eq!(seqs.next(&c, "s").unwrap(), 9);
        assert!(seqs.next(&c, "nobody").is_err(), "an unknown session has no numbers");
    }
}
