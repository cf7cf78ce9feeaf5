//! What a run did, as the report tells it: [`RunRecord`] is a fold of the
//! run's events ([`RunRecord::apply`]) into Swival's stats and timeline.
//! The loop emits each event once and the record is fed the same value,
//! so the report and the event log cannot disagree; the timeline is typed
//! ([`Entry`]) and serializes to Swival's entries, keys in Swival's order.

use std::collections::HashMap;
pub use swival_protocol::TimelineEntry as Entry;
use swival_protocol::{CallKind, EventKind, InterventionKind, Repeat, RunStats};

/// Characters of a failed tool call's result kept as the entry's `error`.
const ERROR_CHARS: usize = 500;

/// Stats and timeline of one run, folded from its events as it goes.
#[derive(Debug, Default, Clone)]
pub struct RunRecord {
    /// The counters (changed only by [`RunRecord::apply`], but the memory,
    /// which the run's setup sets once: [`RunRecord::set_memory`]).
    pub stats: RunStats,
    /// The timeline, in the order things happened.
    timeline: Vec<Entry>,
    /// The skills the run's setup found, sorted (the report's
    /// `settings.skills_discovered`).
    pub skills_discovered: Vec<String>,
    /// Response-cache keys this run's replies touched, so a withheld answer
    /// can be removed from the cache too.
    pub cache_keys: Vec<String>,
    /// Arguments of the tool calls whose result has not come yet, by call id.
    calls: HashMap<String, String>,
    /// Turn and bucket of the approvals asked and not answered yet, by
    /// approval id.
    asked: HashMap<String, (u64, String)>,
}

impl RunRecord {
    /// What the memory injected into the run's system prompt came to
    /// (Swival's `stats.memory`); set by the run's setup.
    pub fn set_memory(&mut self, memory: Option<swival_protocol::MemoryStats>) {
        self.stats.memory = memory;
    }

    /// Fold one event of the run into the timeline and the stats. Events
    /// the report says nothing of are passed over.
    pub fn apply(&mut self, event: &EventKind) {
        if let EventKind::LlmCall {
            call_kind: CallKind::Agent, prompt_tokens, prompt_tokens_est, context_window, ..
        } = event
        {
            self.stats.context_tokens = Some(prompt_tokens.unwrap_or(*prompt_tokens_est));
            self.stats.context_window = context_window.or(self.stats.context_window);
        }
        // Every call's output is paid for, a summary's too.
        if let EventKind::LlmCall { usage: Some(usage), .. } = event {
            if let Some(n) = usage.get("completion_tokens").and_then(serde_json::Value::as_u64) {
                self.stats.completion_tokens = Some(self.stats.completion_tokens.unwrap_or(0) + n);
            }
        }
        if let Some(entry) = self.entry(event) {
            self.count(&entry);
            self.timeline.push(entry);
        }
    }

    /// The timeline so far.
    pub fn timeline(&self) -> &[Entry] {
        &self.timeline
    }

    /// Forget every tool call's arguments: a withheld answer's content,
    /// tool calls included, must not reach the report.
    pub fn withhold_arguments(&mut self) {
        for entry in &mut self.timeline {
            if let Entry::ToolCall { arguments, .. } = entry {
                *arguments = None;
            }
        }
    }

    /// The timeline entry `event` makes, if any; a tool call and an
    /// approval asked are kept until their result and answer make one.
    fn entry(&mut self, event: &EventKind) -> Option<Entry> {
        Some(match event {
            EventKind::LlmCall {
                turn,
                duration_s,
                finish_reason,
                prompt_tokens_est,
                retries,
                cache,
                prompt_tokens,
                cached_tokens,
                ..
            } => Entry::LlmCall {
                turn: *turn,
                duration_s: *duration_s,
                prompt_tokens_est: *prompt_tokens_est,
                prompt_tokens: *prompt_tokens,
                cached_tokens: *cached_tokens,
                finish_reason: finish_reason.clone().unwrap_or_default(),
                is_retry: false,
                provider_retries: *retries,
                cache: *cache,
            },
            EventKind::ToolCall { id, arguments, .. } => {
                self.calls.insert(id.clone(), arguments.clone());
                return None;
            }
            EventKind::ToolResult { turn, id, name, succeeded, duration_s, content, result_length, .. } => {
                Entry::ToolCall {
                    turn: *turn,
                    name: name.clone(),
                    arguments: self.calls.remove(id).and_then(|raw| serde_json::from_str(&raw).ok()),
                    succeeded: *succeeded,
                    duration_s: *duration_s,
                    result_length: result_length.unwrap_or(content.len() as u64),
                    // `content` holds the first 4096 characters: enough.
                    error: (!succeeded).then(|| content.chars().take(ERROR_CHARS).collect()),
                }
            }
            EventKind::Intervention { turn, kind, tool, repeat, .. } => intervention(*turn, *kind, tool, repeat),
            EventKind::Compaction { turn, strategy, tokens_before, tokens_after } => Entry::Compaction {
                turn: *turn,
                strategy: strategy.clone(),
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
            },
            EventKind::Hook { point, hook, decision, reason, duration_s } => Entry::Hook {
                point: *point,
                hook: hook.clone(),
                decision: *decision,
                reason: reason.clone(),
                duration_s: *duration_s,
            },
            EventKind::Verify { turn, command, exit_code, passed, .. } => verify(*turn, command, *exit_code, *passed),
            EventKind::Review { round, exit_code, feedback, stderr, .. } => Entry::Review {
                round: *round,
                exit_code: *exit_code,
                feedback: feedback.clone(),
                stderr: stderr.clone(),
            },
            EventKind::ApprovalRequested { .. } | EventKind::ApprovalResolved { .. } => return self.approval(event),
            EventKind::RunStarted { .. }
            | EventKind::TurnStarted { .. }
            | EventKind::TextDelta { .. }
            | EventKind::Thinking { .. }
            | EventKind::Retry { .. }
            | EventKind::Stderr { .. }
            | EventKind::Warning { .. }
            | EventKind::Goal { .. }
            | EventKind::Loop { .. }
            | EventKind::Notice { .. }
            | EventKind::SessionConfigured { .. }
            | EventKind::RunFinished(_) => return None,
        })
    }

    /// An approval asked is kept until its answer makes the entry.
    fn approval(&mut self, event: &EventKind) -> Option<Entry> {
        match event {
            EventKind::ApprovalRequested { turn, approval_id, bucket, .. } => {
                self.asked.insert(approval_id.clone(), (*turn, bucket.clone()));
                None
            }
            EventKind::ApprovalResolved { approval_id, decision, by } => {
                let (turn, bucket) = self.asked.remove(approval_id)?;
                Some(Entry::CommandPolicy { turn, bucket, decision: *decision, by: *by })
            }
            _ => None,
        }
    }

    /// Count `entry` in the stats.
    fn count(&mut self, entry: &Entry) {
        let stats = &mut self.stats;
        match entry {
            Entry::LlmCall { turn, duration_s, provider_retries, prompt_tokens, cached_tokens, .. } => {
                let add = |sum: &mut Option<u64>, n: Option<u64>| {
                    if let Some(n) = n {
                        *sum = Some(sum.unwrap_or(0) + n);
                    }
                };
                add(&mut stats.prompt_tokens, *prompt_tokens);
                add(&mut stats.cached_tokens, *cached_tokens);
                stats.llm_calls += 1;
                stats.provider_retries += provider_retries;
                stats.total_llm_time_s += duration_s;
                stats.turns = stats.turns.max(*turn);
            }
            Entry::ToolCall { name, succeeded, duration_s, arguments, .. } => {
                // Swival's `skills_used`: each skill activated, once.
                let skill = arguments.as_ref().and_then(|a| a.get("name")).and_then(|n| n.as_str());
                if let Some(skill) = skill
                    .filter(|s| *succeeded && name == crate::skills::TOOL && !stats.skills_used.iter().any(|u| u == s))
                {
                    stats.skills_used.push(skill.to_owned());
                }
                let counts = stats.tool_calls_by_name.entry(name.clone()).or_default();
                stats.tool_calls_total += 1;
                if *succeeded {
                    counts.succeeded += 1;
                    stats.tool_calls_succeeded += 1;
                } else {
                    counts.failed += 1;
                    stats.tool_calls_failed += 1;
                }
                stats.total_tool_time_s += duration_s;
            }
            Entry::Compaction { .. } => stats.compactions += 1,
            Entry::Guardrail { .. } => stats.guardrail_interventions += 1,
            Entry::StormSuppression { .. } => stats.stormed_calls += 1,
            Entry::Review { .. } => stats.review_rounds += 1,
            Entry::Intervention { .. } | Entry::CommandPolicy { .. } | Entry::Hook { .. } | Entry::Verify { .. } => {}
        }
    }
}

/// The entry of the project's check after an answer.
fn verify(turn: u64, command: &str, exit_code: Option<i32>, passed: bool) -> Entry {
    Entry::Verify { turn, command: command.to_owned(), exit_code, passed }
}

/// The entry of a loop guard's intervention: Swival's guardrail levels,
/// the storm breaker's refusal, or one of swivald's own nudges.
fn intervention(turn: u64, kind: InterventionKind, tool: &str, repeat: &Option<Repeat>) -> Entry {
    let tool = tool.to_owned();
    match kind {
        InterventionKind::Nudge | InterventionKind::Stop => Entry::Guardrail { turn, tool, level: kind },
        InterventionKind::Storm => {
            // The loop always says which repeat it refused.
            let Repeat { count, args_hash } = repeat.clone().unwrap_or_default();
            Entry::StormSuppression { turn, name: tool, args_hash, count }
        }
        // swivald's own: not in Swival's timeline.
        _ => Entry::Intervention { turn, kind, tool },
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::Value;
    use swival_protocol::{ApprovalDecision, CacheStatus, HookDecision, HookPoint, ResolvedBy};
    use swival_protocol::{CallKind, CompactionStep, CompactionStrategy, NoticeLevel, ReviewVerdict};

    /// A finished agent call.
    pub(in crate::report) fn llm_call(turn: u64, duration_s: f64, estimate: u64, finish: &str) -> EventKind {
        EventKind::LlmCall {
            turn,
            call_kind: CallKind::Agent,
            duration_s,
            finish_reason: Some(finish.into()),
            usage: None,
            prompt_tokens_est: estimate,
            prompt_tokens: None,
            cached_tokens: None,
            retries: 0,
            cache: None,
            context_window: Some(8192),
        }
    }

    /// Fold a tool call and its result, as the loop emits them.
    pub(in crate::report) fn tool_call(rec: &mut RunRecord, turn: u64, name: &str, args: &str, result: &str, s: f64) {
        let id = format!("c{}", rec.timeline().len());
        let kind = Default::default();
        rec.apply(&EventKind::ToolCall { turn, id: id.clone(), name: name.into(), kind, arguments: args.into() });
        rec.apply(&EventKind::ToolResult {
            turn,
            id,
            name: name.into(),
            succeeded: !result.starts_with("error:"),
            duration_s: s,
            content: result.chars().take(4096).collect(),
            result_length: Some(result.len() as u64),
            output: None,
            change: None,
            todo: None,
        });
    }

    fn intervention(turn: u64, kind: InterventionKind, tool: &str, repeat: Option<Repeat>) -> EventKind {
        EventKind::Intervention { turn, kind, tool: tool.into(), message: "told".into(), repeat }
    }

    /// The timeline as the report writes it, one entry a line, fields in
    /// declaration order (the order a build with `preserve_order` keeps).
    fn lines(rec: &RunRecord) -> Vec<String> {
        rec.timeline().iter().map(|e| serde_json::to_string(e).unwrap()).collect()
    }

    #[test]
    fn the_context_is_the_last_agent_calls_prompt_of_its_window() {
        let mut rec = RunRecord::default();
        rec.apply(&llm_call(1, 0.1, 900, "tool_calls"));
        rec.apply(&llm_call(2, 0.1, 1500, "stop"));
        assert_eq!((rec.stats.context_tokens, rec.stats.context_window), (Some(1500), Some(8192)));
    }

    #[test]
    fn each_entry_is_written_as_swival_writes_it_keys_in_order() {
        let mut rec = RunRecord::default();
        let mut call = llm_call(2, 1.23456, 900, "stop");
        if let EventKind::LlmCall { retries, cache, .. } = &mut call {
            (*retries, *cache) = (2, Some(CacheStatus::Hit));
        }
        rec.apply(&call);
        tool_call(&mut rec, 2, "read_file", r#"{"file_path": "a"}"#, "1: x", 0.0004);
        tool_call(&mut rec, 2, "edit_file", "{oops", "error: edit_file: no match", 0.25);
        rec.apply(&EventKind::Compaction {
            turn: 3,
            strategy: CompactionStrategy(vec![CompactionStep::TruncateToolResults, CompactionStep::DropMiddle]),
            tokens_before: 90,
            tokens_after: 40,
        });
        rec.apply(&intervention(3, InterventionKind::Nudge, "grep", None));
        rec.apply(&intervention(3, InterventionKind::Reread, "read_file", None));
        let repeat = Repeat { count: 3, args_hash: "0123456789ab".into() };
        rec.apply(&intervention(3, InterventionKind::Storm, "grep", Some(repeat)));
        rec.apply(&intervention(4, InterventionKind::Stuck, "", None));
        rec.apply(&EventKind::Hook {
            point: HookPoint::BeforeLlmCall,
            hook: "./h.sh".into(),
            decision: HookDecision::Pass,
            reason: None,
            duration_s: 0.0106,
        });
        let review = |stderr: Option<&str>| EventKind::Review {
            round: 1,
            exit_code: Some(1),
            feedback: "more".into(),
            verdict: ReviewVerdict::Retry,
            stderr: stderr.map(str::to_owned),
        };
        rec.apply(&review(None));
        rec.apply(&review(Some("warn\n")));
        assert_eq!(
            lines(&rec),
            [
                r#"{"type":"llm_call","turn":2,"duration_s":1.235,"prompt_tokens_est":900,"finish_reason":"stop","is_retry":false,"provider_retries":2,"cache":"hit"}"#,
                r#"{"type":"tool_call","turn":2,"name":"read_file","arguments":{"file_path":"a"},"succeeded":true,"duration_s":0.0,"result_length":4}"#,
                r#"{"type":"tool_call","turn":2,"name":"edit_file","arguments":null,"succeeded":false,"duration_s":0.25,"result_length":26,"error":"error: edit_file: no match"}"#,
                r#"{"type":"compaction","turn":3,"strategy":"truncate_tool_results+drop_middle","tokens_before":90,"tokens_after":40}"#,
                r#"{"type":"guardrail","turn":3,"tool":"grep","level":"nudge"}"#,
                r#"{"type":"intervention","turn":3,"kind":"reread","tool":"read_file"}"#,
                r#"{"type":"storm_suppression","turn":3,"name":"grep","args_hash":"0123456789ab","count":3}"#,
                r#"{"type":"intervention","turn":4,"kind":"stuck","tool":""}"#,
                r#"{"type":"hook","point":"before_llm_call","hook":"./h.sh","decision":"pass","reason":null,"duration_s":0.011}"#,
                r#"{"type":"review","round":1,"exit_code":1,"feedback":"more"}"#,
                r#"{"type":"review","round":1,"exit_code":1,"feedback":"more","stderr":"warn\n"}"#,
            ]
        );
    }

    #[test]
    fn a_call_without_retries_or_cache_leaves_both_keys_out_and_a_missing_finish_reason_is_empty() {
        let mut rec = RunRecord::default();
        let mut call = llm_call(1, 0.5, 10, "");
        if let EventKind::LlmCall { finish_reason, .. } = &mut call {
            *finish_reason = None;
        }
        rec.apply(&call);
        assert_eq!(
            lines(&rec),
            [
                r#"{"type":"llm_call","turn":1,"duration_s":0.5,"prompt_tokens_est":10,"finish_reason":"","is_retry":false}"#
            ]
        );
    }

    #[test]
    fn stats_count_what_the_timeline_shows() {
        let mut rec = RunRecord::default();
        rec.apply(&llm_call(1, 0.5, 10, "tool_calls"));
        let mut retried = llm_call(3, 0.25, 10, "stop");
        if let EventKind::LlmCall { retries, .. } = &mut retried {
            *retries = 2;
        }
        rec.apply(&retried);
        tool_call(&mut rec, 1, "grep", "{}", "a:1: x", 0.5);
        tool_call(&mut rec, 1, "grep", "{}", "error: bad regex", 0.25);
        tool_call(&mut rec, 3, "think", "{}", "ok", 0.0);
        rec.apply(&EventKind::Compaction {
            turn: 3,
            strategy: CompactionStrategy(vec![CompactionStep::DropMiddle]),
            tokens_before: 2,
            tokens_after: 1,
        });
        for kind in [InterventionKind::Nudge, InterventionKind::Stop, InterventionKind::Finish] {
            rec.apply(&intervention(3, kind, "grep", None));
        }
        rec.apply(&intervention(3, InterventionKind::Storm, "grep", Some(Repeat::default())));
        let review = EventKind::Review {
            round: 1,
            exit_code: Some(0),
            feedback: String::new(),
            verdict: ReviewVerdict::Accept,
            stderr: None,
        };
        rec.apply(&review);
        let s = &rec.stats;
        assert_eq!((s.llm_calls, s.turns, s.provider_retries, s.total_llm_time_s), (2, 3, 2, 0.75));
        assert_eq!(
            (s.tool_calls_total, s.tool_calls_succeeded, s.tool_calls_failed, s.total_tool_time_s),
            (3, 2, 1, 0.75)
        );
        assert_eq!((s.tool_calls_by_name["grep"].succeeded, s.tool_calls_by_name["grep"].failed), (1, 1));
        assert_eq!((s.compactions, s.guardrail_interventions, s.stormed_calls, s.review_rounds), (1, 2, 1, 1));
    }

    #[test]
    fn a_tool_result_takes_its_calls_arguments_and_the_whole_results_length() {
        let mut rec = RunRecord::default();
        rec.apply(&EventKind::ToolCall {
            turn: 1,
            id: "a".into(),
            name: "grep".into(),
            kind: Default::default(),
            arguments: r#"{"p": 1}"#.into(),
        });
        rec.apply(&EventKind::ToolCall {
            turn: 1,
            id: "b".into(),
            name: "grep".into(),
            kind: Default::default(),
            arguments: r#"{"p": 2}"#.into(),
        });
        let result = |id: &str, succeeded: bool, content: String, result_length: Option<u64>| EventKind::ToolResult {
            turn: 1,
            id: id.into(),
            name: "grep".into(),
            succeeded,
            duration_s: 0.0,
            content,
            result_length,
            output: None,
            change: None,
            todo: None,
        };
        rec.apply(&result("b", false, format!("error: {}", "x".repeat(4090)), Some(9000)));
        // An event stored by an older daemon has no length: its content's is taken.
        rec.apply(&result("a", true, "found".into(), None));
        let e: Vec<Value> = rec.timeline().iter().map(|e| serde_json::to_value(e).unwrap()).collect();
        assert_eq!((&e[0]["arguments"], &e[0]["result_length"]), (&serde_json::json!({"p": 2}), &9000.into()));
        assert_eq!(e[0]["error"].as_str().unwrap().chars().count(), ERROR_CHARS);
        assert_eq!((&e[1]["arguments"], &e[1]["result_length"]), (&serde_json::json!({"p": 1}), &5.into()));
        assert!(e[1].get("error").is_none());
    }

    #[test]
    fn an_answered_approval_is_a_command_policy_entry_with_the_turn_and_bucket_asked() {
        let mut rec = RunRecord::default();
        rec.apply(&EventKind::ApprovalRequested {
            turn: 4,
            approval_id: "ap_1".into(),
            tool_call_id: "c1".into(),
            bucket: "git push".into(),
            command: "git push origin".into(),
            high_risk: true,
            timeout_s: 60.0,
            argv: vec![],
            reason: None,
            changed_files: vec![],
            every_time: false,
            unseen_args: vec![],
        });
        assert!(rec.timeline().is_empty(), "a question alone is not an entry");
        let decision = ApprovalDecision::RejectOnce;
        rec.apply(&EventKind::ApprovalResolved { approval_id: "ap_1".into(), decision, by: ResolvedBy::Timeout });
        assert_eq!(
            lines(&rec),
            [r#"{"type":"command_policy","turn":4,"bucket":"git push","decision":"reject_once","by":"timeout"}"#]
        );
    }

    #[test]
    fn withholding_nulls_every_tool_calls_arguments_and_nothing_else() {
        let mut rec = RunRecord::default();
        tool_call(&mut rec, 1, "write_file", r#"{"content": "secret plan"}"#, "Wrote 11 bytes", 0.0);
        rec.apply(&EventKind::Compaction {
            turn: 1,
            strategy: CompactionStrategy(vec![CompactionStep::DropMiddle]),
            tokens_before: 2,
            tokens_after: 1,
        });
        tool_call(&mut rec, 2, "read_file", r#"{"file_path": "plan"}"#, "1: secret plan", 0.0);
        let expected: Vec<String> = lines(&rec)
            .iter()
            .map(|l| l.replace(r#"{"content":"secret plan"}"#, "null").replace(r#"{"file_path":"plan"}"#, "null"))
            .collect();
        assert!(expected[0].contains(r#""arguments":null"#) && expected[2].contains(r#""arguments":null"#));
        rec.withhold_arguments();
        assert_eq!(lines(&rec), expected);
    }

    #[test]
    fn events_the_report_does_not_show_change_nothing() {
        let mut rec = RunRecord::default();
        for event in [
            EventKind::RunStarted { task: "t".into(), client_token: None, goal_id: None },
            EventKind::TurnStarted { turn: 1, max_turns: 5 },
            EventKind::TextDelta { turn: 1, text: "hi".into() },
            EventKind::Retry { turn: 1, attempt: 1, delay_s: 1.0, reason: "503".into() },
            EventKind::Stderr { source: swival_protocol::StderrSource::Filter, command: "f".into(), text: "x".into() },
            EventKind::Warning { message: "w".into() },
            EventKind::Notice { level: NoticeLevel::Info, message: "n".into() },
            // An answer nobody asked for (none was recorded) makes no entry.
            EventKind::ApprovalResolved {
                approval_id: "ap_9".into(),
                decision: ApprovalDecision::AllowOnce,
                by: ResolvedBy::Client,
            },
        ] {
            rec.apply(&event);
        }
        assert!(rec.timeline().is_empty());
        assert_eq!(rec.stats, RunStats::default());
    }

    #[test]
    fn a_runaway_a_call_cap_and_an_unchanged_write_are_intervention_entries() {
        let mut rec = RunRecord::default();
        rec.apply(&intervention(1, InterventionKind::Runaway, "", None));
        rec.apply(&intervention(2, InterventionKind::CallCap, "", None));
        rec.apply(&intervention(3, InterventionKind::Unchanged, "write_file", None));
        assert_eq!(
            lines(&rec),
            [
                r#"{"type":"intervention","turn":1,"kind":"runaway","tool":""}"#,
                r#"{"type":"intervention","turn":2,"kind":"call_cap","tool":""}"#,
                r#"{"type":"intervention","turn":3,"kind":"unchanged","tool":"write_file"}"#,
            ]
        );
        assert_eq!(rec.stats.stormed_calls + rec.stats.guardrail_interventions, 0);
    }
}
