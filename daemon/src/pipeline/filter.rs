//! The outbound filter chain with Swival's filter contract: each stage gets
//! `{provider, model, call_kind, messages, tools}` on stdin and answers
//! `{"messages": [...]}` (the replacement) or `{"allow": false, "reason": …}`.
//! Every failure blocks the call (fail closed) with Swival's detail text;
//! the caller wraps it as `LLM filter blocked request: <detail>`.

use crate::procs::{Call, Mode, ProcError, ProcessRunner, Script};
use serde_json::{json, Map, Value};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Largest stdout a stage may write before it is killed.
const MAX_STDOUT: usize = 32 * 1024 * 1024;

/// Most stderr bytes of one stage call passed on to events and the log.
const MAX_STDERR_SHOWN: usize = 8 * 1024;
/// Most stderr lines of one stage call passed on.
const MAX_STDERR_LINES: usize = 100;

/// Which kind of provider call is being filtered (declared in the protocol crate).
pub use swival_protocol::CallKind;

/// One configured stage.
#[derive(Debug, Clone)]
pub struct Stage {
    /// What to run.
    pub script: Script,
    /// How its processes are managed.
    pub mode: Mode,
    /// Kill after this long.
    pub timeout: Duration,
    /// The command line, for messages.
    pub display: String,
}

/// Why a filtered call did not go out.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterError {
    /// A stage blocked it; the detail is Swival's text.
    Blocked(String),
    /// The run was cancelled while a stage ran.
    Cancelled,
}

/// What the stages are shown about one call.
#[derive(Debug, Clone, Copy)]
pub struct FilterInput<'a> {
    /// Provider name.
    pub provider: &'a str,
    /// Model id.
    pub model: &'a str,
    /// Agent turn or summary.
    pub call_kind: CallKind,
    /// The outbound messages.
    pub messages: &'a [Value],
    /// The tool schemas offered.
    pub tools: &'a [Value],
}

/// What a stage reads on stdin (Swival's request), written from borrowed
/// parts: `tools` only when some are offered.
#[derive(serde::Serialize)]
struct Payload<'a> {
    provider: &'a str,
    model: &'a str,
    call_kind: &'a str,
    messages: &'a [Value],
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tools: &'a [Value],
}

/// Run every stage in order, each on the previous stage's output.
pub async fn apply(
    stages: &[Stage],
    runner: &ProcessRunner,
    input: FilterInput<'_>,
    cancel: &CancellationToken,
    on_stderr: &(dyn Fn(&Stage, &str) + Sync),
) -> Result<Vec<Value>, FilterError> {
    let mut messages: Vec<Value> = input.messages.iter().map(normalize).collect();
    for stage in stages {
        let payload = Payload {
            provider: input.provider,
            model: input.model,
            call_kind: input.call_kind.as_str(),
            messages: &messages,
            tools: input.tools,
        };
        let stdin = serde_json::to_vec(&payload).expect("JSON serializes");
        let call = Call {
            script: &stage.script,
            mode: stage.mode,
            input: &stdin,
            timeout: stage.timeout,
            max_stdout: MAX_STDOUT,
        };
        let out = match runner.call(call, cancel).await {
            Ok(out) => out,
            Err(ProcError::Cancelled { .. }) => return Err(FilterError::Cancelled),
            Err(e) => return Err(FilterError::Blocked(run_failure(&e, stage))),
        };
        for line in stderr_lines(&out.stderr) {
            on_stderr(stage, &line);
        }
        match out.code {
            Some(0) => {}
            Some(code) => {
                return Err(FilterError::Blocked(format!("filter exited with code {code}: {}", stage.display)))
            }
            // Swival (Python) reports a signal as a negative exit code.
            None => {
                let code = out.signal.map(|sig| format!("-{sig}")).unwrap_or_else(|| "unknown".into());
                return Err(FilterError::Blocked(format!("filter exited with code {code}: {}", stage.display)));
            }
        }
        messages = parse_output(&out.stdout).map_err(|e| FilterError::Blocked(e.to_string()))?;
    }
    Ok(messages.into_iter().map(sanitize_empty_assistant).collect())
}

/// The lines of a stage's stderr that are passed on (Swival prints all of
/// it; a chatty filter must not flood the events and the terminal): the
/// first [`MAX_STDERR_SHOWN`] bytes in at most [`MAX_STDERR_LINES`] lines,
/// then one line saying how much was left out.
pub fn stderr_lines(stderr: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stderr);
    let mut lines = Vec::new();
    let mut shown = 0;
    for line in text.lines() {
        if lines.len() == MAX_STDERR_LINES || shown + line.len() > MAX_STDERR_SHOWN {
            let left = text.len().saturating_sub(shown);
            lines.push(format!("[{left} more bytes of filter stderr not shown]"));
            break;
        }
        shown += line.len() + 1;
        lines.push(line.to_owned());
    }
    lines
}

/// Swival's text for a stage that did not run to completion.
fn run_failure(e: &ProcError, stage: &Stage) -> String {
    match e {
        ProcError::Spawn { program, source } if source.kind() == std::io::ErrorKind::NotFound => {
            format!("filter command not found: {program}")
        }
        ProcError::Spawn { source, .. } => format!("filter command failed to start: {source}"),
        ProcError::Timeout { secs, .. } => {
            format!("filter command timed out after {secs}s: {}", stage.display)
        }
        ProcError::Flood { limit, .. } => {
            format!("filter wrote more than {limit} bytes to stdout and was killed: {}", stage.display)
        }
        other => format!("filter failed: {other}"),
    }
}

/// A message as stages see it: only `role`, `content`, `tool_calls`,
/// `tool_call_id`, `name`, each only when set.
fn normalize(m: &Value) -> Value {
    let mut out = Map::new();
    for key in ["role", "content", "tool_calls", "tool_call_id", "name"] {
        match m.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(calls)) if key == "tool_calls" => {
                let calls: Vec<Value> = calls
                    .iter()
                    .map(|c| {
                        let mut call = json!({"id": c.get("id"), "type": "function", "function": {
                            "name": c.pointer("/function/name"),
                            "arguments": c.pointer("/function/arguments"),
                        }});
                        if let Some(extra) = c.get("extra_content") {
                            call["extra_content"] = extra.clone();
                        }
                        call
                    })
                    .collect();
                out.insert(key.into(), Value::Array(calls));
            }
            Some(v) => {
                out.insert(key.into(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// Assistant messages with neither content nor tool calls get a placeholder,
/// since providers reject them.
fn sanitize_empty_assistant(mut m: Value) -> Value {
    let empty_content = m.get("content").is_none_or(|c| c.is_null() || c.as_str() == Some(""));
    let no_calls = m.get("tool_calls").and_then(Value::as_array).is_none_or(|a| a.is_empty());
    if m.get("role").and_then(Value::as_str) == Some("assistant") && empty_content && no_calls {
        m["content"] = json!("(empty response)");
    }
    m
}

/// Why a stage's stdout lets nothing through; its text is Swival's detail.
#[derive(Debug, thiserror::Error)]
pub enum BadOutput {
    /// Not JSON.
    #[error("filter returned invalid JSON: {0}")]
    InvalidJson(serde_json::Error),
    /// JSON, but not an object.
    #[error("filter output is not a JSON object")]
    NotObject,
    /// `allow: false`, with the stage's reason or Swival's default.
    #[error("{0}")]
    Refused(String),
    /// No `messages`.
    #[error("filter output missing 'messages' key")]
    NoMessages,
    /// `messages` is not a list.
    #[error("filter returned non-list messages")]
    NotList,
    /// Message `index` of the list is not a chat message.
    #[error("filter message [{index}] {why}")]
    Message {
        /// Its place in the list.
        index: usize,
        /// What is wrong with it.
        why: BadMessage,
    },
}

/// What is wrong with one message a stage returned.
#[derive(Debug, thiserror::Error)]
pub enum BadMessage {
    /// Not an object.
    #[error("is not a dict")]
    NotDict,
    /// Its role, as JSON (`None` when missing), is not a chat role.
    #[error("has invalid role: {0}")]
    Role(String),
    /// A tool result without the call it answers.
    #[error("(tool) missing tool_call_id")]
    NoToolCallId,
    /// `tool_calls` is not a list.
    #[error("tool_calls is not a list")]
    CallsNotList,
    /// Call `0` is not an object.
    #[error("tool_calls[{0}] is not a dict")]
    CallNotDict(usize),
    /// Call `0` has no id.
    #[error("tool_calls[{0}] missing id")]
    CallWithoutId(usize),
    /// Call `0` names no function.
    #[error("tool_calls[{0}] missing function.name")]
    CallWithoutName(usize),
}

/// Swival's checks on a stage's stdout, in Swival's order.
pub fn parse_output(stdout: &[u8]) -> Result<Vec<Value>, BadOutput> {
    let v: Value = serde_json::from_slice(stdout).map_err(BadOutput::InvalidJson)?;
    let Value::Object(mut obj) = v else { return Err(BadOutput::NotObject) };
    if obj.get("allow") == Some(&Value::Bool(false)) {
        let reason = obj.get("reason").and_then(Value::as_str).unwrap_or("blocked by filter");
        return Err(BadOutput::Refused(reason.to_owned()));
    }
    let messages = obj.remove("messages").ok_or(BadOutput::NoMessages)?;
    let Value::Array(list) = messages else { return Err(BadOutput::NotList) };
    for (index, m) in list.iter().enumerate() {
        validate_message(m).map_err(|why| BadOutput::Message { index, why })?;
    }
    Ok(list)
}

fn validate_message(m: &Value) -> Result<(), BadMessage> {
    let obj = m.as_object().ok_or(BadMessage::NotDict)?;
    let role = obj.get("role");
    if !matches!(role.and_then(Value::as_str), Some("system" | "user" | "assistant" | "tool")) {
        return Err(BadMessage::Role(role.map(Value::to_string).unwrap_or_else(|| "None".into())));
    }
    let non_empty = |k: &str| obj.get(k).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    if role.and_then(Value::as_str) == Some("tool") && !non_empty("tool_call_id") {
        return Err(BadMessage::NoToolCallId);
    }
    let calls = match obj.get("tool_calls") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(a)) => a,
        Some(Value::Bool(false)) => return Ok(()),
        Some(Value::String(s)) if s.is_empty() => return Ok(()),
        Some(Value::Object(o)) if o.is_empty() => return Ok(()),
        Some(_) => return Err(BadMessage::CallsNotList),
    };
    for (j, c) in calls.iter().enumerate() {
        let call = c.as_object().ok_or(BadMessage::CallNotDict(j))?;
        if call.get("id").and_then(Value::as_str).is_none_or(|s| s.is_empty()) {
            return Err(BadMessage::CallWithoutId(j));
        }
        let name_ok = call
            .get("function")
            .and_then(Value::as_object)
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        if !name_ok {
            return Err(BadMessage::CallWithoutName(j));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> String {
        parse_output(s.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn stderr_is_passed_on_up_to_a_bound() {
        assert_eq!(stderr_lines(b"redact_filter: scrubbed 2 messages\n"), ["redact_filter: scrubbed 2 messages"]);
        assert!(stderr_lines(b"").is_empty());
        let many = "x\n".repeat(500);
        let lines = stderr_lines(many.as_bytes());
        assert_eq!(lines.len(), MAX_STDERR_LINES + 1);
        assert_eq!(lines.last().unwrap(), "[800 more bytes of filter stderr not shown]");
        let long = "y".repeat(100_000);
        assert_eq!(stderr_lines(long.as_bytes()), ["[100000 more bytes of filter stderr not shown]"]);
    }

    #[test]
    fn allow_false_blocks_with_reason_or_default() {
        assert_eq!(err(r#"{"allow": false, "reason": "no secrets"}"#), "no secrets");
        assert_eq!(err(r#"{"allow": false}"#), "blocked by filter");
        // A string "false" does not block; the messages are then required.
        assert_eq!(err(r#"{"allow": "false"}"#), "filter output missing 'messages' key");
    }

    #[test]
    fn allow_false_wins_over_messages() {
        assert_eq!(err(r#"{"allow": false, "messages": []}"#), "blocked by filter");
    }

    #[test]
    fn malformed_outputs_give_swivals_details() {
        assert!(err("").starts_with("filter returned invalid JSON: "));
        assert!(err("not json").starts_with("filter returned invalid JSON: "));
        assert_eq!(err("[1]"), "filter output is not a JSON object");
        assert_eq!(err("{}"), "filter output missing 'messages' key");
        assert_eq!(err(r#"{"messages": {}}"#), "filter returned non-list messages");
        assert_eq!(err(r#"{"messages": [3]}"#), "filter message [0] is not a dict");
        assert_eq!(err(r#"{"messages": [{"role": "bot"}]}"#), r#"filter message [0] has invalid role: "bot""#);
        assert_eq!(err(r#"{"messages": [{"content": "x"}]}"#), "filter message [0] has invalid role: None");
        assert_eq!(
            err(r#"{"messages": [{"role": "tool", "content": "x"}]}"#),
            "filter message [0] (tool) missing tool_call_id"
        );
        assert_eq!(
            err(r#"{"messages": [{"role": "assistant", "tool_calls": "x"}]}"#),
            "filter message [0] tool_calls is not a list"
        );
        assert_eq!(
            err(r#"{"messages": [{"role": "assistant", "tool_calls": [1]}]}"#),
            "filter message [0] tool_calls[0] is not a dict"
        );
        assert_eq!(
            err(
                r#"{"messages": [{"role": "user"}, {"role": "assistant", "tool_calls": [{"function": {"name": "x"}}]}]}"#
            ),
            "filter message [1] tool_calls[0] missing id"
        );
        assert_eq!(
            err(r#"{"messages": [{"role": "assistant", "tool_calls": [{"id": "a", "function": {}}]}]}"#),
            "filter message [0] tool_calls[0] missing function.name"
        );
    }

    #[test]
    fn valid_output_replaces_messages_and_keeps_extra_keys() {
        let out = parse_output(br#"{"messages": [{"role": "user", "content": "hi", "x": 1}]}"#).unwrap();
        assert_eq!(out, vec![json!({"role": "user", "content": "hi", "x": 1})]);
        assert!(parse_output(br#"{"messages": []}"#).unwrap().is_empty());
    }

    #[test]
    fn stages_see_only_swivals_message_keys() {
        let m = json!({"role": "assistant", "content": null, "reasoning_content": "r", "_swival_synthetic": true,
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}, "index": 0}]});
        assert_eq!(
            normalize(&m),
            json!({"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        );
    }
}
