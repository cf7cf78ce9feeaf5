//! Background work: `goal/*` (a session's goal), `loop/*` (its loops) and
//! `inbox/list` (what they and detached runs did).

use super::{async_method, method, rpc_error, DaemonContext};
use jsonrpsee::core::RegisterMethodError;
use jsonrpsee::RpcModule;
use swival_protocol::methods::typed as m;
use swival_protocol::{GoalListResult, GoalResult, LoopListResult, LoopRemoveResult, LoopResult};

pub(super) fn register(module: &mut RpcModule<DaemonContext>) -> Result<(), RegisterMethodError> {
    async_method::<m::GoalSet, _>(module, |p, ctx| async move {
        ctx.goals.set(p).await.map(|g| GoalResult { goal: Some(g) }).map_err(rpc_error)
    })?;
    method::<m::GoalGet>(module, |p, ctx| {
        ctx.goals.get(&p.session_id).map(|goal| GoalResult { goal }).map_err(rpc_error)
    })?;
    async_method::<m::GoalPause, _>(module, |p, ctx| async move {
        ctx.goals.pause(&p.session_id).await.map(|g| GoalResult { goal: Some(g) }).map_err(rpc_error)
    })?;
    async_method::<m::GoalResume, _>(module, |p, ctx| async move {
        ctx.goals.resume(&p.session_id).await.map(|g| GoalResult { goal: Some(g) }).map_err(rpc_error)
    })?;
    async_method::<m::GoalClear, _>(module, |p, ctx| async move {
        ctx.goals.clear(&p.session_id).await.map(|goal| GoalResult { goal }).map_err(rpc_error)
    })?;
    method::<m::GoalList>(module, |_, ctx| ctx.goals.list().map(|goals| GoalListResult { goals }).map_err(rpc_error))?;
    async_method::<m::LoopAdd, _>(module, |p, ctx| async move {
        ctx.loops.add(p).await.map(|loop_| LoopResult { loop_ }).map_err(rpc_error)
    })?;
    method::<m::LoopList>(module, |p, ctx| {
        ctx.loops.list(p.session_id.as_ref(), p.all).map(|loops| LoopListResult { loops }).map_err(rpc_error)
    })?;
    async_method::<m::LoopRemove, _>(module, |p, ctx| async move {
        ctx.loops.remove(p).await.map(|removed| LoopRemoveResult { removed }).map_err(rpc_error)
    })?;
    method::<m::InboxList>(module, |p, ctx| ctx.inbox.list(&p).map_err(rpc_error))?;
    super::subscription::<m::InboxSubscribe, _>(module, |params, pending, ctx| async move {
        follow_inbox(params.parse(), pending, ctx).await
    })?;
    Ok(())
}

/// `inbox/subscribe`: the entries after `after_seq` (from now on when
/// absent), oldest first, then each new one; entries a slow subscriber
/// missed are read again from the store.
async fn follow_inbox(
    params: Result<swival_protocol::InboxListParams, jsonrpsee::types::ErrorObjectOwned>,
    pending: jsonrpsee::PendingSubscriptionSink,
    ctx: std::sync::Arc<DaemonContext>,
) -> jsonrpsee::core::SubscriptionResult {
    let p = match params {
        Ok(p) => p,
        Err(e) => {
            pending.reject(e).await;
            return Ok(());
        }
    };
    let mut live = ctx.inbox.follow();
    let mut sent = match p.after_seq {
        Some(seq) => seq,
        None => ctx.inbox.list(&swival_protocol::InboxListParams { after_seq: None, limit: Some(1) })?.last_seq,
    };
    let sink = pending.accept().await?;
    loop {
        let params = swival_protocol::InboxListParams { after_seq: Some(sent), limit: Some(1000) };
        for entry in ctx.inbox.list(&params)?.entries.into_iter().rev() {
            sent = sent.max(entry.seq);
            sink.send(message(&entry)?).await?;
        }
        // Wait for the next one; a lagged subscriber reads the store again.
        loop {
            tokio::select! {
                got = live.recv() => match got {
                    Ok(entry) if entry.seq <= sent => continue,
                    Ok(entry) if entry.seq == sent + 1 => {
                        sent = entry.seq;
                        sink.send(message(&entry)?).await?;
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(()),
                },
                _ = sink.closed() => return Ok(()),
            }
        }
    }
}

fn message(entry: &swival_protocol::InboxEntry) -> Result<jsonrpsee::SubscriptionMessage, serde_json::Error> {
    Ok(serde_json::value::to_raw_value(entry)?.into())
}

/// The daemon's bounds on background work and what is in use, for
/// `policy/status` and `daemon/status`.
pub(super) fn status(ctx: &DaemonContext) -> swival_protocol::BackgroundStatus {
    let (goals, loops) = (ctx.goals.limits(), ctx.loops.limits());
    swival_protocol::BackgroundStatus {
        max_background_runs: goals.max_active as u64,
        max_loops: loops.max_loops as u64,
        goal_max_runs: goals.default_max_runs,
        max_background_tokens_per_day: ctx.inbox.daily(),
        tokens_today: ctx.inbox.spent_today(),
    }
}
