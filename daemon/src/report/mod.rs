//! Swival's report JSON (version 1): what a run did, for `--report FILE`
//! and `report/get`. [`RunRecord`] folds the run's events into the stats
//! and the typed timeline while the run goes (`record.rs`); [`build`]
//! assembles the document when it ends.

mod record;

use record::round3;
pub use record::RunRecord;
use serde_json::{json, Value};
use swival_protocol::RunResult;

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
    pub settings: Value,
    /// `sandbox` object.
    pub sandbox: Value,
}

/// The report document.
pub fn build(ctx: &ReportContext<'_>, result: &RunResult, record: &RunRecord) -> Value {
    let mut stats = serde_json::to_value(&record.stats).expect("stats serialize");
    for k in ["total_llm_time_s", "total_tool_time_s"] {
        if let Some(v) = stats.get(k).and_then(Value::as_f64) {
            stats[k] = json!(round3(v));
        }
    }
    let mut res = json!({
        "outcome": result.outcome.as_str(),
        "answer": result.answer,
        "exit_code": result.exit_code,
    });
    if let Some(err) = &result.error {
        res["error_message"] = json!(err);
    }
    json!({
        "version": 1,
        "mode": "oneshot",
        "timestamp": crate::clock::now(),
        "task": ctx.task,
        "model": ctx.model,
        "provider": ctx.provider,
        "settings": ctx.settings,
        "sandbox": ctx.sandbox,
        "result": res,
        "stats": stats,
        "timeline": record.timeline(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
            settings: json!({}),
            sandbox: json!({"mode": "builtin"}),
        };
        let r = build(&ctx, &result, &rec);
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
