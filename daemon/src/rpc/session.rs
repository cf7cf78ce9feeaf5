//! Session, run, event, report and config methods.

use super::{async_method, disconnection, invalid_params, method, rpc_error, DaemonContext};
use crate::session::NewRun;
use jsonrpsee::core::{RegisterMethodError, SubscriptionResult};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{RpcModule, SubscriptionMessage};
use swival_protocol::methods::{self, typed as m, Method};
use swival_protocol::{
    ApproveResult, ConfigResolveResult, RunCancelResult, RunStartResult, SessionListResult, SubscribeParams,
};

pub(super) fn register(module: &mut RpcModule<DaemonContext>) -> Result<(), RegisterMethodError> {
    async_method::<m::SessionCreate, _>(
        module,
        |p, ctx| async move { ctx.sessions.create(p).await.map_err(rpc_error) },
    )?;
    async_method::<m::SessionConfigure, _>(module, |p, ctx| async move {
        ctx.sessions.configure(p).await.map_err(rpc_error)
    })?;
    async_method::<m::SessionCompact, _>(module, |p, ctx| async move {
        ctx.sessions.compact(&p.session_id, p.drop).await.map_err(rpc_error)
    })?;
    method::<m::MemoryAdd>(module, |p, ctx| ctx.sessions.add_memory(&p).map_err(rpc_error))?;
    method::<m::ContinueClear>(module, |p, ctx| ctx.sessions.clear_continue(&p).map_err(rpc_error))?;
    async_method::<m::ContinueSave, _>(module, |p, ctx| async move {
        ctx.sessions.save_continue(&p.session_id).await.map_err(rpc_error)
    })?;
    async_method::<m::SessionCheckpoint, _>(module, |p, ctx| async move {
        ctx.sessions.checkpoint(p).await.map_err(rpc_error)
    })?;
    async_method::<m::SessionRestore, _>(module, |p, ctx| async move {
        ctx.sessions.restore(&p.session_id).await.map_err(rpc_error)
    })?;
    async_method::<m::ProjectTrust, _>(module, |p, ctx| async move {
        ctx.sessions.trust_project(&p.base_dir, p.check, p.sha256.as_deref()).await.map_err(rpc_error)
    })?;
    async_method::<m::SessionPrune, _>(module, |p, ctx| async move {
        if !(p.older_than_s.is_finite() && p.older_than_s >= 0.0) {
            return Err(invalid_params("older_than_s must be a number of seconds, 0 or more"));
        }
        ctx.sessions.prune_all(std::time::Duration::from_secs_f64(p.older_than_s)).await.map_err(rpc_error)
    })?;
    async_method::<m::SessionApply, _>(module, |p, ctx| async move {
        ctx.sessions.apply(&p.session_id).await.map_err(rpc_error)
    })?;
    method::<m::SessionList>(module, |_, ctx| {
        ctx.sessions.list().map(|sessions| SessionListResult { sessions }).map_err(rpc_error)
    })?;
    method::<m::SessionGet>(module, |p, ctx| ctx.sessions.detail(&p.session_id).map_err(rpc_error))?;
    async_method::<m::SessionClose, _>(module, |p, ctx| async move {
        let closed = ctx.sessions.close(&p.session_id).await.map_err(rpc_error)?;
        // A closed session's loops fire no more.
        ctx.loops.session_closed(&p.session_id).await;
        Ok(closed)
    })?;
    register_runs(module)?;
    async_method::<m::RunChangesMethod, _>(module, |p, ctx| async move {
        ctx.sessions.changes(p).await.map_err(rpc_error)
    })?;
    async_method::<m::RunRevert, _>(module, |p, ctx| async move { ctx.sessions.revert(p).await.map_err(rpc_error) })?;
    async_method::<m::ReviewRun, _>(module, |p, ctx| async move { ctx.sessions.review(p).await.map_err(rpc_error) })?;
    async_method::<m::ProviderModelsMethod, _>(module, |p, ctx| async move {
        ctx.sessions.models(p).await.map_err(rpc_error)
    })?;
    method::<m::ReportGet>(module, |p, ctx| ctx.sessions.report(&p.run_id).map_err(rpc_error))?;
    method::<m::SessionTools>(module, |p, ctx| ctx.sessions.tools(&p.session_id).map_err(rpc_error))?;
    method::<m::PolicyStatusMethod>(module, |p, ctx| {
        let status = ctx.sessions.policy_status(&p.session_id).map_err(rpc_error)?;
        Ok(swival_protocol::PolicyStatus { background: Some(super::background::status(ctx)), ..status })
    })?;
    method::<m::PolicyCheck>(module, |p, ctx| {
        ctx.sessions.policy_check(p.session_id.as_ref(), p.base_dir.as_deref(), &p.argv, p.env).map_err(rpc_error)
    })?;
    method::<m::ConfigResolve>(module, |p, ctx| {
        let request = p.config.as_ref().map(swival_protocol::ConfigKeys::to_value);
        let effective = ctx.sessions.resolve_config(&p.base_dir, request.as_ref()).map_err(rpc_error)?;
        Ok(ConfigResolveResult {
            config: swival_protocol::ConfigKeys::of(crate::session::public_config(&effective)),
            sources: effective.sources,
            warnings: effective.warnings,
            profiles: effective.profiles,
        })
    })?;
    super::subscription::<methods::typed::SessionSubscribe, _>(module, |params, pending, ctx| async move {
        subscribe(params.parse(), pending, ctx).await
    })?;
    Ok(())
}

/// `run/start`, `run/cancel`, `run/wait` and `run/approve`.
fn register_runs(module: &mut RpcModule<DaemonContext>) -> Result<(), RegisterMethodError> {
    module.register_async_method(m::RunStart::NAME, |params, ctx, extensions| async move {
        let p = params.parse::<<m::RunStart as Method>::Params>()?;
        // Taken before the run exists: a client gone by the time it starts
        // still has it cancelled.
        let gone = disconnection(p.cancel_on_disconnect, &extensions)?;
        let mark = p.inbox.then(|| ctx.inbox.mark(&p.session_id));
        let source = crate::inbox::Source::detached(&p.task);
        let new =
            NewRun { task: p.task, client_token: p.client_token, resume: p.resume, bare: false, goal: None, id: None };
        let run_id = ctx.sessions.start_run(&p.session_id, new, p.env).await.map_err(rpc_error)?;
        if let Some(after) = mark {
            ctx.inbox.watch(&p.session_id, &run_id, after, source, true);
        }
        ctx.goals.user_ran(&p.session_id).await;
        if let Some(gone) = gone {
            ctx.sessions.cancel_when(&run_id, gone);
        }
        Ok::<_, ErrorObjectOwned>(RunStartResult { run_id })
    })?;
    method::<m::RunCancel>(module, |p, ctx| {
        ctx.sessions.cancel(&p.run_id).map(|cancelled| RunCancelResult { cancelled }).map_err(rpc_error)
    })?;
    async_method::<m::RunWait, _>(
        module,
        |p, ctx| async move { ctx.sessions.wait(&p.run_id).await.map_err(rpc_error) },
    )?;
    method::<m::RunApprove>(module, |p, ctx| {
        Ok(ApproveResult { accepted: ctx.services.approvals.answer(&p.session_id, &p.approval_id, p.decision) })
    })?;
    Ok(())
}

/// `session/subscribe` through jsonrpsee (WebSocket; the newline-delimited
/// framing serves it as a feed, `feed.rs`): stored then live events, until
/// the client unsubscribes or disconnects. A client that leaves notifications unread
/// for `subscriber_stall_s` is dropped: the subscription closes with an
/// error notification naming the `from_seq` to resume from.
async fn subscribe(
    params: Result<SubscribeParams, ErrorObjectOwned>,
    pending: jsonrpsee::PendingSubscriptionSink,
    ctx: std::sync::Arc<DaemonContext>,
) -> SubscriptionResult {
    let p = match params {
        Ok(p) => p,
        Err(e) => {
            pending.reject(e).await;
            return Ok(());
        }
    };
    let mut events = match super::feed::open_events(&ctx.sessions, &ctx.subscriptions, p) {
        Ok(events) => events,
        Err(e) => {
            pending.reject(e).await;
            return Ok(());
        }
    };
    let sink = pending.accept().await?;
    let stall = ctx.subscriptions.stall;
    let mut behind = false;
    loop {
        // A subscriber that keeps up takes each event as it comes. One
        // that falls behind (no room for HELD) gives its event back to
        // the log and waits for room holding nothing: it costs its place
        // in the log, not events read for it.
        if std::mem::take(&mut behind) {
            match room(&sink, stall).await {
                Room::Free => {}
                Room::Closed => break,
                Room::Stalled => {
                    tracing::warn!("dropped a subscriber of {} that left its notifications unread", events.session);
                    return Err(super::feed::stalled_message(stall, events.cursor.next_seq()).into());
                }
            }
        }
        let event = tokio::select! {
            event = events.cursor.next() => event,
            _ = sink.closed() => break,
        };
        let event = match event {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("event stream of {} ended: {e}", events.session);
                break;
            }
        };
        let seq = event.seq.0;
        let msg: SubscriptionMessage = serde_json::value::to_raw_value(&event)?.into();
        drop(event);
        match tokio::time::timeout(HELD, sink.send(msg)).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => break,
            // Behind: the event is dropped here and read again later.
            Err(_) => {
                events.cursor.rewind(seq);
                behind = true;
            }
        }
    }
    Ok(())
}

/// How long a notification may wait for room before it is given back to
/// the log: far longer than a subscriber that keeps up ever makes it wait,
/// far shorter than a stalled one.
const HELD: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether a subscription's connection can take a notification now.
enum Room {
    Free,
    Closed,
    /// None for `subscriber_stall_s`.
    Stalled,
}

/// Wait until `sink` has room for one notification. jsonrpsee says how
/// much room there is but not when it frees, so after a subscriber fell
/// behind this looks again at growing intervals (at most 200 ms: one that
/// resumes reading waits no longer for its next event, and one that stays
/// stalled costs a few wake-ups a second). A subscriber that keeps up
/// finds room at once. `stall` zero never gives up.
async fn room(sink: &jsonrpsee::SubscriptionSink, stall: std::time::Duration) -> Room {
    let started = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(1);
    while sink.capacity() == 0 {
        if sink.is_closed() {
            return Room::Closed;
        }
        if !stall.is_zero() && started.elapsed() >= stall {
            return Room::Stalled;
        }
        tokio::select! {
            _ = sink.closed() => return Room::Closed,
            _ = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(std::time::Duration::from_millis(200));
    }
    Room::Free
}
