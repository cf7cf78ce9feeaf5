//! What every family of tools shares: a call's arguments, a JSON object
//! ([`parse_args`]), and what the call gave ([`ToolOutcome`]): the text the
//! model reads and what it means, decided where the result is made. The
//! guards, the `tool_result` event and the report read the flags; nothing
//! downstream looks into the text.
//!
//! A file tool's [`Change`] is the one account of what it did to a file:
//! byte-exact, read by the run's change recorder, the nudges, the edit
//! check, the command approvals and the `tool_result` event alike.
//!
//! A leaf: the file tools (`tools/`), the command and fetch tools
//! (`sandbox/`) and the MCP tools (`mcp/`) all use it, and it uses none of
//! them.

use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use swival_protocol::FileChange;

/// How Swival's tool results say they failed.
const ERROR_PREFIX: &str = "error:";
/// What comes before a success's first warning note.
pub const WARNING: &str = "\nNote: ";

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// What the model reads; a failure is Swival's `error: …` line.
    pub text: String,
    /// The call failed.
    pub failed: bool,
    /// The call succeeded with a note that the change may not be what the
    /// task wanted (`tools/near.rs`), so the model is not pushed to finish.
    pub warned: bool,
    /// What the call did to a file: the one account of it.
    pub change: Option<Change>,
    /// A file the call deleted though the task named only something
    /// inside it: the run's answer must account for it.
    pub unasked: Option<UnaskedDelete>,
    /// Where the notes for the model begin in `text` (a repair note, a
    /// guard's hint): what comes before is the tool's own output, the part
    /// a person is shown.
    pub notes_at: Option<usize>,
    /// Set when a write or edit gained nothing (the file left as it was,
    /// or put back to a content it had earlier in the run, or an edit that
    /// could change nothing): what the model is told of it. The loop
    /// guards count it and refuse the same call again.
    pub futile: Option<String>,
}

/// What a call did to one file, byte-exact: the bytes before and after as
/// the tool read and wrote them, so nothing downstream reads the file
/// again to learn it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file, absolute, as the tool reached it (its parents resolved,
    /// the entry itself never followed).
    pub path: PathBuf,
    /// What it held before; `None` when nothing was there.
    pub before: Option<Content>,
    /// What it holds now; `None` when it is gone.
    pub after: Option<Content>,
    /// A rename: the file was moved here from this path, which now holds
    /// nothing.
    pub moved_from: Option<PathBuf>,
}

/// A file's content in a [`Change`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// The bytes, and `st_mode` with its type bits (`0o100644`; `0o120000`
    /// for a symlink, whose bytes are its target).
    Bytes {
        /// The content.
        bytes: Arc<[u8]>,
        /// The mode.
        mode: u32,
    },
    /// A file too large to hold, by its size, SHA-256 and mode.
    Digest {
        /// Size in bytes.
        size: u64,
        /// Lowercase hex SHA-256.
        sha256: String,
        /// The mode.
        mode: u32,
    },
    /// Bytes the tool did not hold: what is at this path now (a file
    /// renamed whole).
    At(PathBuf),
}

/// Texts longer than this are left out of the `tool_result` event's
/// [`FileChange`].
pub const MAX_EVENT_TEXT: usize = 64 * 1024;

impl Content {
    /// The bytes of a regular file.
    pub fn file(bytes: impl Into<Arc<[u8]>>, mode: u32) -> Content {
        Content::Bytes { bytes: bytes.into(), mode }
    }

    /// The bytes, when the tool held them.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Content::Bytes { bytes, .. } => Some(bytes),
            Content::Digest { .. } | Content::At(_) => None,
        }
    }

    /// The text, when the tool held it, it is UTF-8 and at most `max` bytes.
    pub fn text(&self, max: usize) -> Option<&str> {
        self.bytes().filter(|b| b.len() <= max).and_then(|b| std::str::from_utf8(b).ok())
    }
}

impl Change {
    /// A file written: from `before` to `after`.
    pub fn written(path: PathBuf, before: Option<Content>, after: Content) -> Change {
        Change { path, before, after: Some(after), moved_from: None }
    }

    /// The change as an editor's diff shows it (the `tool_result` event):
    /// a file written whose texts, before and after, are UTF-8 and short.
    pub fn for_editor(&self) -> Option<FileChange> {
        if self.moved_from.is_some() {
            return None;
        }
        let new_text = self.after.as_ref()?.text(MAX_EVENT_TEXT)?.to_owned();
        let old_text = match &self.before {
            Some(before) => Some(before.text(MAX_EVENT_TEXT)?.to_owned()),
            None => None,
        };
        Some(FileChange { path: self.path.display().to_string(), old_text, new_text })
    }
}

/// A file deleted though the task named only something inside it
/// (`tools/asked.rs` decides): small models asked to delete one function
/// delete its whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnaskedDelete {
    /// The file, as the model named it.
    pub path: String,
    /// Where it went, from the base dir (`.swival/trash/<id>/<name>`).
    pub trashed: String,
    /// What the task named inside it.
    pub named: Vec<String>,
}

impl ToolOutcome {
    /// A success.
    pub fn ok(text: String) -> ToolOutcome {
        ToolOutcome { text, failed: false, warned: false, change: None, unasked: None, notes_at: None, futile: None }
    }

    /// A success whose text carries a warning note.
    pub fn warned(text: String) -> ToolOutcome {
        ToolOutcome { text, failed: false, warned: true, change: None, unasked: None, notes_at: None, futile: None }
    }

    /// A failure; `text` is its `error: …` line.
    pub fn failed(text: String) -> ToolOutcome {
        debug_assert!(text.starts_with(ERROR_PREFIX), "a failure reads as Swival's error line: {text}");
        ToolOutcome { text, failed: true, warned: false, change: None, unasked: None, notes_at: None, futile: None }
    }

    /// The outcome with the file change it made.
    pub fn with_change(self, change: Option<Change>) -> ToolOutcome {
        ToolOutcome { change, ..self }
    }

    /// The outcome of a write or edit that gained nothing, with what the
    /// model is told of it.
    pub fn with_futile(self, futile: Option<String>) -> ToolOutcome {
        ToolOutcome { futile, ..self }
    }

    /// The outcome of a deletion the task did not plainly ask for.
    pub fn with_unasked(self, unasked: Option<UnaskedDelete>) -> ToolOutcome {
        ToolOutcome { unasked, ..self }
    }

    /// Add a line to the tool's output (a limit that ended a command); what
    /// the outcome means does not change.
    pub fn append_line(&mut self, line: &str) {
        debug_assert!(self.notes_at.is_none(), "the tool's own lines come before the notes for the model");
        self.text.push('\n');
        self.text.push_str(line);
    }

    /// Add a warning to a success: a note that the change may not be what
    /// the task wanted (a check failing after it), after the tool's own
    /// (`\nNote: ` before the first), as the tool writes them.
    pub fn add_warning(&mut self, note: &str) {
        debug_assert!(self.notes_at.is_none(), "warnings come before the notes for the model");
        self.text.push_str(if self.warned { "\n" } else { WARNING });
        self.text.push_str(note);
        self.warned = true;
    }

    /// Add a note for the model (a repair note, a guard's hint): the model
    /// reads it, a person is not shown it.
    pub fn append_note(&mut self, line: &str) {
        self.notes_at.get_or_insert(self.text.len());
        self.text.push('\n');
        self.text.push_str(line);
    }

    /// The tool's own output: the text without the notes for the model.
    pub fn own_text(&self) -> &str {
        own_text(&self.text, self.notes_at)
    }
}

/// `text` up to `notes_at`, where the notes for the model begin (all of it
/// when there are none, or the mark does not fall in it).
pub fn own_text(text: &str, notes_at: Option<usize>) -> &str {
    notes_at.and_then(|at| text.get(..at)).unwrap_or(text)
}

/// Arguments that are not a JSON object.
#[derive(Debug, thiserror::Error)]
pub enum ArgsError {
    /// Valid JSON of another type.
    #[error("tool arguments must be a JSON object, got {0}")]
    NotAnObject(Value),
    /// Not JSON at all.
    #[error("invalid JSON in tool arguments: {0}")]
    Json(#[from] serde_json::Error),
}

impl From<&ArgsError> for ToolOutcome {
    fn from(e: &ArgsError) -> ToolOutcome {
        ToolOutcome::failed(format!("error: {e}"))
    }
}

impl From<ArgsError> for ToolOutcome {
    fn from(e: ArgsError) -> ToolOutcome {
        ToolOutcome::from(&e)
    }
}

/// A tool call's arguments: a JSON object (empty text counts as `{}`).
pub fn parse_args(raw: &str) -> Result<Value, ArgsError> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(raw)? {
        v @ Value::Object(_) => Ok(v),
        other => Err(ArgsError::NotAnObject(other)),
    }
}

/// The JSON type of `v`, for error messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_appended_line_keeps_what_the_outcome_means() {
        let mut o = ToolOutcome::warned("Wrote 3 bytes".into());
        o.append_line("hint");
        assert_eq!(
            o,
            ToolOutcome {
                text: "Wrote 3 bytes\nhint".into(),
                failed: false,
                warned: true,
                change: None,
                unasked: None,
                notes_at: None,
                futile: None
            }
        );
    }

    #[test]
    fn a_note_for_the_model_is_not_the_tools_own_output() {
        let mut o = ToolOutcome::ok("Edited a.py".into());
        o.append_note("If this change completes the task, reply now.");
        o.append_note("(auto-corrected: x)");
        assert_eq!(o.own_text(), "Edited a.py");
        assert!(o.text.ends_with("reply now.\n(auto-corrected: x)"), "{}", o.text);
        assert_eq!(own_text("ab", Some(9)), "ab", "a mark past the text keeps it all");
    }

    #[test]
    fn arguments_that_are_not_an_object_fail_with_swivals_words() {
        assert_eq!(parse_args(" ").unwrap(), Value::Object(Default::default()));
        let o = ToolOutcome::from(parse_args("[1]").unwrap_err());
        assert!(o.failed && o.text == "error: tool arguments must be a JSON object, got [1]", "{o:?}");
        let o = ToolOutcome::from(parse_args("{bad").unwrap_err());
        assert!(o.text.starts_with("error: invalid JSON in tool arguments: "), "{o:?}");
    }
}
