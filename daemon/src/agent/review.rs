//! A run's answer on its way out: the project's check (`verify.rs`: a
//! failure goes back to the model once), reviewer rounds (a retry verdict
//! sends the reviewer's feedback back and the turn loop goes on), then the
//! `before_response_emit` hooks, which may rewrite or withhold it.

use super::{consult, emit_recorded, LoopEnd, Run};
use crate::config::HookPoint;
use crate::message::{Message, Role};
use crate::pipeline::reviewer::{self, Verdict};
use swival_protocol::{BeforeResponseEmit, EventKind, FailureKind, HookCall};

/// What replaces the run's assistant text and tool-call arguments in the
/// stored conversation when a before_response_emit hook blocks the answer.
const WITHHELD: &str = "[response withheld by policy]";

impl Run<'_> {
    /// Run turns until the run ends; with a reviewer, each answer is
    /// reviewed and a retry goes back to the turn loop with the feedback.
    pub(super) async fn rounds(&mut self) -> LoopEnd {
        let pipeline = self.ctx.pipeline;
        let mut round = 0;
        let check = super::verify::check(self.ctx);
        let mut checks = 0;
        loop {
            let end = self.turns_to_end().await;
            let told = match &check {
                Some(check) => self.verify(check, &end, &mut checks).await,
                None => None,
            };
            if let Some(message) = told {
                if let Err(e) = self.conversation.push(message) {
                    return LoopEnd::from(e);
                }
                self.turn_offset = self.record.stats.turns;
                continue;
            }
            let (LoopEnd::Answer(answer), Some(reviewer)) = (&end, &pipeline.reviewer) else {
                return end;
            };
            round += 1;
            match self.review(reviewer, answer, round).await {
                Verdict::Retry(feedback) if round < reviewer.max_rounds => {
                    let message = Message::user(reviewer::feedback_message(round, &feedback));
                    if let Err(e) = self.conversation.push(message) {
                        return LoopEnd::from(e);
                    }
                    self.turn_offset = self.record.stats.turns;
                }
                Verdict::Cancelled => return LoopEnd::Cancelled,
                Verdict::Blocked(why) => return LoopEnd::Blocked(why),
                Verdict::Accept | Verdict::Retry(_) | Verdict::Error(_) => return end,
            }
        }
    }

    /// One reviewer round: run the reviewer on `answer`, emit the round
    /// (`stderr` events and a `review` event, which the report folds in)
    /// and tell the user what it decided in Swival's words (`notice` and
    /// `warning` events).
    async fn review(&mut self, reviewer: &reviewer::Reviewer, answer: &str, round: u64) -> Verdict {
        let (events, run_id) = (self.ctx.events, self.ctx.run_id);
        let runner = &self.ctx.pipeline.runner;
        events.emit(Some(run_id), reviewer::sending_notice(round));
        let daemon = self.daemon_env();
        let submission = reviewer::Submission { answer, task: self.ctx.task, model: &self.llm.model, round, daemon };
        let (verdict, rec) = reviewer.review(runner, submission, self.ctx.cancel).await;
        let verdict_name = match &verdict {
            Verdict::Accept => swival_protocol::ReviewVerdict::Accept,
            Verdict::Retry(_) => swival_protocol::ReviewVerdict::Retry,
            Verdict::Error(_) => swival_protocol::ReviewVerdict::Error,
            Verdict::Cancelled | Verdict::Blocked(_) => return verdict,
        };
        for line in rec.stderr.lines() {
            tracing::info!(target: "swivald::reviewer", "{}: {line}", reviewer.display);
            let kind = EventKind::Stderr {
                source: swival_protocol::StderrSource::Reviewer,
                command: reviewer.display.clone(),
                text: line.to_owned(),
            };
            events.emit(Some(run_id), kind);
        }
        let kind = EventKind::Review {
            round,
            exit_code: rec.exit_code,
            feedback: rec.feedback.clone(),
            verdict: verdict_name,
            stderr: (!rec.stderr.is_empty()).then(|| rec.stderr.clone()),
        };
        emit_recorded(events, run_id, &mut self.record, kind);
        for kind in reviewer::round_events(round, reviewer.max_rounds, &verdict, &rec) {
            events.emit(Some(run_id), kind);
        }
        verdict
    }

    /// before_response_emit: the hooks may rewrite or block the answer. A
    /// block withholds it and clears the run's assistant content (tool-call
    /// arguments included) from the stored conversation and the report, so
    /// it reaches no later turn, history, cache or report.
    pub(super) async fn response_hooks(&mut self, end: LoopEnd) -> LoopEnd {
        let LoopEnd::Answer(answer) = &end else { return end };
        let ctx = self.ctx;
        if !ctx.pipeline.hooks.any(HookPoint::BeforeResponseEmit) {
            return end;
        }
        let texts: Vec<String> = self.conversation.this_run().iter().filter_map(said).map(str::to_owned).collect();
        let call = HookCall::BeforeResponseEmit(BeforeResponseEmit {
            session_id: ctx.session_id.clone(),
            run_id: ctx.run_id.clone(),
            task: ctx.task.to_owned(),
            content: answer.clone(),
            all_content: texts.clone(),
        });
        let decision = match consult(ctx.pipeline, ctx.events, ctx.run_id, &mut self.record, &call, ctx.cancel).await {
            Ok(d) => d,
            Err(_) => return LoopEnd::Cancelled,
        };
        if let Some((_, reason)) = decision.blocked {
            return self.withhold(reason).await;
        }
        let rewrites: Vec<Option<String>> = match (decision.all_content, decision.content) {
            (Some(all), _) => all.into_iter().map(Some).collect(),
            // `content` rewrites the last answer message.
            (None, Some(c)) => texts.iter().skip(1).map(|_| None).chain([Some(c)]).collect(),
            (None, None) => return end,
        };
        // The answer delivered is what the last answer message now says.
        let delivered = match rewrites.get(texts.len().wrapping_sub(1)) {
            Some(Some(t)) => t.clone(),
            _ => answer.clone(),
        };
        let stored = self
            .conversation
            .rewrite_this_run(|messages| {
                let saying = messages.iter_mut().filter(|m| said(m).is_some());
                for (m, text) in saying.zip(rewrites) {
                    if let Some(text) = text {
                        m.set_content(Some(text));
                    }
                }
            })
            .await;
        match stored {
            Ok(()) => LoopEnd::Answer(delivered),
            Err(e) => LoopEnd::Failed(FailureKind::Internal, format!("could not store the rewritten answer: {e}")),
        }
    }

    /// A before_response_emit hook blocked the answer: withhold the run's
    /// assistant content and tool-call arguments from the conversation,
    /// the report and the response cache.
    async fn withhold(&mut self, reason: String) -> LoopEnd {
        let stored = self
            .conversation
            .rewrite_this_run(|messages| {
                for m in messages.iter_mut().filter(|m| m.role() == Role::Assistant) {
                    m.set_content(Some(WITHHELD.to_owned()));
                    for call in m.tool_calls_mut().into_iter().flatten() {
                        call.arguments = "{}".to_owned();
                    }
                }
            })
            .await;
        self.record.withhold_arguments();
        if let Some(cache) = self.llm.cache.as_deref().filter(|_| !self.record.cache_keys.is_empty()) {
            cache.forget(&self.record.cache_keys);
        }
        match stored {
            Ok(()) => LoopEnd::Blocked(reason),
            Err(e) => LoopEnd::Failed(FailureKind::Internal, format!("could not clear the withheld answer: {e}")),
        }
    }
}

/// What an assistant message of the run says, when it says something.
fn said(m: &Message) -> Option<&str> {
    m.content().filter(|t| m.role() == Role::Assistant && !t.trim().is_empty())
}

impl Run<'_> {
    /// What a reviewer needs to reach the daemon and name the reviewed
    /// session (`swivalctl run --reviewer-mode` reviews in a session
    /// started from it).
    fn daemon_env(&self) -> Vec<(String, String)> {
        let mut env = vec![("SWIVALD_SESSION".to_owned(), self.ctx.session_id.0.clone())];
        if let Some(socket) = self.ctx.services.socket() {
            env.push(("SWIVALD_SOCKET".to_owned(), socket.display().to_string()));
        }
        env
    }
}
