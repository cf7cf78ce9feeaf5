//! The bridge's state and the ACP methods: each ACP session is a daemon
//! session followed by one task (`follow.rs`), which sends its updates and
//! hands each run's end to the prompt waiting for it.

use super::acp;
use super::updates;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client as Editor, Error};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use swival_protocol::{ErrorCode, Outcome, RunEnd, RunId, SessionCreateParams, SessionId};
use swivalctl::{Client, ClientError};
use tokio::sync::oneshot;

/// What `swivalctl acp` holds: the daemon connection, the editor's
/// environment (the one runs happen in) and the sessions it follows.
pub struct Bridge {
    pub(super) daemon: Client,
    env: BTreeMap<String, String>,
    /// The editor offered `fs/read_text_file`.
    pub(super) editor_reads: AtomicBool,
    pub(super) sessions: Mutex<HashMap<String, Arc<Tracked>>>,
}

/// One followed session.
pub(super) struct Tracked {
    pub id: SessionId,
    pub base_dir: PathBuf,
    pub runs: Mutex<Runs>,
    /// A later `session/load` took this follower's place.
    pub retired: AtomicBool,
}

/// A client token no other run carries: this bridge's pid and a count.
fn run_token() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("swivalctl-acp:{}:{n}", std::process::id())
}

/// Runs of a followed session: the prompt in flight, and ends that passed
/// the follower before (or while) it waits for them.
#[derive(Default)]
pub(super) struct Runs {
    /// A prompt is in flight.
    pub prompting: bool,
    /// The editor cancelled the prompt in flight.
    pub cancelled: bool,
    /// The run of the prompt in flight, once started.
    pub active: Option<RunId>,
    /// Client tokens of the runs this bridge started, whose `run_started`
    /// is not echoed back (the editor shows the prompt already).
    pub own_prompts: Vec<String>,
    pub finished: HashMap<RunId, RunEnd>,
    pub waiting: HashMap<RunId, oneshot::Sender<RunEnd>>,
    /// The follower ended (the daemon went away): nothing will finish.
    pub gone: bool,
}

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
            from: None,
            worktree: false,
        };
        let created = match self.daemon.create_session(&params).await {
            Ok(c) => c,
            Err(e) => return responder.respond_with_error(daemon_error(e)),
        };
        let id = created.session_id.clone();
        let tracked = self.track(id.clone(), req.cwd.clone());
        self.serve_buffers(&id, &cx).await;
        let options =
            super::options::config_options(&created.config, &super::options::served_models(&self.daemon, &id).await);
        responder.respond(acp::NewSessionResponse::new(id.0.clone()).config_options(options))?;
        send(&cx, &id, commands_update())?;
        self.follow(tracked, cx, None).await;
        Ok(())
    }

    /// `session/set_config_option`: the model or the reasoning effort of
    /// the session's next runs (`session/configure`); the options as they
    /// are now.
    pub async fn set_config_option(
        &self,
        req: acp::SetSessionConfigOptionRequest,
        responder: Responder<acp::SetSessionConfigOptionResponse>,
    ) -> Result<(), Error> {
        let (key, value) = match super::options::config_change(&req) {
            Ok(change) => change,
            Err(why) => return responder.respond_with_error(invalid(why)),
        };
        let mut config = Map::new();
        config.insert(key, Value::String(value));
        let params = swival_protocol::SessionConfigureParams {
            session_id: SessionId(req.session_id.0.to_string()),
            config: Some(config.into()),
            add_dirs: Vec::new(),
            add_dirs_ro: Vec::new(),
        };
        match self.daemon.request::<swival_protocol::methods::typed::SessionConfigure>(&params).await {
            Ok(r) => {
                let served = super::options::served_models(&self.daemon, &params.session_id).await;
                let options = super::options::config_options(&r.config, &served);
                responder.respond(acp::SetSessionConfigOptionResponse::new(options))
            }
            Err(e) => responder.respond_with_error(daemon_error(e)),
        }
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
        // A session followed already is replayed again by a new follower.
        let tracked = self.track(id.clone(), PathBuf::from(&detail.info.base_dir));
        self.serve_buffers(&id, &cx).await;
        self.follow(tracked, cx, Some((detail.info.last_seq.0, responder))).await;
        Ok(())
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
                    .updated_at(s.last_used_at)
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
        let _done = PromptDone(tracked.clone());
        let task = prompt_text(&req.prompt);
        if task.trim().is_empty() {
            return responder.respond_with_error(invalid("the prompt has no text"));
        }
        if let Some(reply) = self.slash_command(&tracked.id, task.trim()).await {
            send(&cx, &tracked.id, message(&reply))?;
            return responder.respond(acp::PromptResponse::new(acp::StopReason::EndTurn));
        }
        let token = run_token();
        tracked.runs.lock().expect("runs lock").own_prompts.push(token.clone());
        let started = self.daemon.start_run(&tracked.id, &task, Some(self.env.clone()), Some(token.clone())).await;
        let run_id = match started {
            Ok(r) => r,
            Err(e) => {
                tracked.runs.lock().expect("runs lock").own_prompts.retain(|t| *t != token);
                return responder.respond_with_error(daemon_error(e));
            }
        };
        let (rx, cancel_now) = {
            let mut runs = tracked.runs.lock().expect("runs lock");
            runs.active = Some(run_id.clone());
            let cancel_now = runs.cancelled;
            let rx = match runs.finished.remove(&run_id) {
                Some(end) => Err(end),
                None if runs.gone => return responder.respond_with_error(gone()),
                None => {
                    let (tx, rx) = oneshot::channel();
                    runs.waiting.insert(run_id.clone(), tx);
                    Ok(rx)
                }
            };
            (rx, cancel_now)
        };
        // A cancel that came while the run was being started.
        if cancel_now {
            self.cancel_run(&run_id).await;
        }
        let end = match rx {
            Err(end) => end,
            Ok(rx) => match rx.await {
                Ok(end) => end,
                Err(_) => return responder.respond_with_error(gone()),
            },
        };
        let cancelled = tracked.runs.lock().expect("runs lock").cancelled;
        // ACP: a prompt the editor cancelled ends as cancelled.
        let reason = if cancelled { acp::StopReason::Cancelled } else { stop_reason(&end) };
        responder.respond(acp::PromptResponse::new(reason))
    }

    /// A `session/prompt` arrived: it is in flight from now on. Called in
    /// the order messages arrive, before any later `session/cancel`.
    pub fn begin_prompt(&self, session_id: &acp::SessionId) {
        if let Some(tracked) = self.tracked(&session_id.0) {
            let mut runs = tracked.runs.lock().expect("runs lock");
            runs.prompting = true;
            runs.cancelled = false;
        }
    }

    /// A `session/cancel` arrived: the prompt in flight ends as cancelled
    /// (its run is cancelled by [`Self::cancel`], or as soon as it starts).
    pub fn note_cancel(&self, session_id: &acp::SessionId) {
        if let Some(tracked) = self.tracked(&session_id.0) {
            let mut runs = tracked.runs.lock().expect("runs lock");
            runs.cancelled = runs.prompting;
        }
    }

    /// `session/cancel`: cancel the run of the prompt in flight.
    pub async fn cancel(&self, session_id: &acp::SessionId) {
        let Some(tracked) = self.tracked(&session_id.0) else { return };
        let active = tracked.runs.lock().expect("runs lock").active.clone();
        if let Some(run) = active {
            self.cancel_run(&run).await;
        }
    }

    async fn cancel_run(&self, run: &RunId) {
        if let Err(e) = self.daemon.cancel_run(run).await {
            eprintln!("swivalctl acp: cannot cancel run {run}: {e}");
        }
    }

    /// Follow `id` from now on; a follower of it already is retired.
    fn track(&self, id: SessionId, base_dir: PathBuf) -> Arc<Tracked> {
        let tracked =
            Arc::new(Tracked { id: id.clone(), base_dir, runs: Mutex::default(), retired: AtomicBool::new(false) });
        let old = self.sessions.lock().expect("sessions lock").insert(id.0, tracked.clone());
        if let Some(old) = old {
            old.retired.store(true, Ordering::Relaxed);
        }
        tracked
    }

    fn tracked(&self, id: &str) -> Option<Arc<Tracked>> {
        self.sessions.lock().expect("sessions lock").get(id).cloned()
    }
}

/// Ends a session's prompt, however `prompt` returns.
struct PromptDone(Arc<Tracked>);

impl Drop for PromptDone {
    fn drop(&mut self) {
        let mut runs = self.0.runs.lock().expect("runs lock");
        runs.prompting = false;
        runs.active = None;
        runs.finished.clear();
    }
}

/// The prompt's text: text blocks as they are, resources as their text
/// under their URI, links as their path (a `file://` URI) or URI.
fn prompt_text(blocks: &[acp::ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            acp::ContentBlock::Text(t) => parts.push(t.text.clone()),
            // A file the user mentioned: its path, which the daemon reads
            // for the model up front when it lies in the project.
            acp::ContentBlock::ResourceLink(l) => {
                parts.push(l.uri.strip_prefix("file://").unwrap_or(&l.uri).to_owned())
            }
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
fn mcp_config(servers: &[acp::McpServer]) -> Option<swival_protocol::ConfigKeys> {
    if servers.is_empty() {
        return None;
    }
    // Maps, not structs, for the names: a later server or variable of the
    // same name replaces the earlier one in its place, as the editor's
    // list reads.
    let mut table = Map::new();
    for server in servers {
        let (name, entry) = match server {
            acp::McpServer::Stdio(s) => {
                let env = named(s.env.iter().map(|e| (&e.name, &e.value)));
                (&s.name, McpEntry::Stdio { command: &s.command, args: &s.args, env })
            }
            acp::McpServer::Http(h) => {
                let headers = named(h.headers.iter().map(|e| (&e.name, &e.value)));
                (&h.name, McpEntry::Http { url: &h.url, headers, transport: McpTransport::StreamableHttp })
            }
            acp::McpServer::Sse(h) => {
                let headers = named(h.headers.iter().map(|e| (&e.name, &e.value)));
                (&h.name, McpEntry::Http { url: &h.url, headers, transport: McpTransport::Sse })
            }
            _ => continue,
        };
        table.insert(name.clone(), serde_json::to_value(entry).expect("an MCP server entry serialises"));
    }
    let config = serde_json::to_value(McpConfig { mcp_servers: table }).expect("an MCP table serialises");
    Some(swival_protocol::ConfigKeys::of(config))
}

/// The session config the editor's MCP servers make.
#[derive(Serialize)]
struct McpConfig {
    /// Server name → [`McpEntry`].
    mcp_servers: Map<String, Value>,
}

/// One server of Swival's `mcp_servers` table.
#[derive(Serialize)]
#[serde(untagged)]
enum McpEntry<'a> {
    /// A command speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: &'a Path,
        /// Its arguments.
        args: &'a [String],
        /// Variables added to its environment.
        env: Map<String, Value>,
    },
    /// A server reached over HTTP.
    Http {
        /// Its endpoint.
        url: &'a str,
        /// Headers sent with each request.
        headers: Map<String, Value>,
        /// How it streams.
        transport: McpTransport,
    },
}

/// The transports of an HTTP MCP server, in Swival's words.
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
enum McpTransport {
    /// MCP's streamable HTTP.
    StreamableHttp,
    /// Server-sent events.
    Sse,
}

/// Name → value pairs as a JSON object, in the order given.
fn named<'a>(pairs: impl Iterator<Item = (&'a String, &'a String)>) -> Map<String, Value> {
    pairs.map(|(name, value)| (name.clone(), Value::String(value.clone()))).collect()
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

pub(super) fn commands_update() -> acp::SessionUpdate {
    let commands = crate::cmd::slash::for_editors().map(|c| acp::AvailableCommand::new(&c.name[1..], c.help)).collect();
    acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(commands))
}

fn message(text: &str) -> acp::SessionUpdate {
    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(acp::ContentBlock::from(text.to_owned())))
}

pub(super) fn send(cx: &ConnectionTo<Editor>, id: &SessionId, update: acp::SessionUpdate) -> Result<(), Error> {
    cx.send_notification(acp::SessionNotification::new(id.0.clone(), update))
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::invalid_params().data(Value::String(msg.into()))
}

fn gone() -> Error {
    Error::internal_error()
        .data(Value::String("lost the connection to swivald; the run goes on there: load the session again".into()))
}

/// A daemon error as the editor should see it: the daemon's message,
/// which says what was wrong and what to do.
pub(super) fn daemon_error(e: ClientError) -> Error {
    let text = match &e {
        ClientError::Rpc { kind: Some(ErrorCode::UntrustedProject), message, .. } => {
            format!("{message} (trust it with `swivalctl trust <dir>`)")
        }
        other => other.to_string(),
    };
    Error::new(-32603, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mentioned_file_becomes_its_path_and_an_embedded_one_its_text() {
        let link = acp::ContentBlock::ResourceLink(acp::ResourceLink::new("calc.py", "file:///p/calc.py"));
        let text = acp::ContentBlock::from("fix".to_owned());
        assert_eq!(prompt_text(&[text, link]), "fix\n/p/calc.py");
    }

    #[test]
    fn the_editors_mcp_servers_become_swivals_table_in_the_editors_order() {
        let env =
            vec![acp::EnvVariable::new("Z", "1"), acp::EnvVariable::new("A", "2"), acp::EnvVariable::new("Z", "3")];
        let servers = [
            acp::McpServer::Stdio(acp::McpServerStdio::new("zeta", "/bin/srv").args(vec!["-a".into()]).env(env)),
            acp::McpServer::Http(
                acp::McpServerHttp::new("alpha", "http://h")
                    .headers(vec![acp::HttpHeader::new("X-B", "b"), acp::HttpHeader::new("X-A", "a")]),
            ),
            acp::McpServer::Sse(acp::McpServerSse::new("mid", "http://s")),
            acp::McpServer::Stdio(acp::McpServerStdio::new("alpha", "/bin/dup")),
        ];
        let text = serde_json::to_string(&mcp_config(&servers)).unwrap();
        // A later entry of the same name replaces the earlier one in its place.
        let want = r#"{"mcp_servers":{"zeta":{"command":"/bin/srv","args":["-a"],"env":{"Z":"3","A":"2"}},"alpha":{"command":"/bin/dup","args":[],"env":{}},"mid":{"url":"http://s","headers":{},"transport":"sse"}}}"#;
        assert_eq!(text, want);
        let http = mcp_config(&servers[1..2]).unwrap();
        let want = r#"{"mcp_servers": {"alpha": {"url": "http://h", "headers": {"X-B": "b", "X-A": "a"}, "transport": "streamable-http"}}}"#;
        assert_eq!(http.to_value(), serde_json::from_str::<Value>(want).unwrap());
        assert_eq!(mcp_config(&[]), None, "no server, no config");
    }
}
