//! Each session in memory is an actor: one task owns its conversation,
//! tools and secret shield (`Parts`), whether it is closed, and its run in
//! flight. Callers hold a [`Handle`] and send [`Command`]s; nothing else
//! touches that state, so there is no lock to take and no copy to hand back.
//!
//! A run is a future the actor polls beside its mailbox: the run owns the
//! parts while it goes and returns them with its result, and the actor
//! answers other commands meanwhile (a second `run/start` is refused as
//! busy, `session/close` cancels the run). A compaction or a restore asked
//! for between runs (`session/compact`, `session/restore`) is such a job
//! too, and so refuses runs the same way; a checkpoint
//! (`session/checkpoint`) is set by the actor itself while idle. A new
//! config (`session/configure`) is committed by the actor while it is
//! idle, and then the actor leaves: the next use loads the session again
//! from the store, with its conversation, under the new config.
//!
//! The registry (`live.rs`) holds one handle per session in memory. A run
//! starts only in the actor the registry holds at that moment, checked
//! and marked busy under the registry's lock, and the registry drops only
//! actors that are not busy; so two copies of a session never run at once.
//! An actor ends when nobody holds its handle any more (the registry let
//! it go: idle too long, or past the cap), or takes itself out of the
//! registry when it is closed and idle, when the caller's environment or
//! the session's config changed, or when a job panicked and took its parts
//! with it. A caller that still holds an old handle is told to load the
//! session again.

use super::compact::{self, Between};
use super::live::{ActiveRun, Live};
use super::mailbox::{Command, Handle, NewRun, Parts, Reconfigure, Refused};
use super::run::{self, RunJob};
use super::{checkpoint, random_id, Session, SessionError, Shared};
use crate::environment::CallerEnv;
use crate::message::Role;
use crate::store::RunRow;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::future::Future;
use std::sync::{Arc, Weak};
use swival_protocol::{EventKind, RunId, RunResult, SessionCheckpointResult};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

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

/// A job in flight (a run, or a job between runs): its future, which
/// yields how it ended and (unless it panicked) the parts back.
type Running = BoxFuture<'static, JobEnd>;

/// How a job ended, with what the actor does with it.
pub(super) enum JobEnd {
    /// A run: its end, and where its result goes (`run/wait`).
    Run {
        /// The result, the parts and the stored `run_finished`.
        ended: Box<run::Ended>,
        /// Where waiters hear the result.
        done: watch::Sender<Option<RunResult>>,
    },
    /// A job between runs (a compaction, a restore): the parts, and its
    /// caller's answer.
    Between {
        /// The parts back; `None` after a panic took them.
        parts: Option<Box<Parts>>,
        /// Answers the caller with what was done, once the parts are back.
        answer: Box<dyn FnOnce() + Send>,
    },
}

/// What an actor is busy with beside its mailbox.
struct Active {
    /// A run (its id) or a job between runs.
    doing: Doing,
    /// Cancels it (`session/close`; `run/cancel` reaches a run through the registry).
    cancel: CancellationToken,
}

/// The kind of job in flight, for the busy refusal.
enum Doing {
    /// The run with this id.
    Run(RunId),
    /// A job between runs (`session/compact`, `session/restore`).
    Compaction,
}

/// One session's actor.
pub(super) struct Actor {
    /// Shared services.
    shared: Arc<Shared>,
    /// The registry of sessions in memory and runs in flight.
    live: Weak<Live>,
    /// Its copy of the session (no handle: the actor ends when the last
    /// handle is dropped).
    session: Arc<Session>,
    /// Its parts, `None` while a job has them.
    parts: Option<Parts>,
    /// Closed sessions take no runs.
    closed: bool,
    /// The job in flight, if any.
    active: Option<Active>,
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

    /// Serve commands and poll the job in flight until the actor leaves.
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
                        if let Some(job) = self.handle_command(command).await {
                            running = Some(job);
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

    /// Handle one command; returns the job it started, if any. Leaves
    /// `parts` empty with no job when the actor must leave.
    async fn handle_command(&mut self, command: Command) -> Option<Running> {
        match command {
            Command::Start { task, env, reply } => match self.start(task, env).await {
                Ok((run_id, run)) => {
                    let _ = reply.send(Ok(run_id));
                    Some(run)
                }
                Err(refused) => {
                    self.refused(reply, refused);
                    None
                }
            },
            Command::Compact { drop_middle, reply } => {
                self.between(reply, "compaction", move |b| b.compact(drop_middle))
            }
            Command::Restore { reply } => self.between(reply, "restore", Between::restore),
            Command::SaveContinue { reply } => self.between(reply, "continue file", Between::save_continue),
            Command::Checkpoint { label, cancel, reply } => {
                match self.checkpoint(label, cancel).await {
                    Ok(done) => drop(reply.send(Ok(done))),
                    Err(refused) => self.refused(reply, refused),
                }
                None
            }
            Command::Configure { change, reply } => {
                match self.configure(change).await {
                    Ok(()) => drop(reply.send(Ok(()))),
                    Err(refused) => self.refused(reply, refused),
                }
                None
            }
            Command::Close { reply } => {
                self.closed = true;
                if let Some(active) = &self.active {
                    active.cancel.cancel();
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

    /// Answer a refusal; a copy that is not the one to use leaves first.
    fn refused<T>(&mut self, reply: oneshot::Sender<Result<T, Refused>>, refused: Refused) {
        if matches!(refused, Refused::Reload) {
            self.leave();
        }
        let _ = reply.send(Err(refused));
    }

    /// Why this session cannot take a job now (closed, or busy with one).
    fn refusal(&self) -> Option<SessionError> {
        let id = self.session.id.clone();
        if self.closed {
            return Some(SessionError::Closed(id));
        }
        match &self.active {
            None => None,
            Some(Active { doing: Doing::Run(run), .. }) => Some(SessionError::Busy { session: id, run: run.clone() }),
            Some(Active { doing: Doing::Compaction, .. }) => Some(SessionError::Compacting(id)),
        }
    }

    /// Mark this copy busy in the registry until its job ends (never
    /// dropped meanwhile); only the copy held right now may take a job.
    fn hold(&self) -> Result<Arc<Live>, Refused> {
        let live = self.live.upgrade().ok_or(Refused::Session(SessionError::ShuttingDown))?;
        if !live.set_busy(&self.session, true) {
            return Err(Refused::Reload);
        }
        Ok(live)
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
    async fn start(&mut self, new: NewRun, env: Option<CallerEnv>) -> Result<(RunId, Running), Refused> {
        let NewRun { task, client_token, resume, bare, goal, id } = new;
        if let Some(refusal) = self.refusal() {
            return Err(Refused::Session(refusal));
        }
        let parts = self.parts.as_ref().expect("an idle session holds its parts");
        if resume && parts.conversation.messages().iter().all(|m| m.role() == Role::System) {
            return Err(Refused::Session(SessionError::Config(
                "there is no conversation to resume: this session has no message yet; start a run with a task".into(),
            )));
        }
        // Another environment: this copy was built for the old one (PATH,
        // keys, scripts' environment); the session loads again with it.
        if env.is_some_and(|e| e != self.session.env) {
            return Err(Refused::Reload);
        }
        let live = self.hold()?;
        let session = &self.session;
        let run_id = id.unwrap_or_else(|| RunId(random_id("r_")));
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
        if let Err(e) = session.events.start(&row, client_token, goal.as_ref().map(|g| g.goal.goal_id.clone())).await {
            live.run_ended(&run_id);
            live.set_busy(session, false);
            return Err(Refused::Session(e.into()));
        }
        let parts = self.parts.take().expect("an idle session holds its parts");
        let job = RunJob {
            shared: self.shared.clone(),
            session: session.clone(),
            run_id: run_id.clone(),
            task,
            resume,
            bare,
            goal,
            cancel: cancel.clone(),
            conversation: parts.conversation,
            tools: parts.tools,
            shield: parts.shield,
        };
        self.active = Some(Active { doing: Doing::Run(run_id.clone()), cancel });
        // Shutdown waits (within its grace) for the run to store its end.
        let draining = self.shared.shutdown.hold();
        let run = run::supervised(job).map(move |ended| {
            drop(draining);
            JobEnd::Run { ended: Box::new(ended), done: done_tx }
        });
        Ok((run_id, run.boxed()))
    }

    /// Start `job`, a job between runs (`session/compact`,
    /// `session/restore`, named `what` in the log) that holds the parts as
    /// a run does, cancelled by close and shutdown; `reply` hears how it
    /// ended, or why it did not start.
    fn between<T, F>(
        &mut self,
        reply: oneshot::Sender<Result<T, Refused>>,
        what: &'static str,
        job: impl FnOnce(Between) -> F,
    ) -> Option<Running>
    where
        T: Send + 'static,
        F: Future<Output = compact::Ended<T>> + Send + 'static,
    {
        let ready = match self.refusal() {
            Some(refusal) => Err(Refused::Session(refusal)),
            None => self.hold().map(drop),
        };
        if let Err(refused) = ready {
            self.refused(reply, refused);
            return None;
        }
        let cancel = self.shared.shutdown.child_token();
        let parts = self.parts.take().expect("an idle session holds its parts");
        let (shared, session) = (self.shared.clone(), self.session.clone());
        let job = job(Between { shared, session, cancel: cancel.clone(), parts });
        self.active = Some(Active { doing: Doing::Compaction, cancel });
        // Shutdown waits (within its grace) for it to store what it did.
        let draining = self.shared.shutdown.hold();
        let job = compact::supervised(self.session.id.clone(), what, job).map(move |ended| {
            drop(draining);
            let compact::Ended { parts, result } = ended;
            let answer = Box::new(move || drop(reply.send(result.map_err(Refused::Session))));
            JobEnd::Between { parts: parts.map(Box::new), answer }
        });
        Some(job.boxed())
    }

    /// Set or cancel the checkpoint (`session/checkpoint`) while idle, at
    /// the end of the conversation this copy holds (the one to use).
    async fn checkpoint(&mut self, label: Option<String>, cancel: bool) -> Result<SessionCheckpointResult, Refused> {
        if let Some(refusal) = self.refusal() {
            return Err(Refused::Session(refusal));
        }
        let live = self.hold()?;
        let conversation = &self.parts.as_ref().expect("an idle session holds its parts").conversation;
        let done = checkpoint::checkpoint(&self.shared, &self.session.id, conversation, label, cancel).await;
        live.set_busy(&self.session, false);
        done.map_err(Refused::Session)
    }

    /// Commit a new config (`session/configure`) while idle, then leave
    /// memory: the next use loads the session from the store under it.
    /// Refused with `Reload` when the config it was made from changed
    /// meanwhile (it is made again from the new one).
    async fn configure(&mut self, change: Box<Reconfigure>) -> Result<(), Refused> {
        if let Some(refusal) = self.refusal() {
            return Err(Refused::Session(refusal));
        }
        let live = self.hold()?;
        let id = &self.session.id;
        let (shared, session) = (&self.shared, &self.session);
        let committed = async {
            if !change.is_current(shared, id)? {
                return Ok(false);
            }
            shared.store.reconfigure_session(id, &change.request, &change.config, change.pins.clone()).await?;
            let mut caller = shared.callers.get(id);
            caller.secrets = change.secrets.clone();
            shared.callers.set(id, caller);
            if !change.changed.is_empty() {
                session.events.emit(None, EventKind::SessionConfigured { changed: change.changed.clone() });
            }
            Ok::<_, SessionError>(true)
        }
        .await;
        match committed {
            Ok(true) => {
                self.leave();
                Ok(())
            }
            Ok(false) => Err(Refused::Reload),
            Err(e) => {
                live.set_busy(&self.session, false);
                Err(Refused::Session(e))
            }
        }
    }

    /// A job ended: take the parts back and finish it (a run's result
    /// published, the caller of a job between runs answered). False when
    /// the actor must leave (closed, or the job panicked and lost the
    /// parts).
    fn ended(&mut self, end: JobEnd) -> bool {
        self.active = None;
        match end {
            JobEnd::Run { ended, done } => {
                let run::Ended { result, parts, terminal } = *ended;
                let stays = self.take_back(parts);
                if let Some(live) = self.live.upgrade() {
                    live.run_ended(&result.run_id);
                }
                // Ready for the next run before anyone hears this one ended.
                if let Some(event) = terminal {
                    self.session.events.publish(event);
                }
                // A waiter that comes after the entry is gone reads the
                // store; one that came before gets the result here.
                let _ = done.send(Some(result));
                stays
            }
            JobEnd::Between { parts, answer } => {
                let stays = self.take_back(parts.map(|p| *p));
                answer();
                stays
            }
        }
    }

    /// Take the parts back from a job that ended; idle from now on (the
    /// idle timeout counts from here). Out of memory first when leaving: a
    /// waiter that no longer finds the run finds its session gone too.
    fn take_back(&mut self, parts: Option<Parts>) -> bool {
        self.parts = parts;
        let stays = self.parts.is_some() && !self.closed;
        if !stays {
            self.leave();
        }
        if let Some(live) = self.live.upgrade() {
            live.set_busy(&self.session, false);
        }
        stays
    }
}
