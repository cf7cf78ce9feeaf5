//! A session's conversation: OpenAI chat messages, stored message by
//! message as they are added so a crash loses nothing already said.
//!
//! A message is queued for the store's writer without waiting for its
//! commit (the writer commits in order, with the run's events); a failed
//! write is reported by the next change or by [`Conversation::settle`],
//! which the agent loop calls before it ends.

use crate::message::{Message, Role};
use crate::store::{Store, StoreError};
use serde_json::value::RawValue;
use serde_json::Value;
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
    messages: Vec<Message>,
    /// Each message serialised as the provider is sent it, made when it
    /// was added: a call that sends the conversation as it is splices
    /// these instead of serialising every message again.
    wire: Vec<Box<RawValue>>,
    /// The length of their stored JSON, summed (for the token estimate).
    chars: usize,
    /// The first failed message write not reported yet.
    failed: Arc<Mutex<Option<StoreError>>>,
    /// Where the current run's messages start (its task).
    run_start: usize,
}

impl Conversation {
    /// Wrap messages already in the store.
    pub fn new(store: Arc<Store>, session: SessionId, messages: Vec<Message>) -> Conversation {
        let chars = messages.iter().map(|m| m.stored().len()).sum();
        let wire = messages.iter().map(Message::wire).collect();
        Conversation { store, session, messages, wire, chars, failed: Arc::default(), run_start: 0 }
    }

    /// The messages.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages in their stored JSON form, as hooks and filters see them.
    pub fn values(&self) -> Vec<Value> {
        self.messages.iter().map(Message::to_value).collect()
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
    pub fn push(&mut self, message: Message) -> Result<(), StoreError> {
        self.check()?;
        let wire = message.wire();
        // Stored whole; without internal marks that is what is sent.
        let body = if message.is_synthetic() { message.stored() } else { wire.get().to_owned() };
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
        let Some(pos) = self.messages.iter().rposition(|m| !m.tool_calls().is_empty()) else {
            return Ok(());
        };
        if self.messages[pos + 1..].iter().any(|m| m.role() != Role::Tool) {
            return Ok(());
        }
        let answered: HashSet<&str> = self.messages[pos + 1..].iter().filter_map(|m| m.tool_call_id()).collect();
        let missing: Vec<String> = self.messages[pos]
            .tool_calls()
            .iter()
            .map(|c| c.id.clone())
            .filter(|id| !answered.contains(id.as_str()))
            .collect();
        for id in missing {
            self.push(Message::tool_result(id, INTERRUPTED_RESULT))?;
        }
        Ok(())
    }

    /// A run starts: the messages added from now on are its own.
    pub fn begin_run(&mut self) {
        self.run_start = self.messages.len();
    }

    /// `removed` messages were replaced by one (a compaction summary): the
    /// current run starts where its first message now is.
    pub fn replaced_by_one(&mut self, removed: std::ops::Range<usize>) {
        if self.run_start >= removed.end {
            self.run_start -= removed.len() - 1;
        } else if self.run_start > removed.start {
            self.run_start = removed.start;
        }
    }

    /// The messages of the current run, its task first.
    pub fn this_run(&self) -> &[Message] {
        &self.messages[self.run_start.min(self.messages.len())..]
    }

    /// Change the current run's messages in place and store the whole
    /// conversation again.
    pub async fn rewrite_this_run(&mut self, change: impl FnOnce(&mut [Message])) -> Result<(), StoreError> {
        let start = self.run_start.min(self.messages.len());
        self.rewrite(|messages| change(&mut messages[start..])).await
    }

    /// Change messages in place and store the whole conversation again.
    pub async fn rewrite(&mut self, change: impl FnOnce(&mut Vec<Message>)) -> Result<(), StoreError> {
        change(&mut self.messages);
        let bodies: Vec<String> = self.messages.iter().map(Message::stored).collect();
        self.chars = bodies.iter().map(String::len).sum();
        self.wire = self.messages.iter().map(Message::wire).collect();
        // Committed after every queued message: their failures are known now.
        self.store.replace_messages(&self.session, bodies).await?;
        self.check()
    }

    /// The last non-empty assistant text, for exhausted runs.
    pub fn last_assistant_text(&self) -> Option<String> {
        self.messages
            .iter()
            .rev()
            .filter(|m| m.role() == Role::Assistant)
            .filter_map(|m| m.content())
            .find(|t| !t.trim().is_empty() && *t != "(empty response)")
            .map(str::to_owned)
    }
}
