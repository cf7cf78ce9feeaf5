//! `swivalctl sessions`, `apply`, `attach`, `cancel` and `config`.

use super::daemon::connect;
use super::follow::Progress;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use swival_protocol::methods::{typed as m, NoParams};
use swival_protocol::{ConfigResolveParams, EventKind, RunId, SessionId};
use swivalctl::ClientError;

/// `swivalctl sessions …`.
#[derive(Debug, clap::Subcommand)]
pub enum SessionsAction {
    /// Delete sessions unused for a while (their conversation, runs,
    /// reports and events), then compact the database. Sessions in use are
    /// kept.
    Prune {
        /// How long unused: a number with s, m, h, d or w (`30d`, `12h`).
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        older_than: std::time::Duration,
    },
}

/// `30d`, `12h`, `90m`, `45s`, `2w` as a duration.
pub(super) fn parse_age(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("{s:?} is not an age: write a number and a unit, s, m, h, d or w (e.g. 30d)");
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().map_err(|_| bad())?;
    let unit = match unit {
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        "w" => 604_800.0,
        _ => return Err(bad()),
    };
    std::time::Duration::try_from_secs_f64(n * unit).map_err(|_| bad())
}

/// `swivalctl sessions prune --older-than AGE`.
pub async fn prune(socket: &Path, older_than: std::time::Duration, json: bool) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    let params = swival_protocol::SessionPruneParams { older_than_s: older_than.as_secs_f64() };
    let r = client.request::<m::SessionPrune>(&params).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r).expect("serializes"));
    } else {
        println!("removed {} session(s)", r.removed.len());
        for id in &r.removed {
            println!("  {id}");
        }
        if !r.worktrees_removed.is_empty() {
            println!("removed {} worktree(s) of deleted sessions; their branches are kept:", r.worktrees_removed.len());
            for (path, branch) in r.worktrees_removed.iter().zip(&r.branches_kept) {
                println!("  {path}  (branch {branch})");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `swivalctl apply SESSION`: bring a worktree session's changes into
/// the checkout as uncommitted changes; exit 1 on a conflict (nothing is
/// changed then).
pub async fn apply(socket: &Path, session: String, json: bool) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    let r = client.request::<m::SessionApply>(&swival_protocol::SessionRef { session_id: SessionId(session) }).await?;
    let r = if json { r } else { super::clean::value(r) };
    if json {
        println!("{}", serde_json::to_string_pretty(&r).expect("serializes"));
    } else if !r.applied {
        eprintln!(
            "swivalctl: not applied: {} file(s) of branch {} conflict with your checkout; nothing was changed:",
            r.conflicts.len(),
            r.branch
        );
        for f in &r.conflicts {
            eprintln!("  {f}");
        }
    } else if r.files.is_empty() {
        println!("nothing new to apply from branch {}", r.branch);
    } else {
        println!("applied {} file(s) from branch {} as uncommitted changes:", r.files.len(), r.branch);
        for f in &r.files {
            println!("  {f}");
        }
    }
    Ok(if r.applied { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Which sessions `swivalctl sessions` lists.
#[derive(Debug, clap::Args)]
pub struct SessionsFilter {
    /// Only the sessions of this project (directory): those whose base
    /// directory is it or lies beneath it.
    #[arg(long, value_name = "DIR", conflicts_with = "here")]
    pub project: Option<PathBuf>,
    /// Only the sessions of the current project (the enclosing git
    /// repository or `swival.toml` directory, as `run` finds it).
    #[arg(long)]
    pub here: bool,
    /// Show what each session's runs cost (priced by `model_prices`), and
    /// the total.
    #[arg(long)]
    pub cost: bool,
}

/// `swivalctl sessions`: one line per session, newest first (by last
/// use), those of one project with `--project` or `--here`.
pub async fn list(socket: &Path, filter: SessionsFilter, json: bool) -> Result<ExitCode, ClientError> {
    let cwd = std::env::current_dir()
        .map_err(|e| ClientError::StartFailed(format!("cannot read the current directory: {e}")))?;
    let project = match (&filter.project, filter.here) {
        (Some(dir), _) => Some(super::listing::project(&cwd.join(dir))),
        (None, true) => Some(super::listing::project(&super::flags::base_dir(None, &cwd))),
        (None, false) => None,
    };
    let client = connect(socket).await?;
    let list = client.list_sessions().await?;
    let sessions = super::listing::newest_first(list.sessions, project.as_deref());
    if json {
        let list = swival_protocol::SessionListResult { sessions };
        println!("{}", serde_json::to_string_pretty(&list).expect("serializes"));
        return Ok(ExitCode::SUCCESS);
    }
    let now = std::time::SystemTime::now();
    for s in &sessions {
        print!("{}", super::listing::lines(s, "", now));
        if filter.cost {
            println!(
                "    cost {}",
                s.cost_usd.map_or_else(|| "unknown (no model_prices for its model)".to_owned(), |c| format!("${c:.4}"))
            );
        }
    }
    if filter.cost && !sessions.is_empty() {
        let total: f64 = sessions.iter().filter_map(|s| s.cost_usd).sum();
        let priced = sessions.iter().filter(|s| s.cost_usd.is_some()).count();
        println!("total ${total:.4} over {priced} priced session(s) of {}", sessions.len());
    }
    if sessions.is_empty() {
        match project {
            Some(dir) => eprintln!("no session in {}", super::clean::text(&dir.display().to_string())),
            None => eprintln!("no session yet: `swivalctl repl` or `swivalctl run TASK` makes one"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `swivalctl attach SESSION [--from-seq N]`: print events from N until a
/// run finishes (or forever with `follow`).
pub async fn attach(
    socket: &Path,
    session: String,
    from_seq: u64,
    follow: bool,
    json: bool,
) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    let mut events = client.subscribe_events(&SessionId(session), from_seq).await?;
    let style = super::render::Style::for_stderr(false, false);
    let progress = Progress { quiet: false, json, style };
    while let Some(event) = events.next().await {
        let event = progress.shown(event.map_err(|e| ClientError::Transport(e.to_string()))?);
        progress.show(&event);
        if let EventKind::RunFinished(r) = &event.kind {
            if !json {
                let run = event.run_id.as_ref().map(|r| r.0.as_str()).unwrap_or("?");
                println!("run {run} finished: {}", r.outcome.as_str());
                if let Some(a) = &r.answer {
                    println!("{a}");
                }
            }
            if !follow {
                break;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `swivalctl cancel RUN`.
pub async fn cancel(socket: &Path, run: String) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    if client.cancel_run(&RunId(run.clone())).await? {
        println!("cancelling run {run}");
    } else {
        println!("run {run} had already finished");
    }
    Ok(ExitCode::SUCCESS)
}

/// `swivalctl config`: the effective config for a base dir, with sources.
pub async fn show(socket: &Path, base_dir: Option<PathBuf>, json: bool) -> Result<ExitCode, ClientError> {
    let cwd = std::env::current_dir()
        .map_err(|e| ClientError::StartFailed(format!("cannot read the current directory: {e}")))?;
    let base = super::flags::base_dir(base_dir.as_deref(), &cwd);
    let client = connect(socket).await?;
    let r = client.resolve_config(&ConfigResolveParams { base_dir: base.display().to_string(), config: None }).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r).expect("serializes"));
        return Ok(ExitCode::SUCCESS);
    }
    let r = super::clean::value(r);
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    {
        let map = &r.config.0;
        for (k, v) in map {
            let source = r.sources.get(k).map(String::as_str).unwrap_or("default");
            println!("{k} = {v}  # {source}");
        }
        // Runs use this shell's environment: say which variable gives the
        // key, never its value.
        let provider = map.get("provider").and_then(Value::as_str).unwrap_or_default();
        if let Some(var) = swival_protocol::provider_key_env(provider).filter(|_| map["api_key"].is_null()) {
            let set = std::env::var_os(var).is_some_and(|v| !v.is_empty());
            println!("# api key: from {var} in the environment of swivalctl ({})", if set { "set" } else { "not set" });
        }
    }
    // The daemon's bounds on background work (swivald.toml), and today's use.
    let status = client.request::<m::DaemonStatusMethod>(&NoParams).await?;
    if let Some(b) = status.background {
        println!("# background work (swivald.toml): {}", super::daemon::background_words(&b));
    }
    Ok(ExitCode::SUCCESS)
}

/// `swivalctl run --list-profiles`: the profiles the project's config
/// files define (the one in use marked), then exit.
pub async fn list_profiles(socket: &Path, a: &super::args::RunArgs) -> Result<ExitCode, ClientError> {
    let cwd = std::env::current_dir()
        .map_err(|e| ClientError::StartFailed(format!("cannot read the current directory: {e}")))?;
    let base = super::flags::base_dir(a.base_dir.as_deref(), &cwd);
    let client = connect(socket).await?;
    let config = Some(super::flags::overlay(a).to_config());
    let r = client.resolve_config(&ConfigResolveParams { base_dir: base.display().to_string(), config }).await?;
    let r = super::clean::value(r);
    if r.profiles.is_empty() {
        println!("No profiles defined. Add [profiles.NAME] sections to swival.toml or the global config.toml.");
        return Ok(ExitCode::SUCCESS);
    }
    for p in &r.profiles {
        let mark = if p.active { "*" } else { " " };
        let model = p.model.as_deref().map(|m| format!(" / {m}")).unwrap_or_default();
        let description = p.description.as_deref().map(|d| format!("  {d}")).unwrap_or_default();
        println!("{mark} {}: {}{model}{description}", p.name, p.provider);
    }
    Ok(ExitCode::SUCCESS)
}

/// `swivalctl models`: what the provider the project's config names (with
/// `--provider`/`--base-url` over it) offers, asked with this shell's keys.
pub async fn models(socket: &Path, m: ModelsArgs) -> Result<ExitCode, ClientError> {
    let cwd = std::env::current_dir()
        .map_err(|e| ClientError::StartFailed(format!("cannot read the current directory: {e}")))?;
    let base = super::flags::base_dir(m.base_dir.as_deref(), &cwd);
    let mut overrides = serde_json::Map::new();
    if let Some(p) = m.provider {
        overrides.insert("provider".into(), Value::String(p));
    }
    if let Some(u) = m.base_url {
        overrides.insert("base_url".into(), Value::String(u));
    }
    let params = swival_protocol::ProviderModelsParams {
        session_id: None,
        base_dir: Some(base.display().to_string()),
        config: (!overrides.is_empty()).then_some(Value::Object(overrides)),
        env: Some(swivalctl::caller_env()),
    };
    let client = connect(socket).await?;
    let listed = client.request::<swival_protocol::methods::typed::ProviderModelsMethod>(&params).await?;
    if m.json {
        println!("{}", serde_json::to_string_pretty(&listed).expect("serializes"));
        return Ok(ExitCode::SUCCESS);
    }
    let listed = super::clean::value(listed);
    println!("{} serves {} model(s):", listed.base_url, listed.models.len());
    for (i, model) in listed.models.iter().enumerate() {
        let current = if listed.current.as_deref() == Some(model.id.as_str()) { "  (configured)" } else { "" };
        let window = model.context_window.map(|w| format!("  context {w}")).unwrap_or_default();
        println!("{:>3}. {}{window}{current}", i + 1, model.id);
    }
    Ok(ExitCode::SUCCESS)
}

/// `swivalctl models`'s flags.
#[derive(Debug, clap::Args)]
pub struct ModelsArgs {
    /// Project directory whose config names the provider (default: as `run`).
    #[arg(long)]
    pub base_dir: Option<PathBuf>,
    /// Ask this provider instead of the configured one.
    #[arg(long)]
    pub provider: Option<String>,
    /// Ask this server instead of the configured one.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// What to ask about MCP servers.
#[derive(Debug, clap::Subcommand)]
pub enum McpAction {
    /// Each server: transport, command or URL, pid, tools and the sessions using it.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `swivalctl mcp status`.
pub async fn mcp(socket: &Path, action: McpAction) -> Result<ExitCode, ClientError> {
    let McpAction::Status { json } = action;
    let client = connect(socket).await?;
    let status = client.request::<m::McpStatus>(&NoParams).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&status).expect("serializes"));
        return Ok(ExitCode::SUCCESS);
    }
    let status = super::clean::value(status);
    if status.servers.is_empty() {
        println!("no MCP server");
    }
    for s in &status.servers {
        let state = match (s.running, s.pid) {
            (true, Some(pid)) => format!("running, pid {pid}"),
            (true, None) => "connected".to_owned(),
            (false, _) => "stopped".to_owned(),
        };
        println!("{} ({}, {state}, {} session(s)) in {}", s.name, s.transport.name(), s.sessions, s.base_dir);
        println!("  {}", s.command);
        if let Some(e) = &s.error {
            println!("  last error: {e}");
        }
        for t in &s.tools {
            println!("  - {t}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What to do with the response cache.
#[derive(Debug, clap::Subcommand)]
pub enum CacheAction {
    /// Entries, size, hits, misses and shared calls (JSON).
    Stats,
    /// Remove every entry.
    Clear,
}

/// `swivalctl cache stats|clear`.
pub async fn cache(socket: &Path, action: CacheAction) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    let shown = match action {
        CacheAction::Stats => serde_json::to_string_pretty(&client.request::<m::CacheStatsMethod>(&NoParams).await?),
        CacheAction::Clear => serde_json::to_string_pretty(&client.request::<m::CacheClear>(&NoParams).await?),
    };
    println!("{}", shown.expect("serializes"));
    Ok(ExitCode::SUCCESS)
}
