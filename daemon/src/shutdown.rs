//! The shutdown signal: one small cloneable handle passed to every task that
//! must stop when the daemon stops (accept loop, connections, the watchdog).

use std::sync::Arc;
use tokio::sync::watch;

/// A one-way latch: once triggered, every waiter wakes and stays woken.
#[derive(Clone, Debug)]
pub struct Shutdown {
    /// `true` once shutdown has begun.
    tx: Arc<watch::Sender<bool>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    /// A latch that has not been triggered.
    pub fn new() -> Self {
        Shutdown { tx: Arc::new(watch::channel(false).0) }
    }

    /// Begin shutting down. Triggering twice is harmless.
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    /// Whether shutdown has begun.
    pub fn is_triggered(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once shutdown has begun (at once if it already has).
    pub async fn wait(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives in `self`, so the channel cannot close under us.
        let _ = rx.wait_for(|stopping| *stopping).await;
    }
}
