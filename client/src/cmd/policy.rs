//! `swivalctl policy check` and `swivalctl policy status`.

use super::daemon::connect;
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use swival_protocol::{PolicyCheckParams, SessionId};
use swivalctl::ClientError;

/// Policy questions.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Would this command run? `swivalctl policy check [--session ID] -- CMD ARGS...`
    Check {
        /// Check against this session (default: the config of --base-dir or the current directory).
        #[arg(long)]
        session: Option<String>,
        /// Project directory when no session is given.
        #[arg(long)]
        base_dir: Option<PathBuf>,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        argv: Vec<String>,
    },
    /// What guards a session: filters, hooks, reviewer, sandbox (JSON).
    Status {
        /// The session.
        session: String,
    },
}

/// `swivalctl policy ...`; `check` exits 0 when allowed, 1 when refused.
pub async fn run(socket: &Path, action: Action) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    match action {
        Action::Check { session, base_dir, argv } => {
            let cwd = std::env::current_dir()
                .map_err(|e| ClientError::StartFailed(format!("cannot read the current directory: {e}")))?;
            let base = base_dir.map(|p| if p.is_absolute() { p } else { cwd.join(p) }).unwrap_or(cwd);
            let params = PolicyCheckParams {
                base_dir: session.is_none().then(|| base.display().to_string()),
                session_id: session.map(SessionId),
                argv,
            };
            let r = client.policy_check(&params).await?;
            println!("{}: {}", if r.allowed { "allowed" } else { "refused" }, r.reason);
            Ok(if r.allowed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Action::Status { session } => {
            let st = client.policy_status(&SessionId(session)).await?;
            println!("{}", serde_json::to_string_pretty(&st).expect("serializes"));
            Ok(ExitCode::SUCCESS)
        }
    }
}
