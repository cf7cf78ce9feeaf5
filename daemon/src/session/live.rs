//! What this daemon holds in memory: the sessions loaded from the store and
//! the runs in flight. Everything else is read from the store.
//!
//! A session is held while it is in use and dropped when it is not: a
//! closed one as soon as its run (if any) has ended, an idle one after
//! `session_idle_timeout_s` or when more than `max_live_sessions` are held
//! (least recently used first). `Sessions::get` loads a dropped session
//! again from the store. A session with a run in flight is never dropped:
//! its run holds the conversation and tools, and a second copy could start
//! a second run.
//!
//! Dropping a session marks it `retired` under its state lock, in the same
//! critical section that removes it from the map, so whoever still holds
//! the old copy (a `run/start` or `session/close` waiting for that lock)
//! sees it and loads the session again instead of using a stale copy; a
//! copy seen retired is never the one held.

use super::Session;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
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
    /// The session.
    session: Arc<Session>,
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

/// Mark `session` retired if it can be dropped now: nobody holds its state
/// and no run is in flight.
fn retire_if_idle(session: &Session) -> bool {
    match session.state.try_lock() {
        Ok(mut st) if st.active.is_none() => {
            st.retired = true;
            true
        }
        _ => false,
    }
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

    /// The session if it is in memory (and now the most recently used).
    pub fn get(&self, id: &SessionId) -> Option<Arc<Session>> {
        let mut sessions = self.sessions();
        let held = sessions.get_mut(id)?;
        held.used = Instant::now();
        Some(held.session.clone())
    }

    /// Hold `session`, unless a copy is already held (which is returned
    /// instead); then drop the least recently used idle sessions past the cap.
    pub fn insert(&self, session: Arc<Session>) -> Arc<Session> {
        let mut dropped = Vec::new();
        let kept = {
            let mut sessions = self.sessions();
            let kept = sessions
                .entry(session.id.clone())
                .or_insert_with(|| Held { session, used: Instant::now() })
                .session
                .clone();
            if sessions.len() > self.limits.max_sessions {
                let mut idle: Vec<(Instant, SessionId)> = sessions
                    .iter()
                    .filter(|(id, _)| **id != kept.id)
                    .map(|(id, held)| (held.used, id.clone()))
                    .collect();
                idle.sort();
                for (_, id) in idle {
                    if sessions.len() <= self.limits.max_sessions {
                        break;
                    }
                    if retire_if_idle(&sessions[&id].session) {
                        dropped.extend(sessions.remove(&id));
                    }
                }
            }
            kept
        };
        // Dropping a session closes what it holds; not under the lock.
        drop(dropped);
        kept
    }

    /// Mark `session` (if it is the copy held) as used just now.
    pub fn touch(&self, session: &Arc<Session>) {
        if let Some(held) = self.sessions().get_mut(&session.id) {
            if Arc::ptr_eq(&held.session, session) {
                held.used = Instant::now();
            }
        }
    }

    /// Stop holding `session` (if it is the copy held).
    pub fn remove(&self, session: &Arc<Session>) {
        let removed = {
            let mut sessions = self.sessions();
            match sessions.get(&session.id) {
                Some(held) if Arc::ptr_eq(&held.session, session) => sessions.remove(&session.id),
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
            let mut stale = Vec::new();
            for (id, held) in sessions.iter() {
                if now.saturating_duration_since(held.used) >= timeout && retire_if_idle(&held.session) {
                    stale.push(id.clone());
                }
            }
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
