//! A conversation's messages, typed: OpenAI chat messages with roles as an
//! enum, tool calls as values, and the daemon's own marks as fields.
//!
//! A message has two JSON forms, both with keys in the order a JSON object
//! sorts them (the order swivald has always stored and sent them in):
//! - stored: what the store keeps, internal marks included
//!   (`_swival_synthetic`);
//! - wire ([`Message::wire`]): what a provider is sent, without them.

use serde::de::Error as _;
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt.
    System,
    /// The user, or the daemon speaking for it (nudges, named files).
    User,
    /// The model.
    Assistant,
    /// A tool call's result.
    Tool,
}

impl Role {
    /// The role as the chat API names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One tool call proposed by the model. Its own JSON (the response cache's)
/// is flat; inside a message it has the chat API's nested form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id, echoed in the tool result.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON string as the model wrote it.
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// Its text; `None` for an assistant turn that only calls tools.
    pub content: Option<String>,
    /// The tool calls of an assistant turn, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The call a `tool` message answers.
    pub tool_call_id: Option<String>,
    /// Written by the daemon, not by the user (nudges, named files, notes):
    /// stored, never sent.
    pub synthetic: bool,
}

impl Message {
    /// A message of `role` saying `content`.
    pub fn new(role: Role, content: impl Into<String>) -> Message {
        Message { role, content: Some(content.into()), tool_calls: Vec::new(), tool_call_id: None, synthetic: false }
    }

    /// The system prompt.
    pub fn system(content: impl Into<String>) -> Message {
        Message::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message::new(Role::User, content)
    }

    /// A user message the daemon writes (a nudge, the named files, a note).
    pub fn synthetic(content: impl Into<String>) -> Message {
        Message { synthetic: true, ..Message::user(content) }
    }

    /// An assistant message saying `content`.
    pub fn assistant(content: impl Into<String>) -> Message {
        Message::new(Role::Assistant, content)
    }

    /// An assistant turn: its text, if any, and its tool calls.
    pub fn assistant_turn(content: Option<String>, tool_calls: Vec<ToolCall>) -> Message {
        Message { role: Role::Assistant, content, tool_calls, tool_call_id: None, synthetic: false }
    }

    /// The result of call `id`.
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>) -> Message {
        Message { tool_call_id: Some(id.into()), ..Message::new(Role::Tool, content) }
    }

    /// The text, or `""`.
    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }

    /// The message serialised as a provider is sent it.
    pub fn wire(&self) -> Box<RawValue> {
        serde_json::value::to_raw_value(&Form { message: self, stored: false }).expect("a message serializes")
    }

    /// The message serialised as it is stored.
    pub fn stored(&self) -> String {
        serde_json::to_string(self).expect("a message serializes")
    }

    /// The message as a JSON value in its stored form (what hooks and
    /// filters are shown).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a message serializes")
    }
}

/// A message in one of its forms.
struct Form<'a> {
    message: &'a Message,
    stored: bool,
}

impl Serialize for Form<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.message;
        let marked = self.stored && m.synthetic;
        let len =
            2 + usize::from(marked) + usize::from(m.tool_call_id.is_some()) + usize::from(!m.tool_calls.is_empty());
        // Keys in sorted order, as a JSON object writes them.
        let mut st = s.serialize_struct("Message", len)?;
        if marked {
            st.serialize_field("_swival_synthetic", &true)?;
        }
        st.serialize_field("content", &m.content)?;
        st.serialize_field("role", &m.role)?;
        if let Some(id) = &m.tool_call_id {
            st.serialize_field("tool_call_id", id)?;
        }
        if !m.tool_calls.is_empty() {
            st.serialize_field("tool_calls", &NestedCalls(&m.tool_calls))?;
        }
        st.end()
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Form { message: self, stored: true }.serialize(s)
    }
}

/// Tool calls in the chat API's nested form.
struct NestedCalls<'a>(&'a [ToolCall]);

impl Serialize for NestedCalls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Nested))
    }
}

/// One tool call in the chat API's nested form.
struct Nested<'a>(&'a ToolCall);

impl Serialize for Nested<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("function", &Function { arguments: &self.0.arguments, name: &self.0.name })?;
        map.serialize_entry("id", &self.0.id)?;
        map.serialize_entry("type", "function")?;
        map.end()
    }
}

#[derive(Serialize)]
struct Function<'a> {
    arguments: &'a str,
    name: &'a str,
}

/// A stored message as read back.
#[derive(Deserialize)]
struct Stored {
    role: Role,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<StoredCall>>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default, rename = "_swival_synthetic")]
    synthetic: bool,
}

#[derive(Deserialize)]
struct StoredCall {
    #[serde(default)]
    id: String,
    #[serde(default)]
    function: StoredFunction,
}

#[derive(Deserialize, Default)]
struct StoredFunction {
    #[serde(default)]
    name: String,
    #[serde(default)]
    arguments: String,
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Message, D::Error> {
        let s = Stored::deserialize(d).map_err(|e| D::Error::custom(format!("not a chat message: {e}")))?;
        let tool_calls = s
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .map(|c| ToolCall { id: c.id, name: c.function.name, arguments: c.function.arguments })
            .collect();
        Ok(Message {
            role: s.role,
            content: s.content,
            tool_calls,
            tool_call_id: s.tool_call_id,
            synthetic: s.synthetic,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_forms_keep_the_sorted_keys_of_a_json_object() {
        let nudge = Message::synthetic("go on");
        assert_eq!(nudge.stored(), json!({"role": "user", "content": "go on", "_swival_synthetic": true}).to_string());
        assert_eq!(nudge.wire().get(), json!({"role": "user", "content": "go on"}).to_string());
        let call = ToolCall { id: "c1".into(), name: "read_file".into(), arguments: "{}".into() };
        let turn = Message::assistant_turn(None, vec![call]);
        let expected = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]});
        assert_eq!(turn.stored(), expected.to_string());
        assert_eq!(turn.wire().get(), expected.to_string());
        let result = Message::tool_result("c1", "1: x");
        assert_eq!(result.stored(), json!({"role": "tool", "tool_call_id": "c1", "content": "1: x"}).to_string());
    }

    #[test]
    fn a_stored_message_reads_back_as_it_was() {
        let call = ToolCall { id: "c".into(), name: "grep".into(), arguments: r#"{"pattern":"x"}"#.into() };
        for m in [
            Message::system("s"),
            Message::synthetic("n"),
            Message::assistant_turn(Some("t".into()), vec![call]),
            Message::tool_result("c", "r"),
        ] {
            let back: Message = serde_json::from_str(&m.stored()).unwrap();
            assert_eq!(back, m);
        }
        let err = serde_json::from_str::<Message>(r#"{"role": "bot"}"#).unwrap_err();
        assert!(err.to_string().starts_with("not a chat message"), "{err}");
    }
}
