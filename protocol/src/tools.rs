//! What a tool does, as the daemon declares it with the tool.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a tool call does. The daemon declares it once with each tool (its
/// tool registry) and sends it with every `tool_call` event, so a client
/// draws a call (an editor's icon) without knowing tool names, and the
/// daemon's loop guards read the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files or lists a directory (`read_file`, `read_multiple_files`,
    /// `outline`).
    Read,
    /// Searches the tree (`list_files`, `grep`).
    Search,
    /// Creates, overwrites or edits a file (`write_file`, `edit_file`).
    Edit,
    /// Renames a file (`write_file` with `move_from`).
    Move,
    /// Deletes a file, to the trash (`delete_file`).
    Delete,
    /// Runs a program (`run_command`).
    Execute,
    /// Fetches a URL (`fetch_url`).
    Fetch,
    /// The model's scratchpad (`think`).
    Think,
    /// The model's checklist (`todo`).
    Plan,
    /// A tool of an MCP server (`mcp__<server>__<tool>`).
    Mcp,
    /// A name the daemon offers no tool by (the call is refused), or a
    /// call an older swivald stored without a kind.
    #[default]
    Other,
}

impl ToolKind {
    /// Whether a call of this kind may change the project: write, move or
    /// delete a file, or run a program.
    pub fn changes_files(self) -> bool {
        match self {
            ToolKind::Edit | ToolKind::Move | ToolKind::Delete | ToolKind::Execute => true,
            ToolKind::Read
            | ToolKind::Search
            | ToolKind::Fetch
            | ToolKind::Think
            | ToolKind::Plan
            | ToolKind::Mcp
            | ToolKind::Other => false,
        }
    }

    /// Whether the tool only keeps the model's own notes (`think`, `todo`):
    /// the loop guards never refuse a repeat of it.
    pub fn is_bookkeeping(self) -> bool {
        matches!(self, ToolKind::Think | ToolKind::Plan)
    }
}

/// One tool a session offers the model (`session/tools`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolInfo {
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    pub kind: ToolKind,
    /// Its description, as the model reads it (MCP tools: empty until the
    /// server has listed them).
    pub description: String,
}

/// `session/tools` result: the tools a session's next run offers, in the
/// order the model sees them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionToolsResult {
    /// The tools.
    pub tools: Vec<ToolInfo>,
}
