//! Loops (Swival's `/loop`), owned by the daemon: a session's prompt run
//! on a schedule (`schedule.rs`). Each firing is a new session started
//! from the loop's (its settings, not its conversation) in a fresh git
//! worktree of the project, so a loop never changes the user's checkout:
//! its changes wait for `swivalctl diff` and `swivalctl apply`. Swival's
//! rules: at most 4 active loops per session, a warning after 3 failed
//! firings in a row, cancelled after 6; and ours: a growing wait after
//! each failure, no two firings of one loop at once, `max_loops` loops and
//! `max_background_runs` firings at once daemon-wide, one catch-up firing
//! after a restart or a sleep.
//!
//! A loop is a row of the store, written at each step; [`Loops`] answers
//! `loop/*` and keeps one driver task per active loop (`fire.rs`). Every
//! change of a loop goes through one lock.

mod fire;
pub mod schedule;

use crate::session::{SessionError, Sessions};
use crate::shutdown::Shutdown;
use crate::store::Store;
use schedule::When;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use swival_protocol::{EventKind, Loop, LoopAction, LoopAddParams, LoopRemoveParams, LoopStatus, SessionId};
use tokio_util::sync::CancellationToken;

/// Active loops a session may have (Swival's).
pub const MAX_PER_SESSION: usize = 4;

/// The daemon's limits on loops.
#[derive(Debug, Clone, Copy)]
pub struct LoopLimits {
    /// Active loops, daemon-wide (`max_loops`).
    pub max_loops: usize,
    /// Firings in flight at once, daemon-wide (`max_background_runs`).
    pub max_firing: usize,
    /// The shortest interval (`loop_min_interval_s`).
    pub min_every: Duration,
    /// The first wait after a failed firing (`loop_backoff_base_s`).
    pub backoff_base: Duration,
}

/// The daemon's loops.
pub struct Loops {
    /// Where firings run.
    sessions: Arc<Sessions>,
    /// Where loops are kept.
    store: Arc<Store>,
    /// Where firings are told.
    inbox: Arc<crate::inbox::Inbox>,
    /// Its limits.
    limits: LoopLimits,
    /// Every change of a loop, one at a time.
    edit: tokio::sync::Mutex<()>,
    /// Each active loop's driver, and what stops its waiting.
    drivers: Mutex<HashMap<String, CancellationToken>>,
    /// Firings in flight, daemon-wide.
    firing: tokio::sync::Semaphore,
    /// Stops the drivers.
    shutdown: Shutdown,
}

impl Loops {
    /// The loops of `store`, fired through `sessions`.
    pub fn new(
        sessions: Arc<Sessions>,
        store: Arc<Store>,
        inbox: Arc<crate::inbox::Inbox>,
        limits: LoopLimits,
        shutdown: Shutdown,
    ) -> Arc<Loops> {
        let firing = tokio::sync::Semaphore::new(limits.max_firing.max(1));
        let (edit, drivers) = (Default::default(), Default::default());
        Arc::new(Loops { sessions, store, inbox, limits, edit, drivers, firing, shutdown })
    }

    /// After a start: every active loop is driven again.
    pub fn restore(self: &Arc<Self>) -> Result<(), SessionError> {
        for l in self.store.loops(None, false)? {
            self.drive(&l.loop_id);
        }
        Ok(())
    }

    /// `loop/add`.
    pub async fn add(self: &Arc<Self>, p: LoopAddParams) -> Result<Loop, SessionError> {
        let prompt = p.prompt.trim();
        if prompt.is_empty() {
            return Err(SessionError::Refused("a loop needs a prompt: say what each firing should do".into()));
        }
        let b = &p.budget;
        if [b.max_runs, b.token_budget, b.max_seconds].contains(&Some(0)) {
            return Err(SessionError::Refused(
                "a loop's budgets (max_runs, token_budget, max_seconds) must be positive".into(),
            ));
        }
        if let Some(url) = &p.webhook {
            crate::sandbox::check_webhook(url).map_err(|e| SessionError::Refused(format!("webhook {url}: {e}")))?;
        }
        let now = chrono::Utc::now();
        let when = When::parse(&p.schedule, self.limits.min_every, now).map_err(SessionError::Refused)?;
        self.sessions.check_open(&p.session_id)?;
        let base = self.sessions.base_dir(&p.session_id)?;
        if !in_git(&base) {
            return Err(SessionError::Refused(format!(
                "{} is not in a git repository: each firing works in a fresh git worktree so your checkout is never \
                 changed; run `git init` there (and commit), or loop in a git project",
                base.display()
            )));
        }
        let _edit = self.edit.lock().await;
        let active = self.store.loops(None, false)?;
        if active.iter().filter(|l| l.session_id == p.session_id).count() >= MAX_PER_SESSION {
            return Err(SessionError::Refused(format!(
                "session {} already has {MAX_PER_SESSION} active loops, the most a session may have; remove one with \
                 `/unloop ID` or `swivalctl loop rm ID`",
                p.session_id
            )));
        }
        if active.len() >= self.limits.max_loops {
            return Err(SessionError::Refused(format!(
                "{} loops are already active daemon-wide, the most max_loops ({}) allows; remove one \
                 (`swivalctl loops`, `swivalctl loop rm`) or raise max_loops in swivald.toml",
                active.len(),
                self.limits.max_loops
            )));
        }
        let mut l = Loop {
            loop_id: crate::session::random_id("l_"),
            session_id: p.session_id,
            prompt: prompt.to_owned(),
            schedule: p.schedule,
            status: LoopStatus::Active,
            created_at: schedule::stamp(now),
            next_fire_at: when.first(now).map(schedule::stamp),
            last_fire_at: None,
            fires: 0,
            consecutive_failures: 0,
            last_error: None,
            last_session: None,
            last_run: None,
            firing: false,
            budget: p.budget,
            tokens_used: 0,
            kept: 0,
            webhook: p.webhook.clone(),
        };
        self.save(&mut l, LoopAction::Added).await?;
        self.drive(&l.loop_id);
        Ok(l)
    }

    /// Its limits.
    pub fn limits(&self) -> LoopLimits {
        self.limits
    }

    /// `loop/list`.
    pub fn list(&self, session: Option<&SessionId>, all: bool) -> Result<Vec<Loop>, SessionError> {
        if let Some(s) = session {
            self.sessions.check_exists(s)?;
        }
        Ok(self.store.loops(session, all)?)
    }

    /// `loop/remove`: one loop, or every active one (of a session, when
    /// named).
    pub async fn remove(&self, p: LoopRemoveParams) -> Result<Vec<String>, SessionError> {
        if let Some(s) = &p.session_id {
            self.sessions.check_exists(s)?;
        }
        let _edit = self.edit.lock().await;
        let active = self.store.loops(p.session_id.as_ref(), false)?;
        let chosen: Vec<Loop> = match (&p.loop_id, p.all) {
            (None, true) => active,
            (Some(id), false) => match active.into_iter().find(|l| l.loop_id == *id) {
                Some(l) => vec![l],
                None => {
                    return Err(SessionError::Refused(format!("no active loop {id}; `swivalctl loops` lists them")))
                }
            },
            _ => return Err(SessionError::Refused("name one loop (loop_id) or all of them (all: true)".into())),
        };
        let mut removed = Vec::new();
        for mut l in chosen {
            l.status = LoopStatus::Cancelled;
            l.next_fire_at = None;
            self.save(&mut l, LoopAction::Cancelled).await?;
            if let Some(stop) = self.drivers.lock().unwrap_or_else(|p| p.into_inner()).remove(&l.loop_id) {
                stop.cancel();
            }
            removed.push(l.loop_id);
        }
        Ok(removed)
    }

    /// Session `id` was closed: its loops fire no more.
    pub async fn session_closed(&self, id: &SessionId) {
        let params = LoopRemoveParams { session_id: Some(id.clone()), loop_id: None, all: true };
        if let Err(e) = self.remove(params).await {
            tracing::warn!("the loops of closed session {id} could not be cancelled: {e}");
        }
    }

    /// Store `l` and say what happened in its session's events.
    async fn save(&self, l: &mut Loop, action: LoopAction) -> Result<(), SessionError> {
        self.store.put_loop(l).await?;
        let kind = EventKind::Loop { action, loop_: Box::new(l.clone()) };
        self.sessions.emit(&l.session_id, None, kind);
        Ok(())
    }

    /// Have a driver working on loop `id` (at most one).
    fn drive(self: &Arc<Self>, id: &str) {
        let mut drivers = self.drivers.lock().unwrap_or_else(|p| p.into_inner());
        if drivers.get(id).is_some_and(|stop| !stop.is_cancelled()) {
            return;
        }
        let stop = self.shutdown.child_token();
        drivers.insert(id.to_owned(), stop.clone());
        let (loops, id) = (self.clone(), id.to_owned());
        tokio::spawn(async move { loops.run_loop(&id, stop).await });
    }
}

/// Whether `dir` lies in a git checkout (a `.git` in it or above it).
fn in_git(dir: &Path) -> bool {
    dir.ancestors().any(|d| d.join(".git").exists())
}
