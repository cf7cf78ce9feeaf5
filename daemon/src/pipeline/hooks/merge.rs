//! The merge rules of SPEC §7 for all hooks of one point, as one pure
//! function over the hooks' replies in running order (ascending priority,
//! then registration order):
//! - each hook sees the state left by the ones before it;
//! - a content field (`messages`, `content`, `all_content`) set by an
//!   earlier hook is locked for later ones (first writer wins); `content`
//!   and `all_content` lock each other, since both rewrite the answer;
//! - tool allowlists and kept tool calls only narrow (intersection);
//! - calls to ask the user about (`ask`) only grow (union);
//! - `block` is a one-way latch; the first blocker's reason is reported,
//!   and no later hook runs;
//! - a hook that failed, timed out or answered malformed output counts as
//!   a block unless it is configured `on_failure = "ignore"`.

use crate::config::{HookPoint, OnFailure};
use serde_json::Value;
use std::collections::BTreeSet;
use swival_protocol::HookResult;

/// What one hook answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Its JSON output.
    Output(Value),
    /// It failed, timed out or could not be reached; the text says how.
    Failed(String),
    /// Its pinned script changed, so it did not run: always a block,
    /// whatever `on_failure` says.
    Tampered(String),
}

/// The combined decision of a point's hooks so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    /// Replacement messages (`before_llm_call`).
    pub messages: Option<Vec<Value>>,
    /// Names of tools to keep (`before_llm_call`); `None`: all.
    pub tools: Option<BTreeSet<String>>,
    /// Ids of tool calls to keep (`after_llm_call`); `None`: all.
    pub tool_calls: Option<BTreeSet<String>>,
    /// Ids of tool calls that run only once a user approves (`after_llm_call`).
    pub ask: BTreeSet<String>,
    /// Replacement for the last answer text (`before_response_emit`).
    pub content: Option<String>,
    /// Replacements for the run's answer texts, in order (`before_response_emit`).
    pub all_content: Option<Vec<String>>,
    /// The first blocker: (hook, reason).
    pub blocked: Option<(String, String)>,
    /// (hook, reason) of hooks that changed something and said why.
    pub reasons: Vec<(String, String)>,
}

/// What one hook's reply did, for events and the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Nothing changed.
    Pass,
    /// It changed something.
    Modify,
    /// It blocked.
    Block(String),
    /// It failed and was passed over (`on_failure = "ignore"`).
    Ignored(String),
}

impl Effect {
    /// The decision as events carry it.
    pub fn decision(&self) -> swival_protocol::HookDecision {
        use swival_protocol::HookDecision as D;
        match self {
            Effect::Pass => D::Pass,
            Effect::Modify => D::Modify,
            Effect::Block(_) => D::Block,
            Effect::Ignored(_) => D::IgnoredFailure,
        }
    }

    /// The reason, if any.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Effect::Block(r) | Effect::Ignored(r) => Some(r),
            _ => None,
        }
    }
}

/// Why a hook's output is not the result object of its point.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Malformed {
    /// Not an object.
    #[error("the output is not a JSON object")]
    NotObject,
    /// A field the point does not take.
    #[error("'{field}' is not a field of a {point:?} result")]
    Field {
        /// The field.
        field: String,
        /// The point.
        point: HookPoint,
    },
    /// A field that should be a string.
    #[error("'{0}' must be a string")]
    NotString(String),
    /// A field that should be a list of strings.
    #[error("'{0}' must be a list of strings")]
    NotStrings(String),
    /// `block` that is not a boolean.
    #[error("'block' must be a boolean")]
    Block,
    /// `messages` that are not message objects.
    #[error("'messages' must be a list of message objects")]
    Messages,
}

fn strings(v: &Value, key: &str) -> Result<Vec<String>, Malformed> {
    v.as_array()
        .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>())
        .ok_or_else(|| Malformed::NotStrings(key.to_owned()))
}

/// A hook's output as the result object of `point`, or why it is
/// malformed (not an object, a field `point` does not take, a field of the
/// wrong type).
pub fn parse(point: HookPoint, v: &Value) -> Result<HookResult, Malformed> {
    let obj = v.as_object().ok_or(Malformed::NotObject)?;
    if let Some(k) = obj.keys().find(|k| !point.result_fields().contains(&k.as_str())) {
        return Err(Malformed::Field { field: k.clone(), point });
    }
    let field = |k: &str| obj.get(k).filter(|v| !v.is_null());
    let string = |k: &str| match field(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Malformed::NotString(k.to_owned())),
    };
    let list = |k: &str| field(k).map(|t| strings(t, k)).transpose();
    let reason = string("reason")?;
    match field("block") {
        None | Some(Value::Bool(false)) => {}
        // A block stands even beside a malformed field (fail closed).
        Some(Value::Bool(true)) => return Ok(HookResult { block: true, reason, ..HookResult::default() }),
        Some(_) => return Err(Malformed::Block),
    }
    let messages = match field("messages") {
        None => None,
        Some(Value::Array(m)) if m.iter().all(Value::is_object) => Some(m.clone()),
        Some(_) => return Err(Malformed::Messages),
    };
    Ok(HookResult {
        messages,
        tools: list("tools")?,
        tool_calls: list("tool_calls")?,
        ask: list("ask")?,
        content: string("content")?,
        all_content: list("all_content")?,
        block: false,
        reason,
    })
}

impl Decision {
    /// Whether a hook has blocked.
    pub fn is_blocked(&self) -> bool {
        self.blocked.is_some()
    }

    /// Fold one hook's reply into the decision.
    pub fn apply(&mut self, point: HookPoint, hook: &str, on_failure: OnFailure, reply: Reply) -> Effect {
        if self.is_blocked() {
            return Effect::Pass;
        }
        let failure = |why: String| match on_failure {
            OnFailure::Ignore => Effect::Ignored(why),
            OnFailure::Block => Effect::Block(format!("hook {hook} failed: {why}")),
        };
        let effect = match reply {
            Reply::Failed(why) => failure(why),
            Reply::Tampered(why) => Effect::Block(format!("hook {hook} did not run: {why}")),
            Reply::Output(v) => match self.merge(point, hook, &v) {
                Ok(effect) => effect,
                Err(why) => failure(format!("malformed output: {why}")),
            },
        };
        if let Effect::Block(reason) = &effect {
            self.blocked = Some((hook.to_owned(), reason.clone()));
        }
        effect
    }

    /// Merge a well-formed reply; `Err` when it is malformed.
    fn merge(&mut self, point: HookPoint, hook: &str, v: &Value) -> Result<Effect, Malformed> {
        // Every field is checked before anything changes: a malformed
        // reply leaves none of its changes behind.
        let HookResult { messages, tools, tool_calls: calls, ask, content, all_content, block, reason } =
            parse(point, v)?;
        if block {
            return Ok(Effect::Block(reason.unwrap_or_else(|| "blocked by hook".into())));
        }
        let ask = ask.unwrap_or_default();
        let mut changed = false;
        if let Some(m) = messages {
            if self.messages.is_none() {
                self.messages = Some(m);
                changed = true;
            }
        }
        for (incoming, slot) in [(tools, &mut self.tools), (calls, &mut self.tool_calls)] {
            if let Some(keep) = incoming {
                let keep: BTreeSet<String> = keep.into_iter().collect();
                let narrowed = match slot.take() {
                    Some(prev) => prev.intersection(&keep).cloned().collect(),
                    None => keep,
                };
                *slot = Some(narrowed);
                changed = true;
            }
        }
        if !ask.is_empty() {
            self.ask.extend(ask);
            changed = true;
        }
        let answer_locked = self.content.is_some() || self.all_content.is_some();
        if !answer_locked {
            if let Some(c) = content {
                self.content = Some(c);
                changed = true;
            } else if let Some(all) = all_content {
                self.all_content = Some(all);
                changed = true;
            }
        }
        if changed {
            if let Some(r) = reason {
                self.reasons.push((hook.to_owned(), r));
            }
            return Ok(Effect::Modify);
        }
        Ok(Effect::Pass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const B: HookPoint = HookPoint::BeforeLlmCall;
    const A: HookPoint = HookPoint::AfterLlmCall;
    const E: HookPoint = HookPoint::BeforeResponseEmit;

    fn out(v: Value) -> Reply {
        Reply::Output(v)
    }

    fn set(items: &[&str]) -> Option<BTreeSet<String>> {
        Some(items.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn first_writer_of_messages_wins() {
        let mut d = Decision::default();
        d.apply(B, "h1", OnFailure::Block, out(json!({"messages": [{"role": "user", "content": "one"}]})));
        let e = d.apply(B, "h2", OnFailure::Block, out(json!({"messages": [{"role": "user", "content": "two"}]})));
        assert_eq!(e, Effect::Pass);
        assert_eq!(d.messages.unwrap()[0]["content"], "one");
    }

    #[test]
    fn tool_lists_only_narrow() {
        let mut d = Decision::default();
        d.apply(B, "h1", OnFailure::Block, out(json!({"tools": ["read_file", "grep"]})));
        d.apply(B, "h2", OnFailure::Block, out(json!({"tools": ["grep", "write_file"]})));
        assert_eq!(d.tools, set(&["grep"]));
        let mut d = Decision::default();
        d.apply(A, "h1", OnFailure::Block, out(json!({"tool_calls": ["c1"]})));
        d.apply(A, "h2", OnFailure::Block, out(json!({"tool_calls": ["c1", "c2"]})));
        assert_eq!(d.tool_calls, set(&["c1"]), "a later hook cannot widen");
    }

    #[test]
    fn asks_only_grow_and_are_an_after_llm_call_field() {
        let mut d = Decision::default();
        assert_eq!(d.apply(A, "h1", OnFailure::Block, out(json!({"ask": ["c1"], "reason": "writes"}))), Effect::Modify);
        d.apply(A, "h2", OnFailure::Block, out(json!({"ask": ["c2"]})));
        d.apply(A, "h3", OnFailure::Block, out(json!({"ask": []})));
        assert_eq!(d.ask, ["c1".to_owned(), "c2".to_owned()].into_iter().collect());
        let mut d = Decision::default();
        assert!(matches!(d.apply(B, "h", OnFailure::Block, out(json!({"ask": ["c1"]}))), Effect::Block(_)));
    }

    #[test]
    fn block_latches_with_the_first_reason() {
        let mut d = Decision::default();
        assert_eq!(
            d.apply(B, "h1", OnFailure::Block, out(json!({"block": true, "reason": "tainted"}))),
            Effect::Block("tainted".into())
        );
        d.apply(B, "h2", OnFailure::Block, out(json!({"block": true, "reason": "other"})));
        d.apply(B, "h3", OnFailure::Block, out(json!({"block": false})));
        assert_eq!(d.blocked, Some(("h1".into(), "tainted".into())));
    }

    #[test]
    fn failures_block_unless_ignored() {
        let mut d = Decision::default();
        assert_eq!(
            d.apply(B, "h", OnFailure::Ignore, Reply::Failed("timed out".into())),
            Effect::Ignored("timed out".into())
        );
        assert!(!d.is_blocked());
        let e = d.apply(B, "h", OnFailure::Block, Reply::Failed("timed out".into()));
        assert!(matches!(e, Effect::Block(r) if r.contains("timed out")));
    }

    #[test]
    fn a_tampered_hook_blocks_even_when_failures_are_ignored() {
        let mut d = Decision::default();
        let e = d.apply(B, "h", OnFailure::Ignore, Reply::Tampered("policy script x changed".into()));
        assert!(matches!(e, Effect::Block(r) if r.contains("policy script x changed")));
        assert!(d.is_blocked());
    }

    #[test]
    fn malformed_output_counts_as_failure_and_changes_nothing() {
        for bad in [
            json!("text"),
            json!({"tools": "grep"}),
            json!({"block": "yes"}),
            json!({"content": 3}),
            json!({"messages": [1]}),
        ] {
            let mut d = Decision::default();
            let e = d.apply(B, "h", OnFailure::Block, out(bad.clone()));
            assert!(matches!(e, Effect::Block(_)), "{bad}");
        }
        let mut d = Decision::default();
        let e = d.apply(B, "h", OnFailure::Ignore, out(json!({"tools": ["a"], "content": 3})));
        assert!(matches!(e, Effect::Ignored(_)));
        assert_eq!(d.tools, None, "a malformed reply leaves nothing behind");
    }

    #[test]
    fn fields_of_another_point_are_malformed() {
        let mut d = Decision::default();
        assert!(matches!(d.apply(A, "h", OnFailure::Block, out(json!({"content": "x"}))), Effect::Block(_)));
    }

    #[test]
    fn content_and_all_content_lock_each_other() {
        let mut d = Decision::default();
        d.apply(E, "h1", OnFailure::Block, out(json!({"all_content": ["a", "b"]})));
        assert_eq!(d.apply(E, "h2", OnFailure::Block, out(json!({"content": "x"}))), Effect::Pass);
        assert_eq!(d.all_content, Some(vec!["a".into(), "b".into()]));
        assert_eq!(d.content, None);
    }

    #[test]
    fn empty_reply_passes() {
        let mut d = Decision::default();
        assert_eq!(d.apply(E, "h", OnFailure::Block, out(json!({}))), Effect::Pass);
        assert_eq!(d, Decision::default());
    }

    #[test]
    fn a_block_stands_beside_a_malformed_field_even_for_an_ignored_hook() {
        let mut d = Decision::default();
        let e = d.apply(B, "h", OnFailure::Ignore, out(json!({"block": true, "reason": "no", "messages": 3})));
        assert_eq!(e, Effect::Block("no".into()));
        let mut d = Decision::default();
        let e = d.apply(B, "h", OnFailure::Ignore, out(json!({"messages": 3})));
        assert!(matches!(e, Effect::Ignored(why) if why.contains("'messages' must be a list")));
    }

    #[test]
    fn a_well_formed_result_parses_into_the_protocol_type() {
        let r = parse(A, &json!({"tool_calls": ["c1"], "ask": ["c2"], "reason": null})).unwrap();
        assert_eq!(r.tool_calls, Some(vec!["c1".into()]));
        assert_eq!(r.ask, Some(vec!["c2".into()]));
        assert_eq!(r.reason, None);
        assert_eq!(
            parse(A, &json!({"content": "x"})).unwrap_err().to_string(),
            "'content' is not a field of a AfterLlmCall result"
        );
    }
}
