//! What hooks see and answer (docs/hooks.md): the payload of each hook
//! point and the result object a hook replies with. Command hooks get the
//! payload on stdin and print the result; client hooks get it in a
//! `hooks/invoke` notification and answer with `hooks/respond`.

use crate::{RunId, SessionId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One consultation of a hook: its point and that point's payload. On the
/// wire `point` names the point and `payload` holds the payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "point", content = "payload", rename_all = "snake_case")]
pub enum HookCall {
    /// Before each provider call.
    BeforeLlmCall(BeforeLlmCall),
    /// After each provider reply, before any tool runs.
    AfterLlmCall(AfterLlmCall),
    /// Before the final answer is delivered.
    BeforeResponseEmit(BeforeResponseEmit),
}

impl HookCall {
    /// The point consulted.
    pub fn point(&self) -> HookPoint {
        match self {
            HookCall::BeforeLlmCall(_) => HookPoint::BeforeLlmCall,
            HookCall::AfterLlmCall(_) => HookPoint::AfterLlmCall,
            HookCall::BeforeResponseEmit(_) => HookPoint::BeforeResponseEmit,
        }
    }

    /// The payload alone, as a command hook reads it on stdin.
    pub fn payload_json(&self) -> Vec<u8> {
        let payload = match self {
            HookCall::BeforeLlmCall(p) => serde_json::to_vec(p),
            HookCall::AfterLlmCall(p) => serde_json::to_vec(p),
            HookCall::BeforeResponseEmit(p) => serde_json::to_vec(p),
        };
        payload.expect("hook payloads serialize")
    }
}

/// `before_llm_call`: what is about to be sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BeforeLlmCall {
    /// The session.
    pub session_id: SessionId,
    /// The run.
    pub run_id: RunId,
    /// The turn (1-based, counted across review rounds).
    pub turn: u64,
    /// An agent turn or a compaction summary.
    pub call_kind: CallKind,
    /// The provider's name (`generic`, `openai`, ...).
    pub provider: String,
    /// The model.
    pub model: String,
    /// The messages to be sent, in OpenAI chat format.
    pub messages: Vec<Value>,
    /// The tools offered, as OpenAI function schemas.
    pub tools: Vec<Value>,
}

/// `after_llm_call`: what the model answered, before any tool runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AfterLlmCall {
    /// The session.
    pub session_id: SessionId,
    /// The run.
    pub run_id: RunId,
    /// The turn.
    pub turn: u64,
    /// The model's reply.
    pub assistant: ProposedTurn,
}

/// A model's reply as `after_llm_call` hooks see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProposedTurn {
    /// Its text, if any.
    pub content: Option<String>,
    /// The tool calls it proposes.
    pub tool_calls: Vec<ProposedCall>,
}

/// One tool call the model proposes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProposedCall {
    /// Its id: keep it by listing this in `tool_calls`.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments, as the model wrote them (a JSON text).
    pub arguments: String,
}

/// `before_response_emit`: the accepted final answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BeforeResponseEmit {
    /// The session.
    pub session_id: SessionId,
    /// The run.
    pub run_id: RunId,
    /// The user's task.
    pub task: String,
    /// The answer to be delivered.
    pub content: String,
    /// Every answer text of the run, in order (the last is `content`).
    pub all_content: Vec<String>,
}

/// What a hook answers: an object with only the fields of its point
/// (anything else is malformed, and a malformed result blocks unless the
/// hook is `on_failure = "ignore"`). Empty: no change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookResult {
    /// `before_llm_call`: the messages to send instead (this call only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Value>>,
    /// `before_llm_call`: names of the tools to keep offering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// `after_llm_call`: ids of the proposed calls to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<String>>,
    /// `after_llm_call`: ids of the calls that run only once the user approves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<Vec<String>>,
    /// `before_response_emit`: the answer to deliver instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// `before_response_emit`: replacements for every answer text, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_content: Option<Vec<String>>,
    /// Stop here: the run ends `blocked`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block: bool,
    /// Why (shown with a block, and recorded with a change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl HookPoint {
    /// The result fields this point accepts.
    pub fn result_fields(self) -> &'static [&'static str] {
        match self {
            HookPoint::BeforeLlmCall => &["messages", "tools", "block", "reason"],
            HookPoint::AfterLlmCall => &["tool_calls", "ask", "block", "reason"],
            HookPoint::BeforeResponseEmit => &["content", "all_content", "block", "reason"],
        }
    }
}

/// Where in the pipeline a hook runs. Declared here once: the daemon's
/// config, its events and `hooks/register` all use this type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookPoint {
    /// Before each provider call: may replace messages, narrow tools, block.
    BeforeLlmCall,
    /// After each provider reply, before any tool runs: may drop calls, ask the user about them, or block.
    AfterLlmCall,
    /// Before the final answer is delivered: may modify, redact or block it.
    BeforeResponseEmit,
}

impl HookPoint {
    /// Every point, in pipeline order.
    pub const ALL: [HookPoint; 3] = [HookPoint::BeforeLlmCall, HookPoint::AfterLlmCall, HookPoint::BeforeResponseEmit];
    /// Their names on the wire and in config.
    pub const NAMES: &'static [&'static str] = &["before_llm_call", "after_llm_call", "before_response_emit"];

    /// The name on the wire and in config.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// The kind of a provider call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// A normal agent turn.
    Agent,
    /// A context-compaction summary.
    Summary,
}

impl CallKind {
    /// The name on the wire (and given to filter scripts).
    pub fn as_str(self) -> &'static str {
        match self {
            CallKind::Agent => "agent",
            CallKind::Summary => "summary",
        }
    }
}

/// What a hook decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// Nothing changed.
    Pass,
    /// It changed something.
    Modify,
    /// It blocked.
    Block,
    /// It failed and was passed over (`on_failure = "ignore"`).
    IgnoredFailure,
}

impl HookDecision {
    /// The name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            HookDecision::Pass => "pass",
            HookDecision::Modify => "modify",
            HookDecision::Block => "block",
            HookDecision::IgnoredFailure => "ignored_failure",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_puts_point_and_payload_side_by_side() {
        let call = HookCall::BeforeResponseEmit(BeforeResponseEmit {
            session_id: SessionId("s_1".into()),
            run_id: RunId("r_1".into()),
            task: "t".into(),
            content: "a".into(),
            all_content: vec!["a".into()],
        });
        let wire = serde_json::to_value(&call).unwrap();
        assert_eq!(wire["point"], "before_response_emit");
        let alone: Value = serde_json::from_slice(&call.payload_json()).unwrap();
        assert_eq!(wire["payload"], alone);
        assert_eq!(serde_json::from_value::<HookCall>(wire).unwrap(), call);
    }

    #[test]
    fn an_empty_result_changes_nothing_and_serializes_empty() {
        assert_eq!(serde_json::to_value(HookResult::default()).unwrap(), json!({}));
    }
}
