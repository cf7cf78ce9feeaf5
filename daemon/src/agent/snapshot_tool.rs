//! Swival's `snapshot` tool: the model's own save and restore of its
//! context within a run. `save` marks a checkpoint at the turn that makes
//! it; `restore` replaces every message from the checkpoint (without one,
//! from after the last message the user wrote or the last restore) up to
//! the current turn's tool call with one assistant message,
//! `[snapshot: <label>]\n<summary>\n(collapsed N turns, saved ~K tokens)`,
//! the summary the model's own. A restore is refused while the scope is
//! "dirty" (a call that changes files, runs a program or an MCP tool ran in
//! it) unless `force`; `cancel` drops the checkpoint, `status` says where
//! it stands. The collapse is a `compaction` event (`snapshot_restore`).

use super::checkpoint::{restore_scope, Mark, IMPLICIT_LABEL};
use super::Run;
use crate::message::{Message, Role};
use crate::toolcall::ToolOutcome;
use crate::tools::parsed::ParsedCall;
use crate::tools::ToolError;
use serde_json::Value;
use swival_protocol::{CompactionStep, CompactionStrategy, EventKind, ToolKind};

/// Longest label, in characters (Swival's).
const MAX_LABEL: usize = 100;
/// Longest summary, in characters (Swival's).
const MAX_SUMMARY: usize = 4000;

/// A run's snapshot state.
#[derive(Debug, Default)]
pub struct Checkpoints {
    /// The checkpoint: where its scope starts, its label, and the mark that
    /// says the messages before it are still those it was set after.
    saved: Option<(Mark, String)>,
    /// Where the last restore's recap ends, while it holds.
    restored: Option<Mark>,
    /// A call that changes files, runs a program or an MCP tool ran since
    /// the scope started.
    dirty: bool,
}

impl Checkpoints {
    /// Note a call that ran: one that may change the project makes the
    /// scope dirty.
    pub fn ran(&mut self, kind: ToolKind, failed: bool) {
        if !failed && (kind.changes_files() || kind == ToolKind::Mcp) {
            self.dirty = true;
        }
    }
}

/// The arguments, read leniently.
struct Args {
    action: String,
    label: Option<String>,
    summary: Option<String>,
    force: bool,
}

fn args(v: &Value) -> Result<Args, ToolError> {
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
    let Some(action) = text("action") else {
        return Err(ToolError::refused("snapshot needs an 'action': save, restore, cancel or status"));
    };
    let force = v.get("force").and_then(Value::as_bool).unwrap_or(false);
    Ok(Args { action, label: text("label"), summary: text("summary"), force })
}

impl Run<'_> {
    /// One `snapshot` call in `turn`.
    pub(super) async fn snapshot_tool(&mut self, turn: u64, call: &ParsedCall) -> ToolOutcome {
        let v = match &call.args {
            Ok(v) => v,
            Err(e) => return e.into(),
        };
        let a = match args(v) {
            Ok(a) => a,
            Err(e) => return e.into(),
        };
        if a.label.as_ref().is_some_and(|l| l.chars().count() > MAX_LABEL) {
            return ToolError::refused(format!("snapshot: label is over {MAX_LABEL} characters")).into();
        }
        let result = match a.action.as_str() {
            "save" => Ok(self.snapshot_save(a.label)),
            "restore" => self.snapshot_restore(turn, a).await,
            "cancel" => Ok(match self.checkpoints.saved.take() {
                Some((_, label)) => format!("Checkpoint '{label}' cancelled."),
                None => "No checkpoint to cancel.".to_owned(),
            }),
            "status" => Ok(self.snapshot_status()),
            other => Err(ToolError::refused(format!(
                "snapshot: unknown action {other:?}; use save, restore, cancel or status"
            ))),
        };
        match result {
            Ok(text) => ToolOutcome::ok(text),
            Err(e) => e.into(),
        }
    }

    /// `save`: the checkpoint is this turn, its call message included.
    fn snapshot_save(&mut self, label: Option<String>) -> String {
        let messages = self.conversation.messages();
        let at = current_call(messages).unwrap_or(messages.len());
        let label = label.unwrap_or_else(|| "checkpoint".to_owned());
        self.checkpoints.saved = Some((Mark::end_of(&messages[..at]), label.clone()));
        self.checkpoints.dirty = false;
        format!(
            "Checkpoint '{label}' saved. Call snapshot with action 'restore' and a summary to collapse what follows."
        )
    }

    /// `status`.
    fn snapshot_status(&self) -> String {
        let messages = self.conversation.messages();
        let saved = self.checkpoints.saved.as_ref().filter(|(mark, _)| mark.holds(messages));
        let dirty = if self.checkpoints.dirty { "yes" } else { "no" };
        match saved {
            Some((mark, label)) => {
                let n = current_call(messages).unwrap_or(messages.len()).saturating_sub(mark.index);
                format!("Checkpoint '{label}': {n} messages since it; changed files or ran commands since: {dirty}.")
            }
            None => format!("No checkpoint; changed files or ran commands since the scope started: {dirty}."),
        }
    }

    /// `restore`: collapse the scope into the model's summary.
    async fn snapshot_restore(&mut self, turn: u64, a: Args) -> Result<String, ToolError> {
        let Some(summary) = a.summary else {
            return Err(ToolError::refused(
                "snapshot restore needs a 'summary' of what the collapsed turns established",
            ));
        };
        if summary.chars().count() > MAX_SUMMARY {
            return Err(ToolError::refused(format!("snapshot: summary is over {MAX_SUMMARY} characters")));
        }
        if self.checkpoints.dirty && !a.force {
            return Err(ToolError::refused(
                "snapshot restore refused: a call since the checkpoint changed files or ran a command; restore with force=true to collapse it anyway",
            ));
        }
        let messages = self.conversation.messages();
        let end = current_call(messages).unwrap_or(messages.len());
        let saved = self.checkpoints.saved.clone().filter(|(mark, _)| mark.holds(messages));
        let restored = self.checkpoints.restored.clone().filter(|mark| mark.holds(messages)).map(|m| m.index);
        let from = saved.as_ref().map(|(mark, _)| mark.index).or(restored);
        let scope = restore_scope(&messages[..end], from).filter(|s| !s.is_empty());
        let Some(scope) = scope else {
            return Err(ToolError::refused("snapshot restore: nothing to collapse since the checkpoint"));
        };
        let label = a.label.or(saved.map(|(_, l)| l)).unwrap_or_else(|| IMPLICIT_LABEL.to_owned());
        let before = super::compact::estimate(messages, &[]);
        let n = scope.len();
        let scope_tokens = messages[scope.clone()].iter().map(|m| m.stored().len()).sum::<usize>() / 4;
        let saved_tokens = scope_tokens.saturating_sub(summary.len() / 4);
        let recap = format!("[snapshot: {label}]\n{summary}\n(collapsed {n} turns, saved ~{saved_tokens} tokens)");
        let start = scope.start;
        self.conversation.rewrite(|m| drop(m.splice(scope, [Message::assistant(recap)]))).await.map_err(|e| {
            ToolError::refused(format!("snapshot restore: the collapsed conversation was not stored: {e}"))
        })?;
        let messages = self.conversation.messages();
        self.checkpoints =
            Checkpoints { saved: None, restored: Some(Mark::end_of(&messages[..start + 1])), dirty: false };
        self.emit(EventKind::Compaction {
            turn,
            strategy: CompactionStrategy(vec![CompactionStep::SnapshotRestore]),
            tokens_before: before,
            tokens_after: super::compact::estimate(messages, &[]),
        });
        Ok(format!("Snapshot '{label}' restored: collapsed {n} turns, saved ~{saved_tokens} tokens."))
    }
}

/// The index of the current turn's assistant message (the one whose tool
/// calls are being answered).
fn current_call(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(|m| m.role() == Role::Assistant && !m.tool_calls().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_calls_that_may_change_the_project_make_the_scope_dirty() {
        let mut c = Checkpoints::default();
        for kind in [ToolKind::Read, ToolKind::Search, ToolKind::Think, ToolKind::Plan, ToolKind::Fetch] {
            c.ran(kind, false);
        }
        assert!(!c.dirty);
        c.ran(ToolKind::Edit, true);
        assert!(!c.dirty, "a failed write changed nothing");
        c.ran(ToolKind::Execute, false);
        assert!(c.dirty);
    }
}
