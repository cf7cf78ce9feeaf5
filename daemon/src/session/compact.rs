//! `session/compact`: an idle session's conversation compacted now, by the
//! agent loop's own compaction (`agent::compact`). It runs as a job of the
//! session's actor, as a run does: it holds the conversation while it goes
//! (a `run/start` meanwhile is refused as busy), `session/close` and
//! shutdown cancel it, and a panic in it loses only the copy in memory
//! (the session loads again from the store).

use super::actor::{Command, Gone, Parts, Refused};
use super::{random_id, Found, Session, SessionError, Sessions, Shared};
use crate::agent::{self, CompactError, RunState};
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use swival_protocol::{FailureKind, RunId, SessionCompactResult, SessionId};
use tokio_util::sync::CancellationToken;

/// A compaction about to run, holding the session's parts.
pub(super) struct CompactJob {
    /// Shared services.
    pub shared: Arc<Shared>,
    /// The session.
    pub session: Arc<Session>,
    /// Cancelled by session/close or shutdown.
    pub cancel: CancellationToken,
    /// Borrowed from the session until the compaction ends.
    pub parts: Parts,
    /// Also replace the middle turns (`drop`).
    pub drop_middle: bool,
}

/// How a compaction ended.
pub(super) struct Ended {
    /// The session's parts back; `None` after a panic took them.
    pub parts: Option<Parts>,
    /// What was done, or why not.
    pub result: Result<SessionCompactResult, SessionError>,
}

/// Run `job` to its end; a panic ends it as an internal error and takes
/// the parts with it (the actor leaves memory).
pub(super) async fn supervised(job: CompactJob) -> Ended {
    let id = job.session.id.clone();
    match AssertUnwindSafe(Box::pin(job.execute())).catch_unwind().await {
        Ok(ended) => ended,
        Err(_) => {
            tracing::error!("the compaction of session {id} panicked");
            let why = format!(
                "internal error: the compaction of session {id} stopped unexpectedly; the session continues from \
                 its stored conversation; please report this with the daemon's log"
            );
            Ended { parts: None, result: Err(SessionError::Internal(why)) }
        }
    }
}

impl CompactJob {
    async fn execute(self) -> Ended {
        let session = &self.session;
        // Hooks see the summary call under an id of its own: no run has it.
        let id = RunId(random_id("c_"));
        let ctx = session.context(&self.shared, &id, "", &self.cancel);
        let Parts { conversation, tools, shield } = self.parts;
        let (done, state) = agent::compact(ctx, RunState { conversation, tools, shield }, self.drop_middle).await;
        let RunState { conversation, tools, shield } = state;
        let result = match done {
            Ok(c) => Ok(SessionCompactResult {
                strategy: c.strategy.to_string(),
                tokens_before: c.tokens_before,
                tokens_after: c.tokens_after,
            }),
            Err(e) => Err(failure(&self.shared, &session.id, e)),
        };
        Ended { parts: Some(Parts { conversation, tools, shield }), result }
    }
}

/// The caller's error for a compaction that did not happen.
fn failure(shared: &Shared, id: &SessionId, e: CompactError) -> SessionError {
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
        if self.shared.shutdown.is_triggered() {
            return Err(SessionError::ShuttingDown);
        }
        loop {
            let handle = match self.find(id)? {
                Found::Live(handle) => handle,
                Found::Closed => return Err(SessionError::Closed(id.clone())),
            };
            match handle.ask(|reply| Command::Compact { drop_middle, reply }).await {
                Ok(Ok(done)) => return Ok(done),
                Ok(Err(Refused::Session(e))) => return Err(e),
                // The copy in memory is not the one to use: load it again.
                Ok(Err(Refused::Reload)) | Err(Gone) => {}
            }
        }
    }
}
