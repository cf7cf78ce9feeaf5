//! Why a tool call failed. The model reads `error: ` and the message
//! ([`ToolError::render`], at the one place a result leaves the toolbox);
//! the wording is Swival's, which models are used to, and each message
//! names the path or argument and what to do instead.

use super::args::ArgError;
use super::path::PathError;
use crate::beneath;
use crate::toolcall::{ArgsError, ToolOutcome};

/// A failed tool call.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The path policy refused a path or could not resolve it.
    #[error(transparent)]
    Path(#[from] PathError),
    /// The arguments are not a JSON object.
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// An argument is missing or of the wrong type.
    #[error(transparent)]
    Arg(#[from] ArgError),
    /// A symlink met beneath the root: the path changed into one after it
    /// was checked, and nothing was touched through it.
    #[error("path {requested} was refused: {symlink} (it changed after the path was checked); only the base directory {base} and allowed_dirs are reachable, so do not try to access it by other means")]
    Changed {
        /// The path as the model wrote it.
        requested: String,
        /// What was met ([`beneath::Error::Symlink`]).
        symlink: beneath::Error,
        /// The base directory, as shown.
        base: String,
    },
    /// I/O on a path failed.
    #[error("cannot {what} {requested}: {source}")]
    Io {
        /// What the tool was doing (`read`, `write`, `list`, …).
        what: &'static str,
        /// The path as the model wrote it.
        requested: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// Any other refusal or failure of one tool, in its own words.
    #[error("{0}")]
    Refused(String),
}

impl ToolError {
    /// A refusal in the tool's own words (without the `error: ` prefix).
    pub fn refused(message: impl Into<String>) -> ToolError {
        ToolError::Refused(message.into())
    }

    /// The tool result the model sees.
    pub fn render(&self) -> String {
        format!("error: {self}")
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
        assert!(o.failed && o.text == "error: no", "{o:?}");
    }
}
