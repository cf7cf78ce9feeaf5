//! Subscriptions the newline-delimited framing serves itself: a feed is a
//! cursor the connection pulls its next notification from only when it has
//! room to write it. Nothing waits in a queue between the two, so a client
//! that stops reading costs its place in the feed and the line on its way,
//! whatever streams meanwhile, and one that keeps up gets each event
//! without a hop through another task.
//!
//! jsonrpsee's subscriptions push into a queue the connection drains; a
//! queue deep enough for a subscriber that keeps up is what a stalled one
//! holds. The rpc layer implements [`Feeds`] for `session/subscribe`; the
//! other subscriptions stay jsonrpsee's, and WebSocket connections use
//! jsonrpsee's for every one.

use futures::future::BoxFuture;
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::value::RawValue;
use std::time::Duration;

/// The subscription the framing serves natively, and how to open one.
pub trait Feeds: Send + Sync {
    /// The method that opens a feed.
    fn subscribe(&self) -> &'static str;
    /// The method that closes one.
    fn unsubscribe(&self) -> &'static str;
    /// The notification each item is sent as.
    fn notification(&self) -> &'static str;
    /// Open a feed for the subscribe call's `params`, or the error to
    /// answer it with.
    fn open(&self, params: Option<&RawValue>) -> Result<Box<dyn Feed>, ErrorObjectOwned>;
}

/// One open feed.
pub trait Feed: Send {
    /// The next item, serialized, waiting for one when caught up; `None`
    /// once the feed has ended.
    fn next(&mut self) -> BoxFuture<'_, Option<Box<RawValue>>>;
    /// Let go of what was read ahead: the client is not reading.
    fn release(&mut self);
    /// How long the client may read nothing before the feed is closed;
    /// zero: never.
    fn stall(&self) -> Duration;
    /// The message closing a feed whose client read nothing for
    /// [`Feed::stall`]: where to resume from.
    fn stalled(&self) -> String;
}

/// A feed's notification line, as jsonrpsee would send it.
pub(super) fn notification(method: &str, id: u64, item: &RawValue) -> String {
    let head = format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"subscription":{id},"result":"#);
    let mut line = String::with_capacity(head.len() + item.get().len() + 3);
    line.push_str(&head);
    line.push_str(item.get());
    line.push_str("}}\n");
    line
}

/// The line closing a feed with `error`, as jsonrpsee would send it.
pub(super) fn closing(method: &str, id: u64, error: &str) -> String {
    let error = serde_json::to_string(error).expect("strings serialize");
    format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"subscription":{id},"error":{error}}}}}"#) + "\n"
}

/// A new subscription id: random, within what a JavaScript number holds
/// exactly (as jsonrpsee's).
pub(super) fn new_id() -> u64 {
    const JS_NUM_MASK: u64 = !0 >> 11;
    rand::random::<u64>() & JS_NUM_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_byte_for_byte_what_jsonrpsee_sends() {
        let item = serde_json::value::to_raw_value(&serde_json::json!({"seq": 1})).unwrap();
        let line = notification("session/event", 42, &item);
        assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"method\":\"session/event\",\"params\":{\"subscription\":42,\"result\":{\"seq\":1}}}\n");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["params"]["result"]["seq"], 1);
        let close: serde_json::Value = serde_json::from_str(&closing("session/event", 42, "gone \"now\"")).unwrap();
        assert_eq!(close["params"]["error"], "gone \"now\"");
        assert_eq!(close["params"]["subscription"], 42);
    }

    #[test]
    fn ids_fit_a_javascript_number() {
        assert!((0..100).map(|_| new_id()).all(|id| id < 1 << 53));
    }
}
