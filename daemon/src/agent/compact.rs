//! Context compaction: when the estimated prompt passes 90 % of the
//! context window (or the provider says it is too long), old tool results
//! are truncated first; if that is not enough, the middle turns are
//! summarised by a `call_kind: "summary"` call that goes through the whole
//! pipeline (hooks, filters). A summary call that is blocked or fails only
//! skips the summary: the middle turns are then dropped with a note.
//!
//! The same steps run between runs on request (`session/compact`, through
//! [`compact`]): old tool results cut, and with `drop` the middle turns
//! summarised whatever the window.

use super::estimate::json_len;
use super::job::{CompactError, SessionEvents};
use super::turns::CallError;
use super::{Run, RunContext, RunState};
use crate::message::{Message, Role};
use crate::pipeline::filter::CallKind;
use serde_json::Value;
use swival_protocol::FailureKind;
use swival_protocol::{CompactionStep, CompactionStrategy, EventKind};

/// Tool results longer than this are cut when old.
const KEEP_CHARS: usize = 300;
/// Recent messages never touched (the current turns).
const KEEP_TAIL: usize = 6;

const SUMMARY_PROMPT: &str = "You summarise part of a coding session so the work can continue with less context. \
Write a compact summary of what was asked, what was found (files, facts, errors) and what was changed, \
with exact file names and values. No preamble.";

/// Cut old tool results (all but the last `KEEP_TAIL` messages) to
/// `KEEP_CHARS` with a marker; true when anything changed.
pub fn truncate_old_tool_results(messages: &mut [Message]) -> bool {
    let end = messages.len().saturating_sub(KEEP_TAIL);
    let mut changed = false;
    for m in &mut messages[..end] {
        if m.role() != Role::Tool {
            continue;
        }
        let Some(text) = m.content() else { continue };
        let n = text.chars().count();
        if n > KEEP_CHARS + 100 {
            let head: String = text.chars().take(KEEP_CHARS).collect();
            m.set_content(Some(format!(
                "{head}\n[… {} more characters cut to fit the context window]",
                n - KEEP_CHARS
            )));
            // Its notes for the model are cut with it.
            m.drop_notes_mark();
            changed = true;
        }
    }
    changed
}

/// The middle of the conversation to summarise: after the first user
/// message, before the last `KEEP_TAIL` messages, starting and ending at
/// turn boundaries (a tool result is never separated from its call).
pub fn middle(messages: &[Message]) -> Option<std::ops::Range<usize>> {
    let first_user = messages.iter().position(|m| m.role() == Role::User)?;
    let mut end = messages.len().saturating_sub(KEEP_TAIL);
    // Move back until the tail starts with an assistant or user message.
    while end > first_user + 1 && messages[end].role() == Role::Tool {
        end -= 1;
    }
    let start = first_user + 1;
    (end > start + 1).then_some(start..end)
}

/// The messages as plain text for the summary call.
fn transcript(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| {
            let mut text = m.text().to_owned();
            for c in m.tool_calls() {
                let name = if c.name.is_empty() { "?" } else { &c.name };
                text.push_str(&format!("\n[calls {name} {}]", c.arguments));
            }
            format!("[{}]\n{text}", m.role().as_str())
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The token estimate of `messages` (stored) with `tools` offered.
pub(super) fn estimate(messages: &[Message], tools: &[Value]) -> u64 {
    let chars: usize = messages.iter().map(|m| m.stored().len()).chain(tools.iter().map(json_len)).sum();
    (chars / 4) as u64
}

/// How far a compaction goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// Under this many tokens as far as possible: old tool results cut,
    /// then the middle summarised if that was not enough (the loop's).
    Under(u64),
    /// Old tool results cut, nothing more (`session/compact`).
    Truncate,
    /// Old tool results cut and the middle turns replaced (`session/compact`
    /// with `drop`): by a summary when `summarise`, else by a note.
    Drop {
        /// Ask the model for a summary (false: no model could be found).
        summarise: bool,
    },
}

/// What a compaction did: its `compaction` event's figures (an empty
/// strategy and no event when there was nothing to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// The steps taken.
    pub strategy: CompactionStrategy,
    /// Estimated prompt tokens before.
    pub tokens_before: u64,
    /// Estimated prompt tokens after.
    pub tokens_after: u64,
}

/// Compact a session's conversation between runs (`session/compact`):
/// old tool results cut and, with `drop`, the middle turns summarised by a
/// `summary` call on the one path every call takes (hooks, filters, secret
/// encryption), or dropped with a note when that call fails. Its events
/// (the call's, the `compaction`) are the session's, at turn 0. The state
/// comes back whatever happened.
pub async fn compact(ctx: RunContext<'_>, state: RunState, drop: bool) -> (Result<Compacted, CompactError>, RunState) {
    let events = SessionEvents(ctx.events);
    let ctx = RunContext { events: &events, ..ctx };
    let (mut run, found) = match super::setup::for_compaction(ctx, state, drop).await {
        Ok(ready) => ready,
        Err((e, state)) => return (Err(e), state),
    };
    let reach = if drop { Reach::Drop { summarise: found.is_ok() } } else { Reach::Truncate };
    let done = run.compact_to(0, &[], reach).await.map_err(CompactError::from);
    let Run { conversation, tools, shield, .. } = run;
    (done, RunState { conversation, tools, shield })
}

impl Run<'_> {
    /// Bring the conversation under `budget` tokens (90 % of it) as far as
    /// possible, recording what was done.
    pub(super) async fn compact(&mut self, turn: u64, tools: &[Value], budget: u64) -> Result<(), CallError> {
        self.compact_to(turn, tools, Reach::Under(budget * 9 / 10)).await.map(|_| ())
    }

    /// Compact the conversation as far as `reach` says, store it and emit
    /// the `compaction` event; nothing is stored or emitted when there was
    /// nothing to do.
    pub(super) async fn compact_to(
        &mut self,
        turn: u64,
        tools: &[Value],
        reach: Reach,
    ) -> Result<Compacted, CallError> {
        let before = estimate(self.conversation.messages(), tools);
        let mut strategy = CompactionStrategy::default();
        let mut replaced = None;
        let mut messages = self.conversation.messages().to_vec();
        if truncate_old_tool_results(&mut messages) {
            strategy.0.push(CompactionStep::TruncateToolResults);
        }
        let (drop_middle, summarise) = match reach {
            Reach::Under(limit) => (estimate(&messages, tools) > limit, true),
            Reach::Truncate => (false, false),
            Reach::Drop { summarise } => (true, summarise),
        };
        if let Some(range) = middle(&messages).filter(|_| drop_middle) {
            let summary = if summarise { self.summarise(turn, &messages[range.clone()]).await? } else { None };
            let note = match summary {
                Some(text) => {
                    strategy.0.push(CompactionStep::SummarizeMiddle);
                    format!("[Summary of earlier turns]\n{text}")
                }
                None => {
                    strategy.0.push(CompactionStep::DropMiddle);
                    format!("[{} earlier messages were dropped to fit the context window]", range.len())
                }
            };
            messages.splice(range.clone(), [Message::synthetic(note)]);
            replaced = Some(range);
        }
        if strategy.0.is_empty() {
            return Ok(Compacted { strategy, tokens_before: before, tokens_after: before });
        }
        let after = estimate(&messages, tools);
        self.conversation.rewrite(|m| *m = messages).await.map_err(|e| {
            CallError::Failed(FailureKind::Internal, format!("could not store the compacted conversation: {e}"))
        })?;
        if let Some(range) = replaced {
            self.conversation.replaced_by_one(range);
        }
        let done = Compacted { strategy, tokens_before: before, tokens_after: after };
        self.emit(EventKind::Compaction {
            turn,
            strategy: done.strategy.clone(),
            tokens_before: before,
            tokens_after: after,
        });
        Ok(done)
    }

    /// A summary of `middle` by a `summary` call through the whole
    /// pipeline; `None` when the call was blocked, failed or said nothing
    /// (a failed summary only skips the summary).
    async fn summarise(&mut self, turn: u64, middle: &[Message]) -> Result<Option<String>, CallError> {
        match self.summary(turn, middle).await {
            Ok(text) => Ok(Some(text)),
            Err(CallError::Cancelled) => Err(CallError::Cancelled),
            Err(_) => Ok(None),
        }
    }

    /// The model's summary of `messages`, asked by a `summary` call through
    /// the whole pipeline (hooks, filters, secret encryption); an empty
    /// reply is a failure.
    pub(super) async fn summary(&mut self, turn: u64, messages: &[Message]) -> Result<String, CallError> {
        let request = vec![Message::system(SUMMARY_PROMPT).to_value(), Message::user(transcript(messages)).to_value()];
        let reply = self.call_model(turn, CallKind::Summary, Some(request), super::Offered::NONE).await?;
        reply
            .content
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| CallError::Failed(FailureKind::Provider, "the model's summary was empty".to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn typed(values: Vec<Value>) -> Vec<Message> {
        values.into_iter().map(|v| serde_json::from_value(v).unwrap()).collect()
    }

    #[test]
    fn only_old_long_tool_results_are_cut() {
        let long = "x".repeat(2000);
        let mut m: Vec<Value> =
            vec![json!({"role": "system", "content": "s"}), json!({"role": "user", "content": "t"})];
        for i in 0..4 {
            m.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{i}")}]}));
            m.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": long}));
        }
        let mut m = typed(m);
        assert!(truncate_old_tool_results(&mut m));
        assert!(m[3].text().contains("cut to fit"));
        assert_eq!(m[9].text().len(), 2000, "recent results stay whole");
    }

    #[test]
    fn middle_keeps_head_and_tail_at_turn_boundaries() {
        let mut m: Vec<Value> = vec![json!({"role": "system"}), json!({"role": "user"})];
        for _ in 0..6 {
            m.push(json!({"role": "assistant"}));
            m.push(json!({"role": "tool"}));
        }
        let m = typed(m);
        let r = middle(&m).unwrap();
        assert_eq!(r.start, 2);
        assert_ne!(m[r.end].role(), Role::Tool);
        assert!(r.end <= m.len() - KEEP_TAIL);
    }
}
