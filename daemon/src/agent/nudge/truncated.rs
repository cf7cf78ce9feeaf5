//! Swival's nudge after a reply cut off by the output limit: its text is
//! kept, but it is not taken as the answer; the model is told to go on
//! step by step.

use crate::provider::FinishReason;

/// What the model is told (Swival's words).
pub const WORDS: &str = "Your response was cut off. Please use the provided tools to complete the task step by step.";

/// Whether a reply that finished for `finish_reason` was cut off by the
/// output limit.
pub(in crate::agent) fn fires(finish_reason: Option<&FinishReason>) -> bool {
    finish_reason == Some(&FinishReason::Length)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_output_limit_cuts_a_reply() {
        for (reason, cut) in [(Some("length"), true), (Some("stop"), false), (Some("tool_calls"), false), (None, false)]
        {
            assert_eq!(fires(reason.map(FinishReason::parse).as_ref()), cut, "{reason:?}");
        }
    }
}
