//! One prompt to the model: a run started with this REPL's client token and
//! followed until it ends — the answer streamed and rendered as it comes,
//! each tool call one line, warnings and reviewer rounds in Swival's words,
//! approvals asked inline with `run`'s keys, Ctrl-C cancelling the run (the
//! session stays), a lost daemon reconnected to.

use super::show::{self, Answer};
use super::{Lost, Repl};
use crate::cmd::approval::{approval_answer, approval_question};
use std::io::IsTerminal;
use swival_protocol::{ApprovalDecision, ErrorCode, Event, EventKind, FailureKind, Outcome, RunEnd, RunId};
use swivalctl::ClientError;

/// A run of ours as it is shown.
struct Shown {
    /// The run.
    run_id: RunId,
    /// The current turn's text, rendered as it streams.
    answer: Answer,
    /// Whether Ctrl-C asked the daemon to cancel it.
    cancelled: bool,
    /// What is on the screen besides the answer.
    phase: Phase,
    /// When the run last showed something.
    quiet_since: std::time::Instant,
    /// When it was started.
    started: std::time::Instant,
}

/// What a run of ours shows besides its answer: one at a time.
enum Phase {
    /// What the run does, as it comes.
    Streaming,
    /// The run has been quiet for a second or more: the waiting line is
    /// on the screen.
    Waiting,
    /// An approval is asked at the prompt.
    Asking {
        /// Its id.
        approval_id: String,
        /// Asked every time: no "always" answer.
        every_time: bool,
    },
}

/// Shows, on a terminal, how long the run has been quiet (waiting on the
/// model or a tool) once it has been for a second; the line is cleared
/// before anything else is written.
fn draw_wait(shown: &mut Shown, style: super::Style) {
    let quiet = shown.quiet_since.elapsed().as_secs();
    let asking = matches!(shown.phase, Phase::Asking { .. });
    if quiet >= 1 && !asking && std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K{}", style.dim(&format!("  … waiting ({quiet}s)")));
        shown.phase = Phase::Waiting;
    }
}

/// Take the waiting line off the screen.
fn clear_wait(shown: &mut Shown) {
    if matches!(shown.phase, Phase::Waiting) {
        eprint!("\r\x1b[2K");
        shown.phase = Phase::Streaming;
    }
}

impl Repl {
    /// Send `task` to the model (`resume`: no new message, the
    /// conversation goes on as it is) and show the run until it ends.
    pub(super) async fn prompt(&mut self, task: &str, resume: bool) -> Result<(), Lost> {
        let params = swival_protocol::RunStartParams {
            session_id: self.session.clone(),
            task: task.to_owned(),
            env: Some(swivalctl::caller_env()),
            client_token: Some(format!("repl-{}-{}", std::process::id(), self.last_seq)),
            resume,
            // A REPL's run goes on when its terminal closes: the session
            // is there to `/continue` from (`swivalctl run` cancels).
            cancel_on_disconnect: false,
            inbox: false,
        };
        let started = self.client.request::<swival_protocol::methods::typed::RunStart>(&params).await;
        let run_id = match started.map(|r| r.run_id) {
            Ok(id) => id,
            Err(ClientError::Rpc { kind: Some(ErrorCode::SessionBusy), message, .. }) => {
                self.warn(&format!("{message} (Ctrl-C does not cancel another client's run)"));
                return Ok(());
            }
            Err(e) => {
                self.failed(e).await?;
                return Ok(());
            }
        };
        let mut shown = Shown {
            run_id,
            answer: Answer::new(self.style),
            cancelled: false,
            phase: Phase::Streaming,
            quiet_since: std::time::Instant::now(),
            started: std::time::Instant::now(),
        };
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            let event = tokio::select! {
                _ = tick.tick(), if !self.editor.showing => {
                    draw_wait(&mut shown, self.style);
                    continue;
                }
                event = self.events.next() => event.map(|e| e.map(crate::cmd::clean::value)),
                _ = self.interrupt.recv(), if !shown.cancelled && !self.editor.showing => {
                    clear_wait(&mut shown);
                    shown.cancelled = true;
                    self.flush(&mut shown);
                    self.info(&format!("interrupted: cancelling run {}", shown.run_id));
                    let _ = self.client.cancel_run(&shown.run_id).await;
                    continue;
                }
                input = self.editor.answer(), if self.editor.showing => {
                    self.answered(&mut shown, input).await;
                    continue;
                }
            };
            let event = match event {
                Some(Ok(event)) => event,
                _ => {
                    // What reconnecting says gets a line of its own.
                    clear_wait(&mut shown);
                    self.reconnect().await?;
                    continue;
                }
            };
            if let Some(end) = self.ours(&mut shown, event).await {
                self.finished(&mut shown, end);
                self.changed(&shown.run_id).await;
                if self.editor.showing {
                    // A question left on the screen (answered elsewhere, or
                    // too late): its line is not a prompt to the model.
                    self.info("the run ended; press Enter");
                    let _ = self.editor.answer().await;
                }
                return Ok(());
            }
        }
    }

    /// Show one event of the session while our run goes; the run's end
    /// when this is it.
    async fn ours(&mut self, shown: &mut Shown, event: Event) -> Option<RunEnd> {
        self.last_seq = self.last_seq.max(event.seq.0);
        if event.run_id.as_ref() != Some(&shown.run_id) {
            return None;
        }
        clear_wait(shown);
        if !matches!(event.kind, EventKind::LlmCall { .. } | EventKind::TurnStarted { .. }) {
            shown.quiet_since = std::time::Instant::now();
        }
        match event.kind {
            EventKind::TextDelta { text, .. } => {
                let lines = shown.answer.push(&text);
                print!("{lines}");
                let _ = std::io::Write::flush(&mut std::io::stdout());
            }
            EventKind::TurnStarted { .. } => shown.answer = Answer::new(self.style),
            EventKind::LlmCall { prompt_tokens_est, .. } => self.context_tokens = Some(prompt_tokens_est),
            EventKind::ToolCall { .. } | EventKind::ToolResult { .. } => {
                self.flush(shown);
                self.out(&crate::cmd::render::event(self.style, &event.kind));
            }
            EventKind::Compaction { tokens_before, tokens_after, .. } => {
                self.info(&format!("context compacted: {tokens_before} -> {tokens_after} tokens"));
            }
            EventKind::ApprovalRequested { ref approval_id, every_time, .. } => {
                self.flush(shown);
                let (question, prompt) = approval_question(&event.kind);
                eprint!("{question}");
                shown.phase = Phase::Asking { approval_id: approval_id.clone(), every_time };
                self.editor.ask(&prompt, false);
            }
            EventKind::ApprovalResolved { ref approval_id, .. } => {
                if matches!(&shown.phase, Phase::Asking { approval_id: asked, .. } if asked == approval_id) {
                    shown.phase = Phase::Streaming;
                    self.info("(answered elsewhere, or no answer in time; press Enter)");
                }
            }
            EventKind::RunFinished(end) => return Some(end),
            ref other => {
                self.flush(shown);
                self.out(&crate::cmd::render::event(self.style, other));
            }
        }
        None
    }

    /// The user answered the approval asked at the prompt.
    async fn answered(&mut self, shown: &mut Shown, input: super::editor::Input) {
        let (approval_id, every_time) = match std::mem::replace(&mut shown.phase, Phase::Streaming) {
            Phase::Asking { approval_id, every_time } => (approval_id, every_time),
            other => {
                shown.phase = other;
                return;
            }
        };
        let decision = match input {
            super::editor::Input::Line(line) => approval_answer(&line, every_time),
            _ => ApprovalDecision::RejectOnce,
        };
        match self.client.approve(&self.session, &approval_id, decision).await {
            Ok(true) => {}
            Ok(false) => self.warn("the answer came too late: the command was rejected"),
            Err(e) => self.warn(&format!("cannot pass the answer to swivald: {e}")),
        }
    }

    /// The rest of the streamed text.
    fn flush(&mut self, shown: &mut Shown) {
        let rest = shown.answer.finish();
        if !rest.is_empty() {
            print!("{rest}");
            let _ = std::io::Write::flush(&mut std::io::stdout());
        }
    }

    /// After a run that changed files: which, and how to see or undo them
    /// (`run`'s closing line, in the REPL's words).
    async fn changed(&mut self, run: &RunId) {
        use swival_protocol::methods::typed::RunChangesMethod;
        let which = swival_protocol::ChangesRef { run_id: Some(run.0.clone()), session_id: None };
        let params = swival_protocol::RunChangesParams { which, no_diff: true };
        let Ok(changes) = self.client.request::<RunChangesMethod>(&params).await else { return };
        let n = changes.files.len();
        if n == 0 {
            return;
        }
        let names: Vec<&str> = changes.files.iter().take(3).map(|f| f.path.as_str()).collect();
        let more = if n > 3 { ", …" } else { "" };
        let s = if n == 1 { "" } else { "s" };
        self.info(&format!(
            "run {run} changed {n} file{s}: {}{more} — /diff shows them, /undo puts them back",
            names.join(", ")
        ));
    }

    /// Our run ended: its answer (unless it streamed already) and how it
    /// ended, in Swival's words where Swival has them.
    fn finished(&mut self, shown: &mut Shown, end: RunEnd) {
        self.flush(shown);
        if let Some(answer) = end.answer.as_deref().filter(|a| !a.trim().is_empty()) {
            if shown.answer.text.trim() != answer.trim() {
                print!("{}", show::render(self.style, answer));
            }
            self.last_answer = Some(answer.to_owned());
        }
        let gauge = gauge(&end.stats, shown.started.elapsed());
        match (end.outcome, end.failure) {
            (Outcome::Success, _) => {}
            (_, Some(FailureKind::Interrupted)) => self.warn(INTERRUPTED),
            (_, Some(FailureKind::Cancelled)) => self.warn("interrupted, question aborted."),
            (Outcome::Exhausted, _) => self.warn("max turns reached for question. Use /continue to resume."),
            _ => {
                let error = end.error.as_deref().unwrap_or("the run failed");
                let line = self.style.red(&format!("Error: {error}\n"));
                self.out(&line);
            }
        }
        self.info(&gauge);
    }
}

/// What a run that swivald's stop cut short is shown with, live and on
/// replay.
pub(super) const INTERRUPTED: &str =
    "the run was interrupted: swivald stopped while it was in flight. /continue resumes it";

/// The line after a run: how full the context is (a share of the window
/// when it is known) and how long the run took.
fn gauge(stats: &swival_protocol::RunStats, took: std::time::Duration) -> String {
    let took = format!("{:.1}s", took.as_secs_f64());
    match (stats.context_tokens, stats.context_window) {
        (Some(used), Some(window)) if window > 0 => format!("ctx {}% · {took}", used.saturating_mul(100) / window),
        (Some(used), _) => format!("ctx ~{used} tokens · {took}"),
        (None, _) => took,
    }
}
