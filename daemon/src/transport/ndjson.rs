//! The connection core, and the newline-delimited framing over it: one
//! JSON-RPC 2.0 message (or batch) per line. The WebSocket framing
//! (`ws.rs`) is the same core over frames instead of lines.
//!
//! jsonrpsee executes each call (`raw_json_request`); this module adds what
//! a message protocol needs around it: the size limit, parse errors
//! (-32700) that leave the connection usable, request validation (-32600),
//! notifications (no reply), batches (at most `max_batch_len` entries),
//! and forwarding subscription notifications onto the connection.
//!
//! What a connection may cost is bounded: a message by `max_message_size`,
//! requests in flight by [`MAX_IN_FLIGHT`] (past it the next message is
//! not read until one finishes), and replies waiting for a client that
//! does not read them by `max_reply_buffer_bytes` (past it the connection
//! is closed: waiting instead would keep every handler's reply in memory;
//! `outbox.rs`). Subscription notifications are never a reason to close:
//! each waits until what is queued for the client drops under a few KiB.
//! `session/subscribe` is served here as a feed (`feed.rs`): the
//! connection takes the next event from the log only once it has room, so
//! a subscriber that stops reading costs a few KiB and resumes where it
//! left off; the other subscriptions are jsonrpsee's, a few queued.

use super::feed::{self, Feed};
use super::lines::{Incoming, Line, LineReader};
use super::outbox::{write_out, Outbox, Outgoing, Room};
use super::registry::Activity;
use super::Shared;
use jsonrpsee::core::server::Methods;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use swival_protocol::ErrorCode;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Notifications a jsonrpsee subscription (`hooks/register`,
/// `buffers/serve`) may queue before its producer waits: a few, so a burst
/// goes out in one go.
const SUBSCRIPTION_BUFFER: usize = 16;
/// The connection's read buffer: most requests fit, and every connection
/// holds one, idle or not.
const READ_BUFFER: usize = 4 * 1024;
/// Requests (lines) one connection may have in flight; the next line is read
/// once one of them finishes.
const MAX_IN_FLIGHT: usize = 256;

/// Serve one newline-delimited connection until EOF, shutdown or the
/// registry closing it, then let in-flight requests finish and write their
/// replies.
pub(super) async fn serve<S>(stream: S, shared: Arc<Shared>, activity: Arc<Activity>)
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (rd, wr) = tokio::io::split(stream);
    // Requests are small; a long one is read in more pieces.
    let reader = LineReader::new(BufReader::with_capacity(READ_BUFFER, rd), shared.max_message_size);
    serve_messages(reader, Lines(wr), shared, activity).await;
}

/// Newline-delimited output: the lines as they are.
struct Lines<W>(W);

impl<W: AsyncWrite + Send + Unpin + 'static> Outgoing for Lines<W> {
    const JOINS: bool = true;

    async fn write(&mut self, lines: &str) -> std::io::Result<()> {
        self.0.write_all(lines.as_bytes()).await
    }

    async fn finish(mut self) {
        let _ = self.0.shutdown().await;
    }
}

/// Serve a connection's messages until it ends, shutdown or the registry
/// closing it, then let in-flight requests finish and write their replies.
pub(super) async fn serve_messages<I: Incoming, O: Outgoing>(
    mut incoming: I,
    outgoing: O,
    shared: Arc<Shared>,
    activity: Arc<Activity>,
) {
    let (out_tx, out_rx) = mpsc::unbounded_channel::<String>();
    let queued = Arc::new(AtomicUsize::new(0));
    let drained = Arc::new(Notify::new());
    let writer = tokio::spawn(write_out(out_rx, outgoing, queued.clone(), drained.clone()));
    let closing = activity.close_token().clone();
    // Fired as soon as no more is read, before the calls in flight finish:
    // a `run/wait` in flight must not keep its run from being cancelled.
    let gone = CancellationToken::new();
    let mut methods = shared.methods.clone();
    methods.extensions_mut().insert(super::Disconnected(gone.clone()));
    let conn = Arc::new(Conn {
        methods,
        shared: shared.clone(),
        out: Outbox { tx: out_tx, queued, drained, max: shared.max_reply_buffer, close: closing.clone() },
        activity: activity.clone(),
        closed: CancellationToken::new(),
        feeds: Mutex::default(),
    });
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut inflight = JoinSet::new();
    loop {
        let (line, slot) = tokio::select! {
            biased;
            _ = shared.shutdown.wait() => break,
            _ = closing.cancelled() => break,
            next = next_request(&mut incoming, &slots) => next,
        };
        match line {
            Ok(Line::Message(bytes)) => {
                let conn = conn.clone();
                let busy = activity.busy();
                inflight.spawn(async move {
                    conn.handle(bytes).await;
                    drop((busy, slot));
                });
            }
            Ok(Line::TooLong(len)) => {
                let msg = format!(
                    "message of {len} bytes exceeds max_message_size ({} bytes); send a smaller message or raise max_message_size in swivald.toml",
                    shared.max_message_size
                );
                conn.send(error_reply(None, ErrorCode::MessageTooLarge.code(), &msg));
            }
            Ok(Line::Eof) | Err(_) => break,
        }
        while inflight.try_join_next().is_some() {}
    }
    gone.cancel();
    while inflight.join_next().await.is_some() {}
    conn.closed.cancel();
    drop(conn);
    let _ = writer.await;
}

/// Wait for a free in-flight slot, then read the next message.
async fn next_request<I: Incoming>(
    incoming: &mut I,
    slots: &Arc<Semaphore>,
) -> (std::io::Result<Line>, tokio::sync::OwnedSemaphorePermit) {
    let slot = slots.clone().acquire_owned().await.expect("the semaphore is never closed");
    (incoming.next_message().await, slot)
}

/// Per-connection state shared by the request handlers.
struct Conn {
    /// The RPC methods, with this connection's [`super::Disconnected`] in
    /// every call's extensions.
    methods: Methods,
    /// Daemon-wide transport state.
    shared: Arc<Shared>,
    /// Lines to write; each ends with a newline.
    out: Outbox,
    /// Requests in flight and subscriptions open, seen by the registry.
    activity: Arc<Activity>,
    /// Cancelled when the connection is done; ends the forwarders.
    closed: CancellationToken,
    /// This connection's open feeds by subscription id; cancelling one
    /// ends it.
    feeds: Mutex<HashMap<u64, CancellationToken>>,
}

/// What a subscription call opened.
enum Stream {
    /// A jsonrpsee subscription's notifications: one already received,
    /// and the rest.
    Queued(Option<Box<RawValue>>, mpsc::Receiver<Box<RawValue>>),
    /// A feed, by its subscription id.
    Feed(u64, Box<dyn Feed>),
}

/// The reply to one call, and the notification stream it opened, if any.
struct Answer {
    /// The JSON-RPC response.
    reply: String,
    /// Notifications to forward once the reply is on its way.
    stream: Option<Stream>,
}

impl Answer {
    fn plain(reply: String) -> Answer {
        Answer { reply, stream: None }
    }
}

/// The fields of one request, borrowed from the line.
#[derive(Deserialize)]
struct RawCall<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a str>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    /// `Some("null")` for an explicit null id, `None` for a notification.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

impl Conn {
    fn send(&self, mut line: String) {
        line.reserve_exact(1);
        line.push('\n');
        self.out.push(line);
    }

    /// Answer one line: a single call or a batch.
    async fn handle(self: Arc<Self>, bytes: Vec<u8>) {
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return self.send(error_reply(None, -32700, "Parse error: the line is not valid UTF-8"));
        };
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        if text.starts_with('[') {
            let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) else {
                return self.send(parse_error(text));
            };
            if items.is_empty() {
                return self.send(error_reply(None, -32600, "Invalid request: empty batch"));
            }
            if items.len() > self.shared.max_batch_len {
                let msg = super::batch_too_long(items.len(), self.shared.max_batch_len);
                return self.send(error_reply(None, ErrorCode::MessageTooLarge.code(), &msg));
            }
            let mut replies = Vec::new();
            let mut streams = Vec::new();
            for item in items {
                if let Some(Answer { reply, stream }) = self.call(item.get()).await {
                    replies.push(reply);
                    streams.extend(stream);
                }
            }
            if !replies.is_empty() {
                self.send(format!("[{}]", replies.join(",")));
            }
            for stream in streams {
                self.open(stream);
            }
        } else if let Some(Answer { reply, stream }) = self.call(text).await {
            // The reply first: a client must learn its subscription id
            // before the first notification arrives.
            self.send(reply);
            if let Some(stream) = stream {
                self.open(stream);
            }
        }
    }

    /// Execute one call; `None` for a notification.
    async fn call(&self, text: &str) -> Option<Answer> {
        let raw: RawCall = match serde_json::from_str(text) {
            Ok(r) => r,
            Err(_) if serde_json::from_str::<&RawValue>(text).is_ok() => {
                return Some(Answer::plain(error_reply(
                    None,
                    -32600,
                    "Invalid request: expected a JSON-RPC 2.0 request object",
                )))
            }
            Err(_) => return Some(Answer::plain(parse_error(text))),
        };
        let id = raw.id;
        let invalid = |why: &str| {
            Some(Answer::plain(error_reply(id.filter(|i| valid_id(i)), -32600, &format!("Invalid request: {why}"))))
        };
        if raw.jsonrpc != Some("2.0") {
            return invalid("\"jsonrpc\" must be \"2.0\"");
        }
        let Some(method) = raw.method.and_then(|m| serde_json::from_str::<String>(m.get()).ok()) else {
            return invalid("\"method\" must be a string");
        };
        if let Some(id) = id {
            if !valid_id(id) {
                return invalid("\"id\" must be a number, a string or null");
            }
        }
        let is_subscription = self.shared.subscription_methods.contains(&method.as_str());
        if is_subscription && id.is_some() {
            let limit = self.shared.max_subscriptions;
            if self.activity.subscriptions() >= limit {
                let msg = format!(
                    "this connection already holds {limit} subscriptions (max_subscriptions_per_connection); unsubscribe first or open another connection"
                );
                return Some(Answer::plain(error_reply(id, ErrorCode::Overloaded.code(), &msg)));
            }
        }
        if let Some(answer) = self.call_feed(&method, id, raw.params) {
            return answer;
        }
        // A notification is executed with a placeholder id and its reply dropped.
        let request;
        let request_text = match id {
            Some(_) => text,
            None => {
                request = rebuild_with_id(&method, raw.params);
                &request
            }
        };
        let (reply, mut notifications) = match run(&self.methods, request_text).await {
            Ok(r) => r,
            Err(e) => return Some(Answer::plain(error_reply(id, -32600, &format!("Invalid request: {e}")))),
        };
        id?;
        let stream = match notifications.try_recv() {
            Err(mpsc::error::TryRecvError::Disconnected) => None,
            _ if !is_subscription => None,
            first => Some(Stream::Queued(first.ok(), notifications)),
        };
        Some(Answer { reply: reply.get().to_owned(), stream })
    }

    /// Open or close a feed: `Some` when `method` is the feed's and
    /// `id` makes it a call (a notification opening one opens nothing).
    fn call_feed(&self, method: &str, id: Option<&RawValue>, params: Option<&RawValue>) -> Option<Option<Answer>> {
        let feeds = &self.shared.feeds;
        if method == feeds.subscribe() {
            let id = id?;
            return Some(Some(match feeds.open(params) {
                Ok(feed) => {
                    let sub = feed::new_id();
                    let reply = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{sub}}}"#, id.get());
                    Answer { reply, stream: Some(Stream::Feed(sub, feed)) }
                }
                Err(e) => Answer::plain(error_object_reply(id, &e)),
            }));
        }
        if method == feeds.unsubscribe() {
            let id = id?;
            // As jsonrpsee: an id that is not an open subscription is `false`.
            let sub = jsonrpsee::types::Params::new(params.map(RawValue::get)).one::<u64>().ok();
            let token = sub.and_then(|s| self.feeds.lock().unwrap_or_else(|p| p.into_inner()).remove(&s));
            let closed = token.inspect(CancellationToken::cancel).is_some();
            return Some(Some(Answer::plain(format!(r#"{{"jsonrpc":"2.0","id":{},"result":{closed}}}"#, id.get()))));
        }
        None
    }

    /// Start what a subscription call opened. Called while the request that
    /// opened it is still in flight, so the connection never looks idle in
    /// between.
    fn open(self: &Arc<Self>, stream: Stream) {
        self.activity.subscription_opened();
        match stream {
            Stream::Queued(first, rx) => self.forward(first, rx),
            Stream::Feed(sub, feed) => {
                let cancel = CancellationToken::new();
                self.feeds.lock().unwrap_or_else(|p| p.into_inner()).insert(sub, cancel.clone());
                tokio::spawn(self.clone().pull(sub, feed, cancel));
            }
        }
    }

    /// Write a feed's items as the client takes them, until it is
    /// unsubscribed, ends, stalls past its limit or the connection closes.
    /// Each item is taken only once the connection has room for it; a
    /// client that makes it wait long gets what was read ahead for it
    /// released.
    async fn pull(self: Arc<Self>, sub: u64, mut feed: Box<dyn Feed>, cancel: CancellationToken) {
        let method = self.shared.feeds.notification();
        loop {
            match self.out.room_for_feed(&self.closed, &cancel, &mut *feed).await {
                Room::Free => {}
                Room::Closed => break,
                Room::Stalled => {
                    self.out.push_notification(feed::closing(method, sub, &feed.stalled()));
                    break;
                }
            }
            let item = tokio::select! {
                _ = self.closed.cancelled() => break,
                _ = cancel.cancelled() => break,
                item = feed.next() => match item { Some(item) => item, None => break },
            };
            let line = feed::notification(method, sub, &item);
            drop(item);
            if !self.out.push_notification(line) {
                break;
            }
        }
        drop(feed);
        self.feeds.lock().unwrap_or_else(|p| p.into_inner()).remove(&sub);
        self.activity.subscription_closed();
    }

    /// Copy a jsonrpsee subscription's notifications onto the connection
    /// until either side ends it. Forwarders hold the connection (`Conn`),
    /// but every one ends when `closed` is cancelled, once the reading loop
    /// is done.
    fn forward(self: &Arc<Self>, first: Option<Box<RawValue>>, mut rx: mpsc::Receiver<Box<RawValue>>) {
        let conn = self.clone();
        tokio::spawn(async move {
            let mut next = first;
            loop {
                if let Some(n) = next.take() {
                    // Sized once: growing it for the newline would double it.
                    let mut line = String::with_capacity(n.get().len() + 1);
                    line.push_str(n.get());
                    drop(n);
                    line.push('\n');
                    if !conn.out.push_notification(line) {
                        break;
                    }
                }
                // Room first, then the next notification: one that waits
                // for a client that does not read waits in its producer.
                if !conn.out.room_for_notification(&conn.closed).await {
                    break;
                }
                next = tokio::select! {
                    _ = conn.closed.cancelled() => break,
                    n = rx.recv() => match n { Some(n) => Some(n), None => break },
                };
            }
            conn.activity.subscription_closed();
        });
    }
}

/// Run one request text through jsonrpsee.
async fn run(
    methods: &Methods,
    text: &str,
) -> Result<(Box<RawValue>, mpsc::Receiver<Box<RawValue>>), serde_json::Error> {
    methods.raw_json_request(text, SUBSCRIPTION_BUFFER).await
}

fn valid_id(id: &RawValue) -> bool {
    matches!(id.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9' | b'n'))
}

fn rebuild_with_id(method: &str, params: Option<&RawValue>) -> String {
    let method = serde_json::to_string(method).expect("strings serialize");
    match params {
        Some(p) => format!(r#"{{"jsonrpc":"2.0","id":0,"method":{method},"params":{}}}"#, p.get()),
        None => format!(r#"{{"jsonrpc":"2.0","id":0,"method":{method}}}"#),
    }
}

fn parse_error(text: &str) -> String {
    let detail = serde_json::from_str::<serde_json::Value>(text).err().map(|e| e.to_string()).unwrap_or_default();
    error_reply(None, -32700, &format!("Parse error: {detail}; send one JSON-RPC 2.0 message per line"))
}

/// A JSON-RPC error response with `id` for `error`, data included.
fn error_object_reply(id: &RawValue, error: &jsonrpsee::types::ErrorObjectOwned) -> String {
    let error = serde_json::to_string(error).expect("error objects serialize");
    format!(r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#, id.get())
}

/// A JSON-RPC error response with `id` (null when unknown).
fn error_reply(id: Option<&RawValue>, code: i32, message: &str) -> String {
    let id = id.map(|i| i.get()).unwrap_or("null");
    let message = serde_json::to_string(message).expect("strings serialize");
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{message}}}}}"#)
}
