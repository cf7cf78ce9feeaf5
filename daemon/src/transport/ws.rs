//! The WebSocket framing: after the HTTP upgrade, each text (or binary)
//! message is one JSON-RPC message, served by the same connection core as
//! the newline-delimited framing (`ndjson.rs`): the same limits, batches,
//! errors, and `session/subscribe` as a feed the connection pulls from
//! only when its client has room. soketto does the framing (pings are
//! answered, a close is echoed).

use super::lines::Incoming;
use super::lines::Line;
use super::ndjson::serve_messages;
use super::outbox::Outgoing;
use super::registry::Activity;
use super::Shared;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use tokio::io::BufReader;
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt};

/// The upgraded connection as soketto reads and writes it. Requests are
/// small; a long one is read in more pieces.
type Io = Compat<BufReader<TokioIo<hyper::upgrade::Upgraded>>>;

/// The read buffer under soketto's frames.
const READ_BUFFER: usize = 4 * 1024;

/// Serve an upgraded WebSocket connection until the client closes it, the
/// registry closes it or the daemon stops.
pub(super) async fn serve(
    upgraded: hyper::upgrade::Upgraded,
    handshake: soketto::handshake::http::Server,
    shared: Arc<Shared>,
    activity: Arc<Activity>,
) {
    let io = BufReader::with_capacity(READ_BUFFER, TokioIo::new(upgraded)).compat();
    let mut builder = handshake.into_builder(io);
    builder.set_max_message_size(shared.max_message_size);
    let (sender, receiver) = builder.finish();
    serve_messages(Frames { receiver, message: Vec::new() }, FramesOut(sender), shared, activity).await;
}

/// Incoming messages.
struct Frames {
    /// soketto's read side.
    receiver: soketto::Receiver<Io>,
    /// The message being read.
    message: Vec<u8>,
}

impl Incoming for Frames {
    async fn next_message(&mut self) -> std::io::Result<Line> {
        use soketto::connection::Error;
        self.message.clear();
        match self.receiver.receive_data(&mut self.message).await {
            Ok(_) => Ok(Line::Message(std::mem::take(&mut self.message))),
            // soketto skipped the rest of it; the connection goes on.
            Err(Error::MessageTooLarge { current, .. }) => Ok(Line::TooLong(current)),
            Err(Error::Closed) => Ok(Line::Eof),
            Err(Error::Io(e)) => Err(e),
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}

/// Outgoing messages, one text frame each.
struct FramesOut(soketto::Sender<Io>);

impl Outgoing for FramesOut {
    const JOINS: bool = false;

    async fn write(&mut self, line: &str) -> std::io::Result<()> {
        let text = line.strip_suffix('\n').unwrap_or(line);
        self.0.send_text(text).await.map_err(std::io::Error::other)?;
        self.0.flush().await.map_err(std::io::Error::other)
    }

    async fn finish(mut self) {
        let _ = self.0.close().await;
    }
}
