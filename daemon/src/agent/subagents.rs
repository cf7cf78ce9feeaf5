//! Subagents: Swival's `spawn_subagent` and `check_subagents`, with its
//! schemas, limits and result texts. A subagent is a child session of the
//! daemon (made and run by the session registry through
//! [`SubagentHost`]): every client sees it in `session/list` with its
//! parent, can attach to it and cancel it, and its requests pass through
//! the same pipeline as the parent's. This module keeps one run's
//! subagents: their ids (`sub_1`…), the runs they are, at most four
//! running at once; it cancels those still running when the run ends.

use crate::tools::ToolError;
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::time::Duration;
use swival_protocol::{Outcome, RunId, RunResult, SessionId};
use tokio_util::sync::CancellationToken;

/// Subagents running at once per run (Swival's).
const MAX_CONCURRENT: usize = 4;
/// How long a spawn waits for one of them to end (Swival's).
const WAIT_FOR_SLOT: Duration = Duration::from_secs(60);
/// How long `collect` waits by default (Swival's).
const COLLECT_TIMEOUT_S: f64 = 300.0;
/// The tool names.
pub use crate::tools::registry::{CHECK_SUBAGENTS as CHECK, SPAWN_SUBAGENT as SPAWN};

/// What a child session is made with.
pub struct Child<'a> {
    /// Its id in the parent's run (`sub_1`).
    pub subagent_id: &'a str,
    /// The task, as its user message.
    pub task: &'a str,
    /// Its turn budget.
    pub max_turns: u64,
    /// Its whole system prompt.
    pub system: String,
}

/// The session registry, as a run's subagents need it.
pub trait SubagentHost: Send + Sync {
    /// Make a child session of the run and start `child.task` in it: its
    /// session and run, or why not.
    fn start<'a>(&'a self, child: Child<'a>) -> BoxFuture<'a, Result<(SessionId, RunId), String>>;
    /// Wait for a child's run to end.
    fn wait<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Option<RunResult>>;
    /// A child's result, if its run has ended.
    fn finished(&self, run: &RunId) -> Option<RunResult>;
    /// Cancel a child's run.
    fn cancel(&self, run: &RunId);
}

/// One subagent of the run.
struct Handle {
    /// `sub_N`.
    id: String,
    /// Its run.
    run: RunId,
    /// Its result, once seen.
    result: Option<RunResult>,
}

/// A run's subagents.
pub struct Subagents<'a> {
    /// The registry.
    host: &'a dyn SubagentHost,
    /// Spawned so far, in order.
    handles: Vec<Handle>,
}

/// Swival's `spawn_subagent` schema.
pub fn spawn_schema() -> Value {
    json!({"type": "function", "function": {"name": SPAWN,
        "description": "Launch an independent subagent to work on a task in parallel. The subagent has access to all file and search tools but cannot spawn its own subagents. Use for tasks that are independent of your current work. Returns a subagent ID for tracking.",
        "parameters": {"type": "object", "properties": {
            "task": {"type": "string", "description": "Complete task description. Include all necessary context — the subagent has no access to your conversation history."},
            "max_turns": {"type": "integer", "description": "Maximum turns for the subagent (default: 30).", "default": 30},
            "system_hint": {"type": "string", "description": "Optional extra instructions prepended to the subagent's system prompt."}},
        "required": ["task"]}}})
}

/// Swival's `check_subagents` schema.
pub fn check_schema() -> Value {
    json!({"type": "function", "function": {"name": CHECK,
        "description": "Check status of spawned subagents. Returns status (running/done/failed/cancelled) and results for completed subagents. Use 'collect' action to block until a specific subagent finishes.",
        "parameters": {"type": "object", "properties": {
            "action": {"type": "string", "enum": ["poll", "collect", "cancel"], "description": "poll: status of all subagents. collect: block until one finishes. cancel: cancel a subagent.", "default": "poll"},
            "subagent_id": {"type": "string", "description": "Required for 'collect' and 'cancel' actions."},
            "timeout": {"type": "number", "description": "Timeout in seconds for 'collect' (default: 300)."}},
        "required": []}}})
}

/// Swival's guidance on subagents, for the system prompt.
pub const GUIDANCE: &str = "- **Use `spawn_subagent` for independent parallel work.** When a task has clearly separable parts (exploring one area while changing another, running a test while making a change elsewhere), spawn subagents to handle them concurrently. Include full context in the task description — subagents have no access to your conversation. Use `check_subagents` to collect results.";

/// A subagent's system prompt: Swival's preamble, the hint, the parent's.
pub fn system_prompt(parent: Option<&str>, hint: Option<&str>) -> String {
    let preamble = "You are a subagent working on a specific task within a larger project. Complete the task and provide your final answer. Be concise and focused. Do not ask questions — work autonomously with the information provided.";
    [Some(preamble), hint.filter(|h| !h.is_empty()), parent].into_iter().flatten().collect::<Vec<_>>().join("\n\n")
}

impl<'a> Subagents<'a> {
    /// The subagents of a run, made through `host`.
    pub fn new(host: &'a dyn SubagentHost) -> Subagents<'a> {
        Subagents { host, handles: Vec::new() }
    }

    /// `spawn_subagent`.
    pub async fn spawn(
        &mut self,
        args: &Value,
        parent_system: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        let Some(task) = args.get("task").and_then(Value::as_str) else {
            return Err(ToolError::refused("spawn_subagent needs a 'task' string"));
        };
        let max_turns = args.get("max_turns").and_then(Value::as_u64).unwrap_or(30).max(1);
        let hint = args.get("system_hint").and_then(Value::as_str);
        if self.running() >= MAX_CONCURRENT {
            tokio::select! {
                _ = tokio::time::sleep(WAIT_FOR_SLOT) => {}
                _ = cancel.cancelled() => return Err(ToolError::refused("subagent spawn cancelled while waiting for capacity")),
                _ = self.any_ends() => {}
            }
            if self.running() >= MAX_CONCURRENT {
                return Err(ToolError::refused(format!(
                    "all {MAX_CONCURRENT} background agents are still running after waiting {}s. Try spawning another subagent later.",
                    WAIT_FOR_SLOT.as_secs()
                )));
            }
        }
        let id = format!("sub_{}", self.handles.len() + 1);
        let child = Child { subagent_id: &id, task, max_turns, system: system_prompt(parent_system, hint) };
        match self.host.start(child).await {
            Ok((_, run)) => {
                self.handles.push(Handle { id: id.clone(), run, result: None });
                Ok(format!("Background agent {id} is ready."))
            }
            Err(why) => Err(ToolError::refused(why)),
        }
    }

    /// `check_subagents`.
    pub async fn check(&mut self, args: &Value, cancel: &CancellationToken) -> Result<String, ToolError> {
        let id = args.get("subagent_id").and_then(Value::as_str).unwrap_or_default();
        match args.get("action").and_then(Value::as_str).unwrap_or("poll") {
            "poll" => Ok(self.poll()),
            "collect" => {
                let timeout = args.get("timeout").and_then(Value::as_f64).unwrap_or(COLLECT_TIMEOUT_S);
                self.collect(id, timeout, cancel).await
            }
            "cancel" => match self.handles.iter().find(|h| h.id == id) {
                Some(h) => {
                    self.host.cancel(&h.run);
                    Ok(format!("Cancellation signal sent to {id}."))
                }
                None => Err(ToolError::refused(format!("unknown subagent {id:?}"))),
            },
            other => Err(ToolError::refused(format!("unknown action {other:?}; use poll, collect or cancel"))),
        }
    }

    /// Cancel every subagent still running (the run ends).
    pub fn cancel_all(&mut self) {
        self.refresh();
        for h in self.handles.iter().filter(|h| h.result.is_none()) {
            self.host.cancel(&h.run);
        }
    }

    /// Note the results of runs that ended.
    fn refresh(&mut self) {
        for h in self.handles.iter_mut().filter(|h| h.result.is_none()) {
            h.result = self.host.finished(&h.run);
        }
    }

    /// How many are still running.
    fn running(&mut self) -> usize {
        self.refresh();
        self.handles.iter().filter(|h| h.result.is_none()).count()
    }

    /// Until one of the running ones ends.
    async fn any_ends(&self) {
        let waits: Vec<_> =
            self.handles.iter().filter(|h| h.result.is_none()).map(|h| self.host.wait(&h.run)).collect();
        if !waits.is_empty() {
            futures::future::select_all(waits).await;
        }
    }

    /// Swival's `poll` text.
    fn poll(&mut self) -> String {
        self.refresh();
        if self.handles.is_empty() {
            return "No subagents.".to_owned();
        }
        let lines: Vec<String> = self
            .handles
            .iter()
            .map(|h| {
                let (status, result, error) = status(h.result.as_ref());
                let mut line = format!("{}: {status}", h.id);
                match (status, result, error) {
                    ("done", Some(r), _) => {
                        let mut preview: String = r.chars().take(500).collect();
                        if r.chars().count() > 500 {
                            preview.push_str("... [truncated, use collect to get full result]");
                        }
                        line.push_str(&format!("\n  Result: {preview}"));
                    }
                    ("failed", _, Some(e)) => line.push_str(&format!("\n  Error: {}", ToolError::refused(e).render())),
                    _ => {}
                }
                line
            })
            .collect();
        lines.join("\n")
    }

    /// Swival's `collect`: wait (at most `timeout` seconds) for one.
    async fn collect(&mut self, id: &str, timeout: f64, cancel: &CancellationToken) -> Result<String, ToolError> {
        let Some(i) = self.handles.iter().position(|h| h.id == id) else {
            return Err(ToolError::refused(format!("unknown subagent {id:?}")));
        };
        if self.handles[i].result.is_none() {
            let limit = Duration::from_secs_f64(timeout.clamp(0.0, 86_400.0));
            let run = self.handles[i].run.clone();
            self.handles[i].result = tokio::select! {
                r = self.host.wait(&run) => r,
                _ = tokio::time::sleep(limit) => None,
                _ = cancel.cancelled() => None,
            };
        }
        let Some(result) = &self.handles[i].result else {
            return Err(ToolError::refused(format!("subagent {id} still running after {timeout}s timeout")));
        };
        match (status(Some(result)), result.outcome) {
            ((_, _, Some(e)), _) => Err(ToolError::refused(e)),
            ((_, None, _), Outcome::Cancelled | Outcome::Interrupted) => {
                Err(ToolError::refused(format!("subagent {id} was cancelled")))
            }
            ((_, None, _), Outcome::Exhausted) => {
                Err(ToolError::refused(format!("subagent {id} exhausted max turns without an answer")))
            }
            ((_, Some(answer), _), _) => Ok(answer),
            ((_, None, _), _) => Ok("(no result)".to_owned()),
        }
    }
}

/// Swival's status of a subagent, its result and its error.
fn status(result: Option<&RunResult>) -> (&'static str, Option<String>, Option<String>) {
    let Some(r) = result else { return ("running", None, None) };
    match r.outcome {
        Outcome::Success | Outcome::Exhausted => ("done", r.answer.clone(), None),
        Outcome::Cancelled | Outcome::Interrupted => ("cancelled", r.answer.clone(), None),
        _ => {
            let why = r.error.clone().unwrap_or_else(|| "no error was given".to_owned());
            ("failed", None, Some(format!("subagent crashed: {why}")))
        }
    }
}
