//! The OpenAI-compatible HTTP wire: `/chat/completions` (streamed or not)
//! and `/models`.

use super::retry::parse_retry_after;
use super::sse::{preview, StreamAssembler};
use super::{CallObserver, ProviderError, ProviderSettings, Reply, ToolCall};
use serde_json::Value;
use std::time::Duration;

/// One entry of `/models`.
#[derive(Debug, Clone)]
pub struct ModelEntry {
    /// Model id.
    pub id: String,
    /// Context window, from whichever field the server uses.
    pub context_window: Option<u64>,
}

fn authorized(req: reqwest::RequestBuilder, settings: &ProviderSettings) -> reqwest::RequestBuilder {
    let req = req.header(reqwest::header::USER_AGENT, &settings.user_agent);
    match &settings.api_key {
        Some(key) => req.bearer_auth(key),
        None => req,
    }
}

/// `GET {base}/models` with a short timeout.
pub async fn list_models(
    http: &reqwest::Client,
    settings: &ProviderSettings,
) -> Result<Vec<ModelEntry>, ProviderError> {
    let url = format!("{}/models", settings.base_url.trim_end_matches('/'));
    let resp =
        authorized(http.get(&url), settings).timeout(Duration::from_secs(10)).send().await.map_err(|e| {
            match e.is_connect() {
                true => ProviderError::Unreachable(describe(&e)),
                false => ProviderError::Transport(describe(&e)),
            }
        })?;
    let status = resp.status();
    let body: Value = resp.json().await.map_err(|e| ProviderError::Malformed(e.to_string()))?;
    if !status.is_success() {
        return Err(ProviderError::Http { status: status.as_u16(), message: error_message(&body), retry_after: None });
    }
    let entries = body.get("data").and_then(Value::as_array).cloned().unwrap_or_default();
    Ok(entries
        .iter()
        .filter_map(|e| {
            let id = e.get("id").and_then(Value::as_str)?.to_owned();
            let context_window = ["context_length", "max_model_len", "max_context_length", "context_window"]
                .iter()
                .find_map(|k| e.get(*k).and_then(Value::as_u64));
            Some(ModelEntry { id, context_window })
        })
        .collect())
}

/// One attempt at `POST {base}/chat/completions`.
pub async fn chat(
    http: &reqwest::Client,
    settings: &ProviderSettings,
    body: &super::RequestBody<'_>,
    observer: &dyn CallObserver,
) -> Result<Reply, ProviderError> {
    let url = format!("{}/chat/completions", settings.base_url.trim_end_matches('/'));
    let mut resent = 0;
    let resp = loop {
        match authorized(http.post(&url), settings).timeout(settings.timeout).json(body).send().await {
            Ok(resp) => break resp,
            // Sent on a pooled connection the server had already closed
            // (llama-server closes idle keep-alive connections): nothing
            // came back, so it goes again at once on a fresh connection;
            // not a retry, no backoff.
            Err(e) if resent < MAX_RESENDS && closed_before_reply(&e) => {
                resent += 1;
                tracing::debug!("provider closed a pooled connection; sending again: {}", describe(&e));
            }
            Err(e) if resent > 0 => {
                return Err(ProviderError::Transport(format!(
                    "{} (sent {} times; each connection closed before a reply)",
                    describe(&e),
                    resent + 1
                )))
            }
            Err(e) if e.is_connect() => return Err(ProviderError::Unreachable(describe(&e))),
            Err(e) => return Err(ProviderError::Transport(describe(&e))),
        }
    };
    let status = resp.status();
    if !status.is_success() {
        let retry_after =
            resp.headers().get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
        let text = resp.text().await.unwrap_or_default();
        let message =
            serde_json::from_str::<Value>(&text).map(|v| error_message(&v)).unwrap_or_else(|_| preview(&text));
        return Err(ProviderError::Http { status: status.as_u16(), message, retry_after });
    }
    let streamed = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/event-stream"));
    if streamed {
        let mut resp = resp;
        let mut assembler = StreamAssembler::default();
        let mut on_text = |t: &str| observer.text_delta(t);
        while let Some(chunk) = resp.chunk().await.map_err(|e| ProviderError::Transport(describe(&e)))? {
            assembler.feed(&chunk, &mut on_text)?;
            if settings.cut_runaway && assembler.runaway() {
                // Dropping the response mid-body closes its connection,
                // and a server stops generating for a client that left.
                tracing::debug!("the reply keeps repeating itself; cutting its stream");
                break;
            }
        }
        drop(resp);
        return assembler.finish();
    }
    let text = resp.text().await.map_err(|e| ProviderError::Transport(describe(&e)))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| ProviderError::Malformed(format!("reply is not JSON ({e}): {}", preview(&text))))?;
    parse_completion(&value)
}

/// A non-streamed `chat.completion`; with several choices, the one with
/// tool calls wins.
fn parse_completion(v: &Value) -> Result<Reply, ProviderError> {
    let choices = v
        .get("choices")
        .and_then(Value::as_array)
        .ok_or_else(|| ProviderError::Malformed(format!("reply has no choices: {}", preview(&v.to_string()))))?;
    if choices.is_empty() {
        return Err(ProviderError::EmptyChoices);
    }
    let choice = choices
        .iter()
        .find(|c| c.pointer("/message/tool_calls").and_then(Value::as_array).is_some_and(|a| !a.is_empty()))
        .unwrap_or(&choices[0]);
    let msg = choice.get("message").ok_or_else(|| ProviderError::Malformed("choice has no message".into()))?;
    let tool_calls = msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|tc| {
            let f = tc.get("function")?;
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            Some(ToolCall {
                id: tc.get("id").and_then(Value::as_str).unwrap_or_default().to_owned(),
                name: f.get("name").and_then(Value::as_str)?.to_owned(),
                arguments,
            })
        })
        .collect();
    Ok(Reply {
        content: msg.get("content").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned),
        tool_calls,
        finish_reason: choice.get("finish_reason").and_then(Value::as_str).map(super::FinishReason::parse),
        usage: v.get("usage").filter(|u| !u.is_null()).cloned(),
        timings: v.get("timings").filter(|u| u.is_object()).cloned(),
        runaway: None,
        reasoning: ["reasoning_content", "reasoning"]
            .iter()
            .find_map(|k| msg.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()))
            .map(str::to_owned),
    })
}

/// The provider's own message from an error body, else the body.
fn error_message(v: &Value) -> String {
    v.pointer("/error/message")
        .or_else(|| v.get("error").filter(|e| e.is_string()))
        .or_else(|| v.get("message"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| preview(&v.to_string()))
}

/// reqwest's error with its causes, which carry the useful part.
/// Sends of one attempt on connections found closed, at most.
const MAX_RESENDS: u32 = 2;

/// Whether `e` is a connection that closed before any byte of the reply
/// came back (not a timeout, not a refused connection).
fn closed_before_reply(e: &reqwest::Error) -> bool {
    if e.is_timeout() || e.is_connect() {
        return false;
    }
    use std::io::ErrorKind;
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        if let Some(h) = cause.downcast_ref::<hyper::Error>() {
            if h.is_incomplete_message() || h.is_canceled() || h.is_closed() {
                return true;
            }
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
            );
        }
        source = cause.source();
    }
    false
}

fn describe(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    if e.is_timeout() {
        s.push_str(" (request timed out; raise provider_timeout if the model is slow)");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::FinishReason;
    use serde_json::json;

    #[test]
    fn the_choice_with_tool_calls_wins() {
        let v = json!({"choices": [
            {"message": {"content": "thinking"}, "finish_reason": "stop"},
            {"message": {"content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "think", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}
        ]});
        let r = parse_completion(&v).unwrap();
        assert_eq!(r.tool_calls[0].name, "think");
        assert_eq!(r.finish_reason.as_ref().map(FinishReason::as_str), Some("tool_calls"));
    }

    #[test]
    fn an_empty_choices_list_is_final_but_missing_choices_are_malformed() {
        assert!(matches!(parse_completion(&json!({"choices": []})), Err(ProviderError::EmptyChoices)));
        assert!(matches!(parse_completion(&json!({"id": "x"})), Err(ProviderError::Malformed(_))));
    }

    #[test]
    fn openai_error_body_message_is_extracted() {
        let v = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}});
        assert_eq!(error_message(&v), "Incorrect API key provided");
    }

    /// A non-streamed reply as llama-server sends it: `content: ""` beside
    /// the tool calls, an id without `call_`, the arguments as the model
    /// wrote them (newlines, indentation), and fields of its own.
    #[test]
    fn a_llama_server_reply_is_read() {
        let v = json!({"choices": [{"finish_reason": "tool_calls", "index": 0, "message": {
            "role": "assistant", "content": "",
            "tool_calls": [{"type": "function", "id": "pQ8rT1vW3xY5zA7bC9dE2fG4hJ6kL0mN",
                "function": {"name": "read_file", "arguments": "{\n    \"file_path\": \"src/main.py\"\n}"}}]}}],
            "created": 1, "model": "qwen2.5-coder-1.5b-instruct", "system_fingerprint": "b1",
            "object": "chat.completion", "usage": {"completion_tokens": 20, "prompt_tokens": 700, "total_tokens": 720},
            "id": "chatcmpl-abc", "timings": {"prompt_n": 700}});
        let r = parse_completion(&v).unwrap();
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].id, "pQ8rT1vW3xY5zA7bC9dE2fG4hJ6kL0mN");
        let args: Value = serde_json::from_str(&r.tool_calls[0].arguments).unwrap();
        assert_eq!(args["file_path"], "src/main.py");
        assert_eq!(r.finish_reason.as_ref().map(FinishReason::as_str), Some("tool_calls"));
    }
}
