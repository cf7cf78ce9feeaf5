//! Following a run `swivalctl run` started: its events shown until it
//! ends, its approvals answered, and the signals that cancel it
//! (`Interrupts`), leaving in bounded time even when the run cannot end.

use std::io::Write;
use swival_protocol::{Event, EventKind, RunId, SessionId};
use swivalctl::{Client, ClientError};

/// The signals that end a followed run: Ctrl-C (SIGINT), SIGTERM (`kill`,
/// `timeout`) and SIGHUP (its terminal closed). Each cancels the run in
/// the daemon, which would otherwise run on without anyone to read it;
/// the exit code is 128 plus the signal's number (130 for Ctrl-C, as
/// Swival's "interrupted").
pub(super) struct Interrupts {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Interrupts {
    pub(super) fn listen() -> Result<Interrupts, ClientError> {
        use tokio::signal::unix::{signal, SignalKind};
        let listen = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| ClientError::Transport(format!("cannot handle {name}: {e}")))
        };
        Ok(Interrupts {
            int: listen(SignalKind::interrupt(), "Ctrl-C")?,
            term: listen(SignalKind::terminate(), "SIGTERM")?,
            hup: listen(SignalKind::hangup(), "SIGHUP")?,
        })
    }

    /// The number of the next signal that comes.
    async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => 2,
            _ = self.term.recv() => 15,
            _ = self.hup.recv() => 1,
        }
    }
}

/// How long a run cancelled by a signal may take to end before swivalctl
/// leaves without its result: a run blocked where a cancel cannot reach
/// must not keep the client from exiting.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How following a run ended.
pub(super) enum Followed {
    /// The run ended: its result, and the signal that cancelled it here.
    Ended(Box<swival_protocol::RunResult>, Option<i32>),
    /// A signal came and the run did not end within [`CANCEL_WAIT`], or a
    /// second signal came: leave with it.
    Left(i32),
}

/// A followed run after a signal: the signal and until when it may end.
#[derive(Default)]
struct Cancelling(Option<(i32, tokio::time::Instant)>);

impl Cancelling {
    /// Cancel the run at the first signal; the signal to leave with at a
    /// second one.
    async fn signal(&mut self, client: &Client, run_id: &RunId, signal: i32) -> Option<i32> {
        if let Some((first, _)) = self.0 {
            return Some(first);
        }
        self.0 = Some((signal, tokio::time::Instant::now() + CANCEL_WAIT));
        // Cancel first: after SIGHUP the terminal may be gone, and writing
        // to it fails.
        let _ = tokio::time::timeout(CANCEL_WAIT, client.cancel_run(run_id)).await;
        let _ = writeln!(std::io::stderr(), "\ninterrupted: cancelling run {run_id}");
        None
    }

    /// The signal, once the run has had its time to end after it.
    async fn expired(&self) -> i32 {
        match self.0 {
            Some((signal, at)) => {
                tokio::time::sleep_until(at).await;
                signal
            }
            None => std::future::pending().await,
        }
    }
}

/// Show the run's events until it ends, answering its approvals. A signal
/// of [`Interrupts`] cancels it in the daemon; a second one, or the run
/// not ending within [`CANCEL_WAIT`], leaves at once, in every state (an
/// approval asked on the terminal too).
pub(super) async fn follow(
    client: &Client,
    session_id: &SessionId,
    run_id: &RunId,
    mut events: jsonrpsee::core::client::Subscription<Event>,
    mut interrupt: Interrupts,
    progress: &Progress,
) -> Result<Followed, ClientError> {
    let mut cancelling = Cancelling::default();
    loop {
        let next = tokio::select! {
            ev = events.next() => ev,
            signal = interrupt.recv() => match cancelling.signal(client, run_id, signal).await {
                Some(leave) => return Ok(Followed::Left(leave)),
                None => continue,
            },
            signal = cancelling.expired() => return Ok(Followed::Left(signal)),
        };
        let cancelled = cancelling.0.map(|(signal, _)| signal);
        let event = match next {
            Some(Ok(e)) => e,
            Some(Err(e)) => return Err(ClientError::Transport(format!("bad event from swivald: {e}"))),
            None => return Ok(Followed::Ended(Box::new(progress.shown(client.wait_run(run_id).await?)), cancelled)),
        };
        let event = progress.shown(event);
        if event.run_id.as_ref() != Some(run_id) {
            continue;
        }
        progress.show(&event);
        tokio::select! {
            _ = super::approval::answer_approval(client, session_id, &event) => {}
            signal = interrupt.recv() => {
                if let Some(leave) = cancelling.signal(client, run_id, signal).await {
                    return Ok(Followed::Left(leave));
                }
            }
        }
        if let EventKind::RunFinished(end) = event.kind {
            let result = swival_protocol::RunResult::from_end(run_id.clone(), end);
            return Ok(Followed::Ended(Box::new(result), cancelled));
        }
    }
}

/// How progress is shown.
pub struct Progress {
    /// Show only what Swival shows with `--quiet`: filter stderr (errors
    /// are printed at the end of the run).
    pub quiet: bool,
    /// Print events as JSON lines on stdout.
    pub json: bool,
    /// How to colour the progress on stderr.
    pub style: super::render::Style,
}

impl Progress {
    /// `v` as it may be shown: exact for `--json`, its text cleaned of
    /// control sequences for a terminal (`clean`).
    pub fn shown<T: serde::Serialize + serde::de::DeserializeOwned>(&self, v: T) -> T {
        if self.json {
            v
        } else {
            super::clean::value(v)
        }
    }

    /// Show one event.
    pub fn show(&self, event: &Event) {
        if self.json {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", serde_json::to_string(event).expect("events serialize"));
            return;
        }
        // A filter's stderr is shown as it was written, even with --quiet (as Swival does).
        if let EventKind::Stderr { source, text, .. } = &event.kind {
            if *source == swival_protocol::StderrSource::Filter {
                eprintln!("{text}");
            }
            return;
        }
        if self.quiet {
            return;
        }
        match &event.kind {
            EventKind::TurnStarted { turn, max_turns } => eprintln!("turn {turn}/{max_turns}"),
            other => eprint!("{}", super::render::event(self.style, other)),
        }
    }
}
