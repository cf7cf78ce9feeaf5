//! Repairing the slips models make in tool calls, against the schemas the
//! model was offered: a tool name that does not exist gets the closest
//! real one named; arguments sent as a JSON string are unwrapped; an
//! argument under a common wrong name (`path` for `file_path`) is renamed;
//! an argument the tool does not take is dropped and named; read_file's
//! line numbers and `[checksum=…]` line copied into write_file's content
//! are taken out. Every repair is told to the model after the result, so
//! it learns the right shape.

pub use super::schema::name_of;
use serde_json::{Map, Value};
use swival_protocol::ToolKind;

/// Wrong argument names models use, and the right ones.
const ALIASES: &[(&str, &str)] = &[
    ("path", "file_path"),
    ("filepath", "file_path"),
    ("file", "file_path"),
    ("filename", "file_path"),
    ("file_name", "file_path"),
    ("old", "old_string"),
    ("old_str", "old_string"),
    ("old_text", "old_string"),
    ("search", "old_string"),
    ("new", "new_string"),
    ("new_str", "new_string"),
    ("new_text", "new_string"),
    ("replace", "new_string"),
    ("replacement", "new_string"),
    ("text", "content"),
    ("contents", "content"),
    ("data", "content"),
    ("cmd", "command"),
    ("args", "command"),
    ("regex", "pattern"),
    ("query", "pattern"),
    ("dir", "path"),
    ("directory", "path"),
];

/// Arguments after repair.
#[derive(Debug, Clone, PartialEq)]
pub struct Repaired {
    /// The arguments to run the tool with (the original text when nothing
    /// changed).
    pub args: String,
    /// What was changed, one phrase each.
    pub notes: Vec<String>,
    /// `args` parsed, when they are a JSON object (read once here, not
    /// again by whoever runs the call).
    pub value: Option<Map<String, Value>>,
}

/// The note added after a tool's result when repair changed anything.
pub fn note(notes: &[String]) -> Option<String> {
    (!notes.is_empty()).then(|| format!("(auto-corrected: {})", notes.join("; ")))
}

/// The schema of `name` among `schemas` (OpenAI function tools).
fn schema_of<'a>(schemas: &'a [Value], name: &str) -> Option<&'a Value> {
    schemas.iter().find(|s| name_of(s) == Some(name))
}

/// The `properties` of a function tool's parameters.
fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("function")?.get("parameters")?.get("properties")?.as_object()
}

/// Whether `name` is one of `schemas`.
pub fn offers(schemas: &[Value], name: &str) -> bool {
    schema_of(schemas, name).is_some()
}

/// The names of `schemas`.
pub fn names(schemas: &[Value]) -> Vec<&str> {
    schemas.iter().filter_map(name_of).collect()
}

/// The closest of `candidates` to `wrong`, if any is close.
fn closest<'a>(wrong: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let wrong = wrong.to_ascii_lowercase();
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(&wrong, c), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min()
        .map(|(_, c)| c)
}

/// The result for a call of a tool that does not exist: the closest real
/// tool, and the list.
pub fn unknown_tool(name: &str, schemas: &[Value]) -> String {
    let names = names(schemas);
    let alias = super::registry::alias_of(name);
    let list = names.join(", ");
    if alias.is_some_and(|t| t.kind == ToolKind::Execute && !names.contains(&t.name)) {
        return format!(
            "error: unknown tool '{name}'. This session runs no commands (none are allowed); use the file tools: {list}"
        );
    }
    let aliased = alias.map(|t| t.name).filter(|t| names.contains(t));
    match aliased.or_else(|| closest(name, &names)) {
        Some(real) => format!("error: unknown tool '{name}'. Did you mean '{real}'? Available tools: {list}"),
        None => format!("error: unknown tool '{name}'. Available tools: {list}"),
    }
}

/// Repair the arguments of a call of `name` (a tool in `schemas`).
pub fn repair(name: &str, raw: &str, schemas: &[Value]) -> Repaired {
    let unchanged = |value| Repaired { args: raw.to_owned(), notes: Vec::new(), value };
    let (mut args, wrapped): (Map<String, Value>, bool) = match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(m)) => (m, false),
        // Arguments sent as a JSON string holding the object.
        Ok(Value::String(inner)) => match serde_json::from_str::<Value>(&inner) {
            Ok(Value::Object(m)) => (m, true),
            _ => return unchanged(None),
        },
        _ => return unchanged(None),
    };
    let Some(props) = schema_of(schemas, name).and_then(properties) else {
        return unchanged((!wrapped).then_some(args));
    };
    let mut notes = Vec::new();
    if wrapped {
        notes.push("the arguments were a JSON string; send the object itself".to_owned());
    }
    let known: Vec<&str> = props.keys().map(String::as_str).collect();
    let extra: Vec<String> = args.keys().filter(|k| !props.contains_key(*k)).cloned().collect();
    for key in extra {
        let lower = key.to_ascii_lowercase();
        let target = ALIASES
            .iter()
            .find(|(a, t)| *a == lower && props.contains_key(*t))
            .map(|(_, t)| *t)
            .or_else(|| closest(&key, &known))
            .filter(|t| !args.contains_key(*t));
        let value = args.remove(&key).expect("listed from args");
        match target {
            Some(t) => {
                notes.push(format!("'{key}' → '{t}'"));
                args.insert(t.to_owned(), value);
            }
            None => notes.push(format!("ignored '{key}': {name} takes {}", known.join(", "))),
        }
    }
    notes.extend(super::registry::repair_args(name, &mut args));
    if notes.is_empty() {
        return unchanged(Some(args));
    }
    Repaired { args: serde_json::to_string(&args).expect("JSON values serialize"), notes, value: Some(args) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schemas() -> Vec<Value> {
        let mut s = crate::tools::offer::file_tools(2000);
        s.push(json!({"type": "function", "function": {"name": "run_command", "parameters": {"type": "object",
            "properties": {"command": {"type": "array"}, "timeout": {"type": "integer"}}}}}));
        s
    }

    #[test]
    fn path_becomes_file_path_and_the_model_is_told() {
        let r = repair("read_file", r#"{"path": "a.py"}"#, &schemas());
        assert_eq!(serde_json::from_str::<Value>(&r.args).unwrap(), json!({"file_path": "a.py"}));
        assert_eq!(note(&r.notes).unwrap(), "(auto-corrected: 'path' → 'file_path')");
    }

    #[test]
    fn arguments_as_a_json_string_are_unwrapped() {
        let raw = serde_json::to_string(&json!(r#"{"file_path": "a.py"}"#)).unwrap();
        let r = repair("read_file", &raw, &schemas());
        assert_eq!(serde_json::from_str::<Value>(&r.args).unwrap(), json!({"file_path": "a.py"}));
        assert!(r.notes[0].contains("JSON string"));
    }

    #[test]
    fn near_misses_are_renamed_and_unknown_extras_dropped_by_name() {
        let r = repair(
            "edit_file",
            r#"{"file_path": "a", "old_strin": "x", "new_str": "y", "reason": "why not"}"#,
            &schemas(),
        );
        let args: Value = serde_json::from_str(&r.args).unwrap();
        assert_eq!(args, json!({"file_path": "a", "old_string": "x", "new_string": "y"}));
        let note = note(&r.notes).unwrap();
        assert!(note.contains("'old_strin' → 'old_string'") && note.contains("'new_str' → 'new_string'"), "{note}");
        assert!(note.contains("ignored 'reason': edit_file takes"), "{note}");
    }

    #[test]
    fn read_files_numbers_and_checksum_copied_into_content_are_left_out() {
        let schemas = vec![json!({"type": "function", "function": {"name": "write_file", "parameters": {
            "type": "object", "properties": {"file_path": {}, "content": {}}}}})];
        let fix = |content: &str| {
            let raw = json!({"file_path": "a.py", "content": content}).to_string();
            let r = repair("write_file", &raw, &schemas);
            let v: Value = serde_json::from_str(&r.args).unwrap();
            (v["content"].as_str().unwrap().to_owned(), note(&r.notes))
        };
        let (content, note) = fix("1: def f():\n2:     return 1\n3:\n4: x = f()\n[checksum=ab12cd34]");
        assert_eq!(content, "def f():\n    return 1\n\nx = f()\n");
        assert!(note.unwrap().contains("checksum"), "the note says so");
        assert_eq!(fix("x = 1\n[checksum=0f0f0f0f]\n").0, "x = 1\n");
        for kept in ["1: one\n3: three\n", "a: 1\nb: 2\n", "1: only\n", "x = 1\n[checksum=zz]", "5: a\nb\n"] {
            assert_eq!(fix(kept), (kept.to_owned(), None), "{kept:?}");
        }
        assert_eq!(fix("7: a\n8: b").0, "a\nb", "a page from further down");
        let raw = json!({"file_path": "m.yaml", "content": "1: a\n2: b\n"}).to_string();
        assert_eq!(super::note(&repair("write_file", &raw, &schemas).notes), None, "YAML keys");
    }

    #[test]
    fn a_right_call_is_left_as_written() {
        let raw = "{\n  \"file_path\": \"a.py\"\n}";
        let value = json!({"file_path": "a.py"}).as_object().cloned();
        assert_eq!(repair("read_file", raw, &schemas()), Repaired { args: raw.to_owned(), notes: vec![], value });
        // An alias never overwrites an argument that is there.
        let r = repair("read_file", r#"{"file_path": "a", "path": "b"}"#, &schemas());
        assert_eq!(serde_json::from_str::<Value>(&r.args).unwrap(), json!({"file_path": "a"}));
    }

    #[test]
    fn unknown_tools_get_the_closest_real_one() {
        let s = schemas();
        assert!(unknown_tool("bash", &s).starts_with("error: unknown tool 'bash'. Did you mean 'run_command'?"));
        assert!(unknown_tool("read_fle", &s).contains("Did you mean 'read_file'?"));
        assert!(unknown_tool("create_file", &s).contains("Did you mean 'write_file'?"));
        assert!(unknown_tool("code_outline", &s).contains("Did you mean 'outline'?"));
        let files_only = crate::tools::offer::file_tools(2000);
        assert!(unknown_tool("bash", &files_only).contains("This session runs no commands"));
        let none = unknown_tool("teleport", &s);
        assert!(!none.contains("Did you mean") && none.contains("read_file"), "{none}");
    }
}
