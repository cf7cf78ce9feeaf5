//! Subagents as the protocol shows them: a subagent's session names the
//! run that spawned it.

use crate::session::{RunId, SessionId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a subagent's session comes from: the run whose `spawn_subagent`
/// call made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentOf {
    /// The parent session.
    pub session_id: SessionId,
    /// The parent's run that spawned it.
    pub run_id: RunId,
    /// Its id in that run (`sub_1`), as the model knows it.
    pub subagent_id: String,
}
