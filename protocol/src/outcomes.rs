//! How a run and its calls ended, as its events and its report both say:
//! the run's [`Outcome`], a compaction's steps, a call's cache status.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

/// One step of a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionStep {
    /// Old tool results were cut short.
    TruncateToolResults,
    /// Middle turns were replaced by the model's summary of them.
    SummarizeMiddle,
    /// Middle turns were dropped (the summary failed or was refused).
    DropMiddle,
    /// The messages since a checkpoint (or the last user message) were
    /// collapsed into one summary (`session/restore`, Swival's `/restore`).
    SnapshotRestore,
}

impl CompactionStep {
    /// Every step, in the order a compaction takes them.
    pub const ALL: [CompactionStep; 4] = [
        CompactionStep::TruncateToolResults,
        CompactionStep::SummarizeMiddle,
        CompactionStep::DropMiddle,
        CompactionStep::SnapshotRestore,
    ];
    /// Their names on the wire.
    pub const NAMES: &'static [&'static str] =
        &["truncate_tool_results", "summarize_middle", "drop_middle", "snapshot_restore"];

    /// The name on the wire.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// What a compaction did, step by step; on the wire the steps' names
/// joined with `+` (Swival's form, e.g. `truncate_tool_results+summarize_middle`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CompactionStrategy(pub Vec<CompactionStep>);

impl From<CompactionStrategy> for String {
    fn from(s: CompactionStrategy) -> String {
        s.to_string()
    }
}

impl std::fmt::Display for CompactionStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            f.write_str(step.name())?;
        }
        Ok(())
    }
}

impl TryFrom<String> for CompactionStrategy {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        text.split('+')
            .map(|name| {
                CompactionStep::ALL
                    .into_iter()
                    .find(|step| step.name() == name)
                    .ok_or_else(|| format!("unknown compaction step {name:?} in {text:?}"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(CompactionStrategy)
    }
}

/// How the response cache served a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CacheStatus {
    /// From the cache.
    Hit,
    /// Joined an identical call in flight.
    Shared,
}
