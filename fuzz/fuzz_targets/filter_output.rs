#![no_main]
//! Filter-output validation: arbitrary bytes as a filter's stdout through
//! `swivald::parse_output` (`pipeline::filter::parse_output` in the
//! daemon), the pure function the filter chain uses on every stage's
//! output.
//!
//! Beyond "never panics", it checks the fail-closed contract: what is
//! accepted is exactly the `messages` list of a JSON object that did not say
//! `"allow": false`, and every accepted message has a valid role and the ids
//! a provider needs.

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use swivald::parse_output;

fuzz_target!(|data: &[u8]| {
    let json = serde_json::from_slice::<Value>(data).ok();
    match parse_output(data) {
        Ok(messages) => {
            let output = json.expect("parse_output accepted bytes that are not JSON");
            assert_ne!(output.get("allow"), Some(&Value::Bool(false)), "accepted an output that says allow: false");
            assert_eq!(
                output.get("messages"),
                Some(&Value::Array(messages.clone())),
                "the accepted messages are not the output's `messages` list"
            );
            for m in &messages {
                check_accepted_message(m);
            }
        }
        Err(detail) => {
            let detail = detail.to_string();
            if json.is_none() {
                assert!(detail.starts_with("filter returned invalid JSON"), "non-JSON output gave {detail:?}");
            }
        }
    }
});

/// What the provider request builder relies on for every message a filter
/// lets through.
fn check_accepted_message(m: &Value) {
    let role = m.get("role").and_then(Value::as_str);
    assert!(matches!(role, Some("system" | "user" | "assistant" | "tool")), "accepted a message with role {role:?}");
    let non_empty = |v: Option<&Value>| v.and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    if role == Some("tool") {
        assert!(non_empty(m.get("tool_call_id")), "accepted a tool message without tool_call_id: {m}");
    }
    if let Some(Value::Array(calls)) = m.get("tool_calls") {
        for call in calls {
            assert!(non_empty(call.get("id")), "accepted a tool call without id: {call}");
            assert!(non_empty(call.pointer("/function/name")), "accepted a tool call without function.name: {call}");
        }
    }
}
