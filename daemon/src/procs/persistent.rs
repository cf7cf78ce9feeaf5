//! `mode = "persistent"`: one long-lived worker per script that reads one
//! JSON request per line on stdin and writes one JSON reply per line on
//! stdout, an `id` field pairing them. A worker that dies, floods, hangs
//! past a call's timeout or writes garbage is killed; the calls waiting on
//! it fail (closed), and the next call starts a fresh worker.

use super::child::spawn;
use super::launch::kill_group;
use super::ProcError;
use super::Script;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Replies waiting for their line, by request id.
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, WorkerGone>>>>>;

/// Why a worker gave no reply.
#[derive(Debug, Clone, thiserror::Error)]
enum WorkerGone {
    /// Stopped on purpose (idle, shutdown, replaced).
    #[error("the worker was stopped")]
    Stopped,
    /// Its stdout ended.
    #[error("the worker exited")]
    Exited,
    /// Its stdout could not be read.
    #[error("reading the worker's stdout failed: {0}")]
    Read(Arc<std::io::Error>),
    /// It wrote a line over the limit (bytes).
    #[error("the worker wrote a line longer than {0} bytes")]
    LongLine(usize),
    /// It wrote a line that is not JSON.
    #[error("the worker wrote a line that is not JSON: {0}")]
    NotJson(Arc<serde_json::Error>),
    /// It wrote a reply with no id to match.
    #[error("the worker wrote a reply without a numeric `id`")]
    NoId,
    /// It went away with this request unanswered.
    #[error("the worker exited before replying")]
    NoReply,
}

/// A persistent worker, started on first use and restarted after it dies.
#[derive(Default)]
pub struct Worker {
    /// The running process, if any.
    live: tokio::sync::Mutex<Option<Live>>,
    /// Next request id.
    next_id: std::sync::atomic::AtomicU64,
    /// Starts so far.
    starts: std::sync::atomic::AtomicU64,
}

/// Removes a call's entry from the replies awaited when the call ends,
/// however it ends.
struct Forget {
    /// The worker's awaited replies.
    pending: Pending,
    /// This call's request id.
    id: u64,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
    }
}

/// A running worker process.
struct Live {
    /// Requests go here, one whole line at a time.
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    /// Its process group.
    pgid: Option<i32>,
    /// Calls waiting for replies.
    pending: Pending,
    /// Cancelled when the worker is gone.
    dead: CancellationToken,
    /// Its pid, for `policy/status` and tests.
    pid: u32,
    /// Which start of the worker this is.
    gen: u64,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.dead.cancel();
        kill_group(self.pgid);
    }
}

impl Worker {
    /// The pid of the running worker, if one runs.
    pub async fn pid(&self) -> Option<u32> {
        self.live.lock().await.as_ref().filter(|l| !l.dead.is_cancelled()).map(|l| l.pid)
    }

    /// Kill the worker (daemon shutdown).
    pub async fn stop(&self) {
        self.live.lock().await.take();
    }

    /// Send `request` (the text of a JSON object, as serde_json writes it;
    /// an `id` is added) and wait for the reply with the same id (returned
    /// without it).
    pub async fn call(
        &self,
        script: &Script,
        request: &[u8],
        timeout: Duration,
        max_line: usize,
        cancel: &CancellationToken,
    ) -> Result<Value, ProcError> {
        let program = script.argv.first().cloned().unwrap_or_default();
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some(text) = request_line(id, request) else {
            return Err(ProcError::Protocol { program, message: "persistent mode needs a JSON object request".into() });
        };

        let (tx, rx) = oneshot::channel();
        let (gen, stdin, pending) = {
            let mut guard = self.live.lock().await;
            if guard.as_ref().is_none_or(|l| l.dead.is_cancelled()) {
                let gen = self.starts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                *guard = Some(start(script, max_line, gen)?);
            }
            let live = guard.as_mut().expect("just started");
            live.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id, tx);
            (live.gen, live.stdin.clone(), live.pending.clone())
        };
        // Whatever happens below, this call's reply is no longer awaited.
        let _forget = Forget { pending, id };
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let timed_out = || ProcError::Timeout { program: program.clone(), secs: timeout.as_secs_f64() };
        // A worker that stops reading stdin must not hang its callers: the
        // write (and the wait for the writes queued ahead of it) is bounded
        // by the call's timeout like the reply is. It runs as its own task
        // so that a cancelled call still writes its whole line (a line cut
        // short would garble the stream for every other call); a worker
        // killed for hanging fails the write, which ends the task.
        let write = tokio::spawn(async move {
            let mut stdin = stdin.lock().await;
            stdin.write_all(&text).await
        });
        let written = tokio::select! {
            r = write => r.unwrap_or_else(|e| Err(std::io::Error::other(e))),
            () = &mut deadline => {
                // A hung worker would hang every later call: replace it.
                self.kill_if(gen).await;
                return Err(timed_out());
            }
            () = cancel.cancelled() => return Err(ProcError::Cancelled { program }),
        };
        if let Err(source) = written {
            self.kill_if(gen).await;
            return Err(ProcError::Io { program, source });
        }
        let outcome = tokio::select! {
            r = rx => r.unwrap_or(Err(WorkerGone::NoReply)),
            () = &mut deadline => {
                self.kill_if(gen).await;
                return Err(timed_out());
            }
            () = cancel.cancelled() => return Err(ProcError::Cancelled { program }),
        };
        outcome.map_err(|gone| ProcError::Protocol { program, message: gone.to_string() })
    }

    /// Kill the worker if it is still generation `gen`.
    async fn kill_if(&self, gen: u64) {
        let mut guard = self.live.lock().await;
        if guard.as_ref().is_some_and(|l| l.gen == gen) {
            guard.take();
        }
    }
}

/// The line sent for request `id`: the request object with `"id": id` as
/// its first field, on one line. Spliced into the text, not parsed and
/// written again (a filter's request is the whole conversation): a raw
/// line break in valid JSON can only be whitespace between tokens (one in
/// a string is escaped), so it becomes a space. `None` when `request` is
/// not an object's text.
fn request_line(id: u64, request: &[u8]) -> Option<Vec<u8>> {
    let fields = request.trim_ascii().strip_prefix(b"{")?.strip_suffix(b"}")?;
    let mut line = Vec::with_capacity(fields.len() + 32);
    line.extend_from_slice(format!("{{\"id\":{id}").as_bytes());
    if !fields.trim_ascii().is_empty() {
        line.push(b',');
        line.extend(fields.iter().map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b }));
    }
    line.extend_from_slice(b"}\n");
    Some(line)
}

/// Start the worker process and its stdout/stderr readers.
fn start(script: &Script, max_line: usize, gen: u64) -> Result<Live, ProcError> {
    let mut spawned = spawn(script)?;
    let (stdin, stdout, stderr, pid) = spawned.take_pipes();
    let pgid = spawned.pgid();
    let pending: Pending = Arc::default();
    let dead = CancellationToken::new();
    let program = script.argv.first().cloned().unwrap_or_default();
    {
        let (pending, dead) = (pending.clone(), dead.clone());
        tokio::spawn(async move {
            // Holding `spawned` here keeps the process alive exactly as
            // long as its stdout is being read.
            let _spawned = spawned;
            let mut lines = BufReader::new(stdout);
            let mut buf = Vec::new();
            let why = loop {
                buf.clear();
                let mut limited = (&mut lines).take(max_line as u64 + 1);
                let read = tokio::select! {
                    r = limited.read_until(b'\n', &mut buf) => r,
                    _ = dead.cancelled() => break WorkerGone::Stopped,
                };
                match read {
                    Ok(0) => break WorkerGone::Exited,
                    Err(e) => break WorkerGone::Read(Arc::new(e)),
                    Ok(_) if buf.len() > max_line => break WorkerGone::LongLine(max_line),
                    Ok(_) => {}
                }
                let reply: Value = match serde_json::from_slice(&buf) {
                    Ok(v) => v,
                    Err(e) => break WorkerGone::NotJson(Arc::new(e)),
                };
                let Some(id) = reply.get("id").and_then(Value::as_u64) else {
                    break WorkerGone::NoId;
                };
                let mut reply = reply;
                if let Some(obj) = reply.as_object_mut() {
                    obj.remove("id");
                }
                if let Some(tx) = pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id) {
                    let _ = tx.send(Ok(reply));
                }
            };
            // Already cancelled: stopped on purpose (idle, shutdown, a
            // timeout that replaced it, which is reported where it happened).
            if dead.is_cancelled() {
                tracing::info!("persistent worker {program}: {why}");
            } else {
                tracing::warn!("persistent worker {program}: {why}");
            }
            dead.cancel();
            for (_, tx) in pending.lock().unwrap_or_else(|p| p.into_inner()).drain() {
                let _ = tx.send(Err(why.clone()));
            }
        });
    }
    {
        let program = script.argv.first().cloned().unwrap_or_default();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(target: "swivald::procs::stderr", "{program}: {line}");
            }
        });
    }
    Ok(Live { stdin: Arc::new(tokio::sync::Mutex::new(stdin)), pgid, pending, dead, pid, gen })
}

#[cfg(test)]
mod tests {
    use super::request_line;
    use serde_json::{json, Value};

    fn sent(id: u64, request: &str) -> Value {
        let line = request_line(id, request.as_bytes()).expect("an object");
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1, "one line, ended by its newline");
        assert!(line.ends_with(b"\n"));
        serde_json::from_slice(&line).expect("the line is JSON")
    }

    #[test]
    fn the_id_is_spliced_into_the_object_on_one_line() {
        let request = json!({"messages": [{"role": "user", "content": "a\nb \"q\""}], "model": "m"});
        let line = sent(7, &serde_json::to_string(&request).unwrap());
        assert_eq!(line, json!({"id": 7, "messages": [{"role": "user", "content": "a\nb \"q\""}], "model": "m"}));
        // Written over several lines, it still goes as one.
        let pretty = serde_json::to_string_pretty(&request).unwrap();
        assert_eq!(sent(8, &pretty)["messages"], request["messages"]);
        assert_eq!(sent(9, " { } "), json!({"id": 9}));
        for not_an_object in ["[1]", "\"x\"", "", "{"] {
            assert!(request_line(1, not_an_object.as_bytes()).is_none(), "{not_an_object:?}");
        }
    }
}
