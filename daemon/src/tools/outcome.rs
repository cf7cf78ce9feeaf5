//! What one tool call gave: the text the model reads, and what it means,
//! decided where the result is made. The guards, the `tool_result` event
//! and the report read the flags; nothing downstream looks into the text.

use super::ToolError;

/// How Swival's tool results say they failed.
const ERROR_PREFIX: &str = "error:";

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// What the model reads; a failure is Swival's `error: …` line.
    pub text: String,
    /// The call failed.
    pub failed: bool,
    /// The call succeeded with a note that the change may not be what the
    /// task wanted (`near.rs`), so the model is not pushed to finish.
    pub warned: bool,
}

impl ToolOutcome {
    /// A success.
    pub fn ok(text: String) -> ToolOutcome {
        ToolOutcome { text, failed: false, warned: false }
    }

    /// A success whose text carries a warning note.
    pub fn warned(text: String) -> ToolOutcome {
        ToolOutcome { text, failed: false, warned: true }
    }

    /// A failure; `text` is its `error: …` line.
    pub fn failed(text: String) -> ToolOutcome {
        debug_assert!(text.starts_with(ERROR_PREFIX), "a failure reads as Swival's error line: {text}");
        ToolOutcome { text, failed: true, warned: false }
    }

    /// Add a line to what the model reads (a repair note, a hint); what the
    /// outcome means does not change.
    pub fn append_line(&mut self, line: &str) {
        self.text.push('\n');
        self.text.push_str(line);
    }
}

impl From<ToolError> for ToolOutcome {
    fn from(e: ToolError) -> ToolOutcome {
        ToolOutcome::failed(e.render())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_error_is_a_failure_with_its_error_line() {
        let o = ToolOutcome::from(ToolError::refused("no"));
        assert!(o.failed && o.text.starts_with(ERROR_PREFIX), "{o:?}");
    }

    #[test]
    fn an_appended_line_keeps_what_the_outcome_means() {
        let mut o = ToolOutcome::warned("Wrote 3 bytes".into());
        o.append_line("hint");
        assert_eq!(o, ToolOutcome { text: "Wrote 3 bytes\nhint".into(), failed: false, warned: true });
    }
}
