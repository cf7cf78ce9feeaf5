//! The daemon's top level: wire the services together, serve until
//! shutdown, and tell the service manager where we are.
//!
//! Shutdown order: a signal or `daemon/shutdown` triggers the `Shutdown`
//! → at once the accept loop stops, runs are cancelled (each records its
//! end, `interrupted`), newline-delimited connections stop reading new
//! lines and jsonrpsee's HTTP and WebSocket connections new requests, and
//! the watchdog, pruner and idle sweeps stop → STOPPING=1 →
//! `Shutdown::drain` waits, at most `shutdown_grace_s`, for every task
//! spawned through it: connections writing the replies of the requests in
//! flight (so `daemon/shutdown`'s own reply reaches its caller on every
//! framing), WebSocket connections, runs recording their ends → whatever
//! remains is dropped (a run that recorded no end is marked interrupted at
//! the next start) → policy script workers and MCP servers stop
//! (`Services::stop`) → the socket file is removed if we created it
//! (systemd owns an activated one) → exit 0.

use crate::cache::LazyCache;
use crate::procs::ProcessRunner;
use crate::rpc::{self, DaemonContext};
use crate::service;
use crate::services::Services;
use crate::session::{SessionSettings, Sessions};
use crate::settings::Settings;
use crate::shutdown::Shutdown;
use crate::store::Store;
use crate::transport::{self, ConnectionCount, Limits, Listener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Before any child exists: a delegated cgroup v2 subtree is set up by
/// moving the daemon into a leaf of it (`procs::cgroup`).
fn find_cgroups() {
    match crate::procs::cgroup::available() {
        Ok(cgroups) => tracing::info!("commands' limits: each in its own {}", cgroups.name()),
        Err(why) => tracing::info!("commands' limits: per process ({why})"),
    }
}

/// Serve on `listener` until SIGTERM, SIGINT or `daemon/shutdown`, then
/// stop in the order the module's documentation gives.
pub async fn run(settings: Settings, listener: Listener) -> anyhow::Result<()> {
    let shutdown = Shutdown::new();
    let connections = Arc::new(ConnectionCount::default());
    spawn_signal_handler(shutdown.clone())?;

    let dirs = Dirs {
        state: settings.state_dir.clone().unwrap_or_else(crate::paths::state_dir),
        cache: settings.cache_dir.clone().unwrap_or_else(crate::paths::cache_dir),
    };
    let store = Arc::new(Store::open(&dirs.state.join("swivald.db"))?);
    let sandbox_caps = crate::sandbox::probe(&crate::sandbox::default_helper()).await;
    tracing::info!("command sandbox: {sandbox_caps:?}");
    find_cgroups();
    let services = services(&settings, store, &dirs, &shutdown);
    let grace = crate::config::seconds(settings.shutdown_grace_s, 0.0);
    // Runs end (as interrupted) as soon as shutdown begins, so requests
    // waiting on them can finish within the grace period.
    let sessions = Arc::new(Sessions::open(
        &services,
        session_settings(&settings, &listener, dirs, sandbox_caps),
        shutdown.clone(),
    )?);
    sessions.serve_subagents();
    let (goals, loops, inbox) = background(&settings, &sessions, &services, &shutdown)?;
    if let Some(age) = settings.session_retention() {
        spawn_pruner(sessions.clone(), age, shutdown.clone());
    }
    let ctx = DaemonContext {
        started: Instant::now(),
        socket: listener.path().to_owned(),
        activation: listener.activation(),
        connections: connections.clone(),
        shutdown: shutdown.clone(),
        max_message_size: settings.max_message_size,
        sessions,
        goals,
        loops,
        inbox,
        services: services.clone(),
        subscriptions: Arc::new(rpc::Subscriptions::new(
            settings.max_subscriptions,
            crate::config::seconds(settings.subscriber_stall_s, 0.0),
        )),
    };
    let handlers = rpc::handlers(ctx);
    let limits = Limits {
        max_message_size: settings.max_message_size,
        max_connections: settings.max_connections,
        max_subscriptions: settings.max_subscriptions_per_connection,
        idle_timeout: settings.idle_timeout(),
        header_read_timeout: settings.header_read_timeout(),
        max_batch_len: settings.max_batch_len,
        max_reply_buffer_bytes: settings.max_reply_buffer_bytes,
    };

    tracing::info!(
        "swivald {} serving on {} ({:?}), pid {}",
        crate::VERSION,
        listener.path().display(),
        listener.activation(),
        std::process::id()
    );
    service::notify_ready();
    service::spawn_watchdog(shutdown.clone());
    transport::serve(&listener, handlers, limits, connections.clone(), shutdown.clone()).await?;
    // Shutdown has begun: no connection is accepted any more, runs are
    // cancelled, connections are writing their last replies.
    service::notify_stopping();
    tracing::info!("shutting down: no new connections; waiting up to {grace:?} for in-flight requests and runs");
    if !shutdown.drain(grace).await {
        tracing::warn!(
            "grace period over; dropping {} connection(s) still open and the runs that did not end",
            connections.open()
        );
    }
    services.stop().await;
    listener.remove_socket_file();
    tracing::info!("stopped");
    Ok(())
}

/// Background work: the inbox, and the goals and loops that write to it.
type Background = (Arc<crate::goal::Goals>, Arc<crate::loops::Loops>, Arc<crate::inbox::Inbox>);

/// The inbox, the goals and the loops, those active taken up again.
fn background(
    settings: &Settings,
    sessions: &Arc<Sessions>,
    services: &Services,
    shutdown: &Shutdown,
) -> anyhow::Result<Background> {
    let daily = Some(settings.max_background_tokens_per_day).filter(|n| *n > 0);
    let inbox =
        crate::inbox::Inbox::new(services.store.clone(), sessions.clone(), daily, settings.desktop_notifications);
    let goals = goals(settings, sessions, services, &inbox, shutdown)?;
    let loops = loops(settings, sessions, services, &inbox, shutdown)?;
    Ok((goals, loops, inbox))
}

/// The sessions' goals, those that were active taken up again.
fn goals(
    settings: &Settings,
    sessions: &Arc<Sessions>,
    services: &Services,
    inbox: &Arc<crate::inbox::Inbox>,
    shutdown: &Shutdown,
) -> anyhow::Result<Arc<crate::goal::Goals>> {
    let limits = crate::goal::GoalLimits {
        max_active: settings.max_background_runs.max(1) as usize,
        default_max_runs: settings.goal_max_runs.max(1),
    };
    let goals =
        crate::goal::Goals::new(sessions.clone(), services.store.clone(), inbox.clone(), limits, shutdown.clone());
    goals.restore()?;
    Ok(goals)
}

/// The sessions' loops, those that were active driven again.
fn loops(
    settings: &Settings,
    sessions: &Arc<Sessions>,
    services: &Services,
    inbox: &Arc<crate::inbox::Inbox>,
    shutdown: &Shutdown,
) -> anyhow::Result<Arc<crate::loops::Loops>> {
    let limits = crate::loops::LoopLimits {
        max_loops: settings.max_loops.max(1) as usize,
        max_firing: settings.max_background_runs.max(1) as usize,
        min_every: crate::config::seconds(settings.loop_min_interval_s, 0.0),
        backoff_base: crate::config::seconds(settings.loop_backoff_base_s, 0.0),
    };
    let loops =
        crate::loops::Loops::new(sessions.clone(), services.store.clone(), inbox.clone(), limits, shutdown.clone());
    loops.restore()?;
    Ok(loops)
}

/// The daemon's own directories.
struct Dirs {
    /// The database and MCP servers' pid files.
    state: PathBuf,
    /// The response cache.
    cache: PathBuf,
}

/// The daemon-wide services, made once here and shared by the sessions
/// and the RPC handlers; unused prespawn pools and policy script workers
/// are stopped after `process_idle_timeout_s` until the daemon stops.
fn services(settings: &Settings, store: Arc<Store>, dirs: &Dirs, shutdown: &Shutdown) -> Services {
    let runner = Arc::new(ProcessRunner::new(settings.max_children as usize));
    if let Some(idle) = settings.process_idle_timeout() {
        let (runner, shutdown) = (Arc::downgrade(&runner), shutdown.clone());
        let retire = move |runner: &ProcessRunner, now| {
            runner.retire_idle(now, idle);
        };
        tokio::spawn(async move { shutdown.sweep_until_stopped(runner, idle, retire).await });
    }
    Services {
        store: store.clone(),
        runner,
        mcp: crate::mcp::McpPool::new(crate::mcp::McpSettings {
            idle: crate::config::seconds(settings.mcp_idle_timeout_s, 0.0),
            call_timeout: crate::config::seconds(settings.mcp_call_timeout_s, 0.001),
            start_timeout: crate::config::seconds(settings.mcp_start_timeout_s, 0.001),
            pid_dir: dirs.state.join("mcp"),
        }),
        hooks: Arc::default(),
        approvals: Arc::default(),
        buffers: Arc::default(),
        cache: Arc::new(LazyCache::new(dirs.cache.join("cache.db"), settings.max_cache_bytes)),
        changes: settings.snapshots.then(|| {
            let max_file = settings.snapshot_max_file_bytes;
            let exact = settings.snapshot_exact_commands;
            Arc::new(crate::changes::Changes::new(dirs.state.join("snapshots"), max_file, exact, store.clone()))
        }),
    }
}

/// What sessions need from the daemon's settings.
fn session_settings(
    settings: &Settings,
    listener: &Listener,
    dirs: Dirs,
    sandbox_caps: crate::sandbox::SandboxCapabilities,
) -> SessionSettings {
    SessionSettings {
        global_config: Some(crate::config::global_config_path()),
        max_llm_calls: settings.max_concurrent_llm_calls as usize,
        backoff_base: crate::config::seconds(settings.provider_backoff_base_s, 0.0),
        sandbox_caps,
        socket: Some(listener.path().to_owned()).filter(|p| !p.as_os_str().is_empty()),
        daemon_dirs: vec![dirs.state, dirs.cache, crate::paths::config_dir()],
        approval_timeout: crate::config::seconds(settings.approval_timeout_s, 0.1),
        max_subagents: settings.max_subagents.max(1) as usize,
        worktrees_dir: settings.worktrees_dir.clone().unwrap_or_else(crate::paths::worktrees_dir),
        live: crate::session::LiveLimits {
            max_sessions: settings.max_live_sessions.max(1) as usize,
            idle_timeout: settings.session_idle_timeout(),
        },
    }
}

/// Delete sessions unused for `age` and the worktrees of deleted sessions,
/// at start and then hourly, until the daemon stops
/// (`prune_sessions_after_days`).
fn spawn_pruner(sessions: Arc<Sessions>, age: std::time::Duration, shutdown: Shutdown) {
    tokio::spawn(async move {
        let mut hourly = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            tokio::select! {
                _ = hourly.tick() => {}
                _ = shutdown.wait() => return,
            }
            let sessions = sessions.clone();
            if let Err(e) = sessions.prune_all(age).await {
                tracing::warn!("pruning old sessions failed: {e}");
            }
        }
    });
}

fn spawn_signal_handler(shutdown: Shutdown) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
        shutdown.trigger();
    });
    Ok(())
}
