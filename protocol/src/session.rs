//! Sessions, runs, events and reports: params, results and the event
//! stream of `session/subscribe`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// A session's id (`s_` followed by hex).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct SessionId(pub String);

/// A run's id (`r_` followed by hex).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct RunId(pub String);

/// Per-session event sequence number, starting at 1, without gaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Seq(pub u64);

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `session/create` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCreateParams {
    /// Absolute path of an existing directory: the project the agent works in.
    pub base_dir: String,
    /// Config keys (Swival's names) overriding the global and project files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// A human title for listings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Accept the project's `swival.toml` for this session even if it is
    /// not trusted (`swivalctl run --trust`); nothing is recorded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trust: bool,
    /// The caller's environment (name → value): provider keys,
    /// `SWIVAL_ENCRYPT_KEY`, PATH for commands and scripts, and the whole
    /// environment of filters, hooks, the reviewer and the `command`
    /// provider. Held in memory only, never stored. Omitted: the daemon's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
}

/// `project/trust` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProjectTrustParams {
    /// Absolute path of the project directory (the base dir).
    pub base_dir: String,
    /// Only report what the file enables and whether it is trusted; record nothing.
    #[serde(default)]
    pub check: bool,
    /// Trust only if the content still has this SHA-256 (what the user
    /// was shown); a file changed since is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// `project/trust` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProjectTrustResult {
    /// The project config file (absent when the project has none).
    pub path: Option<String>,
    /// Hex SHA-256 of its content now.
    pub sha256: Option<String>,
    /// What it enables that needs trust, one line each (empty: nothing
    /// needs trust).
    pub enables: Vec<String>,
    /// Whether this exact content is trusted (after the call, unless `check`).
    pub trusted: bool,
}

/// `session/create` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCreateResult {
    /// The new session.
    pub session_id: SessionId,
    /// The effective configuration after merging every layer.
    pub config: Value,
    /// Warnings about the configuration: keys that load but do nothing
    /// (Swival keys swivald ignores, keys nobody knows), what the kernel
    /// cannot enforce. Each is also a `warning` event of the session.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Params naming one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionRef {
    /// The session.
    pub session_id: SessionId,
}

/// What a session is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Ready for a run.
    Idle,
    /// A run is in flight.
    Running,
    /// Closed; kept for reading.
    Closed,
}

/// One session in `session/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionInfo {
    /// Its id.
    pub session_id: SessionId,
    /// Its base directory.
    pub base_dir: String,
    /// Its title, if given.
    pub title: Option<String>,
    /// Creation time, RFC 3339 UTC.
    pub created_at: String,
    /// What it is doing.
    pub state: SessionState,
    /// The last event's seq (0 before any event).
    pub last_seq: Seq,
    /// Runs so far.
    pub run_count: u64,
}

/// `session/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionListResult {
    /// Every session, oldest first.
    pub sessions: Vec<SessionInfo>,
}

/// `session/get` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionDetail {
    /// Summary fields.
    pub info: SessionInfo,
    /// The effective configuration.
    pub config: Value,
    /// The runs, oldest first.
    pub runs: Vec<RunInfo>,
    /// The stored conversation (OpenAI chat messages, system prompt first).
    pub messages: Vec<Value>,
    /// Names of the variables of the caller's environment the session
    /// holds (values are never shown); `None`: it uses the daemon's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Vec<String>>,
}

/// One run in `session/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunInfo {
    /// Its id.
    pub run_id: RunId,
    /// The task text.
    pub task: String,
    /// Whether it is still running.
    pub running: bool,
    /// Its outcome, once finished.
    pub outcome: Option<Outcome>,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
}

/// `run/start` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunStartParams {
    /// The session to run in.
    pub session_id: SessionId,
    /// The user's task.
    pub task: String,
    /// The caller's environment for this run and the session's later runs
    /// (as in `session/create`); omitted: the one the session holds (after
    /// a daemon restart, the daemon's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
}

/// Params naming one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunRef {
    /// The run.
    pub run_id: RunId,
}

/// `run/start` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunStartResult {
    /// The new run.
    pub run_id: RunId,
}

/// `run/cancel` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunCancelResult {
    /// False when the run had already finished.
    pub cancelled: bool,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A final answer was produced (exit 0).
    Success,
    /// `max_turns` ran out (exit 2).
    Exhausted,
    /// The provider, a tool setup or the pipeline failed (exit 1).
    Error,
    /// A policy hook blocked the run (exit 1).
    Blocked,
    /// `run/cancel` or Ctrl-C (exit 130).
    Cancelled,
    /// The daemon stopped or died while the run was in flight (exit 1).
    Interrupted,
}

impl Outcome {
    /// The exit code swivalctl uses for this outcome (Swival's codes).
    pub const fn exit_code(self) -> i32 {
        match self {
            Outcome::Success => 0,
            Outcome::Exhausted => 2,
            Outcome::Error | Outcome::Blocked | Outcome::Interrupted => 1,
            Outcome::Cancelled => 130,
        }
    }

    /// The name used in reports (`success`, `exhausted`, `error`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Exhausted => "exhausted",
            Outcome::Error => "error",
            Outcome::Blocked => "blocked",
            Outcome::Cancelled => "cancelled",
            Outcome::Interrupted => "interrupted",
        }
    }
}

/// Success and failure counts of one tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCounts {
    /// Results that did not start with `error:`.
    pub succeeded: u64,
    /// Results that started with `error:`.
    pub failed: u64,
}

/// Counters of one run (the `stats` of Swival's report).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunStats {
    /// Turns taken (highest turn number seen).
    pub turns: u64,
    /// Provider calls made, retries not counted.
    pub llm_calls: u64,
    /// Tool calls made.
    pub tool_calls_total: u64,
    /// Tool calls that succeeded.
    pub tool_calls_succeeded: u64,
    /// Tool calls that failed.
    pub tool_calls_failed: u64,
    /// Per tool name.
    pub tool_calls_by_name: BTreeMap<String, ToolCounts>,
    /// Context compactions.
    pub compactions: u64,
    /// Swival's error guardrail nudges and stops.
    #[serde(default)]
    pub guardrail_interventions: u64,
    /// Calls the repeat-loop guard refused.
    #[serde(default)]
    pub stormed_calls: u64,
    /// Reviewer rounds run.
    pub review_rounds: u64,
    /// Provider retries after transient failures.
    pub provider_retries: u64,
    /// Seconds spent in provider calls.
    pub total_llm_time_s: f64,
    /// Seconds spent running tools.
    pub total_tool_time_s: f64,
}

/// `run/wait` result, and the payload of `run_finished`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunResult {
    /// The run.
    pub run_id: RunId,
    /// How it ended.
    pub outcome: Outcome,
    /// The accepted final answer, if any.
    pub answer: Option<String>,
    /// Swival's exit code for the outcome.
    pub exit_code: i32,
    /// What went wrong, for error, blocked and interrupted outcomes.
    pub error: Option<String>,
    /// Counters.
    pub stats: RunStats,
}

/// How a run ended, as carried by its `run_finished` event (the event's
/// envelope holds the run id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunEnd {
    /// How it ended.
    pub outcome: Outcome,
    /// The accepted final answer, if any.
    pub answer: Option<String>,
    /// Swival's exit code for the outcome.
    pub exit_code: i32,
    /// What went wrong, for error, blocked and interrupted outcomes.
    pub error: Option<String>,
    /// Counters.
    pub stats: RunStats,
}

impl RunResult {
    /// The result without its run id, for a `run_finished` event.
    pub fn end(&self) -> RunEnd {
        RunEnd {
            outcome: self.outcome,
            answer: self.answer.clone(),
            exit_code: self.exit_code,
            error: self.error.clone(),
            stats: self.stats.clone(),
        }
    }

    /// The result of `run_id` that a `run_finished` event reports.
    pub fn from_end(run_id: RunId, end: RunEnd) -> RunResult {
        RunResult {
            run_id,
            outcome: end.outcome,
            answer: end.answer,
            exit_code: end.exit_code,
            error: end.error,
            stats: end.stats,
        }
    }
}

/// `session/subscribe` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubscribeParams {
    /// The session to follow.
    pub session_id: SessionId,
    /// First seq to deliver (default 1: everything stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_seq: Option<Seq>,
}

/// One `session/event` notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// Per-session sequence number.
    pub seq: Seq,
    /// The session.
    pub session_id: SessionId,
    /// The run it belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// When it happened, RFC 3339 UTC.
    pub time: String,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What an event reports; serialized with a `type` tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A run began.
    RunStarted {
        /// The task.
        task: String,
    },
    /// A turn began.
    TurnStarted {
        /// Turn number, from 1.
        turn: u64,
        /// The budget.
        max_turns: u64,
    },
    /// Streamed answer text.
    TextDelta {
        /// The turn.
        turn: u64,
        /// The new text.
        text: String,
    },
    /// A provider call finished.
    LlmCall {
        /// The turn.
        turn: u64,
        /// `agent` or `summary`.
        call_kind: String,
        /// Wall time of the call, retries included.
        duration_s: f64,
        /// The provider's finish reason (`error` when the call failed).
        finish_reason: Option<String>,
        /// The provider's token usage, as sent.
        usage: Option<Value>,
        /// Estimated prompt tokens.
        prompt_tokens_est: u64,
        /// Retries this call needed.
        retries: u64,
        /// `hit` (from the response cache) or `shared` (joined an identical call in flight).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache: Option<String>,
    },
    /// The model asked for a tool.
    ToolCall {
        /// The turn.
        turn: u64,
        /// The tool call id.
        id: String,
        /// The tool.
        name: String,
        /// The arguments as the model sent them.
        arguments: String,
    },
    /// A tool finished.
    ToolResult {
        /// The turn.
        turn: u64,
        /// The tool call id.
        id: String,
        /// The tool.
        name: String,
        /// False when the result starts with `error:`.
        succeeded: bool,
        /// How long it ran.
        duration_s: f64,
        /// The result, cut to 4096 characters.
        content: String,
        /// The file a successful `write_file` or `edit_file` changed, with
        /// its text before and after (absent when either is over 64 KiB or
        /// not UTF-8), so an editor can show the diff, live or replayed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        change: Option<FileChange>,
    },
    /// A transient provider failure; the call is retried.
    Retry {
        /// The turn.
        turn: u64,
        /// The attempt that failed, from 1.
        attempt: u64,
        /// Seconds before the next attempt.
        delay_s: f64,
        /// What failed.
        reason: String,
    },
    /// A line a filter, hook or reviewer script wrote to stderr.
    Stderr {
        /// Which script: `filter`, `hook`, `reviewer`, with its command.
        source: String,
        /// The line.
        text: String,
    },
    /// A reviewer round finished.
    Review {
        /// Round number, from 1.
        round: u64,
        /// The reviewer's exit code (`None`: it timed out, could not start, or was killed).
        exit_code: Option<i32>,
        /// What it printed on stdout.
        feedback: String,
        /// What it decided: `accept`, `retry` or `error`.
        verdict: String,
    },
    /// The conversation was compacted to fit the context window.
    Compaction {
        /// The turn.
        turn: u64,
        /// What was done: `truncate_tool_results`, `summarize_middle`, `drop_middle`, joined with `+`.
        strategy: String,
        /// Estimated prompt tokens before.
        tokens_before: u64,
        /// Estimated prompt tokens after.
        tokens_after: u64,
    },
    /// A hook decided something.
    Hook {
        /// `before_llm_call`, `after_llm_call` or `before_response_emit`.
        point: String,
        /// The hook (its command, or `rpc:<name>`).
        hook: String,
        /// `pass`, `modify`, `block` or `ignored_failure`.
        decision: String,
        /// Why, when it blocked or failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// How long it took.
        duration_s: f64,
    },
    /// A loop guard stepped in (Swival's guardrail nudge or stop, a
    /// refused repeat, a re-read or finishing nudge); the run goes on.
    Intervention {
        /// The turn.
        turn: u64,
        /// `nudge`, `stop`, `storm`, `reread` or `finish`.
        kind: String,
        /// The tool it is about (empty for `finish`).
        tool: String,
        /// What the model was told.
        message: String,
    },
    /// Something the user should know; the run goes on. The message is
    /// Swival's words where Swival prints one (`Reviewer exited with code
    /// 7, accepting answer as-is`); swivalctl shows it as `Warning: …`.
    Warning {
        /// The message.
        message: String,
    },
    /// A progress line Swival prints on its terminal (`Review round 1:
    /// sending answer to reviewer`), in Swival's words, for clients to show
    /// as they are.
    Notice {
        /// How it reads: progress or a success.
        level: NoticeLevel,
        /// The text; may span lines (a reviewer's feedback follows its header line).
        message: String,
    },
    /// The run waits for a user's approval of a command (`commands =
    /// "ask"`). Any client may answer with `run/approve`; none answering
    /// within `timeout_s` is a rejection.
    ApprovalRequested {
        /// The turn.
        turn: u64,
        /// What `run/approve` names.
        approval_id: String,
        /// The tool call id.
        tool_call_id: String,
        /// Swival's bucket of the command (`git push`, `python3 -c`, `rm`):
        /// what an "always" answer approves.
        bucket: String,
        /// The command line as the model asked for it.
        command: String,
        /// The bucket is one Swival calls high-risk (`rm`, `git push`, `curl`, `sh -c`, …).
        high_risk: bool,
        /// How long the run waits.
        timeout_s: f64,
    },
    /// An approval was answered (or timed out, or the run was cancelled).
    ApprovalResolved {
        /// The request answered.
        approval_id: String,
        /// The decision that applies.
        decision: ApprovalDecision,
        /// `client`, `timeout` or `cancelled`.
        by: String,
    },
    /// The run ended; exactly one per run, always the run's last event.
    RunFinished(RunEnd),
}

/// A user's answer to an [`EventKind::ApprovalRequested`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this command.
    AllowOnce,
    /// Run it, and every command of its bucket for the rest of the session.
    AllowAlways,
    /// Do not run it.
    RejectOnce,
    /// Do not run it, nor any command of its bucket for the rest of the session.
    RejectAlways,
}

impl ApprovalDecision {
    /// Whether the command runs.
    pub fn allows(self) -> bool {
        matches!(self, ApprovalDecision::AllowOnce | ApprovalDecision::AllowAlways)
    }
}

/// `run/approve` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApproveParams {
    /// The session of the run.
    pub session_id: SessionId,
    /// From the `approval_requested` event.
    pub approval_id: String,
    /// The answer.
    pub decision: ApprovalDecision,
}

/// `run/approve` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApproveResult {
    /// False when nothing waits for that approval any more (answered by
    /// another client, timed out, or the run ended).
    pub accepted: bool,
}

/// A file a tool changed: its text before (`None`: it did not exist) and
/// after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileChange {
    /// The absolute path.
    pub path: String,
    /// The text before the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_text: Option<String>,
    /// The text after it.
    pub new_text: String,
}

/// How a [`EventKind::Notice`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoticeLevel {
    /// Something is happening (`Review round 1: sending answer to reviewer`).
    Info,
    /// Something went well (`Reviewer accepted the answer (round 2)`).
    Success,
}

impl EventKind {
    /// Whether this event ends its run.
    pub fn is_terminal(&self) -> bool {
        matches!(self, EventKind::RunFinished(_))
    }
}

/// `config/resolve` params: what `session/create` would produce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigResolveParams {
    /// The base directory whose `swival.toml` applies.
    pub base_dir: String,
    /// Request-level overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
}

/// `config/resolve` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigResolveResult {
    /// The effective configuration.
    pub config: Value,
    /// For each key that was set, which layer set it (`default`, a file, `request`).
    pub sources: BTreeMap<String, String>,
    /// Keys that load but do nothing (Swival keys swivald ignores, keys
    /// nobody knows), one line each naming the file and the key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// `policy/status` result: what guards a session, with fingerprints of the
/// scripts involved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyStatus {
    /// The session.
    pub session_id: SessionId,
    /// Outbound filter stages, in order.
    pub filters: Vec<ScriptStatus>,
    /// Command hooks, in the order they run.
    pub hooks: Vec<ScriptStatus>,
    /// The reviewer, if any.
    pub reviewer: Option<ScriptStatus>,
    /// What the sandbox enforces.
    pub sandbox: SandboxStatus,
    /// Policy the agent cannot change: file tools refuse to write these
    /// files and directory trees and commands see them read-only.
    #[serde(default)]
    pub protected: Vec<String>,
    /// The session's MCP servers.
    #[serde(default)]
    pub mcp_servers: Vec<McpServerStatus>,
}

/// One MCP server as the daemon runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerStatus {
    /// The server's name in the config.
    pub name: String,
    /// The base dir of the sessions sharing it.
    pub base_dir: String,
    /// `stdio` or `streamable-http`.
    pub transport: String,
    /// The command line (the program located) or the URL.
    pub command: String,
    /// Whether it runs now.
    pub running: bool,
    /// Its process id (stdio servers that run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its tools, as the model sees them (`mcp__<server>__<tool>`).
    pub tools: Vec<String>,
    /// Sessions in memory using it.
    pub sessions: u32,
    /// Why its last start or call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Files it runs with their SHA-256 (in `policy/status`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileDigest>,
}

/// `mcp/status`: every MCP server of the daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpStatusResult {
    /// The servers, by name then base dir.
    pub servers: Vec<McpServerStatus>,
}

/// One configured script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScriptStatus {
    /// The command line.
    pub command: String,
    /// `oneshot`, `prespawn` or `persistent`.
    pub mode: String,
    /// Seconds before it is killed.
    pub timeout_s: f64,
    /// Hook point, for hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<String>,
    /// Hook priority, for hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Files the command runs (the program, and script arguments that are files) with their SHA-256.
    pub files: Vec<FileDigest>,
}

/// A `buffers/read` notification: the text of a file as the editor has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BufferRead {
    /// What `buffers/respond` names.
    pub request_id: String,
    /// The absolute path, already allowed by the session's path policy.
    pub path: String,
}

/// `buffers/respond` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BufferRespondParams {
    /// From the `buffers/read`.
    pub request_id: String,
    /// The buffer's text; `null` reads the file from disk.
    pub text: Option<String>,
}

/// `buffers/respond` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BufferRespondResult {
    /// False when nothing waits for that request any more.
    pub accepted: bool,
}

/// A file and its SHA-256.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileDigest {
    /// Absolute path.
    pub path: String,
    /// Hex SHA-256 of its content.
    pub sha256: String,
}

/// What the sandbox enforces for a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxStatus {
    /// `os` or `builtin`.
    pub mode: String,
    /// Guards in force.
    pub enforced: Vec<String>,
    /// Guards the kernel or the configuration does not provide, said plainly.
    pub not_enforced: Vec<String>,
}

/// `hooks/register` params: a client hook, consulted until the connection closes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookRegisterParams {
    /// A name for events and `policy/status`.
    pub name: String,
    /// Points to be consulted at: `before_llm_call`, `after_llm_call`, `before_response_emit`.
    pub points: Vec<String>,
    /// Lower runs first (default 0); ties keep registration order.
    #[serde(default)]
    pub priority: i64,
    /// How long an answer may take (default 10000).
    #[serde(default = "default_hook_timeout_ms")]
    pub timeout_ms: u64,
    /// `block` (default: a failure or timeout blocks) or `ignore`.
    #[serde(default = "default_on_failure")]
    pub on_failure: String,
}

fn default_hook_timeout_ms() -> u64 {
    10_000
}

fn default_on_failure() -> String {
    "block".into()
}

/// One `hooks/invoke` notification: answer it with `hooks/respond`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookInvocation {
    /// Echo this in `hooks/respond`.
    pub call_id: String,
    /// The point.
    pub point: String,
    /// The point's payload (see docs/hooks.md).
    pub payload: Value,
}

/// `hooks/respond` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookRespondParams {
    /// From the invocation.
    pub call_id: String,
    /// The hook's result object (see docs/hooks.md).
    pub result: Value,
}

/// `hooks/respond` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookRespondResult {
    /// False when no call waits for that id any more (it timed out).
    pub accepted: bool,
}

/// `policy/check` params: would this command run?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyCheckParams {
    /// Check against this session's policy...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// ...or against the configuration of this base directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
    /// The command as the model would give it.
    pub argv: Vec<String>,
    /// With `base_dir`: the caller's environment, whose PATH resolves the
    /// whitelist (as in `session/create`; omitted: the daemon's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
}

/// `policy/check` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyCheckResult {
    /// Whether it would run.
    pub allowed: bool,
    /// The program that would run (absolute path), when allowed.
    pub program: Option<String>,
    /// Why, in one sentence, and under which sandbox.
    pub reason: String,
}
