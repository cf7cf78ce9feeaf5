//! Each session in memory is an actor: one task owns its conversation,
//! tools and secret shield (`Parts`), whether it is closed, and its run in
//! flight. Callers hold a [`Handle`] and send [`Command`]s; nothing else
//! touches that state, so there is no lock to take and no copy to hand back.
//!
//! A run is a future the actor polls beside its mailbox: the run owns the
//! parts while it goes and returns them with its result, and the actor
//! answers other commands meanwhile (a second `run/start` is refused as
//! busy, `session/close` cancels the run).
//!
//! The registry (`live.rs`) holds one handle per session in memory. A run
//! starts only in the actor the registry holds at that moment, checked
//! and marked busy under the registry's lock, and the registry drops only
//! actors that are not busy; so two copies of a session never run at once.
//! An actor ends when nobody holds its handle any more (the registry let
//! it go: idle too long, or past the cap), or takes itself out of the
//! registry when it is closed and idle, when the caller's environment
//! changed, or when a run panicked and took its parts with it. A caller
//! that still holds an old handle is told to load the session again.

use super::live::{ActiveRun, Live};
use super::run::{self, RunJob};
use super::{random_id, Session, SessionError, Shared};
use crate::agent::conversation::Conversation;
use crate::environment::CallerEnv;
use crate::secrets::SecretShield;
use crate::store::RunRow;
use crate::tools::ToolBox;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::sync::{Arc, Weak};
use swival_protocol::{RunId, RunResult};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

/// Commands waiting for an actor beyond this are refused as busy.
const MAILBOX: usize = 64;

/// What a session owns and lends to its run while the run goes.
pub(super) struct Parts {
    /// The conversation so far.
    pub conversation: Conversation,
    /// The session's tools (path policy, read guard, MCP tools).
    pub tools: ToolBox,
    /// Encrypts secrets before they reach the provider, when configured.
    pub shield: Option<SecretShield>,
}

/// Why an actor did not start a run.
pub(super) enum StartRefused {
    /// A refusal for the caller (closed, busy, a store failure).
    Session(SessionError),
    /// This copy is no longer the one in memory (the registry let it go,
    /// or it was built for the caller's old environment and left): load
    /// the session again.
    Reload,
}

/// A run to start: the user's task, and the token its client echoes.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// The user's task.
    pub task: String,
    /// `run/start`'s `client_token`, echoed in `run_started`.
    pub client_token: Option<String>,
}

impl From<String> for NewRun {
    fn from(task: String) -> NewRun {
        NewRun { task, client_token: None }
    }
}

impl From<&str> for NewRun {
    fn from(task: &str) -> NewRun {
        NewRun::from(task.to_owned())
    }
}

/// What a session's actor is asked to do.
pub(super) enum Command {
    /// Start a run of `task`; `env` is the caller's environment when sent.
    Start {
        /// The user's task and the client's token.
        task: NewRun,
        /// The caller's environment from this run on, when sent.
        env: Option<CallerEnv>,
        /// The run's id, or why not.
        reply: oneshot::Sender<Result<RunId, StartRefused>>,
    },
    /// Close the session: cancel its run, refuse further runs.
    Close {
        /// Whether the closed flag was stored.
        reply: oneshot::Sender<Result<(), SessionError>>,
    },
}

/// How callers reach a session in memory.
#[derive(Clone)]
pub(super) struct Handle {
    /// The session's fixed part (config, pipeline, sandbox, event log).
    pub session: Arc<Session>,
    /// Its mailbox.
    tx: mpsc::Sender<Command>,
}

/// The actor's mailbox is gone: it left memory. Load the session again.
#[derive(Debug)]
pub(super) struct Gone;

impl Handle {
    /// A handle and the mailbox its actor will read.
    pub fn new(session: Arc<Session>) -> (Handle, mpsc::Receiver<Command>) {
        let (tx, rx) = mpsc::channel(MAILBOX);
        (Handle { session, tx }, rx)
    }

    /// Whether this handle reaches the actor of `session` (this copy).
    pub fn is(&self, session: &Arc<Session>) -> bool {
        Arc::ptr_eq(&self.session, session)
    }

    /// Send `command` and wait for its answer; `Gone` when the actor left
    /// before answering.
    pub async fn ask<T>(&self, command: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, Gone> {
        let (reply, answer) = oneshot::channel();
        self.tx.send(command(reply)).await.map_err(|_| Gone)?;
        answer.await.map_err(|_| Gone)
    }
}

/// Takes the actor's handle out of the registry when the actor ends, also
/// by a panic: nobody is sent to a mailbox that nobody reads.
struct Unregister {
    /// The registry.
    live: Weak<Live>,
    /// This actor's copy of the session.
    session: Arc<Session>,
}

impl Drop for Unregister {
    fn drop(&mut self) {
        if let Some(live) = self.live.upgrade() {
            live.remove(&self.session);
        }
    }
}

/// A run in flight: its future, which yields its result and (unless it
/// panicked) the parts back.
type Running = BoxFuture<'static, run::Ended>;

/// One session's actor.
pub(super) struct Actor {
    /// Shared services.
    shared: Arc<Shared>,
    /// The registry of sessions in memory and runs in flight.
    live: Weak<Live>,
    /// Its copy of the session (no handle: the actor ends when the last
    /// handle is dropped).
    session: Arc<Session>,
    /// Its parts, `None` while a run has them.
    parts: Option<Parts>,
    /// Closed sessions take no runs.
    closed: bool,
    /// The run in flight: its id, cancel switch and where its result goes.
    active: Option<(RunId, CancellationToken, watch::Sender<Option<RunResult>>)>,
}

impl Actor {
    /// Spawn the actor of `handle` (held by `live`), owning `parts`.
    pub fn spawn(
        shared: Arc<Shared>,
        live: &Arc<Live>,
        handle: &Handle,
        rx: mpsc::Receiver<Command>,
        parts: Parts,
        closed: bool,
    ) {
        let live = Arc::downgrade(live);
        let session = handle.session.clone();
        let unregister = Unregister { live: live.clone(), session: session.clone() };
        let actor = Actor { shared, live, session, parts: Some(parts), closed, active: None };
        // Not waited for by shutdown: an idle actor has nothing to finish,
        // and its run holds the drain open while it goes (`start`).
        tokio::spawn(actor.serve(rx, unregister));
    }

    /// Serve commands and poll the run in flight until the actor leaves.
    async fn serve(mut self, mut rx: mpsc::Receiver<Command>, unregister: Unregister) {
        let mut running: Option<Running> = None;
        loop {
            let idle = running.is_none();
            tokio::select! {
                ended = async { running.as_mut().expect("polled only while running").await }, if !idle => {
                    running = None;
                    if !self.ended(ended) {
                        break;
                    }
                }
                command = rx.recv() => match command {
                    Some(command) => {
                        if let Some(run) = self.handle_command(command).await {
                            running = Some(run);
                        }
                        if self.parts.is_none() && running.is_none() {
                            break;
                        }
                    }
                    // Only the registry and callers hold handles; once all
                    // are gone (the registry let this copy go) nobody can
                    // reach this actor.
                    None if idle => break,
                    None => {
                        let ended = running.take().expect("running").await;
                        self.ended(ended);
                        break;
                    }
                },
            }
        }
        // Out of the registry before the mailbox closes.
        drop(unregister);
        drop(rx);
    }

    /// Handle one command; returns the run it started, if any. Leaves
    /// `parts` empty with no run when the actor must leave.
    async fn handle_command(&mut self, command: Command) -> Option<Running> {
        match command {
            Command::Start { task, env, reply } => match self.start(task, env).await {
                Ok((run_id, run)) => {
                    let _ = reply.send(Ok(run_id));
                    Some(run)
                }
                Err(refused) => {
                    if matches!(refused, StartRefused::Reload) {
                        self.leave();
                    }
                    let _ = reply.send(Err(refused));
                    None
                }
            },
            Command::Close { reply } => {
                self.closed = true;
                if let Some((_, cancel, _)) = &self.active {
                    cancel.cancel();
                }
                let stored = self.shared.store.close_session(&self.session.id).await.map_err(SessionError::from);
                if stored.is_ok() && self.active.is_none() {
                    self.leave();
                }
                let _ = reply.send(stored);
                None
            }
        }
    }

    /// Leave memory: out of the registry now, then the loop ends.
    fn leave(&mut self) {
        if let Some(live) = self.live.upgrade() {
            live.remove(&self.session);
        }
        self.parts = None;
    }

    /// Start a run of `task`: its row and `run_started` are one commit, and
    /// it is known as in flight (`run/wait`, `run/cancel`) before either.
    async fn start(&mut self, new: NewRun, env: Option<CallerEnv>) -> Result<(RunId, Running), StartRefused> {
        let NewRun { task, client_token } = new;
        let session = &self.session;
        if self.closed {
            return Err(StartRefused::Session(SessionError::Closed(session.id.clone())));
        }
        if let Some((run, _, _)) = &self.active {
            let busy = SessionError::Busy { session: session.id.clone(), run: run.clone() };
            return Err(StartRefused::Session(busy));
        }
        // Another environment: this copy was built for the old one (PATH,
        // keys, scripts' environment); the session loads again with it.
        if env.is_some_and(|e| e != session.env) {
            return Err(StartRefused::Reload);
        }
        let live = self.live.upgrade().ok_or(StartRefused::Session(SessionError::ShuttingDown))?;
        // Only the copy held right now may run, and it stays held until
        // the run ends.
        if !live.set_busy(session, true) {
            return Err(StartRefused::Reload);
        }
        let run_id = RunId(random_id("r_"));
        let cancel = self.shared.shutdown.child_token();
        let row = RunRow {
            id: run_id.clone(),
            session_id: session.id.clone(),
            task: task.clone(),
            result: None,
            report: None,
            started_at: crate::clock::now(),
        };
        let (done_tx, done_rx) = watch::channel(None);
        live.run_started(run_id.clone(), ActiveRun { cancel: cancel.clone(), done: done_rx });
        if let Err(e) = session.events.start(&row, client_token).await {
            live.run_ended(&run_id);
            live.set_busy(session, false);
            return Err(StartRefused::Session(e.into()));
        }
        let parts = self.parts.take().expect("an idle session holds its parts");
        let job = RunJob {
            shared: self.shared.clone(),
            session: session.clone(),
            run_id: run_id.clone(),
            task,
            cancel: cancel.clone(),
            conversation: parts.conversation,
            tools: parts.tools,
            shield: parts.shield,
        };
        self.active = Some((run_id.clone(), cancel, done_tx));
        // Shutdown waits (within its grace) for the run to store its end.
        let draining = self.shared.shutdown.hold();
        let run = run::supervised(job).map(move |ended| {
            drop(draining);
            ended
        });
        Ok((run_id, run.boxed()))
    }

    /// A run ended (its result and `run_finished` are stored): publish the
    /// result, forget the run and take the parts back. False when the
    /// actor must leave (closed, or the run panicked and lost the parts).
    fn ended(&mut self, run::Ended { result, parts, terminal }: run::Ended) -> bool {
        let (run_id, _, done) = self.active.take().expect("a run was in flight");
        self.parts = parts;
        let stays = self.parts.is_some() && !self.closed;
        // Out of memory first, if leaving: a waiter that no longer finds
        // the run finds its session gone too.
        if !stays {
            self.leave();
        }
        if let Some(live) = self.live.upgrade() {
            // Idle from now on: the idle timeout counts from the run's end.
            live.set_busy(&self.session, false);
            live.run_ended(&run_id);
        }
        // Ready for the next run before anyone hears this one ended.
        if let Some(event) = terminal {
            self.session.events.publish(event);
        }
        // A waiter that comes after the entry is gone reads the store; one
        // that came before gets the result here.
        let _ = done.send(Some(result));
        stays
    }
}
