//! Editors' buffers: an editor that serves a session (`buffers/serve`, a
//! subscription) is asked for a file's text before `read_file` reads it
//! from disk, so the model sees what the user has open, unsaved edits
//! included. The path has passed the session's path policy before it is
//! asked for; the editor answers with the text or `null` (read the disk),
//! and an editor that does not answer in time, or has gone, means the
//! disk. Writes never go through here.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;
use swival_protocol::{BufferRead, SessionId};
use tokio::sync::{mpsc, oneshot};

/// How long a read waits for an editor before it reads the disk.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Who serves which session's reads, and the reads waiting for an answer.
#[derive(Default)]
pub struct EditorBuffers {
    servers: Mutex<Vec<Server>>,
    pending: Mutex<HashMap<String, oneshot::Sender<Option<String>>>>,
    next_id: std::sync::atomic::AtomicU64,
}

struct Server {
    id: u64,
    session: SessionId,
    tx: mpsc::Sender<BufferRead>,
}

impl EditorBuffers {
    /// An editor serves `session` from now on: its id (for [`Self::unserve`])
    /// and where the reads arrive. The latest editor to serve a session is
    /// asked.
    pub fn serve(&self, session: SessionId) -> (u64, mpsc::Receiver<BufferRead>) {
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(16);
        lock(&self.servers).push(Server { id, session, tx });
        (id, rx)
    }

    /// The editor's subscription ended.
    pub fn unserve(&self, id: u64) {
        lock(&self.servers).retain(|s| s.id != id);
    }

    /// Whether an editor serves `session`.
    pub fn serves(&self, session: &SessionId) -> bool {
        lock(&self.servers).iter().any(|s| s.session == *session)
    }

    /// The editor's text of `path` for `session`; `None`: read the disk.
    pub async fn read(&self, session: &SessionId, path: &Path) -> Option<String> {
        let tx = lock(&self.servers).iter().rev().find(|s| s.session == *session)?.tx.clone();
        let request_id = format!("b_{:016x}", rand::random::<u64>());
        let (answer_tx, answer) = oneshot::channel();
        lock(&self.pending).insert(request_id.clone(), answer_tx);
        let read = BufferRead { request_id: request_id.clone(), path: path.display().to_string() };
        let text = match tx.try_send(read) {
            Ok(()) => tokio::time::timeout(READ_TIMEOUT, answer).await.ok().and_then(Result::ok).flatten(),
            Err(_) => None,
        };
        lock(&self.pending).remove(&request_id);
        text
    }

    /// An editor's answer; false when nothing waits for it.
    pub fn respond(&self, request_id: &str, text: Option<String>) -> bool {
        match lock(&self.pending).remove(request_id) {
            Some(tx) => tx.send(text).is_ok(),
            None => false,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_latest_editor_of_the_session_answers_and_none_means_the_disk() {
        let buffers = std::sync::Arc::new(EditorBuffers::default());
        let s = SessionId("s1".into());
        assert!(buffers.read(&s, Path::new("/p/a")).await.is_none(), "no editor: the disk");
        let (_old, _old_rx) = buffers.serve(s.clone());
        let (id, mut rx) = buffers.serve(s.clone());
        let b = buffers.clone();
        let editor = tokio::spawn(async move {
            let r = rx.recv().await.unwrap();
            assert_eq!(r.path, "/p/a");
            assert!(b.respond(&r.request_id, Some("unsaved".into())));
            assert!(!b.respond(&r.request_id, Some("twice".into())));
        });
        assert_eq!(buffers.read(&s, Path::new("/p/a")).await.as_deref(), Some("unsaved"));
        editor.await.unwrap();
        buffers.unserve(id);
        assert!(buffers.serves(&s), "the older editor still serves");
        assert!(!buffers.serves(&SessionId("s2".into())));
    }
}
