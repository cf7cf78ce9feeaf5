//! What the model sees of an MCP tool result (Swival's `_normalize_result`
//! and `_guard_mcp_output`): text blocks joined, images and audio as a
//! note, embedded resources as their text, structured content when there
//! is nothing else, `isError` as an `error:` result; past 20 KiB the whole
//! output goes to a spill file (at most 10 MiB) and the model gets a preview.

use crate::toolcall::ToolOutcome;
use serde_json::Value;
use std::path::Path;

/// Inline limit of one MCP result.
pub const INLINE_LIMIT: usize = 20 * 1024;
/// Most bytes of one result written to its spill file.
pub const FILE_LIMIT: usize = 10 * 1024 * 1024;

/// A `tools/call` result (its JSON) as the tool message's text, failed
/// when the server said so (`isError`, or an `{"ok": false}` envelope).
pub fn normalize(result: &Value) -> ToolOutcome {
    let blocks = result.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if let Some(envelope) = envelope(blocks) {
        return envelope;
    }
    let mut parts = Vec::new();
    for block in blocks {
        let field = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
        let ty = field("type");
        match ty {
            "text" => parts.push(field("text").to_owned()),
            "image" | "audio" => {
                let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("unknown");
                parts.push(format!("[{ty}: {mime}, {} bytes]", field("data").len()));
            }
            "resource" => {
                let resource = block.get("resource");
                match resource.and_then(|r| r.get("text")).and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    Some(text) => parts.push(text.to_owned()),
                    None => {
                        let uri = resource.and_then(|r| r.get("uri")).and_then(Value::as_str).unwrap_or("unknown");
                        parts.push(format!("[resource: {uri}]"));
                    }
                }
            }
            "resource_link" => parts.push(format!("[resource: {}]", field("uri"))),
            other => {
                let other = if other.is_empty() { "unknown" } else { other };
                parts.push(format!("[{other}: unsupported content type]"));
            }
        }
    }
    let mut text = parts.join("\n");
    if text.is_empty() {
        if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
            text = structured.to_string();
        }
    }
    if result.get("isError").and_then(Value::as_bool).unwrap_or(false) {
        return ToolOutcome::failed(if text.is_empty() {
            "error: MCP tool returned an error".to_owned()
        } else {
            format!("error: {text}")
        });
    }
    ToolOutcome::ok(if text.is_empty() { "(empty result)".to_owned() } else { text })
}

/// Swival's fast path for `{"ok": …}` envelopes in a text block.
fn envelope(blocks: &[Value]) -> Option<ToolOutcome> {
    for block in blocks.iter().filter(|b| b.get("type").and_then(Value::as_str) == Some("text")) {
        let Some(Value::Object(payload)) =
            block.get("text").and_then(Value::as_str).and_then(|t| serde_json::from_str::<Value>(t).ok())
        else {
            continue;
        };
        match payload.get("ok") {
            Some(Value::Bool(false)) => {
                let text = |k: &str| payload.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
                let stack = text("stack").and_then(|s| s.lines().next()).filter(|s| !s.is_empty());
                let msg = text("error").or(text("message")).or(stack).unwrap_or("MCP tool returned an error");
                return Some(ToolOutcome::failed(format!("error: {msg}")));
            }
            Some(Value::Bool(true)) if payload.contains_key("result") => {
                return Some(ToolOutcome::ok(payload["result"].to_string()))
            }
            _ => {}
        }
    }
    None
}

/// `output` of tool `tool` as the model gets it: inline up to
/// [`INLINE_LIMIT`], else spilled under `base` with a preview (a failure
/// stays one).
pub fn guard(mut output: ToolOutcome, tool: &str, base: &Path) -> ToolOutcome {
    if output.text.len() <= INLINE_LIMIT {
        return output;
    }
    let kept = crate::sandbox::spill::truncate_utf8(&output.text, FILE_LIMIT);
    let cut = kept.len() < output.text.len();
    output.text = crate::sandbox::spill::save_large_tool_output(kept, base, INLINE_LIMIT, cut, tool);
    output
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_images_and_resources_become_one_text() {
        let r = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///x", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///y", "blob": "AA"}},
            {"type": "weird"}
        ]});
        assert_eq!(
            normalize(&r).text,
            "hello\n[image: image/png, 4 bytes]\nbody\n[resource: file:///y]\n[weird: unsupported content type]"
        );
    }

    #[test]
    fn is_error_becomes_an_error_result() {
        assert_eq!(
            normalize(&json!({"content": [{"type": "text", "text": "no such file"}], "isError": true})),
            ToolOutcome::failed("error: no such file".into())
        );
        assert_eq!(
            normalize(&json!({"content": [], "isError": true})),
            ToolOutcome::failed("error: MCP tool returned an error".into())
        );
        assert_eq!(normalize(&json!({"content": []})), ToolOutcome::ok("(empty result)".into()));
        // A result is what the server said it is, whatever its text reads.
        let looks_failed = json!({"content": [{"type": "text", "text": "error: none found"}]});
        assert!(!normalize(&looks_failed).failed);
    }

    #[test]
    fn structured_content_shows_when_nothing_else_does() {
        assert_eq!(normalize(&json!({"content": [], "structuredContent": {"sum": 3}})).text, r#"{"sum":3}"#);
    }

    #[test]
    fn ok_envelopes_are_unwrapped() {
        let t = |s: &str| json!({"content": [{"type": "text", "text": s}]});
        assert_eq!(normalize(&t(r#"{"ok": false, "error": "bad"}"#)), ToolOutcome::failed("error: bad".into()));
        assert_eq!(
            normalize(&t(r#"{"ok": false, "stack": "E: x\n at y"}"#)),
            ToolOutcome::failed("error: E: x".into())
        );
        assert_eq!(normalize(&t(r#"{"ok": true, "result": [1]}"#)), ToolOutcome::ok("[1]".into()));
    }

    #[test]
    fn large_output_spills_with_the_tool_named() {
        let base = tempfile::tempdir().unwrap();
        let shown = guard(ToolOutcome::ok("x".repeat(INLINE_LIMIT + 1)), "mcp__ev__echo", base.path()).text;
        assert!(shown.starts_with("Tool output from mcp__ev__echo too large for context (20.0KB)."), "{shown}");
        assert_eq!(guard(ToolOutcome::ok("small".into()), "t", base.path()).text, "small");
        // A failure spilled for its size is still a failure.
        let long = ToolOutcome::failed(format!("error: {}", "x".repeat(INLINE_LIMIT)));
        assert!(guard(long, "t", base.path()).failed);
    }
}
