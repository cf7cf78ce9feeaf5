//! Finding a running daemon, or starting one: `swivald` next to this
//! executable, else on PATH, detached in its own session, with its log in
//! the socket's directory. The caller waits a bounded time for the socket.

use crate::{Client, ClientError};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long to wait for a freshly started daemon to serve.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Connect to the daemon on `socket`, starting one when none runs. Returns
/// the client and, when this call started the daemon, its pid.
pub async fn connect_or_start(socket: &Path) -> Result<(Client, Option<u32>), ClientError> {
    match Client::connect(socket).await {
        Ok(c) => Ok((c, None)),
        Err(ClientError::NoDaemon { .. }) => {
            let pid = start(socket).await?;
            Ok((Client::connect(socket).await?, Some(pid)))
        }
        Err(e) => Err(e),
    }
}

/// The swivald executable: beside the current executable, else on PATH.
pub fn daemon_exe() -> Result<PathBuf, ClientError> {
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|d| d.join("swivald")));
    if let Some(p) = beside.filter(|p| p.is_file()) {
        return Ok(p);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("swivald"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            ClientError::StartFailed(
                "cannot start swivald: no `swivald` beside swivalctl nor on PATH; install it (cargo install --path daemon) or start it yourself".into(),
            )
        })
}

/// Start swivald on `socket` and wait until it accepts connections.
pub async fn start(socket: &Path) -> Result<u32, ClientError> {
    let exe = daemon_exe()?;
    let dir = socket.parent().unwrap_or(Path::new("/"));
    // The daemon checks this directory; create it as the daemon would.
    let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
    let log_path = dir.join("swivald.log");
    let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).map_err(|e| {
        ClientError::StartFailed(format!("cannot start swivald: cannot open its log {}: {e}", log_path.display()))
    })?;
    let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
    let mut cmd = Command::new(&exe);
    cmd.arg("--socket").arg(socket).stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
    // SAFETY: setsid is async-signal-safe; it detaches the daemon from our
    // terminal and process group so Ctrl-C here does not reach it.
    unsafe {
        cmd.pre_exec(|| nix::unistd::setsid().map(drop).map_err(std::io::Error::from));
    }
    let mut child =
        cmd.spawn().map_err(|e| ClientError::StartFailed(format!("cannot start {}: {e}", exe.display())))?;
    let pid = child.id();
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let tail = log_tail(&log_path, log_start);
            return Err(ClientError::StartFailed(format!(
                "swivald ({}) exited with {status} before serving on {}: {tail}",
                exe.display(),
                socket.display()
            )));
        }
        if tokio::net::UnixStream::connect(socket).await.is_ok() {
            break;
        }
        if Instant::now() >= deadline {
            return Err(ClientError::StartFailed(format!(
                "swivald ({}) did not serve on {} within {}s; see {}",
                exe.display(),
                socket.display(),
                START_TIMEOUT.as_secs(),
                log_path.display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Reap the daemon when it eventually exits, so a long-lived caller
    // keeps no zombie.
    std::thread::spawn(move || child.wait());
    Ok(pid)
}

/// What the daemon wrote to its log since `from`, trimmed for a message.
fn log_tail(path: &Path, from: u64) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let start = usize::try_from(from).unwrap_or(0).min(text.len());
    let tail = String::from_utf8_lossy(&text[start..]).trim().to_owned();
    if tail.is_empty() {
        format!("it wrote nothing to {}", path.display())
    } else {
        tail
    }
}
