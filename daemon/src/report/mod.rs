//! Swival's report JSON (version 1): what a run did, for `--report FILE`
//! and `report/get`. [`RunRecord`] folds the run's events into the stats
//! and the typed timeline while the run goes (`record.rs`); [`build`]
//! assembles the document when it ends.

mod record;

pub use record::RunRecord;
use swival_protocol::{round3, Report, ReportResult, ReportSandbox, ReportSettings, RunResult};

/// What the report says about the session's settings.
#[derive(Debug, Clone)]
pub struct ReportContext<'a> {
    /// The task.
    pub task: &'a str,
    /// The model id.
    pub model: &'a str,
    /// The provider name.
    pub provider: &'a str,
    /// `settings` object (Swival's keys).
    pub settings: ReportSettings,
    /// `sandbox` object.
    pub sandbox: ReportSandbox,
}

/// The tokens a run's calls used, from its `timeline` and its
/// `completion_tokens`: each prompt as the server counted it (or as
/// estimated), and the completions; and whether any of it is estimated.
pub fn tokens_spent(timeline: &[swival_protocol::TimelineEntry], completion_tokens: Option<u64>) -> (u64, bool) {
    let mut estimated = completion_tokens.is_none();
    let prompts: u64 = timeline
        .iter()
        .filter_map(|e| match e {
            swival_protocol::TimelineEntry::LlmCall { prompt_tokens, prompt_tokens_est, .. } => {
                estimated |= prompt_tokens.is_none();
                Some(prompt_tokens.unwrap_or(*prompt_tokens_est))
            }
            _ => None,
        })
        .sum();
    (prompts + completion_tokens.unwrap_or(0), estimated)
}

/// The report of a run.
pub fn build(ctx: &ReportContext<'_>, result: &RunResult, record: &RunRecord) -> Report {
    let mut stats = record.stats.clone();
    stats.total_llm_time_s = round3(stats.total_llm_time_s);
    stats.total_tool_time_s = round3(stats.total_tool_time_s);
    Report {
        version: 1,
        mode: Some("oneshot".to_owned()),
        timestamp: Some(crate::clock::now()),
        task: ctx.task.to_owned(),
        model: Some(ctx.model.to_owned()),
        provider: Some(ctx.provider.to_owned()),
        settings: Some(ReportSettings { skills_discovered: record.skills_discovered.clone(), ..ctx.settings.clone() }),
        sandbox: Some(ctx.sandbox.clone()),
        result: ReportResult {
            outcome: result.outcome,
            answer: result.answer.clone(),
            exit_code: result.exit_code,
            error_message: result.error.clone(),
        },
        stats: Some(stats),
        timeline: Some(record.timeline().to_vec()),
        changes: None,
    }
}

/// The report of a run that ended without running its loop to the end
/// (interrupted by a restart, or a panic): the task and the result only.
pub fn bare(task: &str, result: &RunResult) -> Report {
    Report {
        version: 1,
        mode: None,
        timestamp: None,
        task: task.to_owned(),
        model: None,
        provider: None,
        settings: None,
        sandbox: None,
        result: ReportResult {
            outcome: result.outcome,
            answer: None,
            exit_code: result.exit_code,
            error_message: result.error.clone(),
        },
        stats: None,
        timeline: None,
        changes: None,
    }
}

/// The report of a run the daemon lost while it was in flight: its end,
/// and the stats and timeline of what its events say it did.
pub fn lost(task: &str, result: &RunResult, record: &RunRecord) -> Report {
    Report { stats: Some(result.stats.clone()), timeline: Some(record.timeline().to_vec()), ..bare(task, result) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use swival_protocol::{Outcome, RunId};

    #[test]
    fn report_has_swivals_top_level_and_stats() {
        let mut rec = RunRecord::default();
        rec.apply(&record::tests::llm_call(1, 0.5, 10, "tool_calls"));
        record::tests::tool_call(&mut rec, 1, "read_file", "{\"file_path\":\"a\"}", "1: x", 0.01);
        record::tests::tool_call(&mut rec, 1, "read_file", "{", "error: bad", 0.0);
        let result = RunResult {
            run_id: RunId("r_1".into()),
            outcome: Outcome::Success,
            answer: Some("done".into()),
            exit_code: 0,
            error: None,
            failure: None,
            stats: rec.stats.clone(),
        };
        let ctx = ReportContext {
            task: "t",
            model: "m",
            provider: "generic",
            settings: ReportSettings {
                temperature: None,
                top_p: None,
                seed: None,
                max_turns: 1,
                max_output_tokens: 1,
                context_length: None,
                files: "some".into(),
                commands: swival_protocol::ReportCommands::Mode("none".into()),
                max_review_rounds: 0,
                skills_discovered: Vec::new(),
            },
            sandbox: ReportSandbox { mode: swival_protocol::SandboxMode::Builtin, summary: String::new() },
        };
        let r = serde_json::to_value(build(&ctx, &result, &rec)).unwrap();
        assert_eq!(r["version"], 1);
        assert_eq!(r["result"]["outcome"], "success");
        assert_eq!(r["stats"]["turns"], 1);
        assert_eq!(r["stats"]["llm_calls"], 1);
        assert_eq!(r["stats"]["tool_calls_by_name"]["read_file"], json!({"succeeded": 1, "failed": 1}));
        assert_eq!(r["stats"]["review_rounds"], 0);
        assert_eq!(r["timeline"].as_array().unwrap().len(), 3);
        assert_eq!(r["timeline"][2]["arguments"], Value::Null);
    }
}
