//! The session a run goes to: `--session`'s, or one made for `run`'s
//! flags in the caller's environment.

use super::args::RunArgs;
use super::flags;
use super::report;
use std::path::Path;
use std::process::ExitCode;
use swival_protocol::{SessionCreateParams, SessionId};
use swivalctl::{Client, ClientError};

/// The session a run goes to, and where its events start.
pub(super) struct Opened {
    /// The session.
    pub(super) session_id: SessionId,
    /// The first event of the run to come.
    pub(super) from_seq: u64,
    /// This process's environment, sent again with the run of a session
    /// continued (the daemon holds it in memory only).
    pub(super) continue_env: Option<std::collections::BTreeMap<String, String>>,
}

/// Continue `--session` or create a session for the task, in this
/// process's environment (keys, PATH, what the user's scripts see); a
/// refused config is the exit code to end with, as in Swival.
pub(super) async fn open_session(
    client: &Client,
    a: &RunArgs,
    base_dir: &Path,
    task: &str,
) -> Result<Result<Opened, ExitCode>, ClientError> {
    if let Some(id) = &a.session {
        let id = SessionId(id.clone());
        let detail = client.session(&id).await?;
        let from_seq = detail.info.last_seq.0 + 1;
        return Ok(Ok(Opened { session_id: id, from_seq, continue_env: Some(swivalctl::caller_env()) }));
    }
    Ok(create_session(client, a, base_dir, task).await?.map(|session_id| Opened {
        session_id,
        from_seq: 1,
        continue_env: None,
    }))
}

/// `--session`'s session, or a new one of the current project for `run`'s
/// flags (background work's commands: `goal set`, `loop add`); a refused
/// config is the exit code to end with.
pub async fn session_for(client: &Client, a: &RunArgs, task: &str) -> Result<Result<SessionId, ExitCode>, ClientError> {
    if let Some(id) = &a.session {
        return Ok(Ok(SessionId(id.clone())));
    }
    let cwd = std::env::current_dir()
        .map_err(|e| ClientError::StartFailed(format!("cannot read the current directory: {e}")))?;
    let base_dir = super::flags::base_dir(a.base_dir.as_deref(), &cwd);
    create_session(client, a, &base_dir, task).await
}

/// A new session for `run`'s flags in `base_dir`, in this process's
/// environment, untitled: its first run's task titles it (in the daemon,
/// for every client). A refused config is the exit code to end with, as
/// in Swival (with a failure report for `task` when `--report` asks).
pub async fn create_session(
    client: &Client,
    a: &RunArgs,
    base_dir: &Path,
    task: &str,
) -> Result<Result<SessionId, ExitCode>, ClientError> {
    let params = SessionCreateParams {
        base_dir: base_dir.display().to_string(),
        config: Some(flags::overlay(a).to_config()),
        title: None,
        trust: a.trust,
        env: Some(swivalctl::caller_env()),
        from: None,
        worktree: a.worktree,
    };
    match client.create_session(&params).await {
        Ok(created) => {
            for w in &created.warnings {
                eprintln!("warning: {w}");
            }
            if let Some(w) = &created.worktree {
                let id = &created.session_id;
                eprintln!(
                    "working in {} on branch {}; bring the changes in with `swivalctl apply {id}`",
                    w.path, w.branch
                );
            }
            Ok(Ok(created.session_id))
        }
        Err(ClientError::Rpc { kind: Some(swival_protocol::ErrorCode::ConfigInvalid), message, data, .. }) => {
            // Bad config is a usage error (2); a script that cannot
            // run is a run failure (1), with a report, as in Swival.
            let code = data.and_then(|d| d.exit_code).unwrap_or(2);
            eprintln!("Error: {message}");
            if code == 1 {
                if let Some(path) = &a.report {
                    report::write_failure(path, task, &message);
                }
            }
            Ok(Err(ExitCode::from(u8::try_from(code).unwrap_or(2))))
        }
        Err(ClientError::Rpc { kind: Some(swival_protocol::ErrorCode::UntrustedProject), message, .. }) => {
            eprintln!("Error: {message}");
            Ok(Err(ExitCode::from(2)))
        }
        Err(e) => Err(e),
    }
}
