//! One renderer for `run` and `repl`: an event turned into the lines a
//! person reads. A tool call is one line; its result is the tool's own
//! output (its first lines, indented, as numbered as the tool numbered
//! them) or, for a change to a file, a diff with line numbers and `+`/`-`
//! counts; retries, warnings, notices and loop guards are said in words.
//!
//! Everything comes from the event's typed fields: `output` (what a person
//! is shown), `change` (the file before and after), an intervention's kind.
//! What was said to the model — the notes after a tool's output, a loop
//! guard's message — is never shown.

use std::io::IsTerminal;
use swival_protocol::{EventKind, FileChange, Goal, GoalAction, InterventionKind, Loop, LoopAction, NoticeLevel};

/// Lines of a tool's output shown under its call.
const OUTPUT_LINES: usize = 6;
/// Lines of a diff shown under its call (`swivalctl diff` shows it whole).
const DIFF_LINES: usize = 40;
/// Time a diff may take before it settles for a coarser one.
const DIFF_TIME: std::time::Duration = std::time::Duration::from_millis(50);
/// Characters of one shown line.
const LINE_CHARS: usize = 160;

/// Whether and how to colour.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// ANSI colour on.
    pub color: bool,
}

impl Style {
    /// Swival's rule for what goes to stdout: `--no-color` wins, then
    /// `--color`, then `NO_COLOR`, then whether stdout is a terminal.
    pub fn new(color: bool, no_color: bool) -> Style {
        Style::deciding(color, no_color, std::io::stdout().is_terminal())
    }

    /// The same rule for what goes to stderr (`run`'s progress).
    pub fn for_stderr(color: bool, no_color: bool) -> Style {
        Style::deciding(color, no_color, std::io::stderr().is_terminal())
    }

    fn deciding(color: bool, no_color: bool, terminal: bool) -> Style {
        let auto = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && terminal;
        Style { color: !no_color && (color || auto) }
    }

    fn paint(self, code: &str, text: &str) -> String {
        match self.color {
            true => format!("\x1b[{code}m{text}\x1b[0m"),
            false => text.to_owned(),
        }
    }

    /// Dim text (progress, results).
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }

    /// Bold text.
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// A warning.
    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }

    /// An error, a removed line.
    pub fn red(self, text: &str) -> String {
        self.paint("31", text)
    }

    /// An added line.
    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Inline code.
    pub fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }

    /// The REPL's prompt.
    pub fn prompt(self) -> String {
        // rustyline measures the prompt's width; escapes are zero-width.
        self.paint("1;32", "swival> ")
    }
}

/// At most `n` characters of `s` on one line.
pub fn preview(s: &str, n: usize) -> String {
    let one_line = s.replace('\n', " ");
    if one_line.chars().count() <= n {
        return one_line;
    }
    let cut: String = one_line.chars().take(n).collect();
    format!("{cut}…")
}

/// A goal's event in a line (Swival's words where it has them); none
/// for a run of it ending (the run's own end says it).
fn goal_line(style: Style, action: GoalAction, goal: Option<&Goal>) -> String {
    let objective = goal.map(|g| preview(&g.objective, 120)).unwrap_or_default();
    let blocker = goal.and_then(|g| g.last_blocker.as_deref()).map(|b| preview(b, LINE_CHARS)).unwrap_or_default();
    let line = match action {
        GoalAction::Created => match goal.and_then(|g| g.token_budget) {
            Some(b) => format!("goal created: {objective} (budget {b} tokens)"),
            None => format!("goal created: {objective}"),
        },
        GoalAction::Replaced => format!("goal replaced: {objective}"),
        GoalAction::Paused => "goal paused".to_owned(),
        GoalAction::Resumed => "goal resumed".to_owned(),
        GoalAction::Cleared => "goal cleared".to_owned(),
        GoalAction::Completed => format!("goal completed: {objective}"),
        GoalAction::BudgetLimited => format!("goal budget reached: {blocker}"),
        GoalAction::Stuck => format!("goal stuck, waiting for you (/goal resume): {blocker}"),
        GoalAction::Continued => match goal {
            Some(g) => format!("goal run {} of at most {}", g.runs, g.max_runs),
            None => "goal run started".to_owned(),
        },
        GoalAction::Restarted => "goal taken up again after the daemon restarted".to_owned(),
        GoalAction::RunEnded => return String::new(),
    };
    style.cyan(&format!("  ◎ {line}")) + "\n"
}

/// A loop's event in a line, in Swival's words where it has them.
fn loop_line(style: Style, action: LoopAction, l: &Loop) -> String {
    let tag = format!("[loop {}]", l.loop_id);
    let prompt = preview(&l.prompt, 60);
    let error = l.last_error.as_deref().map(|e| preview(e, LINE_CHARS)).unwrap_or_default();
    let next = l.next_fire_at.as_deref().unwrap_or("-");
    let (line, warn) = match action {
        LoopAction::Added => {
            let every = l.schedule.every_s.map_or_else(|| next.to_owned(), super::interval::show);
            (format!("[loop {} registered] interval={every} prompt='{prompt}'", l.loop_id), false)
        }
        LoopAction::Fired => {
            let session = l.last_session.as_ref().map(|s| s.0.as_str()).unwrap_or("-");
            (format!("{tag} firing in session {session}: {prompt}"), false)
        }
        LoopAction::Succeeded => (format!("{tag} done. next fire at {next}."), false),
        LoopAction::Failed => (format!("{tag} {error}"), true),
        LoopAction::Warned => (format!("{tag} 3 consecutive failures, will auto-cancel at 6"), true),
        LoopAction::Cancelled if l.consecutive_failures >= 6 => {
            (format!("{tag} auto-cancelled after 6 consecutive failures (last error: {error})"), true)
        }
        LoopAction::Cancelled => (format!("cancelled loop {}", l.loop_id), false),
        LoopAction::Done => (format!("{tag} done; it fired once and fires no more"), false),
        LoopAction::BudgetLimited => (format!("{tag} its budget is spent; it fires no more: {error}"), true),
        LoopAction::Skipped => (format!("{tag} skipped: {error}"), true),
    };
    if warn {
        style.yellow(&format!("  ⚠ Warning: {line}")) + "\n"
    } else {
        style.cyan(&format!("  ◎ {line}")) + "\n"
    }
}

/// The lines of one event, each ending in a newline; empty for an event
/// shown some other way (streamed text, the run's end) or not at all.
pub fn event(style: Style, kind: &EventKind) -> String {
    match kind {
        EventKind::ToolCall { name, arguments, .. } => tool_call(name, arguments),
        EventKind::ToolResult { succeeded, content, output, change, .. } => {
            let shown = output.as_deref().unwrap_or(content);
            match (succeeded, change) {
                (false, _) => {
                    style.red(&format!("    {}", preview(shown.lines().next().unwrap_or(""), LINE_CHARS))) + "\n"
                }
                (true, Some(change)) => diff(style, change),
                (true, None) => lines(style, shown),
            }
        }
        EventKind::Retry { attempt, delay_s, reason, .. } => {
            format!("  retry {attempt} in {delay_s:.1}s: {}\n", preview(reason, LINE_CHARS))
        }
        EventKind::Warning { message } => style.yellow(&format!("  ⚠ Warning: {message}")) + "\n",
        EventKind::Verify { command, passed: true, .. } => style.dim(&format!("  ✓ check passed: {command}")) + "\n",
        EventKind::Verify { command, exit_code, output, .. } => {
            let how = exit_code.map_or("could not finish".to_owned(), |c| format!("failed (exit code {c})"));
            let mut out = style.red(&format!("  ✗ check {how}: {command}")) + "\n";
            let last: Vec<&str> = output.lines().rev().take(3).collect();
            for line in last.iter().rev() {
                out.push_str(&style.dim(&format!("    {}", preview(line, LINE_CHARS))));
                out.push('\n');
            }
            out
        }
        EventKind::Notice { level, message } => notice(*level, message),
        EventKind::Intervention { kind, tool, repeat, .. } => {
            let count = repeat.as_ref().map_or(0, |r| r.count);
            style.dim(&format!("  ↺ loop guard: {}", guard_words(*kind, tool, count))) + "\n"
        }
        EventKind::Goal { action, goal } => goal_line(style, *action, goal.as_deref()),
        EventKind::Loop { action, loop_ } => loop_line(style, *action, loop_),
        EventKind::Thinking { text: Some(text), .. } => thinking(style, text),
        EventKind::Thinking { lines, tokens, text: None, .. } => {
            style.dim(&format!("  thinking: {lines} lines / ~{tokens} tokens, hidden")) + "\n"
        }
        _ => String::new(),
    }
}

/// The model's reasoning, as Swival's `--show-thinking` keeps it: a bold
/// dim `thinking`, then its lines dim and italic.
fn thinking(style: Style, text: &str) -> String {
    let mut out = style.paint("1;2", "thinking") + "\n";
    for line in text.lines() {
        out.push_str(&style.paint("2;3", line));
        out.push('\n');
    }
    out
}

/// A tool call's line.
pub fn tool_call(name: &str, arguments: &str) -> String {
    format!("  → {name}({})\n", preview(arguments, 80))
}

/// The first lines of a tool's output, indented, and how many more.
fn lines(style: Style, text: &str) -> String {
    let all: Vec<&str> = text.trim_end_matches('\n').lines().collect();
    let mut out = String::new();
    for line in all.iter().take(OUTPUT_LINES) {
        out.push_str(&style.dim(&format!("    {}", preview(line, LINE_CHARS))));
        out.push('\n');
    }
    if all.len() > OUTPUT_LINES {
        out.push_str(&style.dim(&format!("    … {} more lines", all.len() - OUTPUT_LINES)));
        out.push('\n');
    }
    out
}

/// A change to a file as a diff: its name and counts, then its hunks with
/// line numbers (the new file's for kept and added lines, the old file's
/// for removed ones), cut to [`DIFF_LINES`].
fn diff(style: Style, change: &FileChange) -> String {
    use similar::ChangeTag;
    let old = change.old_text.as_deref().unwrap_or("");
    // A deadline bounds the work on two large files with little in common.
    let text_diff = similar::TextDiff::configure().timeout(DIFF_TIME).diff_lines(old, &change.new_text);
    let (mut added, mut removed) = (0, 0);
    for c in text_diff.iter_all_changes() {
        match c.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let mut out = format!("    {} {}\n", style.bold(&shown_path(&change.path)), counts(style, added, removed));
    let mut shown = 0;
    let mut left = 0;
    for (i, group) in text_diff.grouped_ops(2).iter().enumerate() {
        if i > 0 && shown < DIFF_LINES {
            out.push_str(&style.dim("         ⋮\n"));
        }
        for c in group.iter().flat_map(|op| text_diff.iter_changes(op)) {
            if shown == DIFF_LINES {
                left += 1;
                continue;
            }
            shown += 1;
            let text = preview(c.value().trim_end_matches(['\n', '\r']), LINE_CHARS);
            let line = match c.tag() {
                ChangeTag::Delete => style.red(&format!("    {:>4} - {text}", c.old_index().map_or(0, |n| n + 1))),
                ChangeTag::Insert => style.green(&format!("    {:>4} + {text}", c.new_index().map_or(0, |n| n + 1))),
                ChangeTag::Equal => style.dim(&format!("    {:>4}   {text}", c.new_index().map_or(0, |n| n + 1))),
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    if left > 0 {
        out.push_str(&style.dim(&format!("    … {left} more lines (swivalctl diff shows them all)\n")));
    }
    out
}

/// `+N -M`, coloured.
fn counts(style: Style, added: usize, removed: usize) -> String {
    format!("{} {}", style.green(&format!("+{added}")), style.red(&format!("-{removed}")))
}

/// A changed file's path from the current directory when it is under it.
fn shown_path(path: &str) -> String {
    let cwd = std::env::current_dir().ok();
    let rel = cwd.as_deref().and_then(|cwd| std::path::Path::new(path).strip_prefix(cwd).ok());
    rel.map_or_else(|| path.to_owned(), |r| r.display().to_string())
}

/// What a nudge or a loop guard did, in words for a person (what it
/// told the model is the model's).
fn guard_words(kind: InterventionKind, tool: &str, count: u64) -> String {
    match kind {
        InterventionKind::Nudge => format!("loop guard: {tool} failed the same way twice; the model was nudged"),
        InterventionKind::Stop => {
            format!("loop guard: {tool} keeps failing the same way; the model was told to stop repeating it")
        }
        InterventionKind::Storm => format!("loop guard: an identical {tool} call was refused ({count} in a row)"),
        InterventionKind::Reread => {
            format!("loop guard: {tool} read the same thing again; the model was told it has it")
        }
        InterventionKind::Finish => {
            "loop guard: only reads since the last change; the model was told to answer".to_owned()
        }
        InterventionKind::Stuck => {
            "loop guard: repeats refused too often; tools are off for the final answer".to_owned()
        }
        InterventionKind::Runaway if tool.is_empty() => {
            "loop guard: the reply kept repeating the same text; it was cut off there".to_owned()
        }
        InterventionKind::Runaway => {
            format!("loop guard: the {tool} call kept repeating the same text; it was cut off, not run")
        }
        InterventionKind::CallCap => "loop guard: too many tool calls in one reply; the rest were not run".to_owned(),
        InterventionKind::Unchanged => {
            format!("loop guard: {tool} changed nothing; the model was told the change is made")
        }
        InterventionKind::DoneHint => "the model was told to answer if the change completes the task".to_owned(),
        InterventionKind::Empty => "nudge: the reply was empty; the model was told to go on".to_owned(),
        InterventionKind::Truncated => {
            "nudge: the reply was cut off at the output limit; the model was told to go on".to_owned()
        }
        InterventionKind::Unreadable => {
            "nudge: the server could not read the reply's tool call; the model was asked again".to_owned()
        }
        InterventionKind::LookFirst => {
            "nudge: the model answered without looking; it was told to look first".to_owned()
        }
        InterventionKind::DeletedUnasked => {
            format!("nudge: the answer does not say why a whole file went ({tool}); the model was asked")
        }
        InterventionKind::Unmade => {
            "nudge: the model answered with no change made; it was asked to make it or say why".to_owned()
        }
    }
}

/// A notice as Swival prints it: a symbol, the first line, and any further
/// lines (a reviewer's feedback) indented below it.
fn notice(level: NoticeLevel, message: &str) -> String {
    let symbol = match level {
        NoticeLevel::Info => "▶",
        NoticeLevel::Success => "✓",
    };
    let mut lines = message.lines();
    let mut out = format!("  {symbol} {}\n", lines.next().unwrap_or_default());
    for line in lines {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Style = Style { color: false };

    fn result(content: &str, output: Option<&str>, change: Option<FileChange>) -> EventKind {
        EventKind::ToolResult {
            turn: 1,
            id: "c".into(),
            name: "t".into(),
            succeeded: true,
            duration_s: 0.0,
            content: content.into(),
            result_length: None,
            output: output.map(str::to_owned),
            change,
            todo: None,
        }
    }

    #[test]
    fn output_shows_its_first_lines_and_never_the_notes_for_the_model() {
        let text: String = (1..=9).map(|n| format!("{n}: line {n}\n")).collect();
        let out = event(PLAIN, &result(&format!("{text}a note for the model"), Some(&text), None));
        assert!(out.starts_with("    1: line 1\n    2: line 2\n"), "{out}");
        assert!(out.ends_with("    6: line 6\n    … 3 more lines\n"), "{out}");
        assert!(!out.contains("note for the model"), "{out}");
    }

    #[test]
    fn a_change_is_a_diff_with_numbers_and_counts() {
        let change = FileChange {
            path: "/nowhere/a.py".into(),
            old_text: Some("def add(a, b):\n    return a - b\n".into()),
            new_text: "def add(a, b):\n    return a + b\n".into(),
        };
        let out = event(PLAIN, &result("Edited a.py", None, Some(change)));
        assert_eq!(
            out,
            "    /nowhere/a.py +1 -1\n       1   def add(a, b):\n       2 -     return a - b\n       2 +     return a + b\n"
        );
    }

    #[test]
    fn a_guard_is_said_in_words_for_a_person() {
        let kind = EventKind::Intervention {
            turn: 1,
            kind: InterventionKind::Finish,
            tool: String::new(),
            message: "reply now".into(),
            repeat: None,
        };
        let out = event(PLAIN, &kind);
        assert!(out.contains("loop guard") && !out.contains("reply now"), "{out}");
    }
}
