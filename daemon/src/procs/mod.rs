//! The one place that spawns processes: filter stages, hooks, reviewers,
//! the `command` provider, the model's commands (through the sandbox
//! helper when the session is confined) and the sandbox probe all start
//! here ([`launch::start`] is the only spawn in the daemon; the invariants
//! test checks it).
//!
//! Every child runs in its own process group and the whole group is killed
//! on timeout, flood, cancellation (run cancel, session close, daemon
//! shutdown) and when its handle is dropped. A daemon-wide limit
//! (`max_children`) bounds the children running at once; calls beyond it
//! wait their turn (cancellably). Policy scripts (`Script`) have their stdin
//! written while stdout and stderr are read, stdout bounded, their pins
//! checked before every spawn and every call, and three modes:
//! - `Oneshot`: Swival's one process per call;
//! - `Prespawn(n)`: `n` processes of the script started ahead and waiting
//!   on stdin, to take spawn time off the call; the pool is refilled in
//!   the background as soon as a call is served, so the next process
//!   starts while the model answers, not beside the one serving a call;
//! - `Persistent`: one long-lived worker speaking one JSON line each way.
//!
//! The model's commands are described by a [`Launch`] (no pins: the
//! sandbox's whitelist and plan decide what runs) and run with stdout and
//! stderr merged ([`ProcessRunner::run_merged`], `merged.rs`).

pub mod cgroup;
mod child;
mod launch;
pub mod limits;
pub mod mcp;
mod merged;
mod persistent;
pub mod pin;

pub use child::{output, output_with_input, run, OneShot, Output};
pub use launch::{kill_group, Io, Launch, Through};
pub use limits::Limits;
pub use merged::{Capture, Ending, Merged};
pub use pin::{locate, Pinned};

pub use crate::environment::{CallerEnv, Env};
use child::{drive, spawn, Spawned};
use persistent::Worker;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;

/// Why a child did not produce an [`Output`].
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// The program could not be started.
    #[error("cannot run {program}: {source}")]
    Spawn { program: String, source: std::io::Error },
    /// It ran past its timeout and was killed with its process group.
    #[error("{program} timed out after {secs}s and was killed")]
    Timeout { program: String, secs: f64 },
    /// It wrote more than the limit to stdout and was killed.
    #[error("{program} wrote more than {limit} bytes to stdout and was killed")]
    Flood { program: String, limit: usize },
    /// The caller cancelled; the process group was killed.
    #[error("{program} was cancelled")]
    Cancelled { program: String },
    /// A pinned policy file is no longer what the session pinned; nothing ran.
    #[error("policy script {path} changed since this session pinned it (sha256 {pinned} when pinned, {now} now), so it was not run; if you made this change, start a new session to accept it")]
    Changed { path: String, pinned: String, now: String },
    /// A persistent worker broke its line protocol or died mid-call.
    #[error("{program}: {message}")]
    Protocol { program: String, message: String },
    /// Reading or writing its pipes failed.
    #[error("talking to {program} failed: {source}")]
    Io { program: String, source: std::io::Error },
}

/// A script to run: what, where, in which environment.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Script {
    /// Program and arguments (never through a shell).
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// The environment it runs in: its caller's, whole.
    pub base: CallerEnv,
    /// Variables set over `base` (Swival's `SWIVAL_*`).
    pub env: Vec<(String, String)>,
    /// The files it runs, as the session pinned them; checked before every
    /// spawn and every call.
    pub pins: Vec<Pinned>,
}

impl std::fmt::Debug for Script {
    /// Variable names only: values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("argv", &self.argv)
            .field("cwd", &self.cwd)
            .field("base", &self.base)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("pins", &self.pins)
            .finish()
    }
}

/// How a script's processes are managed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One fresh process per call.
    Oneshot,
    /// One process per call, taken from `n` started ahead.
    Prespawn(u32),
    /// One long-lived worker, one JSON request and reply per line.
    Persistent,
}

/// One call of a script.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The script.
    pub script: &'a Script,
    /// How its processes are managed.
    pub mode: Mode,
    /// Its input (a JSON document for `Persistent`).
    pub input: &'a [u8],
    /// Kill after this long.
    pub timeout: Duration,
    /// Kill if stdout (or one persistent reply line) grows past this.
    pub max_stdout: usize,
}

/// The daemon-wide process runner.
pub struct ProcessRunner {
    /// Children that may run at once.
    slots: Semaphore,
    /// The size of `slots`.
    max_children: usize,
    /// Prespawned processes, per script and pool size.
    pools: Mutex<HashMap<(Script, u32), Kept<Pool>>>,
    /// Persistent workers, per script.
    workers: Mutex<HashMap<Script, Kept<Worker>>>,
}

/// A prespawn pool or a persistent worker, and when a call last asked for
/// it. A script is one per caller environment and pinned content, so a
/// user who edits a filter or runs from another shell leaves the old one
/// behind: [`ProcessRunner::retire_idle`] stops it.
struct Kept<T> {
    /// The pool or worker; calls hold clones while they use it.
    item: Arc<T>,
    /// When a call last asked for it.
    used: Instant,
}

impl<T> Kept<T> {
    fn new(item: T) -> Kept<T> {
        Kept { item: Arc::new(item), used: Instant::now() }
    }

    /// The item for a call, marked used now.
    fn use_now(&mut self) -> Arc<T> {
        self.used = Instant::now();
        self.item.clone()
    }

    /// Not asked for since `cutoff` and held by no call. Clones are only
    /// made under the map's lock, so this holds while the lock is held.
    fn idle_since(&self, cutoff: Instant) -> bool {
        self.used <= cutoff && Arc::strong_count(&self.item) == 1
    }
}

impl std::fmt::Debug for ProcessRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessRunner").field("max_children", &self.max_children).finish_non_exhaustive()
    }
}

impl ProcessRunner {
    /// A runner allowing `max_children` calls to run at once.
    pub fn new(max_children: usize) -> ProcessRunner {
        let max_children = max_children.max(1);
        ProcessRunner {
            slots: Semaphore::new(max_children),
            max_children,
            pools: Mutex::default(),
            workers: Mutex::default(),
        }
    }

    /// Wait for a free slot (or for `cancel`).
    async fn slot(&self, program: &str, cancel: &CancellationToken) -> Result<SemaphorePermit<'_>, ProcError> {
        let cancelled = || ProcError::Cancelled { program: program.to_owned() };
        tokio::select! {
            s = self.slots.acquire() => s.map_err(|_| cancelled()),
            _ = cancel.cancelled() => Err(cancelled()),
        }
    }

    /// Run one call to completion.
    pub async fn call(&self, call: Call<'_>, cancel: &CancellationToken) -> Result<Output, ProcError> {
        let program = || call.script.argv.first().cloned().unwrap_or_default();
        let _slot = self.slot(&program(), cancel).await?;
        // `spawn` checks the pins of a fresh process. A prespawned process
        // or a running worker was started from the file as it was then;
        // what it serves must still be what was pinned.
        if call.mode != Mode::Oneshot {
            pin::verify_all(&call.script.pins)?;
        }
        match call.mode {
            Mode::Oneshot => {
                let spawned = spawn(call.script)?;
                drive(spawned, call.input, call.timeout, call.max_stdout, cancel).await
            }
            Mode::Prespawn(n) => {
                let pool = self.pool(call.script, n);
                let spawned = pool.take()?;
                let _refill = RefillWhenServed(pool);
                drive(spawned, call.input, call.timeout, call.max_stdout, cancel).await
            }
            Mode::Persistent => {
                let reply = self
                    .worker(call.script)
                    .call(call.script, call.input, call.timeout, call.max_stdout, cancel)
                    .await?;
                Ok(Output {
                    code: Some(0),
                    signal: None,
                    stdout: serde_json::to_vec(&reply).expect("JSON serializes"),
                    stderr: Vec::new(),
                })
            }
        }
    }

    /// Run one of the model's commands in a slot: `launch` must use
    /// [`Io::Merged`]; at most `max_output` bytes of its output are kept.
    /// The timeout counts from the spawn, not from the wait for a slot.
    pub async fn run_merged(
        &self,
        launch: &Launch,
        timeout: Duration,
        max_output: usize,
        cancel: &CancellationToken,
    ) -> Result<Merged, ProcError> {
        debug_assert_eq!(launch.io, Io::Merged);
        let program = launch.program.display().to_string();
        let _slot = self.slot(&program, cancel).await?;
        let started = launch::start(launch, &program)?;
        merged::supervise(started, &program, timeout, max_output, cancel).await
    }

    /// Calls holding a slot now.
    pub fn running(&self) -> usize {
        self.max_children - self.slots.available_permits()
    }

    fn pool(&self, script: &Script, size: u32) -> Arc<Pool> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        pools
            .entry((script.clone(), size))
            .or_insert_with(|| Kept::new(Pool { script: script.clone(), size: size as usize, ready: Mutex::default() }))
            .use_now()
    }

    fn worker(&self, script: &Script) -> Arc<Worker> {
        let mut workers = self.workers.lock().unwrap_or_else(|p| p.into_inner());
        workers.entry(script.clone()).or_insert_with(|| Kept::new(Worker::default())).use_now()
    }

    /// The pid of a script's persistent worker, if it runs.
    pub async fn worker_pid(&self, script: &Script) -> Option<u32> {
        let worker = self.workers.lock().unwrap_or_else(|p| p.into_inner()).get(script).map(|k| k.item.clone());
        match worker {
            Some(w) => w.pid().await,
            None => None,
        }
    }

    /// Kill every prespawned process and persistent worker.
    pub async fn shutdown(&self) {
        self.pools.lock().unwrap_or_else(|p| p.into_inner()).clear();
        let workers: Vec<_> =
            self.workers.lock().unwrap_or_else(|p| p.into_inner()).drain().map(|(_, w)| w.item).collect();
        for w in workers {
            w.stop().await;
        }
    }

    /// Stop the prespawned processes and persistent workers that no call
    /// has asked for in the `idle` before `now` and that no call holds;
    /// the next call for one of their scripts starts afresh. How many pools
    /// and workers were stopped.
    pub fn retire_idle(&self, now: Instant, idle: Duration) -> usize {
        let Some(cutoff) = now.checked_sub(idle) else { return 0 };
        let mut retired = 0;
        // Dropping the last handle kills: a pool's ready processes, a
        // worker's process group.
        self.pools.lock().unwrap_or_else(|p| p.into_inner()).retain(|_, pool| {
            let idle = pool.idle_since(cutoff);
            retired += usize::from(idle);
            !idle
        });
        self.workers.lock().unwrap_or_else(|p| p.into_inner()).retain(|_, worker| {
            let idle = worker.idle_since(cutoff);
            retired += usize::from(idle);
            !idle
        });
        if retired > 0 {
            tracing::info!("stopped {retired} prespawn pool(s) and persistent worker(s) unused for {idle:?}");
        }
        retired
    }
}

/// Processes of one script started ahead, waiting on stdin.
struct Pool {
    /// The script.
    script: Script,
    /// How many to keep ready.
    size: usize,
    /// The ready ones, oldest first (dropping one kills it).
    ready: Mutex<VecDeque<Spawned>>,
}

impl Pool {
    /// The oldest ready process (the likeliest to have finished starting),
    /// or a fresh one when none is ready (the first call, or calls coming
    /// faster than processes start).
    fn take(&self) -> Result<Spawned, ProcError> {
        let taken = {
            let mut ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
            let mut found = None;
            while let Some(mut s) = ready.pop_front() {
                if !s.exited() {
                    found = Some(s);
                    break;
                }
            }
            found
        };
        match taken {
            Some(s) => Ok(s),
            None => spawn(&self.script),
        }
    }

    /// Start processes up to the pool's size. A process is started only if
    /// its files still match their pins (see `spawn`), and checked again
    /// before it serves a call.
    fn refill(&self) {
        loop {
            if self.ready.lock().unwrap_or_else(|p| p.into_inner()).len() >= self.size {
                return;
            }
            match spawn(&self.script) {
                Ok(s) => self.ready.lock().unwrap_or_else(|p| p.into_inner()).push_back(s),
                Err(e) => {
                    tracing::warn!("cannot prespawn {:?}: {e}", self.script.argv);
                    return;
                }
            }
        }
    }
}

/// Refills its pool, off the caller's path, once the call that took a
/// process is over: served, failed, or dropped by a caller that stopped
/// waiting. The next call is at least a model answer away, time enough for
/// an interpreter to start; started any earlier (when the call takes its
/// process) it would compete for the CPU with the process serving it.
struct RefillWhenServed(Arc<Pool>);

impl Drop for RefillWhenServed {
    fn drop(&mut self) {
        let pool = self.0.clone();
        // No runtime left (the daemon is exiting): nothing to refill for.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { pool.refill() });
        }
    }
}

#[cfg(test)]
mod tests;
