//! One run from start to its terminal event: set up the provider, run the
//! agent loop, decide the outcome, write history, build the report, store
//! the result with its `run_finished` event, and hand the conversation back
//! to the session's actor. `supervised` turns a panic anywhere in the run
//! into an `error` outcome.

use super::actor::Parts;
use super::{history, Session, Shared};
use crate::agent::conversation::Conversation;
use crate::agent::{consult, prompt, AgentRun, LoopEnd};
use crate::config::HookPoint;
use crate::config::{CommandAccess, SessionConfig};
use crate::pipeline::reviewer::{self, Verdict};
use crate::provider::{Provider, ProviderKind, ProviderSettings};
use crate::report::{self, ReportContext, RunRecord};
use crate::secrets::SecretShield;
use crate::store::StoreError;
use crate::tools::ToolBox;
use futures::FutureExt;
use serde_json::{json, Value};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use swival_protocol::FailureKind;
use swival_protocol::{BeforeResponseEmit, Event, EventKind, HookCall, Outcome, RunId, RunResult};
use tokio_util::sync::CancellationToken;

/// A run about to execute, holding the session's conversation and tools.
pub(super) struct RunJob {
    /// Shared services.
    pub shared: Arc<Shared>,
    /// The session.
    pub session: Arc<Session>,
    /// The run.
    pub run_id: RunId,
    /// The user's task.
    pub task: String,
    /// Cancelled by run/cancel, session/close or shutdown.
    pub cancel: CancellationToken,
    /// Borrowed from the session until the run ends.
    pub conversation: Conversation,
    /// Borrowed from the session until the run ends.
    pub tools: ToolBox,
    /// Borrowed from the session until the run ends: its secret shield.
    pub shield: Option<SecretShield>,
    /// Index of this run's task message in the conversation.
    pub run_start: usize,
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

/// The report of a run that ended without running its loop to the end
/// (interrupted by a restart, or a panic): the task and the result only.
pub(super) fn bare_report(task: &str, result: &RunResult) -> Value {
    json!({"version": 1, "task": task, "result": {
        "outcome": result.outcome, "answer": null, "exit_code": result.exit_code, "error_message": result.error,
    }})
}

/// What replaces the run's assistant text and tool-call arguments in the
/// stored conversation when a before_response_emit hook blocks the answer.
const WITHHELD: &str = "[response withheld by policy]";

/// A generic base URL gets `/v1` unless it already ends in `/vN`.
fn normalise_base_url(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let has_version = trimmed
        .rsplit('/')
        .next()
        .is_some_and(|last| last.len() > 1 && last.starts_with('v') && last[1..].chars().all(|c| c.is_ascii_digit()));
    if has_version {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1")
    }
}

/// Why a session's config describes no provider to call.
#[derive(Debug, thiserror::Error)]
pub enum ProviderConfigError {
    /// A provider without a preset URL and no `base_url`.
    #[error("provider = \"{}\" needs base_url; set it in swival.toml or pass --base-url", .0.as_str())]
    NoBaseUrl(ProviderKind),
}

/// The provider settings a session's config describes; the key comes from
/// the config, else from the caller's environment (`env`).
pub fn provider_settings(
    cfg: &SessionConfig,
    base_dir: &Path,
    env: &crate::procs::CallerEnv,
    backoff_base: Duration,
) -> Result<ProviderSettings, ProviderConfigError> {
    let kind = cfg.provider;
    let base_url = match (&cfg.base_url, kind.default_base_url()) {
        (Some(url), _) => normalise_base_url(url),
        (None, Some(preset)) => preset.to_owned(),
        (None, None) if kind == ProviderKind::Command => String::new(),
        (None, None) => return Err(ProviderConfigError::NoBaseUrl(kind)),
    };
    let api_key = cfg
        .api_key
        .as_ref()
        .map(|k| k.expose().to_owned())
        .or_else(|| kind.key_env().and_then(|name| env.secret(name)))
        .or_else(|| (kind == ProviderKind::Lmstudio).then(|| "lm-studio".to_owned()));
    Ok(ProviderSettings {
        kind,
        base_url,
        api_key,
        model: if kind == ProviderKind::Command { None } else { cfg.model.clone() },
        user_agent: cfg.user_agent.clone().unwrap_or_else(|| format!("swivald/{}", crate::VERSION)),
        timeout: crate::config::seconds(cfg.provider_timeout, 1.0),
        attempts: u32::try_from(cfg.retries.max(1)).unwrap_or(u32::MAX),
        backoff_base,
        max_output_tokens: cfg.max_output_tokens,
        temperature: cfg.temperature,
        top_p: cfg.top_p,
        seed: cfg.seed,
        extra_body: cfg.extra_body.clone(),
        reasoning_effort: cfg.reasoning_effort.map(|e| e.as_str().to_owned()),
        stream: cfg.stream,
        command: cfg.model_command.as_ref().map(|c| c.argv.clone()),
        command_pins: Vec::new(),
        runner: None,
        cwd: base_dir.to_owned(),
        env: env.clone(),
    })
}

impl RunJob {
    /// Run to the end; never fails: every failure becomes the outcome.
    /// Returns the result, stored with `run_finished`, and the parts.
    async fn execute(mut self) -> Ended {
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
        let mut record = RunRecord::default();
        let (end, model) = self.drive(cfg, &mut record).await;
        let end = self.response_hooks(end, &mut record).await;
        let (outcome, answer, error, failure) = match end {
            LoopEnd::Blocked(reason) => {
                (Outcome::Blocked, None, Some(format!("blocked by policy: {reason}")), Some(FailureKind::HookBlocked))
            }
            LoopEnd::Answer(a) => (Outcome::Success, Some(a), None, None),
            LoopEnd::Exhausted(last) => (
                Outcome::Exhausted,
                last,
                Some(format!("max_turns ({}) exhausted", cfg.max_turns)),
                Some(FailureKind::Exhausted),
            ),
            LoopEnd::Cancelled if self.shared.shutdown.is_triggered() => (
                Outcome::Interrupted,
                None,
                Some("the daemon shut down while this run was in flight".to_owned()),
                Some(FailureKind::Interrupted),
            ),
            LoopEnd::Cancelled => {
                (Outcome::Cancelled, None, Some("cancelled".to_owned()), Some(FailureKind::Cancelled))
            }
            LoopEnd::Failed(kind, e) => (Outcome::Error, None, Some(e), Some(kind)),
        };
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
            sandbox: json!({"mode": cfg.sandbox, "summary": session.sandbox.summary()}),
        };
        // Reports are written with known credentials encrypted (Swival's rule).
        let mut report = report::build(&ctx, &result, &record);
        match self.shield.as_mut() {
            Some(shield) => shield.encrypt_json_in_place(&mut report),
            None => SecretShield::encrypt_json_unkeyed(&mut report),
        }
        // Stored here, published by the actor once it holds its parts
        // again, so a client that sees run_finished can start the next run.
        let terminal = store_end(&session, &result, &report).await;
        let parts = Parts { conversation: self.conversation, tools: self.tools, shield: self.shield };
        Ended { result, parts: Some(parts), terminal }
    }

    /// before_response_emit: the hooks may rewrite or block the answer. A
    /// block withholds it and clears the run's assistant content (tool-call
    /// arguments included) from the stored conversation and the report, so
    /// it reaches no later turn, history, cache or report.
    async fn response_hooks(&mut self, end: LoopEnd, record: &mut RunRecord) -> LoopEnd {
        let session = self.session.clone();
        let LoopEnd::Answer(answer) = &end else { return end };
        if !session.pipeline.hooks.any(HookPoint::BeforeResponseEmit) {
            return end;
        }
        let start = self.run_start + 1;
        let texts: Vec<(usize, String)> = self.conversation.messages()[start.min(self.conversation.messages().len())..]
            .iter()
            .enumerate()
            .filter(|(_, m)| m["role"] == "assistant")
            .filter_map(|(i, m)| {
                m["content"].as_str().filter(|t| !t.trim().is_empty()).map(|t| (start + i, t.to_owned()))
            })
            .collect();
        let call = HookCall::BeforeResponseEmit(BeforeResponseEmit {
            session_id: session.id.clone(),
            run_id: self.run_id.clone(),
            task: self.task.clone(),
            content: answer.clone(),
            all_content: texts.iter().map(|(_, t)| t.clone()).collect(),
        });
        let decision =
            match consult(&session.pipeline, &session.events, &self.run_id, record, &call, &self.cancel).await {
                Ok(d) => d,
                Err(_) => return LoopEnd::Cancelled,
            };
        if let Some((_, reason)) = decision.blocked {
            let stored = self
                .conversation
                .rewrite(|msgs| {
                    for m in msgs.iter_mut().skip(start).filter(|m| m["role"] == "assistant") {
                        m["content"] = json!(WITHHELD);
                        for call in m.get_mut("tool_calls").and_then(Value::as_array_mut).into_iter().flatten() {
                            call["function"]["arguments"] = json!("{}");
                        }
                    }
                })
                .await;
            record.withhold_arguments();
            if !record.cache_keys.is_empty() {
                if let Ok(cache) = self.shared.cache() {
                    cache.forget(&record.cache_keys);
                }
            }
            if let Err(e) = stored {
                return LoopEnd::Failed(FailureKind::Internal, format!("could not clear the withheld answer: {e}"));
            }
            return LoopEnd::Blocked(reason);
        }
        let mut new_answer = answer.clone();
        let rewrites: Vec<(usize, String)> = match (decision.all_content, decision.content) {
            (Some(all), _) => texts.iter().zip(all).map(|((i, _), t)| (*i, t)).collect(),
            (None, Some(c)) => texts.last().map(|(i, _)| vec![(*i, c.clone())]).unwrap_or_default(),
            (None, None) => return end,
        };
        // The answer delivered is what the last answer message now says.
        let last = texts.last().map(|(j, _)| *j);
        if let Some((_, t)) = rewrites.iter().find(|(i, _)| Some(*i) == last) {
            new_answer = t.clone();
        }
        if let Err(e) = self
            .conversation
            .rewrite(|msgs| {
                for (i, t) in &rewrites {
                    msgs[*i]["content"] = json!(t);
                }
            })
            .await
        {
            return LoopEnd::Failed(FailureKind::Internal, format!("could not store the rewritten answer: {e}"));
        }
        LoopEnd::Answer(new_answer)
    }

    /// Drop MCP tools that would take more than half of a `window`-token
    /// context (Swival's schema budget), saying so in warnings.
    fn fit_mcp(&mut self, window: u64) {
        // Without MCP tools there is nothing to fit (and no schema to build).
        if self.tools.mcp.schemas().is_empty() {
            return;
        }
        let mut builtin = self.tools.schemas();
        builtin.extend(crate::sandbox::tool_schemas(&self.session.commands.policy));
        for message in self.tools.mcp.fit(window, &builtin) {
            self.session.events.emit(Some(&self.run_id), EventKind::Warning { message });
        }
    }

    /// Prepare the conversation and run the loop; returns how it ended and
    /// the model used.
    /// The provider client of this run's session.
    fn provider(&self, cfg: &SessionConfig) -> Result<Provider, ProviderConfigError> {
        let env = &self.session.env;
        let mut settings = provider_settings(cfg, &self.session.base_dir, env, self.shared.settings.backoff_base)?;
        settings.command_pins = self.session.pipeline.provider_pins.clone();
        settings.runner = Some(self.shared.runner.clone());
        Ok(Provider::new(self.shared.http(), settings))
    }

    /// The messages a run starts with: the system prompt (a new
    /// conversation's first message, with the MCP tools listed as Swival
    /// does), orphaned tool calls answered, the task, and the files it names
    /// (unless `read_named_files` is off: then the task is the last message,
    /// as in Swival).
    fn open_conversation(&mut self, cfg: &SessionConfig) -> Result<(), StoreError> {
        if self.conversation.messages().is_empty() && !cfg.no_system_prompt {
            let replacement = cfg
                .system_prompt
                .as_deref()
                .or((cfg.provider == ProviderKind::Command).then_some(prompt::COMMAND_PROVIDER_PROMPT));
            let mut text =
                prompt::system_prompt(&self.session.base_dir, replacement, !cfg.no_instructions, cfg.files_mode());
            if let Some(info) = prompt::mcp_tool_info(&self.tools.mcp.tool_info()).filter(|_| replacement.is_none()) {
                text.push_str("\n\n");
                text.push_str(&info);
            }
            self.conversation.push(json!({"role": "system", "content": text}))?;
        }
        self.conversation.complete_orphans()?;
        self.run_start = self.conversation.messages().len();
        self.conversation.push(json!({"role": "user", "content": self.task}))?;
        if !cfg.read_named_files {
            return Ok(());
        }
        match self.tools.read_named(&self.task) {
            Some(files) => self.conversation.push(json!({"role": "user", "content": files, "_swival_synthetic": true})),
            None => Ok(()),
        }
    }

    async fn drive(&mut self, cfg: &SessionConfig, record: &mut RunRecord) -> (LoopEnd, String) {
        let provider = match self.provider(cfg) {
            Ok(p) => p,
            Err(e) => return (LoopEnd::Failed(FailureKind::Setup, e.to_string()), String::new()),
        };
        // MCP servers not started yet start now, so their tools are offered.
        for message in self.tools.mcp.prepare().await {
            self.session.events.emit(Some(&self.run_id), EventKind::Warning { message });
        }
        if let Err(e) = self.open_conversation(cfg) {
            return (LoopEnd::from(e), String::new());
        }
        let discovered = tokio::select! {
            d = provider.discover(cfg.max_context_tokens) => d,
            _ = self.cancel.cancelled() => return (LoopEnd::Cancelled, String::new()),
        };
        let discovered = match discovered {
            Ok(d) => d,
            Err(e) => return (LoopEnd::Failed(FailureKind::Provider, e.to_string()), String::new()),
        };
        let model = discovered.model.clone();
        if let Some(window) = discovered.context_window {
            self.fit_mcp(window);
        }
        let pipeline = &self.session.pipeline;
        let cache = match cfg.cache.then(|| self.shared.cache()).transpose() {
            Ok(c) => c,
            Err(e) => return (LoopEnd::Failed(FailureKind::Internal, e), model),
        };
        let policy_digest = pipeline.policy_digest();
        let mut turn_offset = 0;
        let mut round = 0;
        loop {
            let mut agent = AgentRun {
                run_id: &self.run_id,
                events: &self.session.events,
                provider: &provider,
                model: &model,
                context_window: discovered.context_window,
                max_turns: cfg.max_turns,
                turn_offset,
                tools: &mut self.tools,
                conversation: &mut self.conversation,
                cancel: &self.cancel,
                llm_slots: &self.shared.llm_slots,
                record,
                pipeline,
                session_id: &self.session.id,
                commands: &self.session.commands,
                fetch: &self.session.fetch,
                cache: cache.as_deref(),
                shield: self.shield.as_mut(),
                policy_digest: &policy_digest,
                storm_breaker: cfg.storm_breaker,
                buffers: &self.shared.buffers,
                hook_asks: &self.session.hook_asks,
            };
            let end = agent.run().await;
            let (LoopEnd::Answer(answer), Some(reviewer)) = (&end, &pipeline.reviewer) else {
                return (end, model);
            };
            round += 1;
            let verdict = self.review(reviewer, answer, &model, round, record).await;
            match verdict {
                Verdict::Retry(feedback) if round < reviewer.max_rounds => {
                    let message = json!({"role": "user", "content": reviewer::feedback_message(round, &feedback)});
                    if let Err(e) = self.conversation.push(message) {
                        return (LoopEnd::from(e), model);
                    }
                    turn_offset = record.stats.turns;
                }
                Verdict::Cancelled => return (LoopEnd::Cancelled, model),
                Verdict::Tampered(why) => return (LoopEnd::Blocked(why), model),
                Verdict::Accept | Verdict::Retry(_) | Verdict::Error(_) => return (end, model),
            }
        }
    }

    /// One reviewer round: run the reviewer on `answer`, emit the round
    /// (`stderr` events and a `review` event, which the report folds in)
    /// and tell the user what it decided in Swival's words (`notice` and
    /// `warning` events).
    async fn review(
        &self,
        reviewer: &reviewer::Reviewer,
        answer: &str,
        model: &str,
        round: u64,
        record: &mut RunRecord,
    ) -> Verdict {
        let events = &self.session.events;
        let runner = &self.session.pipeline.runner;
        events.emit(Some(&self.run_id), reviewer::sending_notice(round));
        let (verdict, rec) = reviewer.review(runner, answer, &self.task, model, round, &self.cancel).await;
        let verdict_name = match &verdict {
            Verdict::Accept => swival_protocol::ReviewVerdict::Accept,
            Verdict::Retry(_) => swival_protocol::ReviewVerdict::Retry,
            Verdict::Error(_) => swival_protocol::ReviewVerdict::Error,
            Verdict::Cancelled | Verdict::Tampered(_) => return verdict,
        };
        for line in rec.stderr.lines() {
            tracing::info!(target: "swivald::reviewer", "{}: {line}", reviewer.display);
            let kind = EventKind::Stderr {
                source: swival_protocol::StderrSource::Reviewer,
                command: reviewer.display.clone(),
                text: line.to_owned(),
            };
            events.emit(Some(&self.run_id), kind);
        }
        let kind = EventKind::Review {
            round,
            exit_code: rec.exit_code,
            feedback: rec.feedback.clone(),
            verdict: verdict_name,
            stderr: (!rec.stderr.is_empty()).then(|| rec.stderr.clone()),
        };
        crate::agent::emit_recorded(events, &self.run_id, record, kind);
        for kind in reviewer::round_events(round, reviewer.max_rounds, &verdict, &rec) {
            events.emit(Some(&self.run_id), kind);
        }
        verdict
    }
}

/// The report's `settings` object (Swival's keys).
fn report_settings(cfg: &SessionConfig) -> Value {
    json!({
        "temperature": cfg.temperature,
        "top_p": cfg.top_p,
        "seed": cfg.seed,
        "max_turns": cfg.max_turns,
        "max_output_tokens": cfg.max_output_tokens,
        "context_length": cfg.max_context_tokens,
        // Resolved as Swival reports them: yolo applied, the whitelist sorted.
        "files": cfg.files_mode(),
        "commands": match cfg.command_access() {
            CommandAccess::Off => json!("none"),
            CommandAccess::Unrestricted => json!("all"),
            CommandAccess::Ask => json!("ask"),
            CommandAccess::Whitelist(names) => {
                let mut names = names.to_vec();
                names.sort();
                json!(names)
            }
        },
        "max_review_rounds": cfg.max_review_rounds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_settings_show_files_and_commands_resolved_as_swival_does() {
        let cfg = SessionConfig { yolo: true, ..SessionConfig::default() };
        let s = report_settings(&cfg);
        assert_eq!((&s["files"], &s["commands"]), (&json!("all"), &json!("all")));
        let cfg = SessionConfig { allowed_commands: vec!["ls".into(), "cat".into()], ..SessionConfig::default() };
        let s = report_settings(&cfg);
        assert_eq!((&s["files"], &s["commands"]), (&json!("some"), &json!(["cat", "ls"])));
        assert_eq!(report_settings(&SessionConfig::default())["commands"], "none");
    }

    #[test]
    fn generic_base_url_gets_v1_unless_versioned() {
        assert_eq!(normalise_base_url("http://h:1/"), "http://h:1/v1");
        assert_eq!(normalise_base_url("http://h:1/v1"), "http://h:1/v1");
        assert_eq!(normalise_base_url("http://h/api/v2/"), "http://h/api/v2");
    }
}
