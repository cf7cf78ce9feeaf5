//! A session's conversation: OpenAI chat messages, stored message by
//! message as they are added so a crash loses nothing already said.
//!
//! A message is queued for the store's writer without waiting for its
//! commit (the writer commits in order, with the run's events); a failed
//! write is reported by the next change or by [`Conversation::settle`],
//! which the agent loop calls before it ends.

use super::estimate::json_len;
use crate::provider::{has_internal_keys, wire_json};
use crate::store::{Store, StoreError};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use swival_protocol::SessionId;

/// The tool result given to calls a crash or cancel left unanswered.
pub const INTERRUPTED_RESULT: &str = "error: tool call interrupted before it produced a result";

/// The messages of one session, mirrored in the store.
#[derive(Debug)]
pub struct Conversation {
    /// Where they are stored.
    store: Arc<Store>,
    /// Whose they are.
    session: SessionId,
    /// The messages, system prompt first.
    messages: Vec<Value>,
    /// Each message serialised as the provider is sent it, made when it
    /// was added: a call that sends the conversation as it is splices
    /// these instead of serialising every message again.
    wire: Vec<Box<RawValue>>,
    /// The length of their compact JSON, summed (for the token estimate).
    chars: usize,
    /// The first failed message write not reported yet.
    failed: Arc<Mutex<Option<StoreError>>>,
}

impl Conversation {
    /// Wrap messages loaded from (or already in) the store.
    pub fn new(store: Arc<Store>, session: SessionId, messages: Vec<Value>) -> Conversation {
        let chars = messages.iter().map(json_len).sum();
        let wire = messages.iter().map(wire_json).collect();
        Conversation { store, session, messages, wire, chars, failed: Arc::default() }
    }

    /// The messages.
    pub fn messages(&self) -> &[Value] {
        &self.messages
    }

    /// [`Conversation::messages`], each serialised as sent.
    pub fn wire(&self) -> &[Box<RawValue>] {
        &self.wire
    }

    /// The length of the messages' compact JSON, summed.
    pub fn chars(&self) -> usize {
        self.chars
    }

    /// Append a message and queue it for the store. Fails when an earlier
    /// message could not be stored.
    pub fn push(&mut self, message: Value) -> Result<(), StoreError> {
        self.check()?;
        let wire = wire_json(&message);
        // Stored whole; without internal keys that is what is sent.
        let body = if has_internal_keys(&message) { message.to_string() } else { wire.get().to_owned() };
        let len = body.len();
        let failed = self.failed.clone();
        let then = Box::new(move |r: Result<(), StoreError>| {
            if let Err(e) = r {
                failed.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
            }
        });
        self.store.put_message_then(&self.session, self.messages.len(), body, then);
        self.messages.push(message);
        self.wire.push(wire);
        self.chars += len;
        Ok(())
    }

    /// Wait until every message added so far is stored; the first write
    /// that failed, if any.
    pub async fn settle(&self) -> Result<(), StoreError> {
        self.store.settle().await?;
        self.check()
    }

    /// The first failed write not reported yet.
    fn check(&self) -> Result<(), StoreError> {
        match self.failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Give every tool call left without a result (a run that crashed or
    /// was cancelled mid-turn) a placeholder result, so the conversation
    /// stays well-formed for the provider.
    pub fn complete_orphans(&mut self) -> Result<(), StoreError> {
        let Some(pos) = self.messages.iter().rposition(|m| m.get("tool_calls").is_some()) else {
            return Ok(());
        };
        if self.messages[pos + 1..].iter().any(|m| m["role"] != "tool") {
            return Ok(());
        }
        let answered: HashSet<String> = self.messages[pos + 1..]
            .iter()
            .filter_map(|m| m.get("tool_call_id").and_then(Value::as_str).map(str::to_owned))
            .collect();
        let missing: Vec<String> = self.messages[pos]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("id").and_then(Value::as_str))
            .filter(|id| !answered.contains(*id))
            .map(str::to_owned)
            .collect();
        for id in missing {
            self.push(json!({"role": "tool", "tool_call_id": id, "content": INTERRUPTED_RESULT}))?;
        }
        Ok(())
    }

    /// Change messages in place and store the whole conversation again.
    pub async fn rewrite(&mut self, change: impl FnOnce(&mut Vec<Value>)) -> Result<(), StoreError> {
        change(&mut self.messages);
        self.chars = self.messages.iter().map(json_len).sum();
        self.wire = self.messages.iter().map(wire_json).collect();
        // Committed after every queued message: their failures are known now.
        self.store.replace_messages(&self.session, &self.messages).await?;
        self.check()
    }

    /// The last non-empty assistant text, for exhausted runs.
    pub fn last_assistant_text(&self) -> Option<String> {
        self.messages
            .iter()
            .rev()
            .filter(|m| m["role"] == "assistant")
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .find(|t| !t.trim().is_empty() && *t != "(empty response)")
            .map(str::to_owned)
    }
}
