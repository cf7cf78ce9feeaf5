//! A reply cut as it kept repeating itself while it streamed
//! (`provider/repeat.rs` sees the loop, `provider/openai.rs` closes the
//! stream): the call it cut is dropped (its arguments are not whole), the
//! calls before it run, and the model is told what was cut and why.
//! Turned off, the stream runs to the output limit.

/// Stands in the conversation for a reply cut before any text, so the
/// note after it follows an assistant turn.
pub(in crate::agent) const REPLY: &str = "(a reply cut off as it repeated itself)";

/// What the model is told after a reply cut for repeating `unit`
/// `repeats` times, in its text (`tool` empty) or in the arguments of a
/// call of `tool`.
pub(in crate::agent) fn words(tool: &str, unit: &str, repeats: u64) -> String {
    let unit: String = unit.chars().take(80).collect();
    match tool {
        "" => format!(
            "Your last reply was cut off: it kept repeating the same text ({unit:?}, {repeats} times in a row), so it \
             was stopped there. Do not write that again. Go on with the task from where the repetition began: call \
             a tool if a change is left to make, or give your final answer in a few sentences."
        ),
        tool => format!(
            "Your last reply was cut off: the arguments of its {tool} call kept repeating the same text ({unit:?}, \
             {repeats} times in a row), so that call was stopped and not run. Call it again without the repetition; \
             for a long change, change a smaller part of the file at a time."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_name_the_text_or_the_call_that_repeated() {
        let long = "ab".repeat(100);
        let cases: [(&str, &str, &str); 3] = [
            ("", "la la", "it kept repeating the same text (\"la la\", 9 times in a row)"),
            ("write_file", "x = 1\n", "its write_file call kept repeating the same text (\"x = 1\\n\", 9 times"),
            ("", &long, &"ab".repeat(40)),
        ];
        for (tool, unit, said) in cases {
            let w = words(tool, unit, 9);
            assert!(w.contains(said), "{w}");
        }
        assert!(!words("", &long, 9).contains(&"ab".repeat(41)), "the unit is cut at 80 characters");
    }
}
