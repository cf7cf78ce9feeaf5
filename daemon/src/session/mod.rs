//! Sessions and their runs: creation (config, base dir), loading sessions
//! from the store when they are used, starting, cancelling and waiting for
//! runs, and restoring everything from the store after a restart.
//!
//! Each session in memory is an actor (`actor.rs`): one task owns its
//! conversation, tools and run in flight, and callers send it commands
//! through a handle. A run borrows the conversation and tools for its
//! duration and returns them when it ends, so exactly one run at a time
//! can touch them; a second `run/start` meanwhile finds the session busy.
//!
//! Between runs a session takes a new config (`configure.rs`), compacts
//! its conversation (`compact.rs`), or sets a checkpoint and collapses the
//! conversation since it (`checkpoint.rs`), each through its actor.
//!
//! The store is the truth; memory holds only sessions in use (`live.rs`).
//! Read-only requests (`session/get`, `session/list`, `report/get`,
//! `run/wait` on a finished run, subscriptions) read the store and never
//! load a session.

mod actor;
mod build;
mod caller;
mod changes;
mod compact;
mod configure;
pub mod events;
pub use configure::public_config;
mod carry;
mod checkpoint;
mod history;
mod live;
mod mailbox;
mod notes;
mod policy;
mod read;
mod review;
mod run;
mod runs;
mod subagents;
#[cfg(test)]
mod tests;
mod trust;
mod worktree;

use crate::cache::{LazyCache, ResponseCache};
use crate::config::{self, EffectiveConfig};
use crate::mcp::McpPool;
use crate::pipeline::hooks::rpc::HookRegistry;
use crate::pipeline::Pipeline;
use crate::procs::ProcessRunner;
use crate::sandbox::{CommandEnv, FetchEnv, SandboxCapabilities, SandboxStatus};
use crate::services::Services;
use crate::shutdown::Shutdown;
use crate::store::{SessionRow, Store, StoreError};
use actor::Actor;
pub use events::Cursor;
use events::{EventLog, Logs};
use live::Live;
pub use live::LiveLimits;
pub use mailbox::NewRun;
use mailbox::{Command, Handle, Parts};
use read::info;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use swival_protocol::SessionInfo;
use swival_protocol::{EventKind, RunId, SessionCreateParams, SessionCreateResult, SessionId};
use tokio::sync::Semaphore;

/// What can go wrong with a session request; each maps to one error code.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Unknown session id.
    #[error("no session {0}; list sessions with `swivalctl sessions`")]
    NotFound(SessionId),
    /// Unknown run id.
    #[error("no run {0}; the runs of a session are listed by session/get")]
    RunNotFound(RunId),
    /// The session already has a run in flight.
    #[error("session {session} is busy with run {run}; wait for it to end, or cancel it: `swivalctl cancel {run}`")]
    Busy { session: SessionId, run: RunId },
    /// The session is compacting its conversation (`session/compact`,
    /// `session/restore`).
    #[error(
        "session {0} is busy compacting its conversation; try again once session/compact (or session/restore) \
         has answered"
    )]
    Compacting(SessionId),
    /// The session was closed.
    #[error("session {0} is closed; create a new session")]
    Closed(SessionId),
    /// The configuration or the base directory is unusable.
    #[error("{0}")]
    Config(String),
    /// The project config needs the user's trust first.
    #[error("{0}")]
    Untrusted(String),
    /// The configuration is valid but names something that cannot run
    /// (a missing or non-executable filter, hook or reviewer script).
    #[error("{0}")]
    Setup(String),
    /// The run has no report (still running).
    #[error("run {0} has no report yet: it is still running; wait for it with run/wait")]
    NoReport(RunId),
    /// The daemon is stopping.
    #[error("the daemon is shutting down and starts no new runs")]
    ShuttingDown,
    /// A stored report that does not read as Swival's report.
    #[error("the stored report of run {run} cannot be read ({why}); its result is still given by run/wait")]
    BadReport { run: RunId, why: String },
    /// The session does not work in a worktree (`session/apply`).
    #[error("session {0} does not work in a git worktree (it was not created with --worktree): its changes are already in its base_dir")]
    NotWorktree(SessionId),
    /// git failed on a session's worktree, in words.
    #[error("{0}")]
    Worktree(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A run's changes were not recorded, or cannot be read.
    #[error("{0}")]
    NoChanges(String),
    /// The request cannot be done in this state; the words say why and what to do.
    #[error("{0}")]
    Refused(String),
    /// Something that should not happen did (a job panicked), in words.
    #[error("{0}")]
    Internal(String),
}

/// Daemon-wide settings sessions need.
#[derive(Debug, Clone)]
pub struct SessionSettings {
    /// The global Swival config file.
    pub global_config: Option<PathBuf>,
    /// Most provider calls in flight at once, daemon-wide.
    pub max_llm_calls: usize,
    /// Base of the provider retry backoff.
    pub backoff_base: Duration,
    /// What the kernel lets the command sandbox enforce (probed at start).
    pub sandbox_caps: SandboxCapabilities,
    /// The daemon's socket, hidden from the model's commands.
    pub socket: Option<PathBuf>,
    /// The daemon's state, cache and config directories, hidden from the
    /// model's commands (other sessions' conversations, the trust records).
    pub daemon_dirs: Vec<PathBuf>,
    /// When sessions are dropped from memory.
    pub live: LiveLimits,
    /// How long a run waits for a command's approval before it counts as rejected.
    pub approval_timeout: std::time::Duration,
    /// Subagents running at once, all sessions together.
    pub max_subagents: usize,
    /// Where sessions' git worktrees go (`worktrees_dir`).
    pub worktrees_dir: PathBuf,
}

/// Every session, live or stored.
pub struct Sessions {
    /// Shared services.
    shared: Arc<Shared>,
    /// Sessions in memory and runs in flight.
    live: Arc<Live>,
}

/// What every session and run uses: the daemon-wide services (given by
/// the server, see [`Services`]) and what only runs share.
pub(crate) struct Shared {
    /// The database.
    pub store: Arc<Store>,
    /// Every session's event log, shared by sessions and subscribers.
    pub logs: Logs,
    /// The HTTP connection pool for providers, made on first use (see
    /// [`Shared::http`]).
    http: std::sync::OnceLock<reqwest::Client>,
    /// Daemon-wide cap on concurrent provider calls.
    pub llm_slots: Semaphore,
    /// Runs filters, hooks and reviewers.
    pub runner: Arc<ProcessRunner>,
    /// Client hooks, daemon-wide.
    pub hooks: Arc<HookRegistry>,
    /// The daemon's MCP servers.
    pub mcp: Arc<McpPool>,
    /// Approvals runs wait for (`commands = "ask"`), daemon-wide.
    pub approvals: Arc<crate::sandbox::ask::Approvals>,
    /// Editors serving sessions' reads from their buffers, daemon-wide.
    pub buffers: Arc<crate::editor::EditorBuffers>,
    /// The response cache, opened on first use (see [`Shared::cache`]).
    pub cache: Arc<LazyCache>,
    /// The projects' snapshot stores; `None` when snapshots are off.
    pub changes: Option<Arc<crate::changes::Changes>>,
    /// Daemon-wide settings.
    pub settings: SessionSettings,
    /// The daemon's shutdown: when it begins every run ends, and the
    /// daemon waits for the run tasks (spawned through it) to record their ends.
    pub shutdown: Shutdown,
    /// Callers' environments and secrets, in memory only (a session's
    /// actor changes them with its config, `session/configure`).
    callers: caller::Callers,
    /// Sessions' git worktrees.
    worktrees: worktree::Worktrees,
    /// What subagents reach the registry through.
    subagents: subagents::Registry,
}

impl Shared {
    /// The providers' HTTP client, made when the first run needs it: making
    /// it reads the system's trust store (every certificate file in it),
    /// which a daemon that only starts, or serves reads, never needs.
    pub fn http(&self) -> reqwest::Client {
        self.http.get_or_init(crate::provider::Provider::http_client).clone()
    }

    /// The response cache, opened the first time a session needs it.
    pub fn cache(&self) -> Result<Arc<ResponseCache>, crate::cache::CacheError> {
        self.cache.get()
    }
}

/// One session in memory.
pub struct Session {
    /// Its id.
    pub id: SessionId,
    /// Its base directory (canonical).
    pub base_dir: PathBuf,
    /// Its effective configuration.
    pub config: EffectiveConfig,
    /// The environment its runs happen in (the caller's).
    pub env: crate::environment::CallerEnv,
    /// Its event log.
    pub events: EventLog,
    /// Its policy pipeline.
    pub pipeline: Pipeline,
    /// How its commands run (whitelist, kernel sandbox plan).
    pub commands: CommandEnv,
    /// How `fetch_url` reaches the network.
    pub fetch: FetchEnv,
    /// The answers a user gave for the session to tool calls
    /// `after_llm_call` hooks asked about.
    pub hook_asks: crate::sandbox::ask::AskGate,
    /// What the sandbox enforces for it.
    pub sandbox: SandboxStatus,
    /// Policy files and directories the agent cannot change.
    pub tools_protected: Vec<PathBuf>,
    /// What could not be protected, in plain words.
    pub protection_notes: Vec<String>,
}

impl Session {
    /// Every file its pipeline pins, with its hash: (path, SHA-256).
    fn pins(&self) -> Vec<(String, String)> {
        self.pipeline.pinned().map(|p| (p.path.display().to_string(), p.sha256.clone())).collect()
    }

    /// What `session/create` warns about for it: `config`'s warnings, what
    /// the kernel cannot enforce (said plainly, never pretended) and what
    /// could not be protected.
    fn warnings(&self, config: Vec<String>) -> Vec<String> {
        let mut warnings = config;
        if self.commands.policy.enabled() {
            warnings.extend(self.sandbox.not_enforced.iter().cloned());
        }
        warnings.extend(self.protection_notes.iter().cloned());
        warnings
    }
}

/// A session as `run/start` and `session/close` find it.
enum Found {
    /// In memory (loaded now if it was not): its actor.
    Live(Handle),
    /// Closed: there is nothing to load.
    Closed,
}

pub(crate) fn random_id(prefix: &str) -> String {
    format!("{prefix}{:016x}", rand::random::<u64>())
}

/// `base_dir` must be an absolute path of an existing directory.
fn check_base_dir(base_dir: &str) -> Result<PathBuf, SessionError> {
    let p = Path::new(base_dir);
    if !p.is_absolute() {
        return Err(SessionError::Config(format!("base_dir {base_dir:?} is not absolute; pass an absolute path")));
    }
    let canon = p
        .canonicalize()
        .map_err(|e| SessionError::Config(format!("base_dir {base_dir}: {e}; pass an existing directory")))?;
    if !canon.is_dir() {
        return Err(SessionError::Config(format!("base_dir {base_dir} is not a directory")));
    }
    if canon.parent().is_none() {
        return Err(SessionError::Config("base_dir / (the filesystem root) is never allowed".into()));
    }
    Ok(canon)
}

impl Sessions {
    /// Open the registry on the daemon's `services`: runs the store says
    /// were in flight when the daemon last stopped are marked interrupted,
    /// each with its terminal `run_finished` event.
    pub fn open(services: &Services, settings: SessionSettings, shutdown: Shutdown) -> Result<Sessions, StoreError> {
        let store = services.store.clone();
        let shared = Arc::new(Shared {
            store: store.clone(),
            logs: Logs::new(store.clone()),
            http: std::sync::OnceLock::new(),
            llm_slots: Semaphore::new(settings.max_llm_calls.max(1)),
            runner: services.runner.clone(),
            hooks: services.hooks.clone(),
            mcp: services.mcp.clone(),
            approvals: services.approvals.clone(),
            buffers: services.buffers.clone(),
            cache: services.cache.clone(),
            changes: services.changes.clone(),
            worktrees: worktree::Worktrees::new(settings.worktrees_dir.clone()),
            subagents: subagents::Registry::new(settings.max_subagents),
            settings,
            shutdown,
            callers: caller::Callers::default(),
        });
        for run in store.unfinished_runs()? {
            let (result, report) = run::lost_run(&store, &run);
            // On a full disk this waits for nothing: the daemon still
            // starts and serves reads, and the next start marks the run.
            match shared.logs.log(&run.session_id).finish_now(&result, &report) {
                Ok(_) => tracing::warn!(
                    "run {} of session {} was in flight when the daemon stopped; marked interrupted",
                    run.id,
                    run.session_id
                ),
                Err(e) => tracing::error!(
                    "run {} of session {} was in flight when the daemon stopped and cannot be marked interrupted yet: {e}",
                    run.id,
                    run.session_id
                ),
            }
        }
        let live = Arc::new(Live::new(shared.settings.live));
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            // Idle sessions leave memory.
            if let Some(timeout) = shared.settings.live.idle_timeout {
                let (live, shutdown) = (Arc::downgrade(&live), shared.shutdown.clone());
                rt.spawn(async move { shutdown.sweep_until_stopped(live, timeout, Live::sweep).await });
            }
        }
        Ok(Sessions { shared, live })
    }

    /// The effective configuration `session/create` would use.
    pub fn resolve_config(&self, base_dir: &str, request: Option<&Value>) -> Result<EffectiveConfig, SessionError> {
        let base = check_base_dir(base_dir)?;
        config::load(&base, self.shared.settings.global_config.as_deref(), request)
            .map_err(|e| SessionError::Config(e.to_string()))
    }

    /// A caller's environment as sent, shared with sessions that have the
    /// same; `None`: the daemon's.
    pub(super) fn caller_env(
        &self,
        vars: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<Option<crate::environment::CallerEnv>, SessionError> {
        match vars {
            None => Ok(None),
            Some(vars) => {
                let vars =
                    crate::environment::CallerEnv::check(vars).map_err(|e| SessionError::Config(e.to_string()))?;
                Ok(Some(self.shared.callers.share(vars)))
            }
        }
    }

    /// `session/create`: a new session of `base_dir`, fresh or `from`
    /// another (see `configure.rs`), in a git worktree of its own with
    /// `worktree` (undone if the session cannot be made); `env` is the
    /// caller's environment (`None`: the daemon's, or the source's).
    pub async fn create(&self, p: SessionCreateParams) -> Result<SessionCreateResult, SessionError> {
        let base = check_base_dir(&p.base_dir)?;
        let id = SessionId(random_id("s_"));
        if !p.worktree {
            return self.create_in(base, id, p, None, None).await;
        }
        let _held = self.worktree_lock().await;
        let made = self.make_worktree(&base, &id).await?;
        let created = self.create_in(base, id, p, Some(&made), None).await;
        if created.is_err() {
            self.discard_worktree(&made).await;
        }
        created
    }

    /// [`Sessions::create`] of session `id` in `base`, in `made` if given.
    async fn create_in(
        &self,
        base: PathBuf,
        id: SessionId,
        p: SessionCreateParams,
        made: Option<&worktree::Made>,
        parent: Option<swival_protocol::SubagentOf>,
    ) -> Result<SessionCreateResult, SessionError> {
        let seed = self.seed(&base, p.config.map(|c| Value::Object(c.0)), p.env, p.from.as_ref())?;
        let (project, accepted) = self.admit_project(&base, p.trust, seed.accepted.as_deref())?;
        let global = self.shared.settings.global_config.as_deref();
        let mut effective = config::load_with(&base, global, project.as_ref(), seed.request.as_ref())
            .map_err(|e| SessionError::Config(e.to_string()))?;
        // Keys that load but do nothing are said once, here (a reload
        // of the same config stays quiet).
        let config_warnings = std::mem::take(&mut effective.warnings);
        // Keys in the request stay in memory; the store never sees them.
        let mut stored_request = seed.request.unwrap_or(Value::Null);
        let caller = caller::Caller { env: seed.env, secrets: caller::take_secrets(&mut stored_request) };
        let now = crate::clock::now();
        let row = SessionRow {
            id: id.clone(),
            base_dir: base.display().to_string(),
            title: p.title,
            config: public_config(&effective),
            request: stored_request,
            created_at: now.clone(),
            last_used_at: now,
            closed: false,
            last_seq: 0,
            run_count: 0,
            cost_usd: None,
            worktree: made.map(|m| m.row.clone()),
            parent,
        };
        let (session, parts) = self.build(&row, effective, seed.messages, caller.env.clone(), &seed.pins, true)?;
        // A review that cannot read its criteria is a config error now,
        // not an answer let through later.
        if let Some(why) = session.pipeline.reviewer.as_ref().and_then(crate::pipeline::reviewer::Reviewer::unreadable)
        {
            return Err(SessionError::Config(why));
        }
        let messages = parts.conversation.messages().iter().map(crate::message::Message::stored).collect();
        self.shared.store.create_session(&row, accepted, session.pins(), messages).await?;
        self.shared.callers.set(&id, caller);
        let mut warnings = session.warnings(config_warnings);
        warnings.extend(made.iter().flat_map(|m| m.warnings.iter().cloned()));
        for message in &warnings {
            session.events.emit(None, EventKind::Warning { message: message.clone() });
        }
        self.hold(session, parts, false);
        let worktree = row.worktree.as_ref().map(worktree::info);
        Ok(SessionCreateResult {
            session_id: id,
            config: swival_protocol::ConfigKeys::of(row.config),
            warnings,
            worktree,
        })
    }

    /// A session's actor, loading the session from the store if it is not
    /// in memory; a closed session is not loaded.
    fn find(&self, id: &SessionId) -> Result<Found, SessionError> {
        if let Some(handle) = self.live.get(id) {
            return Ok(Found::Live(handle));
        }
        let row = self.shared.store.session(id)?.ok_or_else(|| SessionError::NotFound(id.clone()))?;
        if row.closed {
            return Ok(Found::Closed);
        }
        let (session, parts) = self.load(&row, true)?;
        Ok(Found::Live(self.hold(session, parts, true)))
    }

    /// Build a stored session in memory, with the config it was created
    /// with (a project file as the user trusted it) and, when
    /// `conversation`, its messages.
    fn load(&self, row: &SessionRow, conversation: bool) -> Result<(Arc<Session>, Parts), SessionError> {
        let id = &row.id;
        let effective = self.effective(row, &configure::full_request(&self.shared, row)).map_err(|e| match e {
            SessionError::Untrusted(why) => SessionError::Untrusted(format!("session {id} cannot be loaded: {why}")),
            SessionError::Config(why) => SessionError::Config(format!("session {id} can no longer be loaded: {why}")),
            other => other,
        })?;
        let messages = if conversation { self.shared.store.messages(id)? } else { Vec::new() };
        let pins = self.shared.store.session_pins(id)?;
        self.build(row, effective, messages, self.shared.callers.get(id).env, &pins, conversation)
    }

    /// A session's fixed part (config, pipeline, sandbox), loaded and
    /// held in memory as a run would.
    #[cfg(test)]
    pub(super) fn session(&self, id: &SessionId) -> Result<Arc<Session>, SessionError> {
        match self.find(id)? {
            Found::Live(handle) => Ok(handle.session),
            Found::Closed => Ok(self.inspect(id)?),
        }
    }

    /// Hold `session` in memory with an actor owning `parts`, unless a copy
    /// is held already (loaded meanwhile by another caller): that one's
    /// handle is returned and this copy dropped. `loaded`: built from the
    /// store (not just created).
    fn hold(&self, session: Arc<Session>, mut parts: Parts, loaded: bool) -> Handle {
        let (handle, rx) = Handle::new(session);
        if let Err(held) = self.live.insert(handle.clone()) {
            return held;
        }
        // A session in use leases its MCP servers (started by its first
        // run) and clears the spill files its earlier runs left.
        let session = &handle.session;
        *parts.tools.mcp_mut() =
            crate::mcp::SessionMcp::new(&self.shared.mcp, session.pipeline.mcp.clone(), session.base_dir.clone());
        crate::sandbox::spill::sweep(&session.base_dir);
        // A close stored by the copy that held the session before is seen
        // here: that copy left the registry only after storing it.
        let closed = loaded && self.shared.store.is_closed(&handle.session.id).unwrap_or(false);
        Actor::spawn(self.shared.clone(), &self.live, &handle, rx, parts, closed);
        handle
    }

    /// `session/close`: cancel its run, refuse further runs. The session
    /// leaves memory now, or when its run has ended.
    pub async fn close(&self, id: &SessionId) -> Result<SessionInfo, SessionError> {
        loop {
            match self.find(id)? {
                Found::Closed => break,
                Found::Live(handle) => match handle.ask(|reply| Command::Close { reply }).await {
                    Ok(stored) => {
                        stored?;
                        break;
                    }
                    // It left memory before reading this: load it again.
                    Err(mailbox::Gone) => continue,
                },
            }
        }
        self.shared.callers.forget(id);
        let row = self.shared.store.session(id)?.ok_or_else(|| SessionError::NotFound(id.clone()))?;
        Ok(info(&row, false))
    }

    /// `session/subscribe`: a cursor over the events from `from` (stored,
    /// then live). The session is not loaded: its log is shared with its
    /// copy in memory whenever there is one.
    pub fn subscribe(&self, id: &SessionId, from: u64) -> Result<events::Cursor, SessionError> {
        self.shared.store.session(id)?.ok_or_else(|| SessionError::NotFound(id.clone()))?;
        Ok(self.shared.logs.log(id).cursor(from))
    }

    /// `Ok` when session `id` is stored (closed or not).
    pub fn check_exists(&self, id: &SessionId) -> Result<(), SessionError> {
        self.shared.store.session(id)?.map(drop).ok_or_else(|| SessionError::NotFound(id.clone()))
    }

    /// Session `id`'s base directory (the checkout, for a worktree session).
    pub fn base_dir(&self, id: &SessionId) -> Result<PathBuf, SessionError> {
        let row = self.shared.store.session(id)?.ok_or_else(|| SessionError::NotFound(id.clone()))?;
        Ok(PathBuf::from(row.base_dir))
    }

    /// Session `id`'s `fetch_allow_networks` (none when it cannot be
    /// loaded): what its webhooks may reach besides public addresses.
    pub fn fetch_allow(&self, id: &SessionId) -> Vec<crate::config::Cidr> {
        self.inspect(id).map(|s| s.config.config.fetch_allow_networks.clone()).unwrap_or_default()
    }

    /// `Ok` when session `id` is stored and not closed.
    pub fn check_open(&self, id: &SessionId) -> Result<(), SessionError> {
        self.check_exists(id)?;
        match self.shared.store.is_closed(id)? {
            true => Err(SessionError::Closed(id.clone())),
            false => Ok(()),
        }
    }

    /// Store and broadcast an event of session `id` (of its `run`, when
    /// given), whether or not the session is in memory.
    pub fn emit(&self, id: &SessionId, run: Option<&RunId>, kind: EventKind) {
        self.shared.logs.log(id).emit(run, kind);
    }

    /// Sessions held in memory right now (`daemon/status`).
    pub fn live_sessions(&self) -> usize {
        self.live.session_count()
    }

    /// Runs in flight right now (`daemon/status`).
    pub fn runs_in_flight(&self) -> usize {
        self.live.run_count()
    }
}
