//! The request body as sent: Swival's shape, built from the borrowed
//! conversation and tool schemas and serialised in place.

use super::ProviderSettings;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What one call sends, before provider settings are applied.
#[derive(Debug, Clone)]
pub struct ChatRequest<'a> {
    /// The conversation.
    pub messages: Outbound<'a>,
    /// Tool schemas offered (OpenAI function format).
    pub tools: &'a [Value],
    /// `tools` as a JSON array already serialised, when the caller has it.
    pub tools_json: Option<&'a RawValue>,
    /// `max_tokens`, already clamped to the window.
    pub max_tokens: u64,
    /// A temperature for this call over the session's (Swival's secondary
    /// calls fix it at 0).
    pub temperature: Option<f64>,
}

/// The messages of one call.
#[derive(Debug, Clone, Copy)]
pub enum Outbound<'a> {
    /// The conversation as stored, each message serialised as sent when it
    /// was added: they go out as they are.
    Stored(&'a [Box<RawValue>]),
    /// Messages as JSON (made or changed by a hook, a filter, the secret
    /// shield, or a summary call); internal keys are left out.
    Values(&'a [Value]),
}

impl Outbound<'_> {
    /// The messages as JSON values.
    pub fn to_values(self) -> Vec<Value> {
        match self {
            Outbound::Stored(raw) => {
                raw.iter().map(|m| serde_json::from_str(m.get()).expect("a stored message is JSON")).collect()
            }
            Outbound::Values(values) => values.to_vec(),
        }
    }
}

/// The request body as sent (Swival's shape): built from the borrowed
/// conversation and tool schemas, which are serialised in place rather
/// than copied into a `Value` first. Keys come out sorted, as a JSON
/// object would; `extra_body` keys are merged at the top and win.
pub fn request_body<'a>(settings: &'a ProviderSettings, model: &'a str, req: &'a ChatRequest<'a>) -> RequestBody<'a> {
    let mut body: BTreeMap<&'a str, Part<'a>> = BTreeMap::new();
    body.insert("model", Part::Str(model));
    body.insert(
        "messages",
        match req.messages {
            Outbound::Stored(raw) => Part::RawMessages(raw),
            Outbound::Values(values) => Part::Messages(values),
        },
    );
    body.insert("max_tokens", Part::Owned(json!(req.max_tokens)));
    if !req.tools.is_empty() {
        body.insert("tools", req.tools_json.map_or(Part::Values(req.tools), Part::Raw));
        body.insert("tool_choice", Part::Str("auto"));
    }
    if let Some(t) = req.temperature.or(settings.temperature) {
        body.insert("temperature", Part::Owned(json!(t)));
    }
    if let Some(p) = settings.top_p {
        body.insert("top_p", Part::Owned(json!(p)));
    }
    if let Some(s) = settings.seed {
        body.insert("seed", Part::Owned(json!(s)));
    }
    if let Some(effort) = settings.reasoning_effort.as_deref().filter(|e| *e != "default") {
        body.insert("reasoning_effort", Part::Str(effort));
    }
    if let Some(extra) = &settings.extra_body {
        for (k, v) in extra {
            body.insert(k.as_str(), Part::Value(v));
        }
    }
    if settings.stream {
        body.insert("stream", Part::Owned(json!(true)));
        // Counted tokens for `model_prices`: OpenAI's servers send usage
        // in a stream only when asked.
        if settings.stream_usage {
            body.insert("stream_options", Part::Owned(json!({"include_usage": true})));
        }
    }
    RequestBody(body)
}

/// A request body ready to serialise (see [`request_body`]).
#[derive(Debug)]
pub struct RequestBody<'a>(BTreeMap<&'a str, Part<'a>>);

impl RequestBody<'_> {
    /// The body as a JSON value (for the cache key and tests).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("JSON serializes")
    }
}

impl serde::Serialize for RequestBody<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// One field of a request body.
#[derive(Debug)]
enum Part<'a> {
    /// A string.
    Str(&'a str),
    /// A borrowed value.
    Value(&'a Value),
    /// A small owned value.
    Owned(Value),
    /// Borrowed values, as an array.
    Values(&'a [Value]),
    /// Stored messages, as sent (see [`WireMessage`]).
    Messages(&'a [Value]),
    /// Messages serialised before, as sent.
    RawMessages(&'a [Box<RawValue>]),
    /// JSON serialised before.
    Raw(&'a RawValue),
}

impl serde::Serialize for Part<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Part::Str(v) => v.serialize(s),
            Part::Value(v) => v.serialize(s),
            Part::Owned(v) => v.serialize(s),
            Part::Values(v) => v.serialize(s),
            Part::Messages(ms) => s.collect_seq(ms.iter().map(WireMessage)),
            Part::RawMessages(ms) => ms.serialize(s),
            Part::Raw(v) => v.serialize(s),
        }
    }
}

/// Whether `message` has internal keys, which are stored but not sent.
fn has_internal_keys(message: &Value) -> bool {
    message.as_object().is_some_and(|map| map.keys().any(|k| k.starts_with('_')))
}

/// A stored message as sent: keys starting with `_` are internal.
struct WireMessage<'a>(&'a Value);

impl serde::Serialize for WireMessage<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) if has_internal_keys(self.0) => {
                s.collect_map(map.iter().filter(|(k, _)| !k.starts_with('_')))
            }
            other => other.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::tests::settings;

    #[test]
    fn request_body_has_swivals_shape() {
        let msgs = vec![json!({"role": "user", "content": "hi", "_swival_synthetic": true})];
        let tools = vec![json!({"type": "function", "function": {"name": "read_file"}})];
        let req = ChatRequest {
            messages: Outbound::Values(&msgs),
            tools: &tools,
            tools_json: None,
            max_tokens: 100,
            temperature: None,
        };
        let body = request_body(&settings(), "m", &req).to_value();
        assert_eq!(body["model"], "m");
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(body["messages"][0], json!({"role": "user", "content": "hi"}));
        assert!(body.get("temperature").is_none(), "unset sampling params are not sent");
        assert!(body.get("stream").is_none());
    }

    #[test]
    fn tools_serialised_before_go_out_byte_for_byte_as_the_schemas_would() {
        let msgs = vec![json!({"role": "user", "content": "hi"})];
        let tools =
            vec![json!({"type": "function", "function": {"name": "read_file", "parameters": {"b": 1, "a": 2}}})];
        let json = serde_json::value::to_raw_value(&tools).unwrap();
        let settings = settings();
        let plain = ChatRequest {
            messages: Outbound::Values(&msgs),
            tools: &tools,
            tools_json: None,
            max_tokens: 9,
            temperature: None,
        };
        let raw = ChatRequest { tools_json: Some(&json), ..plain.clone() };
        let text = |req: &ChatRequest<'_>| serde_json::to_string(&request_body(&settings, "m", req)).unwrap();
        assert_eq!(text(&raw), text(&plain));
    }

    #[test]
    fn messages_serialised_before_go_out_byte_for_byte_as_the_messages_would() {
        let msgs = vec![
            json!({"role": "system", "content": "be \"brief\"\n"}),
            json!({"role": "user", "content": "hi", "_swival_synthetic": true}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
        ];
        let typed: Vec<crate::message::Message> =
            msgs.iter().map(|m| serde_json::from_value(m.clone()).unwrap()).collect();
        let wire: Vec<Box<RawValue>> = typed.iter().map(crate::message::Message::wire).collect();
        let settings = settings();
        let plain = ChatRequest {
            messages: Outbound::Values(&msgs),
            tools: &[],
            tools_json: None,
            max_tokens: 9,
            temperature: None,
        };
        let raw = ChatRequest { messages: Outbound::Stored(&wire), ..plain.clone() };
        let text = |req: &ChatRequest<'_>| serde_json::to_string(&request_body(&settings, "m", req)).unwrap();
        assert_eq!(text(&raw), text(&plain));
        assert!(!text(&raw).contains("_swival_synthetic"));
        assert_eq!(request_body(&settings, "m", &raw).to_value(), request_body(&settings, "m", &plain).to_value());
    }

    #[test]
    fn no_tools_means_no_tool_choice() {
        let settings = settings();
        let req = ChatRequest {
            messages: Outbound::Values(&[]),
            tools: &[],
            tools_json: None,
            max_tokens: 1,
            temperature: None,
        };
        let body = request_body(&settings, "m", &req).to_value();
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    }

    #[test]
    fn extra_body_is_merged_at_the_top() {
        let mut s = settings();
        s.extra_body = Some(json!({"chat_template_kwargs": {"enable_thinking": false}}).as_object().unwrap().clone());
        s.temperature = Some(0.2);
        let req = ChatRequest {
            messages: Outbound::Values(&[]),
            tools: &[],
            tools_json: None,
            max_tokens: 1,
            temperature: None,
        };
        let body = request_body(&s, "m", &req).to_value();
        assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
        assert_eq!(body["temperature"], 0.2);
    }
}
