//! What the loop guards did, as the `intervention` event says it: which
//! guard stepped in, and the repeat the storm breaker refused.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which loop guard stepped in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InterventionKind {
    /// Swival's guardrail: the same call failed twice; the model is told what to do instead.
    Nudge,
    /// Swival's guardrail, second level: the model is told to stop repeating.
    Stop,
    /// The storm breaker refused an identical repeat without running it.
    Storm,
    /// The same successful read again.
    Reread,
    /// After a change that succeeded, only reads: the model is told to answer.
    Finish,
    /// Repeats were refused too often: one last call without tools.
    Stuck,
    /// A reply kept repeating the same text while it streamed (its text,
    /// or the arguments of the call named in `tool`): the stream was cut
    /// before the repetition went on, and the model told so.
    Runaway,
    /// A reply held more tool calls than `max_calls_per_reply`: the rest
    /// were answered with an error, not run.
    CallCap,
    /// A write or edit that changed nothing: the file was left as it was,
    /// or put back to a content it had earlier in the run, or the edit
    /// could change nothing (`old_string` equal to `new_string`). Counts
    /// toward `stuck`, and the same call again is refused.
    Unchanged,
}

impl InterventionKind {
    /// The name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            InterventionKind::Nudge => "nudge",
            InterventionKind::Stop => "stop",
            InterventionKind::Storm => "storm",
            InterventionKind::Reread => "reread",
            InterventionKind::Finish => "finish",
            InterventionKind::Stuck => "stuck",
            InterventionKind::Runaway => "runaway",
            InterventionKind::CallCap => "call_cap",
            InterventionKind::Unchanged => "unchanged",
        }
    }
}

/// A call the storm breaker refused: how often it came, and which it was.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Repeat {
    /// Identical calls in the breaker's window, this one included.
    pub count: u64,
    /// The first 12 hex digits of the SHA-256 of the call (the tool's name
    /// and its arguments, canonical).
    pub args_hash: String,
}
