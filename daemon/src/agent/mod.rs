//! The agent loop with Swival's semantics: a turn is one LLM call plus its
//! tool calls, run in order; results go back as `tool` messages; a reply
//! without tool calls is the final answer; empty and cut-off replies get
//! Swival's nudges; `max_turns` exhausted ends the run.

mod call;
mod compact;
pub mod conversation;
mod estimate;
mod guard;
mod observer;
pub mod prompt;
mod sink;
mod tools;

use crate::cache::ResponseCache;
use crate::config::HookPoint;
use crate::pipeline::filter::CallKind;
use crate::pipeline::hooks::{self, merge::Decision};
use crate::pipeline::Pipeline;
use crate::provider::{Provider, ProviderKind};
use crate::report::RunRecord;
use crate::sandbox::{CommandEnv, FetchEnv};
use crate::secrets::SecretShield;
use crate::store::StoreError;
use crate::tools::schema::Offer;
use crate::tools::ToolBox;
use conversation::Conversation;
pub use estimate::estimate_tokens;
use estimate::{estimate_from, Offered};
use serde_json::json;
pub use sink::{emit_recorded, EventSink};
use swival_protocol::FailureKind;
use swival_protocol::{AfterLlmCall, EventKind, HookCall, ProposedCall, ProposedTurn, RunId, SessionId};
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
    /// The run failed: why, as a kind and in words.
    Failed(FailureKind, String),
    /// A hook blocked the run; the reason.
    Blocked(String),
}

impl From<StoreError> for LoopEnd {
    fn from(e: StoreError) -> Self {
        LoopEnd::Failed(FailureKind::Internal, format!("could not store the conversation: {e}"))
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
    /// Stats and timeline, folded from the events the loop emits.
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

/// Run the hooks of `call`'s point, emit each decision (an event, folded
/// into the report), and return the merged decision.
pub async fn consult(
    pipeline: &Pipeline,
    events: &dyn EventSink,
    run_id: &RunId,
    record: &mut RunRecord,
    call: &HookCall,
    cancel: &CancellationToken,
) -> Result<Decision, hooks::Cancelled> {
    let point = call.point();
    let (decision, records) = pipeline.hooks.run(call, cancel).await?;
    for r in records {
        let reason = r.effect.reason().map(str::to_owned);
        let duration_s = r.duration.as_secs_f64();
        let kind = EventKind::Hook { point, hook: r.hook, decision: r.effect.decision(), reason, duration_s };
        emit_recorded(events, run_id, record, kind);
    }
    Ok(decision)
}

/// Why a provider call did not produce a reply.
#[derive(Debug)]
enum CallError {
    /// The run was cancelled.
    Cancelled,
    /// The call failed for good: why, as a kind and in words.
    Failed(FailureKind, String),
    /// The provider said the prompt is too long for the context; the
    /// message says so as a failure would.
    Overflow(String),
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
    /// Emit `kind` as an event of this run, folded into its record: how
    /// the loop tells the session and the report what happened.
    fn emit(&mut self, kind: EventKind) {
        emit_recorded(self.events, self.run_id, self.record, kind);
    }

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
        let tool_calls = reply
            .tool_calls
            .iter()
            .map(|c| ProposedCall { id: c.id.clone(), name: c.name.clone(), arguments: c.arguments.clone() })
            .collect();
        let call = HookCall::AfterLlmCall(AfterLlmCall {
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
            turn,
            assistant: ProposedTurn { content: reply.content.clone(), tool_calls },
        });
        let decision = match consult(self.pipeline, self.events, self.run_id, self.record, &call, self.cancel).await {
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
        let end = match self.turns().await {
            Ok(end) => self.conversation.settle().await.map(|()| end),
            Err(e) => Err(e),
        };
        end.unwrap_or_else(LoopEnd::from)
    }

    async fn turns(&mut self) -> Result<LoopEnd, StoreError> {
        // Swival's command provider is not told about tools.
        let offer = if self.provider.settings.kind == ProviderKind::Command {
            std::sync::Arc::new(Offer::new(Vec::new()))
        } else {
            self.tools.offer(crate::sandbox::tool_schemas(&self.commands.policy))
        };
        let offered = Offered::serialized(&offer);
        let mut guards = guard::Guards::new(self.storm_breaker);
        for local_turn in 1..=self.max_turns {
            let turn = self.turn_offset + local_turn;
            if self.cancel.is_cancelled() {
                return Ok(LoopEnd::Cancelled);
            }
            self.emit(EventKind::TurnStarted { turn, max_turns: self.max_turns });
            let reply = match self.call_llm(turn, offered).await {
                Ok(r) => r,
                Err(CallError::Cancelled) => return Ok(LoopEnd::Cancelled),
                Err(CallError::Failed(kind, e)) => return Ok(LoopEnd::Failed(kind, e)),
                Err(CallError::Overflow(e)) => return Ok(LoopEnd::Failed(FailureKind::Provider, e)),
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
            Box::pin(self.run_tools(turn, &reply.tool_calls, &verdict, &offer.schemas, &mut guards)).await?;
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
    /// anything else, a tool call written as text included, fails the run
    /// with `why`.
    async fn last_word(&mut self, turn: u64, why: String) -> Result<LoopEnd, StoreError> {
        self.conversation.push(json!({"role": "user", "content": guard::STUCK_NUDGE, "_swival_synthetic": true}))?;
        self.intervened(turn, "", swival_protocol::InterventionKind::Stuck, guard::STUCK_NUDGE, None);
        let reply = match Box::pin(self.call_llm(turn, Offered::NONE)).await {
            Ok(r) => r,
            Err(CallError::Cancelled) => return Ok(LoopEnd::Cancelled),
            Err(CallError::Failed(kind, e)) => return Ok(LoopEnd::Failed(kind, e)),
            Err(CallError::Overflow(e)) => return Ok(LoopEnd::Failed(FailureKind::Provider, e)),
            Err(CallError::Blocked(reason)) => return Ok(LoopEnd::Blocked(reason)),
        };
        // A tool call written out as text (small models do, with no tools
        // offered) is not an answer: the run is stuck.
        let answer = reply
            .content
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty() && reply.tool_calls.is_empty() && !guard::is_tool_call_text(t));
        match answer {
            Some(text) => {
                let text = text.to_owned();
                self.conversation.push(json!({"role": "assistant", "content": text}))?;
                Ok(LoopEnd::Answer(text))
            }
            // Tool calls with no tools offered are not stored: no call is
            // left without a result.
            None => Ok(LoopEnd::Failed(FailureKind::Stuck, why)),
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
            Err(CallError::Overflow(_)) => {
                // The provider says the prompt is too long: compact and try once more.
                let window =
                    self.context_window.unwrap_or_else(|| estimate_from(self.conversation.chars(), tools.chars));
                self.compact(turn, tools.schemas, window * 3 / 4).await?;
                self.call_model(turn, CallKind::Agent, None, tools).await
            }
            other => other,
        }
    }
}
