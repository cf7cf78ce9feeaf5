//! The bridge's state and the ACP methods: each ACP session is a daemon
//! session followed by one task (`follow`), which sends its updates and
//! hands each run's end to the prompt waiting for it.

use super::acp;
use super::updates::{self, Forwarder};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client as Editor, Error};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use swival_protocol::{ApprovalDecision, ErrorCode, EventKind, Outcome, RunEnd, RunId, SessionCreateParams, SessionId};
use swivalctl::{Client, ClientError};
use tokio::sync::oneshot;

/// What `swivalctl acp` holds: the daemon connection, the editor's
/// environment (the one runs happen in) and the sessions it follows.
pub struct Bridge {
    daemon: Client,
    env: BTreeMap<String, String>,
    /// The editor offered `fs/read_text_file`.
    editor_reads: AtomicBool,
    sessions: Mutex<HashMap<String, Arc<Tracked>>>,
}

/// One followed session.
struct Tracked {
    id: SessionId,
    base_dir: PathBuf,
    runs: Mutex<Runs>,
}

/// Runs of a followed session: the one this bridge started, and ends that
/// passed the follower before (or while) a prompt waits for them.
#[derive(Default)]
struct Runs {
    active: Option<RunId>,
    finished: HashMap<RunId, RunEnd>,
    waiting: HashMap<RunId, oneshot::Sender<RunEnd>>,
    /// The follower ended (the daemon went away): nothing will finish.
    gone: bool,
}

/// The slash commands offered to the editor.
const COMMANDS: &[(&str, &str)] = &[
    ("policy", "Show this session's policy: filters, hooks, reviewer, sandbox"),
    ("report", "Show the last run's statistics"),
];

impl Bridge {
    /// A bridge over a connected daemon client, in this process's
    /// environment (the editor's).
    pub fn new(daemon: Client) -> Bridge {
        Bridge {
            daemon,
            env: swivalctl::caller_env(),
            editor_reads: AtomicBool::new(false),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// `initialize`: what this agent offers.
    pub fn initialize(&self, req: &acp::InitializeRequest) -> acp::InitializeResponse {
        self.editor_reads.store(req.client_capabilities.fs.read_text_file, Ordering::Relaxed);
        let prompts = acp::PromptCapabilities::new().embedded_context(true);
        let caps = acp::AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(prompts)
            .mcp_capabilities(acp::McpCapabilities::new().http(true))
            .session_capabilities(acp::SessionCapabilities::new().list(acp::SessionListCapabilities::new()));
        acp::InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .agent_capabilities(caps)
            .agent_info(acp::Implementation::new("swivalctl", env!("CARGO_PKG_VERSION")).title("swivald"))
    }

    /// `session/new`: a daemon session in `cwd`, with the project's config
    /// as `swivalctl run` loads it and the editor's environment.
    pub async fn new_session(
        self: Arc<Self>,
        req: acp::NewSessionRequest,
        responder: Responder<acp::NewSessionResponse>,
        cx: ConnectionTo<Editor>,
    ) -> Result<(), Error> {
        if !req.cwd.is_absolute() {
            return responder.respond_with_error(invalid(format!("cwd must be an absolute path, got {:?}", req.cwd)));
        }
        let params = SessionCreateParams {
            base_dir: req.cwd.display().to_string(),
            config: mcp_config(&req.mcp_servers),
            title: None,
            trust: false,
            env: Some(self.env.clone()),
        };
        let created = match self.daemon.create_session(&params).await {
            Ok(c) => c,
            Err(e) => return responder.respond_with_error(daemon_error(e)),
        };
        let id = created.session_id.clone();
        let tracked = self.track(id.clone(), req.cwd.clone());
        self.serve_buffers(&id, &cx).await;
        responder.respond(acp::NewSessionResponse::new(id.0.clone()))?;
        send(&cx, &id, commands_update())?;
        self.follow(tracked, cx, None).await
    }

    /// `session/load`: replay a daemon session's history as updates, answer,
    /// then follow it live (a run another client started keeps streaming).
    pub async fn load_session(
        self: Arc<Self>,
        req: acp::LoadSessionRequest,
        responder: Responder<acp::LoadSessionResponse>,
        cx: ConnectionTo<Editor>,
    ) -> Result<(), Error> {
        let id = SessionId(req.session_id.0.to_string());
        let detail = match self.daemon.session(&id).await {
            Ok(d) => d,
            Err(e) => return responder.respond_with_error(daemon_error(e)),
        };
        if self.sessions.lock().expect("sessions lock").contains_key(&id.0) {
            return responder.respond(acp::LoadSessionResponse::new());
        }
        let tracked = self.track(id.clone(), PathBuf::from(&detail.info.base_dir));
        self.serve_buffers(&id, &cx).await;
        self.follow(tracked, cx, Some((detail.info.last_seq.0, responder))).await
    }

    /// `session/list`: the daemon's sessions, those in `cwd` when given.
    pub async fn list_sessions(
        &self,
        req: acp::ListSessionsRequest,
        responder: Responder<acp::ListSessionsResponse>,
    ) -> Result<(), Error> {
        if req.cursor.is_some() {
            return responder
                .respond_with_error(invalid("this agent returns every session in one page; drop the cursor"));
        }
        let list = match self.daemon.list_sessions().await {
            Ok(l) => l,
            Err(e) => return responder.respond_with_error(daemon_error(e)),
        };
        let sessions = list
            .sessions
            .into_iter()
            .filter(|s| req.cwd.as_ref().is_none_or(|c| std::path::Path::new(&s.base_dir) == c))
            .map(|s| {
                acp::SessionInfo::new(s.session_id.0, PathBuf::from(&s.base_dir))
                    .title(s.title)
                    .updated_at(s.created_at)
            })
            .collect();
        responder.respond(acp::ListSessionsResponse::new(sessions))
    }

    /// `session/prompt`: a run; answered with its stop reason once its last
    /// update went out.
    pub async fn prompt(
        self: Arc<Self>,
        req: acp::PromptRequest,
        responder: Responder<acp::PromptResponse>,
        cx: ConnectionTo<Editor>,
    ) -> Result<(), Error> {
        let Some(tracked) = self.tracked(&req.session_id.0) else {
            let msg = format!("unknown session {}: create it with session/new or load it", req.session_id.0);
            return responder.respond_with_error(invalid(msg));
        };
        let task = prompt_text(&req.prompt);
        if task.trim().is_empty() {
            return responder.respond_with_error(invalid("the prompt has no text"));
        }
        if let Some(reply) = self.slash_command(&tracked.id, task.trim()).await {
            send(&cx, &tracked.id, message(&reply))?;
            return responder.respond(acp::PromptResponse::new(acp::StopReason::EndTurn));
        }
        let run_id = match self.daemon.start_run(&tracked.id, &task, Some(self.env.clone())).await {
            Ok(r) => r,
            Err(e) => return responder.respond_with_error(daemon_error(e)),
        };
        let rx = {
            let mut runs = tracked.runs.lock().expect("runs lock");
            runs.active = Some(run_id.clone());
            match runs.finished.remove(&run_id) {
                Some(end) => Err(end),
                None if runs.gone => return responder.respond_with_error(gone()),
                None => {
                    let (tx, rx) = oneshot::channel();
                    runs.waiting.insert(run_id.clone(), tx);
                    Ok(rx)
                }
            }
        };
        let end = match rx {
            Err(end) => end,
            Ok(rx) => match rx.await {
                Ok(end) => end,
                Err(_) => return responder.respond_with_error(gone()),
            },
        };
        tracked.runs.lock().expect("runs lock").active = None;
        responder.respond(acp::PromptResponse::new(stop_reason(&end)))
    }

    /// `session/cancel`: cancel the run this bridge started in the session.
    pub async fn cancel(&self, session_id: &acp::SessionId) {
        let Some(tracked) = self.tracked(&session_id.0) else { return };
        let active = tracked.runs.lock().expect("runs lock").active.clone();
        if let Some(run) = active {
            if let Err(e) = self.daemon.cancel_run(&run).await {
                eprintln!("swivalctl acp: cannot cancel run {run}: {e}");
            }
        }
    }

    fn track(&self, id: SessionId, base_dir: PathBuf) -> Arc<Tracked> {
        let tracked = Arc::new(Tracked { id: id.clone(), base_dir, runs: Mutex::default() });
        self.sessions.lock().expect("sessions lock").insert(id.0, tracked.clone());
        tracked
    }

    fn tracked(&self, id: &str) -> Option<Arc<Tracked>> {
        self.sessions.lock().expect("sessions lock").get(id).cloned()
    }

    /// Follow a session's events from the first, sending each one's updates.
    /// With `replay`, the events up to that seq are history: the load is
    /// answered after them and what follows is live.
    async fn follow(
        self: &Arc<Self>,
        tracked: Arc<Tracked>,
        cx: ConnectionTo<Editor>,
        mut replay: Option<(u64, Responder<acp::LoadSessionResponse>)>,
    ) -> Result<(), Error> {
        let mut forwarder = Forwarder::new(tracked.base_dir.clone());
        let mut events = match self.daemon.subscribe_events(&tracked.id, 1).await {
            Ok(s) => s,
            Err(e) => {
                self.end_follow(&tracked);
                return match replay.take() {
                    Some((_, r)) => r.respond_with_error(daemon_error(e)),
                    None => Err(daemon_error(e)),
                };
            }
        };
        if replay.as_ref().is_none_or(|(last, _)| *last == 0) {
            if let Some((_, r)) = replay.take() {
                r.respond(acp::LoadSessionResponse::new())?;
                send(&cx, &tracked.id, commands_update())?;
            }
        }
        // Questions asked while replaying: those still open when the
        // replay ends go to the editor then.
        let mut open: Vec<Question> = Vec::new();
        while let Some(Ok(event)) = events.next().await {
            for update in forwarder.updates(&event) {
                send(&cx, &tracked.id, update)?;
            }
            match Question::of(&event) {
                Some(q) if replay.is_none() => self.ask_editor(&cx, &tracked.id, q)?,
                Some(q) => open.push(q),
                None => {}
            }
            if let EventKind::ApprovalResolved { approval_id, .. } = &event.kind {
                open.retain(|q| q.approval_id != *approval_id);
            }
            if let (EventKind::RunFinished(end), Some(run)) = (&event.kind, &event.run_id) {
                self.finished(&tracked, run, end);
            }
            if replay.as_ref().is_some_and(|(last, _)| event.seq.0 >= *last) {
                if let Some((_, r)) = replay.take() {
                    r.respond(acp::LoadSessionResponse::new())?;
                    send(&cx, &tracked.id, commands_update())?;
                }
                for q in open.drain(..) {
                    self.ask_editor(&cx, &tracked.id, q)?;
                }
            }
        }
        self.end_follow(&tracked);
        Ok(())
    }

    /// Ask the editor to approve a command (`session/request_permission`)
    /// and pass its answer to the daemon. An editor that cancels the
    /// question, or fails to answer, rejects the command.
    fn ask_editor(self: &Arc<Self>, cx: &ConnectionTo<Editor>, session: &SessionId, q: Question) -> Result<(), Error> {
        let options = vec![
            acp::PermissionOption::new("allow_once", "Allow once", acp::PermissionOptionKind::AllowOnce),
            acp::PermissionOption::new(
                "allow_always",
                format!("Always allow `{}` in this session", q.bucket),
                acp::PermissionOptionKind::AllowAlways,
            ),
            acp::PermissionOption::new("reject_once", "Reject", acp::PermissionOptionKind::RejectOnce),
            acp::PermissionOption::new(
                "reject_always",
                format!("Never allow `{}` in this session", q.bucket),
                acp::PermissionOptionKind::RejectAlways,
            ),
        ];
        let risk = if q.high_risk { " (high risk)" } else { "" };
        let fields = acp::ToolCallUpdateFields::new()
            .title(format!("Run {}{risk}", q.command))
            .kind(acp::ToolKind::Execute)
            .status(acp::ToolCallStatus::Pending);
        let request = acp::RequestPermissionRequest::new(
            session.0.clone(),
            acp::ToolCallUpdate::new(q.tool_call_id.clone(), fields),
            options,
        );
        let (bridge, editor, session) = (self.clone(), cx.clone(), session.clone());
        cx.spawn(async move {
            let decision = match editor.send_request(request).block_task().await {
                Ok(r) => match r.outcome {
                    acp::RequestPermissionOutcome::Selected(s) => decision_of(&s.option_id.0),
                    _ => ApprovalDecision::RejectOnce,
                },
                Err(_) => ApprovalDecision::RejectOnce,
            };
            if let Err(e) = bridge.daemon.approve(&session, &q.approval_id, decision).await {
                eprintln!("swivalctl acp: cannot pass the answer to swivald: {e}");
            }
            Ok(())
        })
    }

    /// Answer the session's file reads from the editor's buffers
    /// (`fs/read_text_file`), for as long as the daemon connection lives.
    /// An editor that cannot read a file leaves it to the disk.
    async fn serve_buffers(self: &Arc<Self>, session: &SessionId, cx: &ConnectionTo<Editor>) {
        if !self.editor_reads.load(Ordering::Relaxed) {
            return;
        }
        let mut reads = match self.daemon.serve_buffers(session).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("swivalctl acp: reads will not see unsaved buffers: {e}");
                return;
            }
        };
        let (bridge, editor, session) = (self.clone(), cx.clone(), session.clone());
        let served = cx.spawn(async move {
            while let Some(Ok(read)) = reads.next().await {
                let request = acp::ReadTextFileRequest::new(session.0.clone(), PathBuf::from(&read.path));
                let text = editor.send_request(request).block_task().await.ok().map(|r| r.content);
                if let Err(e) = bridge.daemon.respond_buffer(&read.request_id, text).await {
                    eprintln!("swivalctl acp: cannot pass a buffer to swivald: {e}");
                }
            }
            Ok(())
        });
        if let Err(e) = served {
            eprintln!("swivalctl acp: reads will not see unsaved buffers: {e}");
        }
    }

    /// Hand a run's end to the prompt waiting for it, or keep it for the
    /// prompt about to wait.
    fn finished(&self, tracked: &Tracked, run: &RunId, end: &RunEnd) {
        let mut runs = tracked.runs.lock().expect("runs lock");
        match runs.waiting.remove(run) {
            Some(tx) => {
                let _ = tx.send(end.clone());
            }
            None => {
                runs.finished.insert(run.clone(), end.clone());
            }
        }
    }

    fn end_follow(&self, tracked: &Tracked) {
        let mut runs = tracked.runs.lock().expect("runs lock");
        runs.gone = true;
        runs.waiting.clear();
        drop(runs);
        self.sessions.lock().expect("sessions lock").remove(&tracked.id.0);
    }

    /// Answer a slash command without a run (`None`: not one of ours).
    async fn slash_command(&self, id: &SessionId, text: &str) -> Option<String> {
        let name = text.strip_prefix('/')?.split_whitespace().next()?;
        match name {
            "policy" => Some(match self.daemon.policy_status(id).await {
                Ok(p) => format!("```json\n{}\n```", serde_json::to_string_pretty(&p).unwrap_or_default()),
                Err(e) => format!("Error: {e}"),
            }),
            "report" => Some(self.last_report(id).await),
            _ => None,
        }
    }

    async fn last_report(&self, id: &SessionId) -> String {
        let detail = match self.daemon.session(id).await {
            Ok(d) => d,
            Err(e) => return format!("Error: {e}"),
        };
        let Some(run) = detail.runs.iter().rev().find(|r| !r.running) else {
            return "No run has finished in this session yet.".into();
        };
        match self.daemon.report(&run.run_id).await {
            Ok(r) => format!("```json\n{}\n```", serde_json::to_string_pretty(&r["stats"]).unwrap_or_default()),
            Err(e) => format!("Error: {e}"),
        }
    }
}

/// A command waiting for the user's approval.
struct Question {
    approval_id: String,
    tool_call_id: String,
    bucket: String,
    command: String,
    high_risk: bool,
}

impl Question {
    fn of(event: &swival_protocol::Event) -> Option<Question> {
        match &event.kind {
            EventKind::ApprovalRequested { approval_id, tool_call_id, bucket, command, high_risk, .. } => {
                Some(Question {
                    approval_id: approval_id.clone(),
                    tool_call_id: tool_call_id.clone(),
                    bucket: bucket.clone(),
                    command: command.clone(),
                    high_risk: *high_risk,
                })
            }
            _ => None,
        }
    }
}

fn decision_of(option: &str) -> ApprovalDecision {
    match option {
        "allow_once" => ApprovalDecision::AllowOnce,
        "allow_always" => ApprovalDecision::AllowAlways,
        "reject_always" => ApprovalDecision::RejectAlways,
        _ => ApprovalDecision::RejectOnce,
    }
}

/// The prompt's text: text blocks as they are, resources as their text
/// under their URI, links as their URI.
fn prompt_text(blocks: &[acp::ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            acp::ContentBlock::Text(t) => parts.push(t.text.clone()),
            acp::ContentBlock::ResourceLink(l) => parts.push(format!("@{}", l.uri)),
            acp::ContentBlock::Resource(r) => match &r.resource {
                acp::EmbeddedResourceResource::TextResourceContents(t) => {
                    parts.push(format!("Contents of {}:\n```\n{}\n```", t.uri, t.text));
                }
                _ => parts.push("(a binary resource was attached; it is not sent to the model)".into()),
            },
            _ => parts.push("(an image or audio block was attached; it is not sent to the model)".into()),
        }
    }
    parts.join("\n")
}

/// The editor's MCP servers in Swival's `mcp_servers` shape, for the
/// session config.
fn mcp_config(servers: &[acp::McpServer]) -> Option<Value> {
    if servers.is_empty() {
        return None;
    }
    let mut table = Map::new();
    for server in servers {
        let (name, entry) = match server {
            acp::McpServer::Stdio(s) => {
                let env: Map<String, Value> = s.env.iter().map(|e| (e.name.clone(), json!(e.value))).collect();
                (s.name.clone(), json!({"command": s.command, "args": s.args, "env": env}))
            }
            acp::McpServer::Http(h) => {
                let headers: Map<String, Value> = h.headers.iter().map(|e| (e.name.clone(), json!(e.value))).collect();
                (h.name.clone(), json!({"url": h.url, "headers": headers, "transport": "streamable-http"}))
            }
            acp::McpServer::Sse(h) => {
                let headers: Map<String, Value> = h.headers.iter().map(|e| (e.name.clone(), json!(e.value))).collect();
                (h.name.clone(), json!({"url": h.url, "headers": headers, "transport": "sse"}))
            }
            _ => continue,
        };
        table.insert(name, entry);
    }
    Some(json!({ "mcp_servers": table }))
}

fn stop_reason(end: &RunEnd) -> acp::StopReason {
    if updates::filter_blocked(end) {
        return acp::StopReason::Refusal;
    }
    match end.outcome {
        Outcome::Success | Outcome::Error | Outcome::Interrupted => acp::StopReason::EndTurn,
        Outcome::Exhausted => acp::StopReason::MaxTurnRequests,
        Outcome::Blocked => acp::StopReason::Refusal,
        Outcome::Cancelled => acp::StopReason::Cancelled,
    }
}

fn commands_update() -> acp::SessionUpdate {
    let commands = COMMANDS.iter().map(|(n, d)| acp::AvailableCommand::new(*n, *d)).collect();
    acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(commands))
}

fn message(text: &str) -> acp::SessionUpdate {
    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(acp::ContentBlock::from(text.to_owned())))
}

fn send(cx: &ConnectionTo<Editor>, id: &SessionId, update: acp::SessionUpdate) -> Result<(), Error> {
    cx.send_notification(acp::SessionNotification::new(id.0.clone(), update))
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::invalid_params().data(Value::String(msg.into()))
}

fn gone() -> Error {
    Error::internal_error().data(json!("lost the connection to swivald; the run goes on there: load the session again"))
}

/// A daemon error as the editor should see it: the daemon's message,
/// which says what was wrong and what to do.
fn daemon_error(e: ClientError) -> Error {
    let text = match &e {
        ClientError::Rpc { kind: Some(ErrorCode::UntrustedProject), message, .. } => {
            format!("{message} (trust it with `swivalctl trust <dir>`)")
        }
        other => other.to_string(),
    };
    Error::new(-32603, text)
}
