//! swivalctl: the command-line client of swivald.

mod cmd;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// swivalctl: run and manage LLM coding-agent sessions in swivald.
#[derive(Debug, Parser)]
#[command(name = "swivalctl", version)]
pub struct Cli {
    /// Daemon socket (default: $SWIVALD_SOCKET, else $XDG_RUNTIME_DIR/swival/swivald.sock,
    /// else $TMPDIR/swival-$UID/swivald.sock).
    #[arg(long, global = true, env = "SWIVALD_SOCKET")]
    socket: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the daemon's status (starts the daemon if none runs).
    Status {
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start, stop or install the daemon.
    Daemon {
        #[command(subcommand)]
        action: cmd::daemon::Action,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let socket =
        swival_protocol::paths::socket_path(cli.socket.as_deref(), nix::unistd::getuid().as_raw());
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return cmd::fail(&e),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Status { json } => cmd::daemon::status(&socket, json).await,
            Command::Daemon { action } => cmd::daemon::run(&socket, action).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => cmd::fail(&e),
    }
}
