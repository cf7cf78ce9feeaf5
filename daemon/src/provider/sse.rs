//! Assembling a streamed chat completion: SSE lines in, one [`Reply`] out,
//! with text deltas reported as they arrive.

use super::{ProviderError, Reply, ToolCall};
use serde_json::Value;

/// Accumulates `chat.completion.chunk` events.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    /// Bytes of an incomplete line.
    pending: Vec<u8>,
    /// The reply so far.
    reply: Reply,
    /// Text so far.
    text: String,
    /// Tool calls so far, by stream index.
    calls: Vec<ToolCall>,
    /// `data: [DONE]` was seen.
    done: bool,
    /// A chunk carried a choice (usage-only chunks have `choices: []`).
    saw_choice: bool,
}

impl StreamAssembler {
    /// Feed raw bytes; `on_text` gets each text delta.
    pub fn feed(&mut self, bytes: &[u8], on_text: &mut dyn FnMut(&str)) -> Result<(), ProviderError> {
        self.pending.extend_from_slice(bytes);
        // Complete lines are read in place and dropped from the buffer
        // together (dropping each as it is read moved the rest every time).
        let pending = std::mem::take(&mut self.pending);
        let mut read = 0;
        let mut result = Ok(());
        while let Some(offset) = pending[read..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&pending[read..=read + offset]);
            read += offset + 1;
            if let Err(e) = self.line(line.trim_end_matches(['\r', '\n']), on_text) {
                result = Err(e);
                break;
            }
        }
        self.pending = pending;
        self.pending.drain(..read);
        result
    }

    fn line(&mut self, line: &str, on_text: &mut dyn FnMut(&str)) -> Result<(), ProviderError> {
        let Some(data) = line.strip_prefix("data:") else {
            return Ok(());
        };
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| ProviderError::Malformed(format!("stream chunk is not JSON ({e}): {}", preview(data))))?;
        if let Some(err) = chunk.get("error") {
            return Err(ProviderError::Transport(format!("provider error in stream: {err}")));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.reply.usage = Some(usage.clone());
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(());
        };
        self.saw_choice = true;
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.reply.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            if !text.is_empty() {
                self.text.push_str(text);
                on_text(text);
            }
        }
        for tc in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = tc.get("index").and_then(Value::as_u64).unwrap_or(self.calls.len() as u64) as usize;
            while self.calls.len() <= index {
                self.calls.push(ToolCall { id: String::new(), name: String::new(), arguments: String::new() });
            }
            let call = &mut self.calls[index];
            if let Some(id) = tc.get("id").and_then(Value::as_str) {
                call.id = id.to_owned();
            }
            if let Some(f) = tc.get("function") {
                if let Some(name) = f.get("name").and_then(Value::as_str) {
                    call.name.push_str(name);
                }
                if let Some(args) = f.get("arguments").and_then(Value::as_str) {
                    call.arguments.push_str(args);
                }
            }
        }
        Ok(())
    }

    /// The assembled reply; an error when the stream ended early.
    pub fn finish(mut self) -> Result<Reply, ProviderError> {
        if !self.done && self.reply.finish_reason.is_none() {
            return Err(ProviderError::Transport("the stream ended before the reply was complete".into()));
        }
        // A complete stream in which no chunk carried a choice is Swival's
        // empty choices list.
        if !self.saw_choice {
            return Err(ProviderError::EmptyChoices);
        }
        self.reply.content = (!self.text.is_empty()).then_some(self.text);
        self.reply.tool_calls = self.calls.into_iter().filter(|c| !c.name.is_empty()).collect();
        Ok(self.reply)
    }
}

/// The first 200 characters of a payload, for error messages.
pub fn preview(s: &str) -> String {
    let cut: String = s.chars().take(200).collect();
    if cut.len() < s.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assemble(input: &str) -> (Result<Reply, ProviderError>, Vec<String>) {
        let mut a = StreamAssembler::default();
        let mut deltas = Vec::new();
        let fed = a.feed(input.as_bytes(), &mut |t| deltas.push(t.to_owned()));
        (fed.and_then(|_| a.finish()), deltas)
    }

    #[test]
    fn text_deltas_are_joined_and_reported() {
        let (r, d) = assemble(
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
        );
        let r = r.unwrap();
        assert_eq!(r.content.as_deref(), Some("Hello"));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(d, ["Hel", "lo"]);
    }

    #[test]
    fn tool_call_fragments_are_assembled_by_index() {
        let (r, _) = assemble(concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]}}]}\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"file_path\\\":\"}}]}}]}\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"a.txt\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n",
            "data: [DONE]\n"
        ));
        let r = r.unwrap();
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].id, "c1");
        assert_eq!(r.tool_calls[0].arguments, "{\"file_path\":\"a.txt\"}");
    }

    #[test]
    fn a_complete_stream_without_a_choice_is_an_empty_choices_list() {
        let (r, _) = assemble("data: {\"choices\":[],\"usage\":{\"total_tokens\":3}}\n\ndata: [DONE]\n\n");
        assert!(matches!(r, Err(ProviderError::EmptyChoices)), "{r:?}");
    }

    #[test]
    fn stream_cut_before_the_end_is_an_error() {
        let (r, _) = assemble("data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n");
        assert!(matches!(r, Err(ProviderError::Transport(_))));
    }

    #[test]
    fn truncated_json_chunk_is_malformed() {
        let (r, _) = assemble("data: {\"choices\":[{\"delta\":{\"cont\n");
        assert!(matches!(r, Err(ProviderError::Malformed(_))));
    }

    /// A stream as llama.cpp's llama-server sends it: a role-only first
    /// chunk with `content: null`, a 32-character id without `call_`, the
    /// model's raw argument text in fragments carrying only `index`, an
    /// empty finish delta, a usage-only last chunk with `choices: []`, and
    /// fields of its own (`timings`, `system_fingerprint`).
    #[test]
    fn a_llama_server_stream_is_assembled() {
        let id = "Xq3vN8kPz2LmT7wRbC5yH1dJ9sFgA4eU";
        let chunks = [
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}],"system_fingerprint":"b1-abc","object":"chat.completion.chunk"}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":"edit_file","arguments":"{\n  \"file_path\": \"a.py\",\n"}}]},"finish_reason":null}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"  \"old_string\": \"x = 1\",\n  \"new_string\": \"x = 2\"\n}"}}]},"finish_reason":null}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"timings":{"prompt_n":812,"predicted_n":41}}),
            json!({"choices":[],"usage":{"prompt_tokens":812,"completion_tokens":41,"total_tokens":853},"timings":{"prompt_ms":9000.5}}),
        ];
        let mut input: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        input.push_str("data: [DONE]\n\n");
        let (r, deltas) = assemble(&input);
        let r = r.unwrap();
        assert!(deltas.is_empty(), "no text: {deltas:?}");
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].id, id);
        assert_eq!(r.tool_calls[0].name, "edit_file");
        let args: Value = serde_json::from_str(&r.tool_calls[0].arguments).unwrap();
        assert_eq!(args, json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}));
        assert_eq!(r.usage.as_ref().unwrap()["prompt_tokens"], 812);
        // Sent back as llama-server expects it: the id as it came.
        assert_eq!(r.to_message()["tool_calls"][0]["id"], id);
    }
}
