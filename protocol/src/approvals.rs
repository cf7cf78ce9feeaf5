//! What clients answer to the events that wait for them: `run/approve`
//! for an `approval_requested`, and how each question was settled.

use crate::ids::SessionId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who settled an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedBy {
    /// A client's `run/approve`.
    Client,
    /// Nobody answered in time: rejected.
    Timeout,
    /// The run was cancelled: rejected.
    Cancelled,
}

impl ResolvedBy {
    /// The name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            ResolvedBy::Client => "client",
            ResolvedBy::Timeout => "timeout",
            ResolvedBy::Cancelled => "cancelled",
        }
    }
}

/// A user's answer to an [`crate::EventKind::ApprovalRequested`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this command.
    AllowOnce,
    /// Run it, and the same command again for the rest of the session
    /// (the same words; a path inside the project may differ), except one
    /// that runs a file changed after this answer; for a question marked
    /// `every_time`, only this command.
    AllowAlways,
    /// Do not run it.
    RejectOnce,
    /// Do not run it, nor any command of its bucket for the rest of the session.
    RejectAlways,
}

impl ApprovalDecision {
    /// The name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            ApprovalDecision::AllowOnce => "allow_once",
            ApprovalDecision::AllowAlways => "allow_always",
            ApprovalDecision::RejectOnce => "reject_once",
            ApprovalDecision::RejectAlways => "reject_always",
        }
    }

    /// Whether the command runs.
    pub fn allows(self) -> bool {
        matches!(self, ApprovalDecision::AllowOnce | ApprovalDecision::AllowAlways)
    }
}

/// `run/approve` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApproveParams {
    /// The session of the run.
    pub session_id: SessionId,
    /// From the `approval_requested` event.
    pub approval_id: String,
    /// The answer.
    pub decision: ApprovalDecision,
}

/// `run/approve` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApproveResult {
    /// False when nothing waits for that approval any more (answered by
    /// another client, timed out, or the run ended).
    pub accepted: bool,
}
