//! `session/subscribe` as a feed the newline-delimited framing pulls
//! from (`transport/feed.rs`): the session's log cursor, read only as fast
//! as the connection writes. WebSocket subscribers get the same cursor
//! through jsonrpsee (`session.rs`).

use super::{app_error, rpc_error, SubscriptionSlot, Subscriptions};
use crate::session::{Cursor, Sessions};
use crate::transport::{Feed, Feeds};
use futures::future::BoxFuture;
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::value::RawValue;
use std::sync::Arc;
use std::time::Duration;
use swival_protocol::methods::{Method, Subscribe};
use swival_protocol::{methods::typed as m, ErrorCode, SessionId, SubscribeParams};

/// Opens event feeds.
pub struct EventFeeds {
    /// Whose logs.
    pub sessions: Arc<Sessions>,
    /// The daemon-wide count and stall limit.
    pub subscriptions: Arc<Subscriptions>,
}

/// One subscriber's place in a session's log, and its share of
/// `max_subscriptions`.
pub struct Events {
    /// Where it is.
    pub cursor: Cursor,
    /// Whose log.
    pub session: SessionId,
    /// Held while open.
    _slot: SubscriptionSlot,
}

/// Open a subscription to the session `params` names: refused when
/// `max_subscriptions` are open or the session does not exist.
pub fn open_events(
    sessions: &Sessions,
    subscriptions: &Arc<Subscriptions>,
    params: SubscribeParams,
) -> Result<Events, ErrorObjectOwned> {
    let Some(slot) = subscriptions.enter() else {
        let why =
            "too many event subscriptions (max_subscriptions); close some or raise max_subscriptions in swivald.toml";
        return Err(app_error(ErrorCode::Overloaded, why));
    };
    let cursor =
        sessions.subscribe(&params.session_id, params.from_seq.map(|s| s.0).unwrap_or(1)).map_err(rpc_error)?;
    Ok(Events { cursor, session: params.session_id, _slot: slot })
}

/// The message closing a subscription whose client read nothing for
/// `stall`.
pub fn stalled_message(stall: Duration, from_seq: u64) -> String {
    format!(
        "subscription dropped: notifications were left unread for {}s (subscriber_stall_s); subscribe again with from_seq {from_seq} to resume",
        stall.as_secs_f64()
    )
}

impl Feeds for EventFeeds {
    fn subscribe(&self) -> &'static str {
        m::SessionSubscribe::NAME
    }

    fn unsubscribe(&self) -> &'static str {
        <m::SessionSubscribe as Subscribe>::Unsubscribe::NAME
    }

    fn notification(&self) -> &'static str {
        m::SessionSubscribe::NOTIFICATION
    }

    fn open(&self, params: Option<&RawValue>) -> Result<Box<dyn Feed>, ErrorObjectOwned> {
        let params = jsonrpsee::types::Params::new(params.map(RawValue::get)).parse::<SubscribeParams>()?;
        let events = open_events(&self.sessions, &self.subscriptions, params)?;
        Ok(Box::new(EventFeed { events, stall: self.subscriptions.stall }))
    }
}

/// [`Events`] as a feed.
struct EventFeed {
    /// The cursor and its slot.
    events: Events,
    /// `subscriber_stall_s`.
    stall: Duration,
}

impl Feed for EventFeed {
    fn next(&mut self) -> BoxFuture<'_, Option<Box<RawValue>>> {
        Box::pin(async move {
            match self.events.cursor.next().await {
                Ok(Some(event)) => serde_json::value::to_raw_value(&event).ok(),
                Ok(None) => None,
                Err(e) => {
                    tracing::warn!("event stream of {} ended: {e}", self.events.session);
                    None
                }
            }
        })
    }

    fn release(&mut self) {
        let at = self.events.cursor.next_seq();
        self.events.cursor.rewind(at);
    }

    fn stall(&self) -> Duration {
        self.stall
    }

    fn stalled(&self) -> String {
        tracing::warn!("dropped a subscriber of {} that left its notifications unread", self.events.session);
        stalled_message(self.stall, self.events.cursor.next_seq())
    }
}
