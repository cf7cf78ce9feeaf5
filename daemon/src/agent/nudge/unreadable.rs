//! A reply whose tool call the server could not read (llama.cpp answers
//! HTTP 500 "Failed to parse tool call arguments as JSON" and keeps the
//! reply to itself): the model is asked anew with a note at the end, as
//! the same request would get the same unreadable call. Turned off, the
//! run fails with the server's error.

/// Stands in the conversation for the reply the server could not read,
/// so the note after it follows an assistant turn.
pub(in crate::agent) const REPLY: &str = "(a reply the server could not read)";

/// What the model is told.
pub(in crate::agent) const WORDS: &str = "Your last reply could not be read: the arguments of its tool call were \
not valid JSON. Call the tool again with arguments that are one JSON object, every string in double quotes, and \
quotes, backslashes and newlines inside a string escaped (\\\", \\\\, \\n). For a long change, edit a smaller part \
of the file.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_what_makes_arguments_readable() {
        for part in ["not valid JSON", "one JSON object", "double quotes", "(\\\", \\\\, \\n)", "smaller part"] {
            assert!(WORDS.contains(part), "{part}");
        }
        assert!(REPLY.starts_with('(') && REPLY.ends_with(')'));
    }
}
