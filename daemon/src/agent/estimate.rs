//! The rough token count Swival falls back to: four characters a token,
//! over the compact JSON of the messages and tool schemas. Counted by
//! walking the values (the length their serialisation would have), not by
//! serialising them: it runs on every provider call, over the whole
//! conversation and every schema.

use serde_json::Value;

/// Rough token count: four characters a token, as Swival's fallback does.
#[cfg(test)]
pub fn estimate_tokens(messages: &[Value], tools: &[Value]) -> u64 {
    let chars: usize = messages.iter().chain(tools).map(json_len).sum();
    (chars / 4) as u64
}

/// [`estimate_tokens`] from lengths already counted.
pub fn estimate_from(message_chars: usize, tool_chars: usize) -> u64 {
    ((message_chars + tool_chars) / 4) as u64
}

/// The tool schemas offered on a call, with their length counted once
/// (they are the same on every call of a run).
#[derive(Debug, Clone, Copy)]
pub struct Offered<'a> {
    /// The schemas.
    pub schemas: &'a [Value],
    /// The length of their compact JSON, summed.
    pub chars: usize,
    /// Their JSON array, serialised once for every call of the run;
    /// `None` when the offer was narrowed for one call.
    pub json: Option<&'a serde_json::value::RawValue>,
}

impl<'a> Offered<'a> {
    /// No tools.
    pub const NONE: Offered<'static> = Offered { schemas: &[], chars: 0, json: None };

    /// `schemas`, counted.
    pub fn new(schemas: &'a [Value]) -> Offered<'a> {
        Offered { schemas, chars: schemas.iter().map(json_len).sum(), json: None }
    }

    /// A run's offer, counted and serialised when it was made.
    pub fn serialized(offer: &'a crate::tools::offer::Offer) -> Offered<'a> {
        Offered { schemas: &offer.schemas, chars: offer.chars, json: Some(&offer.json) }
    }
}

/// The length in bytes of `v.to_string()` (serde_json's compact form).
pub fn json_len(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => {
            let mut count = Count(0);
            // A number's Display is its JSON text.
            let _ = std::fmt::Write::write_fmt(&mut count, format_args!("{n}"));
            count.0
        }
        Value::String(s) => string_len(s),
        Value::Array(items) => 2 + items.len().saturating_sub(1) + items.iter().map(json_len).sum::<usize>(),
        Value::Object(map) => {
            let entries: usize = map.iter().map(|(k, v)| string_len(k) + 1 + json_len(v)).sum();
            2 + map.len().saturating_sub(1) + entries
        }
    }
}

/// The length of `s` as a JSON string literal, quotes and escapes included.
fn string_len(s: &str) -> usize {
    // `"` and `\` take two bytes; of the control characters, five have a
    // two-byte escape (\b \t \n \f \r) and the rest `\u00XX` (six).
    let extra: usize = s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | b'\t' | b'\n' | 0x0c | b'\r' => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    s.len() + 2 + extra
}

/// Counts the bytes written to it.
struct Count(usize);

impl std::fmt::Write for Count {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_len_is_the_length_of_the_compact_serialisation() {
        let values = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-17),
            json!(u64::MAX),
            json!(1.5),
            json!(1e300),
            json!(-0.000123),
            json!(""),
            json!("plain"),
            json!("quote \" backslash \\ slash / tab \t nl \n cr \r bs \u{8} ff \u{c} nul \u{0} us \u{1f} del \u{7f}"),
            json!("é ü 漢字 🦀 \u{2028}"),
            json!([]),
            json!([1]),
            json!([1, "two", null, [], {}]),
            json!({}),
            json!({"a": 1}),
            json!({"ke\"y\n": {"nested": [true, false, {"x": "y"}]}, "b": "c"}),
        ];
        for v in values {
            assert_eq!(json_len(&v), v.to_string().len(), "{v}");
        }
    }

    #[test]
    fn estimate_counts_messages_and_tools_together() {
        let messages = [json!({"role": "user", "content": "hello there"})];
        let tools = [json!({"type": "function", "function": {"name": "read_file"}})];
        let chars = messages[0].to_string().len() + tools[0].to_string().len();
        assert_eq!(estimate_tokens(&messages, &tools), (chars / 4) as u64);
        let counted = estimate_from(json_len(&messages[0]), Offered::new(&tools).chars);
        assert_eq!(counted, estimate_tokens(&messages, &tools));
    }
}
