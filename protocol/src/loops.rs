//! Loops (Swival's `/loop`), owned by the daemon: a prompt a session runs
//! on a schedule (an interval, a cron expression, or once at a time), each
//! firing a run of its own in a fresh git worktree of the project, so a
//! loop never changes the user's checkout; its changes wait for
//! `swivalctl diff` and `swivalctl apply`.

use crate::ids::{RunId, SessionId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a loop stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoopStatus {
    /// It fires on its schedule.
    Active,
    /// Removed by the user, or cancelled after 6 failed firings in a row.
    Cancelled,
    /// A one-shot loop (`at`) that has fired.
    Done,
    /// One of its budgets is spent (firings, tokens).
    BudgetLimited,
}

impl LoopStatus {
    /// The word shown to people (the wire name).
    pub fn as_str(self) -> &'static str {
        match self {
            LoopStatus::Active => "active",
            LoopStatus::Cancelled => "cancelled",
            LoopStatus::Done => "done",
            LoopStatus::BudgetLimited => "budget_limited",
        }
    }
}

/// When a loop fires: exactly one of the three.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Schedule {
    /// Every this many seconds (Swival's `/loop 30m …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_s: Option<u64>,
    /// A cron expression (five fields, or six with seconds), in the
    /// daemon's local time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// Once, at this time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// A loop as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Loop {
    /// Its id (`l_…`).
    pub loop_id: String,
    /// The session it belongs to: each firing is a new session started
    /// from it (its settings, not its conversation).
    pub session_id: SessionId,
    /// What each firing runs.
    pub prompt: String,
    /// When it fires.
    pub schedule: Schedule,
    /// Where it stands.
    pub status: LoopStatus,
    /// When it was added (RFC 3339).
    pub created_at: String,
    /// When it fires next (RFC 3339; absent once it no longer fires).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_fire_at: Option<String>,
    /// When it last fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fire_at: Option<String>,
    /// Firings so far.
    pub fires: u64,
    /// Failed firings in a row (a warning at 3, cancelled at 6).
    pub consecutive_failures: u64,
    /// Why the last firing failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The session of the firing in flight, or of the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_session: Option<SessionId>,
    /// The run of the firing in flight, or of the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<RunId>,
    /// Whether `last_run` is still in flight.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub firing: bool,
    /// Its budgets.
    #[serde(default)]
    pub budget: LoopBudget,
    /// Tokens its firings used so far.
    #[serde(default)]
    pub tokens_used: u64,
    /// Firings whose changes were kept in their worktrees (at 10 it stops).
    #[serde(default)]
    pub kept: u64,
    /// Where each of its inbox entries is also posted (JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
}

/// A loop's budgets; each absent one is unbounded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LoopBudget {
    /// Most firings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runs: Option<u64>,
    /// Most tokens, all firings together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// Most seconds one firing may run; past it the firing is cancelled
    /// and counts as failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_seconds: Option<u64>,
}

/// What happened to a loop (a `loop` event of its session).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoopAction {
    /// It was added.
    Added,
    /// A firing started (its session and run are in the loop).
    Fired,
    /// A firing ended well.
    Succeeded,
    /// A firing failed (`last_error` says why).
    Failed,
    /// Three firings in a row failed: it is cancelled at six.
    Warned,
    /// It no longer fires: removed, or six firings in a row failed.
    Cancelled,
    /// A one-shot loop fired and is done.
    Done,
    /// One of its budgets is spent: it fires no more.
    BudgetLimited,
    /// A firing was skipped: the daemon's daily token ceiling is reached.
    Skipped,
}

/// `loop/add` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopAddParams {
    /// The session the loop belongs to.
    pub session_id: SessionId,
    /// What each firing runs.
    pub prompt: String,
    /// When it fires.
    pub schedule: Schedule,
    /// Its budgets.
    #[serde(default)]
    pub budget: LoopBudget,
    /// Post each of its inbox entries (JSON) to this http(s) URL, through
    /// the same address checks as `fetch_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
}

/// One loop (`loop/add`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopResult {
    /// The loop.
    #[serde(rename = "loop")]
    pub loop_: Loop,
}

/// `loop/list` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopListParams {
    /// Only this session's loops (default: every session's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// Also those that no longer fire.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
}

/// `loop/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopListResult {
    /// The loops, oldest first.
    pub loops: Vec<Loop>,
}

/// `loop/remove` params: one loop, or every active loop (of a session,
/// or of every session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopRemoveParams {
    /// Only this session's loops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// The loop (absent with `all`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_id: Option<String>,
    /// Every active loop (of the session, when named).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
}

/// `loop/remove` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopRemoveResult {
    /// The loops cancelled (a firing in flight finishes).
    pub removed: Vec<String>,
}
