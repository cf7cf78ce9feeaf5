//! How a REPL comes to its session. `--session ID` works on that one.
//! Otherwise no session exists until there is something to keep in it:
//! the first task, or a command that works on a session (`/status`,
//! `/model`, `/save`, …) makes it, untitled, and the daemon titles it from
//! its first run's task. Until then the prompt reads lines with no session
//! behind it, so opening the REPL and leaving makes nothing.
//!
//! Made late rather than deleted on leaving: nothing is ever deleted, so a
//! REPL that dies (a closed terminal, a kill, a lost daemon) leaves no
//! empty session either, and a session another client holds (`--session`,
//! `/attach`, an editor's) can never go away under it.

use super::commands::listed;
use super::show::Style;
use super::{Lost, Repl};
use crate::cmd::args::RunArgs;
use crate::cmd::daemon::connect;
use crate::cmd::slash::{self, Slash};
use std::path::Path;
use std::process::ExitCode;
use swival_protocol::{SessionDetail, SessionId};
use swivalctl::{Client, ClientError};

/// The session a REPL works on, and what it does first.
pub struct Opened {
    /// The session.
    pub session: SessionId,
    /// An existing session as it was (`--session`, `/attach`): its recent
    /// conversation is shown.
    pub replay: Option<SessionDetail>,
    /// What to do first.
    pub first: Option<Todo>,
}

/// What a REPL does first.
pub enum Todo {
    /// `repl TASK`'s task.
    Task(String),
    /// The line that made the session (a task or a command).
    Line(String),
}

/// The session to work on: `attached` (`--session`'s), one made for
/// `repl TASK`, or one made by the first line that needs it; the exit code
/// to end with when the user leaves first or the daemon refuses the config.
pub async fn open(
    client: &mut Client,
    socket: &Path,
    editor: &mut super::editor::LineEditor,
    style: Style,
    a: &RunArgs,
    base_dir: &Path,
    attached: Option<SessionDetail>,
) -> Result<Result<Opened, ExitCode>, Lost> {
    let first = a.task.clone().map(Todo::Task);
    if let Some(detail) = attached {
        return Ok(Ok(Opened { session: detail.info.session_id.clone(), replay: Some(detail), first }));
    }
    if let Some(todo) = first {
        return make(client, socket, a, base_dir, todo).await;
    }
    let words = format!("swival in {} — /help for commands, /exit or Ctrl-D to quit", base_dir.display());
    eprint!("{}", style.dim(&format!("  {}\n", crate::cmd::clean::text(&words))));
    match before_session(client, editor, style, base_dir).await {
        Before::Leave => Ok(Err(ExitCode::SUCCESS)),
        Before::Attach(detail) => {
            Ok(Ok(Opened { session: detail.info.session_id.clone(), replay: Some(*detail), first: None }))
        }
        Before::Line(line) => make(client, socket, a, base_dir, Todo::Line(line)).await,
    }
}

impl Repl {
    /// Say which session this is and do what comes first; true when the
    /// user leaves.
    pub(super) async fn begin(&mut self, first: Option<Todo>) -> Result<bool, Lost> {
        if let Some(Todo::Line(line)) = &first {
            self.info(&format!("session {}", self.session));
            return self.act(line).await;
        }
        let (id, dir) = (&self.session, self.base_dir.display());
        self.info(&format!("session {id} in {dir} — /help for commands, /exit or Ctrl-D to quit"));
        match first {
            Some(Todo::Task(task)) => self.prompt(&task, false).await.map(|()| false),
            _ => Ok(false),
        }
    }
}

/// How the lines read before a session ended.
enum Before {
    /// The user left.
    Leave,
    /// `/attach ID`: work on that session.
    Attach(Box<SessionDetail>),
    /// This line needs a session.
    Line(String),
}

/// Read lines with no session yet: what needs none is done here, until
/// the user leaves or a line needs a session.
async fn before_session(
    client: &mut Client,
    editor: &mut super::editor::LineEditor,
    style: Style,
    base_dir: &Path,
) -> Before {
    let say = |text: &str| {
        let lines: String = crate::cmd::clean::text(text).lines().map(|l| format!("  {l}\n")).collect();
        eprint!("{}", style.dim(&lines));
    };
    let warn = |text: &str| eprint!("{}", style.yellow(&format!("  ⚠ Warning: {}\n", crate::cmd::clean::text(text))));
    let mut prompt = super::editor::Prompt::default();
    loop {
        editor.ask(&style.prompt(), true);
        let line = match prompt.read(editor.answer().await) {
            super::editor::Read::Leave => return Before::Leave,
            super::editor::Read::Again => continue,
            super::editor::Read::Warn => {
                say("Press Ctrl-C again or Ctrl-D to exit");
                continue;
            }
            super::editor::Read::Line(line) => line,
        };
        let line = line.trim();
        let name = line.split_whitespace().next().unwrap_or("");
        match slash::parse(line) {
            _ if line.is_empty() => {}
            _ if line.starts_with("!!") => super::shell(base_dir, line.trim_start_matches('!').trim()).await,
            Some((Slash::Help, _)) => eprint!("{}", slash::help()),
            Some((Slash::Exit, _)) => return Before::Leave,
            Some((Slash::Clear, _)) => say("nothing to clear: a session is made at your first task"),
            Some((Slash::Sessions, arg)) => match listed(client, base_dir, arg, None).await {
                Ok(text) => say(text.trim_end()),
                Err(e) => warn(&e.to_string()),
            },
            Some((Slash::Attach, "")) => warn("/attach requires a session id (/sessions lists them)"),
            Some((Slash::Attach, arg)) => match client.session(&SessionId(arg.to_owned())).await {
                Ok(detail) => return Before::Attach(Box::new(detail)),
                Err(e) => warn(&e.to_string()),
            },
            _ => match slash::unknown(name).filter(|_| name.starts_with('/')) {
                Some(words) => warn(&words),
                None => return Before::Line(line.to_owned()),
            },
        }
    }
}

/// Make the REPL's session for what it does first, connecting again when
/// the daemon went away meanwhile (nothing is lost: there was no session).
async fn make(
    client: &mut Client,
    socket: &Path,
    a: &RunArgs,
    base_dir: &Path,
    first: Todo,
) -> Result<Result<Opened, ExitCode>, Lost> {
    let (Todo::Task(line) | Todo::Line(line)) = &first;
    let mut made = crate::cmd::open::create_session(client, a, base_dir, line).await;
    if matches!(made, Err(ClientError::Transport(_))) && !client.is_connected() {
        *client = connect(socket).await.map_err(|e| Lost(e.to_string()))?;
        made = crate::cmd::open::create_session(client, a, base_dir, line).await;
    }
    match made {
        Ok(Ok(session)) => Ok(Ok(Opened { session, replay: None, first: Some(first) })),
        Ok(Err(code)) => Ok(Err(code)),
        Err(e) => Err(Lost(format!("cannot make a session: {e}"))),
    }
}
