//! Swival's nudge after an empty reply: a reply with no text and no tool
//! call is not an answer; the model is told to go on.

/// What the model is told (Swival's words).
pub const WORDS: &str = "Your response was empty. Please continue working on the task using the available tools.";

/// Stands in the conversation for the empty reply (Swival's).
pub(in crate::agent) const REPLY: &str = "(empty response)";

/// Whether a reply without tool calls, of this text, is empty.
pub(in crate::agent) fn fires(text: &str) -> bool {
    text.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_reply_with_nothing_but_blanks_is_empty() {
        for (text, empty) in [("", true), ("  \n\t", true), ("4", false), ("…", false), ("完成", false)] {
            assert_eq!(fires(text), empty, "{text:?}");
        }
    }
}
