//! `loop/*`: a session's loops, added, listed and removed.

use super::session::rpc_error;
use super::{async_method, method, DaemonContext};
use jsonrpsee::core::RegisterMethodError;
use jsonrpsee::RpcModule;
use swival_protocol::methods::typed as m;
use swival_protocol::{LoopListResult, LoopRemoveResult, LoopResult};

pub(super) fn register(module: &mut RpcModule<DaemonContext>) -> Result<(), RegisterMethodError> {
    async_method::<m::LoopAdd, _>(module, |p, ctx| async move {
        ctx.loops.add(p).await.map(|loop_| LoopResult { loop_ }).map_err(rpc_error)
    })?;
    method::<m::LoopList>(module, |p, ctx| {
        ctx.loops.list(p.session_id.as_ref(), p.all).map(|loops| LoopListResult { loops }).map_err(rpc_error)
    })?;
    async_method::<m::LoopRemove, _>(module, |p, ctx| async move {
        ctx.loops.remove(p).await.map(|removed| LoopRemoveResult { removed }).map_err(rpc_error)
    })?;
    Ok(())
}
