//! A raw WebSocket client over the daemon's socket, frame by frame, for
//! tests that need what a library client hides: a client that never
//! reads, oversized messages, batches.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Open a WebSocket on `socket` (handshake done, reads time out after
/// [`crate::IO_TIMEOUT`]).
pub fn connect(socket: &Path) -> UnixStream {
    let mut ws = UnixStream::connect(socket).unwrap();
    ws.set_read_timeout(Some(crate::IO_TIMEOUT)).unwrap();
    ws.write_all(
        b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        ws.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
    ws
}

/// A client text frame (masked with a zero key) of any length.
pub fn text(payload: &str) -> Vec<u8> {
    let mut f = vec![0x81u8];
    let len = payload.len();
    if len < 126 {
        f.push(0x80 | len as u8);
    } else if len <= usize::from(u16::MAX) {
        f.push(0x80 | 126);
        f.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        f.push(0x80 | 127);
        f.extend_from_slice(&(len as u64).to_be_bytes());
    }
    f.extend_from_slice(&[0, 0, 0, 0]);
    f.extend_from_slice(payload.as_bytes());
    f
}

/// The next server message's text; panics on a close frame.
pub fn read(s: &mut UnixStream) -> String {
    let mut head = [0u8; 2];
    s.read_exact(&mut head).expect("a frame from the daemon");
    let mut len = u64::from(head[1] & 0x7f);
    if len == 126 {
        let mut b = [0u8; 2];
        s.read_exact(&mut b).unwrap();
        len = u64::from(u16::from_be_bytes(b));
    } else if len == 127 {
        let mut b = [0u8; 8];
        s.read_exact(&mut b).unwrap();
        len = u64::from_be_bytes(b);
    }
    let mut payload = vec![0u8; len as usize];
    s.read_exact(&mut payload).unwrap();
    assert_ne!(head[0] & 0x0f, 0x8, "the daemon closed the WebSocket");
    String::from_utf8_lossy(&payload).into_owned()
}

/// Read messages until one's text contains `needle`; every text seen.
pub fn read_until(s: &mut UnixStream, needle: &str) -> Vec<String> {
    let mut texts = Vec::new();
    loop {
        let text = read(s);
        let found = text.contains(needle);
        texts.push(text);
        if found {
            return texts;
        }
    }
}
