//! Reading the newline-delimited framing's lines without ever holding more
//! than the size limit of one.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// One line read from the connection.
pub(super) enum Line {
    /// A complete message, without its newline.
    Message(Vec<u8>),
    /// A message longer than the limit (its length), already discarded.
    TooLong(usize),
    /// The peer closed the connection.
    Eof,
}

/// Reads newline-terminated lines without ever buffering more than `max`
/// bytes of one line.
pub(super) struct LineReader<R> {
    /// The connection's read half.
    inner: BufReader<R>,
    /// Longest line kept, in bytes.
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Lines from `inner`, each at most `max` bytes kept.
    pub(super) fn new(inner: BufReader<R>, max: usize) -> LineReader<R> {
        LineReader { inner, max }
    }

    /// The next line, or what stood in its place.
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

/// Where a connection's messages come from: lines, or WebSocket frames.
pub(super) trait Incoming: Send {
    /// The next message, or what stood in its place.
    fn next_message(&mut self) -> impl std::future::Future<Output = std::io::Result<Line>> + Send;
}

impl<R: AsyncRead + Unpin + Send> Incoming for LineReader<R> {
    async fn next_message(&mut self) -> std::io::Result<Line> {
        self.next_line().await
    }
}
