//! The agent loop with Swival's semantics: a turn is one LLM call plus its
//! tool calls, run in order; results go back as `tool` messages; a reply
//! without tool calls is the final answer; empty and cut-off replies get
//! Swival's nudges; `max_turns` exhausted ends the run.

mod compact;
pub mod conversation;
mod estimate;
mod guard;
mod observer;
pub mod prompt;
mod sink;
mod tools;

use crate::cache::{ResponseCache, Served};
use crate::config::HookPoint;
use crate::pipeline::filter::{self, CallKind, FilterError, FilterInput};
use crate::pipeline::hooks::{self, merge::Decision};
use crate::pipeline::Pipeline;
use crate::provider::{ChatRequest, Provider, ProviderError, ProviderKind};
use crate::report::{LlmCallRecord, RunRecord};
use crate::sandbox::{CommandEnv, FetchEnv};
use crate::secrets::SecretShield;
use crate::store::StoreError;
use crate::tools::ToolBox;
use compact::is_context_overflow;
use conversation::Conversation;
pub use estimate::estimate_tokens;
use estimate::{estimate_from, json_len, Offered};
use observer::Observer;
use serde_json::{json, Value};
pub use sink::EventSink;
use std::time::Instant;
use swival_protocol::{CacheStatus, EventKind, RunId, SessionId};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Nudge after an empty reply.
pub const EMPTY_NUDGE: &str = "Your response was empty. Please continue working on the task using the available tools.";
/// Nudge after a reply cut off by the output limit.
pub const TRUNCATED_NUDGE: &str =
    "Your response was cut off. Please use the provided tools to complete the task step by step.";
/// Result shown to the model for tool calls of a cancelled run.
const CANCELLED_RESULT: &str = "error: the run was cancelled before this tool call ran";

/// How the loop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopEnd {
    /// A final answer.
    Answer(String),
    /// `max_turns` ran out; the last assistant text, if any.
    Exhausted(Option<String>),
    /// The run was cancelled.
    Cancelled,
    /// The run failed; the message says why.
    Failed(String),
    /// A hook blocked the run; the reason.
    Blocked(String),
}

impl From<StoreError> for LoopEnd {
    fn from(e: StoreError) -> Self {
        LoopEnd::Failed(format!("could not store the conversation: {e}"))
    }
}

/// Everything one run of the loop uses.
pub struct AgentRun<'a> {
    /// The run.
    pub run_id: &'a RunId,
    /// Where events go.
    pub events: &'a dyn EventSink,
    /// The provider client.
    pub provider: &'a Provider,
    /// Model id to request.
    pub model: &'a str,
    /// Context window, when known.
    pub context_window: Option<u64>,
    /// Turn budget of this loop.
    pub max_turns: u64,
    /// Turns taken by earlier loops of the same run (reviewer rounds).
    pub turn_offset: u64,
    /// The session's tools.
    pub tools: &'a mut ToolBox,
    /// The session's conversation.
    pub conversation: &'a mut Conversation,
    /// Set by run/cancel.
    pub cancel: &'a CancellationToken,
    /// Daemon-wide cap on concurrent provider calls (FIFO-fair).
    pub llm_slots: &'a Semaphore,
    /// Stats and timeline.
    pub record: &'a mut RunRecord,
    /// The session's policy pipeline.
    pub pipeline: &'a Pipeline,
    /// The session, for hook payloads.
    pub session_id: &'a SessionId,
    /// How `run_command` runs.
    pub commands: &'a CommandEnv,
    /// How `fetch_url` runs.
    pub fetch: &'a FetchEnv,
    /// The response cache, when the session has `cache = true`.
    pub cache: Option<&'a ResponseCache>,
    /// Digest of the session's filters and hooks (part of the cache key).
    pub policy_digest: &'a str,
    /// Encrypts secrets on the way out and decrypts them in replies.
    pub shield: Option<&'a mut SecretShield>,
    /// The loop guards are on (Swival's `storm_breaker`).
    pub storm_breaker: bool,
    /// Editors serving file reads from their buffers.
    pub buffers: &'a crate::editor::EditorBuffers,
    /// The session's answers to calls `after_llm_call` hooks asked about.
    pub hook_asks: &'a crate::sandbox::ask::AskGate,
}

/// Run the hooks of `point`, record each decision (event and report), and
/// return the merged decision.
pub async fn consult(
    pipeline: &Pipeline,
    events: &dyn EventSink,
    run_id: &RunId,
    record: &mut RunRecord,
    point: HookPoint,
    payload: &Value,
    cancel: &CancellationToken,
) -> Result<Decision, hooks::Cancelled> {
    let (decision, records) = pipeline.hooks.run(point, payload, cancel).await?;
    for r in records {
        let reason = r.effect.reason().map(str::to_owned);
        let duration_s = r.duration.as_secs_f64();
        record.event(json!({
            "type": "hook",
            "point": point,
            "hook": r.hook,
            "decision": r.effect.decision(),
            "reason": reason,
            "duration_s": (duration_s * 1000.0).round() / 1000.0,
        }));
        let kind = EventKind::Hook { point, hook: r.hook, decision: r.effect.decision(), reason, duration_s };
        events.emit(Some(run_id), kind);
    }
    Ok(decision)
}

/// How a provider call ended, for the report and the `llm_call` event.
struct CallEnd {
    /// Agent turn or summary.
    kind: CallKind,
    /// The provider's finish reason, or `error`.
    finish_reason: Option<String>,
    /// The provider's usage object.
    usage: Option<Value>,
    /// Transient failures retried.
    retries: u64,
    /// `hit` or `shared` when the response cache answered.
    cache: Option<&'static str>,
}

impl CallEnd {
    /// A call that failed or was refused before a reply.
    fn failed(kind: CallKind) -> CallEnd {
        CallEnd { kind, finish_reason: Some("error".into()), usage: None, retries: 0, cache: None }
    }
}

/// Why a provider call did not produce a reply.
#[derive(Debug)]
enum CallError {
    /// The run was cancelled.
    Cancelled,
    /// The call failed for good; the message says why.
    Failed(String),
    /// A hook blocked it; the reason.
    Blocked(String),
}

/// What `after_llm_call` hooks decided about a reply's tool calls.
#[derive(Debug, Default)]
pub(super) struct CallVerdict {
    /// Ids of the calls that may run; `None`: all.
    kept: Option<std::collections::BTreeSet<String>>,
    /// Why the others were dropped.
    drop_reason: String,
    /// Ids of the calls that run only once a user approves.
    ask: std::collections::BTreeSet<String>,
    /// Why the hooks asked.
    ask_reason: String,
}

impl AgentRun<'_> {
    /// Consult the `after_llm_call` hooks about `reply`: which calls run,
    /// which wait for a user, or the end of the run (a block, or cancel).
    async fn after_llm_call(
        &mut self,
        turn: u64,
        reply: &crate::provider::Reply,
    ) -> Result<Result<CallVerdict, LoopEnd>, StoreError> {
        if !self.pipeline.hooks.any(HookPoint::AfterLlmCall) {
            return Ok(Ok(CallVerdict::default()));
        }
        let calls: Vec<Value> =
            reply.tool_calls.iter().map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments})).collect();
        let payload = json!({
            "session_id": self.session_id,
            "run_id": self.run_id,
            "turn": turn,
            "assistant": {"content": reply.content, "tool_calls": calls},
        });
        let point = HookPoint::AfterLlmCall;
        let decision =
            match consult(self.pipeline, self.events, self.run_id, self.record, point, &payload, self.cancel).await {
                Ok(d) => d,
                Err(hooks::Cancelled) => return Ok(Err(LoopEnd::Cancelled)),
            };
        if let Some((_, reason)) = decision.blocked {
            // Keep the conversation well-formed: every call gets a result, none runs.
            if !reply.tool_calls.is_empty() {
                self.conversation.push(reply.to_message())?;
                for call in &reply.tool_calls {
                    let content = format!("error: blocked by policy: {reason}");
                    self.conversation.push(json!({"role": "tool", "tool_call_id": call.id, "content": content}))?;
                }
            }
            return Ok(Err(LoopEnd::Blocked(reason)));
        }
        let ids: Vec<String> = reply.tool_calls.iter().map(|c| c.id.clone()).collect();
        let reason = decision.reasons.first().map(|(_, r)| r.clone());
        Ok(Ok(CallVerdict {
            kept: Some(hooks::kept(&decision, &ids)),
            drop_reason: reason.clone().unwrap_or_else(|| "dropped by an after_llm_call hook".into()),
            ask: decision.ask,
            ask_reason: reason.unwrap_or_else(|| "an after_llm_call hook asks for your approval".into()),
        }))
    }

    /// Run turns until an answer, exhaustion, cancellation or failure.
    pub async fn run(&mut self) -> LoopEnd {
        let end = self.turns().await.and_then(|end| self.conversation.settle().map(|()| end));
        end.unwrap_or_else(LoopEnd::from)
    }

    async fn turns(&mut self) -> Result<LoopEnd, StoreError> {
        // Swival's command provider is not told about tools.
        let tools = if self.provider.settings.kind == ProviderKind::Command {
            Vec::new()
        } else {
            let mut t = self.tools.schemas();
            t.extend(crate::sandbox::tool_schemas(&self.commands.policy));
            t.extend(self.tools.mcp.schemas().iter().cloned());
            t
        };
        let offered = Offered::new(&tools);
        let mut guards = guard::Guards::new(self.storm_breaker);
        for local_turn in 1..=self.max_turns {
            let turn = self.turn_offset + local_turn;
            if self.cancel.is_cancelled() {
                return Ok(LoopEnd::Cancelled);
            }
            self.events.emit(Some(self.run_id), EventKind::TurnStarted { turn, max_turns: self.max_turns });
            let reply = match self.call_llm(turn, offered).await {
                Ok(r) => r,
                Err(CallError::Cancelled) => return Ok(LoopEnd::Cancelled),
                Err(CallError::Failed(e)) => return Ok(LoopEnd::Failed(e)),
                Err(CallError::Blocked(reason)) => return Ok(LoopEnd::Blocked(reason)),
            };
            // after_llm_call: the hooks see the reply and every proposed
            // call before anything runs.
            let verdict = match self.after_llm_call(turn, &reply).await? {
                Ok(v) => v,
                Err(end) => return Ok(end),
            };
            let text = reply.content.as_deref().unwrap_or("").trim().to_owned();
            if reply.tool_calls.is_empty() {
                let truncated = reply.finish_reason.as_deref() == Some("length");
                if text.is_empty() {
                    self.conversation.push(json!({"role": "assistant", "content": "(empty response)"}))?;
                    self.conversation
                        .push(json!({"role": "user", "content": EMPTY_NUDGE, "_swival_synthetic": true}))?;
                    continue;
                }
                self.conversation.push(reply.to_message())?;
                if truncated {
                    self.conversation
                        .push(json!({"role": "user", "content": TRUNCATED_NUDGE, "_swival_synthetic": true}))?;
                    continue;
                }
                return Ok(LoopEnd::Answer(reply.content.unwrap_or_default()));
            }
            self.conversation.push(reply.to_message())?;
            // Boxed: this future sits inside a run's, whose size a debug
            // build's worker stack has to hold.
            Box::pin(self.run_tools(turn, &reply.tool_calls, &verdict, &tools, &mut guards)).await?;
            if let Some(why) = guards.stuck() {
                return self.last_word(turn, why).await;
            }
            if self.cancel.is_cancelled() {
                return Ok(LoopEnd::Cancelled);
            }
        }
        Ok(LoopEnd::Exhausted(self.conversation.last_assistant_text()))
    }

    /// A stuck run gets one call without tools: an answer ends the run as
    /// any answer does (the model says what it did and what is left);
    /// anything else fails the run with `why`.
    async fn last_word(&mut self, turn: u64, why: String) -> Result<LoopEnd, StoreError> {
        self.conversation.push(json!({"role": "user", "content": guard::STUCK_NUDGE, "_swival_synthetic": true}))?;
        self.record.event(json!({"type": "intervention", "turn": turn, "kind": "stuck", "tool": ""}));
        let kind = EventKind::Intervention {
            turn,
            kind: swival_protocol::InterventionKind::Stuck,
            tool: String::new(),
            message: guard::STUCK_NUDGE.into(),
        };
        self.events.emit(Some(self.run_id), kind);
        let reply = match Box::pin(self.call_llm(turn, Offered::NONE)).await {
            Ok(r) => r,
            Err(CallError::Cancelled) => return Ok(LoopEnd::Cancelled),
            Err(CallError::Failed(e)) => return Ok(LoopEnd::Failed(e)),
            Err(CallError::Blocked(reason)) => return Ok(LoopEnd::Blocked(reason)),
        };
        match reply.content.as_deref().map(str::trim).filter(|t| !t.is_empty() && reply.tool_calls.is_empty()) {
            Some(text) => {
                let text = text.to_owned();
                self.conversation.push(json!({"role": "assistant", "content": text}))?;
                Ok(LoopEnd::Answer(text))
            }
            // Tool calls with no tools offered are not stored: no call is
            // left without a result.
            None => Ok(LoopEnd::Failed(why)),
        }
    }

    /// One logical provider call: the filter chain, then the provider
    /// under the daemon-wide slot limit.
    async fn call_llm(&mut self, turn: u64, tools: Offered<'_>) -> Result<crate::provider::Reply, CallError> {
        if let Some(window) = self.context_window {
            if estimate_from(self.conversation.chars(), tools.chars) * 10 > window * 9 {
                self.compact(turn, tools.schemas, window).await?;
            }
        }
        match self.call_model(turn, CallKind::Agent, None, tools).await {
            Err(CallError::Failed(e)) if is_context_overflow(&e) => {
                // The provider says the prompt is too long: compact and try once more.
                let window =
                    self.context_window.unwrap_or_else(|| estimate_from(self.conversation.chars(), tools.chars));
                self.compact(turn, tools.schemas, window * 3 / 4).await?;
                self.call_model(turn, CallKind::Agent, None, tools).await
            }
            other => other,
        }
    }

    /// One provider call through the whole pipeline: `before_llm_call`
    /// hooks, the filter chain, the response cache (agent calls), the
    /// provider under the daemon-wide slot limit. `own` replaces the
    /// conversation as the messages (summary calls).
    async fn call_model(
        &mut self,
        turn: u64,
        kind: CallKind,
        own: Option<Vec<Value>>,
        tools: Offered<'_>,
    ) -> Result<crate::provider::Reply, CallError> {
        let started = Instant::now();
        // Copied only when a hook narrows them.
        let mut offered = std::borrow::Cow::Borrowed(tools.schemas);
        let mut replaced: Option<Vec<Value>> = None;
        if self.pipeline.hooks.any(HookPoint::BeforeLlmCall) {
            let payload = json!({
                "session_id": self.session_id,
                "run_id": self.run_id,
                "turn": turn,
                "call_kind": kind.as_str(),
                "provider": self.provider.settings.kind.as_str(),
                "model": self.model,
                "messages": own.as_deref().unwrap_or(self.conversation.messages()),
                "tools": tools.schemas,
            });
            let decision = consult(
                self.pipeline,
                self.events,
                self.run_id,
                self.record,
                HookPoint::BeforeLlmCall,
                &payload,
                self.cancel,
            )
            .await
            .map_err(|_| CallError::Cancelled)?;
            if let Some((_, reason)) = decision.blocked {
                let estimate = self.estimate(own.as_deref(), tools);
                self.finish_call(turn, started, estimate, CallEnd::failed(kind));
                return Err(CallError::Blocked(reason));
            }
            if let Some(keep) = &decision.tools {
                offered
                    .to_mut()
                    .retain(|t| t.pointer("/function/name").and_then(Value::as_str).is_some_and(|n| keep.contains(n)));
            }
            replaced = decision.messages;
        }
        let tools = match &offered {
            std::borrow::Cow::Borrowed(_) => tools,
            std::borrow::Cow::Owned(narrowed) => Offered::new(narrowed),
        };
        let estimate = self.estimate(replaced.as_deref().or(own.as_deref()), tools);
        let (messages, tools) =
            (replaced.as_deref().or(own.as_deref()).unwrap_or(self.conversation.messages()), tools.schemas);
        let filtered;
        let outbound: &[Value] = if self.pipeline.filters.is_empty() {
            messages
        } else {
            let input = FilterInput {
                provider: self.provider.settings.kind.as_str(),
                model: self.model,
                call_kind: kind,
                messages,
                tools,
            };
            let (events, run_id) = (self.events, self.run_id);
            let on_stderr = |stage: &filter::Stage, line: &str| {
                tracing::info!(target: "swivald::filter", "{}: {line}", stage.display);
                let kind = EventKind::Stderr { source: format!("filter {}", stage.display), text: line.to_owned() };
                events.emit(Some(run_id), kind);
            };
            match filter::apply(&self.pipeline.filters, &self.pipeline.runner, input, self.cancel, &on_stderr).await {
                Ok(m) => {
                    filtered = m;
                    &filtered
                }
                Err(FilterError::Cancelled) => return Err(CallError::Cancelled),
                Err(FilterError::Blocked(detail)) => {
                    let message = format!("LLM filter blocked request: {detail}");
                    self.finish_call(turn, started, estimate, CallEnd::failed(kind));
                    return Err(CallError::Failed(message));
                }
            }
        };
        // Secret encryption comes after hooks and filters (they see
        // plaintext) and before the cache key and the provider.
        let encrypted;
        let outbound: &[Value] = match self.shield.as_deref_mut() {
            Some(shield) => {
                encrypted = shield.encrypt_messages(outbound);
                &encrypted
            }
            None => outbound,
        };
        let configured = self.provider.settings.max_output_tokens;
        let max_tokens = match self.context_window {
            Some(w) => configured.min(w.saturating_sub(estimate)).max(16),
            None => configured,
        };
        let req = ChatRequest { messages: outbound, tools, max_tokens };
        // With before_response_emit hooks, text reaches clients only after them.
        // Streamed text would show ciphertexts (and split them), and must
        // not reach clients before before_response_emit hooks have run.
        let stream_text =
            kind == CallKind::Agent && self.shield.is_none() && !self.pipeline.hooks.any(HookPoint::BeforeResponseEmit);
        let observer =
            Observer { events: self.events, run_id: self.run_id, turn, stream_text, pending: Default::default() };
        let call = || async {
            let _permit = tokio::select! {
                p = self.llm_slots.acquire() => p.map_err(|_| ProviderError::Cancelled)?,
                _ = self.cancel.cancelled() => return Err(ProviderError::Cancelled),
            };
            self.provider.chat(self.model, &req, &observer, self.cancel).await
        };
        let cache = if kind == CallKind::Agent { self.cache } else { None };
        let (result, served) = match cache {
            None => (call().await, None),
            Some(cache) => {
                let settings = &self.provider.settings;
                let body = crate::provider::request_body(settings, self.model, &req).to_value();
                let key = crate::cache::key(crate::cache::KeyParts {
                    body: &body,
                    provider: settings.kind.as_str(),
                    base_url: &settings.base_url,
                    policy_digest: self.policy_digest,
                });
                let cached = cache
                    .get_or_call(&key, || async {
                        call().await.map(|(reply, retries)| json!({"reply": reply.to_json(), "retries": retries}))
                    })
                    .await;
                match cached {
                    Ok((v, how)) => {
                        self.record.cache_keys.push(key.clone());
                        let reply = crate::provider::Reply::from_json(&v["reply"]);
                        let retries = if how == Served::Miss { v["retries"].as_u64().unwrap_or(0) as u32 } else { 0 };
                        let label = match how {
                            Served::Hit => Some("hit"),
                            Served::Shared => Some("shared"),
                            Served::Miss => None,
                        };
                        (Ok((reply, retries)), label)
                    }
                    Err(e) => (Err(e), None),
                }
            }
        };
        // The end of the reply: text still waiting goes out now.
        observer.flush();
        // Secrets in the reply go back to their real values before anything
        // (hooks, tools, the conversation) sees it.
        let result = result.map(|(mut reply, retries)| {
            if let Some(shield) = self.shield.as_deref() {
                reply.content = reply.content.map(|c| shield.decrypt_text(&c));
                for call in &mut reply.tool_calls {
                    call.arguments = shield.decrypt_text(&call.arguments);
                }
            }
            (reply, retries)
        });
        match result {
            Ok((reply, retries)) => {
                self.finish_call(
                    turn,
                    started,
                    estimate,
                    CallEnd {
                        kind,
                        finish_reason: reply.finish_reason.clone(),
                        usage: reply.usage.clone(),
                        retries: retries.into(),
                        cache: served,
                    },
                );
                Ok(reply)
            }
            Err(ProviderError::Cancelled) => Err(CallError::Cancelled),
            Err(e) => {
                self.finish_call(turn, started, estimate, CallEnd::failed(kind));
                Err(CallError::Failed(e.run_error(self.model)))
            }
        }
    }

    /// The token estimate of a call with `own` messages (`None`: the
    /// conversation, whose length is kept counted) and `tools`.
    fn estimate(&self, own: Option<&[Value]>, tools: Offered<'_>) -> u64 {
        let chars = match own {
            Some(messages) => messages.iter().map(json_len).sum(),
            None => self.conversation.chars(),
        };
        estimate_from(chars, tools.chars)
    }

    /// Record a finished (or failed) call in the report and the events.
    fn finish_call(&mut self, turn: u64, started: Instant, estimate: u64, end: CallEnd) {
        let CallEnd { kind, finish_reason, usage, retries, cache } = end;
        let duration_s = started.elapsed().as_secs_f64();
        self.record.llm_call(&LlmCallRecord {
            turn,
            duration_s,
            prompt_tokens_est: estimate,
            finish_reason: finish_reason.clone().unwrap_or_default(),
            retries,
            cache,
        });
        let kind = EventKind::LlmCall {
            turn,
            call_kind: kind,
            duration_s,
            finish_reason,
            usage,
            prompt_tokens_est: estimate,
            retries,
            cache: cache.map(|c| if c == "hit" { CacheStatus::Hit } else { CacheStatus::Shared }),
        };
        self.events.emit(Some(self.run_id), kind);
    }
}
