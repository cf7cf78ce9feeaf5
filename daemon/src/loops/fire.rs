//! A loop's driver: wait for its time (by the wall clock, so a machine
//! that slept fires once when it wakes), take a firing slot, fire — a new
//! session from the loop's, in a fresh worktree, its run started and named
//! in the loop before it is waited for — and fold the firing's end into
//! the loop: its failures in a row, Swival's warning and cancel, and the
//! next time. A firing the daemon's end cut short is settled after the
//! restart as interrupted (not a failure) and the loop goes on.

use super::schedule::{self, When};
use super::Loops;
use crate::session::{NewRun, SessionError};
use chrono::Utc;
use std::sync::Arc;
use std::time::Duration;
use swival_protocol::{Loop, LoopAction, LoopStatus, Outcome, RunId, RunResult, SessionCreateParams, SessionFrom};
use tokio_util::sync::CancellationToken;

/// Failed firings in a row that bring a warning (Swival's).
const WARN_FAILURES: u64 = 3;
/// Failed firings in a row that cancel the loop (Swival's).
const CANCEL_FAILURES: u64 = 6;

/// The longest sleep between looks at the wall clock: a machine that
/// slept is noticed this soon after it wakes.
const CLOCK_LOOK: Duration = Duration::from_secs(30);

impl Loops {
    /// Drive loop `id` until it no longer fires or `stop` (its removal,
    /// the daemon's end) interrupts a wait.
    pub(super) async fn run_loop(self: &Arc<Self>, id: &str, stop: CancellationToken) {
        loop {
            let l = match self.store.loop_(id) {
                Ok(Some(l)) if l.status == LoopStatus::Active => l,
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!("loop {id} could not be read, so it does not fire: {e}");
                    return;
                }
            };
            if l.firing {
                if let Some(run) = &l.last_run {
                    let result = self.wait_firing(run, l.budget.max_seconds).await;
                    self.settle(id, run, result).await;
                    continue;
                }
            }
            let Some(next) = l.next_fire_at.as_deref().and_then(schedule::read) else { return };
            if !wait_until(next, &stop).await {
                return;
            }
            let permit = tokio::select! {
                p = self.firing.acquire() => p,
                _ = stop.cancelled() => return,
            };
            let Ok(_permit) = permit else { return };
            if let Some((run, max_seconds)) = self.fire(id).await {
                let result = self.wait_firing(&run, max_seconds).await;
                self.settle(id, &run, result).await;
            }
        }
    }

    /// Wait for firing `run`; one that runs past `max_seconds` is
    /// cancelled and ends as failed, saying so.
    async fn wait_firing(&self, run: &RunId, max_seconds: Option<u64>) -> Result<RunResult, SessionError> {
        let Some(max) = max_seconds else { return self.sessions.wait(run).await };
        match tokio::time::timeout(Duration::from_secs(max), self.sessions.wait(run)).await {
            Ok(result) => result,
            Err(_) => {
                let _ = self.sessions.cancel(run);
                let mut result = self.sessions.wait(run).await?;
                result.outcome = Outcome::Error;
                result.error = Some(format!("the firing ran longer than its max_seconds ({max} s) and was cancelled"));
                Ok(result)
            }
        }
    }

    /// Fire loop `id` now: its run, named in it, and its time bound;
    /// `None` when it no longer fires, when the daily ceiling skips it, or
    /// when the firing could not start (a failure).
    async fn fire(&self, id: &str) -> Option<(RunId, Option<u64>)> {
        let _edit = self.edit.lock().await;
        let mut l = self.store.loop_(id).ok().flatten().filter(|l| l.status == LoopStatus::Active)?;
        if let Some(why) = self.inbox.ceiling() {
            l.last_error = Some(why.clone());
            self.schedule_next(&mut l);
            self.save_or_log(&mut l, LoopAction::Skipped).await;
            let mut entry = self.inbox.entry(&source(&l), &l.session_id, None, "skipped");
            entry.detail = Some(why);
            self.inbox.put(&source(&l), entry).await;
            return None;
        }
        l.fires += 1;
        l.last_fire_at = Some(schedule::stamp(Utc::now()));
        match self.start(&l).await {
            Ok((session, run, mark)) => {
                self.inbox.watch(&session, &run, mark, source(&l), false);
                l.last_session = Some(session);
                l.last_run = Some(run.clone());
                l.firing = true;
                // Its next time is set when this firing ends.
                l.next_fire_at = None;
                self.save_or_log(&mut l, LoopAction::Fired).await;
                Some((run, l.budget.max_seconds))
            }
            Err(e) => {
                let why = format!("the firing could not start: {e}");
                let mut entry = self.inbox.entry(&source(&l), &l.session_id, None, "failed");
                entry.detail = Some(why.clone());
                self.inbox.put(&source(&l), entry).await;
                self.failed(&mut l, why).await;
                None
            }
        }
    }

    /// A new session from the loop's, in a fresh worktree, its run, and
    /// its last event seq before the run.
    async fn start(&self, l: &Loop) -> Result<(swival_protocol::SessionId, RunId, u64), SessionError> {
        let base = self.sessions.base_dir(&l.session_id)?;
        let title: String = format!("loop {}: {}", l.loop_id, l.prompt).chars().take(120).collect();
        let params = SessionCreateParams {
            base_dir: base.display().to_string(),
            config: None,
            title: Some(title),
            trust: false,
            env: None,
            from: Some(SessionFrom { session_id: l.session_id.clone(), conversation: false }),
            worktree: true,
        };
        let created = self.sessions.create(params).await?;
        let mark = self.inbox.mark(&created.session_id);
        match self.sessions.start_run(&created.session_id, NewRun::from(l.prompt.clone()), None).await {
            Ok(run) => Ok((created.session_id, run, mark)),
            Err(e) => {
                let _ = self.sessions.discard_worktree_of(&created.session_id).await;
                Err(e)
            }
        }
    }

    /// Fold the end of firing `run` into loop `id`.
    async fn settle(&self, id: &str, run: &RunId, result: Result<RunResult, SessionError>) {
        let _edit = self.edit.lock().await;
        let Ok(Some(mut l)) = self.store.loop_(id) else { return };
        if l.last_run.as_ref() != Some(run) || !l.firing {
            return;
        }
        l.firing = false;
        let result = result.unwrap_or_else(|e| {
            tracing::warn!("the result of loop {id}'s run {run} cannot be read: {e}");
            crate::store::interrupted_result(run)
        });
        let timeline = self.sessions.report(run).ok().and_then(|r| r.timeline).unwrap_or_default();
        let tokens = crate::report::tokens_spent(&timeline, result.stats.completion_tokens).0;
        l.tokens_used += tokens;
        self.inbox.spend(tokens).await;
        let firing = l.last_session.clone().unwrap_or_else(|| l.session_id.clone());
        let outcome = match result.outcome {
            Outcome::Error | Outcome::Blocked => "failed",
            Outcome::Cancelled => "cancelled",
            Outcome::Interrupted => "interrupted",
            Outcome::Success | Outcome::Exhausted => "succeeded",
        };
        let files = self.inbox.ran(&source(&l), &firing, &result, outcome, result.error.clone()).await;
        match files {
            // A firing that changed nothing leaves no worktree or branch behind.
            Some(files) if files.is_empty() && firing != l.session_id => {
                if let Err(e) = self.sessions.discard_worktree_of(&firing).await {
                    tracing::warn!("the worktree of loop {id}'s firing {firing} was kept: {e}");
                }
            }
            // Its work waits to be applied; so many waiting stop the loop.
            _ => l.kept += 1,
        }
        match result.outcome {
            Outcome::Error | Outcome::Blocked => {
                let why = result.error.unwrap_or_else(|| "the run failed".into());
                self.failed(&mut l, why).await;
            }
            _ => {
                l.consecutive_failures = 0;
                l.last_error = None;
                self.schedule_next(&mut l);
                let action = if l.status == LoopStatus::Done { LoopAction::Done } else { LoopAction::Succeeded };
                self.save_or_log(&mut l, action).await;
            }
        }
        if let Some(why) = spent(&l).filter(|_| l.status == LoopStatus::Active) {
            l.status = LoopStatus::BudgetLimited;
            l.next_fire_at = None;
            l.last_error = Some(why);
            self.save_or_log(&mut l, LoopAction::BudgetLimited).await;
        }
    }

    /// A failed firing: counted, warned about at 3 in a row, cancelled at 6.
    async fn failed(&self, l: &mut Loop, why: String) {
        l.consecutive_failures += 1;
        l.last_error = Some(why.chars().take(500).collect());
        self.schedule_next(l);
        if l.consecutive_failures >= CANCEL_FAILURES && l.status == LoopStatus::Active {
            l.status = LoopStatus::Cancelled;
            l.next_fire_at = None;
            self.save_or_log(l, LoopAction::Failed).await;
            self.save_or_log(l, LoopAction::Cancelled).await;
            return;
        }
        self.save_or_log(l, LoopAction::Failed).await;
        if l.consecutive_failures == WARN_FAILURES {
            self.save_or_log(l, LoopAction::Warned).await;
        }
    }

    /// The loop's next time, counted from now (one catch-up, no burst).
    fn schedule_next(&self, l: &mut Loop) {
        if l.status != LoopStatus::Active {
            return;
        }
        let now = Utc::now();
        let when = When::parse(&l.schedule, Duration::ZERO, now - chrono::Duration::days(3650));
        let next = when.ok().and_then(|w| w.after(now, l.consecutive_failures, self.limits.backoff_base));
        match next {
            Some(t) => l.next_fire_at = Some(schedule::stamp(t)),
            None => {
                l.next_fire_at = None;
                l.status = LoopStatus::Done;
            }
        }
    }

    async fn save_or_log(&self, l: &mut Loop, action: LoopAction) {
        if let Err(e) = self.save(l, action).await {
            tracing::warn!("loop {} could not be stored: {e}", l.loop_id);
        }
    }
}

/// Firings of one loop whose work may wait in their worktrees before it
/// stops: a loop must not fill the disk with checkouts nobody applied.
const MAX_KEPT: u64 = 10;

/// Which budget of `l` is spent, in words.
fn spent(l: &Loop) -> Option<String> {
    if l.kept >= MAX_KEPT {
        return Some(format!(
            "{MAX_KEPT} of its firings' changes wait in their worktrees; apply them (`swivalctl inbox` lists them) or \
             prune their sessions, then add the loop again"
        ));
    }
    if l.budget.max_runs.is_some_and(|m| l.fires >= m) {
        return Some(format!("it fired the most times it may ({})", l.fires));
    }
    let budget = l.budget.token_budget?;
    (l.tokens_used >= budget).then(|| format!("its token budget is spent ({} of {budget})", l.tokens_used))
}

/// What the inbox says a loop's entries are about.
fn source(l: &Loop) -> crate::inbox::Source {
    crate::inbox::Source {
        trigger: swival_protocol::InboxTrigger::Loop,
        id: Some(l.loop_id.clone()),
        title: l.prompt.clone(),
        webhook: l.webhook.clone(),
        files: Vec::new(),
        changed_by: Vec::new(),
    }
}

/// Wait until `t` by the wall clock; false when `stop` came first.
async fn wait_until(t: chrono::DateTime<Utc>, stop: &CancellationToken) -> bool {
    loop {
        let left = (t - Utc::now()).to_std().unwrap_or(Duration::ZERO);
        if left.is_zero() {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep(left.min(CLOCK_LOOK)) => {}
            _ = stop.cancelled() => return false,
        }
    }
}
