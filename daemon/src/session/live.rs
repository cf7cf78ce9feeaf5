//! What this daemon holds in memory: the sessions loaded from the store and
//! the runs in flight. Everything else is read from the store.
//!
//! A session is held while it is in use and dropped when it is not: a
//! closed one as soon as its run (if any) has ended, an idle one after
//! `session_idle_timeout_s` or when more than `max_live_sessions` are held
//! (least recently used first). `Sessions::find` loads a dropped session
//! again from the store.
//!
//! The registry never drops a session itself: it asks the session's actor
//! to leave, and the actor leaves only when it has no run in flight (a
//! second copy could start a second run). The actor takes itself out of
//! the registry before it stops reading its mailbox (`actor.rs`), so the
//! cap is reached as soon as the asked actors have answered.

use super::actor::Handle;
use std::collections::HashMap;
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
    /// is returned as the error); then ask the least recently used others
    /// to leave while more than the cap are held.
    pub fn insert(&self, handle: Handle) -> Result<(), Handle> {
        let mut sessions = self.sessions();
        let id = handle.session.id.clone();
        if let Some(held) = sessions.get_mut(&id) {
            held.used = Instant::now();
            return Err(held.handle.clone());
        }
        sessions.insert(id.clone(), Held { handle, used: Instant::now() });
        let over = sessions.len().saturating_sub(self.limits.max_sessions);
        if over > 0 {
            let mut others: Vec<(Instant, &Handle)> =
                sessions.iter().filter(|(other, _)| **other != id).map(|(_, h)| (h.used, &h.handle)).collect();
            others.sort_by_key(|(used, _)| *used);
            // Actors with a run in flight stay; the cap is a target, not a wall.
            for (_, handle) in others.into_iter().take(over) {
                handle.nudge_leave();
            }
        }
        Ok(())
    }

    /// Mark `handle`'s session (if it is the copy held) as used just now.
    pub fn touch(&self, handle: &Handle) {
        if let Some(held) = self.sessions().get_mut(&handle.session.id) {
            if held.handle.same(handle) {
                held.used = Instant::now();
            }
        }
    }

    /// Stop holding `handle` (if it is the copy held); only its actor does this.
    pub fn remove(&self, handle: &Handle) {
        let mut sessions = self.sessions();
        if sessions.get(&handle.session.id).is_some_and(|held| held.handle.same(handle)) {
            sessions.remove(&handle.session.id);
        }
    }

    /// Ask the sessions idle for longer than the idle timeout to leave.
    pub fn sweep(&self, now: Instant) {
        let Some(timeout) = self.limits.idle_timeout else { return };
        let sessions = self.sessions();
        let stale = sessions.values().filter(|held| now.saturating_duration_since(held.used) >= timeout);
        let mut asked = 0;
        for held in stale {
            held.handle.nudge_leave();
            asked += 1;
        }
        if asked > 0 {
            tracing::debug!("{asked} idle sessions asked to leave memory");
        }
    }

    /// Returns once every actor held now has handled what it was sent
    /// before (a sweep's or the cap's requests to leave).
    #[cfg(test)]
    pub async fn settle(&self) {
        let handles: Vec<Handle> = self.sessions().values().map(|h| h.handle.clone()).collect();
        for handle in handles {
            // An actor that left has no mailbox to answer from: settled too.
            let _ = handle.ask(|reply| super::actor::Command::Ping { reply }).await;
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
