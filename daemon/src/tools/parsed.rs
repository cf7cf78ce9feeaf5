//! A tool call parsed once. After repair, a call's arguments are read
//! once into a [`ParsedCall`]: its entry in the registry, its arguments
//! (as JSON and, for a built-in tool, in the tool's own type), what it
//! does, the files it names and its key for the loop guards. The guards,
//! the approval, the changes bracket, dispatch and the events all read
//! that one value; nothing parses the call's text again.

use super::registry::{self, Spec};
use super::repair::{self, Repaired};
use super::{CallInput, ToolBox, ToolError, Typed};
use crate::toolcall::{parse_args, ArgsError, ToolOutcome};
use serde_json::Value;
use swival_protocol::ToolKind;

/// One tool call, read once.
pub struct ParsedCall {
    /// The model's id for the call.
    pub id: String,
    /// The tool's name, as called.
    pub name: String,
    /// Its entry in the registry (`None`: an MCP server's tool, or a name
    /// no tool has).
    pub spec: Option<&'static Spec>,
    /// The arguments the tool runs with (repaired), as text.
    pub raw: String,
    /// The same arguments, parsed; the error the tool reports when they
    /// are not a JSON object.
    pub args: Result<Value, ArgsError>,
    /// A built-in tool's arguments in its own type, or why they do not
    /// fit it; `None` for the other tools, and once taken to run.
    typed: Option<Result<Box<dyn Typed>, ToolError>>,
    /// What the call does ([`registry::kind`], refined by its arguments).
    pub kind: ToolKind,
    /// The files a file tool's call names (written, edited, moved or
    /// deleted), as given.
    pub paths: Vec<String>,
    /// The call, canonical (object keys sorted, whitespace gone), so that
    /// the same call written differently is the same call.
    pub key: String,
    /// What repair changed, one phrase each.
    pub repairs: Vec<String>,
}

impl ParsedCall {
    /// The call of `name` with `raw` arguments, as sent.
    pub fn read(id: &str, name: &str, raw: &str) -> ParsedCall {
        ParsedCall::from_parts(id, name, raw.to_owned(), parse_args(raw), Vec::new())
    }

    /// The call as repaired against the schemas offered (`repair.rs`).
    pub fn repaired(id: &str, name: &str, raw: &str, offered: &[Value]) -> ParsedCall {
        let Repaired { args, notes, value } = repair::repair(name, raw, offered);
        let parsed = match value {
            Some(object) => Ok(Value::Object(object)),
            None => parse_args(&args),
        };
        ParsedCall::from_parts(id, name, args, parsed, notes)
    }

    fn from_parts(
        id: &str,
        name: &str,
        raw: String,
        args: Result<Value, ArgsError>,
        repairs: Vec<String>,
    ) -> ParsedCall {
        let spec = registry::spec(name);
        let typed = match (spec.and_then(Spec::builtin), &args) {
            (Some(b), Ok(args)) => Some(b.parse(args)),
            _ => None,
        };
        let (kind, paths) = match &typed {
            Some(Ok(t)) => (t.kind(), t.paths()),
            _ => (registry::kind(name), Vec::new()),
        };
        let key = match &args {
            Ok(v) => format!("{name} {}", canonical(v)),
            Err(_) => format!("{name} {}", raw.trim()),
        };
        ParsedCall { id: id.to_owned(), name: name.to_owned(), spec, raw, args, typed, kind, paths, key, repairs }
    }

    /// The note added after the tool's result, when repair changed
    /// anything.
    pub fn repair_note(&self) -> Option<String> {
        repair::note(&self.repairs)
    }

    /// Whether the tool may take long and should leave the runtime's
    /// worker ([`Tool::WALKS_TREE`]).
    pub fn walks_tree(&self) -> bool {
        self.spec.is_some_and(Spec::walks_tree)
    }

    /// Run it on `tb`, a built-in tool's call: the one place its failure
    /// becomes the text the model reads. A call of no built-in tool is
    /// answered as an unknown tool; a call runs once.
    pub fn run(&mut self, tb: &mut ToolBox, mut input: CallInput) -> ToolOutcome {
        let result = match (self.typed.take(), &self.args) {
            (Some(Ok(typed)), _) => typed.run(tb, &mut input),
            (Some(Err(e)), _) => Err(e),
            (None, Err(e)) => return ToolOutcome::from(e),
            (None, Ok(_)) if self.spec.and_then(Spec::builtin).is_some() => {
                Err(ToolError::refused(format!("this {} call has already run", self.name)))
            }
            (None, Ok(_)) => {
                let names = registry::builtin_names().collect::<Vec<_>>().join(", ");
                Err(ToolError::refused(format!("unknown tool '{}'. Available tools: {names}", self.name)))
            }
        };
        result.unwrap_or_else(ToolOutcome::from)
    }
}

/// `v` with object keys sorted and no whitespace.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", serde_json::to_string(k).expect("strings serialize"), canonical(&map[*k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_is_read_once_into_its_kind_paths_and_key() {
        let moved = ParsedCall::read("c1", "write_file", r#"{"file_path": "b", "move_from": "a"}"#);
        assert_eq!((moved.kind, moved.paths.clone()), (ToolKind::Move, vec!["b".to_owned(), "a".to_owned()]));
        let same = ParsedCall::read("c2", "write_file", "{\"move_from\":\"a\",\n \"file_path\":\"b\"}");
        assert_eq!(moved.key, same.key, "the same call written differently is the same call");
        let mcp = ParsedCall::read("c3", "mcp__fs__read", "{}");
        assert_eq!((mcp.kind, mcp.spec.is_none(), mcp.paths.len()), (ToolKind::Mcp, true, 0));
        let unknown = ParsedCall::read("c4", "bash", "{}");
        assert_eq!(unknown.kind, ToolKind::Other);
        let broken = ParsedCall::read("c5", "write_file", "{oops");
        assert!(broken.args.is_err() && broken.kind == ToolKind::Edit && broken.key == "write_file {oops");
    }

    #[test]
    fn a_repaired_call_is_parsed_from_what_repair_read_and_says_what_it_changed() {
        let offered = super::super::offer::file_tools(2000);
        let inner = json!({"path": "notes.txt"}).to_string();
        let raw = serde_json::to_string(&inner).unwrap();
        let call = ParsedCall::repaired("c1", "delete_file", &raw, &offered);
        assert_eq!(call.args.as_ref().unwrap(), &json!({"file_path": "notes.txt"}));
        assert_eq!((call.kind, call.paths.clone()), (ToolKind::Delete, vec!["notes.txt".to_owned()]));
        let note = call.repair_note().expect("repairs are noted");
        assert!(note.contains("JSON string") && note.contains("'path' → 'file_path'"), "{note}");
    }

    #[test]
    fn running_a_call_reports_arguments_that_do_not_fit_and_runs_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut tb = super::super::test_toolbox(dir.path());
        let mut bad = ParsedCall::read("c1", "read_file", "[1]");
        assert!(bad.run(&mut tb, CallInput::default()).text.starts_with("error: tool arguments must be a JSON object"));
        let mut missing = ParsedCall::read("c2", "read_file", "{}");
        let out = missing.run(&mut tb, CallInput::default());
        assert!(out.failed && out.text.contains("file_path"), "{}", out.text);
        std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
        let mut read = ParsedCall::read("c3", "read_file", r#"{"file_path": "a.txt"}"#);
        assert!(!read.run(&mut tb, CallInput::default()).failed);
        let again = read.run(&mut tb, CallInput::default());
        assert!(again.failed && again.text.contains("already run"), "a parsed call runs once: {}", again.text);
    }
}
