//! The REPL's line editor: rustyline on a thread of its own (it blocks on
//! the terminal), asked for one line at a time over a channel. History is
//! kept per project under the XDG state directory and searched with
//! Ctrl-R; a line ending in `\` goes on on the next line (so does
//! Alt-Enter); a pasted block is one prompt; Tab completes slash commands,
//! and paths after `/add-dir` and `/add-dir-ro`.

use crate::cmd::slash::COMMANDS;
use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Cmd, CompletionType, ConditionalEventHandler, Config, Context, EditMode, Editor, Event, EventContext, EventHandler,
    ExternalPrinter, Helper, KeyCode, KeyEvent, Modifiers, RepeatCount,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use tokio::sync::mpsc as tmpsc;

/// Lines of history kept per project.
const HISTORY_LINES: usize = 5000;

/// What the user did at a prompt.
#[derive(Debug)]
pub enum Input {
    /// A line (continuation lines joined with newlines).
    Line(String),
    /// Ctrl-C; `typed`: the line held text, which Ctrl-C cleared.
    Interrupted {
        /// Whether the prompt held text.
        typed: bool,
    },
    /// Ctrl-D on an empty line.
    Eof,
}

/// The prompt's state between inputs: Ctrl-C on an empty line warns, and
/// a second one in a row leaves (as Ctrl-D does).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    /// Reading lines.
    #[default]
    Reading,
    /// The last input was Ctrl-C on an empty line: another one leaves.
    Leaving,
}

/// What an input at the prompt comes to.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// A line to act on.
    Line(String),
    /// Leave the REPL.
    Leave,
    /// Say how to leave, and read again.
    Warn,
    /// Nothing: read again.
    Again,
}

impl Prompt {
    /// What `input` comes to, and the state it leaves.
    pub fn read(&mut self, input: Input) -> Read {
        let (next, read) = match (*self, input) {
            (_, Input::Eof) | (Prompt::Leaving, Input::Interrupted { typed: false }) => (Prompt::Reading, Read::Leave),
            (Prompt::Reading, Input::Interrupted { typed: false }) => (Prompt::Leaving, Read::Warn),
            (_, Input::Interrupted { typed: true }) => (Prompt::Reading, Read::Again),
            (_, Input::Line(line)) => (Prompt::Reading, Read::Line(line)),
        };
        *self = next;
        read
    }
}

/// Prints while a prompt is shown, redrawing it below what was printed.
pub type Printer = Box<dyn ExternalPrinter + Send>;

/// The line editor, running on its thread.
pub struct LineEditor {
    /// Prompts to show (each answered once on `lines`).
    prompts: mpsc::Sender<(String, bool)>,
    /// What the user typed at each prompt.
    lines: tmpsc::UnboundedReceiver<Input>,
    /// Whether a prompt is on the screen now.
    pub showing: bool,
}

impl LineEditor {
    /// Start the editor for a project whose history is `history` (created
    /// when missing); the printer writes above a shown prompt.
    pub fn start(history: Option<PathBuf>) -> Result<(LineEditor, Option<Printer>), String> {
        let config = Config::builder()
            .edit_mode(EditMode::Emacs)
            .max_history_size(HISTORY_LINES)
            .and_then(|c| c.history_ignore_dups(true))
            .map_err(|e| format!("cannot set up the line editor: {e}"))?
            .auto_add_history(false)
            .completion_type(CompletionType::List)
            .bracketed_paste(true)
            .build();
        let mut editor: Editor<ReplHelper, FileHistory> =
            Editor::with_config(config).map_err(|e| format!("cannot open the terminal for the line editor: {e}"))?;
        let typed = Arc::new(AtomicBool::new(false));
        editor.set_helper(Some(ReplHelper { files: FilenameCompleter::new() }));
        editor.bind_sequence(KeyEvent(KeyCode::Enter, Modifiers::ALT), EventHandler::Simple(Cmd::Newline));
        editor.bind_sequence(KeyEvent::ctrl('C'), EventHandler::Conditional(Box::new(CtrlC(typed.clone()))));
        if let Some(path) = &history {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = editor.load_history(path);
        }
        let printer = editor.create_external_printer().ok().map(|p| Box::new(p) as Printer);
        let (prompts, asked) = mpsc::channel::<(String, bool)>();
        let (answer, lines) = tmpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("repl-editor".into())
            .spawn(move || serve(editor, asked, answer, history, typed))
            .map_err(|e| format!("cannot start the line editor: {e}"))?;
        Ok((LineEditor { prompts, lines, showing: false }, printer))
    }

    /// Show `prompt`; `remember`: the line goes into the history.
    pub fn ask(&mut self, prompt: &str, remember: bool) {
        if self.prompts.send((prompt.to_owned(), remember)).is_ok() {
            self.showing = true;
        }
    }

    /// The answer to the prompt shown (end of input when the editor is gone).
    pub async fn answer(&mut self) -> Input {
        let input = self.lines.recv().await.unwrap_or(Input::Eof);
        self.showing = false;
        input
    }
}

/// The editor's thread: one line per prompt asked.
fn serve(
    mut editor: Editor<ReplHelper, FileHistory>,
    asked: mpsc::Receiver<(String, bool)>,
    answer: tmpsc::UnboundedSender<Input>,
    history: Option<PathBuf>,
    typed: Arc<AtomicBool>,
) {
    while let Ok((prompt, remember)) = asked.recv() {
        typed.store(false, Ordering::SeqCst);
        let input = match editor.readline(&prompt) {
            Ok(line) => {
                if remember && !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                    if let Some(path) = &history {
                        let _ = editor.append_history(path);
                    }
                }
                Input::Line(line.replace("\\\n", "\n"))
            }
            Err(ReadlineError::Interrupted) => Input::Interrupted { typed: typed.load(Ordering::SeqCst) },
            Err(_) => Input::Eof,
        };
        if answer.send(input).is_err() {
            return;
        }
    }
}

/// Ctrl-C: remembers whether the line held text, then interrupts.
struct CtrlC(Arc<AtomicBool>);

impl ConditionalEventHandler for CtrlC {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        self.0.store(!ctx.line().is_empty(), Ordering::SeqCst);
        Some(Cmd::Interrupt)
    }
}

/// Completion and line continuation.
struct ReplHelper {
    /// Completes paths.
    files: FilenameCompleter,
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let head = &line[..pos];
        if head.starts_with('/') && !head.contains(' ') {
            let names = COMMANDS.iter().filter(|c| c.name.starts_with(head));
            let pairs = names.map(|c| Pair { display: c.name.to_owned(), replacement: format!("{} ", c.name) });
            return Ok((0, pairs.collect()));
        }
        if head.starts_with("/add-dir ") || head.starts_with("/add-dir-ro ") {
            return self.files.complete(line, pos, ctx);
        }
        Ok((pos, Vec::new()))
    }
}

impl Validator for ReplHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(match ctx.input().ends_with('\\') {
            true => ValidationResult::Incomplete,
            false => ValidationResult::Valid(None),
        })
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {}

impl Helper for ReplHelper {}

/// Where a project's REPL history is kept: `$XDG_STATE_HOME/swival/repl/`
/// (else `~/.local/state/swival/repl/`), one file per base dir, named
/// after its path.
pub fn history_file(base_dir: &Path) -> Option<PathBuf> {
    let state = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".local/state"),
    };
    let name: String =
        base_dir.display().to_string().chars().map(|c| if c == '/' || c == '\\' { '%' } else { c }).collect();
    Some(state.join("swival/repl").join(format!("{name}.history")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projects_history_lives_under_the_state_dir_named_after_its_path() {
        let path = history_file(Path::new("/home/u/proj")).unwrap();
        assert!(path.ends_with("swival/repl/%home%u%proj.history"), "{}", path.display());
    }
}

#[cfg(test)]
mod prompt_tests {
    use super::*;

    #[test]
    fn a_second_ctrl_c_in_a_row_on_an_empty_line_leaves_and_anything_between_disarms_it() {
        let mut p = Prompt::default();
        let empty = || Input::Interrupted { typed: false };
        assert_eq!(p.read(empty()), Read::Warn);
        assert_eq!(p.read(empty()), Read::Leave);
        assert_eq!(p.read(empty()), Read::Warn);
        assert_eq!(p.read(Input::Interrupted { typed: true }), Read::Again, "clearing a line disarms");
        assert_eq!(p.read(empty()), Read::Warn);
        assert_eq!(p.read(Input::Line("hi".into())), Read::Line("hi".into()));
        assert_eq!(p.read(empty()), Read::Warn, "a line disarms");
        assert_eq!(p.read(Input::Eof), Read::Leave);
    }
}
