//! A goal's driver: one task per session with an active goal. Each step
//! is taken under the goals' lock: read the goal, and either wait for the
//! run it names, or stop (not active, a budget spent), or start its next
//! run and name it in the goal before waiting for it. When that run ends,
//! what it did decides the goal's next status ([`verdict`]).

use super::{prompts, Goals};
use crate::agent::GoalRun;
use crate::session::{NewRun, SessionError};
use std::sync::Arc;
use std::time::Duration;
use swival_protocol::{FailureKind, Goal, GoalAction, GoalStatus, Outcome, RunId, RunResult, SessionId, TimelineEntry};

/// How long a driver waits before asking again for a session that is
/// compacting its conversation.
const COMPACTING_RETRY: Duration = Duration::from_millis(500);

/// Files a goal lists as changed, at most.
const MAX_FILES: usize = 200;

/// What a driver does next.
enum Step {
    /// Wait for the goal's run, then settle it.
    Settle(RunId),
    /// Wait for a run of the user's in the session, then look again.
    Behind(RunId),
    /// The session is compacting: look again shortly.
    Later,
    /// Nothing more to do.
    Stop,
}

impl Goals {
    /// Work on `session`'s goal until it is no longer active.
    pub(super) async fn run_goal(self: &Arc<Self>, session: &SessionId) {
        loop {
            match self.step(session).await {
                Step::Settle(run) => {
                    let result = self.wait_within(session, &run).await;
                    self.settle(session, &run, result).await;
                }
                Step::Behind(run) => drop(self.sessions.wait(&run).await),
                Step::Later => tokio::time::sleep(COMPACTING_RETRY).await,
                Step::Stop => return,
            }
        }
    }

    /// One step, under the lock: a driver that stops leaves the registry
    /// of drivers before the lock is let go, so a goal set meanwhile gets
    /// a driver of its own.
    async fn step(self: &Arc<Self>, session: &SessionId) -> Step {
        let _edit = self.edit.lock().await;
        let step = match self.store.goal(session) {
            Ok(Some(goal)) => self.next(goal).await,
            Ok(None) => Step::Stop,
            Err(e) => {
                tracing::warn!("session {session}: its goal could not be read, so it is not continued: {e}");
                Step::Stop
            }
        };
        if matches!(step, Step::Stop) {
            self.drivers.lock().unwrap_or_else(|p| p.into_inner()).remove(session);
        }
        step
    }

    /// What to do with `goal` now.
    async fn next(&self, mut goal: Goal) -> Step {
        if let Some(run) = goal.current_run.clone() {
            return Step::Settle(run);
        }
        if goal.status != GoalStatus::Active {
            return Step::Stop;
        }
        if let Some(why) = spent(&goal) {
            goal.status = GoalStatus::BudgetLimited;
            goal.last_blocker = Some(why.clone());
            self.save_or_log(&mut goal, GoalAction::BudgetLimited).await;
            let mut entry =
                self.inbox.entry(&source(&goal), &goal.session_id, goal.last_run.as_ref(), "budget_limited");
            entry.detail = Some(why);
            self.inbox.put(&source(&goal), entry).await;
            return Step::Stop;
        }
        if let Some(why) = self.inbox.ceiling() {
            goal.status = GoalStatus::Stuck;
            goal.last_blocker = Some(why);
            self.save_or_log(&mut goal, GoalAction::Stuck).await;
            let mut entry = self.inbox.entry(&source(&goal), &goal.session_id, None, "stuck");
            entry.detail = goal.last_blocker.clone();
            self.inbox.put(&source(&goal), entry).await;
            return Step::Stop;
        }
        let task = prompts::next_task(&goal);
        let run_goal = GoalRun { goal: Box::new(goal.clone()) };
        // Named in the goal before it starts: a crash between the two
        // leaves a run to settle (as interrupted), not one unaccounted.
        let id = RunId(crate::session::random_id("r_"));
        goal.current_run = Some(id.clone());
        goal.runs += 1;
        if let Err(e) = self.save(&mut goal, GoalAction::Continued).await {
            tracing::warn!("session {}: its goal could not be stored, so it is not continued: {e}", goal.session_id);
            return Step::Stop;
        }
        let new = NewRun { task, client_token: None, resume: false, bare: false, goal: Some(run_goal), id: Some(id) };
        let mark = self.inbox.mark(&goal.session_id);
        let started = self.sessions.start_run(&goal.session_id, new, None).await;
        if started.is_err() {
            goal.current_run = None;
            goal.runs -= 1;
        }
        match started {
            Ok(run) => {
                // An approval it waits for is told in the inbox.
                self.inbox.watch(&goal.session_id, &run, mark, source(&goal), false);
                Step::Settle(run)
            }
            Err(SessionError::Busy { run, .. }) => {
                self.save_or_log(&mut goal, GoalAction::RunEnded).await;
                Step::Behind(run)
            }
            Err(SessionError::Compacting(_)) => {
                self.save_or_log(&mut goal, GoalAction::RunEnded).await;
                Step::Later
            }
            Err(SessionError::ShuttingDown) => {
                self.save_or_log(&mut goal, GoalAction::RunEnded).await;
                Step::Stop
            }
            Err(e) => {
                goal.status = GoalStatus::Stuck;
                goal.last_blocker = Some(format!("its next run could not start: {e}"));
                self.save_or_log(&mut goal, GoalAction::Stuck).await;
                let mut entry = self.inbox.entry(&source(&goal), &goal.session_id, None, "stuck");
                entry.detail = goal.last_blocker.clone();
                self.inbox.put(&source(&goal), entry).await;
                Step::Stop
            }
        }
    }

    /// Fold the end of the goal's `run` into it (unless the goal was
    /// cleared or replaced meanwhile).
    async fn settle(&self, session: &SessionId, run: &RunId, result: Result<RunResult, SessionError>) {
        let _edit = self.edit.lock().await;
        let result = result.unwrap_or_else(|e| interrupted(run, &e));
        let timeline = self.sessions.report(run).ok().and_then(|r| r.timeline).unwrap_or_default();
        let (tokens, estimated) = crate::report::tokens_spent(&timeline, result.stats.completion_tokens);
        // Counted toward the day's ceiling even when the goal was cleared
        // or replaced meanwhile.
        self.inbox.spend(tokens).await;
        let Ok(Some(mut goal)) = self.store.goal(session) else { return };
        if goal.current_run.as_ref() != Some(run) {
            return;
        }
        goal.current_run = None;
        goal.last_run = Some(run.clone());
        goal.tokens_used += tokens;
        self.note_files(&mut goal, run).await;
        goal.usage_estimated |= estimated;
        goal.time_used_seconds += self.elapsed(run, &result);
        let action = verdict(&mut goal, &result, &timeline);
        self.save_or_log(&mut goal, action).await;
        let ended = [GoalAction::Completed, GoalAction::BudgetLimited, GoalAction::Stuck, GoalAction::Paused];
        if ended.contains(&action) {
            let (outcome, blocker) = (goal.status.as_str(), goal.last_blocker.clone());
            self.inbox.ran(&source(&goal), session, &result, outcome, blocker).await;
        }
    }

    /// Add the files `run` changed to those the goal changed.
    async fn note_files(&self, goal: &mut Goal, run: &RunId) {
        let which = swival_protocol::ChangesRef { run_id: Some(run.0.clone()), session_id: None };
        let Ok(changes) = self.sessions.changes(swival_protocol::RunChangesParams { which, no_diff: true }).await
        else {
            return;
        };
        if !changes.files.is_empty() && goal.changed_by.len() < MAX_FILES {
            goal.changed_by.push(run.clone());
        }
        for f in changes.files {
            if !goal.files.contains(&f.path) && goal.files.len() < MAX_FILES {
                goal.files.push(f.path);
            }
        }
    }

    /// Wait for the goal's `run`; with `max_seconds`, cancel it when the
    /// goal's wall time runs out meanwhile.
    async fn wait_within(&self, session: &SessionId, run: &RunId) -> Result<RunResult, SessionError> {
        let left = self.store.goal(session).ok().flatten().and_then(|g| {
            let max = g.max_seconds? as f64;
            Some(Duration::from_secs_f64((max - g.time_used_seconds).max(0.0)))
        });
        let Some(left) = left else { return self.sessions.wait(run).await };
        match tokio::time::timeout(left, self.sessions.wait(run)).await {
            Ok(result) => result,
            Err(_) => {
                let _ = self.sessions.cancel(run);
                self.sessions.wait(run).await
            }
        }
    }

    /// The wall time `run` took (none for a run the daemon's end cut off:
    /// its end is not known).
    fn elapsed(&self, run: &RunId, result: &RunResult) -> f64 {
        if result.outcome == Outcome::Interrupted {
            return 0.0;
        }
        let started = self.store.run(run).ok().flatten().and_then(|r| humantime::parse_rfc3339(&r.started_at).ok());
        started.and_then(|t| t.elapsed().ok()).map_or(0.0, |d| d.as_secs_f64())
    }

    /// Store `goal` as changed, said in its events; a store that fails is
    /// logged (the driver stops at its next step, which reads the goal).
    async fn save_or_log(&self, goal: &mut Goal, action: GoalAction) {
        if let Err(e) = self.save(goal, action).await {
            tracing::warn!("session {}: its goal could not be stored: {e}", goal.session_id);
        }
    }
}

/// What the inbox says a goal's entries are about.
fn source(goal: &Goal) -> crate::inbox::Source {
    let trigger = swival_protocol::InboxTrigger::Goal;
    crate::inbox::Source {
        trigger,
        id: Some(goal.goal_id.clone()),
        title: goal.objective.clone(),
        webhook: goal.webhook.clone(),
        files: goal.files.clone(),
        changed_by: goal.changed_by.clone(),
    }
}

/// Which budget of `goal` is spent, in words.
fn spent(goal: &Goal) -> Option<String> {
    if goal.token_budget.is_some_and(|b| goal.tokens_used >= b) {
        return Some(format!("its token budget is spent ({} of {})", goal.tokens_used, goal.token_budget.unwrap_or(0)));
    }
    if goal.runs >= goal.max_runs {
        return Some(format!("it took the most runs it may ({})", goal.max_runs));
    }
    if goal.max_seconds.is_some_and(|m| goal.time_used_seconds >= m as f64) {
        return Some(format!(
            "it used its time ({:.0} s of {} s)",
            goal.time_used_seconds,
            goal.max_seconds.unwrap_or(0)
        ));
    }
    None
}

/// The goal's status after its run ended as `result` says, and the event
/// that says so. A goal the user paused meanwhile stays paused unless the
/// run completed it.
fn verdict(goal: &mut Goal, result: &RunResult, timeline: &[TimelineEntry]) -> GoalAction {
    let completed = crate::agent::completes_goal(
        result.outcome,
        result.answer.as_deref(),
        timeline,
        &result.stats,
        goal.last_check,
    );
    goal.last_check = crate::agent::last_check(timeline).or(goal.last_check);
    if completed {
        goal.status = GoalStatus::Complete;
        goal.last_blocker = None;
        return GoalAction::Completed;
    }
    let answer = result.answer.as_deref().map(str::trim).filter(|a| !a.is_empty());
    if let Some(a) = answer {
        goal.last_next_step = Some(a.chars().take(1000).collect());
    }
    if goal.status != GoalStatus::Active {
        return GoalAction::RunEnded;
    }
    let stuck = |goal: &mut Goal, why: String| {
        goal.status = GoalStatus::Stuck;
        goal.last_blocker = Some(why);
        GoalAction::Stuck
    };
    match (result.outcome, result.failure) {
        // An answer from a run that called no tool: the model says what
        // blocks it (Swival's blocker note), or has nothing left to try.
        // A claim turned down, with nothing done besides.
        (Outcome::Success, _) if !acted(result) && answer == Some(crate::agent::GOAL_COMPLETED) => stuck(
            goal,
            "complete_goal was turned down: the project's check failed when it last ran (or the reviewer did not \
             accept), and nothing changed since"
                .into(),
        ),
        (Outcome::Success, _) if !acted(result) => {
            stuck(goal, answer.unwrap_or("the run answered without doing anything").chars().take(1000).collect())
        }
        // Cancelled as its wall time ran out, or by someone.
        (Outcome::Cancelled, _) => match spent(goal) {
            Some(why) => {
                goal.status = GoalStatus::BudgetLimited;
                goal.last_blocker = Some(why);
                GoalAction::BudgetLimited
            }
            None => {
                goal.status = GoalStatus::Paused;
                goal.last_blocker = Some("its run was cancelled".into());
                GoalAction::Paused
            }
        },
        (Outcome::Success | Outcome::Exhausted | Outcome::Interrupted, _) => match spent(goal) {
            Some(why) if goal.token_budget.is_some_and(|b| goal.tokens_used >= b) => {
                goal.status = GoalStatus::BudgetLimited;
                goal.last_blocker = Some(why);
                GoalAction::BudgetLimited
            }
            _ => GoalAction::RunEnded,
        },
        (_, Some(FailureKind::Stuck)) => {
            stuck(goal, "the loop guards stopped its run: it kept repeating refused calls".into())
        }
        (_, _) => stuck(goal, format!("its run failed: {}", result.error.as_deref().unwrap_or("no reason given"))),
    }
}

/// Whether the run called a tool that does more than keep the model's
/// notes (`think`, `todo` and the like do not count as acting).
fn acted(result: &RunResult) -> bool {
    let counted = |(name, c): (&String, &swival_protocol::ToolCounts)| {
        !crate::tools::registry::kind(name).is_bookkeeping() && c.succeeded + c.failed > 0
    };
    result.stats.tool_calls_by_name.iter().any(counted)
}

/// A run whose result cannot be read, as interrupted.
fn interrupted(run: &RunId, e: &SessionError) -> RunResult {
    tracing::warn!("the result of goal run {run} cannot be read: {e}");
    crate::store::interrupted_result(run)
}
