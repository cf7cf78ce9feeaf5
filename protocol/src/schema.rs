//! The machine-readable protocol document, generated from the types.
//!
//! `docs/protocol.schema.json` is this document, pretty-printed; the test
//! below fails when the committed file differs (run it with
//! `UPDATE_SCHEMA=1` to rewrite the file).

use crate::error::ErrorCode;
use crate::methods::{self, schema};
use serde_json::{json, Map, Value};

/// One method's parameter and result types.
struct MethodDoc {
    name: &'static str,
    params: Option<Value>,
    result: Value,
}

fn method_docs() -> Vec<MethodDoc> {
    methods::schemas().into_iter().map(|(name, params, result)| MethodDoc { name, params, result }).collect()
}

/// The whole protocol as one JSON document: version, methods with their
/// parameter and result schemas, notifications, and the error code table.
pub fn document() -> Value {
    let summaries: std::collections::HashMap<_, _> = methods::ALL.iter().copied().collect();
    let mut methods_obj = Map::new();
    for m in method_docs() {
        methods_obj.insert(
            m.name.to_string(),
            json!({
                "summary": summaries.get(m.name).copied().unwrap_or_default(),
                "params": m.params,
                "result": m.result,
            }),
        );
    }
    let errors: Vec<Value> =
        ErrorCode::ALL.iter().map(|c| json!({"code": c.code(), "name": c, "meaning": c.meaning()})).collect();
    json!({
        "title": "swivald JSON-RPC protocol",
        "protocol_version": crate::PROTOCOL_VERSION,
        "generated_from": "the swival-protocol crate; do not edit by hand",
        "methods": methods_obj,
        "errors": errors,
        // Answered through `hooks/respond` (taken as any JSON there, so a
        // malformed answer fails closed) and by command hooks on stdout.
        "hook_result": schema::<crate::hooks::HookResult>(),
    })
}

/// `v` with every object's keys in sorted order, whatever order the
/// maps keep (serde_json's `preserve_order` may be on in a build that
/// links a crate asking for it), so the document's text is stable.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect::<Map<String, Value>>())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The document as committed: pretty JSON with a trailing newline.
pub fn document_text() -> String {
    let mut s = serde_json::to_string_pretty(&sorted(document())).expect("document serializes");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_schema_matches_the_types() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/protocol.schema.json");
        let fresh = document_text();
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::write(path, &fresh).expect("write docs/protocol.schema.json");
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == fresh,
            "docs/protocol.schema.json is stale; regenerate it with \
             `UPDATE_SCHEMA=1 cargo test -p swival-protocol committed_schema`"
        );
    }

    #[test]
    fn every_method_has_a_summary_and_a_schema_entry() {
        let docs: Vec<&str> = method_docs().iter().map(|d| d.name).collect();
        let listed: Vec<&str> = methods::ALL.iter().map(|(m, _)| *m).collect();
        assert_eq!(docs, listed, "methods::ALL and the schema list the same methods in the same order");
    }

    #[test]
    fn every_method_has_a_schema_entry() {
        let doc = document();
        for (name, _) in methods::ALL {
            assert!(doc["methods"].get(*name).is_some(), "{name} is missing from the schema");
        }
    }

    #[test]
    fn error_codes_round_trip_and_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.code()), "duplicate code {}", c.code());
            assert_eq!(ErrorCode::from_code(c.code()), Some(c));
        }
    }
}
