//! Swival's report JSON (version 1): what a run did, for `--report FILE`
//! and `report/get`. [`RunRecord`] collects the stats and timeline while
//! the run goes; [`build`] assembles the document when it ends.

use serde_json::{json, Value};
use swival_protocol::{RunResult, RunStats};

/// Stats and timeline of one run, filled in as it goes.
#[derive(Debug, Default, Clone)]
pub struct RunRecord {
    /// The counters.
    pub stats: RunStats,
    /// Timeline events (`llm_call`, `tool_call`, `review`, ...).
    pub timeline: Vec<Value>,
    /// Response-cache keys this run's replies touched, so a withheld answer
    /// can be removed from the cache too.
    pub cache_keys: Vec<String>,
}

/// One finished provider call, for the record.
#[derive(Debug, Clone)]
pub struct LlmCallRecord {
    /// The turn.
    pub turn: u64,
    /// Wall time.
    pub duration_s: f64,
    /// Estimated prompt tokens.
    pub prompt_tokens_est: u64,
    /// The finish reason, or `error`.
    pub finish_reason: String,
    /// Retries the call needed.
    pub retries: u64,
    /// Served by the response cache (`hit` or `shared`).
    pub cache: Option<&'static str>,
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl RunRecord {
    /// Record a provider call.
    pub fn llm_call(&mut self, c: &LlmCallRecord) {
        self.stats.llm_calls += 1;
        self.stats.provider_retries += c.retries;
        self.stats.total_llm_time_s += c.duration_s;
        self.stats.turns = self.stats.turns.max(c.turn);
        let mut e = json!({
            "type": "llm_call",
            "turn": c.turn,
            "duration_s": round3(c.duration_s),
            "prompt_tokens_est": c.prompt_tokens_est,
            "finish_reason": c.finish_reason,
            "is_retry": false,
        });
        if c.retries > 0 {
            e["provider_retries"] = json!(c.retries);
        }
        if let Some(how) = c.cache {
            e["cache"] = json!(how);
        }
        self.timeline.push(e);
    }

    /// Record a tool call and its result.
    pub fn tool_call(&mut self, turn: u64, name: &str, raw_args: &str, result: &str, duration_s: f64) {
        let failed = crate::tools::is_error(result);
        let counts = self.stats.tool_calls_by_name.entry(name.to_owned()).or_default();
        self.stats.tool_calls_total += 1;
        if failed {
            counts.failed += 1;
            self.stats.tool_calls_failed += 1;
        } else {
            counts.succeeded += 1;
            self.stats.tool_calls_succeeded += 1;
        }
        self.stats.total_tool_time_s += duration_s;
        let mut e = json!({
            "type": "tool_call",
            "turn": turn,
            "name": name,
            "arguments": serde_json::from_str::<Value>(raw_args).ok(),
            "succeeded": !failed,
            "duration_s": round3(duration_s),
            "result_length": result.len(),
        });
        if failed {
            e["error"] = json!(result.chars().take(500).collect::<String>());
        }
        self.timeline.push(e);
    }

    /// Record any other timeline event (review, compaction, hook decision).
    pub fn event(&mut self, event: Value) {
        self.timeline.push(event);
    }
}

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
        "timeline": record.timeline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use swival_protocol::{Outcome, RunId};

    #[test]
    fn report_has_swivals_top_level_and_stats() {
        let mut rec = RunRecord::default();
        rec.llm_call(&LlmCallRecord {
            turn: 1,
            duration_s: 0.5,
            prompt_tokens_est: 10,
            finish_reason: "tool_calls".into(),
            retries: 0,
            cache: None,
        });
        rec.tool_call(1, "read_file", "{\"file_path\":\"a\"}", "1: x", 0.01);
        rec.tool_call(1, "read_file", "{", "error: bad", 0.0);
        let result = RunResult {
            run_id: RunId("r_1".into()),
            outcome: Outcome::Success,
            answer: Some("done".into()),
            exit_code: 0,
            error: None,
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
