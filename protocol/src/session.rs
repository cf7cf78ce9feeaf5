//! Sessions and runs: ids, params, results, outcomes and run statistics.

use crate::config::ConfigKeys;
use crate::ids::{RunId, Seq, SessionId};
use crate::outcomes::Outcome;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `session/create` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCreateParams {
    /// Absolute path of an existing directory: the project the agent works in.
    pub base_dir: String,
    /// Config keys (Swival's names) overriding the global and project files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ConfigKeys>,
    /// A human title for listings; without one, the session's first run
    /// gives it the first line of its task, cut to 60 characters.
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
    /// Start from an existing session: its config request, trust and
    /// caller environment, with `config` over them; with `conversation`,
    /// a copy of its conversation too (a fork). `base_dir` must be the
    /// source's. The source is not changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<SessionFrom>,
    /// Work in a new git worktree of the project, on its own branch
    /// `swival/<session_id>` from HEAD (`swivalctl run --worktree`); the
    /// project must be in a git repository with a commit. Its changes reach
    /// the user's checkout only through `session/apply`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub worktree: bool,
}

/// Where a new session starts from (`session/create`'s `from`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionFrom {
    /// The session to start from.
    pub session_id: SessionId,
    /// Copy its conversation too (a fork); otherwise the new session
    /// starts with an empty one (`/clear`, `/new`).
    #[serde(default)]
    pub conversation: bool,
}

/// `session/configure` params: what to change in an idle session between
/// runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionConfigureParams {
    /// The session.
    pub session_id: SessionId,
    /// Config keys (Swival's names: `model`, `active_profile`,
    /// `reasoning_effort`, `max_turns`…) merged over the session's config
    /// request and checked as `session/create` checks them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ConfigKeys>,
    /// Directories to allow read-write, under `--add-dir`'s rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add_dirs: Vec<String>,
    /// Directories to allow read-only, under `--add-dir-ro`'s rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add_dirs_ro: Vec<String>,
}

/// `session/configure` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionConfigureResult {
    /// The keys whose effective value changed.
    pub changed: Vec<String>,
    /// The session's effective config now (secrets redacted).
    pub config: ConfigKeys,
    /// Config warnings, in the words of `session/create`'s.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// `session/compact` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCompactParams {
    /// The session (idle).
    pub session_id: SessionId,
    /// Also summarise the middle turns (Swival's `/compact --drop`);
    /// otherwise old tool results are cut only.
    #[serde(default)]
    pub drop: bool,
}

/// `session/compact` result: what was done, as its `compaction` event says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCompactResult {
    /// What was done (`truncate_tool_results`, `summarize_middle`,
    /// `drop_middle` joined with `+`; empty when nothing was).
    pub strategy: String,
    /// Estimated prompt tokens before.
    pub tokens_before: u64,
    /// Estimated prompt tokens after.
    pub tokens_after: u64,
}

/// `session/checkpoint` params: set a context checkpoint at the end of
/// the conversation, or cancel the active one (Swival's `/save`,
/// `/unsave`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCheckpointParams {
    /// The session (idle).
    pub session_id: SessionId,
    /// The checkpoint's label (default `user-checkpoint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Cancel the active checkpoint instead.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel: bool,
}

/// `session/checkpoint` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCheckpointResult {
    /// What happened, in Swival's words (`checkpoint saved: LABEL`,
    /// `checkpoint cancelled: LABEL`, `no active checkpoint to cancel`,
    /// `checkpoint already active (label='X'). Cancel it first with /unsave.`).
    pub message: String,
    /// The active checkpoint's label after the call, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<String>,
}

/// `session/restore` result: the messages since the checkpoint (or since
/// the last user message) collapsed into one summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionRestoreResult {
    /// What happened, in Swival's words (`nothing to collapse`, or
    /// `snapshot: restored — collapsed N turns, saved ~K tokens`).
    pub message: String,
    /// Messages collapsed (0: nothing was).
    pub collapsed: u64,
    /// Estimated prompt tokens saved.
    pub tokens_saved: u64,
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
    pub config: ConfigKeys,
    /// Warnings about the configuration: keys that load but do nothing
    /// (Swival keys swivald ignores, keys nobody knows), what the kernel
    /// cannot enforce. Each is also a `warning` event of the session.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The git worktree it works in, when created with `worktree`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeInfo>,
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
    /// Its title: given at creation, or from its first run's task.
    pub title: Option<String>,
    /// Creation time, RFC 3339 UTC.
    pub created_at: String,
    /// Last use, RFC 3339 UTC: its latest run's start, or its creation.
    pub last_used_at: String,
    /// What it is doing.
    pub state: SessionState,
    /// The last event's seq (0 before any event).
    pub last_seq: Seq,
    /// Runs so far.
    pub run_count: u64,
    /// The git worktree it works in, for a session created with `worktree`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeInfo>,
    /// The run that spawned it, for a subagent's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<SubagentOf>,
    /// What its runs cost in US dollars, summed over those `model_prices`
    /// priced (absent when none was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// The git worktree a session works in (`session/create`'s `worktree`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorktreeInfo {
    /// The worktree's directory (the daemon's, outside the project).
    pub path: String,
    /// Its branch (`swival/<session_id>`), kept when the worktree is removed.
    pub branch: String,
    /// The top of the user's checkout it was made from.
    pub origin: String,
    /// The commit it started from.
    pub base_commit: String,
    /// The last commit of its branch brought into the checkout by
    /// `session/apply`, if any (the next apply brings only what is newer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_commit: Option<String>,
}

/// `session/apply` result: the worktree's work since the last apply,
/// brought into the user's checkout as uncommitted changes (their index
/// untouched), or nothing changed and the files that conflict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionApplyResult {
    /// Whether the changes were applied (true, with no files, when there
    /// was nothing new to apply).
    pub applied: bool,
    /// The files the changes touch (relative to the repository's top).
    pub files: Vec<String>,
    /// When not applied: each file whose change does not apply to the
    /// checkout as it is. Nothing was changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// The worktree's branch.
    pub branch: String,
    /// The branch's commit these changes go up to.
    pub commit: String,
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
    pub config: ConfigKeys,
    /// The runs, oldest first.
    pub runs: Vec<RunInfo>,
    /// The stored conversation (OpenAI chat messages, system prompt first).
    pub messages: Vec<crate::conversation::ConversationItem>,
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
    /// Any text of the client's own, echoed in the run's `run_started`:
    /// how a client knows a run it sees in the event stream is the one it
    /// started (another client may start runs on the same session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_token: Option<String>,
    /// Go on with the conversation as it is, adding no user message
    /// (Swival's `/continue`: after an interruption or the turn budget);
    /// `task` is then only the run's label.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resume: bool,
    /// Cancel the run when the connection that started it ends (the client
    /// exits, is killed, or closes it) before the run does: what
    /// `swivalctl run` asks unless `--detach`. Off, the run goes on
    /// without its client (editors, `--detach`). Needs a connection that
    /// stays open (newline-delimited or WebSocket), not an HTTP POST.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel_on_disconnect: bool,
    /// Report the run in the inbox: its end, and an approval it waits for
    /// (what `swivalctl run --detach` asks).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inbox: bool,
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
    /// Why it ended without an answer, as a kind to branch on (`error` is
    /// the text for people, in Swival's words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureKind>,
    /// Counters.
    pub stats: crate::RunStats,
}

/// Why a run ended without an answer. Clients branch on this, never on
/// the words of `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The provider failed (connection, HTTP error, a reply that cannot be used).
    Provider,
    /// The outbound filter chain blocked a call (Swival's `LLM filter blocked request`).
    FilterBlocked,
    /// A hook blocked the run or its answer.
    HookBlocked,
    /// The run could not be set up (provider settings, MCP servers, the first messages).
    Setup,
    /// `max_turns` ran out.
    Exhausted,
    /// `run/cancel` or Ctrl-C.
    Cancelled,
    /// The daemon stopped, or died, while the run was in flight.
    Interrupted,
    /// The loop guards ended a run that kept repeating refused calls.
    Stuck,
    /// The daemon failed (storage, a panic): not the run's fault.
    Internal,
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
    /// Why it ended without an answer, as a kind to branch on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureKind>,
    /// Counters.
    pub stats: crate::RunStats,
}

impl RunResult {
    /// The result without its run id, for a `run_finished` event.
    pub fn end(&self) -> RunEnd {
        RunEnd {
            outcome: self.outcome,
            answer: self.answer.clone(),
            exit_code: self.exit_code,
            error: self.error.clone(),
            failure: self.failure,
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
            failure: end.failure,
            stats: end.stats,
        }
    }
}

/// `session/prune` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionPruneParams {
    /// Sessions whose last activity (creation, or their latest run's
    /// start) is older than this many seconds are deleted.
    pub older_than_s: f64,
}

/// `session/prune` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionPruneResult {
    /// The sessions deleted.
    pub removed: Vec<SessionId>,
    /// Worktrees removed because their session no longer exists (their
    /// work committed to their branch first).
    #[serde(default)]
    pub worktrees_removed: Vec<String>,
    /// The branches of those worktrees, kept so no work is lost.
    #[serde(default)]
    pub branches_kept: Vec<String>,
}

/// Where a subagent's session comes from: the run whose `spawn_subagent`
/// call made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentOf {
    /// The parent session.
    pub session_id: SessionId,
    /// The parent's run that spawned it.
    pub run_id: RunId,
    /// Its id in that run (`sub_1`), as the model knows it.
    pub subagent_id: String,
}
