//! `swivalctl repl`: an interactive terminal on a daemon session. The
//! conversation lives in the daemon, so closing the terminal loses
//! nothing: `--session ID` attaches again (showing the recent
//! conversation first), another terminal or an editor may run on the same
//! session and its runs show here live, and a daemon that restarts is
//! reconnected to, resuming from the last event shown.
//!
//! A new REPL's session is made by the first line that needs one (a task,
//! or a command that works on a session; `start.rs`), so opening the REPL
//! and leaving makes none; the daemon titles it from its first task.
//!
//! One subscription follows the session's events for the REPL's life; a
//! run is started with a client token, so its events are told from other
//! clients' runs by data, not words.

mod agents;
pub(crate) mod commands;
mod editor;
mod goal;
mod loops;
mod show;
mod start;
mod turn;

use super::args::RunArgs;
use super::daemon::connect;
use super::flags;
use commands::Next;
use editor::{Input, LineEditor, Printer};
use jsonrpsee::core::client::Subscription;
use show::Style;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use swival_protocol::{Event, EventKind, RunId, SessionId};
use swivalctl::{Client, ClientError};

/// How long a lost daemon is waited for before the REPL gives up
/// (`SWIVALCTL_RECONNECT_S` sets it).
fn reconnect_for() -> Duration {
    let secs = std::env::var("SWIVALCTL_RECONNECT_S").ok().and_then(|s| s.parse::<f64>().ok());
    Duration::from_secs_f64(secs.filter(|s| s.is_finite() && *s >= 0.0).unwrap_or(60.0))
}

/// Daemons a REPL starts at most in its life, after losing one.
const MAX_STARTS: u32 = 3;

/// An interactive session.
pub struct Repl {
    /// The daemon.
    client: Client,
    /// Its socket, to reconnect to.
    socket: PathBuf,
    /// The session worked on.
    session: SessionId,
    /// Its project.
    base_dir: PathBuf,
    /// The session's events.
    events: Subscription<Event>,
    /// The last event seq shown (resumed from after a reconnect).
    last_seq: u64,
    /// The line editor.
    editor: LineEditor,
    /// Prints above a shown prompt.
    printer: Option<Printer>,
    /// How to write.
    style: Style,
    /// The last answer shown, for `/copy`.
    last_answer: Option<String>,
    /// The last prompt estimate of the session's context, for `/status`.
    context_tokens: Option<u64>,
    /// Ctrl-C while a run goes (the terminal is not in the editor then).
    interrupt: tokio::signal::unix::Signal,
    /// Another client's run in flight, shown as it goes.
    watching: Option<RunId>,
    /// The models `/model` listed last, so `/model N` picks one.
    models: Vec<String>,
    /// Daemons this REPL started after losing one (at most [`MAX_STARTS`]
    /// in its life: no restart loop).
    starts: u32,
    /// The last inbox entry shown (entries after it show at the next prompt).
    inbox_seq: u64,
}

/// `swivalctl repl` (and `swivalctl run` with no task on a terminal).
pub async fn run(socket: &Path, a: RunArgs) -> Result<ExitCode, ClientError> {
    let cwd = std::env::current_dir()
        .map_err(|e| ClientError::StartFailed(format!("cannot read the current directory: {e}")))?;
    let mut client = connect(socket).await?;
    let style = Style::new(a.color, a.no_color);
    let attached = match &a.session {
        Some(id) => Some(client.session(&SessionId(id.clone())).await?),
        None => None,
    };
    let base_dir = attached
        .as_ref()
        .map_or_else(|| flags::base_dir(a.base_dir.as_deref(), &cwd), |d| PathBuf::from(&d.info.base_dir));
    // Before the editor takes the terminal: a SIGTERM gives it back.
    leave_on_sigterm()?;
    let (mut editor, printer) = match LineEditor::start(editor::history_file(&base_dir)) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("swivalctl: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| ClientError::Transport(format!("cannot handle Ctrl-C: {e}")))?;
    let opened = start::open(&mut client, socket, &mut editor, style, &a, &base_dir, attached).await;
    let start::Opened { session, replay, first } = match opened {
        Ok(Ok(opened)) => opened,
        Ok(Err(code)) => return Ok(code),
        Err(Lost(why)) => return gone(&why),
    };
    // `/attach` before the first task may name another project's session.
    let base_dir = replay.as_ref().map_or(base_dir, |d| PathBuf::from(&d.info.base_dir));
    let last_seq = replay.as_ref().map_or(0, |d| d.info.last_seq.0);
    let events = client.subscribe_events(&session, last_seq + 1).await?;
    let mut repl = Repl {
        client,
        socket: socket.to_owned(),
        session,
        base_dir,
        events,
        last_seq,
        editor,
        printer,
        style,
        last_answer: None,
        context_tokens: None,
        interrupt,
        watching: None,
        models: Vec::new(),
        starts: 0,
        inbox_seq: 0,
    };
    repl.inbox_seq = repl.inbox_news(true).await;
    if let Some(detail) = replay {
        repl.replay(&detail);
    }
    let ended = match repl.begin(first).await {
        Ok(false) => repl.lines().await,
        left => left.map(drop),
    };
    match ended {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(Lost(why)) => gone(&why),
    }
}

/// On SIGTERM, put the terminal back as it was before the line editor
/// took it (raw mode would outlive the process) and exit 143: the REPL
/// ends in every state, a prompt or a run, and leaves a sane terminal.
fn leave_on_sigterm() -> Result<(), ClientError> {
    // SAFETY: tcgetattr only writes the struct it is given.
    let saved = unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        (libc::tcgetattr(libc::STDIN_FILENO, &mut t) == 0).then_some(t)
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| ClientError::Transport(format!("cannot handle SIGTERM: {e}")))?;
    tokio::spawn(async move {
        term.recv().await;
        if let Some(t) = saved {
            // SAFETY: the settings read above, written back to the same terminal.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t) };
        }
        eprintln!();
        std::process::exit(143);
    });
    Ok(())
}

/// The REPL ends on a lost daemon: exit 1 with why.
fn gone(why: &str) -> Result<ExitCode, ClientError> {
    eprintln!("swivalctl: {why}");
    Ok(ExitCode::FAILURE)
}

/// The daemon is gone for good: why, in one line with the way out.
pub struct Lost(String);

/// How full the context is: tokens of the window and their share.
fn context_words(used: Option<u64>, window: Option<u64>) -> String {
    match (used, window) {
        (None, _) => "nothing sent yet".to_owned(),
        (Some(used), Some(window)) if window > 0 => {
            format!("~{} / {} tokens ({}%)", thousands(used), thousands(window), used.saturating_mul(100) / window)
        }
        (Some(used), _) => format!("~{} tokens (the model's window is not known)", thousands(used)),
    }
}

/// `n` with thousands separated by commas.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The last thing the model said in `messages`.
fn last_assistant_text(messages: &[swival_protocol::ConversationItem]) -> Option<String> {
    messages.iter().rev().find_map(|m| match m {
        swival_protocol::ConversationItem::Assistant { content: Some(text), .. } if !text.is_empty() => {
            Some(text.clone())
        }
        _ => None,
    })
}

impl Repl {
    /// Read lines and act on them until the user leaves.
    async fn lines(&mut self) -> Result<(), Lost> {
        let mut prompt = editor::Prompt::default();
        loop {
            self.inbox_seq = self.inbox_news(false).await;
            let shown = self.style.prompt();
            self.editor.ask(&shown, true);
            let input = self.wait_for_input().await?;
            let line = match prompt.read(input) {
                editor::Read::Leave => return self.leave().await,
                editor::Read::Again => continue,
                editor::Read::Warn => {
                    self.info("Press Ctrl-C again or Ctrl-D to exit");
                    continue;
                }
                editor::Read::Line(line) => line,
            };
            if self.act(&line).await? {
                return Ok(());
            }
        }
    }

    /// Act on a line: a shell command, a slash command or a prompt to the
    /// model; true when the user leaves.
    async fn act(&mut self, line: &str) -> Result<bool, Lost> {
        let next = match line.trim() {
            "" => Next::Prompt,
            l if l.starts_with("!!") => {
                shell(&self.base_dir, l.trim_start_matches('!').trim()).await;
                Next::Prompt
            }
            l if l.starts_with('/') => match self.command(l).await {
                Ok(next) => next,
                Err(e) => self.failed(e).await?,
            },
            l => Next::Run(l.to_owned()),
        };
        match next {
            Next::Exit => return Ok(true),
            Next::Prompt => {}
            Next::Run(task) => self.prompt(&task, false).await?,
            Next::Continue => {
                self.info("continuing agent loop...");
                self.prompt("/continue", true).await?;
            }
        }
        Ok(false)
    }

    /// Wait for the user's answer to the prompt shown, showing meanwhile
    /// what other clients' runs on this session do.
    async fn wait_for_input(&mut self) -> Result<Input, Lost> {
        loop {
            tokio::select! {
                input = self.editor.answer() => return Ok(input),
                event = self.events.next() => match event {
                    Some(Ok(event)) => self.background(crate::cmd::clean::value(event)),
                    _ => self.reconnect().await?,
                },
            }
        }
    }

    /// Leave with a conversation in progress: the daemon writes its
    /// continue file (Swival's REPL exit; none without a conversation or
    /// with `no_continue`). A failure is shown, and the REPL still leaves.
    async fn leave(&mut self) -> Result<(), Lost> {
        let params = swival_protocol::SessionRef { session_id: self.session.clone() };
        if let Err(e) = self.client.request::<swival_protocol::methods::typed::ContinueSave>(&params).await {
            self.warn(&format!("{e}"));
        }
        Ok(())
    }

    /// A request failed: a lost daemon is reconnected to, anything else is
    /// shown; the loop goes on at the prompt.
    async fn failed(&mut self, e: ClientError) -> Result<Next, Lost> {
        match e {
            ClientError::Rpc { message, .. } => self.warn(&message),
            other => {
                self.warn(&format!("{other}"));
                if !self.client.is_connected() {
                    self.reconnect().await?;
                }
            }
        }
        Ok(Next::Prompt)
    }

    /// An event while no run of ours goes: another client's run, shown as
    /// it happens (its tool calls and its answer).
    fn background(&mut self, event: Event) {
        self.last_seq = self.last_seq.max(event.seq.0);
        match &event.kind {
            // A goal's run is said by the goal's own event.
            EventKind::RunStarted { goal_id: Some(_), .. } => self.watching = event.run_id.clone(),
            EventKind::RunStarted { task, .. } => {
                self.watching = event.run_id.clone();
                self.info(&format!("» another client started a run: {}", show::preview(task, 100)));
            }
            EventKind::Goal { .. } | EventKind::Loop { .. } => {
                let line = crate::cmd::render::event(self.style, &event.kind);
                self.out(&line);
            }
            EventKind::ToolCall { name, arguments, .. } if self.watching.is_some() => {
                self.out(&self.style.dim(&crate::cmd::render::tool_call(name, arguments)));
            }
            EventKind::LlmCall { prompt_tokens_est, .. } => self.context_tokens = Some(*prompt_tokens_est),
            EventKind::RunFinished(end) => {
                self.watching = None;
                if let Some(answer) = end.answer.as_deref().filter(|a| !a.is_empty()) {
                    self.out(&show::render(self.style, answer));
                    self.last_answer = Some(answer.to_owned());
                }
                self.info(&format!("» that run finished: {}", end.outcome.as_str()));
            }
            _ => {}
        }
    }

    /// Lost the daemon: connect again and resume the events after the last
    /// one shown. A daemon that is not running is started, as every other
    /// command does, a few times at most (no restart loop); one clear line,
    /// with the session to come back to, when it does not come back.
    async fn reconnect(&mut self) -> Result<(), Lost> {
        self.warn("lost the connection to swivald; reconnecting…");
        let deadline = Instant::now() + reconnect_for();
        let mut wait = Duration::from_millis(50);
        let mut last = String::new();
        let mut not_started = None;
        while Instant::now() < deadline {
            match self.resubscribe().await {
                Ok(()) => {
                    self.info(&format!("reconnected to swivald; resuming after event {}", self.last_seq));
                    return Ok(());
                }
                Err(ClientError::NoDaemon { .. }) if self.starts < MAX_STARTS => {
                    self.starts += 1;
                    match swivalctl::autostart::start(&self.socket).await {
                        Ok(pid) => {
                            self.info(&format!("swivald was not running; started it (pid {pid})"));
                            continue;
                        }
                        // Another client may be starting it: try again.
                        Err(e) => not_started = Some(e.to_string()),
                    }
                }
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(1));
        }
        if let Some(why) = not_started {
            last = format!("{last}; it could not be started: {why}");
        }
        let last = last.lines().map(str::trim).collect::<Vec<_>>().join(" ");
        Err(Lost(format!(
            "swivald is not reachable at {} ({last}); the session {} is kept: start the daemon \
             (swivalctl daemon start) and run `swivalctl repl --session {}`",
            self.socket.display(),
            self.session,
            self.session
        )))
    }

    /// Connect and follow the session again from after the last event shown.
    async fn resubscribe(&mut self) -> Result<(), ClientError> {
        let client = Client::connect(&self.socket).await?;
        client.initialize("swivalctl").await?;
        self.events = client.subscribe_events(&self.session, self.last_seq + 1).await?;
        self.client = client;
        Ok(())
    }

    /// Work on session `id` from now on, showing its recent conversation.
    async fn attach_to(&mut self, id: SessionId) -> Result<(), ClientError> {
        if id.0.is_empty() {
            self.warn("/attach requires a session id (/sessions lists them)");
            return Ok(());
        }
        let detail = self.client.session(&id).await?;
        self.replay(&detail);
        self.base_dir = PathBuf::from(&detail.info.base_dir);
        self.switch(id, detail.info.last_seq.0 + 1).await?;
        self.info(&format!("attached to session {}", self.session));
        Ok(())
    }

    /// Show the recent conversation of a session attached to, and how its
    /// last run ended when the daemon's stop cut it short.
    fn replay(&mut self, detail: &swival_protocol::SessionDetail) {
        self.out(&show::recent(self.style, &crate::cmd::clean::value(detail.messages.clone())));
        self.last_answer = last_assistant_text(&detail.messages);
        if let Some(run) = detail.runs.last().filter(|r| r.outcome == Some(swival_protocol::Outcome::Interrupted)) {
            let line = format!("{}: {}", run.run_id, turn::INTERRUPTED);
            self.warn(&line);
        }
    }

    /// Follow session `id` from event `from`.
    async fn switch(&mut self, id: SessionId, from: u64) -> Result<(), ClientError> {
        self.events = self.client.subscribe_events(&id, from).await?;
        self.session = id;
        self.last_seq = from.saturating_sub(1);
        self.context_tokens = None;
        self.models.clear();
        Ok(())
    }

    /// `/status`: model, provider and endpoint, the context used of the
    /// window with a share, commands mode, the last run's turns and review
    /// rounds, sandbox, session.
    async fn status(&mut self) -> Result<(), ClientError> {
        let detail = self.client.session(&self.session).await?;
        let key =
            |k: &str| detail.config.get(k).filter(|v| !v.is_null()).map(|v| v.to_string().trim_matches('"').to_owned());
        let endpoint = key("base_url").map(|u| format!(", {u}")).unwrap_or_default();
        let mut out = format!(
            "model: {}  (provider: {}{endpoint})\n",
            key("model").unwrap_or("(discovered)".into()),
            key("provider").unwrap_or_default()
        );
        let last = detail.runs.iter().rev().find(|r| !r.running);
        let stats = match last {
            Some(run) => self.client.report(&run.run_id).await?.stats,
            None => None,
        };
        let used = stats.as_ref().and_then(|s| s.context_tokens).or(self.context_tokens);
        let window = stats.as_ref().and_then(|s| s.context_window);
        let window = window.or_else(|| key("max_context_tokens").and_then(|w| w.parse().ok()));
        out.push_str(&format!("context: {}\n", context_words(used, window)));
        out.push_str(&format!("commands: {}\n", key("commands").unwrap_or_else(|| "(default)".into())));
        if let (Some(run), Some(stats)) = (last, &stats) {
            let max = key("max_turns").unwrap_or_default();
            let outcome = run.outcome.map(|o| o.as_str()).unwrap_or("?");
            let cost = stats.cost_usd.map(|c| format!(", cost ${c:.4}")).unwrap_or_default();
            out.push_str(&format!(
                "last run: {outcome}, {} turns of {max}, {} review rounds, {} tool calls{cost}\n",
                stats.turns, stats.review_rounds, stats.tool_calls_total
            ));
        }
        let this = swival_protocol::SessionRef { session_id: self.session.clone() };
        if let Some(g) = self.client.request::<swival_protocol::methods::typed::GoalGet>(&this).await?.goal {
            out.push_str(&format!("goal: {}\n", crate::cmd::goal::line(&g).split_once("  ").map_or("", |(_, l)| l)));
        }
        let loops = swival_protocol::LoopListParams { session_id: Some(self.session.clone()), all: false };
        let n = self.client.request::<swival_protocol::methods::typed::LoopList>(&loops).await?.loops.len();
        if n > 0 {
            out.push_str(&format!("loops: {n} active\n"));
        }
        let policy = self.client.policy_status(&self.session).await?;
        out.push_str(&format!("sandbox: {}\n", policy.sandbox.summary));
        let n = detail.info.run_count;
        out.push_str(&format!("session: {} ({n} run{})", self.session, if n == 1 { "" } else { "s" }));
        self.info(&out);
        Ok(())
    }

    /// Write `text` as it is: above the prompt when one is shown.
    fn out(&mut self, text: &str) {
        match (&mut self.printer, self.editor.showing) {
            (Some(printer), true) => {
                let _ = printer.print(text.to_owned());
            }
            _ => eprint!("{text}"),
        }
    }

    /// A line of information.
    fn info(&mut self, text: &str) {
        let text = crate::cmd::clean::text(text);
        let lines: String = text.lines().map(|l| format!("  {l}\n")).collect();
        let dim = self.style.dim(&lines);
        self.out(&dim);
    }

    /// Text the user asked for (help), as it is.
    fn say(&mut self, text: &str) {
        self.out(text);
    }

    /// A warning, in Swival's form.
    fn warn(&mut self, text: &str) {
        let text = crate::cmd::clean::text(text);
        let line = self.style.yellow(&format!("  ⚠ Warning: {text}\n"));
        self.out(&line);
    }
}

/// `!! cmd`: run a shell command in the project, on the user's side, and
/// show its output and exit status (30 s at most, as in Swival); the
/// model does not see it. Keys typed meanwhile wait in the terminal for
/// the next prompt.
async fn shell(base_dir: &Path, command: &str) {
    if command.is_empty() {
        eprintln!("usage: !! <command>");
        return;
    }
    eprintln!("  $ {command}");
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(base_dir)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return eprintln!("  cannot run it: {e}"),
    };
    let code = match tokio::time::timeout(Duration::from_secs(30), child.wait()).await {
        Ok(Ok(status)) => status.code().unwrap_or(1),
        Ok(Err(e)) => {
            eprintln!("  cannot wait for it: {e}");
            1
        }
        Err(_) => {
            let _ = child.kill().await;
            eprintln!("(timed out after 30s)");
            1
        }
    };
    eprintln!("  exit {code}");
}
