//! One provider call, the one path every call takes (agent turns and
//! summaries alike): `before_llm_call` hooks → filter chain → secret
//! encryption → response cache → provider under the daemon-wide slot
//! limit → decryption, then the call's `llm_call` event (which the report
//! folds in).

use super::estimate::{estimate_from, json_len, Offered};
use super::observer::Observer;
use super::turns::CallError;
use super::{consult, Run};
use crate::cache::Served;
use crate::config::HookPoint;
use crate::pipeline::filter::{self, CallKind, FilterError, FilterInput};
use crate::provider::{ChatRequest, Outbound, ProviderError, Reply};
use crate::tools::repair;
use serde_json::{json, Value};
use std::time::Instant;
use swival_protocol::FailureKind;
use swival_protocol::{BeforeLlmCall, CacheStatus, EventKind, HookCall};

/// How a provider call ended, for its `llm_call` event.
pub(super) struct CallEnd {
    /// Agent turn or summary.
    kind: CallKind,
    /// The provider's finish reason, or `error`.
    finish_reason: Option<String>,
    /// The provider's usage object.
    usage: Option<Value>,
    /// The prompt tokens the server reported.
    tokens: crate::provider::PromptTokens,
    /// Transient failures retried.
    retries: u64,
    /// Set when the response cache answered.
    cache: Option<CacheStatus>,
}

impl CallEnd {
    /// A call that failed or was refused before a reply.
    pub(super) fn failed(kind: CallKind) -> CallEnd {
        CallEnd {
            kind,
            finish_reason: Some("error".into()),
            usage: None,
            tokens: Default::default(),
            retries: 0,
            cache: None,
        }
    }
}

/// What `before_llm_call` hooks changed about a call.
#[derive(Debug, Default)]
struct Hooked {
    /// The tools offered, narrowed; `None`: as offered.
    tools: Option<Vec<Value>>,
    /// Messages that replace the call's; `None`: unchanged.
    messages: Option<Vec<Value>>,
}

/// The provider's answer to one request.
struct Answered {
    /// The reply and the transient failures retried, or why there is none.
    result: Result<(Reply, u32), ProviderError>,
    /// Set when the response cache answered.
    served: Option<CacheStatus>,
    /// The cache key, when the response cache was asked.
    cache_key: Option<String>,
}

/// A call's own limits over the session's settings (Swival's continue
/// summary: 1,024 output tokens at temperature 0).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Limits {
    /// At most this many output tokens (still clamped to the window).
    pub(super) max_tokens: Option<u64>,
    /// This temperature instead of the session's.
    pub(super) temperature: Option<f64>,
}

impl Run<'_> {
    /// One provider call through the whole pipeline: `before_llm_call`
    /// hooks, the filter chain, the response cache (agent calls), the
    /// provider under the daemon-wide slot limit. `own` replaces the
    /// conversation as the messages (summary calls).
    pub(super) async fn call_model(
        &mut self,
        turn: u64,
        kind: CallKind,
        own: Option<Vec<Value>>,
        tools: Offered<'_>,
    ) -> Result<Reply, CallError> {
        self.call_model_with(turn, kind, own, tools, Limits::default()).await
    }

    /// [`Run::call_model`] with the call's own `limits`.
    pub(super) async fn call_model_with(
        &mut self,
        turn: u64,
        kind: CallKind,
        own: Option<Vec<Value>>,
        tools: Offered<'_>,
        limits: Limits,
    ) -> Result<Reply, CallError> {
        let started = Instant::now();
        let hooked = self.before_llm_call(turn, kind, own.as_deref(), tools, started).await?;
        let tools = hooked.tools.as_deref().map_or(tools, Offered::new);
        let chosen = hooked.messages.as_deref().or(own.as_deref());
        let estimate = self.estimate(chosen, tools);
        // The conversation goes out as serialised when each message was
        // added, unless a hook, a filter or the shield changes it: those
        // work on its JSON.
        let as_stored = chosen.is_none() && self.ctx.pipeline.filters.is_empty() && self.shield.is_none();
        let conversation_json;
        let messages: &[Value] = match chosen {
            Some(m) => m,
            None if !as_stored => {
                conversation_json = self.conversation.values();
                &conversation_json
            }
            None => &[],
        };
        let filtered = match self.filtered(kind, messages, tools.schemas).await {
            Ok(f) => f,
            Err(FilterError::Cancelled) => return Err(CallError::Cancelled),
            Err(FilterError::Blocked(detail)) => {
                let message = format!("LLM filter blocked request: {detail}");
                self.finish_call(turn, started, estimate, CallEnd::failed(kind));
                return Err(CallError::Failed(FailureKind::FilterBlocked, message));
            }
        };
        let outbound = filtered.as_deref().unwrap_or(messages);
        // Secret encryption comes after hooks and filters (they see
        // plaintext) and before the cache key and the provider.
        let encrypted;
        let outbound: &[Value] = match self.shield.as_mut() {
            Some(shield) => {
                encrypted = shield.encrypt_messages(outbound);
                &encrypted
            }
            None => outbound,
        };
        let configured = limits.max_tokens.unwrap_or(self.llm.provider.settings.max_output_tokens);
        let max_tokens = match self.llm.context_window {
            Some(w) => configured.min(w.saturating_sub(estimate)).max(16),
            None => configured,
        };
        let messages = if as_stored { Outbound::Stored(self.conversation.wire()) } else { Outbound::Values(outbound) };
        let temperature = limits.temperature;
        let req = ChatRequest { messages, tools: tools.schemas, tools_json: tools.json, max_tokens, temperature };
        let answered = self.chat(turn, kind, &req).await;
        self.record.cache_keys.extend(answered.cache_key);
        self.settle(turn, kind, started, estimate, answered.result, answered.served)
    }

    /// The `before_llm_call` hooks of a call: the tools they narrowed the
    /// offer to and the messages they replaced, or the end of the call
    /// when one blocked it (recorded) or the run was cancelled.
    async fn before_llm_call(
        &mut self,
        turn: u64,
        kind: CallKind,
        own: Option<&[Value]>,
        tools: Offered<'_>,
        started: Instant,
    ) -> Result<Hooked, CallError> {
        if !self.ctx.pipeline.hooks.any(HookPoint::BeforeLlmCall) {
            return Ok(Hooked::default());
        }
        let call = HookCall::BeforeLlmCall(BeforeLlmCall {
            session_id: self.ctx.session_id.clone(),
            run_id: self.ctx.run_id.clone(),
            turn,
            call_kind: kind,
            provider: self.llm.provider.settings.kind.wire_name().to_owned(),
            model: self.llm.model.as_str().to_owned(),
            messages: own.map_or_else(|| self.conversation.values(), <[Value]>::to_vec),
            tools: tools.schemas.to_vec(),
        });
        let decision =
            consult(self.ctx.pipeline, self.ctx.events, self.ctx.run_id, &mut self.record, &call, self.ctx.cancel)
                .await
                .map_err(|_| CallError::Cancelled)?;
        if let Some((_, reason)) = decision.blocked {
            let estimate = self.estimate(own, tools);
            self.finish_call(turn, started, estimate, CallEnd::failed(kind));
            return Err(CallError::Blocked(reason));
        }
        // Copied only when a hook narrows them.
        let tools = decision.tools.map(|keep| {
            let mut narrowed = tools.schemas.to_vec();
            narrowed.retain(|t| repair::name_of(t).is_some_and(|n| keep.contains(n)));
            narrowed
        });
        Ok(Hooked { tools, messages: decision.messages })
    }

    /// The filter chain's messages for the call; `None` when the session
    /// has no filters (the messages go as they are).
    async fn filtered(
        &self,
        kind: CallKind,
        messages: &[Value],
        tools: &[Value],
    ) -> Result<Option<Vec<Value>>, FilterError> {
        if self.ctx.pipeline.filters.is_empty() {
            return Ok(None);
        }
        let input = FilterInput {
            provider: self.llm.provider.settings.kind.wire_name(),
            model: self.llm.model.as_str(),
            call_kind: kind,
            messages,
            tools,
        };
        let (events, run_id) = (self.ctx.events, self.ctx.run_id);
        let on_stderr = |stage: &filter::Stage, line: &str| {
            tracing::info!(target: "swivald::filter", "{}: {line}", stage.display);
            let kind = EventKind::Stderr {
                source: swival_protocol::StderrSource::Filter,
                command: stage.display.clone(),
                text: line.to_owned(),
            };
            events.emit(Some(run_id), kind);
        };
        filter::apply(&self.ctx.pipeline.filters, &self.ctx.pipeline.runner, input, self.ctx.cancel, &on_stderr)
            .await
            .map(Some)
    }

    /// Send `req` to the provider under the daemon-wide slot limit, through
    /// the response cache for agent calls, streaming progress as events.
    async fn chat(&self, turn: u64, kind: CallKind, req: &ChatRequest<'_>) -> Answered {
        // With before_response_emit hooks, text reaches clients only after them.
        // Streamed text would show ciphertexts (and split them), and must
        // not reach clients before before_response_emit hooks have run.
        let stream_text = kind == CallKind::Agent
            && self.shield.is_none()
            && !self.ctx.pipeline.hooks.any(HookPoint::BeforeResponseEmit);
        let observer = Observer {
            events: self.ctx.events,
            run_id: self.ctx.run_id,
            turn,
            stream_text,
            pending: Default::default(),
        };
        let call = || async {
            let _permit = tokio::select! {
                p = self.ctx.llm_slots.acquire() => p.map_err(|_| ProviderError::Cancelled)?,
                _ = self.ctx.cancel.cancelled() => return Err(ProviderError::Cancelled),
            };
            self.llm.provider.chat(self.llm.model.as_str(), req, &observer, self.ctx.cancel).await
        };
        let cache = if kind == CallKind::Agent { self.llm.cache.as_deref() } else { None };
        let answered = match cache {
            None => Answered { result: call().await, served: None, cache_key: None },
            Some(cache) => {
                let settings = &self.llm.provider.settings;
                let body = crate::provider::request_body(settings, self.llm.model.as_str(), req).to_value();
                let key = crate::cache::key(crate::cache::KeyParts {
                    body: &body,
                    provider: settings.kind.as_str(),
                    base_url: &settings.base_url,
                    policy_digest: &self.llm.policy_digest,
                });
                let cached = cache
                    .get_or_call(&key, || async {
                        call().await.map(|(reply, retries)| json!({"reply": reply.to_json(), "retries": retries}))
                    })
                    .await;
                match cached {
                    Ok((v, how)) => {
                        let reply = Reply::from_json(&v["reply"]);
                        let retries = if how == Served::Miss { v["retries"].as_u64().unwrap_or(0) as u32 } else { 0 };
                        let served = match how {
                            Served::Hit => Some(CacheStatus::Hit),
                            Served::Shared => Some(CacheStatus::Shared),
                            Served::Miss => None,
                        };
                        Answered { result: Ok((reply, retries)), served, cache_key: Some(key) }
                    }
                    Err(e) => Answered { result: Err(e), served: None, cache_key: None },
                }
            }
        };
        // The end of the reply: text still waiting goes out now.
        observer.flush();
        answered
    }

    /// The end of a call: secrets in the reply go back to their real
    /// values before anything (hooks, tools, the conversation) sees it,
    /// and the call is recorded.
    fn settle(
        &mut self,
        turn: u64,
        kind: CallKind,
        started: Instant,
        estimate: u64,
        result: Result<(Reply, u32), ProviderError>,
        served: Option<CacheStatus>,
    ) -> Result<Reply, CallError> {
        match result {
            Ok((mut reply, retries)) => {
                if let Some(shield) = self.shield.as_ref() {
                    reply.content = reply.content.map(|c| shield.decrypt_text(&c));
                    for call in &mut reply.tool_calls {
                        call.arguments = shield.decrypt_text(&call.arguments);
                    }
                }
                let end = CallEnd {
                    kind,
                    finish_reason: reply.finish_reason.as_ref().map(|r| r.as_str().to_owned()),
                    usage: reply.usage.clone(),
                    tokens: crate::provider::PromptTokens::read(reply.usage.as_ref(), reply.timings.as_ref()),
                    retries: retries.into(),
                    cache: served,
                };
                self.finish_call(turn, started, estimate, end);
                Ok(reply)
            }
            Err(ProviderError::Cancelled) => Err(CallError::Cancelled),
            Err(e) => {
                self.finish_call(turn, started, estimate, CallEnd::failed(kind));
                let message = e.run_error(self.llm.model.as_str());
                Err(if e.is_context_overflow() {
                    CallError::Overflow(message)
                } else if e.is_unreadable_call() {
                    CallError::Unreadable(message)
                } else {
                    CallError::Failed(FailureKind::Provider, message)
                })
            }
        }
    }

    /// The token estimate of a call with `own` messages (`None`: the
    /// conversation, whose length is kept counted) and `tools`.
    pub(super) fn estimate(&self, own: Option<&[Value]>, tools: Offered<'_>) -> u64 {
        let chars = match own {
            Some(messages) => messages.iter().map(json_len).sum(),
            None => self.conversation.chars(),
        };
        estimate_from(chars, tools.chars)
    }

    /// Emit a finished (or failed) call's `llm_call` event.
    pub(super) fn finish_call(&mut self, turn: u64, started: Instant, estimate: u64, end: CallEnd) {
        let CallEnd { kind, finish_reason, usage, tokens, retries, cache } = end;
        let duration_s = started.elapsed().as_secs_f64();
        self.emit(EventKind::LlmCall {
            turn,
            call_kind: kind,
            duration_s,
            finish_reason,
            usage,
            prompt_tokens_est: estimate,
            prompt_tokens: tokens.total,
            cached_tokens: tokens.cached,
            retries,
            cache,
            context_window: self.llm.context_window,
        });
    }
}
