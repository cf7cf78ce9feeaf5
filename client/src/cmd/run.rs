//! `swivalctl run "task"`: create (or continue) a session, start a run,
//! stream progress to stderr, print the answer alone on stdout, and exit
//! with Swival's codes (0 success, 1 error, 2 exhausted, 130 interrupted).

use super::args::RunArgs;
use super::daemon::connect;
use super::follow::{follow, Followed, Interrupts, Progress};
use super::open::{open_session, Opened};
use super::report;
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use swival_protocol::{RunId, SessionId};
use swivalctl::{Client, ClientError};

fn read_task(a: &RunArgs) -> Result<String, String> {
    if let Some(t) = &a.task {
        return Ok(t.clone());
    }
    if std::io::stdin().is_terminal() {
        return Err("a task is required: swivalctl run \"what to do\", on stdin, or at the REPL".into());
    }
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).map_err(|e| format!("cannot read the task from stdin: {e}"))?;
    let s = s.trim().to_owned();
    if s.is_empty() {
        return Err("question is required (stdin was empty)".into());
    }
    Ok(s)
}

/// `run/start` for `swivalctl run`: killed, or its connection lost, `run`
/// takes its run with it; `--detach` leaves it going.
fn start_params(
    session_id: &SessionId,
    task: &str,
    env: Option<std::collections::BTreeMap<String, String>>,
    detach: bool,
) -> swival_protocol::RunStartParams {
    swival_protocol::RunStartParams {
        session_id: session_id.clone(),
        task: task.to_owned(),
        env,
        client_token: None,
        resume: false,
        cancel_on_disconnect: !detach,
        inbox: detach,
    }
}

/// `swivalctl run`.
pub async fn run(socket: &Path, a: RunArgs) -> Result<ExitCode, ClientError> {
    if a.reviewer_mode {
        return Ok(super::review::reviewer_mode(socket, &a).await);
    }
    if a.self_review && a.reviewer.is_some() {
        eprintln!("swivalctl: error: --self-review and --reviewer cannot be used together");
        return Ok(ExitCode::from(2));
    }
    if a.list_profiles {
        return super::session::list_profiles(socket, &a).await;
    }
    // No task on a terminal: the REPL (Swival's rule).
    if a.task.is_none() && std::io::stdin().is_terminal() && !a.json && !a.detach {
        return super::repl::run(socket, a).await;
    }
    let task = match read_task(&a) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("swivalctl: error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let cwd = std::env::current_dir()
        .map_err(|e| ClientError::StartFailed(format!("cannot read the current directory: {e}")))?;
    let base_dir = super::flags::base_dir(a.base_dir.as_deref(), &cwd);
    let client = connect(socket).await?;
    let Opened { session_id, from_seq, continue_env } = match open_session(&client, &a, &base_dir, &task).await? {
        Ok(opened) => opened,
        Err(code) => return Ok(code),
    };
    // Ctrl-C cancels the run in the daemon; listen before the run exists.
    let interrupt = Interrupts::listen()?;
    // Subscribe before starting, so no event of the run is missed.
    let events = client.subscribe_events(&session_id, from_seq).await?;
    let run_id = client.start(&start_params(&session_id, &task, continue_env, a.detach)).await?;
    if a.detach {
        println!("{run_id}");
        return Ok(ExitCode::SUCCESS);
    }
    let style = super::render::Style::for_stderr(a.color, a.no_color);
    let progress = Progress { quiet: a.quiet, json: a.json, style };
    let (result, cancelled) = match follow(&client, &session_id, &run_id, events, interrupt, &progress).await? {
        Followed::Ended(result, cancelled) => (result, cancelled),
        Followed::Left(signal) => {
            eprintln!("swivalctl: run {run_id} has not ended yet; swivald is cancelling it");
            return Ok(ExitCode::from(u8::try_from(128 + signal).unwrap_or(1)));
        }
    };
    if let Some(path) = &a.report {
        report::write(&client, &run_id, path).await;
    }
    if !a.json {
        if let Some(answer) = result.answer.as_deref().filter(|a| !a.is_empty()) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{answer}");
        }
    }
    if let Some(err) = result.error.as_deref().filter(|_| result.exit_code == 1) {
        eprintln!("Error: {err}");
    }
    if let (Some(total), Some(cached), false) =
        (result.stats.prompt_tokens, result.stats.cached_tokens, a.quiet || a.json)
    {
        let share = if total == 0 { 0.0 } else { cached as f64 * 100.0 / total as f64 };
        eprintln!(
            "  ◆ {} model calls, {total} prompt tokens, {cached} from the server's cache ({share:.0}%)",
            result.stats.llm_calls
        );
    }
    if let (Some(cost), false) = (result.stats.cost_usd, a.quiet || a.json) {
        eprintln!("  ◆ cost ${cost:.4} by model_prices");
    }
    if !(a.quiet || a.json) {
        eprintln!("{}", closing_line(&client, &session_id, &run_id).await);
    }
    let code = cancelled.map_or(result.exit_code, |signal| 128 + signal);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// What a run made, in one line on stderr: its session and run, the files
/// it changed (names when few), and the commands to see, undo or go on.
pub async fn closing_line(client: &Client, session: &SessionId, run: &RunId) -> String {
    use swival_protocol::methods::typed::RunChangesMethod;
    let which = swival_protocol::ChangesRef { run_id: Some(run.0.clone()), session_id: None };
    let params = swival_protocol::RunChangesParams { which, no_diff: true };
    let next = format!("continue: swivalctl run --session {session} \"…\"");
    let files: Vec<String> = match client.request::<RunChangesMethod>(&params).await {
        Ok(changes) => changes.files.iter().map(|f| super::clean::text(&f.path).into_owned()).collect(),
        // Not "no file changed": what it changed is not known.
        Err(_) => return format!("  ◆ session {session} · run {run} · its changes were not recorded · {next}"),
    };
    match files.len() {
        0 => format!("  ◆ session {session} · run {run} · no file changed · {next}"),
        n => {
            let names = if n <= 3 { format!(": {}", files.join(", ")) } else { String::new() };
            let s = if n == 1 { "" } else { "s" };
            format!(
                "  ◆ session {session} · run {run} · {n} file{s} changed{names} · see: swivalctl diff {run} · undo: swivalctl undo {run} · {next}"
            )
        }
    }
}
