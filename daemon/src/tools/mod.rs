//! The tools the model can call: their schemas (what the model sees) and
//! dispatch. Every tool returns a string; a failure starts with `error:`.

mod files;
pub mod path;

use path::PathPolicy;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Files read or written in this session (the read-before-write guard).
#[derive(Debug, Default)]
pub struct ReadTracker {
    /// Canonical paths.
    seen: HashSet<PathBuf>,
}

impl ReadTracker {
    /// Remember that `p` was read or written.
    pub fn mark(&mut self, p: &Path) {
        self.seen.insert(p.to_owned());
    }

    /// Whether `p` was read or written.
    pub fn seen(&self, p: &Path) -> bool {
        self.seen.contains(p)
    }
}

/// One session's tools and their state.
#[derive(Debug)]
pub struct ToolBox {
    /// Where file tools may go.
    pub policy: PathPolicy,
    /// The read-before-write guard's memory.
    pub tracker: ReadTracker,
    /// Whether the guard is on (Swival's `no_read_guard` turns it off).
    pub read_guard: bool,
    /// Thoughts recorded by `think`.
    pub thoughts: u64,
}

/// The name, description and JSON schema of every tool, in the order the
/// model sees them.
fn schemas() -> Vec<Value> {
    let f = |name: &str, description: &str, parameters: Value| json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}});
    vec![
        f(
            "read_file",
            "Read a text file (or list a directory). Lines come back as `N: text`; long files come in pages: pass `offset` to continue where a read stopped. Ends with [checksum=...].",
            json!({"type": "object", "properties": {
                "file_path": {"type": "string", "description": "Path relative to the project root."},
                "offset": {"type": "integer", "description": "First line to read, from 1.", "default": 1},
                "limit": {"type": "integer", "description": "Most lines to read.", "default": 2000},
                "tail_lines": {"type": "integer", "minimum": 1, "description": "Read the last N lines instead."}
            }, "required": ["file_path"]}),
        ),
        f(
            "write_file",
            "Create or overwrite a file with `content`. Parent directories are created. An existing file must be read first.",
            json!({"type": "object", "properties": {
                "file_path": {"type": "string", "description": "Path relative to the project root."},
                "content": {"type": "string", "description": "The whole new content."}
            }, "required": ["file_path", "content"]}),
        ),
        f(
            "think",
            "A scratchpad for reasoning step by step before acting. Has no side effects.",
            json!({"type": "object", "properties": {
                "thought": {"type": "string"},
                "thought_number": {"type": "integer", "minimum": 1},
                "total_thoughts": {"type": "integer", "minimum": 1},
                "next_thought_needed": {"type": "boolean"}
            }, "required": ["thought"]}),
        ),
    ]
}

impl ToolBox {
    /// A toolbox for a session whose paths follow `policy`.
    pub fn new(policy: PathPolicy) -> ToolBox {
        ToolBox {
            policy,
            tracker: ReadTracker::default(),
            read_guard: true,
            thoughts: 0,
        }
    }

    /// The schemas offered to the model.
    pub fn schemas(&self) -> Vec<Value> {
        schemas()
    }

    /// Run one tool call; the result string is what the model sees.
    pub fn call(&mut self, name: &str, raw_args: &str) -> String {
        let args = if raw_args.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            match serde_json::from_str::<Value>(raw_args) {
                Ok(v @ Value::Object(_)) => v,
                Ok(other) => {
                    return format!("error: tool arguments must be a JSON object, got {other}")
                }
                Err(e) => return format!("error: invalid JSON in tool arguments: {e}"),
            }
        };
        let result = match name {
            "read_file" => files::read_file(self, &args),
            "write_file" => files::write_file(self, &args),
            "think" => files::think(self, &args),
            other => {
                let names: Vec<String> = schemas()
                    .iter()
                    .filter_map(|s| s.pointer("/function/name")?.as_str().map(str::to_owned))
                    .collect();
                Err(format!(
                    "error: unknown tool '{other}'. Available tools: {}",
                    names.join(", ")
                ))
            }
        };
        result.unwrap_or_else(|e| e)
    }
}

/// Whether a tool result counts as a failure.
pub fn is_error(result: &str) -> bool {
    result.starts_with("error:")
}
