//! A stream with bytes already read put back in front: the framing sniffer
//! reads the first byte, and the chosen framing must still see it. The
//! stream also carries the connection's guard, so a connection counts as
//! open exactly as long as its stream lives (a WebSocket upgrade moves the
//! stream into a task of jsonrpsee's own), and, once [`Prefixed::closed_by`]
//! gave it one, a cancellation token: after it is cancelled every read and
//! write fails, which ends the connection whichever framing (or jsonrpsee
//! task) serves it.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// `inner`, with `first` read again before anything else.
pub struct Prefixed<S, G = ()> {
    /// The byte the sniffer consumed, until it has been handed back out.
    first: Option<u8>,
    /// The connection.
    inner: S,
    /// Dropped with the stream (the open-connection count).
    _guard: G,
    /// Resolve when the connection must close: one for the reading side and
    /// one for the writing side, since each keeps the waker of its own task.
    close: Option<[Pin<Box<WaitForCancellationFutureOwned>>; 2]>,
}

impl<S, G> Prefixed<S, G> {
    /// Put `first` back in front of `inner`; keep `guard` alive with it.
    pub fn new(first: u8, inner: S, guard: G) -> Self {
        Prefixed { first: Some(first), inner, _guard: guard, close: None }
    }

    /// Fail every read and write once `token` is cancelled.
    pub fn closed_by(mut self, token: &CancellationToken) -> Self {
        self.close = Some([Box::pin(token.clone().cancelled_owned()), Box::pin(token.clone().cancelled_owned())]);
        self
    }

    /// An error when the connection was told to close, registering the
    /// task for that wake-up otherwise.
    fn check_closed(&mut self, side: usize, cx: &mut Context<'_>) -> io::Result<()> {
        let Some(close) = &mut self.close else {
            return Ok(());
        };
        if close[side].as_mut().poll(cx).is_ready() {
            return Err(io::Error::new(io::ErrorKind::ConnectionAborted, "the daemon closed this connection"));
        }
        Ok(())
    }
}

impl<S, G> std::fmt::Debug for Prefixed<S, G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefixed").field("first", &self.first).finish_non_exhaustive()
    }
}

/// Index of the reading side's close future.
const READ: usize = 0;
/// Index of the writing side's close future.
const WRITE: usize = 1;

impl<S: AsyncRead + Unpin, G: Unpin> AsyncRead for Prefixed<S, G> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.check_closed(READ, cx)?;
        if buf.remaining() > 0 {
            if let Some(b) = self.first.take() {
                buf.put_slice(&[b]);
                return Poll::Ready(Ok(()));
            }
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin, G: Unpin> AsyncWrite for Prefixed<S, G> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.check_closed(WRITE, cx)?;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check_closed(WRITE, cx)?;
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn first_byte_is_read_back_before_the_rest() {
        let mut s = Prefixed::new(b'{', &b"\"a\":1}"[..], ());
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "{\"a\":1}");
    }

    #[tokio::test]
    async fn reads_fail_once_the_token_is_cancelled() {
        let (client, server) = tokio::io::duplex(64);
        let token = CancellationToken::new();
        let mut s = Prefixed::new(b'{', server, ()).closed_by(&token);
        let mut first = [0u8; 1];
        s.read_exact(&mut first).await.unwrap();
        // A read waiting for bytes wakes up with an error when the token is cancelled.
        let pending = tokio::spawn(async move {
            let mut rest = [0u8; 1];
            s.read(&mut rest).await
        });
        token.cancel();
        let err = pending.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionAborted);
        drop(client);
    }
}
