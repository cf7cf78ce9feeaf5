//! Swival's report (version 1) of a run, typed: what `report/get` returns
//! and `swivalctl run --report FILE` writes. Serialised through a JSON
//! value, its keys come out sorted, as Swival's report readers have always
//! seen them from swivald.

use crate::{
    ApprovalDecision, CacheStatus, HookDecision, HookPoint, InterventionKind, Outcome, ResolvedBy, SandboxMode,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// Swival's report of a run. A run that ended before its loop did (a
/// restart, a crash) has only `version`, `task` and `result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(description = "Swival report v1")]
pub struct Report {
    /// Always 1.
    pub version: u32,
    /// Always `oneshot`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// When the report was written (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The user's task.
    pub task: String,
    /// The model used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The settings the run used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<ReportSettings>,
    /// The sandbox the run's commands had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<ReportSandbox>,
    /// How the run ended.
    pub result: ReportResult,
    /// Its counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<RunStats>,
    /// What happened, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<TimelineEntry>>,
    /// The files the run changed in its project (swivald's addition;
    /// absent when they were not recorded). `swivalctl diff` shows them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<ReportChange>>,
}

/// One file a run changed, in its report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportChange {
    /// Relative to the project's root.
    pub path: String,
    /// How it changed.
    pub kind: crate::FileChangeKind,
    /// Where a renamed file was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
}

/// The report's `result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportResult {
    /// `success`, `exhausted`, `error`…
    pub outcome: Outcome,
    /// The answer (null when none).
    pub answer: Option<String>,
    /// Swival's exit code for the outcome.
    pub exit_code: i32,
    /// Why it did not succeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

/// The report's `settings` (Swival's keys; null when unset).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportSettings {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Sampling seed.
    pub seed: Option<i64>,
    /// Turn budget.
    pub max_turns: u64,
    /// Output token cap per call.
    pub max_output_tokens: u64,
    /// The context window set by the user.
    pub context_length: Option<u64>,
    /// File access: `all`, `some` or `none`.
    pub files: String,
    /// Command access: `all`, `none`, `ask` or the allowed names, sorted.
    pub commands: ReportCommands,
    /// Reviewer rounds allowed.
    pub max_review_rounds: u64,
    /// The skills the run's setup found, sorted.
    #[serde(default)]
    pub skills_discovered: Vec<String>,
}

/// Command access as the report gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ReportCommands {
    /// `all`, `none` or `ask`.
    Mode(String),
    /// The allowed command names, sorted.
    Names(Vec<String>),
}

/// The report's `sandbox`: Swival's `mode`, plus what it comes to here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportSandbox {
    /// `os` or `builtin`.
    pub mode: SandboxMode,
    /// What the kernel enforces, in words.
    pub summary: String,
}

/// One entry of the report's timeline, as Swival writes it: a `type` tag,
/// then the fields in the order declared here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TimelineEntry {
    /// A provider call: an agent turn or a compaction summary.
    LlmCall {
        /// The turn.
        turn: u64,
        /// Wall time, retries included.
        #[serde(serialize_with = "rounded")]
        duration_s: f64,
        /// Estimated prompt tokens.
        prompt_tokens_est: u64,
        /// The provider's finish reason, `error` for a failed call, empty
        /// when the provider gave none.
        finish_reason: String,
        /// Swival's call re-sent by its recovery ladder; swivald re-sends
        /// none (its retries are `provider_retries`), so always false.
        is_retry: bool,
        /// Transient failures retried (left out when none).
        #[serde(default, skip_serializing_if = "is_zero")]
        provider_retries: u64,
        /// Answered by the response cache.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache: Option<CacheStatus>,
        /// The prompt's tokens as the server counted them (swivald's addition).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt_tokens: Option<u64>,
        /// Of those, the ones the server served from its cache (swivald's addition).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cached_tokens: Option<u64>,
    },
    /// A tool call and its result.
    ToolCall {
        /// The turn.
        turn: u64,
        /// The tool, as the model named it.
        name: String,
        /// The arguments (`None`: not JSON, or withheld with the answer).
        arguments: Option<Value>,
        /// False when the call failed.
        succeeded: bool,
        /// How long it ran.
        #[serde(serialize_with = "rounded")]
        duration_s: f64,
        /// The whole result's length in bytes.
        result_length: u64,
        /// A failed call's result, its first 500 characters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The conversation was compacted.
    Compaction {
        /// The turn.
        turn: u64,
        /// What was done, `+`-joined.
        #[schemars(with = "String")]
        strategy: crate::CompactionStrategy,
        /// Estimated prompt tokens before.
        tokens_before: u64,
        /// Estimated prompt tokens after.
        tokens_after: u64,
    },
    /// Swival's error guardrail: a nudge or a stop.
    Guardrail {
        /// The turn.
        turn: u64,
        /// The tool that kept failing.
        tool: String,
        /// `nudge` or `stop`.
        level: InterventionKind,
    },
    /// Another loop guard stepped in (a re-read or finishing nudge, the
    /// last call of a stuck run).
    Intervention {
        /// The turn.
        turn: u64,
        /// Which guard.
        kind: InterventionKind,
        /// The tool it is about (empty when none).
        tool: String,
    },
    /// The storm breaker refused a repeat.
    StormSuppression {
        /// The turn.
        turn: u64,
        /// The tool.
        name: String,
        /// Which call it was.
        args_hash: String,
        /// Identical calls in the window, this one included.
        count: u64,
    },
    /// A user answered (or did not) for a command's bucket.
    CommandPolicy {
        /// The turn.
        turn: u64,
        /// The bucket asked about.
        bucket: String,
        /// The decision that applies.
        decision: ApprovalDecision,
        /// Who decided.
        by: ResolvedBy,
    },
    /// A hook decided something.
    Hook {
        /// The point.
        point: HookPoint,
        /// The hook.
        hook: String,
        /// What it decided.
        decision: HookDecision,
        /// Why (null when it gave no reason).
        reason: Option<String>,
        /// How long it took.
        #[serde(serialize_with = "rounded")]
        duration_s: f64,
    },
    /// The project's check after the model's answer (swivald's).
    Verify {
        /// The turn whose answer it checked.
        turn: u64,
        /// The command line.
        command: String,
        /// Its exit code (null: it could not run).
        exit_code: Option<i32>,
        /// Whether it passed.
        passed: bool,
    },
    /// A reviewer round (no turn, as in Swival).
    Review {
        /// Round number, from 1.
        round: u64,
        /// The reviewer's exit code (null: none).
        exit_code: Option<i32>,
        /// What it printed on stdout.
        feedback: String,
        /// What it wrote on stderr, only when anything.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stderr: Option<String>,
    },
}

/// Seconds to three decimals, as Swival reports them.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn rounded<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(round3(*x))
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Success and failure counts of one tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCounts {
    /// Calls that succeeded.
    pub succeeded: u64,
    /// Calls that failed (their result is an `error: …` line).
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
    /// Prompt tokens the server counted, all calls (swivald's addition;
    /// absent when the server never said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Of those, the ones it served from its cache (absent when it never said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Completion tokens the server counted, all calls (swivald's
    /// addition; absent when the server never said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// What the run's calls cost in US dollars, from `model_prices`
    /// (swivald's addition; absent when the model has no price there or
    /// the server did not count tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Skills activated (`use_skill` calls that succeeded, `$name`
    /// mentions included), in order, each once.
    #[serde(default)]
    pub skills_used: Vec<String>,
    /// The memory injected into the system prompt (Swival's `memory`),
    /// when the run built one and MEMORY.md had entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<crate::notes::MemoryStats>,
    /// The prompt of the run's last agent call, in tokens (the server's
    /// count, else the estimate): how much of the window the conversation
    /// fills (swivald's addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// The model's context window, when known (swivald's addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The goal this run worked on (Swival's `goal`), when it was a goal's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<ReportGoal>,
}

/// Swival's report `goal`: for a goal's run, whether it set or completed
/// the goal, and the goal as the run left it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportGoal {
    /// 1 for the goal's first run.
    pub created_count: u64,
    /// 1 when this run completed it.
    pub completed_count: u64,
    /// The goal as the run left it (its tokens and runs counted, `complete`
    /// when it completed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<Box<crate::goals::Goal>>,
}
