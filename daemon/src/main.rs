//! The swivald binary: take an activation socket (before any thread
//! exists), read settings, set up logging, bind, and run the server.

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use swivald::{Listener, LogFormat, Settings, SettingsError};

/// swivald: runs LLM coding-agent sessions for editors and swivalctl over
/// JSON-RPC on a per-user Unix socket.
#[derive(Debug, Parser)]
#[command(name = "swivald", version)]
struct Args {
    /// Socket path (default: $SWIVALD_SOCKET, else $XDG_RUNTIME_DIR/swival/swivald.sock,
    /// else $TMPDIR/swival-$UID/swivald.sock).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Daemon settings file (default: $XDG_CONFIG_HOME/swival/swivald.toml).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Log format on stderr; RUST_LOG selects what is logged.
    #[arg(long, value_enum)]
    log_format: Option<LogFormat>,
    /// Largest accepted message in bytes (overrides swivald.toml).
    #[arg(long)]
    max_message_size: Option<u64>,
}

fn main() -> ExitCode {
    // The sandbox helper first: it must still be single-threaded, and its
    // argv is not the daemon's.
    if let Some(code) = swivald::main_if_helper() {
        return code;
    }
    // Provider keys and the encryption key leave the environment before
    // any thread or child exists.
    swivald::take_secrets();
    let args = Args::parse();
    // Socket activation first: it reads and clears LISTEN_* while the
    // process is still single-threaded.
    let activated = match swivald::take_activation_socket() {
        Ok(a) => a,
        Err(e) => return fail(&e),
    };
    let settings = match load_settings(&args) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    init_logging(settings.log_format);
    let listener = match activated {
        Some(a) => Listener::activated(a),
        None => match Listener::bind(&swivald::socket_path(settings.socket.as_deref())) {
            Ok(l) => l,
            Err(e) => return fail(&e),
        },
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    // A run's future is deep (agent loop, pipeline, tools); debug builds
    // need more than the default 2 MiB to poll it.
    runtime.thread_stack_size(8 * 1024 * 1024).enable_all();
    if settings.worker_threads > 0 {
        runtime.worker_threads(settings.worker_threads as usize);
    }
    let runtime = match runtime.build() {
        Ok(rt) => rt,
        Err(e) => return fail(&e),
    };
    let ran = runtime.block_on(swivald::run(settings, listener));
    // The grace is over: a thread still blocked (a read a cancel cannot
    // reach) must not keep the daemon alive.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&*e),
    }
}

fn load_settings(args: &Args) -> Result<Settings, SettingsError> {
    let mut settings = match &args.config {
        Some(path) => Settings::load(path, true)?,
        None => Settings::load(&swivald::config_dir().join("swivald.toml"), false)?,
    };
    if args.socket.is_some() {
        settings.socket = args.socket.clone();
    }
    if let Some(f) = args.log_format {
        settings.log_format = f;
    }
    if let Some(m) = args.max_message_size {
        settings.max_message_size = m;
    }
    Ok(settings)
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
        // Below info, jsonrpsee logs whole requests, and requests carry
        // the caller's environment and keys: never logged.
        .add_directive("jsonrpsee=info".parse().expect("a valid directive"))
        .add_directive("jsonrpsee_core=info".parse().expect("a valid directive"))
        .add_directive("jsonrpsee_server=info".parse().expect("a valid directive"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr);
    match format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn fail(e: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("swivald: error: {e}");
    ExitCode::FAILURE
}
