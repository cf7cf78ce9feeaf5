//! Running one turn's tool calls, in order: the calls past
//! `max_calls_per_reply` get an error saying so; a call hooks dropped gets
//! a policy result; a tool that does not exist gets the closest real one
//! named; arguments are repaired against the offered schemas; the loop
//! guards may refuse a repeat; then the tool runs. Every call is a
//! `tool_call` and a `tool_result` event (a dropped one too), which the
//! report folds in. The guards' nudges follow the results as one
//! synthetic user message, and every intervention is an event.

use super::guard::{Guards, Intervention};
use super::turns::CallVerdict;
use super::{subagents, Run, CANCELLED_RESULT};
use crate::changes::{self, Bracket};
use crate::provider::ToolCall;
use crate::sandbox::ask;
use crate::store::StoreError;
use crate::toolcall::{Change, ToolOutcome, MAX_EVENT_TEXT};
use crate::tools::parsed::ParsedCall;
use crate::tools::registry::Runner;
use crate::tools::{repair, CallInput, ToolError};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use swival_protocol::{ApprovalDecision, ChangeSource, EventKind, InterventionKind, Repeat, ResolvedBy, ToolKind};

/// A reply holding more tool calls than `max_calls_per_reply`.
struct CallCap {
    /// The calls that run, from the first.
    runs: usize,
    /// The result of each of the others.
    result: String,
}

/// What a user is asked to approve.
struct Question<'a> {
    /// The tool call waiting.
    call_id: &'a str,
    /// The command line, quoted as a shell would read it.
    command: String,
    /// Its bucket, and why it is high-risk.
    verdict: ask::Verdict,
    /// What an "always" answer approves (`ask::shape`).
    shape: Vec<String>,
    /// The exact argv (empty for a hook's question).
    argv: Vec<String>,
    /// Files it runs that changed in the session.
    changed: Vec<ask::Changed>,
}

impl Run<'_> {
    /// Run `calls` (the reply's, already in the conversation) and add
    /// their results, then the turn's nudges.
    pub(super) async fn run_tools(
        &mut self,
        turn: u64,
        calls: &[ToolCall],
        verdict: &CallVerdict,
        offered: &[Value],
        guards: &mut Guards,
    ) -> Result<(), StoreError> {
        let cap = self.call_cap(turn, calls.len());
        for (at, call) in calls.iter().enumerate() {
            if self.ctx.cancel.is_cancelled() {
                self.push_result(&call.id, CANCELLED_RESULT)?;
                continue;
            }
            // Read once, repaired when the tool is offered.
            let offers = repair::offers(offered, &call.name);
            let mut parsed = match offers {
                true => ParsedCall::repaired(&call.id, &call.name, &call.arguments, offered),
                false => ParsedCall::read(&call.id, &call.name, &call.arguments),
            };
            self.emit(EventKind::ToolCall {
                turn,
                id: call.id.clone(),
                name: call.name.clone(),
                kind: parsed.kind,
                arguments: call.arguments.clone(),
            });
            let started = Instant::now();
            // A call the hooks dropped, or past the cap, is reported like
            // any call; it never runs.
            let mut outcome = if let Some(over) = cap.as_ref().filter(|c| at >= c.runs) {
                ToolOutcome::failed(over.result.clone())
            } else if verdict.kept.as_ref().is_some_and(|k| !k.contains(&call.id)) {
                ToolOutcome::failed(format!("error: blocked by policy: {}", verdict.drop_reason))
            } else {
                let refused = match verdict.ask.contains(&call.id) {
                    true => self.approve_hook_ask(turn, call, &verdict.ask_reason).await,
                    false => None,
                };
                match refused {
                    Some(refusal) => refusal,
                    None if !offers => ToolOutcome::failed(repair::unknown_tool(&call.name, offered)),
                    None => self.guarded_call(turn, &mut parsed, guards).await,
                }
            };
            let duration_s = started.elapsed().as_secs_f64();
            self.checkpoints.ran(parsed.kind, outcome.failed);
            let change = self.account(&parsed, &mut outcome);
            self.emit(EventKind::ToolResult {
                turn,
                id: call.id.clone(),
                name: call.name.clone(),
                succeeded: !outcome.failed,
                duration_s,
                content: outcome.text.chars().take(4096).collect(),
                result_length: Some(outcome.text.len() as u64),
                output: outcome.notes_at.map(|_| outcome.own_text().chars().take(4096).collect()),
                change,
                todo: (parsed.kind == ToolKind::Plan && !outcome.failed).then(|| self.tools.todo_items()),
            });
            self.conversation.push(crate::message::Message::tool_result_with_notes(
                &call.id,
                outcome.text,
                outcome.notes_at,
            ))?;
        }
        self.end_turn(turn, guards)
    }

    /// The end of a turn's calls: the guards' interventions as events and
    /// their nudges as one message after the results.
    fn end_turn(&mut self, turn: u64, guards: &mut Guards) -> Result<(), StoreError> {
        let (nudge, given) = guards.end_turn();
        for Intervention { tool, level, message } in &given {
            self.intervened(turn, tool, *level, message, None);
        }
        if let Some(text) = nudge {
            self.conversation.push(crate::message::Message::synthetic(text))?;
        }
        Ok(())
    }

    /// What a call changed, told to those who keep count of it (what the
    /// task did not ask for, the check after the answer, the approvals);
    /// the change, for the event.
    fn account(&mut self, call: &ParsedCall, outcome: &mut ToolOutcome) -> Option<swival_protocol::FileChange> {
        if let Some(deletion) = outcome.unasked.take() {
            self.deleted.deleted(deletion);
        }
        let change = outcome.change.take();
        self.changed |= matches!(call.kind, ToolKind::Edit | ToolKind::Move | ToolKind::Delete) && !outcome.failed;
        if !outcome.failed {
            self.unmade.changed(&call.name, change.as_ref(), self.ctx.base_dir);
        }
        // A file now holding what the model wrote or moved there: a
        // command running it is asked about again.
        if let (Some(c), Some(gate)) = (change.as_ref().filter(|c| c.after.is_some()), &self.ctx.commands.ask) {
            gate.wrote(&c.path);
        }
        change.and_then(|c| c.for_editor())
    }

    /// `max_calls_per_reply` for a reply of `count` calls: when it holds
    /// more, its `call_cap` event, and how many run and what the others
    /// are answered (every call id still gets its result).
    fn call_cap(&mut self, turn: u64, count: usize) -> Option<CallCap> {
        let cap = self.ctx.config.max_calls_per_reply as usize;
        if cap == 0 || count <= cap || !self.nudges.on(InterventionKind::CallCap) {
            return None;
        }
        let result = format!(
            "error: not run: your reply held {count} tool calls and at most {cap} run from one reply. Read the \
             results of the first {cap}, then send the calls still needed in your next reply, at most {cap} of them."
        );
        let rest = count - cap;
        let message = format!("{count} tool calls in one reply: the first {cap} ran, the other {rest} got: {result}");
        self.intervened(turn, "", InterventionKind::CallCap, &message, None);
        Some(CallCap { runs: cap, result })
    }

    /// A snapshot before a call that may change files (a file tool, a
    /// command, an MCP tool), with the paths a file tool names; `None` when
    /// the call changes nothing or changes are not recorded.
    pub(super) async fn before_change(&self, call: &ParsedCall) -> Option<(Bracket, String)> {
        let recorder = self.ctx.changes.filter(|r| !r.failed())?;
        let exact = match call.kind {
            ToolKind::Edit | ToolKind::Move | ToolKind::Delete => Some(
                call.paths.iter().filter_map(|p| changes::relative(self.ctx.base_dir, recorder.root(), p)).collect(),
            ),
            ToolKind::Execute | ToolKind::Mcp => None,
            _ => return None,
        };
        if exact.as_ref().is_some_and(Vec::is_empty) {
            return None;
        }
        let label = label(call, exact.as_deref());
        let before = tokio::select! {
            b = recorder.before(exact.is_some()) => b,
            // Waiting for another session's command: the run was cancelled.
            _ = self.ctx.cancel.cancelled() => return None,
        };
        match before {
            Ok(bracket) => Some((bracket, label)),
            Err(e) => {
                recorder.fail(&e);
                None
            }
        }
    }

    /// Fold what the call changed into the run's set: a file tool's
    /// `change`, or what a snapshot after it shows.
    pub(super) async fn after_change(
        &self,
        bracket: Option<(Bracket, String)>,
        turn: u64,
        call: &ParsedCall,
        change: Option<&Change>,
    ) {
        let (Some((bracket, label)), Some(recorder)) = (bracket, self.ctx.changes) else { return };
        let by = ChangeSource { tool: call.name.clone(), call_id: call.id.clone(), turn, label };
        if let Err(e) = recorder.after(bracket, by, change).await {
            recorder.fail(&e);
        }
    }

    /// The result of one call of an offered tool: a repeat refused, or the
    /// tool run.
    async fn guarded_call(&mut self, turn: u64, call: &mut ParsedCall, guards: &mut Guards) -> ToolOutcome {
        if let Some(refusal) = guards.before(call) {
            guards.refused_call();
            let repeat = Repeat { count: refusal.count as u64, args_hash: refusal.args_hash };
            self.intervened(turn, &call.name, InterventionKind::Storm, &refusal.result, Some(repeat));
            return ToolOutcome::failed(refusal.result);
        }
        let mut outcome = self.call_tool(turn, call).await;
        if let Some(note) = &outcome.futile {
            self.intervened(turn, &call.name, InterventionKind::Unchanged, note, None);
        }
        let hint = guards.after(call, &outcome);
        if let Some(note) = call.repair_note() {
            outcome.append_note(&note);
        }
        if let Some(hint) = hint {
            self.intervened(turn, &call.name, InterventionKind::DoneHint, hint, None);
            outcome.append_note(hint);
        }
        outcome
    }

    /// `commands = "ask"`: the user's answer for this command's bucket,
    /// asked again when it runs a file changed in the session; the tool
    /// result when it may not run.
    async fn approve(&mut self, turn: u64, call_id: &str, args: &Value) -> Option<ToolOutcome> {
        let gate = self.ctx.commands.ask.clone()?;
        // Arguments that do not parse are reported by the tool itself.
        let argv = crate::sandbox::policy::parse_call(args).ok()?.argv;
        let verdict = ask::classify(&argv);
        let shape = ask::shape::shape(&argv, &self.ctx.commands.base_dir);
        let changed = self.changed_files(&gate, &verdict.bucket, &argv).await;
        let command =
            ask::display(&shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" ")));
        let argv = argv.iter().map(|a| ask::display(a)).collect();
        let bucket = verdict.bucket.clone();
        let question = Question { call_id, command, verdict, shape, argv, changed };
        let allowed = self.ask_user(turn, &gate, question).await;
        (!allowed).then(|| ToolOutcome::failed(ask::denied(&bucket)))
    }

    /// The files `argv` would run that changed in the session and no
    /// "always" for `bucket` covered; read off the runtime's threads.
    async fn changed_files(&self, gate: &Arc<ask::AskGate>, bucket: &str, argv: &[String]) -> Vec<ask::Changed> {
        let (gate, bucket, argv) = (gate.clone(), bucket.to_owned(), argv.to_vec());
        let (base, env) = (self.ctx.commands.base_dir.clone(), self.ctx.commands.env.clone());
        let read = move || gate.changed(&bucket, &ask::code_files(&argv, &base, &env));
        // A file that cannot be checked is never taken as unchanged.
        tokio::task::spawn_blocking(read)
            .await
            .unwrap_or_else(|_| vec![ask::Changed { path: self.ctx.commands.base_dir.clone(), sha256: None }])
    }

    /// A call an `after_llm_call` hook asked about: the user's answer for
    /// this tool (held for the session on "always"); the tool result when
    /// it may not run.
    async fn approve_hook_ask(&mut self, turn: u64, call: &ToolCall, reason: &str) -> Option<ToolOutcome> {
        let gate = self.ctx.hook_asks;
        let bucket = ask::display(&format!("{} (hook: {reason})", call.name));
        let args: String = call.arguments.chars().take(300).collect();
        let command = ask::display(&format!("{} {args}", call.name));
        let verdict = ask::Verdict { bucket, ..ask::Verdict::default() };
        let shape = vec![verdict.bucket.clone()];
        let question = Question { call_id: &call.id, command, verdict, shape, argv: Vec::new(), changed: Vec::new() };
        let allowed = self.ask_user(turn, gate, question).await;
        (!allowed).then(|| {
            ToolOutcome::failed(format!("error: blocked by policy: the user did not approve this call ({reason})"))
        })
    }

    /// Ask the user (unless the session's answer for the bucket holds):
    /// an `approval_requested` event, then any client's `run/approve`. No
    /// answer in time, or the run cancelled, is a rejection.
    async fn ask_user(&mut self, turn: u64, gate: &ask::AskGate, q: Question<'_>) -> bool {
        let v = &q.verdict;
        if let Some(known) = gate.known(&v.bucket, &q.shape, &q.changed) {
            return known;
        }
        let unseen = gate.unseen(&v.bucket, &q.shape);
        let (approval_id, answer) = gate.approvals.ask(self.ctx.session_id);
        // Forgotten however this ends, a dropped run included.
        let _pending = ask::Pending(&gate.approvals, approval_id.clone());
        let base = &self.ctx.commands.base_dir;
        let shown = |p: &std::path::Path| ask::display(&p.strip_prefix(base).unwrap_or(p).to_string_lossy());
        let requested = EventKind::ApprovalRequested {
            turn,
            approval_id: approval_id.clone(),
            tool_call_id: q.call_id.to_owned(),
            bucket: v.bucket.clone(),
            command: q.command.clone(),
            high_risk: v.high_risk || !q.changed.is_empty(),
            timeout_s: gate.timeout.as_secs_f64(),
            argv: q.argv.clone(),
            reason: reason(v, &q.changed),
            changed_files: q.changed.iter().map(|c| shown(&c.path)).collect(),
            every_time: v.every_time,
            unseen_args: unseen.iter().map(|w| ask::display(w)).collect(),
        };
        self.emit(requested);
        // An answer that arrived is taken over a timeout due at the same time.
        let (decision, by) = tokio::select! {
            biased;
            a = answer => (a.unwrap_or(ApprovalDecision::RejectOnce), ResolvedBy::Client),
            _ = tokio::time::sleep(gate.timeout) => (ApprovalDecision::RejectOnce, ResolvedBy::Timeout),
            _ = self.ctx.cancel.cancelled() => (ApprovalDecision::RejectOnce, ResolvedBy::Cancelled),
        };
        gate.remember(v, &q.shape, decision, &q.changed);
        self.emit(EventKind::ApprovalResolved { approval_id, decision, by });
        decision.allows()
    }

    /// An editor's text of the file a `read_file` names, when an editor
    /// serves this session and has it; the path policy decides first
    /// (the tool checks again and reports a refusal).
    async fn editor_text(&self, call: &ParsedCall) -> Option<(std::path::PathBuf, String)> {
        if !self.ctx.buffers.serves(self.ctx.session_id) {
            return None;
        }
        let requested = call.args.as_ref().ok()?.get("file_path")?.as_str()?;
        let path = self.tools.policy().resolve(requested, crate::tools::path::Access::Read).ok()?;
        let text = self.ctx.buffers.read(self.ctx.session_id, &path).await?;
        Some((path, text))
    }

    fn push_result(&mut self, id: &str, content: &str) -> Result<(), StoreError> {
        self.conversation.push(crate::message::Message::tool_result(id, content))
    }

    /// Emit an intervention (`repeat`: the call a `storm` refused).
    pub(super) fn intervened(
        &mut self,
        turn: u64,
        tool: &str,
        kind: InterventionKind,
        message: &str,
        repeat: Option<Repeat>,
    ) {
        self.emit(EventKind::Intervention { turn, kind, tool: tool.to_owned(), message: message.to_owned(), repeat });
    }

    /// Run one tool: commands, fetches and MCP tools are async (and
    /// cancellable), their results Swival's text only; file tools run on
    /// this thread and say what their result means.
    async fn call_tool(&mut self, turn: u64, call: &mut ParsedCall) -> ToolOutcome {
        if let Some(refusal) = self.goal_gate(call) {
            return ToolOutcome::failed(refusal.to_owned());
        }
        match call.spec.map(|t| t.runner) {
            Some(Runner::Goal) if self.ctx.goal.is_some() => self.complete_goal(),
            Some(Runner::Command) if self.ctx.commands.policy.enabled() => self.command_tool(turn, call).await,
            Some(Runner::Fetch) => match &call.args {
                Ok(a) => crate::sandbox::fetch_url_tool(self.ctx.fetch, a).await,
                Err(e) => e.into(),
            },
            Some(Runner::Snapshot) => self.snapshot_tool(turn, call).await,
            Some(Runner::Builtin(b)) if b.takes_editor_text() => {
                let editor_text = self.editor_text(call).await;
                self.file_tool(call, editor_text)
            }
            Some(Runner::Subagents) if self.subagents.is_some() => self.subagent_tool(call).await,
            Some(Runner::Skill) if !self.tools.skills().is_empty() => self.use_skill(call),
            _ if self.tools.mcp().owns(&call.name) => {
                let bracket = self.before_change(call).await;
                let outcome = self.tools.mcp().call(&call.name, &call.raw, self.ctx.cancel).await;
                self.after_change(bracket, turn, call, None).await;
                outcome
            }
            // Built-in tools, and names no tool has (answered as unknown).
            _ => {
                let bracket = self.before_change(call).await;
                let outcome = self.file_tool(call, None);
                self.after_change(bracket, turn, call, outcome.change.as_ref()).await;
                self.checked(outcome).await
            }
        }
    }

    /// `run_command` (a shell line or a Python snippet through its path):
    /// asked when the session asks, then recorded once approved, so a
    /// command waiting for the user holds no snapshot and not the
    /// project's command turn.
    async fn command_tool(&mut self, turn: u64, call: &ParsedCall) -> ToolOutcome {
        let args = match &call.args {
            Ok(a) => crate::sandbox::as_command(&call.name, a).unwrap_or_else(|| a.clone()),
            Err(e) => return e.into(),
        };
        if let Some(refusal) = self.approve(turn, &call.id, &args).await {
            return refusal;
        }
        let bracket = self.before_change(call).await;
        let outcome = crate::sandbox::run_command_tool(self.ctx.commands, &args, self.ctx.cancel).await;
        self.after_change(bracket, turn, call, None).await;
        outcome
    }

    /// `outcome` of a file tool, with what the changed file's own
    /// toolchain says of it (`sandbox::check`) when that is an error.
    async fn checked(&self, mut outcome: ToolOutcome) -> ToolOutcome {
        // A text written, as an editor's diff shows it.
        let text = |c: &&Change| c.after.as_ref().and_then(|a| a.text(MAX_EVENT_TEXT)).is_some();
        let written = outcome.change.as_ref().filter(|c| c.moved_from.is_none() && text(c));
        let change = written.filter(|_| self.tools.edit_checks() && !outcome.failed);
        let env = self.ctx.commands;
        if let Some(note) = match change {
            Some(change) => env.edit_checks.note(env, change, self.ctx.cancel).await,
            None => None,
        } {
            outcome.add_warning(&note);
        }
        outcome
    }

    /// `use_skill`: the skill's instructions (Swival's activation text).
    fn use_skill(&self, call: &ParsedCall) -> ToolOutcome {
        let args = match &call.args {
            Ok(a) => a,
            Err(e) => return e.into(),
        };
        let Some(name) = args.get("name").and_then(Value::as_str) else {
            return ToolError::refused("use_skill needs a 'name' string").into();
        };
        match self.tools.skills().activate(name) {
            Ok(text) => ToolOutcome::ok(text),
            Err(e) => ToolError::refused(e.to_string()).into(),
        }
    }

    /// `spawn_subagent` or `check_subagents`.
    async fn subagent_tool(&mut self, call: &ParsedCall) -> ToolOutcome {
        let args = match &call.args {
            Ok(a) => a,
            Err(e) => return e.into(),
        };
        let first = self.conversation.messages().first();
        let parent = first.filter(|m| m.role() == crate::message::Role::System).map(|m| m.text().to_owned());
        let Some(subagents) = self.subagents.as_mut() else { return ToolError::refused("no subagents").into() };
        let result = match call.name.as_str() {
            subagents::SPAWN => subagents.spawn(args, parent.as_deref(), self.ctx.cancel).await,
            _ => subagents.check(args, self.ctx.cancel).await,
        };
        match result {
            Ok(text) => ToolOutcome::ok(text),
            Err(e) => e.into(),
        }
    }

    /// A file tool, run on this thread. One that may take long tells the
    /// runtime first, which moves this worker's other tasks to another
    /// thread; a bounded one runs at once (handing the worker over costs
    /// more than reading a file).
    fn file_tool(&mut self, call: &mut ParsedCall, editor_text: Option<(std::path::PathBuf, String)>) -> ToolOutcome {
        let tools = &mut self.tools;
        // A resumed run's task is only its label: no task to compare with.
        let task = if self.ctx.resume { "" } else { self.ctx.task };
        let id = call.id.clone();
        let input = CallInput { id: &id, editor_text, task };
        let walks = call.walks_tree();
        let run = || call.run(tools, input);
        if walks {
            tokio::task::block_in_place(run)
        } else {
            run()
        }
    }
}

/// Why a question is high-risk: the bucket's reason, and that it runs
/// files changed in the session.
fn reason(verdict: &ask::Verdict, changed: &[ask::Changed]) -> Option<String> {
    let files = "it runs files changed during this session, which no earlier answer saw";
    match (&verdict.reason, changed.is_empty()) {
        (Some(r), true) => Some(r.clone()),
        (Some(r), false) => Some(format!("{r}; {files}")),
        (None, false) => Some(files.to_owned()),
        (None, true) => None,
    }
}

/// What a call that changed files was called with, short: the paths a
/// file tool names, a command's line, or nothing.
fn label(call: &ParsedCall, exact: Option<&[String]>) -> String {
    let text = match exact {
        Some(paths) => paths.join(", "),
        None => {
            let args = call.args.as_ref().unwrap_or(&Value::Null);
            match &args["command"] {
                Value::String(s) => s.clone(),
                Value::Array(words) => words.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
                _ => String::new(),
            }
        }
    };
    let mut short: String = text.chars().take(200).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}
