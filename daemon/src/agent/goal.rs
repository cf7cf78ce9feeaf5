//! A run that works on its session's goal (`goal/`'s driver starts it):
//! the model is offered `complete_goal`, a call of it ends the run once
//! its turn is done, and when the goal's token budget runs out during the
//! run the model is told to wrap up and every call that would change
//! something or start work is refused (Swival's budget gate), judged by
//! the registry's kind of the call, not by a list of names.

use super::Run;
use crate::message::Message;
use crate::store::StoreError;
use crate::tools::registry;
use swival_protocol::{Goal, GoalStatus, Outcome, ReportGoal, RunStats, TimelineEntry, ToolKind};

/// What a goal's run is told of its goal: the goal as the run starts.
#[derive(Debug, Clone)]
pub struct GoalRun {
    /// The goal before this run.
    pub goal: Box<Goal>,
}

/// The answer of a run whose model called `complete_goal` (Swival's).
pub const COMPLETED: &str = "Goal completed.";

/// What a refused call reads once the budget is spent (Swival's words).
const GATED: &str =
    "error: goal token budget is exhausted; only read-only wrap-up tools and complete_goal are available";

/// A goal's run's own state.
#[derive(Debug, Default)]
pub(super) struct InRun {
    /// The model called `complete_goal`.
    pub done: bool,
    /// The budget ran out: wrap up, refuse work.
    pub wrapping_up: bool,
}

/// `complete_goal`'s schema (Swival's: no arguments).
pub(super) fn schema() -> serde_json::Value {
    serde_json::json!({"type": "function", "function": {
        "name": registry::COMPLETE_GOAL,
        "description": "Mark the active goal as complete. Call it only after an audit that maps every explicit requirement of the objective to real evidence in the workspace (files, command output). If you are blocked or need the user, answer in text instead.",
        "parameters": {"type": "object", "properties": {}}
    }})
}

/// Whether a call of `kind` may run once the budget is spent: reading,
/// searching, fetching and the model's own notes may.
fn allowed_when_spent(kind: ToolKind) -> bool {
    matches!(kind, ToolKind::Read | ToolKind::Search | ToolKind::Fetch | ToolKind::Think | ToolKind::Plan)
}

impl Run<'_> {
    /// Tokens this run used so far.
    fn tokens_used(&self) -> u64 {
        crate::report::tokens_spent(self.record.timeline(), self.record.stats.completion_tokens).0
    }

    /// After a provider call: whether the goal's budget ran out now (the
    /// run then wraps up).
    pub(super) fn goal_spent_now(&mut self) -> bool {
        let Some(goal) = self.ctx.goal else { return false };
        let Some(budget) = goal.goal.token_budget else { return false };
        if self.goal.wrapping_up || goal.goal.tokens_used + self.tokens_used() < budget {
            return false;
        }
        self.goal.wrapping_up = true;
        true
    }

    /// Tell the model the budget is spent (after the turn's tool results).
    pub(super) fn goal_wrap_up(&mut self) -> Result<(), StoreError> {
        let Some(goal) = self.ctx.goal else { return Ok(()) };
        let used = goal.goal.tokens_used + self.tokens_used();
        let budget = goal.goal.token_budget.unwrap_or(used);
        let words = format!(
            "[goal budget limit]\nThe goal's token budget is spent ({used} of {budget} tokens). Start no new work: \
             sum up what was done, what is left and what blocks it.\n\nObjective: {}\n\nYou may still read, search, \
             fetch and keep notes, and call `complete_goal` if the objective is truly met. Writing, editing, \
             deleting, commands, subagents and MCP tools are refused.",
            goal.goal.objective
        );
        self.conversation.push(Message::synthetic(words))
    }

    /// The refusal of a call once the budget is spent, if this one is refused.
    pub(super) fn goal_gate(&self, call: &crate::tools::parsed::ParsedCall) -> Option<&'static str> {
        let refused = self.goal.wrapping_up && call.name != registry::COMPLETE_GOAL && !allowed_when_spent(call.kind);
        refused.then_some(GATED)
    }

    /// `complete_goal`: ends the run once its turn is done.
    pub(super) fn complete_goal(&mut self) -> crate::toolcall::ToolOutcome {
        self.goal.done = true;
        crate::toolcall::ToolOutcome::ok(r#"{"status": "complete"}"#.to_owned())
    }
}

/// Whether a goal's run that ended so completed its goal: it ended on
/// `complete_goal` (its answer is [`COMPLETED`]), the reviewer (when one
/// ran) accepted it last, and the project's check passed when it last ran
/// — in this run, else in an earlier one (`prior`). A call turned down, or
/// one made after a failed check with nothing changed since, does not.
pub fn completes(
    outcome: Outcome,
    answer: Option<&str>,
    timeline: &[TimelineEntry],
    stats: &RunStats,
    prior: Option<bool>,
) -> bool {
    let called = stats.tool_calls_by_name.get(registry::COMPLETE_GOAL).is_some_and(|c| c.succeeded > 0);
    let reviewed = timeline.iter().rev().find_map(|e| match e {
        TimelineEntry::Review { exit_code, .. } => Some(*exit_code == Some(0)),
        _ => None,
    });
    let checked = last_check(timeline).or(prior);
    called
        && checked != Some(false)
        && reviewed != Some(false)
        && outcome == Outcome::Success
        && answer == Some(COMPLETED)
}

/// Whether the project's check passed the last time it ran in `timeline`.
pub fn last_check(timeline: &[TimelineEntry]) -> Option<bool> {
    timeline.iter().rev().find_map(|e| match e {
        TimelineEntry::Verify { passed, .. } => Some(*passed),
        _ => None,
    })
}

/// Swival's report `goal` of a goal's run that ended so.
pub(super) fn report(
    run: &GoalRun,
    run_id: &swival_protocol::RunId,
    outcome: Outcome,
    answer: Option<&str>,
    record: &crate::report::RunRecord,
) -> ReportGoal {
    let completed = completes(outcome, answer, record.timeline(), &record.stats, run.goal.last_check);
    let mut current = run.goal.clone();
    current.tokens_used += crate::report::tokens_spent(record.timeline(), record.stats.completion_tokens).0;
    current.runs += 1;
    current.last_run = Some(run_id.clone());
    current.current_run = None;
    if completed {
        current.status = GoalStatus::Complete;
    }
    ReportGoal {
        created_count: u64::from(run.goal.runs == 0),
        completed_count: u64::from(completed),
        current: Some(current),
    }
}
