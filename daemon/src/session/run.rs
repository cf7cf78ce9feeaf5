//! One run from start to its terminal event: set up the provider, run the
//! agent loop, decide the outcome, write history, build the report, store
//! the result with its `run_finished` event, and hand the conversation back
//! to the session's actor. `supervised` turns a panic anywhere in the run
//! into an `error` outcome.

use super::mailbox::Parts;
use super::{history, Session, Shared};
use crate::agent::conversation::Conversation;
use crate::agent::{self, RunContext, RunServices, RunState};
use crate::cache::ResponseCache;
use crate::config::{CommandAccess, SessionConfig};
use crate::procs::ProcessRunner;
use crate::report::{self, ReportContext};
use crate::secrets::SecretShield;
use crate::tools::ToolBox;
use futures::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use swival_protocol::{Event, EventKind, Outcome, RunId, RunResult};
use swival_protocol::{FailureKind, ReportCommands, ReportSandbox, ReportSettings};
use tokio_util::sync::CancellationToken;

/// A run about to execute, holding the session's conversation and tools.
pub(super) struct RunJob {
    /// Shared services.
    pub shared: Arc<Shared>,
    /// The session.
    pub session: Arc<Session>,
    /// The run.
    pub run_id: RunId,
    /// The user's task (resumed: only the run's label).
    pub task: String,
    /// Go on with the conversation as it is, adding no user message.
    pub resume: bool,
    /// Offer the model no tools.
    pub bare: bool,
    /// The goal it works on, if any.
    pub goal: Option<agent::GoalRun>,
    /// Cancelled by run/cancel, session/close or shutdown.
    pub cancel: CancellationToken,
    /// Borrowed from the session until the run ends.
    pub conversation: Conversation,
    /// Borrowed from the session until the run ends.
    pub tools: ToolBox,
    /// Borrowed from the session until the run ends: its secret shield.
    pub shield: Option<SecretShield>,
}

/// A task that makes a run panic, to test what a panic leaves behind.
#[cfg(test)]
pub(super) const PANIC_TASK: &str = "(test) panic in the run";

/// A task whose run waits to be cancelled before it goes on, to test what
/// a run in flight keeps.
#[cfg(test)]
pub(super) const HOLD_TASK: &str = "(test) wait for run/cancel";

/// How a run ended.
pub(super) struct Ended {
    /// The result, stored with the run's `run_finished`.
    pub result: RunResult,
    /// The session's parts back; `None` after a panic took them.
    pub parts: Option<Parts>,
    /// The stored `run_finished`, for the actor to publish once it can take
    /// the next run; `None` when it could not be stored.
    pub terminal: Option<Event>,
}

/// Run `job` to its end: its result, stored with its `run_finished`, and
/// the session's parts back. A panic anywhere in the run (a tool, the
/// provider client, a hook) ends it as `error` with its `run_finished`, and
/// the session is never left busy: the panic took the parts with it
/// (`None`), so the actor leaves memory and the session loads again from
/// the store.
pub(super) async fn supervised(job: RunJob) -> Ended {
    let (shared, session) = (job.shared.clone(), job.session.clone());
    let (run_id, task) = (job.run_id.clone(), job.task.clone());
    // Boxed: the run's future is large, and is moved as a box, not on the stack.
    match AssertUnwindSafe(Box::pin(job.execute())).catch_unwind().await {
        Ok(ended) => ended,
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            tracing::error!("run {run_id} of session {} panicked: {why}", session.id);
            recover(&shared, &session, &run_id, &task, &why).await
        }
    }
}

/// End a run whose task panicked: store an `error` result with its
/// `run_finished`, unless the run stored its end before panicking.
async fn recover(shared: &Shared, session: &Session, run_id: &RunId, task: &str, why: &str) -> Ended {
    if let Some(result) = shared.store.run(run_id).ok().flatten().and_then(|r| r.result) {
        // Its run_finished is stored; only the store's readers see it.
        return Ended { result, parts: None, terminal: None };
    }
    let result = RunResult {
        run_id: run_id.clone(),
        outcome: Outcome::Error,
        answer: None,
        exit_code: Outcome::Error.exit_code(),
        error: Some(format!(
            "internal error: the run stopped unexpectedly ({why}); the session continues from its stored \
             conversation; please report this with the daemon's log"
        )),
        failure: Some(FailureKind::Internal),
        stats: Default::default(),
    };
    let terminal = store_end(session, &result, &bare_report(task, &result)).await;
    Ended { result, parts: None, terminal }
}

/// Store a run's end with its `run_finished`: the event to publish, or
/// `None` (logged) when it could not be stored.
async fn store_end(session: &Session, result: &RunResult, report: &Value) -> Option<Event> {
    match session.events.finish(result, report).await {
        Ok(event) => Some(event),
        Err(e) => {
            tracing::error!("could not store the end of run {}: {e}", result.run_id);
            None
        }
    }
}

/// The stored report of a run that ended without running its loop to the
/// end (interrupted by a restart, or a panic).
pub(super) fn bare_report(task: &str, result: &RunResult) -> Value {
    serde_json::to_value(report::bare(task, result)).expect("a report serializes")
}

/// Events read at a time when a lost run's are folded.
const LOST_PAGE: usize = 512;
/// Events read at most, back from the session's last, to find a lost
/// run's: past them its report has only its end (the daemon must start).
const LOST_SCAN: u64 = 50_000;

/// The end of a run the daemon lost (it crashed or was killed while the
/// run was in flight): interrupted, with the stats and the timeline of
/// what its stored events say it did, so its report and the session's
/// context tell what happened. The lost run is its session's last, so its
/// events are read back from the session's end, page by page, to its
/// `run_started`.
pub(super) fn lost_run(store: &crate::store::Store, run: &crate::store::RunRow) -> (RunResult, Value) {
    let last = store.session(&run.session_id).ok().flatten().map_or(0, |s| s.last_seq);
    let floor = last.saturating_sub(LOST_SCAN).max(1);
    let mut pages: Vec<Vec<Event>> = Vec::new();
    let mut from = last.saturating_sub(LOST_PAGE as u64 - 1).max(floor);
    // Seqs below this one are not read yet.
    let mut upto = u64::MAX;
    loop {
        let page = match store.events_from(&run.session_id, from, LOST_PAGE) {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!("the events of lost run {} cannot be read ({e}); its report has only its end", run.id);
                pages.clear();
                break;
            }
        };
        let mine: Vec<Event> =
            page.into_iter().filter(|e| e.seq.0 < upto && e.run_id.as_ref() == Some(&run.id)).collect();
        upto = from;
        let started = mine.iter().any(|e| matches!(e.kind, EventKind::RunStarted { .. }));
        pages.push(mine);
        if started || from <= floor {
            break;
        }
        from = from.saturating_sub(LOST_PAGE as u64).max(floor);
    }
    let mut record = report::RunRecord::default();
    for event in pages.iter().rev().flatten() {
        record.apply(&event.kind);
    }
    let mut result = crate::store::interrupted_result(&run.id);
    result.stats = record.stats.clone();
    let report = serde_json::to_value(report::lost(&run.task, &result, &record)).expect("a report serializes");
    (result, report)
}

impl RunServices for Shared {
    fn http(&self) -> reqwest::Client {
        Shared::http(self)
    }

    fn runner(&self) -> Arc<ProcessRunner> {
        self.runner.clone()
    }

    fn backoff_base(&self) -> Duration {
        self.settings.backoff_base
    }

    fn cache(&self) -> Result<Arc<ResponseCache>, crate::cache::CacheError> {
        Shared::cache(self)
    }

    fn shutting_down(&self) -> bool {
        self.shutdown.is_triggered()
    }

    fn socket(&self) -> Option<std::path::PathBuf> {
        self.settings.socket.clone()
    }
}

impl Session {
    /// What a job of this session reads (a run of `task`; a compaction,
    /// with no task): its config, policy and the daemon's services.
    pub(super) fn context<'a>(
        &'a self,
        shared: &'a Shared,
        run_id: &'a RunId,
        task: &'a str,
        cancel: &'a CancellationToken,
    ) -> RunContext<'a> {
        RunContext {
            run_id,
            session_id: &self.id,
            task,
            resume: false,
            bare: false,
            config: &self.config.config,
            base_dir: &self.base_dir,
            env: &self.env,
            events: &self.events,
            pipeline: &self.pipeline,
            commands: &self.commands,
            fetch: &self.fetch,
            hook_asks: &self.hook_asks,
            buffers: &shared.buffers,
            llm_slots: &shared.llm_slots,
            services: shared,
            cancel,
            goal: None,
            changes: None,
            subagents: None,
        }
    }
}

impl RunJob {
    /// Run to the end; never fails: every failure becomes the outcome.
    /// Returns the result, stored with `run_finished`, and the parts.
    async fn execute(self) -> Ended {
        let session = self.session.clone();
        let cfg = &session.config.config;
        #[cfg(test)]
        if self.task == PANIC_TASK {
            panic!("{PANIC_TASK}");
        }
        #[cfg(test)]
        if self.task == HOLD_TASK {
            self.cancel.cancelled().await;
        }
        let recorder =
            self.shared.changes.as_ref().and_then(|c| c.recorder(&session.base_dir, &self.run_id.0, &session.id));
        if let Some(r) = &recorder {
            r.warm();
        }
        let host = super::subagents::Host::of(&self.shared, &session.id, &self.run_id);
        let subagents = host.as_ref().map(|h| h as &dyn crate::agent::subagents::SubagentHost);
        let ctx = session.context(&self.shared, &self.run_id, &self.task, &self.cancel);
        let ctx = RunContext {
            resume: self.resume,
            bare: self.bare,
            goal: self.goal.as_ref(),
            changes: recorder.as_ref(),
            subagents,
            ..ctx
        };
        let state = RunState { conversation: self.conversation, tools: self.tools, shield: self.shield };
        let finished = agent::run(ctx, state).await;
        let changes = match &recorder {
            Some(r) => r.finish().await.map_err(|e| changes_lost(&session, &self.run_id, &e)).ok(),
            None => None,
        };
        let agent::Finished { outcome, answer, error, failure, model, mut record, state } = finished;
        record.stats.cost_usd = cost(cfg, &model, &record.stats);
        if let Some(a) = answer.as_deref().filter(|a| !a.trim().is_empty()) {
            if !cfg.no_history && matches!(outcome, Outcome::Success | Outcome::Exhausted) {
                if let Err(e) = history::append(&session.base_dir, &self.task, a) {
                    let message = format!("history was not written: could not append to .swival/HISTORY.md: {e}");
                    session.events.emit(Some(&self.run_id), EventKind::Warning { message });
                }
            }
        }
        let result = RunResult {
            run_id: self.run_id.clone(),
            outcome,
            answer,
            exit_code: outcome.exit_code(),
            error,
            failure,
            stats: record.stats.clone(),
        };
        let ctx = ReportContext {
            task: &self.task,
            model: &model,
            provider: cfg.provider.as_str(),
            settings: report_settings(cfg),
            // Swival's `{"mode": …}`, plus what that comes to here.
            sandbox: ReportSandbox { mode: cfg.sandbox, summary: session.sandbox.summary() },
        };
        let RunState { conversation, tools, mut shield } = state;
        // Reports are written with known credentials encrypted (Swival's rule).
        let mut report = report::build(&ctx, &result, &record);
        report.changes = changes.map(|set| crate::changes::report_list(&set));
        let mut report = serde_json::to_value(report).expect("a report serializes");
        match shield.as_mut() {
            Some(shield) => shield.encrypt_json_in_place(&mut report),
            None => SecretShield::encrypt_json_unkeyed(&mut report),
        }
        // Stored here, published by the actor once it holds its parts
        // again, so a client that sees run_finished can start the next run.
        let terminal = store_end(&session, &result, &report).await;
        let parts = Parts { conversation, tools, shield };
        Ended { result, parts: Some(parts), terminal }
    }
}

/// What a run cost by `model_prices`, when its model has a price there and
/// the server counted the tokens.
fn cost(cfg: &SessionConfig, model: &str, stats: &swival_protocol::RunStats) -> Option<f64> {
    let price = crate::config::Price::of(cfg.model_prices.as_ref()?, model).ok()??;
    let (prompt, completion) = (stats.prompt_tokens?, stats.completion_tokens?);
    Some(price.cost(prompt, stats.cached_tokens.unwrap_or(0), completion))
}

/// Say that a run's changes were not recorded, and why.
fn changes_lost(session: &Session, run_id: &RunId, e: &crate::changes::ChangeError) {
    let message = format!(
        "the changes of this run were not recorded, so `swivalctl diff` and `undo` cannot show or revert them: {e}"
    );
    session.events.emit(Some(run_id), EventKind::Warning { message });
}

/// The report's `settings` (Swival's keys).
fn report_settings(cfg: &SessionConfig) -> ReportSettings {
    ReportSettings {
        temperature: cfg.temperature,
        top_p: cfg.top_p,
        seed: cfg.seed,
        max_turns: cfg.max_turns,
        max_output_tokens: cfg.max_output_tokens,
        context_length: cfg.max_context_tokens,
        // Resolved as Swival reports them: yolo applied, the whitelist sorted.
        files: serde_json::to_value(cfg.files_mode())
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        commands: match cfg.command_access() {
            CommandAccess::Off => ReportCommands::Mode("none".into()),
            CommandAccess::Unrestricted => ReportCommands::Mode("all".into()),
            CommandAccess::Ask => ReportCommands::Mode("ask".into()),
            CommandAccess::Whitelist(names) => {
                let mut names = names.to_vec();
                names.sort();
                ReportCommands::Names(names)
            }
        },
        max_review_rounds: cfg.max_review_rounds,
        // The run's, from its record (`report::build`).
        skills_discovered: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn report_settings_show_files_and_commands_resolved_as_swival_does() {
        let cfg = SessionConfig { yolo: true, ..SessionConfig::default() };
        let s = serde_json::to_value(report_settings(&cfg)).unwrap();
        assert_eq!((&s["files"], &s["commands"]), (&json!("all"), &json!("all")));
        let cfg = SessionConfig { allowed_commands: vec!["ls".into(), "cat".into()], ..SessionConfig::default() };
        let s = serde_json::to_value(report_settings(&cfg)).unwrap();
        assert_eq!((&s["files"], &s["commands"]), (&json!("some"), &json!(["cat", "ls"])));
        assert_eq!(serde_json::to_value(report_settings(&SessionConfig::default())).unwrap()["commands"], "none");
    }
}
