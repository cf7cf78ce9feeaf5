//! Goals (Swival's `/goal`), owned by the daemon: an objective a session
//! keeps working on, run after run, until the model calls `complete_goal`,
//! a budget is spent, the user pauses it, or it is stuck and waits for
//! the user. Its state is stored with the session, so it survives the
//! terminal closing and the daemon restarting.

use crate::ids::{RunId, SessionId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a goal stands (Swival's statuses, and `stuck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    /// The daemon keeps starting runs for it.
    Active,
    /// The user paused it (`goal/pause`, or by cancelling its run).
    Paused,
    /// One of its budgets is spent (tokens, wall time or runs).
    BudgetLimited,
    /// The model called `complete_goal`.
    Complete,
    /// Its last run ended without progress (an answer with no tool call,
    /// the loop guards' verdict, a failure): it waits for the user
    /// (`goal/resume`, or a run the user starts in the session).
    Stuck,
}

impl GoalStatus {
    /// The word shown to people (the wire name).
    pub fn as_str(self) -> &'static str {
        match self {
            GoalStatus::Active => "active",
            GoalStatus::Paused => "paused",
            GoalStatus::BudgetLimited => "budget_limited",
            GoalStatus::Complete => "complete",
            GoalStatus::Stuck => "stuck",
        }
    }
}

/// A session's goal as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Goal {
    /// Its id (`g_…`); a replaced goal gets a new one.
    pub goal_id: String,
    /// The session it belongs to.
    pub session_id: SessionId,
    /// What the user asked for, verbatim.
    pub objective: String,
    /// Where it stands.
    pub status: GoalStatus,
    /// Most tokens its runs may use (prompt and completion), if bounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// Most runs it may take.
    pub max_runs: u64,
    /// Most seconds its runs may take in all, if bounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_seconds: Option<u64>,
    /// Tokens its runs used so far.
    pub tokens_used: u64,
    /// Whether `tokens_used` is partly estimated (the server did not count).
    #[serde(default)]
    pub usage_estimated: bool,
    /// Seconds its runs took so far.
    pub time_used_seconds: f64,
    /// Runs started for it so far.
    pub runs: u64,
    /// When it was set (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
    /// What the model said at the end of its last run (its next step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_next_step: Option<String>,
    /// Why it is stuck, paused or limited, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_blocker: Option<String>,
    /// The run working on it now, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_run: Option<RunId>,
    /// The last run that worked on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<RunId>,
    /// Where each of its inbox entries is also posted (JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// Whether the project's check passed the last time one of its runs
    /// ran it (`complete_goal` stands only when it did, or none ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_check: Option<bool>,
    /// Files its runs changed (at most 200).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Its runs that changed files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_by: Vec<RunId>,
}

/// What happened to a goal (Swival's `goal_event` actions, and swivald's
/// `continued`, `stuck` and `restarted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GoalAction {
    /// A goal was set.
    Created,
    /// A goal was set in place of another.
    Replaced,
    /// The user paused it.
    Paused,
    /// The user resumed it.
    Resumed,
    /// A budget is spent.
    BudgetLimited,
    /// The model called `complete_goal`.
    Completed,
    /// The user removed it.
    Cleared,
    /// A run was started for it (its `run` is in the event's envelope).
    Continued,
    /// A run of it ended and its counters were updated; it stays as it was.
    RunEnded,
    /// Its last run made no progress; it waits for the user.
    Stuck,
    /// The daemon restarted and takes it up again where it stopped.
    Restarted,
}

/// `goal/set` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GoalSetParams {
    /// The session the goal belongs to.
    pub session_id: SessionId,
    /// What to achieve, as the user wrote it (at most 4000 characters).
    pub objective: String,
    /// Replace a goal that is not complete (Swival's `/goal replace`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replace: bool,
    /// Most tokens its runs may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// Most runs it may take (default: the daemon's `goal_max_runs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runs: Option<u64>,
    /// Most seconds its runs may take in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_seconds: Option<u64>,
    /// Post each of its inbox entries (JSON) to this http(s) URL, through
    /// the same address checks as `fetch_url` (the session's
    /// `fetch_allow_networks` apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
}

impl GoalSetParams {
    /// Set `objective` as `session`'s goal (replacing one not complete
    /// when `replace`), with the daemon's default budgets.
    pub fn new(session_id: SessionId, objective: &str, replace: bool) -> GoalSetParams {
        GoalSetParams {
            session_id,
            objective: objective.to_owned(),
            replace,
            token_budget: None,
            max_runs: None,
            max_seconds: None,
            webhook: None,
        }
    }
}

/// A session's goal, if it has one (`goal/get`, `goal/pause`,
/// `goal/resume`, `goal/set`; `goal/clear`: the goal removed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GoalResult {
    /// The goal, after the call.
    pub goal: Option<Goal>,
}

/// `goal/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GoalListResult {
    /// Every stored goal, newest first.
    pub goals: Vec<Goal>,
}
