//! What this daemon holds in memory: the sessions loaded from the store and
//! the runs in flight. Everything else is read from the store.
//!
//! A session is held while it is in use and dropped when it is not: a
//! closed one as soon as its run (if any) has ended, an idle one after
//! `session_idle_timeout_s` or when more than `max_live_sessions` are held
//! (least recently used first). `Sessions::find` loads a dropped session
//! again from the store.
//!
//! A session with a run (or a compaction) in flight is never dropped: a
//! job starts only in the copy held right now, marked busy under this
//! registry's lock (`set_busy`), and only copies that are not busy are
//! dropped, under the same lock. A dropped copy's actor ends once nobody
//! holds its handle; a caller still holding one is told to load the
//! session again.

use super::mailbox::Handle;
use super::Session;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use swival_protocol::{RunId, RunResult, SessionId};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// When sessions are dropped from memory.
#[derive(Debug, Clone, Copy)]
pub struct LiveLimits {
    /// Most sessions held; past it the least recently used idle ones go.
    pub max_sessions: usize,
    /// An idle session is dropped after this long unused; `None` keeps it.
    pub idle_timeout: Option<Duration>,
}

/// A run in flight.
pub(super) struct ActiveRun {
    /// Cancels it (`run/cancel`).
    pub cancel: CancellationToken,
    /// Holds its result once it has ended (`run/wait`).
    pub done: watch::Receiver<Option<RunResult>>,
}

/// One session held in memory.
struct Held {
    /// Its actor.
    handle: Handle,
    /// When it was last asked for.
    used: Instant,
    /// A job of it (a run, a compaction) is in flight: it is not dropped.
    busy: bool,
}

/// Sessions in memory and runs in flight.
pub(super) struct Live {
    /// Sessions in memory, by id.
    sessions: Mutex<HashMap<SessionId, Held>>,
    /// Runs in flight, by id; an entry goes when its run has ended.
    runs: Mutex<HashMap<RunId, ActiveRun>>,
    /// When sessions are dropped.
    limits: LiveLimits,
}

impl Live {
    /// An empty registry.
    pub fn new(limits: LiveLimits) -> Live {
        Live { sessions: Mutex::default(), runs: Mutex::default(), limits }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Held>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, ActiveRun>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The sessions in memory.
    pub fn ids(&self) -> Vec<SessionId> {
        self.sessions().keys().cloned().collect()
    }

    /// The session's actor if it is in memory (and now the most recently used).
    pub fn get(&self, id: &SessionId) -> Option<Handle> {
        let mut sessions = self.sessions();
        let held = sessions.get_mut(id)?;
        held.used = Instant::now();
        Some(held.handle.clone())
    }

    /// Hold `handle`, unless a copy of its session is already held (which
    /// is returned as the error); then drop the least recently used idle
    /// sessions past the cap.
    pub fn insert(&self, handle: Handle) -> Result<(), Handle> {
        let mut dropped = Vec::new();
        {
            let mut sessions = self.sessions();
            let id = handle.session.id.clone();
            if let Some(held) = sessions.get_mut(&id) {
                held.used = Instant::now();
                return Err(held.handle.clone());
            }
            sessions.insert(id.clone(), Held { handle, used: Instant::now(), busy: false });
            if sessions.len() > self.limits.max_sessions {
                let mut idle: Vec<(Instant, SessionId)> = sessions
                    .iter()
                    .filter(|(other, held)| **other != id && !held.busy)
                    .map(|(other, held)| (held.used, other.clone()))
                    .collect();
                idle.sort();
                let over = sessions.len() - self.limits.max_sessions;
                dropped.extend(idle.into_iter().take(over).filter_map(|(_, other)| sessions.remove(&other)));
            }
        }
        // Dropping handles ends idle actors, which close what they hold;
        // not under the lock.
        drop(dropped);
        Ok(())
    }

    /// Mark `session`, if this copy is the one held, as busy with a job
    /// (never dropped until marked idle again) or idle, and used just now;
    /// false when another copy, or none, is held.
    pub fn set_busy(&self, session: &Arc<Session>, busy: bool) -> bool {
        match self.sessions().get_mut(&session.id) {
            Some(held) if held.handle.is(session) => {
                held.busy = busy;
                held.used = Instant::now();
                true
            }
            _ => false,
        }
    }

    /// Stop holding `session` (if it is the copy held).
    pub fn remove(&self, session: &Arc<Session>) {
        let removed = {
            let mut sessions = self.sessions();
            match sessions.get(&session.id) {
                Some(held) if held.handle.is(session) => sessions.remove(&session.id),
                _ => None,
            }
        };
        drop(removed);
    }

    /// Drop the sessions idle for longer than the idle timeout.
    pub fn sweep(&self, now: Instant) {
        let Some(timeout) = self.limits.idle_timeout else { return };
        let dropped: Vec<Held> = {
            let mut sessions = self.sessions();
            let stale: Vec<SessionId> = sessions
                .iter()
                .filter(|(_, held)| !held.busy && now.saturating_duration_since(held.used) >= timeout)
                .map(|(id, _)| id.clone())
                .collect();
            stale.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        if !dropped.is_empty() {
            tracing::debug!("{} idle sessions dropped from memory", dropped.len());
        }
    }

    /// How many sessions are in memory.
    pub fn session_count(&self) -> usize {
        self.sessions().len()
    }

    /// Record a run that is starting.
    pub fn run_started(&self, run: RunId, active: ActiveRun) {
        self.runs().insert(run, active);
    }

    /// Forget a run that has ended (its result is in the store).
    pub fn run_ended(&self, run: &RunId) {
        self.runs().remove(run);
    }

    /// A run in flight: its cancel switch and where its result will appear.
    pub fn run(&self, run: &RunId) -> Option<(CancellationToken, watch::Receiver<Option<RunResult>>)> {
        self.runs().get(run).map(|a| (a.cancel.clone(), a.done.clone()))
    }

    /// How many runs are in flight.
    pub fn run_count(&self) -> usize {
        self.runs().len()
    }
}
