//! `swivalctl goal …` and `swivalctl goals`: a session's goal, which the
//! daemon works on by itself, run after run, after the terminal closes.

use super::args::RunArgs;
use super::daemon::connect;
use std::path::Path;
use std::process::ExitCode;
use swival_protocol::methods::{typed as m, NoParams};
use swival_protocol::{Goal, GoalSetParams, SessionId, SessionRef};
use swivalctl::ClientError;

/// `swivalctl goal …`.
#[derive(Debug, clap::Subcommand)]
pub enum GoalAction {
    /// Set a goal (the objective is the task argument; `--session ID` for
    /// an existing session, else a new session of the project with `run`'s
    /// flags): the daemon keeps working on it until the model calls
    /// `complete_goal`, a budget is spent, it is paused, or it is stuck.
    Set(Box<SetArgs>),
    /// Show a session's goal.
    Show(GoalSession),
    /// Pause a session's goal (its run in flight finishes).
    Pause(GoalSession),
    /// Resume a paused or stuck goal.
    Resume(GoalSession),
    /// Remove a session's goal.
    Clear(GoalSession),
}

/// `goal set`'s flags: `run`'s, and the goal's budgets.
#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// Replace a goal that is not complete.
    #[arg(long)]
    replace: bool,
    /// Most tokens the goal's runs may use.
    #[arg(long, value_name = "N")]
    token_budget: Option<u64>,
    /// Most runs the goal may take (default: the daemon's goal_max_runs).
    #[arg(long, value_name = "N")]
    max_runs: Option<u64>,
    /// Most time its runs may take in all: a number with s, m, h or d.
    #[arg(long, value_name = "AGE", value_parser = super::session::parse_age)]
    max_time: Option<std::time::Duration>,
    /// Post each of its inbox entries (JSON) to this http(s) URL.
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    #[command(flatten)]
    run: RunArgs,
}

/// The session a goal command is about.
#[derive(Debug, clap::Args)]
pub struct GoalSession {
    /// The session id.
    session: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `swivalctl goal …`.
pub async fn run(socket: &Path, action: GoalAction) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    let (goal, json) = match action {
        GoalAction::Set(a) => return set(&client, *a).await,
        GoalAction::Show(s) => (client.request::<m::GoalGet>(&session(&s)).await?.goal, s.json),
        GoalAction::Pause(s) => (client.request::<m::GoalPause>(&session(&s)).await?.goal, s.json),
        GoalAction::Resume(s) => (client.request::<m::GoalResume>(&session(&s)).await?.goal, s.json),
        GoalAction::Clear(s) => {
            let cleared = client.request::<m::GoalClear>(&session(&s)).await?.goal;
            if s.json {
                println!("{}", serde_json::to_string_pretty(&cleared).expect("a goal serializes"));
            } else if let Some(g) = cleared {
                println!("goal {} cleared", g.goal_id);
            } else {
                println!("session {} had no goal", s.session);
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&goal).expect("a goal serializes"));
    } else {
        match &goal {
            Some(g) => print!("{}", block(g)),
            None => println!("No goal is set."),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `swivalctl goals`.
pub async fn list(socket: &Path, json: bool) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    let goals = client.request::<m::GoalList>(&NoParams).await?.goals;
    if json {
        println!("{}", serde_json::to_string_pretty(&goals).expect("goals serialize"));
        return Ok(ExitCode::SUCCESS);
    }
    if goals.is_empty() {
        println!("No goals.");
    }
    for g in &goals {
        println!("{}", line(g));
    }
    Ok(ExitCode::SUCCESS)
}

async fn set(client: &swivalctl::Client, a: SetArgs) -> Result<ExitCode, ClientError> {
    let Some(objective) = a.run.task.clone().filter(|t| !t.trim().is_empty()) else {
        eprintln!("swivalctl: error: an objective is required: swivalctl goal set \"what to achieve\"");
        return Ok(ExitCode::from(2));
    };
    let session_id = match super::open::session_for(client, &a.run, &objective).await? {
        Ok(id) => id,
        Err(code) => return Ok(code),
    };
    let params = GoalSetParams {
        session_id: session_id.clone(),
        objective,
        replace: a.replace,
        token_budget: a.token_budget,
        max_runs: a.max_runs,
        max_seconds: a.max_time.map(|d| d.as_secs().max(1)),
        webhook: a.webhook.clone(),
    };
    let goal = client.request::<m::GoalSet>(&params).await?.goal;
    if a.run.json {
        println!("{}", serde_json::to_string_pretty(&goal).expect("a goal serializes"));
    } else if let Some(g) = goal {
        println!("goal {} set for session {session_id}", g.goal_id);
        eprintln!(
            "the daemon works on it now; follow it with `swivalctl attach {session_id} --follow`, \
             see it with `swivalctl goal show {session_id}`, pause it with `swivalctl goal pause {session_id}`"
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn session(s: &GoalSession) -> SessionRef {
    SessionRef { session_id: SessionId(s.session.clone()) }
}

/// One goal on a line: its session, status, usage and objective.
pub fn line(g: &Goal) -> String {
    let objective: String = g.objective.chars().take(80).collect();
    let objective = objective.replace('\n', " ");
    format!("{}  {:<14} {}  {}", g.session_id, g.status.as_str(), usage(g), super::clean::text(&objective))
}

/// What a goal used, against its budgets.
fn usage(g: &Goal) -> String {
    let tokens = match g.token_budget {
        Some(b) => format!("{}/{b} tokens", g.tokens_used),
        None => format!("{} tokens", g.tokens_used),
    };
    format!("{tokens}, {}/{} runs, {:.0}s", g.runs, g.max_runs, g.time_used_seconds)
}

/// A goal in a few lines (`goal show`, the REPL's `/goal`).
pub fn block(g: &Goal) -> String {
    let mut out = format!("Goal {}: {}\n", g.goal_id, g.status.as_str());
    out += &format!("  objective: {}\n", super::clean::text(&g.objective));
    out += &format!("  used: {}{}\n", usage(g), if g.usage_estimated { " (estimated)" } else { "" });
    if let Some(step) = &g.last_next_step {
        let step: String = step.chars().take(200).collect();
        out += &format!("  last step: {}\n", super::clean::text(&step));
    }
    if let Some(blocker) = &g.last_blocker {
        let blocker: String = blocker.chars().take(200).collect();
        out += &format!("  blocker: {}\n", super::clean::text(&blocker));
    }
    if let Some(run) = &g.current_run {
        out += &format!("  running: {run}\n");
    }
    out
}
