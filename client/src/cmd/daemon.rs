//! `swivalctl status` and `swivalctl daemon start|stop|install`.

use clap::Subcommand;
use std::path::Path;
use std::process::ExitCode;
use swivalctl::{autostart, units, Client, ClientError};

/// What to do with the daemon.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Start swivald if it is not running.
    Start,
    /// Ask swivald to stop and wait until its socket is gone.
    Stop,
    /// Write the systemd user units (Linux) or the LaunchAgent (macOS).
    Install,
}

/// Connect (starting the daemon if needed), say so on stderr if we started it.
pub async fn connect(socket: &Path) -> Result<Client, ClientError> {
    let (client, started) = autostart::connect_or_start(socket).await?;
    if let Some(pid) = started {
        eprintln!("swivalctl: started swivald (pid {pid}) on {}", socket.display());
    }
    client.initialize("swivalctl").await?;
    Ok(client)
}

/// `swivalctl status`.
pub async fn status(socket: &Path, json: bool) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    let s = client.status().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&s).expect("status serializes"));
    } else {
        println!(
            "swivald {} running: pid {}, up {:.1}s, {} connection(s), socket {} ({:?})",
            s.version, s.pid, s.uptime_s, s.connections, s.socket, s.activation
        );
        if let Some(b) = &s.background {
            println!("background work: {}", background_words(b));
        }
        if let Some(bytes) = s.snapshot_bytes {
            println!("snapshot stores: {} on disk (swivalctl gc collects them)", size(bytes));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The bounds on background work and today's use, in a line.
pub fn background_words(b: &swival_protocol::BackgroundStatus) -> String {
    let daily = match b.max_background_tokens_per_day {
        Some(n) => format!("{} of max_background_tokens_per_day = {n} used today", b.tokens_today),
        None => format!("{} tokens used today, max_background_tokens_per_day unset", b.tokens_today),
    };
    format!(
        "max_background_runs = {}, max_loops = {}, goal_max_runs = {}, {daily}",
        b.max_background_runs, b.max_loops, b.goal_max_runs
    )
}

/// `swivalctl gc`.
pub async fn gc(socket: &Path, json: bool) -> Result<ExitCode, ClientError> {
    use swival_protocol::methods::typed::SnapshotsGc;
    let client = connect(socket).await?;
    let r = client.request::<SnapshotsGc>(&swival_protocol::methods::NoParams).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r).expect("a result serializes"));
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "snapshot stores: {} → {} ({} objects and {} of {} stores removed)",
        size(r.bytes_before),
        size(r.bytes_after),
        r.objects_removed,
        r.stores_removed,
        r.stores
    );
    for root in &r.busy {
        println!("  {}: a run was recording there; left for the next collection", super::clean::text(root));
    }
    Ok(ExitCode::SUCCESS)
}

/// A byte count for people.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// `swivalctl daemon ...`.
pub async fn run(socket: &Path, action: Action) -> Result<ExitCode, ClientError> {
    match action {
        Action::Start => {
            let client = connect(socket).await?;
            let s = client.status().await?;
            println!("swivald {} running: pid {} on {}", s.version, s.pid, s.socket);
        }
        Action::Stop => {
            let client = match Client::connect(socket).await {
                Ok(c) => c,
                Err(ClientError::NoDaemon { .. }) => {
                    println!("swivald is not running on {}", socket.display());
                    return Ok(ExitCode::SUCCESS);
                }
                Err(e) => return Err(e),
            };
            let pid = client.status().await?.pid;
            client.shutdown().await?;
            drop(client);
            wait_until_gone(socket).await?;
            wait_for_exit(pid).await?;
            println!("swivald (pid {pid}) stopped");
        }
        Action::Install => {
            let exe = autostart::daemon_exe()?;
            let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
            let installed = units::install(&exe, socket)
                .map_err(|e| ClientError::StartFailed(format!("cannot install the service files: {e}")))?;
            for f in &installed.files {
                println!("wrote {}", f.display());
            }
            println!("enable with: {}", installed.next_step);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Wait (bounded) until nothing answers on the socket any more.
/// Wait (at most 30 s) until process `pid` has exited: the socket goes
/// away before the daemon finishes stopping.
async fn wait_for_exit(pid: u32) -> Result<(), ClientError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let running = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| stat.rsplit(')').next().and_then(|s| s.split_whitespace().next()) != Some("Z"))
            .unwrap_or_else(|_| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok())
    };
    while running() {
        if std::time::Instant::now() > deadline {
            return Err(ClientError::StartFailed(format!(
                "swivald (pid {pid}) removed its socket but has not exited 30s after the shutdown request"
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    Ok(())
}

async fn wait_until_gone(socket: &Path) -> Result<(), ClientError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while tokio::net::UnixStream::connect(socket).await.is_ok() {
        if std::time::Instant::now() > deadline {
            return Err(ClientError::StartFailed(format!(
                "swivald on {} still answers 30s after the shutdown request",
                socket.display()
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    Ok(())
}
