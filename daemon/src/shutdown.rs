//! Shutdown: one small cloneable handle passed to everything that must stop
//! when the daemon stops. It is both the signal (a cancellation every task
//! watches) and the list of work the daemon waits for before it exits
//! (connections with their in-flight requests, runs recording their ends).
//!
//! Triggering wakes every watcher at once; [`Shutdown::drain`] then waits,
//! for at most the grace period, until every tracked task has ended. A task
//! that must not be cut off by the process exiting (a reply still being
//! written) is spawned through [`Shutdown::spawn`]; a task that only has to
//! stop watches [`Shutdown::wait`] or a [`Shutdown::child_token`].

use std::future::Future;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The daemon's shutdown: triggered once, then drained.
#[derive(Clone, Debug, Default)]
pub struct Shutdown {
    /// Cancelled once shutdown has begun.
    stopping: CancellationToken,
    /// Tasks the daemon waits for (within the grace period) before it exits.
    tasks: TaskTracker,
}

impl Shutdown {
    /// A shutdown that has not begun.
    pub fn new() -> Self {
        Self::default()
    }

    /// Begin shutting down. Triggering twice is harmless.
    pub fn trigger(&self) {
        self.stopping.cancel();
    }

    /// Whether shutdown has begun.
    pub fn is_triggered(&self) -> bool {
        self.stopping.is_cancelled()
    }

    /// Resolves once shutdown has begun (at once if it already has).
    pub async fn wait(&self) {
        self.stopping.cancelled().await;
    }

    /// A token cancelled when shutdown begins, and cancellable on its own
    /// (a run's cancel switch) without triggering shutdown.
    pub fn child_token(&self) -> CancellationToken {
        self.stopping.child_token()
    }

    /// Run `task`, and have [`Shutdown::drain`] wait for it. Tasks spawned
    /// after draining began are still waited for.
    pub fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tasks.spawn(task)
    }

    /// Have [`Shutdown::drain`] wait while the returned token lives: for
    /// work inside a task that is not itself waited for (a run inside its
    /// session's actor).
    pub fn hold(&self) -> tokio_util::task::task_tracker::TaskTrackerToken {
        self.tasks.token()
    }

    /// Call `sweep` on `target` with the time a few times per `period`
    /// (every quarter of it, between once a second and once a minute) until
    /// shutdown begins or `target` is dropped: the idle sweeps of sessions
    /// and of prespawned processes.
    pub async fn sweep_until_stopped<T>(
        &self,
        target: std::sync::Weak<T>,
        period: Duration,
        sweep: impl Fn(&T, Instant),
    ) {
        let every = (period / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = self.wait() => return,
            }
            let Some(target) = target.upgrade() else { return };
            sweep(&target, Instant::now());
        }
    }

    /// Wait for every task spawned through [`Shutdown::spawn`] to end, for
    /// at most `grace`; `false` when some were still running at its end
    /// (they are dropped with the runtime when the daemon exits).
    pub async fn drain(&self, grace: Duration) -> bool {
        self.tasks.close();
        tokio::time::timeout(grace, self.tasks.wait()).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn trigger_wakes_waiters_and_child_tokens() {
        let shutdown = Shutdown::new();
        let child = shutdown.child_token();
        let waiter = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { shutdown.wait().await }
        });
        assert!(!shutdown.is_triggered());
        shutdown.clone().trigger();
        waiter.await.unwrap();
        assert!(shutdown.is_triggered());
        assert!(child.is_cancelled());
    }

    #[tokio::test]
    async fn a_child_token_cancelled_alone_does_not_trigger_shutdown() {
        let shutdown = Shutdown::new();
        shutdown.child_token().cancel();
        assert!(!shutdown.is_triggered());
    }

    #[tokio::test]
    async fn drain_waits_for_tracked_tasks_spawned_before_and_during_it() {
        let shutdown = Shutdown::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let late = shutdown.clone();
        shutdown.spawn(async move {
            // A task that starts another on its way out (a connection
            // handing over to its writer) is waited for too.
            let _ = rx.await;
            late.spawn(async {});
        });
        let drained = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { shutdown.drain(Duration::from_secs(3600)).await }
        });
        tx.send(()).unwrap();
        assert!(drained.await.unwrap());
    }

    #[tokio::test]
    async fn drain_gives_up_after_the_grace_period() {
        let shutdown = Shutdown::new();
        shutdown.spawn(std::future::pending::<()>());
        assert!(!shutdown.drain(Duration::ZERO).await);
    }
}
