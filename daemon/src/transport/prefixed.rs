//! A stream with bytes already read put back in front: the framing sniffer
//! reads the first byte, and the chosen framing must still see it. The
//! stream also carries the connection's guard, so a connection counts as
//! open exactly as long as its stream lives (a WebSocket upgrade moves the
//! stream into a task of jsonrpsee's own).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `inner`, with `first` read again before anything else.
#[derive(Debug)]
pub struct Prefixed<S, G = ()> {
    /// The byte the sniffer consumed, until it has been handed back out.
    first: Option<u8>,
    /// The connection.
    inner: S,
    /// Dropped with the stream (the open-connection count).
    _guard: G,
}

impl<S, G> Prefixed<S, G> {
    /// Put `first` back in front of `inner`; keep `guard` alive with it.
    pub fn new(first: u8, inner: S, guard: G) -> Self {
        Prefixed { first: Some(first), inner, _guard: guard }
    }
}

impl<S: AsyncRead + Unpin, G: Unpin> AsyncRead for Prefixed<S, G> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
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
}
