//! A conversation's messages, typed: OpenAI chat messages with roles as an
//! enum, tool calls as values, and the daemon's own marks as fields.
//!
//! A message has two JSON forms, both made as a JSON object with its keys
//! inserted in the order swivald has always written them (`role`,
//! `tool_call_id`, `content`, `tool_calls`, then the marks), so they come
//! out byte for byte as before whichever order serde_json keeps:
//! - stored: what the store keeps, internal marks included
//!   (`_swival_synthetic`);
//! - wire ([`Message::wire`]): what a provider is sent, without them.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

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

/// One message of a conversation. Its fields are private: a message is
/// made by the constructor of its role, so a tool result always answers a
/// call id, only an assistant turn calls tools, and only a tool result has
/// notes for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who says it.
    role: Role,
    /// Its text; `None` only for an assistant turn that only calls tools.
    content: Option<String>,
    /// The tool calls of an assistant turn, in order.
    tool_calls: Vec<ToolCall>,
    /// The call a `tool` message answers (always set for one).
    tool_call_id: Option<String>,
    /// Written by the daemon, not by the user (nudges, named files, notes):
    /// stored, never sent.
    synthetic: bool,
    /// In a tool result, where the notes for the model begin (a guard's
    /// hint, a repair note): stored, never sent; what comes before is the
    /// tool's own output (`continue.md` quotes only that).
    notes_at: Option<usize>,
}

impl Message {
    /// A message of `role` (not a tool result) saying `content`.
    fn new(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
            synthetic: false,
            notes_at: None,
        }
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
        Message { role: Role::Assistant, content, tool_calls, tool_call_id: None, synthetic: false, notes_at: None }
    }

    /// The result of call `id`.
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>) -> Message {
        Message { tool_call_id: Some(id.into()), ..Message::new(Role::Tool, content) }
    }

    /// The result of call `id` whose notes for the model begin at
    /// `notes_at` of `content`.
    pub fn tool_result_with_notes(
        id: impl Into<String>,
        content: impl Into<String>,
        notes_at: Option<usize>,
    ) -> Message {
        Message { notes_at, ..Message::tool_result(id, content) }
    }

    /// Who says it.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Its text; `None` for an assistant turn that only calls tools.
    pub fn content(&self) -> Option<&str> {
        self.content.as_deref()
    }

    /// Its text from now on; `None` counts as empty but in an assistant turn.
    pub fn set_content(&mut self, content: Option<String>) {
        self.content = match self.role {
            Role::Assistant => content,
            _ => Some(content.unwrap_or_default()),
        };
    }

    /// The tool calls of an assistant turn.
    pub fn tool_calls(&self) -> &[ToolCall] {
        &self.tool_calls
    }

    /// The tool calls of an assistant turn, to change; `None` for any
    /// other message.
    pub fn tool_calls_mut(&mut self) -> Option<&mut Vec<ToolCall>> {
        (self.role == Role::Assistant).then_some(&mut self.tool_calls)
    }

    /// The call a tool result answers.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.tool_call_id.as_deref()
    }

    /// Whether the daemon wrote it.
    pub fn is_synthetic(&self) -> bool {
        self.synthetic
    }

    /// Forget where the notes begin (the text was cut).
    pub fn drop_notes_mark(&mut self) {
        self.notes_at = None;
    }

    /// The tool's own output in a tool result (the text without the notes
    /// for the model); the text of any other message.
    pub fn own_text(&self) -> &str {
        crate::toolcall::own_text(self.text(), self.notes_at)
    }

    /// The text, or `""`.
    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }

    /// The message serialised as a provider is sent it.
    pub fn wire(&self) -> Box<RawValue> {
        serde_json::value::to_raw_value(&self.object(false)).expect("a message serializes")
    }

    /// The message serialised as it is stored.
    pub fn stored(&self) -> String {
        self.to_value().to_string()
    }

    /// The message as a JSON value in its stored form (what hooks and
    /// filters are shown).
    pub fn to_value(&self) -> Value {
        Value::Object(self.object(true))
    }

    /// The message as a JSON object, with its marks when `stored`.
    fn object(&self, stored: bool) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("role".into(), Value::from(self.role.as_str()));
        if let Some(id) = &self.tool_call_id {
            m.insert("tool_call_id".into(), Value::from(id.as_str()));
        }
        m.insert("content".into(), self.content.as_deref().map_or(Value::Null, Value::from));
        if !self.tool_calls.is_empty() {
            m.insert("tool_calls".into(), Value::Array(self.tool_calls.iter().map(ToolCall::nested).collect()));
        }
        if stored && self.synthetic {
            m.insert("_swival_synthetic".into(), Value::Bool(true));
        }
        if let Some(at) = self.notes_at.filter(|_| stored) {
            m.insert("_swival_notes_at".into(), Value::from(at));
        }
        m
    }
}

impl Message {
    /// The message as `session/get` shows it: typed by role, with the
    /// synthetic mark as a field and what only the daemon reads left out.
    pub fn item(&self) -> swival_protocol::ConversationItem {
        use swival_protocol::{ConversationItem, FunctionCall, ToolCallItem};
        let content = || self.content.clone().unwrap_or_default();
        match self.role {
            Role::System => ConversationItem::System { content: content() },
            Role::User => ConversationItem::User { content: content(), synthetic: self.synthetic },
            Role::Assistant => ConversationItem::Assistant {
                content: self.content.clone(),
                tool_calls: self
                    .tool_calls
                    .iter()
                    .map(|c| ToolCallItem {
                        id: c.id.clone(),
                        kind: "function".to_owned(),
                        function: FunctionCall { name: c.name.clone(), arguments: c.arguments.clone() },
                    })
                    .collect(),
                synthetic: self.synthetic,
            },
            Role::Tool => ConversationItem::Tool {
                tool_call_id: self.tool_call_id.clone().unwrap_or_default(),
                content: content(),
            },
        }
    }
}

impl ToolCall {
    /// The call in the chat API's nested form.
    fn nested(&self) -> Value {
        let mut function = Map::new();
        function.insert("name".into(), Value::from(self.name.as_str()));
        function.insert("arguments".into(), Value::from(self.arguments.as_str()));
        let mut call = Map::new();
        call.insert("id".into(), Value::from(self.id.as_str()));
        call.insert("type".into(), Value::from("function"));
        call.insert("function".into(), Value::Object(function));
        Value::Object(call)
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.object(true).serialize(s)
    }
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
    #[serde(default, rename = "_swival_notes_at")]
    notes_at: Option<usize>,
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
        let tool_calls: Vec<ToolCall> = tool_calls;
        if !tool_calls.is_empty() && s.role != Role::Assistant {
            return Err(D::Error::custom(format!("not a chat message: tool calls in a {} message", s.role.as_str())));
        }
        // What the role allows of the rest; a tool result's id as stored
        // (every writer wrote one).
        let tool = s.role == Role::Tool;
        let content = match s.role {
            Role::Assistant => s.content,
            _ => Some(s.content.unwrap_or_default()),
        };
        Ok(Message {
            role: s.role,
            content,
            tool_calls,
            tool_call_id: tool.then(|| s.tool_call_id.unwrap_or_default()),
            synthetic: s.synthetic && matches!(s.role, Role::User | Role::Assistant),
            notes_at: s.notes_at.filter(|_| tool),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_forms_are_the_json_objects_swivald_always_wrote() {
        // A `json!` object keeps (or sorts) its keys as serde_json is built
        // to; a message's forms follow the same rule.
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
            Message::tool_result_with_notes("c", "r\nhint", Some(1)),
        ] {
            let back: Message = serde_json::from_str(&m.stored()).unwrap();
            assert_eq!(back, m);
        }
        let err = serde_json::from_str::<Message>(r#"{"role": "bot"}"#).unwrap_err();
        assert!(err.to_string().starts_with("not a chat message"), "{err}");
    }

    #[test]
    fn a_message_holds_only_what_its_role_allows() {
        let mut user = Message::user("u");
        user.set_content(None);
        assert_eq!(user.content(), Some(""), "only an assistant turn may have no text");
        assert!(user.tool_calls_mut().is_none(), "only an assistant turn calls tools");
        let mut turn = Message::assistant_turn(Some("t".into()), Vec::new());
        turn.set_content(None);
        assert_eq!(turn.content(), None);
        assert!(turn.tool_calls_mut().is_some());
        // Read back from the store: what a role cannot hold is refused or
        // left out, never kept beside it.
        let calls = r#"{"role": "user", "content": "x", "tool_calls": [{"id": "c", "function": {"name": "grep"}}]}"#;
        let err = serde_json::from_str::<Message>(calls).unwrap_err().to_string();
        assert!(err.contains("tool calls in a user message"), "{err}");
        let marks = r#"{"role": "system", "content": "s", "_swival_synthetic": true, "_swival_notes_at": 0}"#;
        assert_eq!(serde_json::from_str::<Message>(marks).unwrap(), Message::system("s"));
        let bare = serde_json::from_str::<Message>(r#"{"role": "tool", "content": "r"}"#).unwrap();
        assert_eq!(bare.tool_call_id(), Some(""), "a result keeps its place, answering no call");
    }
}
