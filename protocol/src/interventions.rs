//! What the loop's nudges and guards did, as the `intervention` event
//! says it: which one stepped in, and the repeat the storm breaker
//! refused. Every kind is one entry of the daemon's nudge table
//! (`daemon/src/agent/nudge/`), and one name `disable_nudges` takes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which nudge or loop guard stepped in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InterventionKind {
    /// Swival's guardrail: the same call failed twice with the same error;
    /// the model is told what to do instead.
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
    /// Swival's nudge after an empty reply.
    Empty,
    /// Swival's nudge after a reply cut off by the output limit.
    Truncated,
    /// The server could not read the reply's tool call (its arguments
    /// were not JSON): the model is asked anew with a note.
    Unreadable,
    /// A fresh run's first answer, given without a single tool call, that
    /// names a file, in a project with files: the model is told to look
    /// first.
    LookFirst,
    /// An answer from a run that tried a change and has none standing
    /// (every call that succeeded only read, or each file changed was put
    /// back): the model is told to make the change, or to say why none is
    /// needed.
    Unmade,
    /// An answer silent on a file a `delete_file` removed though the task
    /// named only something inside it.
    DeletedUnasked,
    /// A change that succeeded has a line added to its result: answer now
    /// if it completes the task.
    DoneHint,
}

impl InterventionKind {
    /// Every kind, in the order the nudge table lists them.
    pub const ALL: [InterventionKind; 16] = [
        InterventionKind::Empty,
        InterventionKind::Truncated,
        InterventionKind::Unreadable,
        InterventionKind::Runaway,
        InterventionKind::CallCap,
        InterventionKind::Storm,
        InterventionKind::Unchanged,
        InterventionKind::Nudge,
        InterventionKind::Stop,
        InterventionKind::Reread,
        InterventionKind::DoneHint,
        InterventionKind::Finish,
        InterventionKind::Stuck,
        InterventionKind::LookFirst,
        InterventionKind::DeletedUnasked,
        InterventionKind::Unmade,
    ];

    /// The wire names of [`Self::ALL`], in its order.
    pub const NAMES: [&'static str; 16] = {
        let mut names = [""; 16];
        let mut i = 0;
        while i < names.len() {
            names[i] = InterventionKind::ALL[i].name();
            i += 1;
        }
        names
    };

    /// The name on the wire.
    pub const fn name(self) -> &'static str {
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
            InterventionKind::Empty => "empty",
            InterventionKind::Truncated => "truncated",
            InterventionKind::Unreadable => "unreadable",
            InterventionKind::LookFirst => "look_first",
            InterventionKind::Unmade => "unmade",
            InterventionKind::DeletedUnasked => "deleted_unasked",
            InterventionKind::DoneHint => "done_hint",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_under_its_wire_name() {
        let mut names: Vec<&str> = InterventionKind::ALL.iter().map(|k| k.name()).collect();
        for kind in InterventionKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), InterventionKind::ALL.len());
    }
}
