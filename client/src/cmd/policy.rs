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
                env: session.is_none().then(swivalctl::caller_env),
                session_id: session.map(SessionId),
                argv,
            };
            let r = client.policy_check(&params).await?;
            println!("{}: {}", if r.allowed { "allowed" } else { "refused" }, super::clean::text(&r.reason));
            Ok(if r.allowed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Action::Status { session } => {
            let st = client.policy_status(&SessionId(session)).await?;
            println!("{}", serde_json::to_string_pretty(&st).expect("serializes"));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `swivalctl trust [DIR] [--check]`: show what the project's swival.toml
/// enables and trust its current content. Exits 0 when trusted (or when
/// nothing needs trust), 1 with `--check` when it is not trusted.
pub async fn trust(socket: &Path, dir: Option<PathBuf>, check: bool, json: bool) -> Result<ExitCode, ClientError> {
    let cwd = std::env::current_dir()
        .map_err(|e| ClientError::StartFailed(format!("cannot read the current directory: {e}")))?;
    let base = dir.map(|p| if p.is_absolute() { p } else { cwd.join(p) }).unwrap_or(cwd);
    let client = connect(socket).await?;
    // Show first, then trust exactly what was shown.
    let mut params =
        swival_protocol::ProjectTrustParams { base_dir: base.display().to_string(), check: true, sha256: None };
    let mut result = client.trust_project(&params).await?;
    if !check && !result.enables.is_empty() {
        params.check = false;
        params.sha256 = result.sha256.clone();
        result = client.trust_project(&params).await?;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&result).unwrap_or_default());
        return Ok(if result.trusted { ExitCode::SUCCESS } else { ExitCode::from(1) });
    }
    let Some(path) = &result.path else {
        println!("{} has no swival.toml; nothing to trust", base.display());
        return Ok(ExitCode::SUCCESS);
    };
    if result.enables.is_empty() {
        println!("{path} runs no programs and widens nothing; it needs no trust");
        return Ok(ExitCode::SUCCESS);
    }
    println!("{path} (sha256 {}):", result.sha256.as_deref().unwrap_or("?"));
    for line in &result.enables {
        println!("  - {line}");
    }
    if result.trusted {
        println!("{}", if check { "trusted" } else { "trusted; a changed file must be trusted again" });
        Ok(ExitCode::SUCCESS)
    } else {
        println!("not trusted; run `swivalctl trust {}` after reviewing it", base.display());
        Ok(ExitCode::from(1))
    }
}
