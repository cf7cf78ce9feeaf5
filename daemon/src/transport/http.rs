//! The HTTP framing: POST for calls and a WebSocket upgrade for
//! subscriptions, both served by jsonrpsee from the shared `RpcModule`.
//!
//! hyper serves the connection (not jsonrpsee's `serve` helper) so that it
//! gets a timer and `header_read_timeout_s`: the time a client has to send
//! a complete request head, on the first request and between kept-alive
//! ones. Around jsonrpsee's service two layers tell the registry what the
//! connection is doing: [`Tracked`] marks it busy while an HTTP request is
//! being answered, hands its [`Activity`] to the calls and refuses a POSTed
//! batch over `max_batch_len` before anything in it is parsed; the RPC
//! middleware [`CallTracking`] marks it busy while a WebSocket call runs and
//! counts WebSocket subscriptions. (A WebSocket batch over `max_batch_len`
//! is refused by jsonrpsee itself, with its own error -32010.)

use super::registry::Activity;
use super::Shared;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use jsonrpsee::core::http_helpers::{read_body, HttpError};
use jsonrpsee::core::server::{MethodCallback, Methods};
use jsonrpsee::server::http::{content_type_is_json, response};
use jsonrpsee::server::middleware::rpc::{Batch, BatchEntry, MethodResponse, Notification, Request, RpcServiceT};
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
pub(super) async fn serve<S>(io: S, shared: &Shared, activity: Arc<Activity>)
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let request_seen = Arc::new(Notify::new());
    let svc = Tracked {
        inner: shared.http.clone().build(shared.methods.clone(), shared.stop.clone()),
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
{
    type Response = HttpResponse;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: hyper::Request<Incoming>) -> Self::Future {
        self.request_seen.notify_one();
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

/// Builds [`CallTracking`] around jsonrpsee's RPC service.
#[derive(Clone)]
pub(super) struct CallTrackingLayer {
    /// The methods, to tell subscriptions and unsubscriptions apart.
    pub(super) methods: Methods,
}

impl<S> tower::Layer<S> for CallTrackingLayer {
    type Service = CallTracking<S>;

    fn layer(&self, inner: S) -> CallTracking<S> {
        CallTracking { inner, methods: self.methods.clone() }
    }
}

/// RPC middleware: busy while a call runs, subscriptions counted.
///
/// jsonrpsee does not tell middleware when a subscription ends on the
/// server's side, only when the client unsubscribes; a WebSocket connection
/// that ever had a subscription the server ended stays busy (never evicted
/// or closed as idle) until it closes. That errs on the side of keeping a
/// client's connection.
#[derive(Clone)]
pub(super) struct CallTracking<S> {
    /// jsonrpsee's RPC service.
    inner: S,
    /// The methods, to tell subscriptions and unsubscriptions apart.
    methods: Methods,
}

impl<S> CallTracking<S> {
    fn kind(&self, method: &str) -> Kind {
        match self.methods.method(method) {
            Some(MethodCallback::Subscription(_)) => Kind::Subscribe,
            Some(MethodCallback::Unsubscription(_)) => Kind::Unsubscribe,
            _ => Kind::Call,
        }
    }
}

/// What a call does to the connection's subscriptions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Nothing.
    Call,
    /// Opens one.
    Subscribe,
    /// Closes one.
    Unsubscribe,
}

fn activity_of(extensions: &hyper::http::Extensions) -> Option<Arc<Activity>> {
    extensions.get::<Arc<Activity>>().cloned()
}

impl<S> RpcServiceT for CallTracking<S>
where
    S: RpcServiceT<
            MethodResponse = MethodResponse,
            BatchResponse = MethodResponse,
            NotificationResponse = MethodResponse,
        > + Clone
        + Send
        + Sync
        + 'static,
{
    type MethodResponse = MethodResponse;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(&self, request: Request<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let activity = activity_of(request.extensions());
        let kind = self.kind(request.method_name());
        let inner = self.inner.clone();
        async move {
            let busy = activity.as_ref().map(|a| a.busy());
            let response = inner.call(request).await;
            if let Some(a) = &activity {
                match kind {
                    Kind::Subscribe if response.is_success() => a.subscription_opened(),
                    Kind::Unsubscribe if response.is_success() => a.subscription_closed(),
                    _ => {}
                }
            }
            drop(busy);
            response
        }
    }

    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let activity = batch.iter().find_map(|entry| match entry {
            Ok(BatchEntry::Call(c)) => activity_of(c.extensions()),
            Ok(BatchEntry::Notification(n)) => activity_of(n.extensions()),
            Err(_) => None,
        });
        // The batch's reply does not say which of its calls succeeded: a
        // subscription method in it counts as an opened subscription.
        let subscribes = batch
            .iter()
            .filter(|entry| matches!(entry, Ok(BatchEntry::Call(c)) if self.kind(c.method_name()) == Kind::Subscribe))
            .count();
        let inner = self.inner.clone();
        async move {
            let busy = activity.as_ref().map(|a| a.busy());
            let response = inner.batch(batch).await;
            if let Some(a) = &activity {
                (0..subscribes).for_each(|_| a.subscription_opened());
            }
            drop(busy);
            response
        }
    }

    fn notification<'a>(&self, n: Notification<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let activity = activity_of(n.extensions());
        let inner = self.inner.clone();
        async move {
            let busy = activity.as_ref().map(|a| a.busy());
            let response = inner.notification(n).await;
            drop(busy);
            response
        }
    }
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
