//! Swival's notes in a project's `.swival/`: memory (`memory/add`, the
//! report's `stats.memory`) and the continue-here file (`continue/clear`).

use crate::SessionId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the memory injected into a run's system prompt came to (Swival's
/// report `stats.memory`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryStats {
    /// Entries in MEMORY.md (0 with `memory_full`).
    pub total_entries: u64,
    /// Entries marked `<!-- bootstrap -->`.
    pub bootstrap_entries: u64,
    /// The other entries, ranked against the task.
    pub retrievable_entries: u64,
    /// Tokens of bootstrap entries injected (with `memory_full`: of the whole text).
    pub bootstrap_tokens: u64,
    /// Tokens of retrieved entries injected.
    pub retrieval_tokens: u64,
    /// Ids (`m0`, `m1`…) of the entries retrieved.
    pub retrieved_ids: Vec<String>,
    /// `budgeted` or `full`.
    pub mode: String,
}

/// `memory/add` params: a note appended to a project's MEMORY.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryAddParams {
    /// The project of this session...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// ...or this base directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
    /// The note (written as a bullet).
    pub text: String,
    /// A heading for a new entry; without it the note joins the last entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
}

/// `memory/add` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryAddResult {
    /// The file written, absolute.
    pub path: String,
    /// The text appended.
    pub appended: String,
}

/// `continue/clear` params: the project whose continue file to remove.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContinueClearParams {
    /// The project of this session...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// ...or this base directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
}

/// `continue/clear` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContinueClearResult {
    /// Whether there was a continue file.
    pub removed: bool,
}

/// `continue/save` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContinueSaveResult {
    /// Whether a continue file was written (not when the session has no
    /// conversation, or `no_continue` is set).
    pub written: bool,
}
