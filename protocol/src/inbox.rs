//! The inbox: what background work did while the user was away — each
//! goal's end (complete, budget spent, stuck), each loop firing, each
//! detached run, and each background run that waits for an approval —
//! newest first, kept as sessions are. It is also the ledger of
//! background runs: trigger, start, end, outcome, cost.

use crate::ids::{RunId, SessionId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What started the work an entry is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InboxTrigger {
    /// A session's goal.
    Goal,
    /// A loop's firing.
    Loop,
    /// `swivalctl run --detach` (`run/start` with `inbox: true`).
    Detached,
}

/// One entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InboxEntry {
    /// Its number, rising.
    pub seq: u64,
    /// When it was written (RFC 3339).
    pub created_at: String,
    /// What started the work.
    pub trigger: InboxTrigger,
    /// The goal or loop id, for those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// The session the work happened in (a loop firing's own session).
    pub session_id: SessionId,
    /// The run, when the entry is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// What was asked: the objective, the loop's prompt, the task.
    pub title: String,
    /// How it ended (`complete`, `budget_limited`, `stuck`, `succeeded`,
    /// `failed`, `cancelled`, a run's outcome), or `waiting_approval`.
    pub outcome: String,
    /// More: the blocker, the error, the command waiting, the answer's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Files the run changed (paths in its project).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The runs whose changes `files` are (a goal's several; `run/changes`
    /// shows each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_by: Vec<RunId>,
    /// Whether the session works in a worktree (its changes come in with
    /// `swivalctl apply`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub worktree: bool,
    /// When the run started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// Tokens it used (the server's counts, else estimates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// What it cost by `model_prices`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The approval waiting (`waiting_approval`): answer it with
    /// `run/approve` (`swivalctl approve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
}

/// `inbox/list` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InboxListParams {
    /// Only entries after this seq (what a client has not shown yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
    /// At most this many, newest first (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

/// `inbox/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InboxListResult {
    /// The entries, newest first.
    pub entries: Vec<InboxEntry>,
    /// The highest seq written so far (0: none), to ask `after_seq` next.
    pub last_seq: u64,
}
