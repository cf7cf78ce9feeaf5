//! The LLM provider client: OpenAI-compatible chat completions (SSE
//! streaming or one JSON reply), Swival's presets, retries with backoff,
//! model and context-window discovery, and Swival's `command` provider.
//!
//! `request_body` is the one place a provider request is built, so the
//! policy pipeline and the cache see exactly what is sent.

mod command;
mod openai;
mod repeat;
mod request;
mod retry;
mod sse;

pub use repeat::Runaway;
pub use request::{request_body, ChatRequest, Outbound, RequestBody};
pub use retry::{backoff_delay, is_retryable_status};
// Config names the provider kind; the client gives each its defaults.
pub use crate::config::ProviderKind;

use serde_json::{json, Map, Value};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Everything needed to call one session's provider.
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    /// Which provider.
    pub kind: ProviderKind,
    /// Base URL ending in `/vN` (not used by `command`).
    pub base_url: String,
    /// Bearer token, if any. Never logged.
    pub api_key: Option<String>,
    /// Model id; discovered from `/v1/models` when unset.
    pub model: Option<String>,
    /// The model when none is set and the server lists none (Apple's).
    pub default_model: Option<&'static str>,
    /// Ask a streaming server for the usage (`stream_options`), when a
    /// run's cost is wanted (`model_prices`).
    pub stream_usage: bool,
    /// `User-Agent` header.
    pub user_agent: String,
    /// Per-attempt request timeout.
    pub timeout: Duration,
    /// Total attempts (1 = no retry).
    pub attempts: u32,
    /// Base of the exponential backoff (Swival: 2 s).
    pub backoff_base: Duration,
    /// `max_tokens` before clamping to the context window.
    pub max_output_tokens: u64,
    /// Sampling temperature, sent only when set.
    pub temperature: Option<f64>,
    /// Nucleus sampling, sent only when set.
    pub top_p: Option<f64>,
    /// Seed, sent only when set.
    pub seed: Option<i64>,
    /// Merged into the top level of the request body.
    pub extra_body: Option<Map<String, Value>>,
    /// `reasoning_effort`, sent when set and not `default`.
    pub reasoning_effort: Option<String>,
    /// Use SSE streaming.
    pub stream: bool,
    /// Cut a streamed reply that keeps repeating itself (the `runaway`
    /// nudge; `repeat.rs`).
    pub cut_runaway: bool,
    /// argv of the `command` provider.
    pub command: Option<Vec<String>>,
    /// The files of the `command` provider, pinned when the session started.
    pub command_pins: Vec<crate::procs::Pinned>,
    /// The daemon's process runner, so the `command` provider counts under
    /// `max_children` (`None` in unit tests: a plain spawn).
    pub runner: Option<std::sync::Arc<crate::procs::ProcessRunner>>,
    /// Working directory of the `command` provider.
    pub cwd: std::path::PathBuf,
    /// The environment the `command` provider runs in (the caller's).
    pub env: crate::procs::CallerEnv,
}

pub use crate::message::ToolCall;

/// The assistant's reply to one call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    /// Text content, if any.
    pub content: Option<String>,
    /// Proposed tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Why it ended, as the provider said.
    pub finish_reason: Option<FinishReason>,
    /// The provider's usage object, as sent.
    pub usage: Option<Value>,
    /// llama.cpp's `timings` object (`prompt_n`, `cache_n`…), as sent.
    pub timings: Option<Value>,
    /// Set when the stream was cut as the reply kept repeating itself
    /// (`repeat.rs`); `finish_reason` is then `length`.
    pub runaway: Option<Runaway>,
    /// The model's reasoning (`reasoning_content`), when the server sends it
    /// apart from the content.
    pub reasoning: Option<String>,
}

/// Why a reply ended, as the provider said (`finish_reason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// The model finished its answer (`stop`).
    Stop,
    /// The model called tools (`tool_calls`).
    ToolCalls,
    /// The output limit cut it off (`length`), or the daemon did (a reply
    /// repeating itself).
    Length,
    /// Another reason, as sent (`content_filter`…).
    Other(String),
}

impl FinishReason {
    /// The reason a provider wrote.
    pub fn parse(reason: &str) -> FinishReason {
        match reason {
            "stop" => FinishReason::Stop,
            "tool_calls" => FinishReason::ToolCalls,
            "length" => FinishReason::Length,
            other => FinishReason::Other(other.to_owned()),
        }
    }

    /// As a provider writes it.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::Other(reason) => reason,
        }
    }
}

/// The prompt tokens a server reported for one call, and how many of them
/// it served from its cache (`None`: it did not say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PromptTokens {
    /// The prompt's tokens.
    pub total: Option<u64>,
    /// Of those, the ones the server did not process again.
    pub cached: Option<u64>,
}

impl PromptTokens {
    /// From an OpenAI-style `usage` (`prompt_tokens`,
    /// `prompt_tokens_details.cached_tokens`) and llama.cpp's `timings`
    /// (`prompt_n` processed, `cache_n` reused).
    pub fn read(usage: Option<&Value>, timings: Option<&Value>) -> PromptTokens {
        let n = |v: Option<&Value>, p: &str| v.and_then(|v| v.pointer(p)).and_then(Value::as_u64);
        let (cache_n, prompt_n) = (n(timings, "/cache_n"), n(timings, "/prompt_n"));
        let cached = n(usage, "/prompt_tokens_details/cached_tokens").or(cache_n);
        let processed = prompt_n.map(|p| p + cache_n.unwrap_or(0));
        PromptTokens { total: n(usage, "/prompt_tokens").or(processed), cached }
    }
}

impl Reply {
    /// The reply as JSON (for the response cache).
    pub fn to_json(&self) -> Value {
        json!({
            "content": self.content,
            "tool_calls": self.tool_calls,
            "finish_reason": self.finish_reason.as_ref().map(FinishReason::as_str),
            "usage": self.usage,
            "timings": self.timings,
            "runaway": self.runaway,
            "reasoning": self.reasoning,
        })
    }

    /// A reply stored by [`Reply::to_json`].
    pub fn from_json(v: &Value) -> Reply {
        Reply {
            content: v["content"].as_str().map(str::to_owned),
            tool_calls: serde_json::from_value(v["tool_calls"].clone()).unwrap_or_default(),
            finish_reason: v["finish_reason"].as_str().map(FinishReason::parse),
            usage: v.get("usage").filter(|u| !u.is_null()).cloned(),
            timings: v.get("timings").filter(|u| !u.is_null()).cloned(),
            runaway: v.get("runaway").and_then(|r| serde_json::from_value(r.clone()).ok()),
            reasoning: v["reasoning"].as_str().map(str::to_owned),
        }
    }

    /// The assistant message to store in the conversation.
    pub fn to_message(&self) -> crate::message::Message {
        crate::message::Message::assistant_turn(self.content.clone(), self.tool_calls.clone())
    }
}

/// What the caller hears while a call is in progress.
pub trait CallObserver: Send + Sync {
    /// Streamed text.
    fn text_delta(&self, text: &str);
    /// A transient failure; the next attempt follows after `delay`.
    fn retry(&self, attempt: u32, delay: Duration, reason: &str);
}

/// Why a call failed for good.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// The provider answered with an error status.
    #[error("provider returned HTTP {status}: {message}")]
    Http { status: u16, message: String, retry_after: Option<Duration> },
    /// No usable answer: connection failure, timeout, dropped or malformed reply.
    #[error("provider request failed: {0}")]
    Transport(String),
    /// Nothing accepted the connection (refused, no route): the server is
    /// not running there.
    #[error("provider request failed: {0}")]
    Unreachable(String),
    /// The reply could not be understood.
    #[error("provider sent a malformed reply: {0}")]
    Malformed(String),
    /// The `command` provider failed.
    #[error("command provider failed: {0}")]
    Command(String),
    /// The reply's `choices` list was empty: Swival stops at once, no retry.
    #[error("LLM returned an empty choices list")]
    EmptyChoices,
    /// No model is configured and none could be discovered.
    #[error("{0}")]
    Config(String),
    /// The caller cancelled the call.
    #[error("cancelled")]
    Cancelled,
    /// Every attempt failed; the last error is kept.
    #[error("{last} (gave up after {attempts} attempts)")]
    Exhausted { attempts: u32, last: Box<ProviderError> },
    /// The provider said the prompt is too long for the model's context:
    /// the error it returned, in its words.
    #[error("{0}")]
    ContextOverflow(Box<ProviderError>),
}

impl ProviderError {
    /// The error as the provider's reply told it: one that says the prompt
    /// is too long for the model's context (Swival's patterns over an
    /// error status and its message, or an error in the stream) becomes
    /// [`ProviderError::ContextOverflow`], so the run compacts its
    /// conversation and tries again.
    pub fn told(self) -> ProviderError {
        static OVERFLOW: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(
                r"context.{0,10}(length|window|limit|size)|context.{0,20}exceeded|maximum.{0,10}(context|token)|token.{0,10}limit|exceed.{0,10}(context|token|max)|prompt is too long|http 413",
            )
            .expect("static regex")
        });
        let overflow = match &self {
            ProviderError::Http { .. }
            | ProviderError::Transport(_)
            | ProviderError::Malformed(_)
            | ProviderError::Command(_) => OVERFLOW.is_match(&self.to_string().to_lowercase()),
            _ => false,
        };
        if overflow {
            ProviderError::ContextOverflow(Box::new(self))
        } else {
            self
        }
    }

    /// Whether the provider said the prompt is too long for the context.
    pub fn is_context_overflow(&self) -> bool {
        match self {
            ProviderError::ContextOverflow(_) => true,
            ProviderError::Exhausted { last, .. } => last.is_context_overflow(),
            _ => false,
        }
    }

    /// Whether the server could not read the tool call the model wrote
    /// (llama.cpp: "Failed to parse tool call arguments as JSON"). The
    /// same request gets the same reply at temperature 0, so it is not
    /// tried again: the run tells the model and asks anew.
    pub fn is_unreadable_call(&self) -> bool {
        static UNREADABLE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(
                r"(parse|parsing|invalid|malformed).{0,24}tool.?call|tool.?call.{0,40}(parse|invalid|json)",
            )
            .expect("static regex")
        });
        match self {
            ProviderError::Http { message, .. } | ProviderError::Malformed(message) => {
                UNREADABLE.is_match(&message.to_lowercase())
            }
            ProviderError::Exhausted { last, .. } => last.is_unreadable_call(),
            _ => false,
        }
    }

    /// How long the provider asked to wait before another attempt.
    fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            ProviderError::ContextOverflow(told) => told.retry_after(),
            _ => None,
        }
    }

    /// What a run that failed on this error reports (Swival's `AgentError`
    /// text): a failed request is `LLM call failed (model: M): <detail>`;
    /// an empty `choices` list, the `command` provider and a missing model
    /// say so in their own words.
    pub fn run_error(&self, model: &str) -> String {
        match self {
            ProviderError::EmptyChoices | ProviderError::Command(_) | ProviderError::Config(_) => self.to_string(),
            ProviderError::ContextOverflow(told) => told.run_error(model),
            _ => format!("LLM call failed (model: {model}): {self}"),
        }
    }

    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Http { .. } | ProviderError::Malformed(_) if self.is_unreadable_call() => false,
            ProviderError::Http { status, .. } => is_retryable_status(*status),
            ProviderError::Transport(_) | ProviderError::Unreachable(_) | ProviderError::Malformed(_) => true,
            ProviderError::ContextOverflow(told) => told.is_retryable(),
            _ => false,
        }
    }
}

/// The daemon-wide HTTP client plus one session's settings.
#[derive(Debug, Clone)]
pub struct Provider {
    /// Shared connection pool.
    http: reqwest::Client,
    /// This session's settings.
    pub settings: ProviderSettings,
}

/// What discovery found out about the provider.
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    /// The model id to use.
    pub model: String,
    /// The context window, when known.
    pub context_window: Option<u64>,
}

impl Provider {
    /// A provider using the daemon's shared HTTP client.
    pub fn new(http: reqwest::Client, settings: ProviderSettings) -> Provider {
        Provider { http, settings }
    }

    /// A shared HTTP client for every session (rustls, no proxy lookups per call).
    pub fn http_client() -> reqwest::Client {
        crate::tls::client_builder()
            .pool_idle_timeout(Duration::from_secs(90))
            .build()
            .expect("a preconfigured TLS backend builds")
    }

    /// Model and context window: from settings, else from `/v1/models`.
    pub async fn discover(&self, configured_window: Option<u64>) -> Result<Discovered, ProviderError> {
        if self.settings.kind == ProviderKind::Command {
            return Ok(Discovered { model: "command".into(), context_window: configured_window });
        }
        if let (Some(model), Some(window)) = (&self.settings.model, configured_window) {
            return Ok(Discovered { model: model.clone(), context_window: Some(window) });
        }
        let models = openai::list_models(&self.http, &self.settings).await;
        let model = match (&self.settings.model, &models) {
            (Some(m), _) => m.clone(),
            (None, Ok(list)) if !list.is_empty() => list[0].id.clone(),
            (None, _) if self.settings.default_model.is_some() => self.settings.default_model.unwrap_or_default().to_owned(),
            (None, Ok(_)) => {
                return Err(ProviderError::Config(format!(
                    "no model configured and {} lists none; set `model` in swival.toml or pass --model",
                    self.settings.base_url
                )))
            }
            (None, Err(e @ (ProviderError::Transport(_) | ProviderError::Unreachable(_)))) if self.settings.kind.is_local() => {
                return Err(ProviderError::Config(no_server(self.settings.kind, &self.settings.base_url, e)))
            }
            (None, Err(e)) => {
                return Err(ProviderError::Config(format!(
                    "no model configured and discovery at {}/models failed ({e}); set `model` in swival.toml or pass --model",
                    self.settings.base_url
                )))
            }
        };
        let window = configured_window.or_else(|| {
            let list = models.as_ref().ok()?;
            list.iter().find(|m| m.id == model).or(if list.len() == 1 { list.first() } else { None })?.context_window
        });
        let window = window.or_else(|| self.settings.kind.default_context_window(&model));
        Ok(Discovered { model, context_window: window })
    }

    /// The models the server offers (its `/models`); a command provider
    /// offers none.
    pub async fn models(&self) -> Result<Vec<openai::ModelEntry>, ProviderError> {
        match self.settings.kind {
            ProviderKind::Command => Ok(Vec::new()),
            _ => openai::list_models(&self.http, &self.settings).await,
        }
    }

    /// One logical call: attempts with backoff until success, a permanent
    /// error, or the attempt budget runs out.
    pub async fn chat(
        &self,
        model: &str,
        req: &ChatRequest<'_>,
        observer: &dyn CallObserver,
        cancel: &CancellationToken,
    ) -> Result<(Reply, u32), ProviderError> {
        let attempts = self.settings.attempts.max(1);
        let mut retries = 0;
        loop {
            let attempt = tokio::select! {
                r = self.attempt(model, req, observer, cancel) => r,
                _ = cancel.cancelled() => Err(ProviderError::Cancelled),
            };
            match attempt {
                Ok(reply) => return Ok((reply, retries)),
                // A server on this machine that refuses the connection is
                // not running: one quick retry (it may be starting), then
                // say so and how to start one, instead of Swival's backoff.
                Err(ProviderError::Unreachable(why)) if self.loopback() && retries >= 1 => {
                    return Err(ProviderError::Config(self.not_running(&why)))
                }
                Err(e) if e.is_retryable() && retries + 1 < attempts => {
                    let delay = e.retry_after().unwrap_or_else(|| backoff_delay(self.settings.backoff_base, retries));
                    let delay = match (&e, self.loopback()) {
                        (ProviderError::Unreachable(_), true) => delay.min(Duration::from_millis(500)),
                        _ => delay,
                    };
                    retries += 1;
                    observer.retry(retries, delay, &e.to_string());
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                    }
                }
                Err(e) if e.is_retryable() && attempts > 1 => {
                    return Err(ProviderError::Exhausted { attempts, last: Box::new(e) })
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether the provider's `base_url` names this machine.
    fn loopback(&self) -> bool {
        let Ok(url) = reqwest::Url::parse(&self.settings.base_url) else { return false };
        match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            None => false,
        }
    }

    /// What a run is told when nothing listens at a loopback `base_url`.
    fn not_running(&self, why: &str) -> String {
        if self.settings.kind.is_local() {
            return no_server(self.settings.kind, &self.settings.base_url, &ProviderError::Unreachable(why.to_owned()));
        }
        format!(
            "no model server answers at {} (the connection was refused: {why}); start the server, or point --base-url at one that runs",
            self.settings.base_url
        )
    }

    async fn attempt(
        &self,
        model: &str,
        req: &ChatRequest<'_>,
        observer: &dyn CallObserver,
        cancel: &CancellationToken,
    ) -> Result<Reply, ProviderError> {
        let reply = match self.settings.kind {
            ProviderKind::Command => command::call(&self.settings, req, cancel).await,
            _ => openai::chat(&self.http, &self.settings, &request_body(&self.settings, model, req), observer).await,
        };
        reply.map_err(ProviderError::told)
    }
}

/// What a newcomer reads when no local model server answers: where each
/// preset expects one, and the hosted alternative.
fn no_server(kind: ProviderKind, base_url: &str, e: &ProviderError) -> String {
    format!(
        "no model server answers at {base_url} (provider {}): {e}\n\
         A run needs a model. Either start a local server where a preset expects it:\n\
         \x20 LM Studio: load a model, start its server (port 1234)       swivalctl run --provider lmstudio \"task\"\n\
         \x20 llama.cpp: llama-server -m MODEL.gguf --jinja --port 8080    swivalctl run --provider llamacpp \"task\"\n\
         \x20 Ollama:    ollama serve; ollama pull qwen2.5-coder           swivalctl run --provider ollama --model qwen2.5-coder \"task\"\n\
         \x20 (another port: --base-url http://127.0.0.1:PORT/v1)\n\
         or use a hosted model: OPENAI_API_KEY=... swivalctl run --provider openai --model gpt-4.1 \"task\"\n\
         README.md, \"A first run with a local model\", builds llama-server and a small model from package registries.",
        kind.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn settings() -> ProviderSettings {
        ProviderSettings {
            command_pins: Vec::new(),
            runner: None,
            kind: ProviderKind::Generic,
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: None,
            model: Some("m".into()),
            default_model: None,
            stream_usage: false,
            user_agent: "swivald-test".into(),
            timeout: Duration::from_secs(1),
            attempts: 5,
            backoff_base: Duration::from_secs(2),
            max_output_tokens: 32768,
            temperature: None,
            top_p: None,
            seed: None,
            extra_body: None,
            reasoning_effort: None,
            stream: false,
            cut_runaway: true,
            command: None,
            cwd: "/".into(),
            env: crate::procs::CallerEnv::Daemon,
        }
    }

    #[test]
    fn run_errors_use_swivals_words() {
        let http = ProviderError::Http { status: 401, message: "Incorrect API key".into(), retry_after: None };
        assert_eq!(http.run_error("m"), "LLM call failed (model: m): provider returned HTTP 401: Incorrect API key");
        let gave_up =
            ProviderError::Exhausted { attempts: 5, last: Box::new(ProviderError::Transport("reset".into())) };
        assert_eq!(
            gave_up.run_error("m"),
            "LLM call failed (model: m): provider request failed: reset (gave up after 5 attempts)"
        );
        assert_eq!(ProviderError::EmptyChoices.run_error("m"), "LLM returned an empty choices list");
        assert!(!ProviderError::EmptyChoices.is_retryable());
    }

    #[test]
    fn context_overflow_is_told_from_the_provider_error() {
        let http = |status, message: &str| ProviderError::Http { status, message: message.into(), retry_after: None };
        let http = |status, message: &str| http(status, message).told();
        assert!(http(400, "This model's maximum context length is 8192 tokens").is_context_overflow());
        assert!(http(400, "context_length_exceeded").is_context_overflow());
        assert!(http(413, "Payload Too Large").is_context_overflow());
        assert!(!http(401, "Incorrect API key provided").is_context_overflow());
        let gave_up = ProviderError::Exhausted { attempts: 2, last: Box::new(http(400, "prompt is too long")) };
        assert!(gave_up.is_context_overflow());
        assert!(!ProviderError::Config("no model; the context window is unknown".into()).told().is_context_overflow());
    }

    #[test]
    fn a_tool_call_the_server_could_not_read_is_not_tried_again() {
        let http = |status, message: &str| ProviderError::Http { status, message: message.into(), retry_after: None };
        let llamacpp = http(
            500,
            "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at line 4",
        );
        assert!(llamacpp.is_unreadable_call());
        assert!(!llamacpp.is_retryable());
        assert!(ProviderError::Malformed("invalid tool call: missing name".into()).is_unreadable_call());
        let overloaded = http(500, "Internal server error");
        assert!(!overloaded.is_unreadable_call());
        assert!(overloaded.is_retryable());
        assert!(!http(400, "tools are not supported by this model").is_unreadable_call());
    }
}
