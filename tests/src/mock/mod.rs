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

mod reply;
mod script;
#[cfg(test)]
mod tests;

use reply::{json_response, respond, Reply};
pub use script::{Gate, Step, ToolCall};

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
    /// Scripts of their own for requests whose body holds all of some
    /// texts (a subagent's requests), checked before `script`.
    routes: Vec<(Vec<String>, VecDeque<Step>)>,
    /// Every chat request, in arrival order.
    log: Vec<Recorded>,
    /// How many chat requests found the script empty.
    exhausted_hits: usize,
    /// The model id advertised by `/v1/models` and echoed in replies.
    model: String,
    /// The context length advertised by `/v1/models`.
    context_length: u64,
    /// More models `/v1/models` lists after `model` (no context length).
    more_models: Vec<String>,
    /// Drop, unanswered, every chat request that arrives on a connection
    /// that already served one (a server that closed an idle keep-alive
    /// connection the client still pools).
    stale_keep_alive: bool,
    /// Requests dropped that way.
    stale_drops: usize,
    /// How long every chat request waits before it is answered.
    latency: Duration,
    /// Report a prompt cache as a server keeping the last request's
    /// prefix would: `cached_tokens` = the shared prefix with the request
    /// before, in bytes / 4. `None`: no cache reported.
    prefix_cache: Option<Vec<u8>>,
}

/// The shared state and the condvar signalled on every chat request.
struct Shared {
    /// The state proper.
    state: Mutex<State>,
    /// Notified whenever a chat request is logged.
    arrived: Condvar,
    /// Endless streams ([`Step::Repeating`]) whose client went away.
    cut: Arc<std::sync::atomic::AtomicUsize>,
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
                routes: Vec::new(),
                log: Vec::new(),
                exhausted_hits: 0,
                model: "mock-model".to_owned(),
                context_length: 32768,
                more_models: Vec::new(),
                stale_keep_alive: false,
                stale_drops: 0,
                latency: Duration::ZERO,
                prefix_cache: None,
            }),
            arrived: Condvar::new(),
            cut: Default::default(),
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

    /// Lists `models` in `/v1/models` after the advertised one.
    pub fn with_more_models(self, models: &[&str]) -> MockProvider {
        self.shared.lock().more_models = models.iter().map(|m| (*m).to_owned()).collect();
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

    /// Report a prompt cache as a server keeping the last request's prefix
    /// would (the bytes of the rendered prompt, see [`rendered`], each
    /// request shares with the one before, over 4):
    /// `usage.prompt_tokens_details.cached_tokens` (OpenAI) and, in a
    /// stream, llama-server's `timings.cache_n` and `prompt_n`.
    pub fn with_prefix_cache(self) -> MockProvider {
        self.shared.lock().prefix_cache = Some(Vec::new());
        self
    }

    /// Endless streams ([`Step::repeating`]) that ended because the
    /// client went away.
    pub fn streams_cut(&self) -> usize {
        self.shared.cut.load(std::sync::atomic::Ordering::SeqCst)
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

    /// Answer the requests whose body holds every one of `needles` from
    /// `steps`, in order, instead of the main script (requests of several
    /// sessions at once: a subagent's carry its task and system prompt).
    pub fn route(&self, needles: &[&str], steps: Vec<Step>) {
        let needles = needles.iter().map(|n| (*n).to_owned()).collect();
        self.shared.lock().routes.push((needles, steps.into()));
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

    /// The `user` and `tool` message texts of request `n` (from 0).
    pub fn texts_of(&self, n: usize) -> Vec<String> {
        self.requests()[n]["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "tool" || m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect()
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
            let more = state.more_models.iter().map(|id| json!({"id": id, "object": "model"}));
            let data: Vec<Value> = std::iter::once(model).chain(more).collect();
            json_response(200, json!({"object": "list", "data": data}).to_string())
        }
        (method, path) => {
            let message = format!("mock provider: no route for {method} {path}");
            json_response(404, error_body(&message, "not_found"))
        }
    }
}

/// The prompt a chat template makes of a request, as bytes: the system
/// message, the tool schemas, then the other messages (Qwen's template on
/// llama-server renders them in that order). A server's prefix cache
/// works on this, not on the body: `max_tokens` or the key order do not
/// count.
fn rendered(body: Option<&Value>) -> Vec<u8> {
    let Some(body) = body else { return Vec::new() };
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let (system, rest) = match messages.split_first() {
        Some((first, rest)) if first["role"] == "system" => (first.to_string(), rest),
        _ => (String::new(), &messages[..]),
    };
    let rest: Vec<String> = rest.iter().map(Value::to_string).collect();
    format!("{system}{}{}", body["tools"], rest.join("")).into_bytes()
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
    let cached_tokens = {
        let mut state = shared.lock();
        state.log[number - 1].times.answered = Some(Instant::now());
        state.prefix_cache.as_mut().map(|last| {
            let prompt = rendered(parsed.as_ref());
            let shared_bytes = last.iter().zip(prompt.iter()).take_while(|(a, b)| a == b).count();
            *last = prompt;
            shared_bytes as u64 / 4
        })
    };
    let body = parsed.unwrap_or_default();
    let reply = Reply {
        id: format!("chatcmpl-mock-{number}"),
        model,
        stream: body.get("stream").and_then(Value::as_bool) == Some(true),
        include_usage: body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true)),
        prompt_tokens: raw.len() as u64 / 4 + 1,
        cached_tokens,
        cut: shared.cut.clone(),
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
        let text = raw_text(raw);
        let routed = state.routes.iter_mut().find(|(needles, _)| needles.iter().all(|n| text.contains(n.as_str())));
        let routed = routed.and_then(|(_, steps)| steps.pop_front());
        let step = routed.or_else(|| state.script.pop_front()).unwrap_or_else(|| {
            state.exhausted_hits += 1;
            Step::text(EXHAUSTED_REPLY)
        });
        Some((step, state.log.len(), state.model.clone(), state.latency))
    }
}

/// A request body as text, JSON escapes undone enough to find plain words.
fn raw_text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).replace("\\n", "\n").replace("\\\"", "\"")
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
