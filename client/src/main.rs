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
    /// else $TMPDIR/swival-$UID/swivald.sock). The variable is read with the
    /// other defaults (`socket_path`), not by the parser, so a usage line
    /// never shows the option as given when only the variable is set.
    #[arg(long, global = true)]
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
    /// Serve the Agent Client Protocol on stdin/stdout for an editor (Zed,
    /// Neovim, Emacs, JetBrains): each ACP session is a swivald session.
    Acp {
        /// Append diagnostics to this file instead of stderr (Swival's
        /// `--acp-log`); stdout carries only protocol messages either way.
        #[arg(long, value_name = "FILE")]
        log: Option<PathBuf>,
    },
    /// Run a task in a project: answer on stdout, progress on stderr (with
    /// no task on a terminal: the REPL).
    Run(Box<cmd::args::RunArgs>),
    /// Work interactively on a session (`--session ID` attaches to one),
    /// with `run`'s flags.
    Repl(Box<cmd::args::RunArgs>),
    /// List sessions, newest first, with when each was last used, its
    /// project and title; or prune old ones.
    Sessions {
        /// Print JSON (times in RFC 3339).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        filter: cmd::session::SessionsFilter,
        #[command(subcommand)]
        action: Option<cmd::session::SessionsAction>,
    },
    /// Bring a worktree session's changes (`run --worktree`) into the
    /// checkout as uncommitted changes; on a conflict nothing changes and
    /// the files are listed (exit 1).
    Apply {
        /// The session id.
        session: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a session's events from a seq until a run finishes.
    Attach {
        /// The session id.
        session: String,
        /// First event seq to print.
        #[arg(long, default_value_t = 1)]
        from_seq: u64,
        /// Keep following after a run finishes.
        #[arg(long)]
        follow: bool,
        /// Print events as JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Show what a run changed: each file created, modified, deleted or
    /// renamed, by which tool or command, with unified diffs.
    Diff {
        /// The run (or an undo's `u_…` id); with `--session`, its last run;
        /// with neither, the latest run of this project.
        run: Option<String>,
        /// The session whose last run to show.
        #[arg(long)]
        session: Option<String>,
        /// Only the list of files, no diffs.
        #[arg(long)]
        stat: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Put back what a run changed; refuses (changing nothing) when a file
    /// changed since, naming it. Undo an undo to redo.
    Undo {
        /// The run (or an undo's `u_…` id); with `--session`, its last run;
        /// with neither, the latest run of this project.
        run: Option<String>,
        /// The session whose last run to undo.
        #[arg(long)]
        session: Option<String>,
        /// Put back the files that did not change since, leave the others.
        #[arg(long)]
        force: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Set, show, pause, resume or clear a session's goal: work the daemon
    /// goes on with, run after run, while you are away.
    Goal {
        #[command(subcommand)]
        action: cmd::goal::GoalAction,
    },
    /// List every goal, most recently changed first.
    Goals {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add or remove a loop: a prompt the daemon runs on a schedule, each
    /// firing in a fresh worktree of the project.
    Loop {
        #[command(subcommand)]
        action: cmd::loops::LoopAction,
    },
    /// List the active loops (Swival's `/loops`).
    Loops {
        /// Only this session's.
        #[arg(long)]
        session: Option<String>,
        /// Also those that no longer fire.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// What background work did (goals, loop firings, detached runs,
    /// approvals waiting), newest first, with the commands to see or apply it.
    Inbox {
        /// At most this many entries.
        #[arg(long, default_value_t = 20)]
        limit: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Answer an approval a background run waits for (from `swivalctl inbox`).
    Approve {
        /// The run's session.
        session: String,
        /// The approval's id.
        approval: String,
        /// allow or deny.
        answer: String,
        /// For the rest of the session (allow: the same command; deny: its bucket).
        #[arg(long)]
        always: bool,
    },
    /// Cancel a run.
    Cancel {
        /// The run id.
        run: String,
    },
    /// List the models the project's provider serves (`/model` picks one in the REPL).
    Models(cmd::session::ModelsArgs),
    /// Print the effective config for a project, with where each key came from.
    Config {
        /// Project directory (default: the nearest directory from the
        /// current one up holding `.git` or `swival.toml`, as `run`).
        #[arg(long)]
        base_dir: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Collect the snapshot stores: delete what no stored run's diff or
    /// undo needs (also done after each prune of old sessions).
    Gc {
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Response cache statistics, or empty it.
    Cache {
        #[command(subcommand)]
        action: cmd::session::CacheAction,
    },
    /// Trust a project's swival.toml as it is now (it may run programs or
    /// widen the sandbox); shows what it enables first.
    Trust {
        /// Project directory (default: the current directory).
        dir: Option<PathBuf>,
        /// Only say whether it is trusted (exit 1 when not); record nothing.
        #[arg(long)]
        check: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Ask what the policy allows.
    Policy {
        #[command(subcommand)]
        action: cmd::policy::Action,
    },
    /// The daemon's MCP servers.
    Mcp {
        #[command(subcommand)]
        action: cmd::session::McpAction,
    },
    /// Add, delete, and list agent skills (Swival's `swival skills`; no
    /// daemon needed).
    Skills {
        #[command(subcommand)]
        action: cmd::skills::SkillsAction,
    },
    /// Start, stop or install the daemon.
    Daemon {
        #[command(subcommand)]
        action: cmd::daemon::Action,
    },
}

fn main() -> ExitCode {
    // `swivalctl sessions | head` should end quietly, like any Unix tool.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let socket = swival_protocol::paths::socket_path(cli.socket.as_deref(), nix::unistd::getuid().as_raw());
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return cmd::fail(&e),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Status { json } => cmd::daemon::status(&socket, json).await,
            Command::Daemon { action } => cmd::daemon::run(&socket, action).await,
            Command::Acp { log } => Ok(cmd::acp::serve(&socket, log.as_deref()).await),
            Command::Run(args) => cmd::run::run(&socket, *args).await,
            Command::Repl(args) => cmd::repl::run(&socket, *args).await,
            Command::Sessions { json, filter, action: None } => cmd::session::list(&socket, filter, json).await,
            Command::Sessions { json, action: Some(cmd::session::SessionsAction::Prune { older_than }), .. } => {
                cmd::session::prune(&socket, older_than, json).await
            }
            Command::Attach { session, from_seq, follow, json } => {
                cmd::session::attach(&socket, session, from_seq, follow, json).await
            }
            Command::Goal { action } => cmd::goal::run(&socket, action).await,
            Command::Goals { json } => cmd::goal::list(&socket, json).await,
            Command::Loop { action } => cmd::loops::run(&socket, action).await,
            Command::Loops { session, all, json } => cmd::loops::list(&socket, session, all, json).await,
            Command::Inbox { limit, json } => cmd::inbox::list(&socket, limit, json).await,
            Command::Approve { session, approval, answer, always } => {
                cmd::inbox::approve(&socket, session, approval, &answer, always).await
            }
            Command::Cancel { run } => cmd::session::cancel(&socket, run).await,
            Command::Diff { run, session, stat, json } => match cmd::changes::which(&socket, run, session).await {
                Ok(which) => cmd::changes::diff(&socket, which, stat, json).await,
                Err(e) => Err(e),
            },
            Command::Undo { run, session, force, json } => match cmd::changes::which(&socket, run, session).await {
                Ok(which) => cmd::changes::undo(&socket, which, force, json).await,
                Err(e) => Err(e),
            },
            Command::Apply { session, json } => cmd::session::apply(&socket, session, json).await,
            Command::Policy { action } => cmd::policy::run(&socket, action).await,
            Command::Trust { dir, check, json } => cmd::policy::trust(&socket, dir, check, json).await,
            Command::Gc { json } => cmd::daemon::gc(&socket, json).await,
            Command::Cache { action } => cmd::session::cache(&socket, action).await,
            Command::Mcp { action } => cmd::session::mcp(&socket, action).await,
            Command::Models(m) => cmd::session::models(&socket, m).await,
            Command::Config { base_dir, json } => cmd::session::show(&socket, base_dir, json).await,
            Command::Skills { action } => Ok(cmd::skills::run(action).await),
        }
    });
    // A read of the terminal still waiting (an approval left unanswered
    // by a signal) must not keep the process from exiting.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        Err(e) => cmd::fail(&e),
    }
}
