//! A connection's outgoing messages: the [`Outbox`] its handlers and
//! subscriptions queue into, bounded in bytes, and the writer task that
//! hands them to the client as it reads. Replies past
//! `max_reply_buffer_bytes` close the connection; notifications instead
//! wait for room, so a client that stops reading holds a few KiB of them.

use super::feed::Feed;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

/// Where a connection's replies and notifications go.
pub(super) trait Outgoing: Send + 'static {
    /// Whether several messages may go out in one write.
    const JOINS: bool;
    /// Write `lines`: newline-terminated messages, one unless
    /// [`Outgoing::JOINS`].
    fn write(&mut self, lines: &str) -> impl std::future::Future<Output = std::io::Result<()>> + Send;
    /// Nothing more will be written.
    fn finish(self) -> impl std::future::Future<Output = ()> + Send;
}

/// A subscription's next notification waits while more than this many
/// bytes are queued for the connection's writer: a client that stops
/// reading holds this much of its events in the daemon, never more
/// (replies to its calls still count against `max_reply_buffer_bytes`).
const NOTIFY_HIGH_WATER: usize = 4 * 1024;
/// Lines waiting for the connection's writer are joined into one write up
/// to about this many bytes.
const COALESCE_BYTES: usize = 64 * 1024;
/// The connection's writer: each message queued, as the client takes them.
pub(super) async fn write_out<O: Outgoing>(
    mut out_rx: mpsc::UnboundedReceiver<String>,
    mut out: O,
    queued: Arc<AtomicUsize>,
    drained: Arc<Notify>,
) {
    while let Some(first) = out_rx.recv().await {
        // Lines already waiting (a subscriber's events come in bursts) go
        // out in the same write: one system call, not one each. Joined in
        // one allocation of their exact size, since a client that stops
        // reading leaves it held.
        let mut lines = vec![first];
        let mut len = lines[0].len();
        while O::JOINS && len < COALESCE_BYTES {
            match out_rx.try_recv() {
                Ok(more) => {
                    len += more.len();
                    lines.push(more);
                }
                Err(_) => break,
            }
        }
        let msg = if lines.len() == 1 { lines.pop().unwrap_or_default() } else { lines.concat() };
        drop(lines);
        if out.write(&msg).await.is_err() {
            break;
        }
        queued.fetch_sub(msg.len(), Ordering::AcqRel);
        drained.notify_waiters();
    }
    out.finish().await;
}

/// The connection's outgoing lines, bounded in bytes.
pub(super) struct Outbox {
    /// To the writer task.
    pub(super) tx: mpsc::UnboundedSender<String>,
    /// Bytes handed to the writer and not yet written.
    pub(super) queued: Arc<AtomicUsize>,
    /// Signalled each time the writer has written.
    pub(super) drained: Arc<Notify>,
    /// `max_reply_buffer_bytes`.
    pub(super) max: usize,
    /// Closes the connection when the client stops reading.
    pub(super) close: CancellationToken,
}

impl Outbox {
    /// Queue `line`; `false` when the connection is gone or was just closed
    /// because its client let more than `max` bytes pile up. One line always
    /// fits when nothing else is queued, however long it is.
    pub(super) fn push(&self, line: String) -> bool {
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
    pub(super) async fn room_for_notification(&self, closed: &CancellationToken) -> bool {
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

    /// Wait until the client can take `feed`'s next item (fewer than
    /// [`NOTIFY_HIGH_WATER`] bytes queued). A wait past [`HELD`] releases
    /// what the feed read ahead; one past the feed's stall limit with
    /// nothing read by the client meanwhile ends it.
    pub(super) async fn room_for_feed(
        &self,
        closed: &CancellationToken,
        cancel: &CancellationToken,
        feed: &mut dyn Feed,
    ) -> Room {
        let stall = feed.stall();
        let mut released = false;
        let mut since = tokio::time::Instant::now();
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a write in between wakes it.
            drained.as_mut().enable();
            if self.queued.load(Ordering::Acquire) < NOTIFY_HIGH_WATER {
                return Room::Free;
            }
            let wake = match (released, stall.is_zero()) {
                (false, _) => Some(since + HELD),
                (true, false) => Some(since + stall),
                (true, true) => None,
            };
            tokio::select! {
                // The client read something: not stalled.
                _ = drained => since = tokio::time::Instant::now(),
                _ = closed.cancelled() => return Room::Closed,
                _ = cancel.cancelled() => return Room::Closed,
                _ = self.close.cancelled() => return Room::Closed,
                _ = sleep_until(wake) => {
                    if released {
                        return Room::Stalled;
                    }
                    feed.release();
                    released = true;
                }
            }
        }
    }

    /// Queue a subscription's `line`, which [`Outbox::room_for_notification`]
    /// made room for.
    pub(super) fn push_notification(&self, line: String) -> bool {
        self.queued.fetch_add(line.len(), Ordering::AcqRel);
        self.tx.send(line).is_ok()
    }
}

/// How long a feed's next item may wait for room before what the feed
/// read ahead is let go: far longer than a client that keeps up ever makes
/// it wait, far shorter than a stalled one.
const HELD: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether a feed's connection can take its next item.
pub(super) enum Room {
    /// Now.
    Free,
    /// Never: the connection or the feed is closing.
    Closed,
    /// The client read nothing for the feed's stall limit.
    Stalled,
}

/// Sleep until `at`, or forever.
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
