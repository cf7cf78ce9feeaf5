//! Swival's continue-here file, `.swival/continue.md`: written when a run
//! stops before its end (interrupted, out of turns, out of context, stuck)
//! or a REPL leaves a conversation, from the conversation and the todo
//! list (Swival's deterministic sections, at most 4,000 characters; on the
//! max-turns path the agent may replace it with the model's summary), and
//! loaded into the next new conversation's system prompt inside
//! `<continue-here>`, then removed.

use super::{read, remove, write, Note, NoteError};
use crate::message::{Message, Role};
use std::path::Path;
use std::time::{Duration, SystemTime};
use swival_protocol::TodoItem;

/// The file.
const CONTINUE: Note = Note { shown: ".swival/continue.md", rel: "continue.md" };
/// Characters kept, written and read.
pub const MAX_CHARS: usize = 4_000;
/// Past this age a loaded file gets a warning.
const STALE: Duration = Duration::from_secs(24 * 60 * 60);

/// The system prompt of the summary call (Swival's words).
pub const SUMMARY_PROMPT: &str = "You are summarizing an interrupted AI coding session so it can be resumed.\n\
The session was working on a task and was interrupted before completion.\n\n\
Extract from the conversation:\n\
1. What was completed (files read, edits made, tests run, findings)\n\
2. What remains to be done\n\
3. Key decisions that were made (so they aren't re-debated)\n\
4. Anything tricky or surprising encountered\n\
5. The exact next step to take when resuming\n\n\
Be specific: include file paths, line numbers, function names, error messages.\n\
Write in concise bullet points under markdown headings. No preamble.";

/// Output tokens of the summary call.
pub const SUMMARY_MAX_TOKENS: u64 = 1024;

/// A continue file as loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// Its `<continue-here>` block for the system prompt.
    pub block: String,
    /// Swival's warning when it is more than a day old.
    pub stale: Option<String>,
}

/// `text` cut to `limit` characters, with `...` when cut (Swival's `_preview_text`).
fn preview(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_owned(),
    }
}

/// `text` cut to `limit` characters.
fn cap(text: &str, limit: usize) -> &str {
    text.char_indices().nth(limit).map_or(text, |(i, _)| &text[..i])
}

/// The text of a user message the user wrote (not a synthetic one), the
/// first or, with `last`, the last.
fn user_task(messages: &[Message], last: bool) -> Option<&str> {
    let real = |m: &&Message| m.role() == Role::User && !m.is_synthetic() && !m.text().is_empty();
    if last {
        messages.iter().rev().find(real).map(Message::text)
    } else {
        messages.iter().find(real).map(Message::text)
    }
}

/// The last tool calls and results, oldest first (Swival's
/// `_extract_recent_tool_activity`: at most 8 messages' worth).
fn activity(messages: &[Message]) -> Vec<String> {
    let mut entries = Vec::new();
    for m in messages.iter().rev() {
        if entries.len() >= 8 {
            break;
        }
        if !m.tool_calls().is_empty() {
            entries.extend(m.tool_calls().iter().map(|c| format!("called `{}`", c.name)));
        } else if m.role() == Role::Tool && !m.own_text().is_empty() {
            entries.push(format!("  → {}", preview(m.own_text(), 120).replace('\n', " ")));
        }
    }
    entries.reverse();
    entries
}

/// The thoughts of the conversation's `think` calls, oldest first.
fn thoughts(messages: &[Message]) -> Vec<String> {
    let calls = messages.iter().flat_map(|m| m.tool_calls()).filter(|c| c.name == crate::tools::registry::names::THINK);
    let thought = |args: &str| {
        let v: serde_json::Value = serde_json::from_str(args).ok()?;
        v.get("thought")?.as_str().map(str::to_owned)
    };
    calls.filter_map(|c| thought(&c.arguments)).collect()
}

/// The snapshot summaries in the conversation (`[snapshot: label]` messages):
/// their labels and summaries, oldest first.
fn snapshots(messages: &[Message]) -> Vec<(String, String)> {
    let parse = |m: &Message| {
        let rest = m.text().strip_prefix("[snapshot: ")?;
        let (label, body) = rest.split_once("]\n")?;
        let summary = body.rsplit_once("\n(collapsed ").map_or(body, |(s, _)| s);
        Some((label.to_owned(), summary.to_owned()))
    };
    messages.iter().filter(|m| m.role() == Role::Assistant).filter_map(parse).collect()
}

/// Swival's deterministic continue file: the current and original task,
/// the todo checklist, the last snapshot summaries and thoughts, and the
/// recent tool activity, cut to 4,000 characters.
pub fn deterministic(messages: &[Message], todo: &[TodoItem]) -> String {
    let mut s: Vec<String> = vec!["# Continue Here\n".to_owned()];
    if let Some(last) = user_task(messages, true) {
        s.extend(["## Current task".to_owned(), preview(last, 500)]);
        if let Some(first) = user_task(messages, false).filter(|f| *f != last) {
            s.extend(["\n## Original task".to_owned(), preview(first, 300)]);
        }
    }
    if !todo.is_empty() {
        s.push("\n## Task checklist".to_owned());
        s.extend(todo.iter().filter(|i| i.done).map(|i| format!("- [x] {}", i.task)));
        s.extend(todo.iter().filter(|i| !i.done).map(|i| format!("- [ ] {}", i.task)));
    }
    let snaps = snapshots(messages);
    if !snaps.is_empty() {
        s.push("\n## Prior investigation summaries".to_owned());
        let recent = &snaps[snaps.len().saturating_sub(5)..];
        let lines = recent.iter().filter(|(_, sum)| !sum.is_empty());
        s.extend(lines.map(|(label, sum)| format!("- **{label}**: {}", preview(sum, 400))));
    }
    let thoughts = thoughts(messages);
    if !thoughts.is_empty() {
        s.push("\n## Key reasoning".to_owned());
        let recent = &thoughts[thoughts.len().saturating_sub(5)..];
        s.extend(recent.iter().map(|t| format!("- {}", preview(t, 200).replace('\n', " "))));
    }
    let activity = activity(messages);
    if !activity.is_empty() {
        s.push("\n## Recent activity".to_owned());
        s.extend(activity.iter().map(|line| format!("- {line}")));
    }
    cap(&s.join("\n"), MAX_CHARS).to_owned()
}

/// The user message of the summary call: the conversation as `[role]
/// text` lines (each cut to 2,000 characters), at most 8,000 characters.
pub fn summary_input(messages: &[Message]) -> String {
    let lines: Vec<String> = messages
        .iter()
        .filter(|m| m.role() != Role::System && !m.text().is_empty())
        .map(|m| format!("[{}] {}", m.role().as_str(), cap(m.text(), 2000)))
        .collect();
    let text = lines.join("\n");
    if text.chars().count() > 8000 {
        return format!("{}\n[... truncated]", cap(&text, 8000));
    }
    text
}

/// Write the continue file (cut to 4,000 characters) in `base`.
pub fn save(base: &Path, text: &str) -> Result<(), NoteError> {
    write(base, &CONTINUE, cap(text, MAX_CHARS))
}

/// Read and remove the continue file of `base`: its `<continue-here>`
/// block, or `None` when there is none (an empty one is removed too).
pub fn take(base: &Path) -> Result<Option<Loaded>, NoteError> {
    let Some((text, modified)) = read(base, &CONTINUE, (MAX_CHARS * 4 + 4) as u64)? else {
        return Ok(None);
    };
    remove(base, &CONTINUE)?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let age = SystemTime::now().duration_since(modified).unwrap_or_default();
    let stale = (age > STALE).then(|| format!("continue file is {}h old — loading anyway", age.as_secs() / 3600));
    Ok(Some(Loaded { block: block(cap(&text, MAX_CHARS)), stale }))
}

/// Remove the continue file of `base` (Swival's `/clear`); whether there
/// was one. One that is a symlink is refused, not removed.
pub fn clear(base: &Path) -> Result<bool, NoteError> {
    match read(base, &CONTINUE, 0)? {
        Some(_) => remove(base, &CONTINUE),
        None => Ok(false),
    }
}

/// `content` in Swival's `<continue-here>` wrapping.
pub fn block(content: &str) -> String {
    format!(
        "<continue-here>\n[This session is resuming interrupted work. The previous session was interrupted \
before completion. Review the state below and continue from where it left off.]\n\n{content}\n</continue-here>"
    )
}

#[cfg(test)]
mod tests;
