//! Starting, cancelling and waiting for runs, and reading their reports.

use super::mailbox::{Command, Gone, Refused};
use super::{Found, NewRun, SessionError, Sessions};
use swival_protocol::Report;
use swival_protocol::{RunId, RunResult, SessionId};

impl Sessions {
    /// `run/start`; `env`, when sent, is the caller's environment from
    /// this run on.
    pub async fn start_run(
        &self,
        id: &SessionId,
        task: impl Into<NewRun>,
        env: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<RunId, SessionError> {
        if self.shared.shutdown.is_triggered() {
            return Err(SessionError::ShuttingDown);
        }
        let env = self.caller_env(env)?;
        let task = task.into();
        loop {
            let handle = match self.find(id)? {
                Found::Live(handle) => handle,
                Found::Closed => return Err(SessionError::Closed(id.clone())),
            };
            let sent = env.clone();
            match handle.ask(|reply| Command::Start { task: task.clone(), env: sent, reply }).await {
                Ok(Ok(run)) => return Ok(run),
                Ok(Err(Refused::Session(e))) => return Err(e),
                // The copy in memory was built for the caller's old
                // environment and has left; the next one loads with this.
                Ok(Err(Refused::Reload)) => {
                    if let Some(env) = &env {
                        self.shared.callers.set_env(id, env.clone());
                    }
                }
                // It left memory before reading this: load it again.
                Err(Gone) => {}
            }
        }
    }

    /// `run/cancel`: true when the run was in flight.
    pub fn cancel(&self, run: &RunId) -> Result<bool, SessionError> {
        let row = self.shared.store.run(run)?.ok_or_else(|| SessionError::RunNotFound(run.clone()))?;
        if row.result.is_some() {
            return Ok(false);
        }
        Ok(match self.live.run(run) {
            Some((cancel, _)) => {
                cancel.cancel();
                true
            }
            None => false,
        })
    }

    /// Cancel `run` if `gone` fires before it ends (`cancel_on_disconnect`:
    /// the connection that started it ended).
    pub fn cancel_when(&self, run: &RunId, gone: tokio_util::sync::CancellationToken) {
        let Some((cancel, mut done)) = self.live.run(run) else { return };
        tokio::spawn(async move {
            tokio::select! {
                _ = gone.cancelled() => cancel.cancel(),
                _ = done.wait_for(Option::is_some) => {}
            }
        });
    }

    /// `run/wait`: the result of a finished run is read from the store; a
    /// run in flight is waited for.
    pub async fn wait(&self, run: &RunId) -> Result<RunResult, SessionError> {
        // A run is known as in flight from before its row exists until its
        // result is stored and its session, when it leaves memory, has
        // left: a waiter that finds it here hears the result from the
        // session; one that does not finds the result stored.
        if let Some((_, mut done)) = self.live.run(run) {
            if let Ok(r) = done.wait_for(Option::is_some).await {
                return Ok(r.clone().expect("waited for Some"));
            }
        }
        let row = self.shared.store.run(run)?.ok_or_else(|| SessionError::RunNotFound(run.clone()))?;
        Ok(row.result.unwrap_or_else(|| crate::store::interrupted_result(run)))
    }

    /// `report/get`.
    pub fn report(&self, run: &RunId) -> Result<Report, SessionError> {
        let row = self.shared.store.run(run)?.ok_or_else(|| SessionError::RunNotFound(run.clone()))?;
        let report = row.report.ok_or_else(|| SessionError::NoReport(run.clone()))?;
        serde_json::from_value(report).map_err(|e| SessionError::BadReport { run: run.clone(), why: e.to_string() })
    }
}
