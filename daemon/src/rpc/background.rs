//! Background work: `goal/*` (a session's goal), `loop/*` (its loops) and
//! `inbox/list` (what they and detached runs did).

use super::session::rpc_error;
use super::{async_method, method, DaemonContext};
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
    Ok(())
}

/// The daemon's bounds on background work and what is in use, for
/// `policy/status`.
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
