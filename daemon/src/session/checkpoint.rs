//! `session/checkpoint` and `session/restore`: Swival's `/save`, `/unsave`
//! and `/restore` on an idle session.
//!
//! A checkpoint is stored with the session (`store::CheckpointRow`: its
//! label and an `agent::Mark`), so it survives a restart. A rewrite of the
//! conversation that changed or moved a message before it (a compaction, a
//! restore) makes it stale: a stale checkpoint is cleared the first time it
//! is looked at, before anything is decided from it. A checkpoint is set
//! by the session's actor while idle; a restore is a job between runs
//! (`compact.rs`), whose summary call goes through the whole pipeline.

use super::compact::{failure, Between, Ended};
use super::mailbox::Command;
use super::{random_id, SessionError, Sessions, Shared};
use crate::agent::conversation::Conversation;
use crate::agent::{self, CompactError, Mark, Restored};
use crate::store::CheckpointRow;
use swival_protocol::{FailureKind, RunId, SessionCheckpointParams, SessionCheckpointResult};
use swival_protocol::{SessionId, SessionRestoreResult};

/// The label of a checkpoint set without one (Swival's `/save`).
const DEFAULT_LABEL: &str = "user-checkpoint";
/// The longest label, in characters (Swival's).
const MAX_LABEL_CHARS: usize = 100;

impl Sessions {
    /// `session/checkpoint`: set a checkpoint at the end of an idle
    /// session's conversation, or cancel the active one.
    pub async fn checkpoint(&self, p: SessionCheckpointParams) -> Result<SessionCheckpointResult, SessionError> {
        let SessionCheckpointParams { session_id, label, cancel } = p;
        self.ask_idle(&session_id, |reply| Command::Checkpoint { label: label.clone(), cancel, reply }).await
    }

    /// `session/restore`: collapse an idle session's messages since its
    /// checkpoint (or its last user message) into one summary.
    pub async fn restore(&self, id: &SessionId) -> Result<SessionRestoreResult, SessionError> {
        self.ask_idle(id, |reply| Command::Restore { reply }).await
    }
}

/// Session `id`'s checkpoint, if it still holds in `conversation`; a
/// stale one is cleared.
async fn active(
    shared: &Shared,
    id: &SessionId,
    conversation: &Conversation,
) -> Result<Option<CheckpointRow>, SessionError> {
    let Some(row) = shared.store.checkpoint(id)? else { return Ok(None) };
    let mark = Mark { index: row.index, digest: row.digest.clone() };
    if mark.holds(conversation.messages()) {
        return Ok(Some(row));
    }
    shared.store.set_checkpoint(id, None).await?;
    Ok(None)
}

/// Set (at the end of `conversation`) or `cancel` session `id`'s
/// checkpoint; what happened in Swival's words. Its actor calls this while
/// idle, holding the conversation.
pub(super) async fn checkpoint(
    shared: &Shared,
    id: &SessionId,
    conversation: &Conversation,
    label: Option<String>,
    cancel: bool,
) -> Result<SessionCheckpointResult, SessionError> {
    let said = |message: String, active: Option<String>| Ok(SessionCheckpointResult { message, active });
    match (active(shared, id, conversation).await?, cancel) {
        (None, true) => said("no active checkpoint to cancel".to_owned(), None),
        (Some(row), true) => {
            shared.store.set_checkpoint(id, None).await?;
            said(format!("checkpoint cancelled: {}", row.label), None)
        }
        (Some(row), false) => said(
            format!("checkpoint already active (label={}). Cancel it first with /unsave.", quoted(&row.label)),
            Some(row.label),
        ),
        (None, false) => {
            let label = label.map(|l| l.trim().to_owned()).filter(|l| !l.is_empty());
            let label = label.unwrap_or_else(|| DEFAULT_LABEL.to_owned());
            if label.chars().count() > MAX_LABEL_CHARS {
                return Err(SessionError::Config(format!(
                    "checkpoint label exceeds {MAX_LABEL_CHARS} character limit; give a shorter one"
                )));
            }
            let Mark { index, digest } = Mark::end_of(conversation.messages());
            shared.store.set_checkpoint(id, Some(CheckpointRow { label: label.clone(), index, digest })).await?;
            said(format!("checkpoint saved: {label}"), Some(label))
        }
    }
}

/// `label` as Python's `repr` shows it (Swival's `label={label!r}`).
fn quoted(label: &str) -> String {
    let escaped = label.replace('\\', "\\\\");
    if label.contains('\'') && !label.contains('"') {
        format!("\"{escaped}\"")
    } else {
        format!("'{}'", escaped.replace('\'', "\\'"))
    }
}

/// A restore that changed nothing, saying why.
fn unchanged(message: String) -> SessionRestoreResult {
    SessionRestoreResult { message, collapsed: 0, tokens_saved: 0 }
}

impl Between {
    /// `session/restore`: collapse the messages since the checkpoint (or
    /// the last user message) into one summary, and clear the checkpoint.
    pub async fn restore(self) -> Ended<SessionRestoreResult> {
        let Between { shared, session, cancel, parts } = self;
        let active = match active(&shared, &session.id, &parts.conversation).await {
            Ok(active) => active,
            Err(e) => return Ended { parts: Some(parts), result: Err(e) },
        };
        let (from, label) = match &active {
            Some(row) => (Some(row.index), row.label.as_str()),
            None => (None, agent::IMPLICIT_LABEL),
        };
        let Some(scope) = agent::restore_scope(parts.conversation.messages(), from) else {
            return Ended { parts: Some(parts), result: Ok(unchanged("nothing to collapse".to_owned())) };
        };
        // Hooks see the summary call under an id of its own: no run has it.
        let id = RunId(random_id("c_"));
        let ctx = session.context(&shared, &id, "", &cancel);
        let (done, state) = agent::restore(ctx, parts.into(), scope, label).await;
        let result = match done {
            Ok(restored) => cleared(&shared, &session.id, active.is_some(), restored).await,
            Err(CompactError::Failed(FailureKind::HookBlocked, why)) => {
                Ok(unchanged(format!("nothing collapsed: a hook blocked the summary call: {why}")))
            }
            Err(CompactError::Failed(kind, why)) if !matches!(kind, FailureKind::Setup | FailureKind::Internal) => {
                Ok(unchanged(format!("nothing collapsed: the summary call failed: {why}")))
            }
            Err(e) => Err(failure(&shared, &session.id, e)),
        };
        Ended { parts: Some(state.into()), result }
    }
}

/// A restore's result, once the checkpoint it used (`had`) is cleared.
async fn cleared(
    shared: &Shared,
    id: &SessionId,
    had: bool,
    restored: Restored,
) -> Result<SessionRestoreResult, SessionError> {
    if had {
        shared.store.set_checkpoint(id, None).await?;
    }
    let Restored { collapsed, tokens_saved } = restored;
    Ok(SessionRestoreResult {
        message: format!("snapshot: restored — collapsed {collapsed} turns, saved ~{tokens_saved} tokens"),
        collapsed,
        tokens_saved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_quoted_as_python_shows_them() {
        assert_eq!(quoted("x"), "'x'");
        assert_eq!(quoted("it's"), "\"it's\"");
        assert_eq!(quoted("a'\"b"), "'a\\'\"b'");
    }
}
