//! The newline-delimited framing: one JSON-RPC 2.0 message (or batch) per
//! line, dispatched through the same `Methods` as HTTP and WebSocket.
//!
//! jsonrpsee executes each call (`raw_json_request`); this module adds what
//! a line protocol needs around it: the size limit, parse errors (-32700)
//! that leave the connection usable, request validation (-32600),
//! notifications (no reply), batches (at most `max_batch_len` entries),
//! and forwarding subscription notifications onto the connection.
//!
//! What a connection may cost is bounded: a line by `max_message_size`,
//! requests in flight by [`MAX_IN_FLIGHT`] (past it the next line is not
//! read until one finishes), and replies waiting for a client that does not
//! read them by `max_reply_buffer_bytes` (past it the connection is closed:
//! waiting instead would keep every handler's reply in memory).
//! Subscription notifications are never a reason to close: each waits
//! until what is queued for the client drops under [`NOTIFY_HIGH_WATER`],
//! and the producer behind it reads the next event from the store only
//! then, so a subscriber that stops reading costs a few KiB and resumes
//! where it left off.

use super::registry::Activity;
use super::Shared;
use jsonrpsee::core::server::Methods;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use swival_protocol::ErrorCode;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Notifications a subscription may queue before its producer waits: a
/// few, so a subscriber that keeps up gets a turn's events in one go (one
/// at a time made the 64-session p99 per turn several times longer); a
/// stalled one holds at most these and the outbox's share.
const SUBSCRIPTION_BUFFER: usize = 16;
/// A subscription's next notification waits while more than this many
/// bytes are queued for the connection's writer: a client that stops
/// reading holds this much of its events in the daemon, never more
/// (replies to its calls still count against `max_reply_buffer_bytes`).
const NOTIFY_HIGH_WATER: usize = 4 * 1024;
/// Lines waiting for the connection's writer are joined into one write up
/// to about this many bytes.
const COALESCE_BYTES: usize = 64 * 1024;
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
    let (rd, mut wr) = tokio::io::split(stream);
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<String>();
    let queued = Arc::new(AtomicUsize::new(0));
    let drained = Arc::new(Notify::new());
    let writer = {
        let queued = queued.clone();
        let drained = drained.clone();
        tokio::spawn(async move {
            while let Some(mut msg) = out_rx.recv().await {
                // Lines already waiting (a subscriber's events come in
                // bursts) go out in the same write: one system call, not one each.
                while msg.len() < COALESCE_BYTES {
                    match out_rx.try_recv() {
                        Ok(more) => msg.push_str(&more),
                        Err(_) => break,
                    }
                }
                if wr.write_all(msg.as_bytes()).await.is_err() {
                    break;
                }
                queued.fetch_sub(msg.len(), Ordering::AcqRel);
                drained.notify_waiters();
            }
            let _ = wr.shutdown().await;
        })
    };

    let closing = activity.close_token().clone();
    let conn = Arc::new(Conn {
        shared: shared.clone(),
        out: Outbox { tx: out_tx, queued, drained, max: shared.max_reply_buffer, close: closing.clone() },
        activity: activity.clone(),
        closed: CancellationToken::new(),
    });
    // Requests are small; a long one is read in more pieces.
    let mut reader = LineReader { inner: BufReader::with_capacity(READ_BUFFER, rd), max: shared.max_message_size };
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut inflight = JoinSet::new();
    loop {
        let (line, slot) = tokio::select! {
            biased;
            _ = shared.shutdown.wait() => break,
            _ = closing.cancelled() => break,
            next = next_request(&mut reader, &slots) => next,
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
    while inflight.join_next().await.is_some() {}
    conn.closed.cancel();
    drop(conn);
    let _ = writer.await;
}

/// Wait for a free in-flight slot, then read the next line.
async fn next_request<R: AsyncRead + Unpin>(
    reader: &mut LineReader<R>,
    slots: &Arc<Semaphore>,
) -> (std::io::Result<Line>, tokio::sync::OwnedSemaphorePermit) {
    let slot = slots.clone().acquire_owned().await.expect("the semaphore is never closed");
    (reader.next_line().await, slot)
}

/// The connection's outgoing lines, bounded in bytes.
struct Outbox {
    /// To the writer task.
    tx: mpsc::UnboundedSender<String>,
    /// Bytes handed to the writer and not yet written.
    queued: Arc<AtomicUsize>,
    /// Signalled each time the writer has written.
    drained: Arc<Notify>,
    /// `max_reply_buffer_bytes`.
    max: usize,
    /// Closes the connection when the client stops reading.
    close: CancellationToken,
}

impl Outbox {
    /// Queue `line`; `false` when the connection is gone or was just closed
    /// because its client let more than `max` bytes pile up. One line always
    /// fits when nothing else is queued, however long it is.
    fn push(&self, line: String) -> bool {
        let len = line.len();
        let before = self.queued.fetch_add(len, Ordering::AcqRel);
        if before > 0 && before + len > self.max {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            if !self.close.is_cancelled() {
                tracing::warn!(
                    "closing a connection whose client does not read its replies: {before} bytes are waiting (max_reply_buffer_bytes is {})",
                    self.max
                );
                self.close.cancel();
            }
            return false;
        }
        self.tx.send(line).is_ok()
    }

    /// Wait until fewer than [`NOTIFY_HIGH_WATER`] bytes wait for the
    /// client; `false` when the connection is closing.
    async fn room_for_notification(&self, closed: &CancellationToken) -> bool {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a write in between wakes it.
            drained.as_mut().enable();
            if self.queued.load(Ordering::Acquire) < NOTIFY_HIGH_WATER {
                break;
            }
            tokio::select! {
                _ = drained => {}
                _ = closed.cancelled() => return false,
                _ = self.close.cancelled() => return false,
            }
        }
        true
    }

    /// Queue a subscription's `line`, which [`Outbox::room_for_notification`]
    /// made room for.
    fn push_notification(&self, line: String) -> bool {
        self.queued.fetch_add(line.len(), Ordering::AcqRel);
        self.tx.send(line).is_ok()
    }
}

/// One line read from the connection.
enum Line {
    /// A complete message, without its newline.
    Message(Vec<u8>),
    /// A message longer than the limit (its length), already discarded.
    TooLong(usize),
    /// The peer closed the connection.
    Eof,
}

/// Reads newline-terminated lines without ever buffering more than `max`
/// bytes of one line.
struct LineReader<R> {
    /// The connection's read half.
    inner: BufReader<R>,
    /// Longest line kept, in bytes.
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    async fn next_line(&mut self) -> std::io::Result<Line> {
        let mut buf = Vec::new();
        let mut seen = 0usize;
        let mut too_long = false;
        loop {
            let avail = self.inner.fill_buf().await?;
            if avail.is_empty() {
                return Ok(match (seen, too_long) {
                    (0, _) => Line::Eof,
                    (n, true) => Line::TooLong(n),
                    _ => Line::Message(buf),
                });
            }
            let newline = avail.iter().position(|&b| b == b'\n');
            let chunk = &avail[..newline.unwrap_or(avail.len())];
            seen += chunk.len();
            if !too_long {
                if buf.len() + chunk.len() > self.max {
                    too_long = true;
                    buf = Vec::new();
                } else {
                    buf.extend_from_slice(chunk);
                }
            }
            let used = chunk.len() + usize::from(newline.is_some());
            self.inner.consume(used);
            if newline.is_some() {
                return Ok(if too_long { Line::TooLong(seen) } else { Line::Message(buf) });
            }
        }
    }
}

/// Per-connection state shared by the request handlers.
struct Conn {
    /// Daemon-wide transport state.
    shared: Arc<Shared>,
    /// Lines to write; each ends with a newline.
    out: Outbox,
    /// Requests in flight and subscriptions open, seen by the registry.
    activity: Arc<Activity>,
    /// Cancelled when the connection is done; ends the forwarders.
    closed: CancellationToken,
}

/// A subscription's notifications: one already received, and the rest.
type Stream = (Option<Box<RawValue>>, mpsc::Receiver<Box<RawValue>>);

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
                self.forward(stream);
            }
        } else if let Some(Answer { reply, stream }) = self.call(text).await {
            // The reply first: a client must learn its subscription id
            // before the first notification arrives.
            self.send(reply);
            if let Some(stream) = stream {
                self.forward(stream);
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
        // A notification is executed with a placeholder id and its reply dropped.
        let request;
        let request_text = match id {
            Some(_) => text,
            None => {
                request = rebuild_with_id(&method, raw.params);
                &request
            }
        };
        let (reply, mut notifications) = match run(&self.shared.methods, request_text).await {
            Ok(r) => r,
            Err(e) => return Some(Answer::plain(error_reply(id, -32600, &format!("Invalid request: {e}")))),
        };
        id?;
        let stream = match notifications.try_recv() {
            Err(mpsc::error::TryRecvError::Disconnected) => None,
            _ if !is_subscription => None,
            first => Some((first.ok(), notifications)),
        };
        Some(Answer { reply: reply.get().to_owned(), stream })
    }

    /// Copy a subscription's notifications onto the connection until either
    /// side ends it. Forwarders hold the connection (`Conn`), but every one
    /// ends when `closed` is cancelled, once the reading loop is done.
    ///
    /// Called while the request that opened the subscription is still in
    /// flight, so the connection never looks idle in between.
    fn forward(self: &Arc<Self>, (first, mut rx): Stream) {
        self.activity.subscription_opened();
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

/// A JSON-RPC error response with `id` (null when unknown).
fn error_reply(id: Option<&RawValue>, code: i32, message: &str) -> String {
    let id = id.map(|i| i.get()).unwrap_or("null");
    let message = serde_json::to_string(message).expect("strings serialize");
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{message}}}}}"#)
}
