//! The turn loop: a turn is one provider call plus its tool calls, run in
//! order; a reply without tool calls is the final answer. The nudges a
//! reply or an answer gets instead (`nudge/`) are given here, each with
//! its event when its switch is on; a stuck run gets one last word; the
//! turn budget ends the loop.

use super::estimate::{estimate_from, Offered};
use super::nudge::{empty, look_first, runaway, truncated, unreadable};
use super::{consult, guard, written, LoopEnd, Run};
use crate::config::HookPoint;
use crate::message::Message;
use crate::pipeline::filter::CallKind;
use crate::pipeline::hooks;
use crate::provider::ProviderKind;
use crate::store::StoreError;
use crate::tools::offer::Offer;
use swival_protocol::{AfterLlmCall, EventKind, HookCall, ProposedCall, ProposedTurn};
use swival_protocol::{FailureKind, InterventionKind};

/// Why a provider call did not produce a reply.
#[derive(Debug)]
pub(super) enum CallError {
    /// The run was cancelled.
    Cancelled,
    /// The call failed for good: why, as a kind and in words.
    Failed(FailureKind, String),
    /// The provider said the prompt is too long for the context; the
    /// message says so as a failure would.
    Overflow(String),
    /// The server could not read the tool call the model wrote; the
    /// message says so as a failure would.
    Unreadable(String),
    /// A hook blocked it; the reason.
    Blocked(String),
}

impl From<CallError> for LoopEnd {
    /// How a run ends on a call that failed: a tool call the server could
    /// not read fails it where no nudge can follow (the last word).
    fn from(e: CallError) -> LoopEnd {
        match e {
            CallError::Cancelled => LoopEnd::Cancelled,
            CallError::Failed(kind, why) => LoopEnd::Failed(kind, why),
            CallError::Unreadable(why) => LoopEnd::Failed(FailureKind::Provider, why),
            CallError::Overflow(why) => LoopEnd::Overflowed(why),
            CallError::Blocked(reason) => LoopEnd::Blocked(reason),
        }
    }
}

/// What `after_llm_call` hooks decided about a reply's tool calls.
#[derive(Debug, Default)]
pub(super) struct CallVerdict {
    /// Ids of the calls that may run; `None`: all.
    pub(super) kept: Option<std::collections::BTreeSet<String>>,
    /// Why the others were dropped.
    pub(super) drop_reason: String,
    /// Ids of the calls that run only once a user approves.
    pub(super) ask: std::collections::BTreeSet<String>,
    /// Why the hooks asked.
    pub(super) ask_reason: String,
}

impl Run<'_> {
    /// Consult the `after_llm_call` hooks about `reply`: which calls run,
    /// which wait for a user, or the end of the run (a block, or cancel).
    async fn after_llm_call(
        &mut self,
        turn: u64,
        reply: &crate::provider::Reply,
    ) -> Result<Result<CallVerdict, LoopEnd>, StoreError> {
        if !self.ctx.pipeline.hooks.any(HookPoint::AfterLlmCall) {
            return Ok(Ok(CallVerdict::default()));
        }
        let tool_calls = reply
            .tool_calls
            .iter()
            .map(|c| ProposedCall { id: c.id.clone(), name: c.name.clone(), arguments: c.arguments.clone() })
            .collect();
        let call = HookCall::AfterLlmCall(AfterLlmCall {
            session_id: self.ctx.session_id.clone(),
            run_id: self.ctx.run_id.clone(),
            turn,
            assistant: ProposedTurn { content: reply.content.clone(), tool_calls },
        });
        let decision = match consult(
            self.ctx.pipeline,
            self.ctx.events,
            self.ctx.run_id,
            &mut self.record,
            &call,
            self.ctx.cancel,
        )
        .await
        {
            Ok(d) => d,
            Err(hooks::Cancelled) => return Ok(Err(LoopEnd::Cancelled)),
        };
        if let Some((_, reason)) = decision.blocked {
            // Keep the conversation well-formed: every call gets a result, none runs.
            if !reply.tool_calls.is_empty() {
                self.conversation.push(reply.to_message())?;
                for call in &reply.tool_calls {
                    let content = format!("error: blocked by policy: {reason}");
                    self.conversation.push(Message::tool_result(&call.id, content))?;
                }
            }
            return Ok(Err(LoopEnd::Blocked(reason)));
        }
        let ids: Vec<String> = reply.tool_calls.iter().map(|c| c.id.clone()).collect();
        let reason = decision.reasons.first().map(|(_, r)| r.clone());
        Ok(Ok(CallVerdict {
            kept: Some(hooks::kept(&decision, &ids)),
            drop_reason: reason.clone().unwrap_or_else(|| "dropped by an after_llm_call hook".into()),
            ask: decision.ask,
            ask_reason: reason.unwrap_or_else(|| "an after_llm_call hook asks for your approval".into()),
        }))
    }

    /// Run turns until an answer, exhaustion, cancellation or failure.
    pub(super) async fn turns_to_end(&mut self) -> LoopEnd {
        let end = match self.turns().await {
            Ok(end) => self.conversation.settle().await.map(|()| end),
            Err(e) => Err(e),
        };
        end.unwrap_or_else(LoopEnd::from)
    }

    /// The tools this run offers, in Swival's order.
    fn offer(&self) -> std::sync::Arc<Offer> {
        // Swival's command provider is not told about tools.
        if self.llm.provider.settings.kind == ProviderKind::Command || self.ctx.bare {
            return std::sync::Arc::new(Offer::new(Vec::new()));
        }
        let mut extra = crate::sandbox::tool_schemas(&self.ctx.commands.policy);
        // Asked commands are judged one argv at a time: no shell line,
        // no snippet.
        if self.ctx.commands.ask.is_some() {
            extra.retain(|s| s["function"]["name"] != crate::sandbox::SHELL_TOOL);
        } else if self.llm.context_window.is_some_and(|w| w >= crate::sandbox::PYTHON_MIN_WINDOW) {
            extra.extend(crate::sandbox::python_schema(&self.ctx.commands.policy));
        }
        // Swival's order: `use_skill` after `fetch_url`, before `run_command`.
        if let Some(schema) = self.tools.skills().schema() {
            let at =
                extra.iter().position(|s| s["function"]["name"] == crate::sandbox::COMMAND_TOOL).unwrap_or(extra.len());
            extra.insert(at, schema);
        }
        if self.subagents.is_some() {
            extra.extend([super::subagents::spawn_schema(), super::subagents::check_schema()]);
        }
        if self.ctx.goal.is_some() {
            extra.push(super::goal::schema());
        }
        self.tools.offer(extra)
    }

    async fn turns(&mut self) -> Result<LoopEnd, StoreError> {
        // Back here after the check or the reviewer turned the answer
        // down: a `complete_goal` before it no longer stands.
        self.goal.done = false;
        let offer = self.offer();
        let offered = Offered::serialized(&offer);
        let mut guards = guard::Guards::new(self.nudges.clone());
        for local_turn in 1..=self.ctx.config.max_turns {
            let turn = self.turn_offset + local_turn;
            if self.ctx.cancel.is_cancelled() {
                return Ok(LoopEnd::Cancelled);
            }
            self.emit(EventKind::TurnStarted { turn, max_turns: self.ctx.config.max_turns });
            let reply = match self.call_llm(turn, offered).await {
                Ok(r) => r,
                Err(CallError::Unreadable(_)) if self.nudges.on(InterventionKind::Unreadable) => {
                    // Asked anew with a note at the end: the same request
                    // would get the same unreadable call.
                    self.conversation.push(Message::assistant(unreadable::REPLY))?;
                    self.nudge(turn, "", InterventionKind::Unreadable, unreadable::WORDS.to_owned())?;
                    continue;
                }
                Err(e) => return Ok(e.into()),
            };
            let spent = self.goal_spent_now();
            let (reply, runaway) = self.cut_runaway(turn, reply);
            let reply = self.clean_thinking(turn, reply);
            let reply = self.calls_written_as_text(turn, reply, &offer);
            // after_llm_call: the hooks see the reply and every proposed
            // call before anything runs.
            let verdict = match self.after_llm_call(turn, &reply).await? {
                Ok(v) => v,
                Err(end) => return Ok(end),
            };
            if reply.tool_calls.is_empty() {
                match self.reply_without_calls(turn, local_turn, &offer, reply, runaway)? {
                    Some(end) => return Ok(end),
                    None => continue,
                }
            }
            self.conversation.push(reply.to_message())?;
            // Boxed: this future sits inside a run's, whose size a debug
            // build's worker stack has to hold.
            // Repaired against what the tools take, not the (perhaps lean) offer.
            Box::pin(self.run_tools(turn, &reply.tool_calls, &verdict, offer.taken(), &mut guards)).await?;
            if let Some(nudge) = runaway {
                self.conversation.push(Message::synthetic(nudge))?;
            }
            if self.goal.done {
                return Ok(LoopEnd::Answer(super::goal::COMPLETED.to_owned()));
            }
            if spent {
                self.goal_wrap_up()?;
            }
            if let Some(why) = guards.stuck() {
                return self.last_word(turn, why).await;
            }
            if self.ctx.cancel.is_cancelled() {
                return Ok(LoopEnd::Cancelled);
            }
        }
        Ok(LoopEnd::Exhausted(self.conversation.last_assistant_text()))
    }

    /// A reply without tool calls: an empty or cut-off one gets its nudge
    /// (`runaway`: the one for a reply cut as it repeated itself), and an
    /// answer one of the answer nudges or, with none, ends the run.
    fn reply_without_calls(
        &mut self,
        turn: u64,
        local_turn: u64,
        offer: &Offer,
        reply: crate::provider::Reply,
        runaway: Option<String>,
    ) -> Result<Option<LoopEnd>, StoreError> {
        let text = reply.content.as_deref().unwrap_or("").trim().to_owned();
        if let Some(nudge) = runaway {
            let said = if text.is_empty() { Message::assistant(runaway::REPLY) } else { reply.to_message() };
            self.conversation.push(said)?;
            self.conversation.push(Message::synthetic(nudge))?;
            return Ok(None);
        }
        if empty::fires(&text) && self.nudges.on(InterventionKind::Empty) {
            self.conversation.push(Message::assistant(empty::REPLY))?;
            self.nudge(turn, "", InterventionKind::Empty, empty::WORDS.to_owned())?;
            return Ok(None);
        }
        self.conversation.push(reply.to_message())?;
        if truncated::fires(reply.finish_reason.as_ref()) && self.nudges.on(InterventionKind::Truncated) {
            self.nudge(turn, "", InterventionKind::Truncated, truncated::WORDS.to_owned())?;
            return Ok(None);
        }
        if let Some((tool, kind, words)) = self.answer_nudge(local_turn, offer, &text) {
            self.nudge(turn, tool, kind, words)?;
            return Ok(None);
        }
        Ok(Some(LoopEnd::Answer(reply.content.unwrap_or_default())))
    }

    /// A reply cut as it kept repeating itself (`provider/repeat.rs`): its
    /// `runaway` event, the call it cut dropped (its arguments are not
    /// whole, so it cannot run; the calls before it run), and the nudge
    /// that follows the turn.
    fn cut_runaway(
        &mut self,
        turn: u64,
        mut reply: crate::provider::Reply,
    ) -> (crate::provider::Reply, Option<String>) {
        let Some(cut) = reply.runaway.take() else { return (reply, None) };
        if !self.nudges.on(InterventionKind::Runaway) {
            return (reply, None);
        }
        let tool = match cut.call.filter(|&i| i < reply.tool_calls.len()) {
            Some(i) => reply.tool_calls.drain(i..).next().map(|c| c.name).unwrap_or_default(),
            None => String::new(),
        };
        let nudge = runaway::words(&tool, &cut.unit, cut.repeats);
        self.intervened(turn, &tool, InterventionKind::Runaway, &nudge, None);
        (reply, Some(nudge))
    }

    /// A reply that is nothing but tool calls written out as text, each
    /// naming an offered tool, is those calls: a small model whose
    /// server's chat template did not catch its call meant it, and taking
    /// the text as the answer would end the run on it. The calls then go
    /// through the hooks, guards and policy as any other.
    /// A reply's thinking marks taken out; a reply whose only text is its
    /// reasoning answers with it (Swival's promotion).
    /// Reasoning sent apart from an answer is a `thinking` event.
    fn clean_thinking(&mut self, turn: u64, mut reply: crate::provider::Reply) -> crate::provider::Reply {
        let blocks = self.ctx.config.sanitize_thinking;
        if reply.content.is_none() && reply.tool_calls.is_empty() {
            reply.content = reply.reasoning.take();
        }
        if let Some(text) = reply.reasoning.as_deref().filter(|t| !t.trim().is_empty()) {
            let (lines, tokens) = (text.matches('\n').count() as u64 + 1, (text.chars().count() / 4) as u64);
            let text = self.ctx.config.show_thinking.then(|| text.to_owned());
            self.emit(EventKind::Thinking { turn, lines, tokens, text });
        }
        if let Some(std::borrow::Cow::Owned(clean)) =
            reply.content.as_deref().map(|t| super::thinking::clean(t, blocks))
        {
            reply.content = Some(clean).filter(|c| !c.is_empty());
        }
        reply
    }

    fn calls_written_as_text(
        &self,
        turn: u64,
        mut reply: crate::provider::Reply,
        offer: &Offer,
    ) -> crate::provider::Reply {
        if !reply.tool_calls.is_empty() || offer.schemas.is_empty() {
            return reply;
        }
        let offered: Vec<&str> = offer.schemas.iter().filter_map(|s| s["function"]["name"].as_str()).collect();
        if let Some(calls) = reply.content.as_deref().and_then(|text| written::text_calls(text, &offered, turn)) {
            tracing::debug!("turn {turn}: the model wrote {} tool call(s) as text; running them", calls.len());
            reply.content = None;
            reply.tool_calls = calls;
        }
        reply
    }

    /// Tell the model `words`, as the nudge `kind` about `tool` (`""`:
    /// none): a synthetic user message, and its event.
    fn nudge(&mut self, turn: u64, tool: &str, kind: InterventionKind, words: String) -> Result<(), StoreError> {
        self.intervened(turn, tool, kind, &words, None);
        self.conversation.push(Message::synthetic(words))
    }

    /// The nudge a final `answer` gets instead of ending the run, as the
    /// tool it is about (`""`: none), its kind and its words: to look
    /// first, to account for a file deleted unasked, or to make a change
    /// when none stands (`nudge/`), in that order, each once a run.
    fn answer_nudge(
        &mut self,
        local_turn: u64,
        offer: &Offer,
        answer: &str,
    ) -> Option<(&'static str, InterventionKind, String)> {
        // A goal's run wrapping up may change nothing: no nudge to act.
        if self.goal.wrapping_up {
            return None;
        }
        if let Some(words) = self.look_first(local_turn, offer, answer) {
            return Some(("", InterventionKind::LookFirst, words));
        }
        if self.nudges.on(InterventionKind::DeletedUnasked) {
            if let Some(words) = self.deleted.nudge(answer, self.ctx.base_dir) {
                return Some((crate::tools::registry::names::DELETE_FILE, InterventionKind::DeletedUnasked, words));
            }
        }
        if !self.nudges.on(InterventionKind::Unmade) {
            return None;
        }
        let unmade = self.unmade.nudge(self.ctx.task, answer, self.record.stats.tool_calls_by_name.iter());
        unmade.map(|words| ("", InterventionKind::Unmade, words))
    }

    /// The nudge to look before answering, for a first answer of a fresh
    /// run (no tool called, no file the task named read up front), when
    /// tools are offered (see `nudge/look_first.rs`).
    fn look_first(&self, local_turn: u64, offer: &Offer, answer: &str) -> Option<String> {
        let fresh = local_turn == 1 && !self.ctx.resume && self.turn_offset == 0 && !offer.schemas.is_empty();
        let fresh = fresh && self.tools.read_nothing_yet();
        let on = self.nudges.on(InterventionKind::LookFirst);
        (fresh && on).then(|| look_first::nudge(answer, self.ctx.base_dir)).flatten()
    }

    /// A stuck run gets one call without tools: an answer ends the run as
    /// any answer does (the model says what it did and what is left);
    /// anything else, a tool call written as text included, fails the run
    /// with `why`.
    async fn last_word(&mut self, turn: u64, why: String) -> Result<LoopEnd, StoreError> {
        self.nudge(turn, "", InterventionKind::Stuck, guard::STUCK_NUDGE.to_owned())?;
        let reply = match Box::pin(self.call_llm(turn, Offered::NONE)).await {
            Ok(r) => r,
            Err(e) => return Ok(e.into()),
        };
        // A tool call written out as text (small models do, with no tools
        // offered) is not an answer: the run is stuck.
        let answer = reply
            .content
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty() && reply.tool_calls.is_empty() && !written::is_tool_call_text(t));
        match answer {
            Some(text) => {
                let text = text.to_owned();
                self.conversation.push(Message::assistant(text.clone()))?;
                Ok(LoopEnd::Answer(text))
            }
            // Tool calls with no tools offered are not stored: no call is
            // left without a result.
            None => Ok(LoopEnd::Failed(FailureKind::Stuck, why)),
        }
    }

    /// One logical provider call: the filter chain, then the provider
    /// under the daemon-wide slot limit.
    async fn call_llm(&mut self, turn: u64, tools: Offered<'_>) -> Result<crate::provider::Reply, CallError> {
        if let Some(window) = self.llm.context_window {
            if estimate_from(self.conversation.chars(), tools.chars) * 10 > window * 9 {
                self.compact(turn, tools.schemas, window).await?;
            }
        }
        match self.call_model(turn, CallKind::Agent, None, tools).await {
            Err(CallError::Overflow(_)) => {
                // The provider says the prompt is too long: compact and try once more.
                let window =
                    self.llm.context_window.unwrap_or_else(|| estimate_from(self.conversation.chars(), tools.chars));
                self.compact(turn, tools.schemas, window * 3 / 4).await?;
                self.call_model(turn, CallKind::Agent, None, tools).await
            }
            other => other,
        }
    }
}
