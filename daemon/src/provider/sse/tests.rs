//! The stream assembler against the streams servers send.

use super::*;
use crate::provider::FinishReason;
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
    assert_eq!(r.finish_reason.as_ref().map(FinishReason::as_str), Some("stop"));
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
fn fields_of_an_unexpected_type_count_as_absent() {
    let (r, d) = assemble(concat!(
        "data: 5\n",
        "data: {\"choices\":{}}\n",
        "data: {\"choices\":[{\"delta\":{\"content\":7}}]}\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\\nb\",\"tool_calls\":[{\"index\":-1,\"id\":3,\"function\":{\"name\":\"x\"}}]}}]}\n",
        "data: {\"choices\":[{\"finish_reason\":\"stop\",\"delta\":[]}],\"usage\":null}\n",
        "data: [DONE]\n"
    ));
    let r = r.unwrap();
    assert_eq!(d, ["a\nb"], "an escaped string is read too");
    assert_eq!(
        (r.content.as_deref(), r.finish_reason.as_ref().map(FinishReason::as_str)),
        (Some("a\nb"), Some("stop"))
    );
    assert_eq!((r.tool_calls.len(), r.tool_calls[0].id.as_str(), r.tool_calls[0].name.as_str()), (1, "", "x"));
    assert!(r.usage.is_none());
}

#[test]
fn an_error_key_ends_the_stream_even_when_null() {
    let (r, _) = assemble("data: {\"error\":{\"message\":\"overloaded\"}}\n");
    assert!(matches!(&r, Err(ProviderError::Transport(m)) if m.contains("overloaded")), "{r:?}");
    let (r, _) = assemble("data: {\"error\":null}\n");
    assert!(matches!(&r, Err(ProviderError::Transport(m)) if m.ends_with("null")), "{r:?}");
}

#[test]
fn truncated_json_chunk_is_malformed() {
    let (r, _) = assemble("data: {\"choices\":[{\"delta\":{\"cont\n");
    assert!(matches!(r, Err(ProviderError::Malformed(_))));
}

#[test]
fn a_reply_repeating_a_line_is_cut_after_its_first_copy_and_ends_as_cut_by_the_limit() {
    let mut a = StreamAssembler::default();
    let chunk = |t: &str| format!("data: {}\n\n", json!({"choices": [{"delta": {"content": t}}]}));
    a.feed(chunk("Sure:\n").as_bytes(), &mut |_| {}).unwrap();
    let mut fed = 0;
    while !a.runaway() {
        a.feed(chunk("same line\n").as_bytes(), &mut |_| {}).unwrap();
        fed += 1;
        assert!(fed < 1000, "never cut");
    }
    // Chunks after the cut are not taken.
    a.feed(chunk("more").as_bytes(), &mut |_| {}).unwrap();
    let r = a.finish().unwrap();
    assert_eq!(r.content.as_deref(), Some("Sure:\nsame line"));
    assert_eq!(r.finish_reason.as_ref().map(FinishReason::as_str), Some("length"));
    let cut = r.runaway.unwrap();
    assert_eq!((cut.call, cut.unit.as_str()), (None, "\nsame line"));
    assert!(cut.repeats >= 16, "{cut:?}");
}

#[test]
fn a_tool_call_whose_arguments_repeat_is_cut_and_named_by_its_place() {
    let mut a = StreamAssembler::default();
    let call = |delta: Value| format!("data: {}\n\n", json!({"choices": [{"delta": {"tool_calls": [delta]}}]}));
    let first = json!({"index": 0, "id": "a", "function": {"name": "think", "arguments": "{}"}});
    a.feed(call(first).as_bytes(), &mut |_| {}).unwrap();
    let second = json!({"index": 1, "id": "b", "function": {"name": "write_file", "arguments": "{\"content\": \""}});
    a.feed(call(second).as_bytes(), &mut |_| {}).unwrap();
    while !a.runaway() {
        a.feed(call(json!({"index": 1, "function": {"arguments": "x = 1\\n"}})).as_bytes(), &mut |_| {}).unwrap();
    }
    let r = a.finish().unwrap();
    assert_eq!(r.runaway.unwrap().call, Some(1));
    assert_eq!(r.tool_calls.len(), 2);
    assert!(r.tool_calls[1].arguments.len() < 100, "{}", r.tool_calls[1].arguments);
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
    assert_eq!(r.finish_reason.as_ref().map(FinishReason::as_str), Some("tool_calls"));
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].id, id);
    assert_eq!(r.tool_calls[0].name, "edit_file");
    let args: Value = serde_json::from_str(&r.tool_calls[0].arguments).unwrap();
    assert_eq!(args, json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}));
    assert_eq!(r.usage.as_ref().unwrap()["prompt_tokens"], 812);
    assert_eq!(r.timings, Some(json!({"prompt_n": 812, "predicted_n": 41, "prompt_ms": 9000.5})));
    // Sent back as llama-server expects it: the id as it came.
    assert_eq!(r.to_message().to_value()["tool_calls"][0]["id"], id);
}
