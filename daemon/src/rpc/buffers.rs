//! `buffers/serve` (a subscription of `buffers/read` notifications) and
//! `buffers/respond`: an editor serving a session's file reads.

use super::DaemonContext;
use jsonrpsee::core::{RegisterMethodError, SubscriptionResult};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{PendingSubscriptionSink, RpcModule, SubscriptionMessage};
use std::sync::Arc;
use swival_protocol::{methods, BufferRespondResult, SessionRef};

pub(super) fn register(module: &mut RpcModule<DaemonContext>) -> Result<(), RegisterMethodError> {
    super::subscription::<methods::typed::BuffersServe, _>(module, |params, pending, ctx| async move {
        serve(params.parse::<SessionRef>(), pending, ctx).await
    })?;
    super::method::<swival_protocol::methods::typed::BuffersRespond>(module, |p, ctx| {
        Ok(BufferRespondResult { accepted: ctx.services.buffers.respond(&p.request_id, p.text) })
    })?;
    Ok(())
}

/// Serve the session's reads while the subscription lives.
async fn serve(
    params: Result<SessionRef, ErrorObjectOwned>,
    pending: PendingSubscriptionSink,
    ctx: Arc<DaemonContext>,
) -> SubscriptionResult {
    let session = match params {
        Ok(p) => p.session_id,
        Err(e) => {
            pending.reject(e).await;
            return Ok(());
        }
    };
    let sink = pending.accept().await?;
    let buffers = &ctx.services.buffers;
    let (id, mut reads) = buffers.serve(session);
    loop {
        tokio::select! {
            read = reads.recv() => {
                let Some(read) = read else { break };
                let msg: SubscriptionMessage = serde_json::value::to_raw_value(&read)?.into();
                if sink.send(msg).await.is_err() {
                    break;
                }
            }
            _ = sink.closed() => break,
        }
    }
    buffers.unserve(id);
    Ok(())
}
