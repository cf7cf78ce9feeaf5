//! Jobs on an idle session's conversation between runs: `session/compact`
//! (the agent loop's own compaction, `agent::compact`) here, and
//! `session/restore` (`snapshot.rs`). Each runs as a job of the session's
//! actor, as a run does: it holds the conversation while it goes (a
//! `run/start` meanwhile is refused as busy), `session/close` and shutdown
//! cancel it, and a panic in it loses only the copy in memory (the session
//! loads again from the store).

use super::mailbox::{Command, Gone, Parts, Refused};
use super::{random_id, Found, Session, SessionError, Sessions, Shared};
use crate::agent::{self, CompactError, RunState};
use futures::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use swival_protocol::{FailureKind, RunId, SessionCompactResult, SessionId};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// A job between runs about to start, holding the session's parts.
pub(super) struct Between {
    /// Shared services.
    pub shared: Arc<Shared>,
    /// The session.
    pub session: Arc<Session>,
    /// Cancelled by session/close or shutdown.
    pub cancel: CancellationToken,
    /// Borrowed from the session until the job ends.
    pub parts: Parts,
}

// A job between runs lends the parts to the agent as a run's state.
impl From<Parts> for RunState {
    fn from(Parts { conversation, tools, shield }: Parts) -> RunState {
        RunState { conversation, tools, shield }
    }
}

impl From<RunState> for Parts {
    fn from(RunState { conversation, tools, shield }: RunState) -> Parts {
        Parts { conversation, tools, shield }
    }
}

/// How a job between runs ended.
pub(super) struct Ended<T> {
    /// The session's parts back; `None` after a panic took them.
    pub parts: Option<Parts>,
    /// What was done, or why not.
    pub result: Result<T, SessionError>,
}

/// Run `job` (session `id`'s `what`) to its end; a panic ends it as an
/// internal error and takes the parts with it (the actor leaves memory).
pub(super) async fn supervised<T>(id: SessionId, what: &str, job: impl Future<Output = Ended<T>>) -> Ended<T> {
    match AssertUnwindSafe(Box::pin(job)).catch_unwind().await {
        Ok(ended) => ended,
        Err(_) => {
            tracing::error!("the {what} of session {id} panicked");
            let why = format!(
                "internal error: the {what} of session {id} stopped unexpectedly; the session continues from \
                 its stored conversation; please report this with the daemon's log"
            );
            Ended { parts: None, result: Err(SessionError::Internal(why)) }
        }
    }
}

impl Between {
    /// `session/compact`: compact the conversation now.
    pub async fn compact(self, drop_middle: bool) -> Ended<SessionCompactResult> {
        let Between { shared, session, cancel, parts } = self;
        // Hooks see the summary call under an id of its own: no run has it.
        let id = RunId(random_id("c_"));
        let ctx = session.context(&shared, &id, "", &cancel);
        let (done, state) = agent::compact(ctx, parts.into(), drop_middle).await;
        let result = match done {
            Ok(c) => Ok(SessionCompactResult {
                strategy: c.strategy.to_string(),
                tokens_before: c.tokens_before,
                tokens_after: c.tokens_after,
            }),
            Err(e) => Err(failure(&shared, &session.id, e)),
        };
        Ended { parts: Some(state.into()), result }
    }
}

/// The caller's error for a job between runs that did not happen.
pub(super) fn failure(shared: &Shared, id: &SessionId, e: CompactError) -> SessionError {
    match e {
        CompactError::Cancelled if shared.shutdown.is_triggered() => SessionError::ShuttingDown,
        CompactError::Cancelled => SessionError::Closed(id.clone()),
        CompactError::Failed(FailureKind::Setup, why) => SessionError::Config(why),
        CompactError::Failed(_, why) => SessionError::Internal(why),
    }
}

impl Sessions {
    /// `session/compact`: compact an idle session's conversation now.
    pub async fn compact(&self, id: &SessionId, drop_middle: bool) -> Result<SessionCompactResult, SessionError> {
        self.ask_idle(id, |reply| Command::Compact { drop_middle, reply }).await
    }

    /// Ask session `id`'s actor for something it does while idle (a job
    /// between runs, a checkpoint), loading the session when it is not in
    /// memory, and again when the copy asked was not the one to use.
    pub(super) async fn ask_idle<T>(
        &self,
        id: &SessionId,
        command: impl Fn(oneshot::Sender<Result<T, Refused>>) -> Command,
    ) -> Result<T, SessionError> {
        if self.shared.shutdown.is_triggered() {
            return Err(SessionError::ShuttingDown);
        }
        loop {
            let handle = match self.find(id)? {
                Found::Live(handle) => handle,
                Found::Closed => return Err(SessionError::Closed(id.clone())),
            };
            match handle.ask(&command).await {
                Ok(Ok(done)) => return Ok(done),
                Ok(Err(Refused::Session(e))) => return Err(e),
                // The copy in memory is not the one to use: load it again.
                Ok(Err(Refused::Reload)) | Err(Gone) => {}
            }
        }
    }
}
