//! `swivalctl run "task"`: create (or continue) a session, start a run,
//! stream progress to stderr, print the answer alone on stdout, and exit
//! with Swival's codes (0 success, 1 error, 2 exhausted, 130 interrupted).

use super::daemon::connect;
use super::flags;
use super::follow::{follow, Followed, Interrupts};
use super::report;
use clap::Args;
use serde_json::{Map, Value};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use swival_protocol::{Event, EventKind, RunId, SessionCreateParams, SessionId};
use swivalctl::{Client, ClientError};

/// Flags of `swivalctl run`, named as in Swival.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task; read from stdin when omitted and stdin is not a terminal.
    pub task: Option<String>,
    /// LLM provider: lmstudio, llamacpp, ollama, openai, openrouter, generic, command.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id (for provider=command: the command line).
    #[arg(long)]
    pub model: Option<String>,
    /// Provider base URL.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Provider API key.
    #[arg(long)]
    pub api_key: Option<String>,
    /// Project directory (default: the nearest directory from the current
    /// one up holding `.git` or `swival.toml`, else the current directory).
    #[arg(long)]
    pub base_dir: Option<PathBuf>,
    /// Turn budget (default 100).
    #[arg(long)]
    pub max_turns: Option<u64>,
    /// Provider attempts per call (1 = no retry; default 5).
    #[arg(long)]
    pub retries: Option<u64>,
    /// Provider request timeout in seconds.
    #[arg(long)]
    pub provider_timeout: Option<f64>,
    /// Outbound filter command (repeatable: stages in order).
    #[arg(long)]
    pub llm_filter: Vec<String>,
    /// Reviewer command.
    #[arg(long)]
    pub reviewer: Option<String>,
    /// Most reviewer rounds.
    #[arg(long)]
    pub max_review_rounds: Option<u64>,
    /// Commands the agent may run: "all", "none", "ask" (each kind of
    /// command approved on this terminal first), or a comma-separated
    /// whitelist such as "ls,git,cargo" (Swival's --commands).
    #[arg(long, value_name = "all|none|ask|LIST", conflicts_with = "allowed_commands")]
    pub commands: Option<String>,
    /// Commands run_command may run, comma-separated (same as --commands LIST).
    #[arg(long, value_name = "LIST")]
    pub allowed_commands: Option<String>,
    /// Grant read/write access to an extra directory (repeatable).
    #[arg(long = "add-dir", visible_alias = "allow-dir", value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,
    /// Grant read-only access to an extra directory (repeatable).
    #[arg(long = "add-dir-ro", visible_alias = "allow-dir-ro", value_name = "DIR")]
    pub add_dir_ro: Vec<PathBuf>,
    /// Where the file tools may go: some (the base dir and --add-dir
    /// directories; default), all (anywhere but /), none (only .swival/).
    #[arg(long, value_parser = ["some", "all", "none"])]
    pub files: Option<String>,
    /// Lift the command whitelist and path checks (never the root rule);
    /// an explicit --files or --commands still wins.
    #[arg(long)]
    pub yolo: bool,
    /// How commands are confined: os (the kernel, default) or builtin.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<String>,
    /// Commands read only system directories, the base dir and the allowed dirs.
    #[arg(long)]
    pub sandbox_strict_read: bool,
    /// Sampling temperature (the provider's default when unset).
    #[arg(long, allow_negative_numbers = true)]
    pub temperature: Option<f64>,
    /// Nucleus sampling top_p (the provider's default when unset).
    #[arg(long, allow_negative_numbers = true)]
    pub top_p: Option<f64>,
    /// Sampling seed.
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<i64>,
    /// Most tokens the model may write per reply (default 32768).
    #[arg(long)]
    pub max_output_tokens: Option<u64>,
    /// Context window in tokens (discovered from the provider when unset).
    #[arg(long)]
    pub max_context_tokens: Option<u64>,
    /// Most lines a read returns when it names no limit (default 2000).
    #[arg(long)]
    pub max_output_lines: Option<u64>,
    /// Most KiB one file tool result or fetch_url page carries inline (default 50).
    #[arg(long)]
    pub max_output_kb: Option<u64>,
    /// Extra parameters merged into every provider request, as a JSON
    /// object (e.g. '{"chat_template_kwargs": {"enable_thinking": false}}').
    #[arg(long, value_name = "JSON", value_parser = flags::parse_extra_body)]
    pub extra_body: Option<Map<String, Value>>,
    /// Reasoning effort asked of the model.
    #[arg(long, value_name = "LEVEL", value_parser = ["none", "minimal", "low", "medium", "high", "xhigh", "default"])]
    pub reasoning_effort: Option<String>,
    /// User-Agent header sent to the provider.
    #[arg(long)]
    pub user_agent: Option<String>,
    /// Replace the built-in system prompt.
    #[arg(long, value_name = "TEXT", conflicts_with = "no_system_prompt")]
    pub system_prompt: Option<String>,
    /// Send no system prompt at all.
    #[arg(long)]
    pub no_system_prompt: bool,
    /// Do not load the project's instruction files (CLAUDE.md, AGENTS.md).
    #[arg(long)]
    pub no_instructions: bool,
    /// Let write_file overwrite files the agent has not read.
    #[arg(long)]
    pub no_read_guard: bool,
    /// Do not read the files the task names before the first model call:
    /// the first request is the system prompt and the task, as Swival's.
    #[arg(long)]
    pub no_read_named_files: bool,
    /// Offer the tools with short descriptions, without their rarely
    /// needed parameters, think and todo, with a short system prompt for
    /// small models (the default with a local provider: llamacpp,
    /// lmstudio, ollama).
    #[arg(long, overrides_with = "no_lean_tools")]
    pub lean_tools: bool,
    /// Offer Swival's tool schemas, as they are, whatever the provider.
    #[arg(long)]
    pub no_lean_tools: bool,
    /// Don't load auto-memory from .swival/memory/.
    #[arg(long, conflicts_with = "memory_full")]
    pub no_memory: bool,
    /// Inject all of MEMORY.md into the prompt (skip budgeted retrieval).
    #[arg(long)]
    pub memory_full: bool,
    /// Neither write .swival/continue.md when a run stops early nor load it.
    #[arg(long)]
    pub no_continue: bool,
    /// Offer the model spawn_subagent and check_subagents: subagents run
    /// as child sessions of the daemon.
    #[arg(long, overrides_with = "no_subagents")]
    pub subagents: bool,
    /// Do not offer subagents (the default).
    #[arg(long)]
    pub no_subagents: bool,
    /// Review each answer with this same model in a reviewer session
    /// (Swival's `--self-review`).
    #[arg(long)]
    pub self_review: bool,
    /// Act as a reviewer script: the positional argument is the base dir,
    /// the answer comes on stdin; exit 0 accept, 1 retry, 2 error.
    #[arg(long)]
    pub reviewer_mode: bool,
    /// Reviewer mode: read the task from FILE instead of SWIVAL_TASK.
    #[arg(long, value_name = "FILE")]
    pub objective: Option<String>,
    /// Reviewer mode: read acceptance criteria from FILE.
    #[arg(long, value_name = "FILE")]
    pub verify: Option<String>,
    /// Instructions added to the review prompt.
    #[arg(long, value_name = "TEXT")]
    pub review_prompt: Option<String>,
    /// Additional directory to scan for skills (can be repeated).
    #[arg(long, value_name = "DIR")]
    pub skills_dir: Vec<PathBuf>,
    /// Don't load or discover any skills.
    #[arg(long)]
    pub no_skills: bool,
    /// Swival's: no prompt-cache marks in requests. swivald never adds them
    /// (a server's own prefix cache still serves), so this changes nothing.
    #[arg(long)]
    pub no_prompt_cache: bool,
    /// Take whole <think>…</think> blocks out of the model's replies.
    #[arg(long)]
    pub sanitize_thinking: bool,
    /// Select a named LLM profile from config ([profiles.NAME]).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// List the profiles the config files define, and exit (Swival's).
    #[arg(long)]
    pub list_profiles: bool,
    /// Write Swival's report JSON to FILE.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// No progress on stderr (errors still show).
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not append the answer to .swival/HISTORY.md.
    #[arg(long)]
    pub no_history: bool,
    /// Read MCP servers from this JSON file (`mcpServers`) instead of
    /// .swival/mcp.json.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// Start no MCP server.
    #[arg(long)]
    pub no_mcp: bool,
    /// Accept the project's swival.toml for this run even if it is not
    /// trusted (for scripts and CI); nothing is recorded.
    #[arg(long)]
    pub trust: bool,
    /// Use the response cache.
    #[arg(long)]
    pub cache: bool,
    /// Encrypt secrets before they reach the provider.
    #[arg(long, conflicts_with = "no_encrypt_secrets")]
    pub encrypt_secrets: bool,
    /// Do not encrypt secrets (overrides the config).
    #[arg(long)]
    pub no_encrypt_secrets: bool,
    /// Hex key for --encrypt-secrets (16, 24 or 32 bytes; random per session when unset).
    #[arg(long, value_name = "HEX")]
    pub encrypt_secrets_key: Option<String>,
    /// Print every event as one JSON line on stdout instead of the answer.
    #[arg(long)]
    pub json: bool,
    /// Continue an existing session instead of creating one.
    #[arg(long)]
    pub session: Option<String>,
    /// Work in a new git worktree of the project, on its own branch
    /// `swival/<session>`, so the checkout stays untouched until
    /// `swivalctl apply SESSION` brings the changes in.
    #[arg(long, conflicts_with = "session")]
    pub worktree: bool,
    /// Start the run, print its id and return at once.
    #[arg(long)]
    pub detach: bool,
    /// Force ANSI colour in the REPL even when output is not a terminal.
    #[arg(long, conflicts_with = "no_color")]
    pub color: bool,
    /// No ANSI colour in the REPL even on a terminal (so does NO_COLOR).
    #[arg(long)]
    pub no_color: bool,
}

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

/// The session a run goes to, and where its events start.
struct Opened {
    /// The session.
    session_id: SessionId,
    /// The first event of the run to come.
    from_seq: u64,
    /// This process's environment, sent again with the run of a session
    /// continued (the daemon holds it in memory only).
    continue_env: Option<std::collections::BTreeMap<String, String>>,
}

/// Continue `--session` or create a session for the task, in this
/// process's environment (keys, PATH, what the user's scripts see); a
/// refused config is the exit code to end with, as in Swival.
async fn open_session(
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

/// How progress is shown.
pub struct Progress {
    /// Show only what Swival shows with `--quiet`: filter stderr (errors
    /// are printed at the end of the run).
    pub quiet: bool,
    /// Print events as JSON lines on stdout.
    pub json: bool,
    /// How to colour the progress on stderr.
    pub style: super::render::Style,
}

impl Progress {
    /// `v` as it may be shown: exact for `--json`, its text cleaned of
    /// control sequences for a terminal (`clean`).
    pub fn shown<T: serde::Serialize + serde::de::DeserializeOwned>(&self, v: T) -> T {
        if self.json {
            v
        } else {
            super::clean::value(v)
        }
    }

    /// Show one event.
    pub fn show(&self, event: &Event) {
        if self.json {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", serde_json::to_string(event).expect("events serialize"));
            return;
        }
        // A filter's stderr is shown as it was written, even with --quiet (as Swival does).
        if let EventKind::Stderr { source, text, .. } = &event.kind {
            if *source == swival_protocol::StderrSource::Filter {
                eprintln!("{text}");
            }
            return;
        }
        if self.quiet {
            return;
        }
        match &event.kind {
            EventKind::TurnStarted { turn, max_turns } => eprintln!("turn {turn}/{max_turns}"),
            other => eprint!("{}", super::render::event(self.style, other)),
        }
    }
}
