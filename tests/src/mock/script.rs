//! The script a test gives the mock: its steps, and the gate that holds
//! gated replies.

use super::*;

/// One scripted provider behaviour, consumed by one chat request.
#[derive(Debug, Clone)]
pub enum Step {
    /// An assistant text reply.
    Text {
        /// The assistant's message content.
        content: String,
        /// The `finish_reason` reported with it (`stop`, `length`, ...).
        finish_reason: String,
    },
    /// An assistant message calling tools, with `content: null`.
    ToolCalls(Vec<ToolCall>),
    /// A reply with neither content nor tool calls.
    Empty,
    /// A reply whose only text is its `reasoning_content` (empty content,
    /// no tool calls), as reasoning models send.
    ReasoningOnly(String),
    /// A reply with `reasoning_content` and then its answer text.
    Thinking {
        /// The reasoning.
        reasoning: String,
        /// The answer.
        text: String,
    },
    /// A bare HTTP status with a body (errors, rate limits).
    Status {
        /// The HTTP status code.
        code: u16,
        /// The response body, sent as `application/json`.
        body: String,
        /// The `Retry-After` header value, if any.
        retry_after: Option<String>,
    },
    /// A 200 reply whose `choices` list is empty (streamed: one usage-only
    /// chunk, then `[DONE]`).
    NoChoices,
    /// A 200 response whose body is not JSON.
    Garbage,
    /// Close the socket without sending any response.
    DropConnection,
    /// Streaming: status 200 and a few chunks, then close without `[DONE]`.
    /// Non-streaming: same as [`Step::DropConnection`].
    DropMidStream,
    /// A body that ends cleanly in the middle of a JSON chunk.
    TruncatedSse,
    /// A reply that repeats itself without end, as a small local model in
    /// a loop: streamed, `prefix` then `unit` again and again until the
    /// client goes away (counted: [`MockProvider::streams_cut`]); not
    /// streamed, `prefix` and `unit` 2,000 times. With `call` (id, name),
    /// they are that tool call's arguments; else the reply's text.
    Repeating {
        /// What comes before the loop.
        prefix: String,
        /// What is repeated.
        unit: String,
        /// The tool call whose arguments they are: its id and name.
        call: Option<(String, String)>,
    },
    /// Never answer (until the mock is dropped).
    Hang,
    /// Hold the inner step until the gate is opened.
    Gated(Box<Step>, Gate),
}

/// One tool call in a scripted reply.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The call id the model gives it (`call_1`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments; sent as a JSON-encoded string, as OpenAI does.
    pub arguments: Value,
}

impl Step {
    /// A text reply with `finish_reason: "stop"`.
    pub fn text(content: impl Into<String>) -> Step {
        Step::text_with_finish(content, "stop")
    }

    /// A text reply with the given finish reason (e.g. `"length"`).
    pub fn text_with_finish(content: impl Into<String>, finish_reason: &str) -> Step {
        Step::Text { content: content.into(), finish_reason: finish_reason.to_owned() }
    }

    /// A reply calling tools: `(id, name, arguments)` per call.
    pub fn tool_calls(calls: Vec<(&str, &str, Value)>) -> Step {
        Step::ToolCalls(
            calls
                .into_iter()
                .map(|(id, name, arguments)| ToolCall { id: id.to_owned(), name: name.to_owned(), arguments })
                .collect(),
        )
    }

    /// A reply calling a single tool.
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> Step {
        Step::tool_calls(vec![(id, name, arguments)])
    }

    /// A reply whose only text is its `reasoning_content`.
    pub fn reasoning_only(reasoning: impl Into<String>) -> Step {
        Step::ReasoningOnly(reasoning.into())
    }

    /// A reply with `reasoning_content`, then `text` as its answer.
    pub fn thinking(reasoning: impl Into<String>, text: impl Into<String>) -> Step {
        Step::Thinking { reasoning: reasoning.into(), text: text.into() }
    }

    /// A reply with no content and no tool calls.
    pub fn empty() -> Step {
        Step::Empty
    }

    /// A bare HTTP status with this body.
    pub fn status(code: u16, body: impl Into<String>) -> Step {
        Step::Status { code, body: body.into(), retry_after: None }
    }

    /// An HTTP error with an OpenAI-style body
    /// `{"error":{"message":..,"type":..}}`.
    pub fn error(code: u16, message: &str, kind: &str) -> Step {
        Step::status(code, error_body(message, kind))
    }

    /// Adds a `Retry-After` header to a [`Step::Status`] step.
    pub fn with_retry_after(self, value: impl fmt::Display) -> Step {
        match self {
            Step::Status { code, body, .. } => Step::Status { code, body, retry_after: Some(value.to_string()) },
            other => panic!("mock: with_retry_after applies to Step::status only, not {other:?}"),
        }
    }

    /// A 200 reply with `choices: []`.
    pub fn no_choices() -> Step {
        Step::NoChoices
    }

    /// A 200 response with a body that is not JSON.
    pub fn garbage() -> Step {
        Step::Garbage
    }

    /// Close the connection without answering.
    pub fn drop_connection() -> Step {
        Step::DropConnection
    }

    /// Start an SSE stream, then close the connection without `[DONE]`.
    pub fn drop_mid_stream() -> Step {
        Step::DropMidStream
    }

    /// An SSE body that stops in the middle of a JSON chunk.
    pub fn truncated_sse() -> Step {
        Step::TruncatedSse
    }

    /// Text that starts with `prefix`, then repeats `unit` without end.
    pub fn repeating(prefix: &str, unit: &str) -> Step {
        Step::Repeating { prefix: prefix.to_owned(), unit: unit.to_owned(), call: None }
    }

    /// A call of `name` whose arguments start with `prefix` (raw JSON
    /// text), then repeat `unit` without end.
    pub fn repeating_call(id: &str, name: &str, prefix: &str, unit: &str) -> Step {
        let call = Some((id.to_owned(), name.to_owned()));
        Step::Repeating { prefix: prefix.to_owned(), unit: unit.to_owned(), call }
    }

    /// Never answer.
    pub fn hang() -> Step {
        Step::Hang
    }

    /// Hold `step` until `gate` is opened.
    pub fn gated(step: Step, gate: &Gate) -> Step {
        Step::Gated(Box::new(step), gate.clone())
    }
}

/// A latch holding [`Step::gated`] replies until the test calls [`Gate::open`].
/// Clones share the latch; opening it before the request arrives is fine.
#[derive(Clone)]
pub struct Gate {
    /// `true` once opened; waiters watch it.
    opened: Arc<watch::Sender<bool>>,
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        Gate { opened: Arc::new(watch::Sender::new(false)) }
    }

    /// Releases every reply held by this gate, now and later.
    pub fn open(&self) {
        self.opened.send_replace(true);
    }

    /// Whether [`Gate::open`] has been called.
    pub fn is_open(&self) -> bool {
        *self.opened.borrow()
    }

    pub(super) async fn wait(&self) {
        let mut rx = self.opened.subscribe();
        // The sender lives in `self`, so this only returns once opened.
        let _ = rx.wait_for(|opened| *opened).await;
    }
}

impl Default for Gate {
    fn default() -> Gate {
        Gate::new()
    }
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate").field("open", &self.is_open()).finish()
    }
}
