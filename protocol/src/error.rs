//! Application error codes. Standard JSON-RPC codes (-32700 parse error,
//! -32600 invalid request, -32601 method not found, -32602 invalid params,
//! -32603 internal error) are used as the JSON-RPC 2.0 spec defines them;
//! the codes below are ours, in the implementation-defined server range.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An application error code with a fixed meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No session has that id (it was never created, or it was closed).
    SessionNotFound,
    /// No run has that id.
    RunNotFound,
    /// The session already has a run (or a compaction) in flight; wait
    /// for it or cancel it.
    SessionBusy,
    /// A daemon-wide limit is reached (connections, subscriptions, queue).
    Overloaded,
    /// The configuration is invalid; the message names the key and file.
    ConfigInvalid,
    /// A policy stage (hook, filter, sandbox) refused the request.
    BlockedByPolicy,
    /// The message exceeds the daemon's size limit.
    MessageTooLarge,
    /// The client asked for a protocol version this daemon does not speak.
    UnsupportedProtocol,
    /// The daemon is shutting down and takes no new work.
    ShuttingDown,
    /// The project's config runs programs or widens the sandbox and this
    /// exact content has not been trusted by the user.
    UntrustedProject,
    /// The run's changes were not recorded, or their snapshot is gone.
    NoSnapshot,
}

/// The `data` of an application error: which one, and for a config that
/// names something that cannot run, the exit code Swival uses (1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorData {
    /// The application error.
    pub kind: ErrorCode,
    /// The exit code a CLI should use, when it is not the usual one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

impl ErrorCode {
    /// Every code, for documentation and the schema.
    pub const ALL: [ErrorCode; 11] = [
        ErrorCode::SessionNotFound,
        ErrorCode::RunNotFound,
        ErrorCode::SessionBusy,
        ErrorCode::Overloaded,
        ErrorCode::ConfigInvalid,
        ErrorCode::BlockedByPolicy,
        ErrorCode::MessageTooLarge,
        ErrorCode::UnsupportedProtocol,
        ErrorCode::ShuttingDown,
        ErrorCode::UntrustedProject,
        ErrorCode::NoSnapshot,
    ];

    /// The integer sent in the JSON-RPC `error.code` field.
    pub const fn code(self) -> i32 {
        match self {
            ErrorCode::SessionNotFound => -32001,
            ErrorCode::RunNotFound => -32002,
            ErrorCode::SessionBusy => -32003,
            ErrorCode::Overloaded => -32004,
            ErrorCode::ConfigInvalid => -32005,
            ErrorCode::BlockedByPolicy => -32006,
            ErrorCode::MessageTooLarge => -32007,
            ErrorCode::UnsupportedProtocol => -32008,
            ErrorCode::ShuttingDown => -32009,
            ErrorCode::UntrustedProject => -32010,
            ErrorCode::NoSnapshot => -32011,
        }
    }

    /// The code for an integer, if it is one of ours.
    pub fn from_code(code: i32) -> Option<ErrorCode> {
        Self::ALL.into_iter().find(|c| c.code() == code)
    }

    /// What the code means and what the caller should do about it.
    pub const fn meaning(self) -> &'static str {
        match self {
            ErrorCode::SessionNotFound => "No session has that id; list sessions with session/list.",
            ErrorCode::RunNotFound => "No run has that id; runs of a session are in session/get.",
            ErrorCode::SessionBusy => {
                "The session has a run or a compaction in flight; wait for it (run/wait, session/compact) or cancel it (run/cancel)."
            }
            ErrorCode::Overloaded => "A daemon-wide limit is reached; retry later or raise the limit in swivald.toml.",
            ErrorCode::ConfigInvalid => "The configuration is invalid; the message names the key and the file to fix.",
            ErrorCode::BlockedByPolicy => "A policy stage refused the request; the message gives its reason.",
            ErrorCode::MessageTooLarge => {
                "The message exceeds max_message_size; send less or raise the limit in swivald.toml."
            }
            ErrorCode::UnsupportedProtocol => {
                "The daemon speaks an older protocol; upgrade swivald or use an older client."
            }
            ErrorCode::ShuttingDown => "The daemon is shutting down; reconnect once it has restarted.",
            ErrorCode::UntrustedProject => {
                "The project's swival.toml runs programs, widens the sandbox or redirects the provider and is not trusted; review it, then run `swivalctl trust DIR` (project/trust)."
            }
            ErrorCode::NoSnapshot => {
                "The run's file changes were not recorded (git missing, snapshots off) or their snapshot was removed; nothing was changed."
            }
        }
    }
}
