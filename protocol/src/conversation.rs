//! A stored conversation as `session/get` shows it, typed by role.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One message of a stored conversation, as `session/get` shows it: an
/// OpenAI chat message whose role says which fields it has. The
/// daemon's own marks are fields (`synthetic`); what it keeps only for
/// itself is left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ConversationItem {
    /// The system prompt.
    System {
        /// Its text.
        content: String,
    },
    /// The user's words, or the daemon's written for it.
    User {
        /// Its text.
        content: String,
        /// Written by the daemon (a nudge, a file the task named, a
        /// note), not by the user.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        synthetic: bool,
    },
    /// The model's turn: its text, its tool calls, or both.
    Assistant {
        /// Its text; `None` for a turn that only calls tools.
        content: Option<String>,
        /// The tools it calls, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallItem>,
        /// Written by the daemon (a summary standing for collapsed turns).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        synthetic: bool,
    },
    /// A tool call's result.
    Tool {
        /// The call it answers.
        tool_call_id: String,
        /// What the model read.
        content: String,
    },
}

/// A tool call of an assistant turn, in the chat API's form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallItem {
    /// The model's id for it.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The tool and its arguments.
    pub function: FunctionCall,
}

/// The tool a call names and its arguments, as the model sent them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments, JSON text as sent.
    pub arguments: String,
}
