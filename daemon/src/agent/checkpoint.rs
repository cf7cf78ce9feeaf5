//! Checkpoints in the conversation, Swival's `/save` and `/restore` (and
//! its `snapshot` tool's, `snapshot_tool.rs`): a checkpoint is a
//! [`Mark`] in the conversation; a restore collapses the whole turns after
//! it (without one, after the last message the user wrote) into one
//! assistant message, `[snapshot: <label>]\n<summary>\n(collapsed N turns,
//! saved ~K tokens)`, whose summary a `summary` call writes on the one path
//! every call takes (hooks, filters, secret encryption). A summary that
//! fails or is blocked changes nothing.

use super::compact::estimate;
use super::job::SessionEvents;
use super::{setup, CompactError, Run, RunContext, RunState};
use crate::message::{Message, Role};
use sha2::{Digest, Sha256};
use std::ops::Range;
use swival_protocol::{CompactionStep, CompactionStrategy, EventKind, FailureKind};

/// The label of a restore without a checkpoint (Swival's implicit scope).
pub const IMPLICIT_LABEL: &str = "investigation";

/// A point in a conversation: how many messages come before it, and a
/// digest of those messages as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// The number of messages before it.
    pub index: usize,
    /// The digest of those messages.
    pub digest: String,
}

impl Mark {
    /// The end of `messages`.
    pub fn end_of(messages: &[Message]) -> Mark {
        Mark { index: messages.len(), digest: digest(messages) }
    }

    /// Whether `messages` still hold this point: the messages before it are
    /// those it was set after, no rewrite (a compaction, a restore) having
    /// changed, removed or moved any of them.
    pub fn holds(&self, messages: &[Message]) -> bool {
        self.index <= messages.len() && digest(&messages[..self.index]) == self.digest
    }
}

/// SHA-256 over the messages as stored, each prefixed by its length.
fn digest(messages: &[Message]) -> String {
    let mut hash = Sha256::new();
    for m in messages {
        let stored = m.stored();
        hash.update((stored.len() as u64).to_le_bytes());
        hash.update(stored.as_bytes());
    }
    hex::encode(hash.finalize())
}

/// The messages a restore collapses: from `from` (a checkpoint's index)
/// or, without one, from after the last message the user wrote (not one
/// the daemon did), to the end. Whole turns only: the system prompt and
/// tool results at the start (answers to a call made before the point)
/// stay where they are. `None` when fewer than two messages would go.
pub fn restore_scope(messages: &[Message], from: Option<usize>) -> Option<Range<usize>> {
    let mut start = match from {
        Some(index) => index,
        None => messages.iter().rposition(|m| m.role() == Role::User && !m.is_synthetic())? + 1,
    };
    while messages.get(start).is_some_and(|m| matches!(m.role(), Role::System | Role::Tool)) {
        start += 1;
    }
    (messages.len() >= start + 2).then_some(start..messages.len())
}

/// What a restore did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restored {
    /// Messages collapsed (Swival's "turns").
    pub collapsed: u64,
    /// Estimated tokens saved.
    pub tokens_saved: u64,
}

/// Collapse `scope` of a session's conversation between runs into one
/// assistant message labelled `label` (`session/restore`). Its events
/// (the summary call's, the `compaction` with `snapshot_restore`) are the
/// session's, at turn 0. Nothing changes unless the summary was written;
/// the state comes back whatever happened.
pub async fn restore(
    ctx: RunContext<'_>,
    state: RunState,
    scope: Range<usize>,
    label: &str,
) -> (Result<Restored, CompactError>, RunState) {
    let events = SessionEvents(ctx.events);
    let ctx = RunContext { events: &events, ..ctx };
    let (mut run, found) = match setup::for_compaction(ctx, state, true).await {
        Ok(ready) => ready,
        Err((e, state)) => return (Err(e), state),
    };
    let done = match found {
        Ok(()) => run.collapse(scope, label).await,
        Err(why) => Err(CompactError::Failed(FailureKind::Provider, why)),
    };
    let Run { conversation, tools, shield, .. } = run;
    (done, RunState { conversation, tools, shield })
}

impl Run<'_> {
    /// Replace `scope` by the snapshot message, store the conversation and
    /// emit the `compaction` event.
    async fn collapse(&mut self, scope: Range<usize>, label: &str) -> Result<Restored, CompactError> {
        let collapsed = self.conversation.messages()[scope.clone()].to_vec();
        let summary = self.summary(0, &collapsed).await?;
        let before = estimate(self.conversation.messages(), &[]);
        let scope_tokens = collapsed.iter().map(|m| m.stored().len()).sum::<usize>() / 4;
        let saved = scope_tokens.saturating_sub(summary.len() / 4) as u64;
        let n = collapsed.len();
        let recap =
            Message::assistant(format!("[snapshot: {label}]\n{summary}\n(collapsed {n} turns, saved ~{saved} tokens)"));
        self.conversation.rewrite(|m| drop(m.splice(scope, [recap]))).await.map_err(|e| {
            CompactError::Failed(FailureKind::Internal, format!("could not store the collapsed conversation: {e}"))
        })?;
        let after = estimate(self.conversation.messages(), &[]);
        self.emit(EventKind::Compaction {
            turn: 0,
            strategy: CompactionStrategy(vec![CompactionStep::SnapshotRestore]),
            tokens_before: before,
            tokens_after: after,
        });
        Ok(Restored { collapsed: n as u64, tokens_saved: saved })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn call(id: &str) -> Message {
        let call = ToolCall { id: id.into(), name: "read_file".into(), arguments: "{}".into() };
        Message::assistant_turn(None, vec![call])
    }

    fn conversation() -> Vec<Message> {
        vec![
            Message::system("s"),
            Message::user("first task"),
            Message::assistant("first answer"),
            Message::user("second task"),
            Message::synthetic("named files"),
            call("c1"),
            Message::tool_result("c1", "r1"),
            Message::assistant("second answer"),
        ]
    }

    #[test]
    fn without_a_checkpoint_the_scope_starts_after_the_last_message_the_user_wrote() {
        let m = conversation();
        assert_eq!(restore_scope(&m, None), Some(4..8));
        assert_eq!(restore_scope(&m[..3], None), None, "one message after the task is nothing to collapse");
        assert_eq!(restore_scope(&m[..1], None), None, "no user message: nothing to collapse");
    }

    #[test]
    fn a_checkpoint_scope_never_starts_with_the_system_prompt_or_a_tool_result() {
        let m = conversation();
        assert_eq!(restore_scope(&m, Some(0)), Some(1..8));
        assert_eq!(restore_scope(&m, Some(6)), None, "the result stays with its call; one message is left");
        assert_eq!(restore_scope(&m, Some(3)), Some(3..8));
        assert_eq!(restore_scope(&m, Some(8)), None);
    }

    #[test]
    fn a_mark_holds_until_a_message_before_it_changes_or_moves() {
        let mut m = conversation();
        let mark = Mark::end_of(&m[..3]);
        assert!(mark.holds(&m), "messages after it do not matter");
        m[7] = Message::assistant("changed after");
        assert!(mark.holds(&m));
        let mut summarised = m.clone();
        summarised.splice(1..3, [Message::synthetic("summary")]);
        assert!(!mark.holds(&summarised), "a compaction before it moves it");
        m[2] = Message::assistant("cut");
        assert!(!mark.holds(&m), "a message before it changed");
        assert!(!mark.holds(&m[..2]), "fewer messages than its index");
    }
}
