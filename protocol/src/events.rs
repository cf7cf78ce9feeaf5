//! The event stream of `session/subscribe` (what clients answer to the
//! events that wait for them is in `approvals.rs`).

use crate::approvals::{ApprovalDecision, ResolvedBy};
use crate::hooks::{CallKind, HookDecision};
use crate::ids::{RunId, Seq, SessionId};
use crate::interventions::{InterventionKind, Repeat};
use crate::outcomes::{CacheStatus, CompactionStrategy};
use crate::session::RunEnd;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
        /// The `client_token` the run was started with, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client_token: Option<String>,
        /// The session's goal the daemon started this run for, if any
        /// (its `goal_id`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        goal_id: Option<String>,
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
    /// The model's reasoning in a reply, sent apart from its answer
    /// (`reasoning_content`): its size, and its text when the session's
    /// `show_thinking` is on (otherwise it is neither shown nor stored).
    Thinking {
        /// The turn.
        turn: u64,
        /// Its lines.
        lines: u64,
        /// About how many tokens (a quarter of its characters, as Swival
        /// estimates).
        tokens: u64,
        /// The text, with `show_thinking`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// A provider call finished.
    LlmCall {
        /// The turn.
        turn: u64,
        /// An agent turn or a compaction summary.
        call_kind: CallKind,
        /// Wall time of the call, retries included.
        duration_s: f64,
        /// The provider's finish reason (`error` when the call failed).
        finish_reason: Option<String>,
        /// The provider's token usage, as sent.
        usage: Option<Value>,
        /// Estimated prompt tokens.
        prompt_tokens_est: u64,
        /// The prompt's tokens, as the server counted them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt_tokens: Option<u64>,
        /// Of those, the ones the server served from its cache (OpenAI's
        /// `cached_tokens`, llama.cpp's `cache_n`), when it says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cached_tokens: Option<u64>,
        /// Retries this call needed.
        retries: u64,
        /// Answered from the response cache, or by an identical call in flight.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache: Option<CacheStatus>,
        /// The model's context window the call was made against, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
    },
    /// The model asked for a tool.
    ToolCall {
        /// The turn.
        turn: u64,
        /// The tool call id.
        id: String,
        /// The tool.
        name: String,
        /// What the call does (absent only in events an older swivald
        /// stored, read as `other`).
        #[serde(default)]
        kind: crate::ToolKind,
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
        /// False when the call failed (its result is an `error: …` line).
        succeeded: bool,
        /// How long it ran.
        duration_s: f64,
        /// The result, cut to 4096 characters.
        content: String,
        /// The whole result's length in bytes, however much of it
        /// `content` holds (absent only in events an older swivald stored).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result_length: Option<u64>,
        /// What a person is shown, when it is not all of `content`: the
        /// tool's own output without the notes meant for the model (a
        /// guard's hint, a repair note), cut to 4096 characters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        /// The file a successful `write_file` or `edit_file` changed, with
        /// its text before and after (absent when either is over 64 KiB or
        /// not UTF-8), so an editor can show the diff, live or replayed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        change: Option<FileChange>,
        /// After a successful `todo` call: the whole list, in order, so a
        /// client shows it (an editor's plan) without reading the text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        todo: Option<Vec<TodoItem>>,
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
        /// Which kind of script wrote it.
        source: StderrSource,
        /// The script's command line.
        command: String,
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
        /// What it decided.
        verdict: ReviewVerdict,
        /// What it wrote on stderr, when anything (each line is also a
        /// `stderr` event).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stderr: Option<String>,
    },
    /// The project's own check ran after the model answered having
    /// changed files (`verify_command`, or one detected with certainty).
    Verify {
        /// The turn whose answer it checked.
        turn: u64,
        /// The command line.
        command: String,
        /// Where it comes from: `verify_command`, or the file it was
        /// detected from (`Cargo.toml`).
        source: String,
        /// Its exit code (absent: it could not run, timed out or was cancelled).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// Whether it passed (exit code 0).
        passed: bool,
        /// The end of its output (where a test runner says what failed),
        /// or why it could not run.
        output: String,
    },
    /// A session's settings changed between runs (`session/configure`).
    SessionConfigured {
        /// The keys whose effective value changed.
        changed: Vec<String>,
    },
    /// The conversation was compacted to fit the context window, or on
    /// request (`session/compact`: no run, turn 0).
    Compaction {
        /// The turn.
        turn: u64,
        /// What was done: `truncate_tool_results`, `summarize_middle`, `drop_middle`, joined with `+`;
        /// `snapshot_restore` for `session/restore`.
        #[schemars(with = "String")]
        strategy: CompactionStrategy,
        /// Estimated prompt tokens before.
        tokens_before: u64,
        /// Estimated prompt tokens after.
        tokens_after: u64,
    },
    /// A hook decided something.
    Hook {
        /// The point.
        point: crate::HookPoint,
        /// The hook (its command, or `rpc:<name>`).
        hook: String,
        /// What it decided.
        decision: HookDecision,
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
        /// Which guard stepped in.
        kind: InterventionKind,
        /// The tool it is about (empty for `finish`).
        tool: String,
        /// What the model was told.
        message: String,
        /// The repeat a `storm` intervention refused.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<Repeat>,
    },
    /// Something the user should know; the run goes on. The message is
    /// Swival's words where Swival prints one (`Reviewer exited with code
    /// 7, accepting answer as-is`); swivalctl shows it as `Warning: …`.
    Warning {
        /// The message.
        message: String,
    },
    /// A session's loop changed: added, fired, a firing's end, warned,
    /// cancelled, done.
    Loop {
        /// What happened.
        action: crate::loops::LoopAction,
        /// The loop after it.
        #[serde(rename = "loop")]
        loop_: Box<crate::loops::Loop>,
    },
    /// A session's goal changed (Swival's `goal_event`): set, paused,
    /// resumed, a run started for it, completed, limited, stuck, cleared.
    Goal {
        /// What happened.
        action: crate::goals::GoalAction,
        /// The goal after it (absent once cleared).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        goal: Option<Box<crate::goals::Goal>>,
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
        /// what a "never" answer rejects. An "always" answer approves this
        /// command as it is (every word but plain paths inside the project).
        bucket: String,
        /// The command line as the model asked for it.
        command: String,
        /// The bucket is one Swival calls high-risk (`rm`, `git push`, `curl`,
        /// `sh -c`, …), a use whose arguments make the program run other
        /// code (`git -c core.fsmonitor`, `awk system()`, `sed e`), or a
        /// command that runs files changed in the session (`changed_files`).
        high_risk: bool,
        /// How long the run waits.
        timeout_s: f64,
        /// The exact argv that will run (control characters escaped).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        argv: Vec<String>,
        /// Why the bucket is high-risk, in words for the user.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Files the command would run that changed during the session (a
        /// script, a Makefile, `package.json`, git's hooks), relative to the
        /// base dir when under it: an earlier "always" for the bucket did not
        /// see them, and an "always" now covers them only as they are.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changed_files: Vec<String>,
        /// The arguments carry the code that runs: this bucket is asked every
        /// time, and an `allow_always` answer allows this command once.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        every_time: bool,
        /// The words of this command (options, values, subcommands) that
        /// no command the user allowed always in this bucket had: why it is
        /// asked again (control characters escaped; a path inside the
        /// project is shown as `<path in the project>`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unseen_args: Vec<String>,
    },
    /// An approval was answered (or timed out, or the run was cancelled).
    ApprovalResolved {
        /// The request answered.
        approval_id: String,
        /// The decision that applies.
        decision: ApprovalDecision,
        /// Who decided.
        by: ResolvedBy,
    },
    /// The run ended; exactly one per run, always the run's last event.
    RunFinished(RunEnd),
}

/// What a reviewer round decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewVerdict {
    /// The answer stands.
    Accept,
    /// The model gets the feedback and tries again.
    Retry,
    /// The reviewer failed; the answer stands (Swival's contract).
    Error,
}

impl ReviewVerdict {
    /// The name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            ReviewVerdict::Accept => "accept",
            ReviewVerdict::Retry => "retry",
            ReviewVerdict::Error => "error",
        }
    }
}

/// Which kind of policy script wrote a `stderr` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StderrSource {
    /// A filter stage (Swival shows its stderr as written, even with `--quiet`).
    Filter,
    /// The reviewer.
    Reviewer,
}

/// One item of the `todo` list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoItem {
    /// The task.
    pub task: String,
    /// Whether it is done.
    pub done: bool,
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

#[cfg(test)]
mod tests {
    use crate::outcomes::{CompactionStep, CompactionStrategy};

    #[test]
    fn a_compaction_strategy_is_its_steps_joined_with_plus() {
        let s = CompactionStrategy(vec![CompactionStep::TruncateToolResults, CompactionStep::SummarizeMiddle]);
        let wire = serde_json::to_value(&s).unwrap();
        assert_eq!(wire, "truncate_tool_results+summarize_middle");
        assert_eq!(serde_json::from_value::<CompactionStrategy>(wire).unwrap(), s);
        assert!(serde_json::from_value::<CompactionStrategy>("squash".into()).is_err());
    }

    use super::*;

    #[test]
    fn names_are_the_wire_names() {
        use ApprovalDecision as A;
        for d in [A::AllowOnce, A::AllowAlways, A::RejectOnce, A::RejectAlways] {
            assert_eq!(serde_json::to_value(d).unwrap(), d.name());
        }
        for b in [ResolvedBy::Client, ResolvedBy::Timeout, ResolvedBy::Cancelled] {
            assert_eq!(serde_json::to_value(b).unwrap(), b.name());
        }
        use HookDecision as H;
        for h in [H::Pass, H::Modify, H::Block, H::IgnoredFailure] {
            assert_eq!(serde_json::to_value(h).unwrap(), h.name());
        }
        use InterventionKind as I;
        for k in [I::Nudge, I::Stop, I::Storm, I::Reread, I::Finish, I::Stuck, I::Runaway, I::CallCap, I::Unchanged] {
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
        for v in [ReviewVerdict::Accept, ReviewVerdict::Retry, ReviewVerdict::Error] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.name());
        }
    }
}
