//! The inbox: what background work did while the user was away. Goals
//! and loops write their outcomes here ([`Inbox::ran`]); a background run
//! is watched from its start ([`Inbox::watch`]): an approval it waits for
//! is written at once (it never approves itself), and a detached run's end
//! when it comes. Entries are kept in the store with their session.

use crate::session::Sessions;
use crate::store::Store;
use std::sync::Arc;
use swival_protocol::{
    ChangesRef, EventKind, InboxEntry, InboxListParams, InboxListResult, InboxTrigger, RunChangesParams, RunId,
    RunResult, SessionId,
};

/// What a background run is, for its entries.
#[derive(Debug, Clone)]
pub struct Source {
    /// What started it.
    pub trigger: InboxTrigger,
    /// The goal or loop id.
    pub id: Option<String>,
    /// What was asked.
    pub title: String,
    /// Where its entries are also posted.
    pub webhook: Option<String>,
    /// Files its earlier runs changed (a goal's), listed with the run's.
    pub files: Vec<String>,
    /// The runs that changed them.
    pub changed_by: Vec<RunId>,
}

impl Source {
    /// A detached run of `task` (`run/start` with `inbox: true`).
    pub fn detached(task: &str) -> Source {
        let (webhook, files, changed_by) = (None, Vec::new(), Vec::new());
        Source { trigger: InboxTrigger::Detached, id: None, title: task.to_owned(), webhook, files, changed_by }
    }
}

/// The inbox.
pub struct Inbox {
    /// Where entries are kept.
    store: Arc<Store>,
    /// Runs, their changes and events.
    sessions: Arc<Sessions>,
    /// Tokens background runs may use per day (`max_background_tokens_per_day`).
    daily: Option<u64>,
    /// Tell the desktop of each entry (`desktop_notifications`).
    notify: bool,
    /// Each entry once written, for `inbox/subscribe`.
    written: tokio::sync::broadcast::Sender<InboxEntry>,
}

impl Inbox {
    /// The inbox of `store`.
    pub fn new(store: Arc<Store>, sessions: Arc<Sessions>, daily: Option<u64>, notify: bool) -> Arc<Inbox> {
        let (written, _) = tokio::sync::broadcast::channel(64);
        Arc::new(Inbox { store, sessions, daily, notify, written })
    }

    /// Entries as they are written (`inbox/subscribe`).
    pub fn follow(&self) -> tokio::sync::broadcast::Receiver<InboxEntry> {
        self.written.subscribe()
    }

    /// Count `tokens` a background run used, today.
    pub async fn spend(&self, tokens: u64) {
        if let Err(e) = self.store.add_background_tokens(&today(), tokens).await {
            tracing::warn!("background tokens could not be counted: {e}");
        }
    }

    /// Tokens background runs used today.
    pub fn spent_today(&self) -> u64 {
        self.store.background_tokens(&today()).unwrap_or(0)
    }

    /// Why no background run may start now (the daily ceiling is reached).
    pub fn ceiling(&self) -> Option<String> {
        let limit = self.daily?;
        let used = self.spent_today();
        (used >= limit).then(|| {
            format!(
                "background runs used {used} tokens today, the most max_background_tokens_per_day ({limit}) allows; \
                 it starts again tomorrow, or raise max_background_tokens_per_day in swivald.toml"
            )
        })
    }

    /// The daily ceiling, as set.
    pub fn daily(&self) -> Option<u64> {
        self.daily
    }

    /// `inbox/list`.
    pub fn list(&self, p: &InboxListParams) -> Result<InboxListResult, crate::session::SessionError> {
        let limit = p.limit.unwrap_or(50).clamp(1, 1000);
        let (entries, last_seq) = self.store.inbox(p.after_seq.unwrap_or(0), limit)?;
        Ok(InboxListResult { entries, last_seq })
    }

    /// The session's last event seq now: a run started after this is
    /// watched from the next one.
    pub fn mark(&self, session: &SessionId) -> u64 {
        self.store.session(session).ok().flatten().map_or(0, |row| row.last_seq)
    }

    /// Watch `run` of `session` from event `after`: an approval it waits
    /// for is an entry; with `end`, so is its end.
    pub fn watch(self: &Arc<Self>, session: &SessionId, run: &RunId, after: u64, source: Source, end: bool) {
        let Ok(mut cursor) = self.sessions.subscribe(session, after + 1) else { return };
        let (inbox, session, run) = (self.clone(), session.clone(), run.clone());
        tokio::spawn(async move {
            while let Ok(Some(event)) = cursor.next().await {
                if event.run_id.as_ref() != Some(&run) {
                    continue;
                }
                match &event.kind {
                    EventKind::ApprovalRequested { approval_id, command, .. } => {
                        let mut entry = inbox.entry(&source, &session, Some(&run), "waiting_approval");
                        entry.detail = Some(format!("waits for your approval to run: {command}"));
                        entry.approval_id = Some(approval_id.clone());
                        inbox.put(&source, entry).await;
                    }
                    EventKind::RunFinished(_) => {
                        if end {
                            let result = inbox.sessions.wait(&run).await;
                            if let Ok(result) = result {
                                let outcome = result.outcome.as_str().to_owned();
                                inbox.ran(&source, &session, &result, &outcome, result.error.clone()).await;
                            }
                        }
                        return;
                    }
                    _ => {}
                }
            }
        });
    }

    /// An entry for a background run that ended as `result`: its outcome
    /// in words of its trigger, the files it changed, tokens and cost; the
    /// files it changed (`None`: not known, its changes not recorded).
    pub async fn ran(
        &self,
        source: &Source,
        session: &SessionId,
        result: &RunResult,
        outcome: &str,
        detail: Option<String>,
    ) -> Option<Vec<String>> {
        let mut entry = self.entry(source, session, Some(&result.run_id), outcome);
        let answer = result.answer.as_deref().map(|a| a.chars().take(300).collect::<String>());
        entry.detail = detail.or(answer);
        entry.cost_usd = result.stats.cost_usd;
        let counted = result.stats.prompt_tokens.map(|p| p + result.stats.completion_tokens.unwrap_or(0));
        entry.tokens = counted;
        entry.started_at = self.store.run(&result.run_id).ok().flatten().map(|r| r.started_at);
        let which = ChangesRef { run_id: Some(result.run_id.0.clone()), session_id: None };
        let known = match self.sessions.changes(RunChangesParams { which, no_diff: true }).await {
            Ok(changes) => {
                entry.files = changes.files.into_iter().map(|f| f.path).collect();
                if !entry.files.is_empty() && !entry.changed_by.contains(&result.run_id) {
                    entry.changed_by.push(result.run_id.clone());
                }
                true
            }
            Err(_) => false,
        };
        let files = known.then(|| entry.files.clone());
        // A goal's entry also lists what its earlier runs changed.
        for f in &source.files {
            if !entry.files.contains(f) {
                entry.files.push(f.clone());
            }
        }
        self.put(source, entry).await;
        files
    }

    /// An entry about `session` (and `run`), not yet numbered.
    pub fn entry(&self, source: &Source, session: &SessionId, run: Option<&RunId>, outcome: &str) -> InboxEntry {
        let worktree = self.store.session(session).ok().flatten().is_some_and(|r| r.worktree.is_some());
        InboxEntry {
            seq: 0,
            created_at: crate::clock::now(),
            trigger: source.trigger,
            source_id: source.id.clone(),
            session_id: session.clone(),
            run_id: run.cloned(),
            title: source.title.chars().take(200).collect(),
            outcome: outcome.to_owned(),
            detail: None,
            files: source.files.clone(),
            changed_by: source.changed_by.clone(),
            worktree,
            started_at: None,
            tokens: None,
            cost_usd: None,
            approval_id: None,
        }
    }

    /// Write `entry` of `source`'s, tell the desktop when asked and post
    /// it to `source`'s webhook; a failure is logged (the work itself is
    /// stored).
    pub async fn put(&self, source: &Source, entry: InboxEntry) {
        let entry = match self.store.put_inbox(entry).await {
            Ok(entry) => entry,
            Err(e) => return tracing::warn!("an inbox entry could not be written: {e}"),
        };
        if self.notify {
            notify(&entry);
        }
        let _ = self.written.send(entry.clone());
        if let Some(url) = source.webhook.clone() {
            let allow = self.sessions.fetch_allow(&entry.session_id);
            let body = serde_json::to_string(&entry).expect("an inbox entry serializes");
            tokio::spawn(async move {
                match crate::sandbox::post_json(&url, body, &allow, std::time::Duration::from_secs(10)).await {
                    Ok(code) if (200..300).contains(&code) => {}
                    Ok(code) => tracing::warn!("the webhook {url} answered {code}"),
                    Err(e) => tracing::warn!("the webhook {url} was not reached: {e}"),
                }
            });
        }
    }
}

/// The daemon's local day, as the ledger keys it.
fn today() -> String {
    chrono::Local::now().format("%Y-%m-%d").to_string()
}

/// Tell the desktop of `entry` through the platform's own tool
/// (`notify-send`, `osascript`) when it is on the daemon's PATH: argv only,
/// no shell, so no text of the model's can become a command.
fn notify(entry: &InboxEntry) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let title = format!("swivald: {}", entry.outcome);
    let body: String = entry.title.chars().take(120).collect();
    let argv: Vec<String> = if let Some(tool) = crate::procs::locate("notify-send", &path) {
        vec![tool.display().to_string(), "--app-name=swivald".into(), "--".into(), title, body]
    } else if let Some(tool) = crate::procs::locate("osascript", &path) {
        let quote = |t: &str| t.replace('\\', "\\\\").replace('"', "\\\"");
        let script = format!("display notification \"{}\" with title \"{}\"", quote(&body), quote(&title));
        vec![tool.display().to_string(), "-e".into(), script]
    } else {
        return;
    };
    tokio::spawn(async move {
        let job = crate::procs::OneShot {
            argv: &argv,
            stdin: b"",
            cwd: std::path::Path::new("/"),
            base: &crate::procs::CallerEnv::Daemon,
            env: &[],
            pins: &[],
            timeout: std::time::Duration::from_secs(10),
            max_stdout: 4096,
        };
        if let Err(e) = crate::procs::run(job, &tokio_util::sync::CancellationToken::new()).await {
            tracing::debug!("the desktop notification failed: {e}");
        }
    });
}
