//! How the REPL writes: colour (off with `NO_COLOR`, `--no-color`, or
//! when output is not a terminal; on with `--color`, as in Swival), an
//! answer rendered for a terminal line by line as it streams (headings,
//! lists and inline code marked; code blocks kept verbatim, to copy), and
//! the recent conversation of a session attached to.

pub use crate::cmd::render::{preview, Style};
use swival_protocol::ConversationItem;

/// An answer rendered as it streams: whole lines are written as they
/// complete, the rest when the answer ends.
#[derive(Debug)]
pub struct Answer {
    /// How to colour.
    style: Style,
    /// The line not complete yet.
    pending: String,
    /// Inside a fenced code block.
    in_code: bool,
    /// Everything pushed so far, as it came.
    pub text: String,
}

impl Answer {
    /// A new answer.
    pub fn new(style: Style) -> Answer {
        Answer { style, pending: String::new(), in_code: false, text: String::new() }
    }

    /// Take `delta`; the lines it completed, rendered.
    pub fn push(&mut self, delta: &str) -> String {
        self.text.push_str(delta);
        self.pending.push_str(delta);
        let mut out = String::new();
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            out.push_str(&self.line(line.trim_end_matches('\n')));
            out.push('\n');
        }
        out
    }

    /// The line left, rendered (with its newline), when there is one.
    pub fn finish(&mut self) -> String {
        if self.pending.is_empty() {
            return String::new();
        }
        let line = std::mem::take(&mut self.pending);
        format!("{}\n", self.line(&line))
    }

    /// One line, rendered.
    fn line(&mut self, line: &str) -> String {
        let style = self.style;
        if line.trim_start().starts_with("```") {
            self.in_code = !self.in_code;
            return style.dim(line);
        }
        if self.in_code || !style.color {
            return line.to_owned();
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with('#') && trimmed.trim_start_matches('#').starts_with(' ') {
            return style.bold(trimmed.trim_start_matches('#').trim_start());
        }
        let indent = &line[..line.len() - trimmed.len()];
        if let Some(item) = trimmed.strip_prefix("- ").or_else(|| trimmed.strip_prefix("* ")) {
            return format!("{indent}• {}", inline(style, item));
        }
        inline(style, line)
    }
}

/// `**bold**` and `` `code` `` marked in a line.
fn inline(style: Style, line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    loop {
        let bold = rest.find("**");
        let code = rest.find('`');
        let (at, mark, code_span) = match (bold, code) {
            (Some(b), Some(c)) if c < b => (c, "`", true),
            (Some(b), _) => (b, "**", false),
            (None, Some(c)) => (c, "`", true),
            (None, None) => break,
        };
        let after = &rest[at + mark.len()..];
        let Some(close) = after.find(mark) else { break };
        out.push_str(&rest[..at]);
        let inner = &after[..close];
        out.push_str(&if code_span { style.cyan(inner) } else { style.bold(inner) });
        rest = &after[close + mark.len()..];
    }
    out.push_str(rest);
    out
}

/// A whole answer, rendered.
pub fn render(style: Style, text: &str) -> String {
    let mut answer = Answer::new(style);
    let mut out = answer.push(text);
    out.push_str(&answer.finish());
    out
}

/// Most messages of the recent conversation shown on attaching.
const RECENT: usize = 12;

/// The recent conversation of a session (its stored messages): prompts,
/// answers, and tool calls as one-line summaries; synthetic messages and
/// tool results are left out.
pub fn recent(style: Style, messages: &[ConversationItem]) -> String {
    let mut shown: Vec<String> = Vec::new();
    for m in messages {
        match m {
            ConversationItem::User { content, synthetic: false } if !content.trim().is_empty() => {
                shown.push(format!("{}{}\n", style.prompt(), preview(content, 200)));
            }
            ConversationItem::Assistant { content, tool_calls, .. } => {
                for call in tool_calls {
                    let args = preview(&call.function.arguments, 80);
                    shown.push(style.dim(&format!("  → {}({args})\n", call.function.name)));
                }
                if let Some(text) = content.as_deref().filter(|t| !t.trim().is_empty()) {
                    shown.push(render(style, text.trim_end()));
                }
            }
            _ => {}
        }
    }
    let skip = shown.len().saturating_sub(RECENT);
    shown[skip..].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Style = Style { color: false };
    const COLOR: Style = Style { color: true };

    #[test]
    fn streamed_lines_come_out_whole_and_plain_without_colour() {
        let mut a = Answer::new(PLAIN);
        assert_eq!(a.push("# Ti"), "");
        assert_eq!(a.push("tle\n- one\n```\nlet x = `y`;\n"), "# Title\n- one\n```\nlet x = `y`;\n");
        assert_eq!(a.finish(), "");
        assert_eq!(a.push("tail"), "");
        assert_eq!(a.finish(), "tail\n");
    }

    #[test]
    fn colour_marks_headings_lists_and_inline_code_but_not_code_blocks() {
        let out = render(COLOR, "## Plan\n- use `cargo`\n```\n- not a list **x**\n```\n");
        assert!(out.starts_with("\x1b[1mPlan\x1b[0m\n"), "{out:?}");
        assert!(out.contains("• use \x1b[36mcargo\x1b[0m\n"), "{out:?}");
        assert!(out.contains("\n- not a list **x**\n"), "{out:?}");
    }

    #[test]
    fn the_recent_conversation_shows_prompts_answers_and_calls_not_synthetic_notes() {
        let messages: Vec<ConversationItem> = serde_json::from_str(
            r#"[{"role": "system", "content": "sys"}, {"role": "user", "content": "fix it"},
                {"role": "user", "content": "named files", "synthetic": true},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"file_path\":\"a\"}"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "1: x"},
                {"role": "assistant", "content": "done"}]"#,
        )
        .unwrap();
        let out = recent(PLAIN, &messages);
        assert_eq!(out, "swival> fix it\n  → read_file({\"file_path\":\"a\"})\ndone\n");
    }
}
