//! What sessions leave in memory, and what a panicking run leaves behind.
//! Runs here talk to a provider address that refuses connections, so they
//! end at once with an error.

use super::*;
use swival_protocol::{Outcome, SessionState};

struct Fixture {
    /// Holds the database, the cache and the project.
    dir: tempfile::TempDir,
    /// The registry under test.
    sessions: Sessions,
}

fn fixture(max_sessions: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("project")).unwrap();
    let services = Services {
        store: Arc::new(Store::open(&dir.path().join("db.sqlite")).unwrap()),
        runner: Arc::new(ProcessRunner::new(4)),
        mcp: crate::mcp::McpPool::new(crate::mcp::McpSettings {
            idle: Duration::from_secs(60),
            call_timeout: Duration::from_secs(60),
            start_timeout: Duration::from_secs(60),
            pid_dir: dir.path().join("mcp"),
        }),
        hooks: Arc::default(),
        approvals: Arc::default(),
        buffers: Arc::default(),
        cache: Arc::new(LazyCache::new(dir.path().join("cache.db"), 1 << 20)),
        changes: None,
    };
    let settings = SessionSettings {
        global_config: None,
        max_llm_calls: 4,
        backoff_base: Duration::ZERO,
        sandbox_caps: SandboxCapabilities::none("unit test"),
        socket: None,
        daemon_dirs: Vec::new(),
        approval_timeout: Duration::from_secs(60),
        max_subagents: 4,
        worktrees_dir: dir.path().join("worktrees"),
        live: LiveLimits { max_sessions, idle_timeout: Some(Duration::from_secs(60)) },
    };
    let sessions = Sessions::open(&services, settings, crate::shutdown::Shutdown::new()).unwrap();
    Fixture { dir, sessions }
}

impl Fixture {
    async fn create(&self) -> SessionId {
        let config = serde_json::json!({
            "provider": "generic", "base_url": "http://127.0.0.1:9/v1", "model": "m",
            "retries": 1, "no_history": true, "cache": false,
        });
        let base = self.dir.path().join("project");
        let params = SessionCreateParams {
            base_dir: base.to_str().unwrap().to_owned(),
            config: Some(swival_protocol::ConfigKeys::of(config)),
            title: None,
            trust: false,
            env: None,
            from: None,
            worktree: false,
        };
        self.sessions.create(params).await.unwrap().session_id
    }
}

#[tokio::test]
async fn a_panicking_run_ends_as_error_with_run_finished_and_leaves_the_session_idle() {
    let f = fixture(16);
    let id = f.create().await;
    let run = f.sessions.start_run(&id, run::PANIC_TASK.to_owned(), None).await.unwrap();
    let result = f.sessions.wait(&run).await.unwrap();
    assert_eq!(result.outcome, Outcome::Error);
    assert!(result.error.as_deref().unwrap_or_default().contains("internal error"), "{result:?}");
    let events = f.sessions.shared.store.events_from(&id, 1, 100).unwrap();
    let finished = events.iter().filter(|e| matches!(e.kind, EventKind::RunFinished(_))).count();
    assert_eq!(finished, 1, "{events:?}");
    assert_eq!(f.sessions.detail(&id).unwrap().info.state, SessionState::Idle);
    assert_eq!(serde_json::to_value(f.sessions.report(&run).unwrap()).unwrap()["result"]["outcome"], "error");
    assert_eq!(f.sessions.runs_in_flight(), 0);
    // The copy that lost its conversation is gone; the next run loads the
    // session again from the store, with the conversation so far.
    assert_eq!(f.sessions.live_sessions(), 0);
    let next = f.sessions.start_run(&id, "again", None).await.expect("the session is not busy");
    assert_ne!(f.sessions.wait(&next).await.unwrap().outcome, Outcome::Success);
    let tasks: Vec<String> = f.sessions.detail(&id).unwrap().runs.into_iter().map(|r| r.task).collect();
    assert_eq!(tasks, [run::PANIC_TASK, "again"]);
}

#[tokio::test]
async fn closed_sessions_and_finished_runs_leave_memory_and_reads_load_nothing() {
    let f = fixture(16);
    let id = f.create().await;
    assert_eq!(f.sessions.live_sessions(), 1);
    let run = f.sessions.start_run(&id, "task", None).await.unwrap();
    let result = f.sessions.wait(&run).await.unwrap();
    assert_eq!(f.sessions.runs_in_flight(), 0);
    // Waiting again, after the run is forgotten, reads the store.
    assert_eq!(f.sessions.wait(&run).await.unwrap(), result);
    f.sessions.close(&id).await.unwrap();
    assert_eq!(f.sessions.live_sessions(), 0);
    let detail = f.sessions.detail(&id).unwrap();
    assert_eq!(detail.info.state, SessionState::Closed);
    assert_eq!(detail.runs.len(), 1);
    assert!(!detail.messages.is_empty());
    assert_eq!(f.sessions.list().unwrap().len(), 1);
    f.sessions.report(&run).unwrap();
    drop(f.sessions.subscribe(&id, 1).unwrap());
    assert!(matches!(f.sessions.start_run(&id, "more", None).await, Err(SessionError::Closed(_))));
    assert!(!f.sessions.cancel(&run).unwrap());
    assert_eq!(f.sessions.live_sessions(), 0, "reading a closed session does not keep it in memory");
}

#[tokio::test]
async fn idle_sessions_past_the_cap_go_least_recently_used_first_and_come_back() {
    let f = fixture(2);
    let (a, b) = (f.create().await, f.create().await);
    f.sessions.session(&a).unwrap();
    let c = f.create().await;
    assert_eq!(f.sessions.live_sessions(), 2);
    let held: Vec<bool> = [&a, &b, &c].iter().map(|id| f.sessions.live.get(id).is_some()).collect();
    assert_eq!(held, [true, false, true], "b was used least recently");
    // b loads again from the store and can run.
    let run = f.sessions.start_run(&b, "task", None).await.unwrap();
    f.sessions.wait(&run).await.unwrap();
    assert_eq!(f.sessions.live_sessions(), 2);
}

#[tokio::test]
async fn the_sweep_drops_idle_sessions_but_never_one_with_a_run_in_flight() {
    let f = fixture(16);
    let id = f.create().await;
    let first = f.sessions.session(&id).unwrap();
    let run = f.sessions.start_run(&id, run::HOLD_TASK.to_owned(), None).await.unwrap();
    let later = std::time::Instant::now() + Duration::from_secs(3600);
    f.sessions.live.sweep(later);
    assert_eq!(f.sessions.live_sessions(), 1, "a session with a run in flight stays");
    assert!(f.sessions.cancel(&run).unwrap());
    f.sessions.wait(&run).await.unwrap();
    f.sessions.live.sweep(later);
    assert_eq!(f.sessions.live_sessions(), 0);
    // The copy that left is never used again: the next use loads another.
    assert!(!Arc::ptr_eq(&f.sessions.session(&id).unwrap(), &first));
}

#[tokio::test]
async fn a_second_run_on_a_busy_session_is_refused_and_close_cancels_the_run() {
    let f = fixture(16);
    let id = f.create().await;
    let run = f.sessions.start_run(&id, run::HOLD_TASK.to_owned(), None).await.unwrap();
    let busy = f.sessions.start_run(&id, "second", None).await;
    assert!(matches!(&busy, Err(SessionError::Busy { run: r, .. }) if *r == run), "{:?}", busy.err());
    f.sessions.close(&id).await.unwrap();
    assert_eq!(f.sessions.wait(&run).await.unwrap().outcome, Outcome::Cancelled);
    assert_eq!(f.sessions.live_sessions(), 0, "a closed session leaves memory when its run ends");
    assert!(matches!(f.sessions.start_run(&id, "third", None).await, Err(SessionError::Closed(_))));
}

#[tokio::test]
async fn a_subscriber_and_the_session_in_memory_share_one_event_log() {
    let f = fixture(16);
    let id = f.create().await;
    let log = f.sessions.shared.logs.log(&id);
    let session = f.sessions.session(&id).unwrap();
    let mut live = log.inner.tx.subscribe();
    session.events.emit(None, EventKind::Warning { message: "w".into() });
    // Broadcast by the store writer once committed.
    assert!(matches!(live.recv().await.unwrap().kind, EventKind::Warning { .. }));
}
