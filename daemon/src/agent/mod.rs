//! A run, from its setup to its end, as one value: [`run`] takes the
//! session's context (read-only) and state (moved in), sets the run up
//! (`setup`), runs the turn loop (`turns`) and the reviewer rounds and
//! response hooks (`review`), and hands the state back with the outcome.
//! A turn is one LLM call plus its tool calls, with Swival's semantics.
//! Every nudge the loop gives and every loop guard is one entry of the
//! table in `nudge/`, with its event and its switch.
//! [`compact`] runs the loop's compaction between runs, on the same path,
//! and [`restore`] a restore to a checkpoint (Swival's `/restore`).

mod call;
mod checkpoint;
mod compact;
pub mod conversation;
mod estimate;
mod goal;
mod guard;
mod job;
mod nudge;
mod observer;
pub mod prompt;
mod resume;
mod review;
mod setup;
mod sink;
mod snapshot_tool;
pub mod subagents;
mod thinking;
mod tools;
mod turns;
mod verify;
mod written;

use crate::cache::{CacheError, ResponseCache};
use crate::config::SessionConfig;
use crate::editor::EditorBuffers;
use crate::environment::CallerEnv;
use crate::pipeline::hooks::{self, merge::Decision};
use crate::pipeline::Pipeline;
use crate::procs::ProcessRunner;
use crate::provider::Provider;
use crate::report::RunRecord;
use crate::sandbox::ask::AskGate;
use crate::sandbox::{CommandEnv, FetchEnv};
use crate::secrets::SecretShield;
use crate::store::StoreError;
use crate::tools::ToolBox;
pub use checkpoint::{restore, restore_scope, Mark, Restored, IMPLICIT_LABEL};
pub use compact::compact;
use conversation::Conversation;
use estimate::Offered;
pub use goal::{completes as completes_goal, last_check, GoalRun, COMPLETED as GOAL_COMPLETED};
pub use job::CompactError;
pub use resume::save_now as save_continue;
pub use setup::provider_settings;
pub use sink::{emit_recorded, EventSink};
use std::path::Path;
use std::sync::Arc;
use swival_protocol::{EventKind, FailureKind, HookCall, Outcome, RunId, SessionId};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Result shown to the model for tool calls of a cancelled run.
const CANCELLED_RESULT: &str = "error: the run was cancelled before this tool call ran";

/// How the loop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopEnd {
    /// A final answer.
    Answer(String),
    /// `max_turns` ran out; the last assistant text, if any.
    Exhausted(Option<String>),
    /// The run was cancelled.
    Cancelled,
    /// The run failed: why, as a kind and in words.
    Failed(FailureKind, String),
    /// The prompt no longer fits the context, even compacted (a provider
    /// failure that leaves a continue file); the provider's words.
    Overflowed(String),
    /// A hook blocked the run; the reason.
    Blocked(String),
}

impl From<StoreError> for LoopEnd {
    fn from(e: StoreError) -> Self {
        LoopEnd::Failed(FailureKind::Internal, format!("could not store the conversation: {e}"))
    }
}

/// What a run reads and never changes: the session's config, policy and
/// services, built once by the session for the run.
#[derive(Clone, Copy)]
pub struct RunContext<'a> {
    /// The run.
    pub run_id: &'a RunId,
    /// The session, for hook payloads.
    pub session_id: &'a SessionId,
    /// The user's task (a resumed run's: only its label).
    pub task: &'a str,
    /// Go on with the conversation as it is, adding no user message
    /// (Swival's `/continue`).
    pub resume: bool,
    /// Offer the model no tools: one call, its answer (a review's).
    pub bare: bool,
    /// The session's goal, when this run works on it.
    pub goal: Option<&'a GoalRun>,
    /// The session's config.
    pub config: &'a SessionConfig,
    /// The session's base directory.
    pub base_dir: &'a Path,
    /// The caller's environment (the provider key, the `command` provider).
    pub env: &'a CallerEnv,
    /// Where events go.
    pub events: &'a dyn EventSink,
    /// The session's policy pipeline.
    pub pipeline: &'a Pipeline,
    /// How `run_command` runs.
    pub commands: &'a CommandEnv,
    /// How `fetch_url` runs.
    pub fetch: &'a FetchEnv,
    /// The session's answers to calls `after_llm_call` hooks asked about.
    pub hook_asks: &'a AskGate,
    /// Editors serving file reads from their buffers.
    pub buffers: &'a EditorBuffers,
    /// Daemon-wide cap on concurrent provider calls (FIFO-fair).
    pub llm_slots: &'a Semaphore,
    /// The daemon's services a run's setup uses.
    pub services: &'a dyn RunServices,
    /// Set by run/cancel, session/close or shutdown.
    pub cancel: &'a CancellationToken,
    /// Records what the run's calls change in the project (`None`: not
    /// recorded).
    pub changes: Option<&'a crate::changes::Recorder>,
    /// Makes and runs the run's subagents as child sessions (`None`: a
    /// subagent's own run, or a job that is not a run).
    pub subagents: Option<&'a dyn subagents::SubagentHost>,
}

/// Daemon services a run's setup asks for.
pub trait RunServices: Sync {
    /// The providers' HTTP client.
    fn http(&self) -> reqwest::Client;
    /// Runs `command` providers.
    fn runner(&self) -> Arc<ProcessRunner>;
    /// The base of the provider retry backoff.
    fn backoff_base(&self) -> std::time::Duration;
    /// The response cache (for a session with `cache = true`).
    fn cache(&self) -> Result<Arc<ResponseCache>, CacheError>;
    /// Whether the daemon is shutting down (a cancelled run was interrupted).
    fn shutting_down(&self) -> bool;
    /// The daemon's socket, for a reviewer that talks to it.
    fn socket(&self) -> Option<std::path::PathBuf>;
}

/// What a run changes: moved in when it starts, handed back when it ends.
pub struct RunState {
    /// The session's conversation.
    pub conversation: Conversation,
    /// The session's tools.
    pub tools: ToolBox,
    /// Encrypts secrets on the way out and decrypts them in replies.
    pub shield: Option<SecretShield>,
}

/// The model a run talks to, as its setup found it.
struct Llm {
    /// The provider client.
    provider: Provider,
    /// Model id to request.
    model: String,
    /// Context window, when known.
    context_window: Option<u64>,
    /// The response cache, when the session has `cache = true`.
    cache: Option<Arc<ResponseCache>>,
    /// Digest of the session's filters and hooks (part of the cache key).
    policy_digest: String,
}

/// A run in progress: its context, its model, and the state it owns.
pub struct Run<'a> {
    /// What it reads.
    ctx: RunContext<'a>,
    /// What it talks to.
    llm: Llm,
    /// The session's conversation.
    conversation: Conversation,
    /// The session's tools.
    tools: ToolBox,
    /// The secret shield.
    shield: Option<SecretShield>,
    /// Stats and timeline, folded from the events the run emits.
    record: RunRecord,
    /// Turns taken by earlier loops of the run (reviewer rounds).
    turn_offset: u64,
    /// Its subagents, when it may spawn them.
    subagents: Option<subagents::Subagents<'a>>,
    /// Which nudges are on.
    nudges: nudge::Switches,
    /// Files it deleted that the task did not ask for.
    deleted: nudge::deleted_unasked::DeletedUnasked,
    /// What it changed, to tell whether a change stands.
    unmade: nudge::unmade::Unmade,
    /// A file tool changed a file since its check last ran (`verify.rs`).
    changed: bool,
    /// The model's `snapshot` checkpoint and what ran since.
    checkpoints: snapshot_tool::Checkpoints,
    /// A goal's run's own state.
    goal: goal::InRun,
}

/// How a run ended, with the state it owned.
pub struct Finished {
    /// Success, error, exhausted…
    pub outcome: Outcome,
    /// The answer delivered (after response hooks), or the last assistant
    /// text of an exhausted run.
    pub answer: Option<String>,
    /// Why it did not succeed, in Swival's words.
    pub error: Option<String>,
    /// Why it did not succeed, as a kind.
    pub failure: Option<FailureKind>,
    /// The model used ("" when setup failed before it was known).
    pub model: String,
    /// Stats and timeline.
    pub record: RunRecord,
    /// The state, handed back to the session.
    pub state: RunState,
}

/// Run a run from its setup to its end; never fails: every failure is the
/// outcome.
pub async fn run(ctx: RunContext<'_>, state: RunState) -> Finished {
    let (end, model, record, state) = match setup::prepare(ctx, state).await {
        Err((end, model, record, state)) => {
            resume::leave_after_setup(ctx, &end, &state);
            (end, model, record, state)
        }
        Ok(mut run) => {
            let end = run.rounds().await;
            run.leave_continue(&end).await;
            if let Some(subagents) = run.subagents.as_mut() {
                subagents.cancel_all();
            }
            let end = run.response_hooks(end).await;
            let Run { llm, conversation, tools, shield, record, .. } = run;
            (end, llm.model, record, RunState { conversation, tools, shield })
        }
    };
    let (outcome, answer, error, failure) = outcome(ctx, end);
    let mut record = record;
    record.stats.goal = ctx.goal.map(|g| goal::report(g, ctx.run_id, outcome, answer.as_deref(), &record));
    Finished { outcome, answer, error, failure, model, record, state }
}

/// A run's outcome, answer, error and failure kind from how it ended.
fn outcome(ctx: RunContext<'_>, end: LoopEnd) -> (Outcome, Option<String>, Option<String>, Option<FailureKind>) {
    match end {
        LoopEnd::Blocked(reason) => {
            (Outcome::Blocked, None, Some(format!("blocked by policy: {reason}")), Some(FailureKind::HookBlocked))
        }
        LoopEnd::Answer(a) => (Outcome::Success, Some(a), None, None),
        LoopEnd::Exhausted(last) => (
            Outcome::Exhausted,
            last,
            Some(format!("max_turns ({}) exhausted", ctx.config.max_turns)),
            Some(FailureKind::Exhausted),
        ),
        LoopEnd::Cancelled if ctx.services.shutting_down() => (
            Outcome::Interrupted,
            None,
            Some("the daemon shut down while this run was in flight".to_owned()),
            Some(FailureKind::Interrupted),
        ),
        LoopEnd::Cancelled => (Outcome::Cancelled, None, Some("cancelled".to_owned()), Some(FailureKind::Cancelled)),
        LoopEnd::Failed(kind, e) => (Outcome::Error, None, Some(e), Some(kind)),
        LoopEnd::Overflowed(e) => (Outcome::Error, None, Some(e), Some(FailureKind::Provider)),
    }
}

/// Run the hooks of `call`'s point, emit each decision (an event, folded
/// into the report), and return the merged decision.
pub async fn consult(
    pipeline: &Pipeline,
    events: &dyn EventSink,
    run_id: &RunId,
    record: &mut RunRecord,
    call: &HookCall,
    cancel: &CancellationToken,
) -> Result<Decision, hooks::Cancelled> {
    let point = call.point();
    let (decision, records) = pipeline.hooks.run(call, cancel).await?;
    for r in records {
        let reason = r.effect.reason().map(str::to_owned);
        let duration_s = r.duration.as_secs_f64();
        let kind = EventKind::Hook { point, hook: r.hook, decision: r.effect.decision(), reason, duration_s };
        emit_recorded(events, run_id, record, kind);
    }
    Ok(decision)
}

impl Run<'_> {
    /// Emit `kind` as an event of this run, folded into its record: how
    /// the run tells the session and the report what happened.
    fn emit(&mut self, kind: EventKind) {
        emit_recorded(self.ctx.events, self.ctx.run_id, &mut self.record, kind);
    }
}
