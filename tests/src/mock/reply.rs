//! What the mock sends back for a step: a JSON completion, an SSE stream,
//! an HTTP error, a broken or endless reply.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Answers one chat request as `step` says.
pub(super) async fn respond(step: Step, reply: &Reply, kill: &Notify) -> Response<Body> {
    match step {
        Step::Text { content, finish_reason } => reply.complete(Some(content), Vec::new(), finish_reason),
        Step::ToolCalls(calls) => reply.complete(None, calls, "tool_calls".to_owned()),
        Step::Empty => reply.complete(None, Vec::new(), "stop".to_owned()),
        Step::ReasoningOnly(reasoning) => reply.reasoning_then(&reasoning, ""),
        Step::Thinking { reasoning, text } => reply.reasoning_then(&reasoning, &text),
        Step::Status { code, body, retry_after } => {
            let mut response = json_response(code, body);
            if let Some(value) = retry_after.and_then(|v| HeaderValue::from_str(&v).ok()) {
                response.headers_mut().insert(RETRY_AFTER, value);
            }
            response
        }
        Step::NoChoices => reply.no_choices(),
        Step::Garbage => json_response(200, "<html>502 Bad Gateway</html> not JSON {{{".into()),
        Step::DropMidStream if reply.stream => {
            let mut events = reply.partial_events();
            events.truncate(3);
            sse_response(events, true)
        }
        Step::TruncatedSse if reply.stream => {
            let mut events = reply.partial_events();
            events.truncate(3);
            let cut = events[2].len() / 2;
            events[2].truncate(cut);
            sse_response(events, false)
        }
        Step::TruncatedSse => {
            let full = reply.completion_json(Some("this JSON never ends".into()), &[], "stop");
            let full = full.to_string();
            json_response(200, full[..full.len() / 2].to_owned())
        }
        Step::DropConnection | Step::DropMidStream => {
            kill.notify_one();
            std::future::pending().await
        }
        Step::Repeating { prefix, unit, call } => reply.repeating(&prefix, &unit, call),
        Step::Hang => std::future::pending().await,
        Step::Gated(..) => unreachable!("mock provider: gates are unwrapped before respond"),
    }
}

/// What a successful reply needs to know about its request.
pub(super) struct Reply {
    /// The completion id (`chatcmpl-mock-N`).
    pub(super) id: String,
    /// The model name echoed in the reply.
    pub(super) model: String,
    /// Whether the request asked for SSE.
    pub(super) stream: bool,
    /// Whether the request asked for a usage chunk in the stream.
    pub(super) include_usage: bool,
    /// A rough token count for the request, for `usage`.
    pub(super) prompt_tokens: u64,
    /// The tokens a prefix cache served, when the mock reports one.
    pub(super) cached_tokens: Option<u64>,
    /// Endless streams whose client went away, counted.
    pub(super) cut: Arc<AtomicUsize>,
}

/// Counts one endless stream ended, when dropped.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Reply {
    fn complete(&self, content: Option<String>, calls: Vec<ToolCall>, finish: String) -> Response<Body> {
        if self.stream {
            sse_response(self.events(content.as_deref(), &calls, &finish), false)
        } else {
            json_response(200, self.completion_json(content, &calls, &finish).to_string())
        }
    }

    /// `reasoning` as `reasoning_content`, then `text` as the content,
    /// streamed or not.
    fn reasoning_then(&self, reasoning: &str, text: &str) -> Response<Body> {
        if self.stream {
            let mut events = vec![self.chunk(json!({"role": "assistant", "content": ""}), None)];
            for piece in split(reasoning, 4) {
                events.push(self.chunk(json!({"reasoning_content": piece}), None));
            }
            if !text.is_empty() {
                events.push(self.chunk(json!({"content": text}), None));
            }
            events.push(self.chunk(json!({}), Some("stop")));
            events.push("data: [DONE]\n\n".to_owned());
            sse_response(events, false)
        } else {
            let mut full = self.completion_json(Some(text.to_owned()), &[], "stop");
            full["choices"][0]["message"]["reasoning_content"] = json!(reasoning);
            json_response(200, full.to_string())
        }
    }

    fn usage(&self, content: Option<&str>, calls: &[ToolCall]) -> Value {
        let chars = content.map_or(0, str::len) + calls.iter().map(|c| c.arguments.to_string().len()).sum::<usize>();
        let completion_tokens = chars as u64 / 4 + 1;
        let mut usage = json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": self.prompt_tokens + completion_tokens,
        });
        if let Some(cached) = self.cached_tokens {
            usage["prompt_tokens_details"] = json!({"cached_tokens": cached});
        }
        usage
    }

    fn completion_json(&self, content: Option<String>, calls: &[ToolCall], finish: &str) -> Value {
        let usage = self.usage(content.as_deref(), calls);
        let mut message = json!({"role": "assistant", "content": content});
        if !calls.is_empty() {
            let calls: Vec<Value> = calls
                .iter()
                .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}}))
                .collect();
            message["tool_calls"] = Value::Array(calls);
        }
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": CREATED,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        })
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> String {
        let chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {chunk}\n\n")
    }

    /// The SSE events for a reply, ending with `data: [DONE]`.
    fn events(&self, content: Option<&str>, calls: &[ToolCall], finish: &str) -> Vec<String> {
        let mut events = Vec::new();
        if calls.is_empty() {
            events.push(self.chunk(json!({"role": "assistant", "content": ""}), None));
            for piece in split(content.unwrap_or(""), 4) {
                events.push(self.chunk(json!({"content": piece}), None));
            }
        }
        for (index, call) in calls.iter().enumerate() {
            let mut delta = json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": ""}}]});
            if index == 0 {
                delta["role"] = json!("assistant");
                delta["content"] = Value::Null;
            }
            events.push(self.chunk(delta, None));
            for piece in split(&call.arguments.to_string(), 3) {
                let delta = json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
                events.push(self.chunk(delta, None));
            }
        }
        events.push(self.chunk(json!({}), Some(finish)));
        if let Some(cached) = self.cached_tokens {
            // As llama-server: its prompt counts in `timings`, in every stream.
            let timings = json!({"prompt_n": self.prompt_tokens.saturating_sub(cached), "cache_n": cached});
            let chunk = json!({"id": self.id, "object": "chat.completion.chunk", "created": CREATED,
                "model": self.model, "choices": [], "timings": timings});
            events.push(format!("data: {chunk}\n\n"));
        }
        if self.include_usage {
            let usage = self.usage(content, calls);
            let chunk = json!({"id": self.id, "object": "chat.completion.chunk", "created": CREATED,
                "model": self.model, "choices": [], "usage": usage});
            events.push(format!("data: {chunk}\n\n"));
        }
        events.push("data: [DONE]\n\n".to_owned());
        events
    }

    /// A reply repeating `unit` after `prefix`: without end when streamed
    /// (see [`Step::Repeating`]).
    fn repeating(&self, prefix: &str, unit: &str, call: Option<(String, String)>) -> Response<Body> {
        if !self.stream {
            let text = format!("{prefix}{}", unit.repeat(2000));
            return match call {
                None => self.complete(Some(text), Vec::new(), "length".to_owned()),
                Some((id, name)) => {
                    let call = ToolCall { id, name, arguments: Value::String(text) };
                    self.complete(None, vec![call], "length".to_owned())
                }
            };
        }
        let delta = |text: &str| match &call {
            None => json!({"content": text}),
            Some(_) => json!({"tool_calls": [{"index": 0, "function": {"arguments": text}}]}),
        };
        let first = match &call {
            None => json!({"role": "assistant", "content": ""}),
            Some((id, name)) => json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": id,
                "type": "function", "function": {"name": name, "arguments": ""}}]}),
        };
        let head = [self.chunk(first, None), self.chunk(delta(prefix), None)];
        let again = Bytes::from(self.chunk(delta(unit), None));
        // Counted when the body is dropped: the client went away.
        let endless = futures::stream::unfold(Counted(self.cut.clone()), move |counted| {
            let frame = Frame::data(again.clone());
            async move { Some((Ok(frame), counted)) }
        });
        let head = futures::stream::iter(head.map(|e| Ok(Frame::data(Bytes::from(e)))));
        stream_response(StreamBody::new(futures::StreamExt::chain(head, endless)).boxed())
    }

    /// A reply whose `choices` list is empty.
    fn no_choices(&self) -> Response<Body> {
        let body = json!({"id": self.id, "object": "chat.completion", "created": CREATED, "model": self.model,
            "choices": [], "usage": self.usage(None, &[])});
        if self.stream {
            let chunk = json!({"id": self.id, "object": "chat.completion.chunk", "created": CREATED,
                "model": self.model, "choices": [], "usage": self.usage(None, &[])});
            sse_response(vec![format!("data: {chunk}\n\n"), "data: [DONE]\n\n".to_owned()], false)
        } else {
            json_response(200, body.to_string())
        }
    }

    /// Events of a reply long enough to be cut after its third event.
    fn partial_events(&self) -> Vec<String> {
        self.events(Some("this reply is cut off before it ever ends"), &[], "stop")
    }
}

/// Splits `text` into at most `max` pieces of similar size (one piece when
/// the text is only a few characters), on char boundaries.
fn split(text: &str, max: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let pieces = if chars.len() <= 3 { 1 } else { max.min(chars.len()) };
    let size = chars.len().div_ceil(pieces);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

pub(super) fn json_response(code: u16, body: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).map_err(|never| match never {}).boxed());
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A chunked `text/event-stream` response sending `events` one frame each;
/// with `abort`, the connection is then closed without ending the body.
fn sse_response(events: Vec<String>, abort: bool) -> Response<Body> {
    let frames = futures::stream::iter(events.into_iter().map(|e| Ok(Frame::data(Bytes::from(e)))));
    let body = if abort {
        let failure = futures::stream::once(async {
            // Let hyper flush the frames sent so far before the abort.
            tokio::task::yield_now().await;
            Err(std::io::Error::other("mock provider: dropped mid-stream"))
        });
        StreamBody::new(futures::StreamExt::chain(frames, failure)).boxed()
    } else {
        StreamBody::new(frames).boxed()
    };
    stream_response(body)
}

/// A `text/event-stream` response of `body`.
fn stream_response(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    response
}
