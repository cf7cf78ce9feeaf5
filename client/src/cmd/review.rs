//! `swivalctl run --reviewer-mode BASE_DIR`: swivalctl as a reviewer
//! script (Swival's contract): the answer on stdin, the task from
//! `--objective FILE` or `SWIVAL_TASK`, criteria from `--verify FILE`;
//! the model's review on stdout; exit 0 accept, 1 retry, 2 error. The
//! daemon judges (`review/run`) through a session's pipeline; a
//! self-review names the reviewed session in `SWIVALD_SESSION`.

use super::args::RunArgs;
use super::daemon::connect;
use std::io::IsTerminal;
use std::io::Read as _;
use std::path::Path;
use std::process::ExitCode;
use swival_protocol::methods::typed as m;
use swival_protocol::{ReviewRunParams, SessionId};

/// Review the answer on stdin; Swival's exit codes.
pub async fn reviewer_mode(socket: &Path, a: &RunArgs) -> ExitCode {
    let Some(dir) = a.task.as_deref() else {
        eprintln!("swivalctl: error: --reviewer-mode requires a positional argument (base_dir)");
        return ExitCode::from(2);
    };
    if a.self_review || a.reviewer.is_some() {
        eprintln!("swivalctl: error: --reviewer-mode and --reviewer or --self-review cannot be used together");
        return ExitCode::from(2);
    }
    let mut answer = String::new();
    if std::io::stdin().read_to_string(&mut answer).is_err() || answer.trim().is_empty() {
        eprintln!("reviewer error: empty answer on stdin");
        return ExitCode::from(2);
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let base = cwd.join(dir);
    let params = ReviewRunParams {
        base_dir: base.display().to_string(),
        answer,
        task: std::env::var("SWIVAL_TASK").ok(),
        objective: a.objective.clone(),
        verify: a.verify.clone(),
        review_prompt: a.review_prompt.clone(),
        session_id: std::env::var("SWIVALD_SESSION").ok().filter(|s| !s.is_empty()).map(SessionId),
        config: Some(super::flags::overlay(a).to_config()),
        env: Some(swivalctl::caller_env()),
        trust: a.trust,
    };
    let reviewed = match connect(socket).await {
        Ok(client) => client.request::<m::ReviewRun>(&params).await,
        Err(e) => Err(e),
    };
    match reviewed {
        Ok(r) => {
            // Read by a program (Swival's reviewer contract) unless a terminal shows it.
            let r = if std::io::stdout().is_terminal() { super::clean::value(r) } else { r };
            match (&r.error, r.exit_code) {
                (Some(error), _) => eprintln!("reviewer error: {error}"),
                (None, 2) => eprintln!("reviewer error: no VERDICT found in LLM response"),
                _ => {}
            }
            if r.error.is_none() {
                println!("{}", r.text);
            }
            ExitCode::from(r.exit_code.clamp(0, 2) as u8)
        }
        Err(e) => {
            eprintln!("reviewer error: {e}");
            ExitCode::from(2)
        }
    }
}
