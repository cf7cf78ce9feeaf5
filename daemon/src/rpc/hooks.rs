//! `hooks/register` (a subscription of `hooks/invoke` notifications) and
//! `hooks/respond`.

use super::DaemonContext;
use crate::config::HookPoint;
use crate::pipeline::hooks::rpc::Registration;
use jsonrpsee::core::{RegisterMethodError, SubscriptionResult};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{PendingSubscriptionSink, RpcModule, SubscriptionMessage};
use std::sync::Arc;
use std::time::Duration;
use swival_protocol::{methods, HookRegisterParams, HookRespondResult};

fn registration(p: HookRegisterParams) -> Result<Registration, ErrorObjectOwned> {
    if p.points.is_empty() {
        let message = format!("hooks/register needs at least one point: {}", HookPoint::NAMES.join(", "));
        return Err(ErrorObjectOwned::owned(-32602, message, None::<()>));
    }
    Ok(Registration {
        name: p.name,
        points: p.points,
        priority: p.priority,
        timeout: Duration::from_millis(p.timeout_ms.max(1)),
        on_failure: p.on_failure,
    })
}

pub(super) fn register(module: &mut RpcModule<DaemonContext>) -> Result<(), RegisterMethodError> {
    super::subscription::<methods::typed::HooksRegister, _>(module, |params, pending, ctx| async move {
        serve(params.parse().and_then(registration), pending, ctx).await
    })?;
    super::method::<swival_protocol::methods::typed::HooksRespond>(module, |p, ctx| {
        Ok(HookRespondResult { accepted: ctx.services.hooks.respond(&p.call_id, p.result) })
    })?;
    Ok(())
}

/// Hold the registration while the subscription lives; forward invocations.
async fn serve(
    reg: Result<Registration, ErrorObjectOwned>,
    pending: PendingSubscriptionSink,
    ctx: Arc<DaemonContext>,
) -> SubscriptionResult {
    let reg = match reg {
        Ok(r) => r,
        Err(e) => {
            pending.reject(e).await;
            return Ok(());
        }
    };
    let sink = pending.accept().await?;
    let registry = &ctx.services.hooks;
    let name = reg.name.clone();
    let (id, mut invocations) = registry.register(reg);
    tracing::info!("client hook {name} registered");
    loop {
        tokio::select! {
            inv = invocations.recv() => {
                let Some(inv) = inv else { break };
                let msg: SubscriptionMessage = serde_json::value::to_raw_value(&inv)?.into();
                if sink.send(msg).await.is_err() {
                    break;
                }
            }
            _ = sink.closed() => break,
        }
    }
    registry.unregister(id);
    tracing::info!("client hook {name} removed (its connection closed)");
    Ok(())
}
