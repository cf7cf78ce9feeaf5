//! A session's event log: every event is stored (SQLite) before it is
//! broadcast, so a subscriber that reconnects resumes from any seq and sees
//! every event exactly once.
//!
//! A session has one log at a time, shared by its copy in memory and its
//! subscribers ([`Logs`]): a subscriber follows a session that is not in
//! memory, and keeps receiving its events when it is loaded again.

use crate::agent::EventSink;
use crate::clock::now;
use crate::store::{EventWith, RunRow, Store, StoreError};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use swival_protocol::{Event, EventKind, RunId, RunResult, Seq, SessionId};
use tokio::sync::broadcast;

/// Live events buffered per session before a slow subscriber must catch up
/// from the store. Small on purpose: the buffer is allocated up front for
/// every session, and a lagging subscriber loses nothing (it re-reads).
const LIVE_BUFFER: usize = 32;
/// Stored events a cursor reads ahead: what a subscriber that stops
/// reading holds at most.
const PAGE: usize = 4;

/// Appends and fans out one session's events.
#[derive(Debug, Clone)]
pub struct EventLog {
    /// Shared state.
    pub(super) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(super) struct Inner {
    /// Where events are stored.
    store: Arc<Store>,
    /// Whose events.
    session: SessionId,
    /// Live fan-out.
    pub(super) tx: broadcast::Sender<Event>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}

/// The event logs in use, one per session, each alive while a session in
/// memory or a subscriber holds it.
pub struct Logs {
    /// Where events are stored.
    store: Arc<Store>,
    /// The logs handed out; dead ones are pruned as the map grows.
    logs: Mutex<LogMap>,
}

/// [`Logs`]' map and when to prune it next.
#[derive(Default)]
struct LogMap {
    /// Logs by session.
    by_session: HashMap<SessionId, Weak<Inner>>,
    /// Prune dead entries once the map is this large.
    prune_at: usize,
}

impl Logs {
    /// No logs yet.
    pub fn new(store: Arc<Store>) -> Logs {
        Logs { store, logs: Mutex::new(LogMap { by_session: HashMap::new(), prune_at: 64 }) }
    }

    /// The log of `session`: the one in use, or a new one.
    pub fn log(&self, session: &SessionId) -> EventLog {
        let mut map = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(inner) = map.by_session.get(session).and_then(Weak::upgrade) {
            return EventLog { inner };
        }
        let (tx, _) = broadcast::channel(LIVE_BUFFER);
        let inner = Arc::new(Inner { store: self.store.clone(), session: session.clone(), tx });
        map.by_session.insert(session.clone(), Arc::downgrade(&inner));
        if map.by_session.len() >= map.prune_at {
            map.by_session.retain(|_, log| log.strong_count() > 0);
            map.prune_at = (map.by_session.len() * 2).max(64);
        }
        EventLog { inner }
    }
}

impl EventSink for EventLog {
    fn emit(&self, run: Option<&RunId>, kind: EventKind) {
        EventLog::emit(self, run, kind);
    }
}

impl EventLog {
    /// Store and then broadcast an event of `run`, without waiting for
    /// the commit: the store's writer broadcasts it once it is committed,
    /// in seq order, and logs a write that fails.
    pub fn emit(&self, run: Option<&RunId>, kind: EventKind) {
        let event = self.event(run, kind);
        self.inner.store.append_event_detached(event, self.broadcast());
    }

    /// Store a new run's row together with its `run_started` event, so no
    /// crash can leave one without the other.
    pub async fn start(
        &self,
        run: &RunRow,
        client_token: Option<String>,
        goal_id: Option<String>,
    ) -> Result<Seq, StoreError> {
        let kind = EventKind::RunStarted { task: run.task.clone(), client_token, goal_id };
        let mut event = self.event(Some(&run.id), kind);
        self.inner.store.append_event_async(&mut event, EventWith::Start(run), Some(self.broadcast())).await?;
        Ok(event.seq)
    }

    /// Store the run's terminal event together with its result and report,
    /// and return it unpublished: the session publishes it once it can take
    /// the next run, so a client that sees `run_finished` can start one.
    pub async fn finish(&self, result: &RunResult, report: &serde_json::Value) -> Result<Event, StoreError> {
        let with = EventWith::Finish(&result.run_id, result, report);
        let mut event = self.event(Some(&result.run_id), EventKind::RunFinished(result.end()));
        self.inner.store.append_event_async(&mut event, with, None).await?;
        Ok(event)
    }

    /// Send a stored event to the live subscribers (a gap or a late one
    /// sends them back to the store, which has it).
    pub fn publish(&self, event: Event) {
        // No receivers is fine: nobody is subscribed right now.
        let _ = self.inner.tx.send(event);
    }

    /// [`EventLog::finish`] that fails at once on a full disk instead of
    /// waiting for space (start-up bookkeeping).
    pub fn finish_now(&self, result: &RunResult, report: &serde_json::Value) -> Result<Seq, StoreError> {
        let with = EventWith::Finish(&result.run_id, result, report);
        let mut event = self.event(Some(&result.run_id), EventKind::RunFinished(result.end()));
        self.inner.store.append_event_now(&mut event, with, self.broadcast())?;
        Ok(event.seq)
    }

    /// What the writer runs once an event is committed: send it to the
    /// live subscribers, in commit order (no receivers is fine: nobody is
    /// subscribed right now).
    fn broadcast(&self) -> crate::store::AfterEvent {
        let tx = self.inner.tx.clone();
        Box::new(move |e| drop(tx.send(e.clone())))
    }

    /// A new event of `run` (its seq is given when it is stored).
    fn event(&self, run: Option<&RunId>, kind: EventKind) -> Event {
        Event { seq: Seq(0), session_id: self.inner.session.clone(), run_id: run.cloned(), time: now(), kind }
    }

    /// A cursor over every event with `seq >= from`: stored ones first,
    /// then live ones, with no gap and no duplicate.
    pub fn cursor(&self, from: u64) -> Cursor {
        // Subscribe before reading the store, so nothing falls between.
        let live = self.inner.tx.subscribe();
        Cursor { log: self.clone(), next: from.max(1), live, page: VecDeque::new(), live_mode: false }
    }
}

/// A subscriber's place in a session's log: the next seq it wants, and a
/// few stored events read ahead. Events are taken only as fast as the
/// subscriber takes them, so one that stops reading holds its place, never
/// a backlog, however much the session streams meanwhile; when it reads
/// again it goes on from the store, where every event is before anyone
/// sees it.
#[derive(Debug)]
pub struct Cursor {
    /// Whose events.
    log: EventLog,
    /// The seq of the next event to give.
    next: u64,
    /// The live fan-out, for when the store has nothing newer.
    live: broadcast::Receiver<Event>,
    /// Stored events read ahead, at most [`PAGE`].
    page: VecDeque<Event>,
    /// The store had nothing newer: follow the live fan-out until a gap.
    live_mode: bool,
}

impl Cursor {
    /// The seq of the next event this cursor gives: where a subscriber
    /// dropped now resumes.
    pub fn next_seq(&self) -> u64 {
        self.page.front().map_or(self.next, |e| e.seq.0)
    }

    /// Give events again from `seq` (one taken but not delivered): they
    /// are read from the store when next wanted.
    pub fn rewind(&mut self, seq: u64) {
        self.page.clear();
        self.next = seq;
        self.live_mode = false;
    }

    /// The next event, waiting for one when the subscriber is caught up;
    /// `None` once the log is gone (the daemon is stopping). Stored events
    /// come first; once the store has nothing newer the live fan-out
    /// follows, without reading the store again until a gap or a lag.
    pub async fn next(&mut self) -> Result<Option<Event>, StoreError> {
        loop {
            if let Some(e) = self.page.pop_front() {
                self.next = e.seq.0 + 1;
                return Ok(Some(e));
            }
            if !self.live_mode {
                let inner = &self.log.inner;
                let page = inner.store.events_from(&inner.session, self.next, PAGE)?;
                if !page.is_empty() {
                    self.page = page.into();
                    continue;
                }
                self.live_mode = true;
            }
            match self.live.recv().await {
                Ok(e) if e.seq.0 == self.next => {
                    self.next += 1;
                    return Ok(Some(e));
                }
                // Already given (from the store).
                Ok(e) if e.seq.0 < self.next => {}
                // Past a gap or a lag: the store has everything, in order.
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => self.live_mode = false,
                Err(broadcast::error::RecvError::Closed) => return Ok(None),
            }
        }
    }
}
