//! What a run changed in its project (`run/changes`) and putting it back
//! (`run/revert`). A run's changes are a *change set*: every file it
//! created, modified, deleted or renamed, each with its content before and
//! after kept in the daemon's snapshot store. An undo is a change set too
//! (its id starts with `u_`), so an undo can be undone.

use crate::ids::{RunId, SessionId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which change set `run/changes` or `run/revert` is about: a run (or an
/// undo) by id, or a session's last run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangesRef {
    /// A run id, or an undo's id (`u_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Without `run_id`: this session's last finished run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
}

/// `run/changes` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunChangesParams {
    /// The change set.
    #[serde(flatten)]
    pub which: ChangesRef,
    /// Leave out the unified diffs (only the list).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_diff: bool,
}

/// What made a change set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeSetKind {
    /// A run's tools and commands.
    Run,
    /// `run/revert` putting back another set.
    Revert,
}

/// How one file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileChangeKind {
    /// It did not exist before.
    Created,
    /// Its content, type or mode changed.
    Modified,
    /// It no longer exists.
    Deleted,
    /// It moved from `old_path` (perhaps changed too).
    Renamed,
}

/// A tool call that changed a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangeSource {
    /// The tool (`write_file`, `run_command`, an MCP tool…), or `revert`.
    pub tool: String,
    /// The tool call's id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub call_id: String,
    /// The turn it was called in.
    pub turn: u64,
    /// What it was called with, short: a path or a command line.
    pub label: String,
}

/// One file a change set changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangedFile {
    /// Relative to the project's root.
    pub path: String,
    /// How it changed.
    pub kind: FileChangeKind,
    /// Where a renamed file was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// The calls that changed it, in order (empty when unknown).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by: Vec<ChangeSource>,
    /// Whether `run/revert` can put it back.
    pub restorable: bool,
    /// Why not, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_restorable: Option<String>,
    /// Its content is binary (no text diff).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    /// Size before, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_before: Option<u64>,
    /// Size after, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_after: Option<u64>,
    /// Unix mode before (`0o100644`, `0o120000` for a symlink).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_before: Option<u32>,
    /// Unix mode after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_after: Option<u32>,
    /// A unified diff of a text file (absent with `no_diff`, for binary
    /// files, and past the size limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Another session's command ran while this one's did and also
    /// changed it: which one did is not known, so undo leaves it unless
    /// forced.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
}

/// `run/changes` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunChanges {
    /// The change set's id: the run's id, or the undo's (`u_…`).
    pub id: String,
    /// The run it belongs to (for an undo: the run of the set it reverted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// The session.
    pub session_id: SessionId,
    /// What made it.
    pub kind: ChangeSetKind,
    /// The set an undo reverted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverts: Option<String>,
    /// The undo that reverted this set, if one did (and was not undone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverted_by: Option<String>,
    /// The project's root: paths are relative to it.
    pub root: String,
    /// The files, by path.
    pub files: Vec<ChangedFile>,
}

/// `run/revert` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunRevertParams {
    /// The change set to put back.
    #[serde(flatten)]
    pub which: ChangesRef,
    /// Revert the files that have not changed since and leave the
    /// conflicting ones as they are.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

/// A file `run/revert` would not put back: it changed after the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RevertConflict {
    /// Relative to the project's root.
    pub path: String,
    /// What changed it since, as far as the daemon knows.
    pub cause: String,
    /// The change set that changed it since, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// `run/revert` result. A refusal because of conflicts is a result
/// (`applied: false`), not an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunRevertResult {
    /// The set reverted.
    pub id: String,
    /// Whether files were written.
    pub applied: bool,
    /// The undo's own change set (revert it to redo), when applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revert_id: Option<String>,
    /// The files put back.
    pub reverted: Vec<String>,
    /// Files changed since the run: left as they are.
    pub conflicts: Vec<RevertConflict>,
    /// Files that could not be put back (over the snapshot size limit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_restorable: Vec<String>,
    /// Files whose writing back failed, each with why (what stands on its
    /// path now, what the disk said): left as they are, the rest put back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<RevertConflict>,
}

/// `snapshots/gc` result: what collecting the snapshot stores freed. A
/// store keeps what the change sets still stored name (so `diff` and
/// `undo` of every stored run work); a store no stored set names is
/// removed whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SnapshotGcResult {
    /// Project stores looked at.
    pub stores: u64,
    /// Stores removed whole: no stored change set names them.
    pub stores_removed: u64,
    /// Objects deleted from the stores kept.
    pub objects_removed: u64,
    /// The stores' disk use before, in bytes.
    pub bytes_before: u64,
    /// The stores' disk use after, in bytes.
    pub bytes_after: u64,
    /// Project roots left for the next collection: a run was recording a
    /// call in them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy: Vec<String>,
}
