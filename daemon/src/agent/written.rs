//! Tool calls a reply writes out as text instead of calling them: a small
//! model with no tools offered answers so, and so does one whose server's
//! chat template did not catch its call (Qwen2.5-Coder-1.5B on llama.cpp).
//! The turn loop runs such calls when each names an offered tool, and a
//! stuck run's last word written so is no answer.

use serde_json::Value;

/// Whether `text` is nothing but tool calls written out: JSON objects with
/// a `name` and `arguments` (or `parameters`), one or one per line, bare
/// or in a code fence. A small model with no tools offered answers so.
pub fn is_tool_call_text(text: &str) -> bool {
    written_calls(text).is_some()
}

/// The tool calls `text` writes out (see [`is_tool_call_text`]), when each
/// names one of the `offered` tools: a small model whose server's chat
/// template did not catch its call answers so, and it meant the call. Ids
/// are made from `turn` and the call's place, unique in a conversation.
pub fn text_calls(text: &str, offered: &[&str], turn: u64) -> Option<Vec<crate::message::ToolCall>> {
    let calls = written_calls(text)?;
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let name = call.get("name")?.as_str()?;
            offered.contains(&name).then_some(())?;
            let args = call.get("arguments").or_else(|| call.get("parameters"))?;
            let arguments = match args {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some(crate::message::ToolCall {
                id: format!("text_call_{turn}_{}", i + 1),
                name: name.to_owned(),
                arguments,
            })
        })
        .collect()
}

/// The call objects of a reply that is nothing but tool calls written out.
fn written_calls(text: &str) -> Option<Vec<Value>> {
    let body = text.trim();
    let body = match body.strip_prefix("```") {
        Some(rest) => {
            let rest = rest.trim_end().strip_suffix("```").unwrap_or(rest);
            // The fence's language tag, if any, ends its first line.
            rest.split_once('\n').map_or(rest, |(tag, code)| if tag.contains('{') { rest } else { code })
        }
        None => body,
    };
    let is_call = |v: &Value| {
        v.get("name").is_some_and(Value::is_string) && (v.get("arguments").is_some() || v.get("parameters").is_some())
    };
    if let Ok(v) = serde_json::from_str::<Value>(body.trim()) {
        let calls = match v {
            Value::Array(items) => items,
            other => vec![other],
        };
        return (!calls.is_empty() && calls.iter().all(is_call)).then_some(calls);
    }
    let calls: Vec<Value> = body
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str::<Value>(l).ok().filter(is_call))
        .collect::<Option<_>>()?;
    (!calls.is_empty()).then_some(calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_written_as_text_are_recognised_and_answers_are_not() {
        let fenced = "```json\n{\"name\": \"read_file\", \"arguments\": {\"file_path\": \"a.md\"}}\n```";
        assert!(is_tool_call_text(fenced));
        let two = "```\n{\"name\": \"a\", \"arguments\": {}}\n{\"name\": \"b\", \"parameters\": {}}\n```";
        assert!(is_tool_call_text(two));
        assert!(is_tool_call_text(r#"[{"name": "a", "arguments": {}}]"#));
        assert!(is_tool_call_text(r#"{"name": "a", "arguments": "{}"}"#));
        for answer in
            ["Aurora", "3", "Done: set x to 2.", "```python\nprint(1)\n```", r#"{"name": "svc", "timeout": 60}"#, ""]
        {
            assert!(!is_tool_call_text(answer), "{answer}");
        }
    }

    #[test]
    fn tool_calls_written_as_text_become_calls_only_when_every_one_names_an_offered_tool() {
        let offered = ["read_file", "edit_file"];
        let text = r#"{"name": "read_file", "arguments": {"file_path": "hello.py", "tail_lines": null}}"#;
        let calls = text_calls(text, &offered, 3).unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("text_call_3_1", "read_file"));
        assert_eq!(calls[0].arguments, r#"{"file_path":"hello.py","tail_lines":null}"#);
        // Arguments already a JSON string are kept as the model wrote them.
        let calls = text_calls(r#"{"name": "read_file", "arguments": "{\"file_path\": \"a\"}"}"#, &offered, 1).unwrap();
        assert_eq!(calls[0].arguments, r#"{"file_path": "a"}"#);
        let two =
            "```json\n{\"name\": \"read_file\", \"arguments\": {}}\n{\"name\": \"edit_file\", \"parameters\": {}}\n```";
        let ids: Vec<String> = text_calls(two, &offered, 2).unwrap().into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["text_call_2_1", "text_call_2_2"]);
        // A tool not offered, or an answer, stays text.
        assert!(text_calls(r#"{"name": "run_command", "arguments": {"command": ["ls"]}}"#, &offered, 1).is_none());
        assert!(text_calls("Aurora", &offered, 1).is_none());
        assert!(text_calls(r#"{"name": "svc", "timeout": 60}"#, &offered, 1).is_none());
    }
}
