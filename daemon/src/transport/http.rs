//! The HTTP framing: POST for calls and a WebSocket upgrade for
//! subscriptions, both served by jsonrpsee from the shared `RpcModule`.

use super::Shared;
use tokio::io::{AsyncRead, AsyncWrite};

/// Serve one HTTP connection until the client closes it or the daemon stops.
pub(super) async fn serve<S>(io: S, shared: &Shared)
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let svc = shared.http.clone().build(shared.methods.clone(), shared.stop.clone());
    if let Err(e) = jsonrpsee::server::serve_with_graceful_shutdown(io, svc, shared.stop.clone().shutdown()).await {
        tracing::debug!("http connection ended: {e}");
    }
}
