//! The registry of open connections: who may connect when the daemon is
//! full, which connections are idle, and closing them.
//!
//! Every admitted connection holds a [`Registration`] (in its stream, so a
//! WebSocket moved into jsonrpsee's own task keeps it) and shares an
//! [`Activity`] with whatever serves it. A connection is *idle* when it has
//! no request in flight and no open subscription: a connection that has
//! sent nothing yet, an HTTP connection still waiting for (the rest of) a
//! request head or between kept-alive requests, a newline-delimited one
//! between requests. When `max_connections` are open, a new connection
//! evicts the one idle the longest; only when every connection is busy is it
//! refused. A reaper closes connections idle past `idle_timeout_s`.
//!
//! Closing is one mechanism for every framing: the connection's
//! cancellation token, which its stream ([`super::prefixed::Prefixed`])
//! turns into an error on the next read or write.

use super::ConnectionCount;
use super::ConnectionGuard;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The open connections, keyed by a number given at admission.
pub(super) struct Registry {
    /// Connections that count against `max`; a closed one leaves at once,
    /// before its task has finished.
    entries: Mutex<HashMap<u64, Arc<Activity>>>,
    /// Next connection number.
    next_id: AtomicU64,
    /// `max_connections`.
    max: usize,
    /// The open-connection count `daemon/status` reports.
    count: Arc<ConnectionCount>,
    /// Zero of the millisecond clock in [`Activity::idle_since_ms`].
    epoch: Instant,
}

/// What one connection is doing, shared by its serving tasks and the registry.
#[derive(Debug)]
pub(super) struct Activity {
    /// The connection's number in the registry.
    id: u64,
    /// The registry's clock zero.
    epoch: Instant,
    /// Requests being handled (HTTP requests, newline-delimited lines, WebSocket calls).
    in_flight: AtomicU32,
    /// Open subscriptions.
    subscriptions: AtomicU32,
    /// When the connection last became idle (or was admitted), in ms since `epoch`.
    idle_since_ms: AtomicU64,
    /// Cancelled when the connection must close (evicted, idle too long).
    close: CancellationToken,
}

/// Keeps a connection in the registry and in the open count; dropped with
/// the connection's stream.
pub(super) struct Registration {
    /// Where to leave.
    registry: Arc<Registry>,
    /// The connection's state.
    activity: Arc<Activity>,
    /// The open count.
    _count: ConnectionGuard,
}

/// A request in flight; the connection is busy while one exists.
pub(super) struct Busy(Arc<Activity>);

impl Registry {
    /// An empty registry admitting up to `max` connections.
    pub(super) fn new(max: u32, count: Arc<ConnectionCount>) -> Arc<Registry> {
        Arc::new(Registry {
            entries: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            max: max as usize,
            count,
            epoch: Instant::now(),
        })
    }

    /// Admit a new connection, evicting the longest-idle one when full;
    /// `None` when full and every connection is busy.
    pub(super) fn admit(self: &Arc<Self>) -> Option<Registration> {
        let mut entries = self.entries.lock().expect("registry lock");
        if entries.len() >= self.max {
            let oldest = longest_idle(&entries)?;
            if let Some(evicted) = entries.remove(&oldest) {
                tracing::debug!("connection limit reached: closing connection {oldest}, the one idle the longest");
                evicted.close.cancel();
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity {
            id,
            epoch: self.epoch,
            in_flight: AtomicU32::new(0),
            subscriptions: AtomicU32::new(0),
            idle_since_ms: AtomicU64::new(millis_since(self.epoch)),
            close: CancellationToken::new(),
        });
        entries.insert(id, activity.clone());
        Some(Registration { registry: self.clone(), activity, _count: self.count.enter() })
    }

    /// Close the connection idle the longest, to free its descriptor;
    /// `false` when every connection is busy.
    pub(super) fn evict_longest_idle(&self) -> bool {
        let mut entries = self.entries.lock().expect("registry lock");
        let Some(oldest) = longest_idle(&entries) else {
            return false;
        };
        if let Some(evicted) = entries.remove(&oldest) {
            evicted.close.cancel();
        }
        true
    }

    /// Close every connection idle for at least `timeout` at `now` (ms
    /// since `epoch`); how many.
    fn close_idle(&self, now: u64, timeout: Duration) -> usize {
        let limit = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let mut entries = self.entries.lock().expect("registry lock");
        let before = entries.len();
        entries.retain(|_, a| {
            let expired = a.is_idle() && now.saturating_sub(a.idle_since_ms.load(Ordering::Relaxed)) >= limit;
            if expired {
                a.close.cancel();
            }
            !expired
        });
        before - entries.len()
    }

    /// Close connections idle past `timeout` until the task is dropped.
    /// Checks ten times per timeout (at most every 5 s), so a connection
    /// closes between `timeout` and 1.1 × `timeout` after it became idle.
    pub(super) async fn reap_idle(self: Arc<Self>, timeout: Duration) {
        let period = (timeout / 10).clamp(Duration::from_millis(10), Duration::from_secs(5));
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let closed = self.close_idle(millis_since(self.epoch), timeout);
            if closed > 0 {
                tracing::debug!("closed {closed} connection(s) idle for {timeout:?} (idle_timeout_s)");
            }
        }
    }
}

/// The idle entry that became idle first.
fn longest_idle(entries: &HashMap<u64, Arc<Activity>>) -> Option<u64> {
    entries
        .values()
        .filter(|a| a.is_idle())
        .min_by_key(|a| (a.idle_since_ms.load(Ordering::Relaxed), a.id))
        .map(|a| a.id)
}

fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl Activity {
    /// Whether nothing is in flight and no subscription is open.
    fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0 && self.subscriptions.load(Ordering::Acquire) == 0
    }

    /// Mark a request in flight until the returned guard drops.
    pub(super) fn busy(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }

    /// A subscription opened on this connection.
    pub(super) fn subscription_opened(&self) {
        self.subscriptions.fetch_add(1, Ordering::AcqRel);
    }

    /// A subscription on this connection ended.
    pub(super) fn subscription_closed(&self) {
        let _ = self.subscriptions.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        self.touch();
    }

    /// Subscriptions open now.
    pub(super) fn subscriptions(&self) -> usize {
        self.subscriptions.load(Ordering::Acquire) as usize
    }

    /// The token that closes this connection.
    pub(super) fn close_token(&self) -> &CancellationToken {
        &self.close
    }

    /// Restart the idle clock (called whenever something in flight ends).
    fn touch(&self) {
        self.idle_since_ms.store(millis_since(self.epoch), Ordering::Relaxed);
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        // The clock first, so the connection is never idle with an old time.
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Registration {
    /// The connection's shared state.
    pub(super) fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry.entries.lock().expect("registry lock").remove(&self.activity.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(max: u32) -> Arc<Registry> {
        Registry::new(max, Arc::new(ConnectionCount::default()))
    }

    #[test]
    fn full_registry_evicts_the_connection_idle_the_longest() {
        let r = registry(3);
        let a = r.admit().unwrap();
        let b = r.admit().unwrap();
        let c = r.admit().unwrap();
        // `a` is busy; of the idle `b` and `c`, `c` became idle first.
        let _busy = a.activity().busy();
        b.activity().idle_since_ms.store(50, Ordering::Relaxed);
        c.activity().idle_since_ms.store(10, Ordering::Relaxed);
        let d = r.admit().expect("an idle connection makes room");
        assert!(c.activity().close_token().is_cancelled());
        assert!(!a.activity().close_token().is_cancelled());
        assert!(!b.activity().close_token().is_cancelled());
        assert!(!d.activity().close_token().is_cancelled());
        assert_eq!(r.count.open(), 4, "the evicted connection counts until its stream is dropped");
        drop(c);
        assert_eq!(r.count.open(), 3);
    }

    #[test]
    fn full_registry_of_busy_connections_refuses() {
        let r = registry(2);
        let a = r.admit().unwrap();
        let b = r.admit().unwrap();
        let _busy = a.activity().busy();
        b.activity().subscription_opened();
        assert!(r.admit().is_none());
        assert!(!r.evict_longest_idle());
        b.activity().subscription_closed();
        assert!(r.admit().is_some(), "b is idle once its subscription ends");
        assert!(b.activity().close_token().is_cancelled());
    }

    #[test]
    fn dropped_registration_frees_its_slot() {
        let r = registry(1);
        let a = r.admit().unwrap();
        let _busy = a.activity().busy();
        assert!(r.admit().is_none());
        drop(_busy);
        drop(a);
        assert!(r.admit().is_some());
    }

    #[test]
    fn reaper_closes_only_connections_idle_past_the_timeout() {
        let r = registry(10);
        let idle = r.admit().unwrap();
        let busy = r.admit().unwrap();
        let subscribed = r.admit().unwrap();
        let fresh = r.admit().unwrap();
        let _guard = busy.activity().busy();
        subscribed.activity().subscription_opened();
        for reg in [&idle, &busy, &subscribed] {
            reg.activity().idle_since_ms.store(0, Ordering::Relaxed);
        }
        fresh.activity().idle_since_ms.store(9_500, Ordering::Relaxed);
        assert_eq!(r.close_idle(10_000, Duration::from_secs(1)), 1);
        assert!(idle.activity().close_token().is_cancelled());
        for reg in [&busy, &subscribed, &fresh] {
            assert!(!reg.activity().close_token().is_cancelled());
        }
    }
}
