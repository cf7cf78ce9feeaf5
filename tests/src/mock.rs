//! The in-process mock OpenAI-compatible provider that stands in for the LLM
//! in every end-to-end test and in the benchmark.
//!
//! A test writes a script of [`Step`]s (text replies, tool calls, HTTP errors,
//! broken streams, hangs) and points the daemon at [`MockProvider::base_url`].
//! Each `POST /v1/chat/completions` consumes the next step, answering in SSE
//! when the request asks for `"stream": true`. Every request is logged so a
//! test can assert on what the provider saw. The server runs on its own
//! thread and runtime, answers with zero added latency unless
//! [`MockProvider::with_latency`] sets one, keeps connections alive, and
//! stops when the [`MockProvider`] is dropped.

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch, Notify};

/// The reply content used once the script has run out.
pub const EXHAUSTED_REPLY: &str = "(mock script exhausted)";

/// Safety net for [`MockProvider::wait_for_requests`]; no test relies on it.
const WAIT_LIMIT: Duration = Duration::from_secs(60);

/// Fixed `created` timestamp so replies are deterministic.
const CREATED: u64 = 1_700_000_000;

type Body = BoxBody<Bytes, std::io::Error>;

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

    async fn wait(&self) {
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

/// One chat request as the mock received it.
struct Recorded {
    /// The parsed body (a JSON string holding the raw text if it did not parse).
    body: Value,
    /// Headers, names lowercased.
    headers: HashMap<String, String>,
    /// When it arrived and when its answer started (`None` until then).
    times: RequestTimes,
}

/// When one chat request arrived and when the mock started answering it.
#[derive(Debug, Clone, Copy)]
pub struct RequestTimes {
    /// Its body was read.
    pub arrived: Instant,
    /// Its answer started (after any gate and latency); `None` until then.
    pub answered: Option<Instant>,
}

/// Everything the server and the test share.
struct State {
    /// Steps not yet consumed, in order.
    script: VecDeque<Step>,
    /// Every chat request, in arrival order.
    log: Vec<Recorded>,
    /// How many chat requests found the script empty.
    exhausted_hits: usize,
    /// The model id advertised by `/v1/models` and echoed in replies.
    model: String,
    /// The context length advertised by `/v1/models`.
    context_length: u64,
    /// Drop, unanswered, every chat request that arrives on a connection
    /// that already served one (a server that closed an idle keep-alive
    /// connection the client still pools).
    stale_keep_alive: bool,
    /// Requests dropped that way.
    stale_drops: usize,
    /// How long every chat request waits before it is answered.
    latency: Duration,
}

/// The shared state and the condvar signalled on every chat request.
struct Shared {
    /// The state proper.
    state: Mutex<State>,
    /// Notified whenever a chat request is logged.
    arrived: Condvar,
}

impl Shared {
    /// Whether a request on a reused connection is to be dropped (and
    /// counted).
    fn take_stale_drop(&self) -> bool {
        let mut state = self.lock();
        state.stale_drops += usize::from(state.stale_keep_alive);
        state.stale_keep_alive
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test must not turn into a cascade of poison errors.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The running mock server; dropping it stops the server.
pub struct MockProvider {
    /// State shared with the server thread.
    shared: Arc<Shared>,
    /// The address the server listens on.
    addr: SocketAddr,
    /// Tells the accept loop to stop; taken on drop.
    shutdown: Option<oneshot::Sender<()>>,
    /// The server thread, joined on drop.
    thread: Option<JoinHandle<()>>,
}

impl MockProvider {
    /// Behave like a server that closes idle keep-alive connections: a
    /// chat request on a connection that already served one is dropped
    /// unanswered (and consumes no step).
    pub fn with_stale_keep_alive(self) -> MockProvider {
        self.shared.lock().stale_keep_alive = true;
        self
    }

    /// Chat requests dropped by [`MockProvider::with_stale_keep_alive`].
    pub fn stale_drops(&self) -> usize {
        self.shared.lock().stale_drops
    }

    /// Starts a server on `127.0.0.1:0` that plays `script`. Needs no runtime
    /// from the caller.
    pub fn start(script: Vec<Step>) -> MockProvider {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("mock provider: cannot bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("mock provider: cannot make the listener non-blocking");
        let addr = listener.local_addr().expect("mock provider: no local addr");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                script: script.into(),
                log: Vec::new(),
                exhausted_hits: 0,
                model: "mock-model".to_owned(),
                context_length: 32768,
                stale_keep_alive: false,
                stale_drops: 0,
                latency: Duration::ZERO,
            }),
            arrived: Condvar::new(),
        });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mock-provider")
            .enable_all()
            .build()
            .expect("mock provider: cannot build its tokio runtime");
        let (tx, rx) = oneshot::channel();
        let server_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("mock-provider".to_owned())
            .spawn(move || {
                runtime.block_on(accept_loop(listener, server_shared, rx));
                // Dropping the runtime cancels every connection, hung ones too.
                drop(runtime);
            })
            .expect("mock provider: cannot spawn its thread");
        MockProvider { shared, addr, shutdown: Some(tx), thread: Some(thread) }
    }

    /// Sets the model id advertised and echoed (default `mock-model`).
    pub fn with_model(self, model: &str) -> MockProvider {
        self.shared.lock().model = model.to_owned();
        self
    }

    /// Sets the context length advertised by `/v1/models` (default 32768).
    pub fn with_context_length(self, context_length: u64) -> MockProvider {
        self.shared.lock().context_length = context_length;
        self
    }

    /// Answers every chat request `latency` after it arrived (after any
    /// gate opened), like a model taking its time; the default is zero.
    pub fn with_latency(self, latency: Duration) -> MockProvider {
        self.shared.lock().latency = latency;
        self
    }

    /// When each chat request arrived and was answered, in arrival order.
    pub fn request_times(&self) -> Vec<RequestTimes> {
        self.shared.lock().log.iter().map(|r| r.times).collect()
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends a step to the script.
    pub fn push(&self, step: Step) {
        self.shared.lock().script.push_back(step);
    }

    /// How many steps are left unconsumed.
    pub fn remaining_steps(&self) -> usize {
        self.shared.lock().script.len()
    }

    /// How many chat requests arrived after the script ran out.
    pub fn exhausted_hits(&self) -> usize {
        self.shared.lock().exhausted_hits
    }

    /// How many chat requests have arrived.
    pub fn request_count(&self) -> usize {
        self.shared.lock().log.len()
    }

    /// The body of every chat request, in arrival order.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.lock().log.iter().map(|r| r.body.clone()).collect()
    }

    /// The headers of every chat request (names lowercased), in arrival order.
    pub fn request_headers(&self) -> Vec<HashMap<String, String>> {
        let state = self.shared.lock();
        state.log.iter().map(|r| r.headers.clone()).collect()
    }

    /// Every chat request body as JSON text, one per line, for "the provider
    /// never saw X" assertions.
    pub fn requests_text(&self) -> String {
        let state = self.shared.lock();
        let bodies: Vec<String> = state.log.iter().map(|r| r.body.to_string()).collect();
        bodies.join("\n")
    }

    /// The tool results the model was shown in any request, by call id.
    pub fn tool_results(&self) -> HashMap<String, String> {
        let mut out = HashMap::new();
        for req in self.requests() {
            for m in req["messages"].as_array().into_iter().flatten().filter(|m| m["role"] == "tool") {
                let id = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
                out.insert(id, m["content"].as_str().unwrap_or_default().to_owned());
            }
        }
        out
    }

    /// Blocks until at least `n` chat requests have arrived; panics after a
    /// generous safety limit.
    pub fn wait_for_requests(&self, n: usize) {
        let deadline = Instant::now() + WAIT_LIMIT;
        let mut state = self.shared.lock();
        while state.log.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let got = state.log.len();
                drop(state);
                panic!("mock provider: waited {WAIT_LIMIT:?} for {n} chat requests, only {got} arrived");
            }
            state = self.shared.arrived.wait_timeout(state, left).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_loop(listener: std::net::TcpListener, shared: Arc<Shared>, mut shutdown: oneshot::Receiver<()>) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("mock provider: cannot register the listener");
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve_connection(stream, shared.clone()));
            }
        }
    }
}

/// Serves one keep-alive connection until the peer closes it or a step asks
/// to drop it (by notifying `kill`, which drops the socket unanswered).
async fn serve_connection(stream: tokio::net::TcpStream, shared: Arc<Shared>) {
    let kill = Arc::new(Notify::new());
    let service_kill = kill.clone();
    let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let service = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        let kill = service_kill.clone();
        let earlier = served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            if earlier > 0 && req.uri().path() == "/v1/chat/completions" && shared.take_stale_drop() {
                kill.notify_one();
                return Ok::<_, Infallible>(std::future::pending::<Response<Body>>().await);
            }
            Ok::<_, Infallible>(route(req, &shared, &kill).await)
        }
    });
    let conn =
        hyper::server::conn::http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = conn => {}
        _ = kill.notified() => {}
    }
}

async fn route(req: Request<Incoming>, shared: &Shared, kill: &Notify) -> Response<Body> {
    match (req.method(), req.uri().path()) {
        (&Method::POST, "/v1/chat/completions") => chat(req, shared, kill).await,
        (&Method::GET, "/v1/models") => {
            let state = shared.lock();
            let model = json!({"id": state.model, "object": "model", "context_length": state.context_length});
            json_response(200, json!({"object": "list", "data": [model]}).to_string())
        }
        (method, path) => {
            let message = format!("mock provider: no route for {method} {path}");
            json_response(404, error_body(&message, "not_found"))
        }
    }
}

/// Logs a chat request, takes its step, waits out any gate, and answers.
async fn chat(req: Request<Incoming>, shared: &Shared, kill: &Notify) -> Response<Body> {
    let headers = header_map(req.headers());
    let Ok(raw) = req.into_body().collect().await.map(|c| c.to_bytes()) else {
        let message = "mock provider: unreadable request body";
        return json_response(400, error_body(message, "invalid_request_error"));
    };
    let parsed = serde_json::from_slice::<Value>(&raw).ok();
    let Some((mut step, number, model, latency)) = shared.record(&raw, parsed.clone(), headers) else {
        let message = "mock provider: request body is not JSON";
        return json_response(400, error_body(message, "invalid_request_error"));
    };
    while let Step::Gated(inner, gate) = step {
        gate.wait().await;
        step = *inner;
    }
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    shared.lock().log[number - 1].times.answered = Some(Instant::now());
    let body = parsed.unwrap_or_default();
    let reply = Reply {
        id: format!("chatcmpl-mock-{number}"),
        model,
        stream: body.get("stream").and_then(Value::as_bool) == Some(true),
        include_usage: body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true)),
        prompt_tokens: raw.len() as u64 / 4 + 1,
    };
    respond(step, &reply, kill).await
}

impl Shared {
    /// Logs a chat request and takes the step that answers it: `None` for a
    /// body that is not JSON (it does not consume the step meant for a good
    /// request), the fallback text once the script is exhausted. Also returns
    /// the request's number (from 1), the model name and the latency.
    fn record(
        &self,
        raw: &[u8],
        parsed: Option<Value>,
        headers: HashMap<String, String>,
    ) -> Option<(Step, usize, String, Duration)> {
        let mut state = self.lock();
        let ok = parsed.is_some();
        let body = parsed.unwrap_or_else(|| Value::String(String::from_utf8_lossy(raw).into()));
        let times = RequestTimes { arrived: Instant::now(), answered: None };
        state.log.push(Recorded { body, headers, times });
        self.arrived.notify_all();
        if !ok {
            return None;
        }
        let step = state.script.pop_front().unwrap_or_else(|| {
            state.exhausted_hits += 1;
            Step::text(EXHAUSTED_REPLY)
        });
        Some((step, state.log.len(), state.model.clone(), state.latency))
    }
}

/// Answers one chat request as `step` says.
async fn respond(step: Step, reply: &Reply, kill: &Notify) -> Response<Body> {
    match step {
        Step::Text { content, finish_reason } => reply.complete(Some(content), Vec::new(), finish_reason),
        Step::ToolCalls(calls) => reply.complete(None, calls, "tool_calls".to_owned()),
        Step::Empty => reply.complete(None, Vec::new(), "stop".to_owned()),
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
        Step::Hang => std::future::pending().await,
        Step::Gated(..) => unreachable!("mock provider: gates are unwrapped before respond"),
    }
}

/// Request headers with lowercased names; repeated headers joined by ", ".
fn header_map(headers: &hyper::HeaderMap) -> HashMap<String, String> {
    let mut map: HashMap<String, String> = HashMap::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        map.entry(name.as_str().to_owned()).and_modify(|old| *old = format!("{old}, {value}")).or_insert(value);
    }
    map
}

/// An OpenAI-style error body.
fn error_body(message: &str, kind: &str) -> String {
    json!({"error": {"message": message, "type": kind}}).to_string()
}

/// What a successful reply needs to know about its request.
struct Reply {
    /// The completion id (`chatcmpl-mock-N`).
    id: String,
    /// The model name echoed in the reply.
    model: String,
    /// Whether the request asked for SSE.
    stream: bool,
    /// Whether the request asked for a usage chunk in the stream.
    include_usage: bool,
    /// A rough token count for the request, for `usage`.
    prompt_tokens: u64,
}

impl Reply {
    fn complete(&self, content: Option<String>, calls: Vec<ToolCall>, finish: String) -> Response<Body> {
        if self.stream {
            sse_response(self.events(content.as_deref(), &calls, &finish), false)
        } else {
            json_response(200, self.completion_json(content, &calls, &finish).to_string())
        }
    }

    fn usage(&self, content: Option<&str>, calls: &[ToolCall]) -> Value {
        let chars = content.map_or(0, str::len) + calls.iter().map(|c| c.arguments.to_string().len()).sum::<usize>();
        let completion_tokens = chars as u64 / 4 + 1;
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": self.prompt_tokens + completion_tokens,
        })
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
        if self.include_usage {
            let usage = self.usage(content, calls);
            let chunk = json!({"id": self.id, "object": "chat.completion.chunk", "created": CREATED,
                "model": self.model, "choices": [], "usage": usage});
            events.push(format!("data: {chunk}\n\n"));
        }
        events.push("data: [DONE]\n\n".to_owned());
        events
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

fn json_response(code: u16, body: String) -> Response<Body> {
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
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;
    use std::sync::mpsc;

    /// A response as read off the wire by the raw test client.
    struct Raw {
        /// The status code.
        status: u16,
        /// Headers, names lowercased.
        headers: HashMap<String, String>,
        /// The (de-chunked) body.
        body: String,
        /// Whether the body ended as HTTP says it should.
        complete: bool,
    }

    /// A keep-alive HTTP/1.1 client over a plain TCP stream.
    struct Client {
        /// The connection, buffered for reading.
        conn: BufReader<TcpStream>,
    }

    impl Client {
        fn connect(mock: &MockProvider) -> Client {
            let stream = TcpStream::connect(mock.addr()).expect("connect to mock");
            stream.set_read_timeout(Some(WAIT_LIMIT)).expect("read timeout");
            Client { conn: BufReader::new(stream) }
        }

        fn send(&mut self, method: &str, path: &str, body: &str) -> Option<Raw> {
            let request = format!(
                "{method} {path} HTTP/1.1\r\nHost: mock\r\nAuthorization: Bearer sk-test\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            self.conn.get_mut().write_all(request.as_bytes()).expect("write request");
            self.read_response()
        }

        fn chat(&mut self, body: Value) -> Raw {
            self.send("POST", "/v1/chat/completions", &body.to_string())
                .expect("mock closed the connection without a response")
        }

        /// Reads one response; `None` when the connection closed first.
        fn read_response(&mut self) -> Option<Raw> {
            let r = &mut self.conn;
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return None;
            }
            let status = line.split_whitespace().nth(1)?.parse().ok()?;
            let mut headers = HashMap::new();
            loop {
                line.clear();
                r.read_line(&mut line).ok()?;
                let Some((k, v)) = line.trim_end().split_once(':') else {
                    break;
                };
                headers.insert(k.to_ascii_lowercase(), v.trim().to_owned());
            }
            let (mut body, mut complete) = (Vec::new(), true);
            if let Some(len) = headers.get("content-length") {
                body = vec![0; len.parse().ok()?];
                complete = r.read_exact(&mut body).is_ok();
            } else if headers.get("transfer-encoding").map(String::as_str) == Some("chunked") {
                loop {
                    line.clear();
                    let size = match r.read_line(&mut line) {
                        Ok(n) if n > 0 => usize::from_str_radix(line.trim(), 16).ok()?,
                        _ => {
                            complete = false;
                            break;
                        }
                    };
                    let mut chunk = vec![0; size + 2];
                    if r.read_exact(&mut chunk).is_err() {
                        complete = false;
                        break;
                    }
                    if size == 0 {
                        break;
                    }
                    body.extend_from_slice(&chunk[..size]);
                }
            } else {
                r.read_to_end(&mut body).ok()?;
            }
            let body = String::from_utf8_lossy(&body).into_owned();
            Some(Raw { status, headers, body, complete })
        }
    }

    fn chat_once(mock: &MockProvider, body: Value) -> Raw {
        Client::connect(mock).chat(body)
    }

    fn json_body(raw: &Raw) -> Value {
        serde_json::from_str(&raw.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", raw.body))
    }

    /// The `data:` payloads of an SSE body, in order.
    fn sse_data(body: &str) -> Vec<String> {
        body.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_owned).collect()
    }

    fn stream_request() -> Value {
        json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
               "messages": [{"role": "user", "content": "hi"}]})
    }

    #[test]
    fn scripted_text_reply_is_a_chat_completion() {
        let mock = MockProvider::start(vec![Step::text("hello there")]);
        let raw = chat_once(&mock, json!({"model": "m", "messages": []}));
        assert_eq!(raw.status, 200);
        let reply = json_body(&raw);
        assert_eq!(reply["object"], "chat.completion");
        assert_eq!(reply["choices"][0]["message"]["content"], "hello there");
        assert_eq!(reply["choices"][0]["finish_reason"], "stop");
        let usage = &reply["usage"];
        let sum = usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap();
        assert_eq!(usage["total_tokens"].as_u64(), Some(sum));
    }

    #[test]
    fn tool_calls_reply_has_openai_shape() {
        let args = json!({"path": "src/main.rs"});
        let mock = MockProvider::start(vec![Step::tool_calls(vec![("call_1", "read_file", args.clone())])]);
        let reply = json_body(&chat_once(&mock, json!({"messages": []})));
        let choice = &reply["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls");
        assert!(choice["message"]["content"].is_null());
        let call = &choice["message"]["tool_calls"][0];
        assert_eq!(call["id"], "call_1");
        assert_eq!(call["type"], "function");
        assert_eq!(call["function"]["name"], "read_file");
        let sent: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(sent, args);
    }

    #[test]
    fn sse_text_stream_ends_with_done_and_deltas_concatenate() {
        let text = "The quick brown fox jumps over the lazy dog.";
        let mock = MockProvider::start(vec![Step::text(text)]);
        let raw = chat_once(&mock, stream_request());
        assert_eq!(raw.headers["content-type"], "text/event-stream");
        let data = sse_data(&raw.body);
        assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
        let chunks: Vec<Value> = data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
        let deltas: Vec<&str> = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .filter(|s| !s.is_empty())
            .collect();
        assert!(deltas.len() >= 2, "text should arrive in several deltas: {deltas:?}");
        assert_eq!(deltas.concat(), text);
        assert!(chunks.iter().any(|c| c["choices"][0]["finish_reason"] == "stop"));
        assert!(chunks.last().unwrap()["usage"]["total_tokens"].is_u64());
    }

    #[test]
    fn sse_tool_call_arguments_arrive_in_fragments() {
        let args = json!({"path": "a.txt", "content": "some longer text here"});
        let mock = MockProvider::start(vec![Step::tool_call("call_9", "write_file", args.clone())]);
        let raw = chat_once(&mock, stream_request());
        let data = sse_data(&raw.body);
        let chunks: Vec<Value> = data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
        let calls: Vec<&Value> = chunks.iter().filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0)).collect();
        assert_eq!(calls[0]["id"], "call_9");
        assert_eq!(calls[0]["function"]["name"], "write_file");
        assert!(calls.len() >= 3, "arguments should be fragmented: {calls:?}");
        let joined: String = calls.iter().filter_map(|c| c["function"]["arguments"].as_str()).collect();
        assert_eq!(serde_json::from_str::<Value>(&joined).unwrap(), args);
        assert!(chunks.iter().any(|c| c["choices"][0]["finish_reason"] == "tool_calls"));
    }

    #[test]
    fn status_step_sends_code_body_and_retry_after() {
        let mock = MockProvider::start(vec![
            Step::error(429, "slow down", "rate_limit_error").with_retry_after(0),
            Step::status(500, "oops"),
        ]);
        let mut client = Client::connect(&mock);
        let first = client.chat(json!({}));
        assert_eq!(first.status, 429);
        assert_eq!(first.headers["retry-after"], "0");
        assert_eq!(json_body(&first)["error"]["message"], "slow down");
        let second = client.chat(json!({}));
        assert_eq!(second.status, 500);
        assert!(!second.headers.contains_key("retry-after"));
    }

    #[test]
    fn exhausted_script_answers_fallback_text_and_counts() {
        let mock = MockProvider::start(vec![Step::text("only one")]);
        let mut client = Client::connect(&mock);
        assert_eq!(json_body(&client.chat(json!({})))["choices"][0]["message"]["content"], "only one");
        assert_eq!(mock.exhausted_hits(), 0);
        let reply = json_body(&client.chat(json!({})));
        assert_eq!(reply["choices"][0]["message"]["content"], EXHAUSTED_REPLY);
        assert_eq!(mock.exhausted_hits(), 1);
    }

    #[test]
    fn request_log_records_bodies_and_headers() {
        let mock = MockProvider::start(vec![Step::text("a"), Step::text("b")]);
        let mut client = Client::connect(&mock);
        client.chat(json!({"messages": [{"role": "user", "content": "first marker"}]}));
        client.chat(json!({"messages": [{"role": "user", "content": "second marker"}]}));
        assert_eq!(mock.request_count(), 2);
        assert_eq!(mock.requests()[1]["messages"][0]["content"], "second marker");
        assert_eq!(mock.request_headers()[0]["authorization"], "Bearer sk-test");
        let text = mock.requests_text();
        assert!(text.contains("first marker") && text.contains("second marker"));
        assert!(!text.contains("sk-test"));
    }

    #[test]
    fn malformed_request_is_logged_but_keeps_its_step() {
        let mock = MockProvider::start(vec![Step::text("kept")]);
        let mut client = Client::connect(&mock);
        let bad = client.send("POST", "/v1/chat/completions", "{not json").unwrap();
        assert_eq!(bad.status, 400);
        assert_eq!(mock.requests()[0], "{not json");
        let good = json_body(&client.chat(json!({})));
        assert_eq!(good["choices"][0]["message"]["content"], "kept");
        assert_eq!(mock.exhausted_hits(), 0);
    }

    #[test]
    fn gate_holds_reply_until_opened() {
        let gate = Gate::new();
        let mock = MockProvider::start(vec![Step::gated(Step::text("released"), &gate)]);
        let (tx, rx) = mpsc::channel();
        let addr = mock.addr();
        std::thread::scope(|s| {
            s.spawn(|| {
                let stream = TcpStream::connect(addr).unwrap();
                let mut client = Client { conn: BufReader::new(stream) };
                tx.send(client.chat(json!({}))).unwrap();
            });
            mock.wait_for_requests(1);
            assert!(rx.try_recv().is_err(), "reply escaped a closed gate");
            gate.open();
            let raw = rx.recv().expect("client thread ended without a reply");
            assert_eq!(json_body(&raw)["choices"][0]["message"]["content"], "released");
        });
    }

    #[test]
    fn hang_blocks_neither_other_connections_nor_shutdown() {
        let mock = MockProvider::start(vec![Step::hang(), Step::text("still alive")]);
        let addr = mock.addr();
        let hung = std::thread::spawn(move || {
            let mut client = Client { conn: BufReader::new(TcpStream::connect(addr).unwrap()) };
            client.send("POST", "/v1/chat/completions", "{}").is_none()
        });
        mock.wait_for_requests(1);
        let reply = json_body(&chat_once(&mock, json!({})));
        assert_eq!(reply["choices"][0]["message"]["content"], "still alive");
        drop(mock);
        assert!(hung.join().unwrap(), "hung request should end with a closed socket");
    }

    #[test]
    fn faults_break_the_connection_or_the_body() {
        let mock = MockProvider::start(vec![
            Step::drop_connection(),
            Step::drop_mid_stream(),
            Step::truncated_sse(),
            Step::garbage(),
        ]);
        let mut client = Client::connect(&mock);
        assert!(client.send("POST", "/v1/chat/completions", "{}").is_none());

        let cut = chat_once(&mock, stream_request());
        assert_eq!(cut.status, 200);
        assert!(!cut.complete && !cut.body.contains("[DONE]"));
        assert!(sse_data(&cut.body).len() >= 2, "some chunks come before the drop: {}", cut.body);

        let truncated = chat_once(&mock, stream_request());
        assert!(truncated.complete && !truncated.body.contains("[DONE]"));
        let last = sse_data(&truncated.body).pop().unwrap();
        assert!(serde_json::from_str::<Value>(&last).is_err(), "last chunk should be cut: {last}");

        let garbage = chat_once(&mock, json!({}));
        assert_eq!(garbage.status, 200);
        assert!(serde_json::from_str::<Value>(&garbage.body).is_err());
    }

    #[test]
    fn models_endpoint_and_unknown_paths() {
        let mock = MockProvider::start(vec![]).with_model("tiny").with_context_length(4096);
        let mut client = Client::connect(&mock);
        let models = client.send("GET", "/v1/models", "").unwrap();
        let model = &json_body(&models)["data"][0];
        assert_eq!((model["id"].as_str(), model["context_length"].as_u64()), (Some("tiny"), Some(4096)));
        assert_eq!(client.send("GET", "/v1/nope", "").unwrap().status, 404);
        assert_eq!(mock.request_count(), 0);
    }
}
