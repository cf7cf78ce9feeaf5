//! The HTTP framing: POST for calls, served by jsonrpsee from the shared
//! `RpcModule`, and the WebSocket upgrade, after which `ws.rs` serves the
//! connection.
//!
//! hyper serves the connection (not jsonrpsee's `serve` helper) so that it
//! gets a timer and `header_read_timeout_s`: the time a client has to send
//! a complete request head, on the first request and between kept-alive
//! ones. Around jsonrpsee's service two layers tell the registry what the
//! connection is doing: [`Tracked`] marks it busy while an HTTP request is
//! being answered, refuses a POSTed batch over `max_batch_len` before
//! anything in it is parsed and takes WebSocket upgrades.

use super::registry::Activity;
use super::Shared;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use jsonrpsee::core::http_helpers::{read_body, HttpError};
use jsonrpsee::server::http::{content_type_is_json, response};
use jsonrpsee::server::middleware::rpc::MethodResponse;
use jsonrpsee::server::{HttpBody, HttpResponse};
use jsonrpsee::types::{ErrorObject, Id};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use swival_protocol::ErrorCode;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;

/// Serve one HTTP connection until the client closes it, it breaks a time
/// limit, the registry closes it or the daemon stops.
pub(super) async fn serve<S>(io: S, shared: Arc<Shared>, activity: Arc<Activity>)
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let request_seen = Arc::new(Notify::new());
    let svc = Tracked {
        inner: shared.http.clone().build(shared.methods.clone(), shared.stop.clone()),
        shared: shared.clone(),
        activity,
        request_seen: request_seen.clone(),
        max_body: u32::try_from(shared.max_message_size).unwrap_or(u32::MAX),
        max_batch_len: shared.max_batch_len,
    };
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(shared.header_read_timeout);
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), TowerToHyperService::new(svc));
    let stopped = shared.stop.clone().shutdown();
    tokio::pin!(conn, stopped);
    let result = tokio::select! {
        res = &mut conn => res,
        // In-flight requests finish; no new one is read.
        _ = &mut stopped => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
        // hyper times the head of an HTTP/1 request only once it knows the
        // connection is HTTP/1; a client stalling before that (or on an
        // HTTP/2 preface) meets this limit instead.
        () = no_request_within(&request_seen, shared.header_read_timeout) => {
            tracing::debug!("closing an HTTP connection that sent no complete request head in time (header_read_timeout_s)");
            return;
        }
    };
    if let Err(e) = result {
        tracing::debug!("http connection ended: {e}");
    }
}

/// Resolves when no request head arrived within `limit`; never otherwise.
async fn no_request_within(seen: &Notify, limit: Option<Duration>) {
    if let Some(limit) = limit {
        if tokio::time::timeout(limit, seen.notified()).await.is_err() {
            return;
        }
    }
    std::future::pending().await
}

/// jsonrpsee's per-connection service, marking the connection busy while a
/// request is answered, passing its [`Activity`] to the RPC middleware
/// (jsonrpsee copies the HTTP request's extensions into every call's) and
/// bounding batches.
#[derive(Clone)]
struct Tracked<S> {
    /// jsonrpsee's service.
    inner: S,
    /// For the WebSocket connections upgraded from this one.
    shared: Arc<Shared>,
    /// The connection's state in the registry.
    activity: Arc<Activity>,
    /// Notified when a request head has arrived.
    request_seen: Arc<Notify>,
    /// `max_message_size`, for reading a POSTed body.
    max_body: u32,
    /// `max_batch_len`.
    max_batch_len: usize,
}

impl<S> tower::Service<hyper::Request<Incoming>> for Tracked<S>
where
    S: tower::Service<hyper::Request<HttpBody>, Response = HttpResponse> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = HttpResponse;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: hyper::Request<Incoming>) -> Self::Future {
        self.request_seen.notify_one();
        if soketto::handshake::http::is_upgrade_request(&req) {
            let response = upgrade(req, self.shared.clone(), self.activity.clone());
            return Box::pin(std::future::ready(Ok(response)));
        }
        req.extensions_mut().insert(self.activity.clone());
        let activity = self.activity.clone();
        let (max_body, max_batch_len) = (self.max_body, self.max_batch_len);
        // jsonrpsee's service is always ready, so a clone may be called.
        let mut inner = self.inner.clone();
        Box::pin(async move {
            // A client still sending its body counts as idle, so one that
            // stalls there can be evicted or reaped like any idle one.
            if req.method() == hyper::Method::POST && content_type_is_json(&req) {
                match bounded_batch(req, max_body, max_batch_len).await {
                    Ok(req) => {
                        let _busy = activity.busy();
                        inner.call(req).await
                    }
                    Err(refusal) => Ok(refusal),
                }
            } else {
                let _busy = activity.busy();
                inner.call(req.map(HttpBody::new)).await
            }
        })
    }
}

/// Answer a WebSocket upgrade and serve the upgraded connection (in a task
/// of the daemon's shutdown, which waits for it), or refuse a bad one.
fn upgrade(req: hyper::Request<Incoming>, shared: Arc<Shared>, activity: Arc<Activity>) -> HttpResponse {
    let mut handshake = soketto::handshake::http::Server::new();
    match handshake.receive_request(&req) {
        Ok(accepted) => {
            let tasks = shared.shutdown.clone();
            tasks.spawn(async move {
                match hyper::upgrade::on(req).await {
                    Ok(upgraded) => super::ws::serve(upgraded, handshake, shared, activity).await,
                    Err(e) => tracing::debug!("WebSocket upgrade failed: {e}"),
                }
            });
            accepted.map(|()| HttpBody::default())
        }
        Err(e) => {
            let why = format!("not a valid WebSocket upgrade: {e}");
            let mut refusal = HttpResponse::new(HttpBody::from(why));
            *refusal.status_mut() = hyper::StatusCode::BAD_REQUEST;
            refusal
        }
    }
}

/// Read a POSTed body (within `max_body`, as jsonrpsee would) and give the
/// request back with it, or the answer when it is too large, malformed, or
/// a batch of more than `max_batch_len` requests (counted without parsing
/// them, so a huge batch costs no more than its bytes).
async fn bounded_batch(
    req: hyper::Request<Incoming>,
    max_body: u32,
    max_batch_len: usize,
) -> Result<hyper::Request<HttpBody>, HttpResponse> {
    let (parts, body) = req.into_parts();
    let (bytes, is_single) = match read_body(&parts.headers, body, max_body).await {
        Ok(read) => read,
        Err(HttpError::TooLarge) => return Err(response::too_large(max_body)),
        Err(HttpError::Malformed) => return Err(response::malformed()),
        Err(HttpError::Stream(e)) => {
            tracing::debug!("could not read an HTTP request body: {e}");
            return Err(response::internal_error());
        }
    };
    if !is_single {
        if let Some(len) = batch_len(&bytes).filter(|&len| len > max_batch_len) {
            let error = ErrorObject::owned(
                ErrorCode::MessageTooLarge.code(),
                super::batch_too_long(len, max_batch_len),
                None::<()>,
            );
            return Err(response::from_method_response(MethodResponse::error(Id::Null, error)));
        }
    }
    Ok(hyper::Request::from_parts(parts, HttpBody::from(bytes)))
}

/// The number of entries of the JSON array `bytes`, counted without
/// keeping any of them; `None` when it is not one (jsonrpsee answers that).
fn batch_len(bytes: &[u8]) -> Option<usize> {
    struct Count;
    impl<'de> serde::de::Visitor<'de> for Count {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
            let mut n = 0;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                n += 1;
            }
            Ok(n)
        }
    }
    serde::Deserializer::deserialize_seq(&mut serde_json::Deserializer::from_slice(bytes), Count).ok()
}

#[cfg(test)]
mod tests {
    use super::batch_len;

    #[test]
    fn batch_entries_are_counted_without_parsing_them() {
        assert_eq!(batch_len(br#"[{"a":[1,2,{"b":3}]}, 2, "x", null]"#), Some(4));
        assert_eq!(batch_len(b" [ ] "), Some(0));
        assert_eq!(batch_len(br#"{"jsonrpc":"2.0"}"#), None);
        assert_eq!(batch_len(b"[1, 2"), None);
    }
}
