//! Subagents as child sessions: the registry side of `spawn_subagent`.
//! A child is a session started `from` the parent (its config request,
//! trust, pins and caller environment), in the same base dir (and the
//! same worktree, for a worktree session), with the subagent's turn
//! budget and system prompt, no history, and no subagents of its own; its parent is stored with it, so `session/list`
//! shows where it comes from. The daemon runs at most `max_subagents` at
//! once, all sessions together.

use super::{SessionError, Sessions, Shared};
use crate::agent::subagents::{Child, SubagentHost};
use futures::future::BoxFuture;
use futures::FutureExt as _;
use serde_json::Map;
use std::sync::{Arc, OnceLock, Weak};
use swival_protocol::{RunId, RunResult, SessionCreateParams, SessionFrom, SessionId, SubagentOf};
use tokio::sync::Semaphore;

/// The registry as subagents reach it, and the daemon-wide cap.
pub(super) struct Registry {
    /// The sessions, once the daemon holds them.
    sessions: OnceLock<Weak<Sessions>>,
    /// Subagents running at once, daemon-wide.
    slots: Arc<Semaphore>,
    /// Its size, for messages.
    max: usize,
}

impl Registry {
    /// A registry allowing `max` subagents at once.
    pub(super) fn new(max: usize) -> Registry {
        Registry { sessions: OnceLock::new(), slots: Arc::new(Semaphore::new(max)), max }
    }
}

impl Sessions {
    /// Let runs spawn subagents (the daemon holds its sessions in an `Arc`).
    pub fn serve_subagents(self: &Arc<Self>) {
        let _ = self.shared.subagents.sessions.set(Arc::downgrade(self));
    }
}

/// One run's way to its subagents.
pub(super) struct Host {
    /// The registry.
    sessions: Weak<Sessions>,
    /// The daemon-wide cap.
    slots: Arc<Semaphore>,
    /// Its size.
    max: usize,
    /// The parent session.
    parent: SessionId,
    /// The parent's run.
    run: RunId,
}

impl Host {
    /// The host of run `run` of session `parent`; `None` before the
    /// daemon serves subagents (unit tests).
    pub(super) fn of(shared: &Shared, parent: &SessionId, run: &RunId) -> Option<Host> {
        let sessions = shared.subagents.sessions.get()?.clone();
        let (slots, max) = (shared.subagents.slots.clone(), shared.subagents.max);
        Some(Host { sessions, slots, max, parent: parent.clone(), run: run.clone() })
    }

    /// Make the child session and start its run.
    async fn start_child(&self, child: Child<'_>) -> Result<(SessionId, RunId), String> {
        let sessions = self.sessions.upgrade().ok_or("the daemon is shutting down")?;
        let permit = self.slots.clone().try_acquire_owned().map_err(|_| {
            format!(
                "the daemon already runs {} subagents, its limit (max_subagents in swivald.toml); collect or cancel one, then try again",
                self.max
            )
        })?;
        // The parent's project, not where it works: a child of a worktree
        // session works in the same worktree (`Sessions::worktree_of`).
        let parent_row = sessions.shared.store.session(&self.parent).map_err(|e| e.to_string())?;
        let base_dir = parent_row.ok_or_else(|| format!("session {} is gone", self.parent))?.base_dir;
        let mut config = Map::new();
        config.insert("max_turns".into(), child.max_turns.into());
        config.insert("system_prompt".into(), child.system.into());
        config.insert("subagents".into(), false.into());
        config.insert("no_history".into(), true.into());
        let params = SessionCreateParams {
            base_dir,
            config: Some(config.into()),
            title: Some(format!("{} of {}", child.subagent_id, self.parent)),
            trust: false,
            env: None,
            from: Some(SessionFrom { session_id: self.parent.clone(), conversation: false }),
            worktree: false,
        };
        let parent = SubagentOf {
            session_id: self.parent.clone(),
            run_id: self.run.clone(),
            subagent_id: child.subagent_id.to_owned(),
        };
        let base = std::path::PathBuf::from(&params.base_dir);
        let id = SessionId(super::random_id("s_"));
        let created = sessions.create_in(base, id, params, None, Some(parent)).await.map_err(|e| e.to_string())?;
        let run =
            sessions.start_run(&created.session_id, child.task.to_owned(), None).await.map_err(|e| e.to_string())?;
        // The slot is the daemon's until the child's run ends.
        let (weak, waited) = (self.sessions.clone(), run.clone());
        tokio::spawn(async move {
            if let Some(sessions) = weak.upgrade() {
                let _ = sessions.wait(&waited).await;
            }
            drop(permit);
        });
        Ok((created.session_id, run))
    }
}

impl SubagentHost for Host {
    fn start<'a>(&'a self, child: Child<'a>) -> BoxFuture<'a, Result<(SessionId, RunId), String>> {
        self.start_child(child).boxed()
    }

    fn wait<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Option<RunResult>> {
        async move {
            let sessions = self.sessions.upgrade()?;
            sessions.wait(run).await.ok()
        }
        .boxed()
    }

    fn finished(&self, run: &RunId) -> Option<RunResult> {
        let sessions = self.sessions.upgrade()?;
        sessions.shared.store.run(run).ok().flatten().and_then(|r| r.result)
    }

    fn cancel(&self, run: &RunId) {
        if let Some(sessions) = self.sessions.upgrade() {
            let _: Result<bool, SessionError> = sessions.cancel(run);
        }
    }
}
