//! What a session's actor is asked and what it lends: its mailbox
//! ([`Handle`], [`Command`]) and the messages that travel through it (a
//! [`NewRun`], a [`Reconfigure`]), the [`Parts`] it lends to a job, and
//! how it refuses ([`Refused`], [`Gone`]). The actor itself is `actor.rs`;
//! the jobs (`run.rs`, `compact.rs`, …) speak to it only in these words.

use super::{Session, SessionError};
use crate::agent::conversation::Conversation;
use crate::environment::CallerEnv;
use crate::secrets::SecretShield;
use crate::tools::ToolBox;
use serde_json::Value;
use std::sync::Arc;
use swival_protocol::{ContinueSaveResult, RunId, SessionCheckpointResult, SessionCompactResult, SessionRestoreResult};
use tokio::sync::{mpsc, oneshot};

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

/// Why an actor did not do what it was asked (start a run, compact,
/// take a new config).
pub(super) enum Refused {
    /// A refusal for the caller (closed, busy, a store failure).
    Session(SessionError),
    /// This copy is no longer the one in memory (the registry let it go,
    /// it was built for the caller's old environment and left, or the
    /// config it was asked to change had changed meanwhile): load the
    /// session again.
    Reload,
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
        reply: oneshot::Sender<Result<RunId, Refused>>,
    },
    /// Compact the conversation now (`session/compact`), as a job.
    Compact {
        /// Also replace the middle turns (`drop`).
        drop_middle: bool,
        /// What was done, or why not.
        reply: oneshot::Sender<Result<SessionCompactResult, Refused>>,
    },
    /// Collapse the messages since the checkpoint (`session/restore`), as a job.
    Restore {
        /// What was done, or why not.
        reply: oneshot::Sender<Result<SessionRestoreResult, Refused>>,
    },
    /// Write the continue file from the conversation (`continue/save`), as a job.
    SaveContinue {
        /// Whether one was written, or why not.
        reply: oneshot::Sender<Result<ContinueSaveResult, Refused>>,
    },
    /// Set or cancel the checkpoint (`session/checkpoint`) while idle.
    Checkpoint {
        /// Its label (`None`: the default).
        label: Option<String>,
        /// Cancel the active one instead.
        cancel: bool,
        /// What happened, or why not.
        reply: oneshot::Sender<Result<SessionCheckpointResult, Refused>>,
    },
    /// Take a new config (`session/configure`): commit it, then leave.
    Configure {
        /// The change, checked and ready to store.
        change: Box<Reconfigure>,
        /// Whether it was stored, or why not.
        reply: oneshot::Sender<Result<(), Refused>>,
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

/// A run to start: the user's task, and the token its client echoes.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// The user's task (with `resume`, only the run's label).
    pub task: String,
    /// `run/start`'s `client_token`, echoed in `run_started`.
    pub client_token: Option<String>,
    /// Go on with the conversation as it is, adding no user message.
    pub resume: bool,
    /// Offer the model no tools (a review's one call).
    pub bare: bool,
    /// The session's goal this run works on (`None`: not a goal's run).
    pub goal: Option<crate::agent::GoalRun>,
    /// The run's id, when the starter chose it (a goal names its run
    /// before it starts, so a crash between the two loses nothing).
    pub id: Option<RunId>,
}

impl From<String> for NewRun {
    fn from(task: String) -> NewRun {
        NewRun { task, client_token: None, resume: false, bare: false, goal: None, id: None }
    }
}

impl From<&str> for NewRun {
    fn from(task: &str) -> NewRun {
        NewRun::from(task.to_owned())
    }
}

/// A new config for a session, checked and ready to store: made by
/// [`Sessions::configure`], committed by the session's actor.
pub(super) struct Reconfigure {
    /// The whole config request (secrets in) this was made from: it is
    /// committed only while that is still the session's.
    pub(super) based_on: Value,
    /// The new config request, as stored (without its secrets).
    pub request: Value,
    /// Its secrets, held in memory only.
    pub secrets: Vec<(String, Value)>,
    /// The new effective config, as clients see it.
    pub config: Value,
    /// What the new pipeline pins: the files pinned before at their
    /// recorded hashes, new ones as they are now.
    pub pins: Vec<(String, String)>,
    /// The keys whose effective value changes.
    pub changed: Vec<String>,
}
