//! A run's side of Swival's notes (`notes/`): what a new conversation's
//! system prompt carries (the memory block, the continue-here block, taken
//! from the project and removed), and the continue file a run leaves when
//! it stops early: interrupted (run/cancel, Ctrl-C, the daemon stopping),
//! out of turns, out of context, or stuck. On the max-turns path the
//! deterministic file is then replaced by the model's summary, asked by a
//! `summary` call on the one path every call takes (hooks, filters, secret
//! encryption). A note that cannot be read or written (a symlink the model
//! planted) is a `warning` event, and the run goes on.

use super::call::Limits;
use super::{LoopEnd, Run, RunContext, RunState};
use crate::message::Message;
use crate::notes::{memory, resume, NoteError};
use crate::pipeline::filter::CallKind;
use swival_protocol::{EventKind, FailureKind, MemoryStats, TodoItem};

/// Say that a note was left alone, and why.
fn warn(ctx: RunContext<'_>, what: &str, e: &NoteError) {
    let message = format!("{what}: {e}");
    ctx.events.emit(Some(ctx.run_id), EventKind::Warning { message });
}

/// The memory block of a new conversation's system prompt (`None` with
/// `no_memory`; empty when there is nothing to inject) and its report stats.
pub(super) fn memory_block(ctx: RunContext<'_>) -> (Option<String>, Option<MemoryStats>) {
    let cfg = ctx.config;
    if cfg.no_memory {
        return (None, None);
    }
    match memory::load(ctx.base_dir, ctx.task, cfg.memory_full) {
        Ok(loaded) => (Some(loaded.block), loaded.stats),
        Err(e) => {
            warn(ctx, "memory was not loaded", &e);
            (Some(String::new()), None)
        }
    }
}

/// The `<continue-here>` block of a new conversation, taken from the
/// project (the file is removed); `None` with `no_continue` or without one.
/// A file more than a day old is used with Swival's warning.
pub(super) fn continue_block(ctx: RunContext<'_>) -> Option<String> {
    if ctx.config.no_continue {
        return None;
    }
    match resume::take(ctx.base_dir) {
        Ok(Some(loaded)) => {
            if let Some(message) = loaded.stale {
                ctx.events.emit(Some(ctx.run_id), EventKind::Warning { message });
            }
            Some(loaded.block)
        }
        Ok(None) => None,
        Err(e) => {
            warn(ctx, "the continue file was not loaded", &e);
            None
        }
    }
}

/// Whether a run that ended so leaves a continue file (Swival writes one
/// on an interruption, at max turns, out of context, and when the model
/// keeps making calls that cannot run).
fn leaves_file(end: &LoopEnd) -> bool {
    matches!(end, LoopEnd::Cancelled | LoopEnd::Exhausted(_) | LoopEnd::Overflowed(_))
        || matches!(end, LoopEnd::Failed(FailureKind::Stuck, _))
}

/// Write the deterministic continue file for `messages`; whether it was.
fn save(ctx: RunContext<'_>, messages: &[Message], todo: &[TodoItem]) -> bool {
    match resume::save(ctx.base_dir, &resume::deterministic(messages, todo)) {
        Ok(()) => true,
        Err(e) => {
            warn(ctx, "the continue file was not written", &e);
            false
        }
    }
}

/// Leave a continue file for a run that ended in its setup (cancelled
/// before its first call).
pub(super) fn leave_after_setup(ctx: RunContext<'_>, end: &LoopEnd, state: &RunState) {
    if !ctx.config.no_continue && leaves_file(end) {
        save(ctx, state.conversation.messages(), &state.tools.todo_items());
    }
}

/// Write a session's continue file from its conversation now (Swival's
/// REPL exit): whether one was written; none for a conversation with no
/// message but the system prompt.
pub fn save_now(ctx: RunContext<'_>, state: &RunState) -> bool {
    // Its warnings are the session's: no run has them.
    let events = super::job::SessionEvents(ctx.events);
    let ctx = RunContext { events: &events, ..ctx };
    let messages = state.conversation.messages();
    if ctx.config.no_continue || messages.iter().all(|m| m.role() == crate::message::Role::System) {
        return false;
    }
    save(ctx, messages, &state.tools.todo_items())
}

impl Run<'_> {
    /// Leave the continue file a run that ended as `end` leaves; at max
    /// turns, replaced by the model's summary when one comes.
    pub(super) async fn leave_continue(&mut self, end: &LoopEnd) {
        if self.ctx.config.no_continue || !leaves_file(end) {
            return;
        }
        if !save(self.ctx, self.conversation.messages(), &self.tools.todo_items()) {
            return;
        }
        if !matches!(end, LoopEnd::Exhausted(_)) {
            return;
        }
        let input = resume::summary_input(self.conversation.messages());
        let request = vec![Message::system(resume::SUMMARY_PROMPT).to_value(), Message::user(input).to_value()];
        let limits = Limits { max_tokens: Some(resume::SUMMARY_MAX_TOKENS), temperature: Some(0.0) };
        let turn = self.record.stats.turns;
        let reply = self.call_model_with(turn, CallKind::Summary, Some(request), super::Offered::NONE, limits).await;
        // A summary that fails leaves the deterministic file (Swival's rule).
        if let Some(text) = reply.ok().and_then(|r| r.content).filter(|t| !t.is_empty()) {
            if let Err(e) = resume::save(self.ctx.base_dir, &text) {
                warn(self.ctx, "the continue file was not written", &e);
            }
        }
    }
}
