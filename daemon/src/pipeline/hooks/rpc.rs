//! Hooks served by connected clients: `hooks/register` opens a stream of
//! `hooks/invoke` notifications; the client answers each with
//! `hooks/respond {call_id, result}`. A hook lives as long as its stream:
//! when the client's connection closes, it is removed.

use super::merge::Reply;
use crate::config::{HookPoint, OnFailure};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use swival_protocol::{HookCall, HookInvocation};
use tokio::sync::{mpsc, oneshot};

/// A registered client hook.
#[derive(Debug, Clone)]
pub struct RpcHook {
    /// Registry id.
    pub id: u64,
    /// The name the client gave.
    pub name: String,
    /// Points it wants.
    pub points: Vec<HookPoint>,
    /// Lower runs first.
    pub priority: i64,
    /// Registration order (daemon-wide counter shared with command hooks).
    pub order: u64,
    /// How long an answer may take.
    pub timeout: Duration,
    /// What its failure means.
    pub on_failure: OnFailure,
    /// Where its invocations go.
    tx: mpsc::Sender<HookInvocation>,
}

/// Every client hook, and the daemon-wide registration counter.
#[derive(Debug, Default)]
pub struct HookRegistry {
    /// Registered client hooks.
    hooks: Mutex<Vec<RpcHook>>,
    /// Invocations waiting for `hooks/respond`.
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// Registration order of every hook, command or client.
    order: AtomicU64,
    /// Call id counter.
    calls: AtomicU64,
}

/// What a client asks for in `hooks/register`.
#[derive(Debug, Clone)]
pub struct Registration {
    /// Name.
    pub name: String,
    /// Points.
    pub points: Vec<HookPoint>,
    /// Priority.
    pub priority: i64,
    /// Answer timeout.
    pub timeout: Duration,
    /// Failure meaning.
    pub on_failure: OnFailure,
}

impl HookRegistry {
    /// The next registration number (command hooks take theirs at session creation).
    pub fn next_order(&self) -> u64 {
        self.order.fetch_add(1, Ordering::Relaxed)
    }

    /// Register a client hook; invocations arrive on the receiver.
    pub fn register(&self, r: Registration) -> (u64, mpsc::Receiver<HookInvocation>) {
        let (tx, rx) = mpsc::channel(64);
        let order = self.next_order();
        let hook = RpcHook {
            id: order,
            name: r.name,
            points: r.points,
            priority: r.priority,
            order,
            timeout: r.timeout,
            on_failure: r.on_failure,
            tx,
        };
        self.hooks.lock().unwrap_or_else(|p| p.into_inner()).push(hook);
        (order, rx)
    }

    /// Remove a client hook (its connection closed).
    pub fn unregister(&self, id: u64) {
        self.hooks.lock().unwrap_or_else(|p| p.into_inner()).retain(|h| h.id != id);
    }

    /// Client hooks registered for `point`.
    pub fn for_point(&self, point: HookPoint) -> Vec<RpcHook> {
        self.hooks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|h| h.points.contains(&point) && !h.tx.is_closed())
            .cloned()
            .collect()
    }

    /// Every client hook.
    pub fn all(&self) -> Vec<RpcHook> {
        self.hooks.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Ask a client hook and wait for its answer.
    pub async fn invoke(&self, hook: &RpcHook, call: HookCall) -> Reply {
        let call_id = format!("h{}", self.calls.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(call_id.clone(), tx);
        let sent = hook.tx.send(HookInvocation { call_id: call_id.clone(), call }).await;
        let reply = if sent.is_err() {
            Reply::Failed("its client disconnected".into())
        } else {
            match tokio::time::timeout(hook.timeout, rx).await {
                Ok(Ok(v)) => Reply::Output(v),
                Ok(Err(_)) => Reply::Failed("its client disconnected before answering".into()),
                Err(_) => Reply::Failed(format!("no answer within {} ms", hook.timeout.as_millis())),
            }
        };
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&call_id);
        reply
    }

    /// Deliver a client's answer; false when nobody waits for that call id.
    pub fn respond(&self, call_id: &str, result: Value) -> bool {
        match self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(call_id) {
            Some(tx) => tx.send(result).is_ok(),
            None => false,
        }
    }
}
