//! Every method the daemon answers, declared once: its name, summary,
//! params type and result type. The name constants, [`ALL`], the typed
//! markers in [`typed`] (which the daemon registers its handlers with and
//! clients call through) and the generated schema all come from the one
//! list below; each subscription's notification and closing method are
//! declared with it ([`Subscribe`]).

use crate::approvals::*;
use crate::changes::*;
use crate::events::*;
use crate::goals::*;
use crate::inbox::*;
use crate::loops::*;
use crate::notes::*;
use crate::policy::*;
use crate::review::*;
use crate::session::*;
use crate::tools::SessionToolsResult;
use crate::types::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A method: its wire name and summary, and the types of its params and
/// result.
pub trait Method {
    /// The wire name.
    const NAME: &'static str;
    /// One line for the documentation.
    const SUMMARY: &'static str;
    /// What the params deserialize as.
    type Params: Serialize + DeserializeOwned + Send + 'static;
    /// What the result serializes from.
    type Result: Serialize + DeserializeOwned + Clone + Send + 'static;
}

/// The params of a method that takes none: a call may send none, `null`,
/// `{}` or `[]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, schemars::JsonSchema)]
pub struct NoParams;

impl Serialize for NoParams {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        s.serialize_map(Some(0))?.end()
    }
}

impl<'de> Deserialize<'de> for NoParams {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| NoParams)
    }
}

pub use crate::report::Report;

macro_rules! methods {
    ($( $(#[$doc:meta])* $ty:ident($name:ident = $wire:literal): $params:ty => $result:ty, $summary:literal; )*) => {
        $( $(#[$doc])* pub const $name: &str = $wire; )*

        /// Typed markers, one per method (see [`Method`]).
        pub mod typed {
            #[allow(unused_imports)]
            use super::*;
            $(
                $(#[$doc])*
                #[derive(Debug, Clone, Copy)]
                pub struct $ty;
                impl Method for $ty {
                    const NAME: &'static str = $wire;
                    const SUMMARY: &'static str = $summary;
                    type Params = $params;
                    type Result = $result;
                }
            )*
        }

        /// Every method the daemon answers, with its summary, in the order
        /// the documentation lists them.
        pub const ALL: &[(&str, &str)] = &[ $( ($wire, $summary) ),* ];

        /// Each method's name, params schema (`None`: no params) and result
        /// schema, in [`ALL`]'s order.
        pub(crate) fn schemas() -> Vec<(&'static str, Option<serde_json::Value>, serde_json::Value)> {
            vec![ $( ($wire, params::<$params>(), schema::<$result>()) ),* ]
        }
    };
}

methods! {
/// Handshake; the first call of every connection.
    Initialize(INITIALIZE = "initialize"): InitializeParams => InitializeResult,
        "Handshake: client and protocol version in, server info and capabilities out.";
/// Daemon pid, version, uptime and open connections.
    DaemonStatusMethod(DAEMON_STATUS = "daemon/status"): NoParams => DaemonStatus,
        "Daemon pid, version, uptime, socket path and open connections.";
/// Ask the daemon to stop gracefully.
    DaemonShutdown(DAEMON_SHUTDOWN = "daemon/shutdown"): NoParams => ShutdownResult,
        "Stop accepting connections, finish in-flight work within the grace period, exit 0.";
/// Create a session in a base directory.
    SessionCreate(SESSION_CREATE = "session/create"): SessionCreateParams => SessionCreateResult,
        "Create a session: base_dir, config overrides, title.";
/// List sessions.
    SessionList(SESSION_LIST = "session/list"): NoParams => SessionListResult,
        "Every session with its state and last event seq.";
/// One session with its runs and conversation.
    SessionGet(SESSION_GET = "session/get"): SessionRef => SessionDetail,
        "One session: summary, effective config, runs and stored conversation.";
/// Change an idle session's settings between runs.
    SessionConfigure(SESSION_CONFIGURE = "session/configure"): SessionConfigureParams => SessionConfigureResult,
        "Change an idle session's model, profile, reasoning effort, turn budget or allowed dirs (checked as session/create); recorded as a session_configured event.";
/// Compact an idle session's conversation now.
    SessionCompact(SESSION_COMPACT = "session/compact"): SessionCompactParams => SessionCompactResult,
        "Compact an idle session's conversation now (drop: also summarise the middle turns); emits a compaction event.";
/// Set or cancel a context checkpoint (Swival's `/save`, `/unsave`).
    SessionCheckpoint(SESSION_CHECKPOINT = "session/checkpoint"): SessionCheckpointParams => SessionCheckpointResult,
        "Set a context checkpoint at the end of an idle session's conversation, or cancel the active one.";
/// Collapse the conversation since the checkpoint into a summary.
    SessionRestore(SESSION_RESTORE = "session/restore"): SessionRef => SessionRestoreResult,
        "Summarise and collapse an idle session's messages since its checkpoint (or the last user message) into one.";
/// The tools a session offers the model.
    SessionTools(SESSION_TOOLS = "session/tools"): SessionRef => SessionToolsResult,
        "The tools a session's next run offers the model: built-in, command and fetch, and its MCP servers' (read-only).";
/// Close a session (cancelling its run).
    SessionClose(SESSION_CLOSE = "session/close"): SessionRef => SessionInfo,
        "Close a session; a run in flight is cancelled.";
/// Delete sessions unused for a while, and compact the database.
    SessionPrune(SESSION_PRUNE = "session/prune"): SessionPruneParams => SessionPruneResult,
        "Delete sessions unused for older_than_s seconds (not those in use), then compact the database; remove the worktrees of deleted sessions, keeping their branches.";
/// Bring a worktree session's changes into the user's checkout.
    SessionApply(SESSION_APPLY = "session/apply"): SessionRef => SessionApplyResult,
        "Commit a worktree session's work to its branch and apply what is new since the last apply to the user's checkout as uncommitted changes; on a conflict nothing changes and the files are listed.";
/// Subscribe to a session's events (notifications: `session/event`).
    SessionSubscribe(SESSION_SUBSCRIBE = "session/subscribe"): SubscribeParams => Event,
        "Stream a session's stored and live events from a seq (notifications: session/event).";
/// End a `session/subscribe` subscription.
    SessionUnsubscribe(SESSION_UNSUBSCRIBE = "session/unsubscribe"): NoParams => bool,
        "End a session/subscribe subscription.";
/// Start a run in a session.
    RunStart(RUN_START = "run/start"): RunStartParams => RunStartResult,
        "Start a run; refused with session_busy while another runs.";
/// Cancel a run.
    RunCancel(RUN_CANCEL = "run/cancel"): RunRef => RunCancelResult,
        "Cancel a run: between turns and tools, killing running children.";
/// Wait for a run to finish.
    RunWait(RUN_WAIT = "run/wait"): RunRef => RunResult,
        "Wait for a run to finish and return its result.";
/// Answer a run's `approval_requested` event.
    RunApprove(RUN_APPROVE = "run/approve"): ApproveParams => ApproveResult,
        "Answer a run's approval_requested event: allow or reject once or for the session.";
/// The models a session's provider offers.
    ProviderModelsMethod(PROVIDER_MODELS = "provider/models"): ProviderModelsParams => ProviderModels,
        "The models a session's provider offers, or those of the provider a project's config names (its /models), with their context windows, for a model picker.";
/// Swival's report JSON of a finished run.
    ReportGet(REPORT_GET = "report/get"): RunRef => Report,
        "Swival's report JSON (version 1) of a finished run.";
/// What a finished run (or an undo) changed in its project.
    RunChangesMethod(RUN_CHANGES = "run/changes"): RunChangesParams => RunChanges,
        "Files a finished run (or an undo) created, modified, deleted or renamed, with unified diffs and the tool call behind each.";
/// Put back what a run (or an undo) changed.
    RunRevert(RUN_REVERT = "run/revert"): RunRevertParams => RunRevertResult,
        "Revert a finished run's file changes; refuses listing each file changed since, unless force; recorded as an undoable change set.";
/// Set a session's goal (Swival's `/goal`).
    GoalSet(GOAL_SET = "goal/set"): GoalSetParams => GoalResult,
        "Set a session's goal: the daemon runs the session, run after run, until the model calls complete_goal, a budget is spent, it is paused, or it is stuck.";
/// A session's goal.
    GoalGet(GOAL_GET = "goal/get"): SessionRef => GoalResult,
        "A session's goal: objective, status, tokens, time and runs used, last step and blocker.";
/// Pause a session's goal.
    GoalPause(GOAL_PAUSE = "goal/pause"): SessionRef => GoalResult,
        "Pause a session's active goal; its run in flight finishes, no new one starts.";
/// Resume a paused or stuck goal.
    GoalResume(GOAL_RESUME = "goal/resume"): SessionRef => GoalResult,
        "Resume a paused or stuck goal: the daemon starts its next run.";
/// Remove a session's goal.
    GoalClear(GOAL_CLEAR = "goal/clear"): SessionRef => GoalResult,
        "Remove a session's goal (its run in flight is cancelled); the result holds the goal removed.";
/// Every goal.
    GoalList(GOAL_LIST = "goal/list"): NoParams => GoalListResult,
        "Every stored goal of every session, newest first.";
/// Add a loop to a session (Swival's `/loop`).
    LoopAdd(LOOP_ADD = "loop/add"): LoopAddParams => LoopResult,
        "Run a prompt on a schedule (every N seconds, a cron expression, or once at a time), each firing a run in a fresh git worktree of the session's project.";
/// The loops.
    LoopList(LOOP_LIST = "loop/list"): LoopListParams => LoopListResult,
        "Every active loop (all: also those that no longer fire), or one session's, oldest first.";
/// Remove loops.
    LoopRemove(LOOP_REMOVE = "loop/remove"): LoopRemoveParams => LoopRemoveResult,
        "Cancel one loop of a session, or all of them; a firing in flight finishes.";
/// What background work did.
    InboxList(INBOX_LIST = "inbox/list"): InboxListParams => InboxListResult,
        "What background work did (goals, loop firings, detached runs, approvals waiting), newest first; after_seq for what a client has not shown.";
/// Follow the inbox (notifications: `inbox/entry`).
    InboxSubscribe(INBOX_SUBSCRIBE = "inbox/subscribe"): InboxListParams => InboxEntry,
        "Stream inbox entries after after_seq (default: from now on), oldest first, then each new one as it is written (notifications: inbox/entry).";
/// End an `inbox/subscribe` subscription.
    InboxUnsubscribe(INBOX_UNSUBSCRIBE = "inbox/unsubscribe"): NoParams => bool,
        "End an inbox/subscribe subscription.";
/// Collect the snapshot stores.
    SnapshotsGc(SNAPSHOTS_GC = "snapshots/gc"): NoParams => SnapshotGcResult,
        "Delete what no stored change set names from the snapshot stores; a store none names is removed.";
/// One review of an answer (Swival's reviewer mode).
    ReviewRun(REVIEW_RUN = "review/run"): ReviewRunParams => ReviewRunResult,
        "Judge an answer against its task (and criteria) with one model call through a session's pipeline; Swival's review prompt and VERDICT contract.";
/// Register a client hook (notifications: `hooks/invoke`).
    HooksRegister(HOOKS_REGISTER = "hooks/register"): HookRegisterParams => HookInvocation,
        "Register a client hook for some points; invocations arrive as hooks/invoke notifications.";
/// Remove a client hook (closing the connection also does).
    HooksUnregister(HOOKS_UNREGISTER = "hooks/unregister"): NoParams => bool,
        "End a hooks/register subscription.";
/// Serve a session's file reads from an editor's buffers (subscription).
    BuffersServe(BUFFERS_SERVE = "buffers/serve"): SessionRef => BufferRead,
        "Serve a session's read_file calls from an editor's buffers; requests arrive as buffers/read notifications.";
/// End a `buffers/serve` subscription.
    BuffersUnserve(BUFFERS_UNSERVE = "buffers/unserve"): NoParams => bool,
        "End a buffers/serve subscription.";
/// Answer one `buffers/read`.
    BuffersRespond(BUFFERS_RESPOND = "buffers/respond"): BufferRespondParams => BufferRespondResult,
        "Answer one buffers/read with the buffer's text, or null to read the file from disk.";
/// A client hook's answer to one invocation.
    HooksRespond(HOOKS_RESPOND = "hooks/respond"): HookRespondParams => HookRespondResult,
        "Answer one hooks/invoke with the hook's result.";
/// Response cache statistics.
    CacheStatsMethod(CACHE_STATS = "cache/stats"): NoParams => CacheStats,
        "Response cache: entries, bytes, hits, misses, shared calls.";
/// Empty the response cache.
    CacheClear(CACHE_CLEAR = "cache/clear"): NoParams => CacheClearResult,
        "Empty the response cache; returns how many entries were removed.";
/// Whether a command would run, and why.
    PolicyCheck(POLICY_CHECK = "policy/check"): PolicyCheckParams => PolicyCheckResult,
        "Whether run_command would run an argv in a session (or base dir), and why.";
/// What guards a session: filters, hooks, reviewer, sandbox.
    PolicyStatusMethod(POLICY_STATUS = "policy/status"): SessionRef => PolicyStatus,
        "Filter stages, hooks, reviewer, sandbox and MCP servers of a session, each script with its SHA-256.";
/// The effective configuration for a base directory, with sources.
    ConfigResolve(CONFIG_RESOLVE = "config/resolve"): ConfigResolveParams => ConfigResolveResult,
        "The effective configuration for a base directory, with the layer that set each key.";
/// Every MCP server the daemon runs or holds for a session.
    McpStatus(MCP_STATUS = "mcp/status"): NoParams => McpStatusResult,
        "Every MCP server: transport, command or URL, pid, tools and the sessions using it.";
/// Append a note to a project's `.swival/memory/MEMORY.md`.
    MemoryAdd(MEMORY_ADD = "memory/add"): MemoryAddParams => MemoryAddResult,
        "Append a note (a bullet, under a new heading when given) to the project's .swival/memory/MEMORY.md, which later runs retrieve from.";
/// Write a session's continue file now (a REPL leaving).
    ContinueSave(CONTINUE_SAVE = "continue/save"): SessionRef => ContinueSaveResult,
        "Write .swival/continue.md from an idle session's conversation (Swival's REPL exit), unless no_continue.";
/// Remove a project's continue file (Swival's `/clear`).
    ContinueClear(CONTINUE_CLEAR = "continue/clear"): ContinueClearParams => ContinueClearResult,
        "Remove the project's .swival/continue.md, so the next session does not resume from it.";
/// Trust a project's `swival.toml` as it is now.
    ProjectTrust(PROJECT_TRUST = "project/trust"): ProjectTrustParams => ProjectTrustResult,
        "Trust a project's swival.toml as it is now (by SHA-256); `check: true` only reports.";
}

/// A method that opens a subscription: the notification its items
/// arrive as (their payload is [`Method::Result`]) and the method that
/// closes it, declared together in the list below.
pub trait Subscribe: Method {
    /// The notification's wire name.
    const NOTIFICATION: &'static str;
    /// The method that closes the subscription.
    type Unsubscribe: Method;
}

macro_rules! subscriptions {
    ($( $(#[$doc:meta])* $ty:ident: $name:ident = $wire:literal, closed by $unsub:ident; )*) => {
        $(
            $(#[$doc])*
            pub const $name: &str = $wire;
            impl Subscribe for typed::$ty {
                const NOTIFICATION: &'static str = $wire;
                type Unsubscribe = typed::$unsub;
            }
        )*

        /// Every notification, with the method whose subscription sends it.
        pub const NOTIFICATIONS: &[(&str, &str)] = &[ $( ($wire, <typed::$ty as Method>::NAME) ),* ];
    };
}

subscriptions! {
/// The notification of `session/subscribe`: one event.
    SessionSubscribe: SESSION_EVENT = "session/event", closed by SessionUnsubscribe;
/// The notification of `hooks/register`: one invocation to answer.
    HooksRegister: HOOKS_INVOKE = "hooks/invoke", closed by HooksUnregister;
/// The notification of a `buffers/serve` subscription: a file to read.
    BuffersServe: BUFFERS_READ = "buffers/read", closed by BuffersUnserve;
/// The notification of `inbox/subscribe`: one entry.
    InboxSubscribe: INBOX_ENTRY = "inbox/entry", closed by InboxUnsubscribe;
}

/// `T`'s JSON schema.
pub(crate) fn schema<T: schemars::JsonSchema>() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("schemas serialize")
}

/// A params type's schema; `None` for [`NoParams`].
pub(crate) fn params<T: schemars::JsonSchema + 'static>() -> Option<serde_json::Value> {
    (std::any::TypeId::of::<T>() != std::any::TypeId::of::<NoParams>()).then(schema::<T>)
}
