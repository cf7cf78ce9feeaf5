//! Swival's cleanup of a reply's thinking marks: a leading stray `<think>`
//! (one no `</think>` closes) or `</think>` line, or a
//! `<|channel>analysis<channel|>` header, is always taken off; with `sanitize_thinking`, every whole `<think>…</think>`
//! block goes too. Text in code fences is reply text like any other: these
//! tags are the model's template leaking, not code.

use std::borrow::Cow;

/// The channel header some templates leak before the analysis.
const CHANNEL_HEADER: &str = "<|channel>analysis<channel|>";

/// `text` without its stray leading mark and, when `blocks`, without its
/// `<think>…</think>` blocks; borrowed when nothing changed.
pub fn clean(text: &str, blocks: bool) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if blocks && text.contains("<think>") {
        out = Cow::Owned(without_blocks(text));
    }
    match stray_start(&out) {
        Some(at) => Cow::Owned(out[at..].to_owned()),
        None => out,
    }
}

/// Where the text begins after a first line that is only a stray mark.
fn stray_start(text: &str) -> Option<usize> {
    let start = text.len() - text.trim_start().len();
    let rest = &text[start..];
    let line_end = rest.find('\n').unwrap_or(rest.len());
    let line = rest[..line_end].trim();
    // A `<think>` line that a `</think>` closes opens a block: not stray.
    let stray_open = line == "<think>" && !rest[line_end..].contains("</think>");
    let after = if stray_open || line == "</think>" {
        start + line_end
    } else if rest.starts_with(CHANNEL_HEADER) {
        start + CHANNEL_HEADER.len()
    } else {
        return None;
    };
    Some(text.len() - text[after..].trim_start().len())
}

/// `text` with each `<think>…</think>` block removed (an unclosed one runs
/// to the end), and the blank space it leaves at the start trimmed.
fn without_blocks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("<think>") {
        out.push_str(&rest[..open]);
        match rest[open..].find("</think>") {
            Some(close) => rest = &rest[open + close + "</think>".len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    match out.trim_start().len() {
        n if n == out.len() => out,
        n => out[out.len() - n..].to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stray_leading_mark_always_goes_and_blocks_only_when_asked() {
        let cases: &[(&str, bool, &str)] = &[
            ("<think>\nThe answer is 4.", false, "The answer is 4."),
            ("</think>\n\nDone.", false, "Done."),
            ("<|channel>analysis<channel|>Fine.", false, "Fine."),
            ("<think>plan</think>\nThe answer.", false, "<think>plan</think>\nThe answer."),
            ("<think>\nplan\n</think>\nThe answer.", false, "<think>\nplan\n</think>\nThe answer."),
            ("<think>plan</think>\nThe answer.", true, "The answer."),
            ("Before <think>x</think>after", true, "Before after"),
            ("<think>never closed", true, ""),
            ("No marks at all.", true, "No marks at all."),
        ];
        for (text, blocks, want) in cases {
            assert_eq!(clean(text, *blocks), *want, "{text:?} (blocks: {blocks})");
        }
        assert!(matches!(clean("plain", true), Cow::Borrowed(_)));
    }
}
