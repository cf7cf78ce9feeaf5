//! The JSON schemas the model sees, with Swival's names, parameters and
//! descriptions (models and Swival's prompt assume them), in Swival's order.

use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

fn tool(name: &str, description: &str, parameters: Value) -> Value {
    json!({"type": "function", "function": {
        "name": name, "description": description, "parameters": parameters}})
}

/// The file, search and bookkeeping tools, in the order the model sees
/// them; reads return `read_lines` lines unless they name a `limit`. Built
/// once per `read_lines` the daemon has seen (a handful of configured
/// values) and copied from there.
pub fn file_tools(read_lines: usize) -> Vec<Value> {
    static BUILT: Mutex<Option<HashMap<usize, Arc<[Value]>>>> = Mutex::new(None);
    let built = {
        let mut cache = BUILT.lock().unwrap_or_else(|p| p.into_inner());
        let cache = cache.get_or_insert_with(HashMap::new);
        cache.entry(read_lines).or_insert_with(|| build_file_tools(read_lines).into()).clone()
    };
    built.to_vec()
}

/// The tools a run offers the model, serialised once: every call of the
/// run sends them unchanged.
#[derive(Debug)]
pub struct Offer {
    /// The schemas, in the order the model sees them.
    pub schemas: Vec<Value>,
    /// `schemas` as the JSON array sent.
    pub json: Box<RawValue>,
    /// The length of each schema's compact JSON, summed (the token
    /// estimate counts them so).
    pub chars: usize,
}

/// Distinct offers kept by [`Offer::shared`]; past it the memo starts over.
const SHARED_OFFERS: usize = 32;

/// The offers made so far, by `read_lines` and the other tools' JSON.
type Offers = HashMap<(usize, String), Arc<Offer>>;

impl Offer {
    /// Offer `schemas`.
    pub fn new(schemas: Vec<Value>) -> Offer {
        let json = serde_json::value::to_raw_value(&schemas).expect("tool schemas serialize");
        // The array's compact JSON less its brackets and the commas between items.
        let chars = json.get().len() - 2 - schemas.len().saturating_sub(1);
        Offer { schemas, json, chars }
    }

    /// The file tools for `read_lines` followed by `more` (the command
    /// tools), made once per distinct pair and shared by the runs offering
    /// it: building and serialising them was a run's largest fixed cost.
    pub fn shared(read_lines: usize, more: Vec<Value>) -> Arc<Offer> {
        static MADE: Mutex<Option<Offers>> = Mutex::new(None);
        let key = (read_lines, serde_json::to_string(&more).expect("tool schemas serialize"));
        let mut made = MADE.lock().unwrap_or_else(|p| p.into_inner());
        let made = made.get_or_insert_with(HashMap::new);
        if let Some(offer) = made.get(&key) {
            return offer.clone();
        }
        if made.len() >= SHARED_OFFERS {
            made.clear();
        }
        let mut schemas = file_tools(read_lines);
        schemas.extend(more);
        let offer = Arc::new(Offer::new(schemas));
        made.insert(key, offer.clone());
        offer
    }
}

fn build_file_tools(read_lines: usize) -> Vec<Value> {
    let mut tools = reading_and_writing(read_lines);
    tools.extend(searching_and_bookkeeping());
    tools
}

/// `read_file`, `read_multiple_files`, `write_file`, `edit_file`.
fn reading_and_writing(read_lines: usize) -> Vec<Value> {
    let window = |file_desc: &str| {
        json!({
            "file_path": {"type": "string", "description": file_desc},
            "offset": {"type": "integer", "description": "1-based line number to start reading from. Defaults to 1.", "default": 1},
            "limit": {"type": "integer", "description": format!("Maximum number of lines to return. Defaults to {read_lines}."), "default": read_lines},
            "tail_lines": {"type": "integer", "minimum": 1, "description": "Number of lines to return from the end of the file. Mutually exclusive with offset; pass at most one of the two."}
        })
    };
    let mut read_props = window("Path to the file or directory to read.");
    read_props["tail_lines"]["description"] = json!("Number of lines to return from the end of the file. Mutually exclusive with offset; pass at most one of the two. To paginate within the tail, use the offset from the continuation hint in a follow-up call (without tail_lines).");
    vec![
        tool(
            "read_file",
            "Read a file as numbered lines. Use offset/limit to paginate forward, or tail_lines=N for the file end. Truncated output shows the next offset. Also lists directories.",
            json!({"type": "object", "properties": read_props, "required": ["file_path"]}),
        ),
        tool(
            "read_multiple_files",
            "Prefer this over multiple read_file calls when you know which files you need. Reads a batch, each with optional offset/limit/tail_lines. Per-file errors are inline; the batch never fails as a whole.",
            json!({"type": "object", "properties": {
                "files": {"type": "array", "description": "List of file read requests.", "maxItems": 20,
                    "items": {"type": "object", "properties": window("Path to the file to read."), "required": ["file_path"]}}
            }, "required": ["files"]}),
        ),
        tool(
            "write_file",
            "Create or overwrite a file with content, or atomically rename move_from to file_path (not both). Parent directories are created.",
            json!({"type": "object", "properties": {
                "file_path": {"type": "string", "description": "Destination path."},
                "content": {"type": "string", "description": "The content to write. Do not set with move_from."},
                "move_from": {"type": "string", "description": "Source path to atomically rename to file_path. Do not set with content. If the destination already exists, it must have been read or written first."}
            }, "required": ["file_path"]}),
        ),
        tool(
            "edit_file",
            "Replace old_string with new_string in an existing file. Prefer over write_file for edits.",
            json!({"type": "object", "properties": {
                "file_path": {"type": "string", "description": "Path to the file to edit."},
                "old_string": {"type": "string", "description": "The exact text to find and replace."},
                "new_string": {"type": "string", "description": "The replacement text."},
                "replace_all": {"type": "boolean", "description": "Replace all occurrences.", "default": false},
                "line_number": {"type": "integer", "description": "1-based line number from read_file. When old_string matches multiple times, only replace the match that touches this line."},
                "checksum": {"type": "string", "description": "Optional [checksum=...] value from your last read_file, write_file or edit_file of this file. The edit is refused if the file changed since."}
            }, "required": ["file_path", "old_string", "new_string"]}),
        ),
    ]
}

/// `list_files`, `grep`, `think`, `todo`, `delete_file`.
fn searching_and_bookkeeping() -> Vec<Value> {
    let search_path = json!({"type": "string", "description": "File or directory to search in, relative to base directory. Defaults to \".\" (base directory).", "default": "."});
    vec![
        tool(
            "list_files",
            "Recursively list files matching a glob, relative to the base directory.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "Glob pattern to match files, e.g. \"**/*.py\", \"src/**/*.ts\"."},
                "path": search_path
            }, "required": ["pattern"]}),
        ),
        tool(
            "grep",
            "Search file contents with a regex. Returns matches grouped by file with line numbers.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "Regex pattern to search for (Rust regex syntax: no lookaround or backreferences)."},
                "path": search_path,
                "include": {"type": "string", "description": "Glob pattern to filter filenames, e.g. \"*.py\"."},
                "case_insensitive": {"type": "boolean", "description": "If true, search case-insensitively.", "default": false},
                "context_lines": {"type": "integer", "description": "Number of surrounding lines to show before and after each match.", "minimum": 0, "default": 0}
            }, "required": ["pattern"]}),
        ),
        tool(
            "think",
            "Private scratchpad for planning, debugging, or weighing alternatives. Use before complex actions.",
            json!({"type": "object", "properties": {
                "thought": {"type": "string", "description": "Your current thinking step. Max 10000 characters."},
                "thought_number": {"type": "integer", "minimum": 1, "description": "Current step number (1-based). Optional — auto-increments if omitted."},
                "total_thoughts": {"type": "integer", "minimum": 1, "description": "Estimated total steps needed. Optional — defaults to 3 on first call, then carries forward."},
                "next_thought_needed": {"type": "boolean", "description": "true if you need more thinking steps, false when done. Optional — defaults to true."},
                "mode": {"type": "string", "enum": ["new", "revision", "branch"], "description": "Type of thought. 'new' (default): normal thinking step. 'revision': correct a previous thought (set revises_thought). 'branch': explore an alternative (set branch_from_thought + branch_id)."},
                "revises_thought": {"type": "integer", "minimum": 1, "description": "Which thought number is being revised. Used with mode=\"revision\"."},
                "branch_from_thought": {"type": "integer", "minimum": 1, "description": "Thought number to branch from. Used with mode=\"branch\", together with branch_id."},
                "branch_id": {"type": "string", "minLength": 1, "maxLength": 50, "description": "Label for the branch (e.g. 'approach-b'). Used with mode=\"branch\", together with branch_from_thought."}
            }, "required": ["thought"]}),
        ),
        tool(
            "todo",
            "Persistent checklist for multi-step work. Add items as discovered, mark done as completed. Survives context compaction.",
            json!({"type": "object", "properties": {
                "action": {"type": "string", "enum": ["add", "done", "remove", "clear", "list"], "description": "add: Add a new task (duplicate tasks are ignored). done: Mark a task as completed (no-op if already done). remove: Remove a task entirely. clear: Remove all tasks and start fresh. list: Return the current list (no other params needed)."},
                "tasks": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}], "description": "For 'add': one or more task descriptions (each max 500 chars). For 'done'/'remove': text matching existing tasks (prefix match, case-insensitive). Not needed for 'list' or 'clear'. Accepts a single string or a list of strings."}
            }, "required": ["action"]}),
        ),
        tool(
            "delete_file",
            "Delete a file by moving it to the trash. Cannot delete directories.",
            json!({"type": "object", "properties": {
                "file_path": {"type": "string", "description": "Path to the file to delete."}
            }, "required": ["file_path"]}),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offer_counts_what_the_estimate_would_and_sends_the_schemas_as_they_are() {
        for schemas in [Vec::new(), file_tools(7), vec![json!({"type": "function", "function": {"name": "x"}})]] {
            let offer = Offer::new(schemas.clone());
            let each: usize = schemas.iter().map(|s| s.to_string().len()).sum();
            assert_eq!(offer.chars, each);
            assert_eq!(offer.json.get(), serde_json::to_string(&schemas).unwrap());
        }
    }

    #[test]
    fn a_shared_offer_is_made_once_per_file_tools_and_command_tools() {
        let more = vec![json!({"type": "function", "function": {"name": "fetch_url"}})];
        let a = Offer::shared(11, more.clone());
        assert!(Arc::ptr_eq(&a, &Offer::shared(11, more.clone())));
        assert!(!Arc::ptr_eq(&a, &Offer::shared(12, more.clone())));
        assert!(!Arc::ptr_eq(&a, &Offer::shared(11, Vec::new())));
        let mut expected = file_tools(11);
        expected.extend(more);
        assert_eq!(a.schemas, expected);
    }
}
