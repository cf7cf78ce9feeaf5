//! Running one turn's tool calls, in order: a call hooks dropped gets a
//! policy result; a tool that does not exist gets the closest real one
//! named; arguments are repaired against the offered schemas; the loop
//! guards may refuse a repeat; then the tool runs. The guards' nudges
//! follow the results as one synthetic user message, and every
//! intervention is an event and a report entry.

use super::guard::{Guards, Intervention};
use super::{AgentRun, CANCELLED_RESULT};
use crate::provider::ToolCall;
use crate::store::StoreError;
use crate::tools::repair;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Instant;
use swival_protocol::EventKind;

impl AgentRun<'_> {
    /// Run `calls` (the reply's, already in the conversation) and add
    /// their results, then the turn's nudges.
    pub(super) async fn run_tools(
        &mut self,
        turn: u64,
        calls: &[ToolCall],
        kept: Option<&BTreeSet<String>>,
        drop_reason: &str,
        offered: &[Value],
        guards: &mut Guards,
    ) -> Result<(), StoreError> {
        for call in calls {
            if self.cancel.is_cancelled() {
                self.push_result(&call.id, CANCELLED_RESULT)?;
                continue;
            }
            if kept.is_some_and(|k| !k.contains(&call.id)) {
                let content = format!("error: blocked by policy: {drop_reason}");
                self.record.tool_call(turn, &call.name, &call.arguments, &content, 0.0);
                self.push_result(&call.id, &content)?;
                continue;
            }
            self.events.emit(
                Some(self.run_id),
                EventKind::ToolCall {
                    turn,
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                },
            );
            let started = Instant::now();
            let result = self.guarded_call(turn, call, offered, guards).await;
            let elapsed = started.elapsed().as_secs_f64();
            self.record.tool_call(turn, &call.name, &call.arguments, &result, elapsed);
            self.events.emit(
                Some(self.run_id),
                EventKind::ToolResult {
                    turn,
                    id: call.id.clone(),
                    name: call.name.clone(),
                    succeeded: !crate::tools::is_error(&result),
                    duration_s: elapsed,
                    content: result.chars().take(4096).collect(),
                },
            );
            self.push_result(&call.id, &result)?;
        }
        let (nudge, given) = guards.end_turn();
        for Intervention { tool, level, message } in &given {
            if matches!(*level, "nudge" | "stop") {
                self.record.stats.guardrail_interventions += 1;
                self.record.event(json!({"type": "guardrail", "turn": turn, "tool": tool, "level": level}));
            } else {
                self.record.event(json!({"type": "intervention", "turn": turn, "kind": level, "tool": tool}));
            }
            self.intervened(turn, tool, level, message);
        }
        if let Some(text) = nudge {
            self.conversation.push(json!({"role": "user", "content": text, "_swival_synthetic": true}))?;
        }
        Ok(())
    }

    /// The result of one call: an unknown tool named, arguments repaired,
    /// a repeat refused, or the tool run.
    async fn guarded_call(&mut self, turn: u64, call: &ToolCall, offered: &[Value], guards: &mut Guards) -> String {
        if !repair::names(offered).contains(&call.name.as_str()) {
            repair::unknown_tool(&call.name, offered)
        } else {
            let repaired = repair::repair(&call.name, &call.arguments, offered);
            match guards.before(&call.name, &repaired.args) {
                Some(refusal) => {
                    guards.refused_call();
                    self.record.stats.stormed_calls += 1;
                    self.record.event(json!({
                        "type": "storm_suppression", "turn": turn, "name": call.name,
                        "args_hash": refusal.args_hash, "count": refusal.count,
                    }));
                    self.intervened(turn, &call.name, "storm", &refusal.result);
                    refusal.result
                }
                None => {
                    let fixed = ToolCall { arguments: repaired.args.clone(), ..call.clone() };
                    let mut result = self.call_tool(&fixed).await;
                    let hint = guards.after(&call.name, &repaired.args, &result);
                    if let Some(note) = repaired.note() {
                        result = format!("{result}\n{note}");
                    }
                    if let Some(hint) = hint {
                        result = format!("{result}\n{hint}");
                    }
                    result
                }
            }
        }
    }

    fn push_result(&mut self, id: &str, content: &str) -> Result<(), StoreError> {
        self.conversation.push(json!({"role": "tool", "tool_call_id": id, "content": content}))
    }

    /// Tell the event stream about an intervention.
    fn intervened(&self, turn: u64, tool: &str, kind: &str, message: &str) {
        let kind =
            EventKind::Intervention { turn, kind: kind.to_owned(), tool: tool.to_owned(), message: message.to_owned() };
        self.events.emit(Some(self.run_id), kind);
    }

    /// Run one tool: commands, fetches and MCP tools are async (and
    /// cancellable); file tools run on this thread.
    async fn call_tool(&mut self, call: &ToolCall) -> String {
        let args = || crate::tools::parse_args(&call.arguments);
        match call.name.as_str() {
            "run_command" if self.commands.policy.enabled() => match args() {
                Ok(a) => crate::sandbox::run_command_tool(self.commands, &a, self.cancel).await,
                Err(e) => e,
            },
            "fetch_url" => match args() {
                Ok(a) => crate::sandbox::fetch_url_tool(self.fetch, &a).await,
                Err(e) => e,
            },
            name if self.tools.mcp.owns(name) => self.tools.mcp.call(name, &call.arguments, self.cancel).await,
            _ => {
                let tools = &mut *self.tools;
                tokio::task::block_in_place(|| tools.call_with_id(&call.name, &call.arguments, &call.id))
            }
        }
    }
}
