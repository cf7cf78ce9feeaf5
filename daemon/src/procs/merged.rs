//! A child whose stdout and stderr share one pipe (the model's commands):
//! its output is collected in the order it was written, up to a cap (the
//! rest is read and dropped), until it exits, times out or is cancelled.
//! Then its whole group is killed, whatever the ending, so nothing it
//! started outlives the call, and what is still in the pipe is taken for
//! at most [`DRAIN_GRACE`].

use super::launch::Started;
use super::ProcError;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

/// How long output may keep arriving after the group was killed (a
/// process that left the group can hold the pipe open forever).
pub const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// How a merged-output child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited (code, or minus the signal number as Python reports it).
    Exited(i32),
    /// The timeout passed.
    TimedOut,
    /// The caller cancelled.
    Cancelled,
}

/// The output kept so far.
#[derive(Debug)]
pub struct Capture {
    /// At most `limit` bytes.
    pub bytes: Vec<u8>,
    /// More arrived and was dropped.
    pub truncated: bool,
    /// The cap.
    limit: usize,
}

impl Capture {
    /// An empty capture keeping at most `limit` bytes.
    pub fn new(limit: usize) -> Capture {
        Capture { bytes: Vec::new(), truncated: false, limit }
    }

    /// Keep what still fits.
    pub fn push(&mut self, data: &[u8]) {
        let room = self.limit.saturating_sub(self.bytes.len());
        if data.len() > room {
            self.truncated = true;
        }
        self.bytes.extend_from_slice(&data[..data.len().min(room)]);
    }
}

/// What a merged-output child did.
#[derive(Debug)]
pub struct Merged {
    /// How it ended.
    pub ending: Ending,
    /// What it wrote.
    pub output: Capture,
}

/// Collect the merged output until the child exits, times out or is
/// cancelled; then kill its whole group and take what is left in the pipe.
pub(super) async fn supervise(
    mut started: Started,
    program: &str,
    timeout: Duration,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<Merged, ProcError> {
    let mut pipe = started.merged.take().expect("a merged-output launch");
    let child = &mut started.child;
    let mut capture = Capture::new(limit);
    let mut chunk = vec![0u8; 16 * 1024];
    let mut open = true;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let ending = loop {
        tokio::select! {
            n = pipe.read(&mut chunk), if open => match n {
                Ok(0) | Err(_) => open = false,
                Ok(n) => capture.push(&chunk[..n]),
            },
            status = child.wait() => break match status {
                Ok(s) => Ending::Exited(s.code().unwrap_or_else(|| -s.signal().unwrap_or(0))),
                Err(e) => return Err(ProcError::Io {
                    program: program.to_owned(),
                    source: std::io::Error::other(format!("waiting for the command failed: {e}")),
                }),
            },
            () = &mut deadline => break Ending::TimedOut,
            () = cancel.cancelled() => break Ending::Cancelled,
        }
    };
    super::kill_group(started.pgid);
    if !matches!(ending, Ending::Exited(_)) {
        let _ = started.child.wait().await;
    }
    let drain = tokio::time::sleep(DRAIN_GRACE);
    tokio::pin!(drain);
    while open {
        tokio::select! {
            n = pipe.read(&mut chunk) => match n {
                Ok(0) | Err(_) => open = false,
                Ok(n) => capture.push(&chunk[..n]),
            },
            () = &mut drain => break,
        }
    }
    Ok(Merged { ending, output: capture })
}
