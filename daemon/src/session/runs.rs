//! Starting, cancelling and waiting for runs, and reading their reports.

use super::{random_id, run, ActiveRun, SessionError, Sessions};
use crate::store::RunRow;
use serde_json::Value;
use swival_protocol::{RunId, RunResult, SessionId};
use tokio::sync::watch;

impl Sessions {
    /// `run/start`; `env`, when sent, is the caller's environment from
    /// this run on.
    pub async fn start_run(
        &self,
        id: &SessionId,
        task: String,
        env: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<RunId, SessionError> {
        if self.shared.shutdown.is_triggered() {
            return Err(SessionError::ShuttingDown);
        }
        let env = self.caller_env(env)?;
        loop {
            let session = self.get(id)?;
            let mut st = session.state.lock().await;
            if st.retired {
                continue;
            }
            if st.closed {
                return Err(SessionError::Closed(id.clone()));
            }
            if let Some((run, _)) = &st.active {
                return Err(SessionError::Busy { session: id.clone(), run: run.clone() });
            }
            // Another environment: this copy was built for the old one
            // (PATH, keys, scripts' environment); load the session again.
            if let Some(env) = env.as_ref().filter(|e| **e != session.env) {
                self.callers.set_env(id, env.clone());
                st.retired = true;
                self.live.remove(&session);
                continue;
            }
            let (conversation, tools, shield) = st.idle.take().expect("an idle session holds its conversation");
            let run_id = RunId(random_id("r_"));
            let cancel = self.shared.shutdown.child_token();
            let row = RunRow {
                id: run_id.clone(),
                session_id: id.clone(),
                task: task.clone(),
                result: None,
                report: None,
                started_at: crate::clock::now(),
            };
            // Known as in flight before the store says so: `run/wait` relies on it.
            let (done_tx, done_rx) = watch::channel(None);
            self.live.run_started(run_id.clone(), ActiveRun { cancel: cancel.clone(), done: done_rx });
            // The run row and its run_started event: one commit.
            if let Err(e) = session.events.start(&row) {
                self.live.run_ended(&run_id);
                st.idle = Some((conversation, tools, shield));
                return Err(e.into());
            }
            st.active = Some((run_id.clone(), cancel.clone()));
            drop(st);
            let job = run::RunJob {
                shared: self.shared.clone(),
                session,
                run_id: run_id.clone(),
                task,
                cancel,
                conversation,
                tools,
                shield,
                run_start: 0,
            };
            self.shared.shutdown.spawn(run::supervise(job, self.live.clone(), done_tx));
            return Ok(run_id);
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

    /// `run/wait`: the result of a finished run is read from the store; a
    /// run in flight is waited for.
    pub async fn wait(&self, run: &RunId) -> Result<RunResult, SessionError> {
        let read = || -> Result<RunRow, SessionError> {
            self.shared.store.run(run)?.ok_or_else(|| SessionError::RunNotFound(run.clone()))
        };
        let row = read()?;
        if let Some(result) = row.result {
            return Ok(result);
        }
        // A run is known as in flight before its row exists, and forgotten
        // only after its result is stored: with no result read above, it is
        // either still known here or its result is in the store now.
        if let Some((_, mut done)) = self.live.run(run) {
            if let Ok(r) = done.wait_for(Option::is_some).await {
                return Ok(r.clone().expect("waited for Some"));
            }
        }
        Ok(read()?.result.unwrap_or_else(|| crate::store::interrupted_result(run)))
    }

    /// `report/get`.
    pub fn report(&self, run: &RunId) -> Result<Value, SessionError> {
        let row = self.shared.store.run(run)?.ok_or_else(|| SessionError::RunNotFound(run.clone()))?;
        row.report.ok_or_else(|| SessionError::NoReport(run.clone()))
    }
}
