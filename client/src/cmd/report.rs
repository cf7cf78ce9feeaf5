//! `swivalctl run --report FILE`: Swival's report of the run, or of a run
//! that failed before it started, written as Swival writes it (pretty JSON,
//! one trailing newline).

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use swival_protocol::{Outcome, ReportResult, RunId, TimelineEntry, ToolCounts};
use swivalctl::Client;

/// The report of a run that failed before it started (Swival writes one for
/// every run failure, including set-up failures): Swival's report v1 with
/// nothing run. Not a [`swival_protocol::Report`]: Swival's failure report
/// carries only these five counters, not a whole `RunStats`.
#[derive(Serialize)]
struct FailureReport<'a> {
    /// Always 1.
    version: u32,
    /// Always `oneshot`.
    mode: &'static str,
    /// The user's task.
    task: &'a str,
    /// An error, exit code 1, with what went wrong.
    result: ReportResult,
    /// All zero.
    stats: NothingRun,
    /// Always empty.
    timeline: Vec<TimelineEntry>,
}

/// The counters of a run that never started.
#[derive(Serialize, Default)]
struct NothingRun {
    /// Turns taken.
    turns: u64,
    /// Provider calls made.
    llm_calls: u64,
    /// Tool calls made.
    tool_calls_total: u64,
    /// Tool calls per tool name.
    tool_calls_by_name: BTreeMap<String, ToolCounts>,
    /// Reviewer rounds run.
    review_rounds: u64,
}

/// Write the [`FailureReport`] of `task` to `path` (a failure to write it
/// is only said).
pub(super) fn write_failure(path: &Path, task: &str, error: &str) {
    let result =
        ReportResult { outcome: Outcome::Error, answer: None, exit_code: 1, error_message: Some(error.into()) };
    let report =
        FailureReport { version: 1, mode: "oneshot", task, result, stats: NothingRun::default(), timeline: Vec::new() };
    // Through a JSON value, as `write` does: the keys come out in the
    // order serde_json gives a map's, the declared one here (the client's
    // serde_json keeps a map's order: agent-client-protocol asks for
    // `preserve_order`), sorted in a build without that feature.
    let report = serde_json::to_value(&report).expect("reports serialize");
    let mut text = serde_json::to_string_pretty(&report).expect("reports serialize");
    text.push('\n');
    if let Err(e) = std::fs::write(path, text) {
        eprintln!("Failed to write report to {}: {e}", path.display());
    }
}

/// Write the report of run `run_id`, as the daemon made it, to `path` (a
/// failure to get or write it is only said).
pub(super) async fn write(client: &Client, run_id: &RunId, path: &Path) {
    let written = match client.report(run_id).await {
        Ok(report) => {
            // Through a JSON value, as the report has always been written.
            let report = serde_json::to_value(&report).expect("reports serialize");
            let mut text = serde_json::to_string_pretty(&report).expect("reports serialize");
            text.push('\n');
            std::fs::write(path, text).map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = written {
        eprintln!("Failed to write report to {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_failed_to_start_has_swivals_failure_report() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("r.json");
        write_failure(&path, "fix \"it\"", "no such filter");
        let want = r#"{
  "version": 1,
  "mode": "oneshot",
  "task": "fix \"it\"",
  "result": {
    "outcome": "error",
    "answer": null,
    "exit_code": 1,
    "error_message": "no such filter"
  },
  "stats": {
    "turns": 0,
    "llm_calls": 0,
    "tool_calls_total": 0,
    "tool_calls_by_name": {},
    "review_rounds": 0
  },
  "timeline": []
}
"#;
        assert_eq!(std::fs::read_to_string(&path).unwrap(), want);
    }
}
