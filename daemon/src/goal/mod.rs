//! Goals (Swival's `/goal`), owned by the daemon: a session's objective
//! the daemon keeps working on with one run after another, each started
//! through the session like any other run (the same pipeline, sandbox and
//! approvals), until the model calls `complete_goal`, a budget is spent
//! (tokens, wall time, runs), the user pauses it, or a run makes no
//! progress and the goal waits for the user (`stuck`).
//!
//! A goal is a row of the store (`store/goals.rs`), written at each step:
//! the run it started is named in it before that run's result is read, so
//! after a crash or a restart its driver reads that run's result (an
//! interrupted one) and goes on where it stopped, once, not twice.
//!
//! [`Goals`] answers the `goal/*` methods and keeps one driver task per
//! session with an active goal (`drive.rs`); every change of a goal goes
//! through one lock, so a user's pause and a driver's step never cross.

mod drive;
mod prompts;

use crate::session::{SessionError, Sessions};
use crate::shutdown::Shutdown;
use crate::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use swival_protocol::{EventKind, Goal, GoalAction, GoalSetParams, GoalStatus, SessionId};

/// Most characters an objective may have (Swival's).
const MAX_OBJECTIVE: usize = 4000;

/// The daemon's limits on goals.
#[derive(Debug, Clone, Copy)]
pub struct GoalLimits {
    /// Goals active at once, daemon-wide (`max_background_runs`).
    pub max_active: usize,
    /// Runs a goal may take unless it says (`goal_max_runs`).
    pub default_max_runs: u64,
}

/// The daemon's goals.
pub struct Goals {
    /// Where runs start.
    sessions: Arc<Sessions>,
    /// Where goals are kept.
    store: Arc<Store>,
    /// Where their outcomes are told.
    inbox: Arc<crate::inbox::Inbox>,
    /// Its limits.
    limits: GoalLimits,
    /// Every change of a goal, one at a time.
    edit: tokio::sync::Mutex<()>,
    /// The driver of each session with one running.
    drivers: Mutex<HashMap<SessionId, tokio::task::AbortHandle>>,
    /// Stops the drivers.
    shutdown: Shutdown,
}

impl Goals {
    /// The goals of `store`, run through `sessions`.
    pub fn new(
        sessions: Arc<Sessions>,
        store: Arc<Store>,
        inbox: Arc<crate::inbox::Inbox>,
        limits: GoalLimits,
        shutdown: Shutdown,
    ) -> Arc<Goals> {
        let (edit, drivers) = (Default::default(), Default::default());
        Arc::new(Goals { sessions, store, inbox, limits, edit, drivers, shutdown })
    }

    /// After a start: every goal that was active goes on, said in its events.
    pub fn restore(self: &Arc<Self>) -> Result<(), SessionError> {
        for goal in self.store.goals()? {
            if goal.status == GoalStatus::Active {
                self.emit(&goal, GoalAction::Restarted);
                self.drive(&goal.session_id);
            }
        }
        Ok(())
    }

    /// `goal/set`.
    pub async fn set(self: &Arc<Self>, p: GoalSetParams) -> Result<Goal, SessionError> {
        let objective = p.objective.trim();
        if objective.is_empty() {
            return Err(SessionError::Refused("the objective is empty: say what the goal is".into()));
        }
        if objective.chars().count() > MAX_OBJECTIVE {
            return Err(SessionError::Refused(format!(
                "the objective is longer than {MAX_OBJECTIVE} characters: shorten it, or point to a file that says more"
            )));
        }
        if p.token_budget == Some(0) || p.max_runs == Some(0) || p.max_seconds == Some(0) {
            return Err(SessionError::Refused(
                "a goal's budgets (token_budget, max_runs, max_seconds) must be positive".into(),
            ));
        }
        self.sessions.check_open(&p.session_id)?;
        if let Some(why) = self.inbox.ceiling() {
            return Err(SessionError::Refused(why));
        }
        if let Some(url) = &p.webhook {
            crate::sandbox::check_webhook(url).map_err(|e| SessionError::Refused(format!("webhook {url}: {e}")))?;
        }
        let _edit = self.edit.lock().await;
        let old = self.store.goal(&p.session_id)?;
        let replacing = old.as_ref().is_some_and(|g| g.status != GoalStatus::Complete);
        if replacing && !p.replace {
            return Err(SessionError::Refused(format!(
                "session {} already has a goal that is not complete; replace it (`/goal replace …`, `replace: true`) or clear it first",
                p.session_id
            )));
        }
        self.room_for_one_more(&p.session_id)?;
        // A replaced goal's run in flight is its no longer: cancel it.
        if let Some(run) = old.as_ref().and_then(|g| g.current_run.as_ref()) {
            let _ = self.sessions.cancel(run);
        }
        let now = crate::clock::now();
        let goal = Goal {
            goal_id: crate::session::random_id("g_"),
            session_id: p.session_id.clone(),
            objective: objective.to_owned(),
            status: GoalStatus::Active,
            token_budget: p.token_budget,
            max_runs: p.max_runs.unwrap_or(self.limits.default_max_runs),
            max_seconds: p.max_seconds,
            tokens_used: 0,
            usage_estimated: false,
            time_used_seconds: 0.0,
            runs: 0,
            created_at: now.clone(),
            updated_at: now,
            last_next_step: None,
            last_blocker: None,
            current_run: None,
            last_run: None,
            webhook: p.webhook.clone(),
            last_check: None,
            files: Vec::new(),
            changed_by: Vec::new(),
        };
        self.store.put_goal(&goal).await?;
        self.emit(&goal, if replacing { GoalAction::Replaced } else { GoalAction::Created });
        self.drive(&goal.session_id);
        Ok(goal)
    }

    /// Its limits.
    pub fn limits(&self) -> GoalLimits {
        self.limits
    }

    /// `goal/get`.
    pub fn get(&self, session: &SessionId) -> Result<Option<Goal>, SessionError> {
        self.sessions.check_exists(session)?;
        Ok(self.store.goal(session)?)
    }

    /// `goal/list`.
    pub fn list(&self) -> Result<Vec<Goal>, SessionError> {
        Ok(self.store.goals()?)
    }

    /// `goal/pause`: an active goal starts no further run.
    pub async fn pause(&self, session: &SessionId) -> Result<Goal, SessionError> {
        let _edit = self.edit.lock().await;
        let mut goal = self.existing(session)?;
        if goal.status != GoalStatus::Active {
            return Err(SessionError::Refused(format!(
                "the goal is {}, not active: only an active goal pauses",
                goal.status.as_str()
            )));
        }
        goal.status = GoalStatus::Paused;
        goal.last_blocker = Some("paused by the user".into());
        self.save(&mut goal, GoalAction::Paused).await?;
        Ok(goal)
    }

    /// `goal/resume`: a paused or stuck goal becomes active again.
    pub async fn resume(self: &Arc<Self>, session: &SessionId) -> Result<Goal, SessionError> {
        let _edit = self.edit.lock().await;
        let mut goal = self.existing(session)?;
        // An active goal whose driver stopped (a store error) is driven again.
        if goal.status == GoalStatus::Active {
            self.drive(session);
            return Ok(goal);
        }
        if !matches!(goal.status, GoalStatus::Paused | GoalStatus::Stuck) {
            return Err(SessionError::Refused(format!(
                "the goal is {}: only a paused or stuck goal resumes; set a new one with `/goal replace …`",
                goal.status.as_str()
            )));
        }
        self.room_for_one_more(session)?;
        if let Some(why) = self.inbox.ceiling() {
            return Err(SessionError::Refused(why));
        }
        goal.status = GoalStatus::Active;
        goal.last_blocker = None;
        self.save(&mut goal, GoalAction::Resumed).await?;
        self.drive(session);
        Ok(goal)
    }

    /// `goal/clear`: the goal removed, its run in flight cancelled.
    pub async fn clear(&self, session: &SessionId) -> Result<Option<Goal>, SessionError> {
        let _edit = self.edit.lock().await;
        self.sessions.check_exists(session)?;
        let goal = self.store.goal(session)?;
        if let Some(goal) = &goal {
            if let Some(run) = &goal.current_run {
                let _ = self.sessions.cancel(run);
            }
            self.store.delete_goal(session).await?;
            self.sessions.emit(session, None, EventKind::Goal { action: GoalAction::Cleared, goal: None });
            tracing::debug!("goal {} of session {session} cleared", goal.goal_id);
        }
        Ok(goal)
    }

    /// A run the user started in `session`: a stuck goal is taken up
    /// again once it ends (Swival rearms a goal on the user's next input).
    pub async fn user_ran(self: &Arc<Self>, session: &SessionId) {
        // Most sessions have no stuck goal: no lock for them.
        if !self.store.goal(session).ok().flatten().is_some_and(|g| g.status == GoalStatus::Stuck) {
            return;
        }
        if self.inbox.ceiling().is_some() {
            return;
        }
        let _edit = self.edit.lock().await;
        let Ok(Some(mut goal)) = self.store.goal(session) else { return };
        if goal.status != GoalStatus::Stuck || self.room_for_one_more(session).is_err() {
            return;
        }
        goal.status = GoalStatus::Active;
        goal.last_blocker = None;
        if self.save(&mut goal, GoalAction::Resumed).await.is_ok() {
            self.drive(session);
        }
    }

    /// The session's goal, or why there is none.
    fn existing(&self, session: &SessionId) -> Result<Goal, SessionError> {
        self.sessions.check_exists(session)?;
        self.store.goal(session)?.ok_or_else(|| {
            SessionError::Refused(format!(
                "session {session} has no goal; set one with `swivalctl goal set` or `/goal …`"
            ))
        })
    }

    /// Refused when `max_background_runs` goals of other sessions are active.
    fn room_for_one_more(&self, session: &SessionId) -> Result<(), SessionError> {
        let active =
            self.store.goals()?.iter().filter(|g| g.status == GoalStatus::Active && g.session_id != *session).count();
        if active >= self.limits.max_active {
            return Err(SessionError::Refused(format!(
                "{active} goals are already active daemon-wide, the most max_background_runs ({}) allows; pause one \
                 (`swivalctl goal pause SESSION`) or raise max_background_runs in swivald.toml",
                self.limits.max_active
            )));
        }
        Ok(())
    }

    /// Store `goal` as changed now, and say so in its session's events.
    async fn save(&self, goal: &mut Goal, action: GoalAction) -> Result<(), SessionError> {
        goal.updated_at = crate::clock::now();
        self.store.put_goal(goal).await?;
        self.emit(goal, action);
        Ok(())
    }

    /// A `goal` event of `goal`'s session.
    fn emit(&self, goal: &Goal, action: GoalAction) {
        let run = if action == GoalAction::Continued { goal.current_run.as_ref() } else { None };
        self.sessions.emit(&goal.session_id, run, EventKind::Goal { action, goal: Some(Box::new(goal.clone())) });
    }

    /// Have a driver working on `session`'s goal (at most one).
    fn drive(self: &Arc<Self>, session: &SessionId) {
        let mut drivers = self.drivers.lock().unwrap_or_else(|p| p.into_inner());
        drivers.retain(|_, task| !task.is_finished());
        if drivers.contains_key(session) {
            return;
        }
        let (goals, id, shutdown) = (self.clone(), session.clone(), self.shutdown.clone());
        let task = tokio::spawn(async move {
            tokio::select! {
                _ = goals.run_goal(&id) => {}
                _ = shutdown.wait() => {}
            }
        });
        drivers.insert(session.clone(), task.abort_handle());
    }
}
