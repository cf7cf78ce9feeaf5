//! A daemon session's events as ACP `session/update`s: text deltas become
//! message chunks, tool calls become `tool_call` / `tool_call_update` with a
//! kind (the daemon's, from its tool registry), a title, locations and, for
//! edits, the diff the daemon recorded; `todo` results become a plan; what the policy pipeline did (hooks, filter blocks, reviewer
//! rounds, loop guards, warnings) is shown, never dropped.

use super::acp::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use swival_protocol::{Event, EventKind, FileChange, HookDecision, Outcome, ReviewVerdict, RunEnd, TodoItem};

/// Turns one session's events into updates.
pub struct Forwarder {
    /// The session's base directory: relative tool paths resolve there.
    base_dir: PathBuf,
    /// Answer text streamed in the current turn.
    streamed: String,
    /// Tool calls waiting for an approval, by approval id.
    approvals: std::collections::HashMap<String, String>,
}

impl Forwarder {
    /// A forwarder for a session rooted at `base_dir`.
    pub fn new(base_dir: PathBuf) -> Forwarder {
        Forwarder { base_dir, streamed: String::new(), approvals: Default::default() }
    }

    /// The updates one event becomes (often none).
    pub fn updates(&mut self, event: &Event) -> Vec<SessionUpdate> {
        match &event.kind {
            EventKind::RunStarted { task, .. } => {
                self.streamed.clear();
                vec![SessionUpdate::UserMessageChunk(ContentChunk::new(text(task)))]
            }
            EventKind::TurnStarted { .. } => {
                self.streamed.clear();
                Vec::new()
            }
            EventKind::TextDelta { text: t, .. } => {
                self.streamed.push_str(t);
                vec![message(t)]
            }
            EventKind::ToolCall { id, name, kind, arguments, .. } => {
                self.tool_call(&call_id(event, id), name, *kind, arguments)
            }
            EventKind::ToolResult { id, succeeded, content, output, change, todo, .. } => {
                self.streamed.clear();
                // The editor shows what a person is shown, not the notes for the model.
                let shown = output.as_deref().unwrap_or(content);
                self.tool_result(&call_id(event, id), *succeeded, shown, change.as_ref(), todo.as_deref())
            }
            EventKind::Hook { point, hook, decision, reason, .. } if *decision != HookDecision::Pass => {
                let reason = reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
                let failed = matches!(decision, HookDecision::Block | HookDecision::IgnoredFailure);
                let (point, decision) = (point.name(), decision.name());
                card(event, format!("{point} hook {decision}"), format!("{hook} → {decision}{reason}"), failed)
            }
            EventKind::Review { round, verdict, feedback, .. } => {
                let body = if feedback.trim().is_empty() { verdict.name().to_owned() } else { feedback.clone() };
                let title = format!("Reviewer round {round}: {}", verdict.name());
                card(event, title, body, *verdict == ReviewVerdict::Error)
            }
            // The line added to a change's result is the model's to read.
            EventKind::Intervention { kind: swival_protocol::InterventionKind::DoneHint, .. } => Vec::new(),
            EventKind::Intervention { kind, tool, message: m, .. } => {
                let about = if tool.is_empty() { String::new() } else { format!(" ({tool})") };
                vec![thought(&format!("[nudge: {}{about}] {m}\n", kind.name()))]
            }
            EventKind::Warning { message: m } => vec![thought(&format!("Warning: {m}\n"))],
            // The model's reasoning, when the session shows it.
            EventKind::Thinking { text: Some(t), .. } => vec![thought(&format!("{t}\n"))],
            EventKind::Notice { message: m, .. } => vec![thought(&format!("{m}\n"))],
            EventKind::Compaction { strategy, tokens_before, tokens_after, .. } => {
                vec![thought(&format!("[context compacted: {strategy}, {tokens_before} → {tokens_after} tokens]\n"))]
            }
            EventKind::Retry { attempt, reason, .. } => {
                vec![thought(&format!("[provider call failed (attempt {attempt}), retrying: {reason}]\n"))]
            }
            EventKind::ApprovalRequested { approval_id, tool_call_id, .. } => {
                self.approvals.insert(approval_id.clone(), call_id(event, tool_call_id));
                Vec::new()
            }
            EventKind::ApprovalResolved { approval_id, decision, by } => {
                let mut out = vec![thought(&format!("[approval: {} ({})]\n", decision.name(), by.name()))];
                // An approved call runs now.
                if let Some(id) = self.approvals.remove(approval_id).filter(|_| decision.allows()) {
                    let fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
                    out.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id, fields)));
                }
                out
            }
            EventKind::RunFinished(end) => self.finished(end),
            _ => Vec::new(),
        }
    }

    fn tool_call(
        &mut self,
        id: &str,
        name: &str,
        kind: swival_protocol::ToolKind,
        arguments: &str,
    ) -> Vec<SessionUpdate> {
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::String(arguments.to_owned()));
        let mut call = ToolCall::new(id.to_owned(), title(name, &args))
            .kind(drawn_as(kind))
            .status(ToolCallStatus::InProgress)
            .raw_input(args.clone());
        if let Some(p) = arg(&args, "file_path") {
            let line = args.get("line_number").and_then(Value::as_u64).and_then(|l| u32::try_from(l).ok());
            call = call.locations(vec![ToolCallLocation::new(self.resolve(p)).line(line)]);
        }
        let mut out = vec![SessionUpdate::ToolCall(call)];
        if kind == swival_protocol::ToolKind::Think {
            if let Some(t) = arg(&args, "thought") {
                out.push(thought(&format!("{t}\n")));
            }
        }
        out
    }

    fn tool_result(
        &mut self,
        id: &str,
        succeeded: bool,
        content: &str,
        change: Option<&FileChange>,
        todo: Option<&[TodoItem]>,
    ) -> Vec<SessionUpdate> {
        let status = if succeeded { ToolCallStatus::Completed } else { ToolCallStatus::Failed };
        let mut shown = Vec::new();
        if let Some(c) = change.filter(|_| succeeded) {
            shown.push(ToolCallContent::Diff(
                Diff::new(c.path.clone(), c.new_text.clone()).old_text(c.old_text.clone()),
            ));
        }
        shown.push(ToolCallContent::from(text(content)));
        let fields = ToolCallUpdateFields::new().status(status).content(shown);
        let mut out = vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_owned(), fields))];
        if let Some(items) = todo {
            out.push(SessionUpdate::Plan(plan(items)));
        }
        out
    }

    /// The end of a run: the answer when none of it was streamed, and the
    /// reason a policy refused or the run failed.
    fn finished(&mut self, end: &RunEnd) -> Vec<SessionUpdate> {
        let mut out = Vec::new();
        if let Some(answer) = end.answer.as_deref().filter(|a| !a.is_empty()) {
            if self.streamed.trim() != answer.trim() {
                let sep = if self.streamed.is_empty() { "" } else { "\n\n" };
                out.push(message(&format!("{sep}{answer}")));
            }
        }
        if matches!(end.outcome, Outcome::Blocked | Outcome::Error | Outcome::Interrupted) {
            if let Some(err) = end.error.as_deref() {
                let blocked = end.outcome == Outcome::Blocked || filter_blocked(end);
                let what = if blocked { "Blocked by policy" } else { "Error" };
                out.push(message(&format!("\n{what}: {err}\n")));
            }
        }
        self.streamed.clear();
        out
    }

    fn resolve(&self, p: &str) -> PathBuf {
        let path = Path::new(p);
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.base_dir.join(path)
        }
    }
}

/// Whether a run failed because the outbound filter chain blocked a call.
/// Swival's contract makes that a failed run (exit 1), so the daemon
/// reports `error` with the kind `filter_blocked`; to an editor it is a
/// policy refusal.
pub fn filter_blocked(end: &RunEnd) -> bool {
    end.failure == Some(swival_protocol::FailureKind::FilterBlocked)
}

/// A tool call's id for the editor: the model's id is unique only within
/// its run, so the run's id comes first.
pub fn call_id(event: &Event, id: &str) -> String {
    match &event.run_id {
        Some(run) => format!("{run}/{id}"),
        None => id.to_owned(),
    }
}

/// A visible card for something the policy pipeline did.
fn card(event: &Event, title: String, body: String, failed: bool) -> Vec<SessionUpdate> {
    let status = if failed { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
    let call = ToolCall::new(format!("policy-{}", event.seq.0), title)
        .kind(ToolKind::Other)
        .status(status)
        .content(vec![ToolCallContent::from(text(&body))]);
    vec![SessionUpdate::ToolCall(call)]
}

/// How the editor should draw a call of this kind (no wildcard arm: a new
/// kind does not compile until it is drawn somehow).
pub fn drawn_as(kind: swival_protocol::ToolKind) -> ToolKind {
    use swival_protocol::ToolKind as Daemon;
    match kind {
        Daemon::Read => ToolKind::Read,
        Daemon::Search => ToolKind::Search,
        Daemon::Edit => ToolKind::Edit,
        Daemon::Move => ToolKind::Move,
        Daemon::Delete => ToolKind::Delete,
        Daemon::Execute => ToolKind::Execute,
        Daemon::Fetch => ToolKind::Fetch,
        Daemon::Think => ToolKind::Think,
        Daemon::Plan | Daemon::Mcp | Daemon::Other => ToolKind::Other,
    }
}

/// A human title: what the call does and to what.
pub fn title(name: &str, args: &Value) -> String {
    let file = arg(args, "file_path").unwrap_or("?");
    match name {
        "read_file" => format!("Read {file}"),
        "read_multiple_files" => {
            let n = args.get("files").and_then(Value::as_array).map_or(0, Vec::len);
            format!("Read {n} files")
        }
        "write_file" => match arg(args, "move_from") {
            Some(from) => format!("Move {from} → {file}"),
            None => format!("Write {file}"),
        },
        "edit_file" => format!("Edit {file}"),
        "delete_file" => format!("Delete {file}"),
        "list_files" => format!("List {}", arg(args, "pattern").unwrap_or("files")),
        "grep" => format!("Search for {}", arg(args, "pattern").unwrap_or("?")),
        "outline" => match args.get("files").and_then(Value::as_array) {
            Some(files) => format!("Outline {} files", files.len()),
            None => format!("Outline {file}"),
        },
        "run_command" => match args.get("command") {
            Some(Value::Array(argv)) => {
                let words: Vec<&str> = argv.iter().filter_map(Value::as_str).collect();
                format!("Run {}", words.join(" "))
            }
            Some(Value::String(s)) => format!("Run {s}"),
            _ => "Run a command".into(),
        },
        "fetch_url" => format!("Fetch {}", arg(args, "url").unwrap_or("?")),
        "think" => "Think".into(),
        "todo" => format!("Todo: {}", arg(args, "action").unwrap_or("list")),
        other => other.to_owned(),
    }
}

/// The todo list a `todo` call left, as a plan.
fn plan(items: &[TodoItem]) -> Plan {
    let entries = items
        .iter()
        .map(|i| {
            let status = if i.done { PlanEntryStatus::Completed } else { PlanEntryStatus::Pending };
            PlanEntry::new(i.task.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    Plan::new(entries)
}

fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn text(s: &str) -> ContentBlock {
    ContentBlock::from(s.to_owned())
}

fn message(s: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(text(s)))
}

fn thought(s: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(s)))
}
