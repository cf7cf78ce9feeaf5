//! `swivalctl loop …` and `swivalctl loops`: prompts the daemon runs on a
//! schedule, each firing in a fresh worktree of the project.

use super::args::RunArgs;
use super::daemon::connect;
use std::path::Path;
use std::process::ExitCode;
use swival_protocol::methods::typed as m;
use swival_protocol::{Loop, LoopAddParams, LoopListParams, LoopRemoveParams, Schedule, SessionId};
use swivalctl::ClientError;

/// `swivalctl loop …`.
#[derive(Debug, clap::Subcommand)]
pub enum LoopAction {
    /// Add a loop (the prompt is the task argument; `--session ID` for an
    /// existing session, else a new session of the project with `run`'s
    /// flags). Without a schedule it fires every 10 minutes (Swival's).
    Add(Box<AddArgs>),
    /// Remove a loop by id, or `all` (a firing in flight finishes).
    Rm {
        /// The loop's id, or `all`.
        id: String,
        /// With `all`: only this session's loops.
        #[arg(long)]
        session: Option<String>,
    },
}

/// `loop add`'s flags: `run`'s, and the schedule.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Every this long: 30m, 1h30m, 90s, "every 2 hours" (Swival's words).
    #[arg(long, conflicts_with_all = ["cron", "at"])]
    every: Option<String>,
    /// A cron expression, five fields (or six with seconds), local time.
    #[arg(long, conflicts_with = "at")]
    cron: Option<String>,
    /// Once, at this time: RFC 3339 or HH:MM (the next such time).
    #[arg(long)]
    at: Option<String>,
    /// Most firings.
    #[arg(long, value_name = "N")]
    max_runs: Option<u64>,
    /// Most tokens, all firings together.
    #[arg(long, value_name = "N")]
    token_budget: Option<u64>,
    /// Most time one firing may run (past it, it is cancelled and counts as failed).
    #[arg(long, value_name = "AGE", value_parser = super::session::parse_age)]
    max_time: Option<std::time::Duration>,
    /// Post each of its inbox entries (JSON) to this http(s) URL.
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    #[command(flatten)]
    run: RunArgs,
}

/// `swivalctl loop …`.
pub async fn run(socket: &Path, action: LoopAction) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    match action {
        LoopAction::Add(a) => add(&client, *a).await,
        LoopAction::Rm { id, session } => {
            let all = id == "all";
            let params = LoopRemoveParams { session_id: session.map(SessionId), loop_id: (!all).then_some(id), all };
            let removed = client.request::<m::LoopRemove>(&params).await?.removed;
            let n = removed.len();
            println!("cancelled {n} loop{}", if n == 1 { "" } else { "s" });
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn add(client: &swivalctl::Client, a: AddArgs) -> Result<ExitCode, ClientError> {
    let Some(prompt) = a.run.task.clone().filter(|t| !t.trim().is_empty()) else {
        eprintln!("swivalctl: error: a prompt is required: swivalctl loop add --every 30m \"what to do\"");
        return Ok(ExitCode::from(2));
    };
    let every_s = match (&a.every, &a.cron, &a.at) {
        (Some(text), _, _) => match super::interval::whole(text) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("swivalctl: error: {e}");
                return Ok(ExitCode::from(2));
            }
        },
        (None, None, None) => Some(super::interval::DEFAULT_S),
        _ => None,
    };
    let schedule = Schedule { every_s, cron: a.cron.clone(), at: a.at.clone() };
    let session_id = match super::open::session_for(client, &a.run, &prompt).await? {
        Ok(id) => id,
        Err(code) => return Ok(code),
    };
    let budget = swival_protocol::LoopBudget {
        max_runs: a.max_runs,
        token_budget: a.token_budget,
        max_seconds: a.max_time.map(|d| d.as_secs().max(1)),
    };
    let l = client
        .request::<m::LoopAdd>(&LoopAddParams { session_id, prompt, schedule, budget, webhook: a.webhook.clone() })
        .await?
        .loop_;
    if a.run.json {
        println!("{}", serde_json::to_string_pretty(&l).expect("a loop serializes"));
    } else {
        println!("loop {} added to session {}: {}", l.loop_id, l.session_id, when(&l));
        eprintln!(
            "each firing works in a fresh worktree; `swivalctl loops` lists them, `swivalctl loop rm {}` removes it",
            l.loop_id
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `swivalctl loops`.
pub async fn list(socket: &Path, session: Option<String>, all: bool, json: bool) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    let params = LoopListParams { session_id: session.map(SessionId), all };
    let loops = client.request::<m::LoopList>(&params).await?.loops;
    if json {
        println!("{}", serde_json::to_string_pretty(&loops).expect("loops serialize"));
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", table(&loops));
    Ok(ExitCode::SUCCESS)
}

/// The loops as Swival's `/loops` lists them, with ours.
pub fn table(loops: &[Loop]) -> String {
    if loops.is_empty() {
        return "no active loops\n".into();
    }
    let mut out = String::from("active loops:\n");
    for l in loops {
        let prompt: String = l.prompt.chars().take(60).collect();
        let mut line =
            format!("  {}: {}, fired {}, prompt={:?}", l.loop_id, when(l), l.fires, super::clean::text(&prompt));
        if l.consecutive_failures > 0 {
            line += &format!("  (failures: {})", l.consecutive_failures);
        }
        if l.status != swival_protocol::LoopStatus::Active {
            line += &format!("  [{}]", l.status.as_str());
        }
        out += &line;
        out.push('\n');
        if let Some(session) = &l.last_session {
            out += &format!("      last firing: session {session} (swivalctl diff --session {session}; swivalctl apply {session})\n");
        }
    }
    out
}

/// A loop's schedule and next firing, in words.
fn when(l: &Loop) -> String {
    let schedule = match (&l.schedule.every_s, &l.schedule.cron, &l.schedule.at) {
        (Some(s), _, _) => format!("every {}", super::interval::show(*s)),
        (_, Some(c), _) => format!("cron {c:?}"),
        (_, _, Some(at)) => format!("once at {at}"),
        _ => "never".into(),
    };
    match &l.next_fire_at {
        _ if l.firing => format!("{schedule}, firing now"),
        Some(next) => format!("{schedule}, next at {next}"),
        None => schedule,
    }
}
