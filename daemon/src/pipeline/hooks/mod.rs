//! The three hook points (`before_llm_call`, `after_llm_call`,
//! `before_response_emit`) and running every hook of a point in order:
//! command hooks from config (JSON on stdin, JSON on stdout, through the
//! process runner) and client hooks registered over RPC, merged by the
//! rules in [`merge`].

pub mod merge;
pub mod rpc;

use crate::config::{CommandHook, HookPoint, OnFailure};
use crate::procs::{Call, Mode, ProcError, ProcessRunner, Script};
use merge::{Decision, Effect, Reply};
use rpc::{HookRegistry, RpcHook};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use swival_protocol::HookCall;
use tokio_util::sync::CancellationToken;

/// Largest output read from a command hook.
const MAX_STDOUT: usize = 32 * 1024 * 1024;

/// A command hook of one session, ready to run.
#[derive(Debug, Clone)]
pub struct CommandEntry {
    /// The command line (its name in events).
    pub name: String,
    /// Its point.
    pub point: HookPoint,
    /// Lower runs first.
    pub priority: i64,
    /// Registration order.
    pub order: u64,
    /// Kill after this long.
    pub timeout: Duration,
    /// What its failure means.
    pub on_failure: OnFailure,
    /// What to run.
    pub script: Script,
    /// How its processes are managed.
    pub mode: Mode,
}

impl CommandEntry {
    /// The entry for a configured hook, numbered by the registry.
    pub fn new(
        h: &CommandHook,
        base_dir: &Path,
        env: &crate::procs::CallerEnv,
        registry: &HookRegistry,
    ) -> CommandEntry {
        CommandEntry {
            name: h.command.display(),
            point: h.point,
            priority: h.priority,
            order: registry.next_order(),
            timeout: crate::config::seconds(h.timeout_s, 0.001),
            on_failure: h.on_failure,
            script: Script {
                argv: h.command.argv.clone(),
                cwd: base_dir.to_owned(),
                base: env.clone(),
                env: Vec::new(),
                pins: crate::procs::pin::pin_argv(&h.command.argv, base_dir, &env.path()),
            },
            mode: super::mode_of(h.mode, h.prespawn),
        }
    }
}

/// One hook, of either kind, in running order.
enum Hook<'a> {
    Command(&'a CommandEntry),
    Rpc(RpcHook),
}

impl Hook<'_> {
    fn key(&self) -> (i64, u64) {
        match self {
            Hook::Command(c) => (c.priority, c.order),
            Hook::Rpc(r) => (r.priority, r.order),
        }
    }

    fn name(&self) -> String {
        match self {
            Hook::Command(c) => c.name.clone(),
            Hook::Rpc(r) => format!("rpc:{}", r.name),
        }
    }

    fn on_failure(&self) -> OnFailure {
        match self {
            Hook::Command(c) => c.on_failure,
            Hook::Rpc(r) => r.on_failure,
        }
    }
}

/// What one hook did, for events and the report.
#[derive(Debug, Clone)]
pub struct Record {
    /// The hook.
    pub hook: String,
    /// Its effect.
    pub effect: Effect,
    /// How long it took.
    pub duration: Duration,
}

/// The run was cancelled while a hook ran.
#[derive(Debug)]
pub struct Cancelled;

/// The hooks of one session.
#[derive(Clone)]
pub struct Hooks {
    /// Command hooks from config.
    pub commands: Vec<CommandEntry>,
    /// Client hooks, daemon-wide.
    pub registry: Arc<HookRegistry>,
    /// Runs command hooks.
    pub runner: Arc<ProcessRunner>,
}

impl Hooks {
    /// Whether any hook (command or client) is registered for `point`.
    pub fn any(&self, point: HookPoint) -> bool {
        self.commands.iter().any(|c| c.point == point) || !self.registry.for_point(point).is_empty()
    }

    /// Run every hook of `call`'s point in order on its payload; each sees
    /// the state the earlier ones left. Stops at the first block.
    pub async fn run(&self, call: &HookCall, cancel: &CancellationToken) -> Result<(Decision, Vec<Record>), Cancelled> {
        let point = call.point();
        let mut hooks: Vec<Hook> = self.commands.iter().filter(|c| c.point == point).map(Hook::Command).collect();
        hooks.extend(self.registry.for_point(point).into_iter().map(Hook::Rpc));
        hooks.sort_by_key(Hook::key);
        let mut decision = Decision::default();
        let mut records = Vec::new();
        for hook in hooks {
            if decision.is_blocked() {
                break;
            }
            let view = view(call, &decision);
            let started = Instant::now();
            let reply = match &hook {
                Hook::Command(c) => self.call_command(c, &view, cancel).await?,
                Hook::Rpc(r) => self.registry.invoke(r, view).await,
            };
            let effect = decision.apply(point, &hook.name(), hook.on_failure(), reply);
            records.push(Record { hook: hook.name(), effect, duration: started.elapsed() });
        }
        Ok((decision, records))
    }

    async fn call_command(
        &self,
        c: &CommandEntry,
        call: &HookCall,
        cancel: &CancellationToken,
    ) -> Result<Reply, Cancelled> {
        let input = call.payload_json();
        let call = Call { script: &c.script, mode: c.mode, input: &input, timeout: c.timeout, max_stdout: MAX_STDOUT };
        let out = match self.runner.call(call, cancel).await {
            Ok(out) => out,
            Err(ProcError::Cancelled { .. }) => return Err(Cancelled),
            Err(e @ ProcError::Changed { .. }) => return Ok(Reply::Tampered(e.to_string())),
            Err(e) => return Ok(Reply::Failed(e.to_string())),
        };
        for line in String::from_utf8_lossy(&out.stderr).lines() {
            tracing::info!(target: "swivald::hook", "{}: {line}", c.name);
        }
        Ok(match out.code {
            Some(0) => match serde_json::from_slice::<Value>(&out.stdout) {
                Ok(v) => Reply::Output(v),
                Err(e) => Reply::Failed(format!("its output is not JSON: {e}")),
            },
            Some(code) => Reply::Failed(format!("it exited with code {code}")),
            None => Reply::Failed("it was killed by a signal".into()),
        })
    }
}

/// The call a hook sees: the original, with what earlier hooks changed.
fn view(call: &HookCall, d: &Decision) -> HookCall {
    let mut v = call.clone();
    match &mut v {
        HookCall::BeforeLlmCall(p) => {
            if let Some(m) = &d.messages {
                p.messages = m.clone();
            }
            if let Some(keep) = &d.tools {
                p.tools.retain(|t| crate::tools::repair::name_of(t).is_some_and(|n| keep.contains(n)));
            }
        }
        HookCall::AfterLlmCall(p) => {
            if let Some(keep) = &d.tool_calls {
                p.assistant.tool_calls.retain(|c| keep.contains(&c.id));
            }
        }
        HookCall::BeforeResponseEmit(p) => {
            if let Some(c) = &d.content {
                p.content = c.clone();
            }
            if let Some(all) = &d.all_content {
                p.all_content = all.clone();
                if let Some(last) = all.last() {
                    p.content = last.clone();
                }
            }
        }
    }
    v
}

/// Ids kept by a decision out of `ids` (all when no hook narrowed).
pub fn kept(decision: &Decision, ids: &[String]) -> BTreeSet<String> {
    match &decision.tool_calls {
        Some(keep) => ids.iter().filter(|id| keep.contains(*id)).cloned().collect(),
        None => ids.iter().cloned().collect(),
    }
}
