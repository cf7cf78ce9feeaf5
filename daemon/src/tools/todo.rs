//! `todo`: Swival's per-session checklist (`swival/todo.py`). Actions
//! add/done/remove/clear/list, at most 50 items of 500 characters, every
//! action answers with the whole list as JSON. The list is mirrored to
//! `.swival/todo.md` (through [`beneath::swival_dir`], never through a
//! symlink); items other sessions wrote there are kept on disk but not
//! taken into this session's list.

use super::{CallInput, Tool, ToolBox, ToolError};
use crate::beneath::{self, Missing};
use crate::toolcall::ToolOutcome;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashSet;
use std::path::Path;
use swival_protocol::ToolKind;

/// Persistent checklist for multi-step work. Add items as discovered, mark done as completed. Survives context compaction.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Todo {
    /// add: Add a new task (duplicate tasks are ignored). done: Mark a task as completed (no-op if already done). remove: Remove a task entirely. clear: Remove all tasks and start fresh. list: Return the current list (no other params needed).
    #[schemars(with = "Action")]
    pub action: Value,
    /// For 'add': one or more task descriptions (each max 500 chars). For 'done'/'remove': text matching existing tasks (prefix match, case-insensitive). Not needed for 'list' or 'clear'. Accepts a single string or a list of strings.
    #[schemars(with = "Option<Tasks>")]
    pub tasks: Option<Value>,
    /// Swival's older name for `tasks`, read when that is absent.
    #[schemars(skip)]
    pub task: Option<Value>,
}

impl Tool for Todo {
    const NAME: &'static str = "todo";
    const KIND: ToolKind = ToolKind::Plan;

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        tb.todo_call(&self).map(ToolOutcome::ok)
    }
}

/// Most items one session may add.
pub const MAX_ITEMS: usize = 50;
/// Most characters in one item.
pub const MAX_ITEM_CHARS: usize = 500;
const ACTIONS: &str = "add, clear, done, list, remove";

/// The actions, as the model is offered them (`action`).
#[derive(JsonSchema)]
#[expect(dead_code, reason = "only offered: the list reads the action as sent, so an unknown one is named back")]
#[serde(rename_all = "lowercase")]
pub enum Action {
    // Plain comments: a documented variant would be offered as a `oneOf`.
    // Add tasks.
    Add,
    // Mark tasks done.
    Done,
    // Remove tasks.
    Remove,
    // Empty the list.
    Clear,
    // Show the list.
    List,
}

/// `tasks` as the model is offered it: one task or a list of them (it is
/// read more leniently: see [`tasks`]).
pub struct Tasks;

impl JsonSchema for Tasks {
    fn schema_name() -> Cow<'static, str> {
        "Tasks".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]})
    }
}

/// One item of an answer's list.
#[derive(Serialize)]
struct Entry<'a> {
    /// The task text.
    task: &'a str,
    /// Whether it is done.
    done: bool,
}

/// An item of a call that was not added, done or removed.
#[derive(Serialize)]
struct ItemError {
    /// The item as given (cut to 80 characters when too long).
    task: String,
    /// Why.
    reason: String,
}

/// What every action answers: the whole list (in this order, as Swival does).
#[derive(Serialize)]
struct Answer<'a> {
    /// The action.
    action: &'a str,
    /// Items in the list.
    total: usize,
    /// Items not done.
    remaining: usize,
    /// The list, in order.
    items: Vec<Entry<'a>>,
    /// Tasks `add` found in the list already.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    skipped: &'a [String],
    /// Items that failed.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    errors: &'a [ItemError],
}

/// The call a refusal suggests instead.
#[derive(Serialize)]
struct NextCall<'a> {
    /// The same action.
    action: &'a str,
    /// An item to name.
    tasks: [&'a str; 1],
}

/// One checklist entry.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    /// The task text.
    text: String,
    /// Whether it is done.
    done: bool,
}

/// One session's checklist.
#[derive(Debug, Default)]
pub struct TodoList {
    /// This session's items, in order.
    items: Vec<Item>,
    /// Keys (case-folded text) this session removed, so a save drops them
    /// from the file too.
    removed: HashSet<String>,
}

fn key(text: &str) -> String {
    text.to_lowercase()
}

/// Parse `- [ ] task` / `- [x] task` lines.
fn parse(text: &str) -> Vec<Item> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            if let Some(t) = l.strip_prefix("- [x] ") {
                Some(Item { text: t.into(), done: true })
            } else {
                l.strip_prefix("- [ ] ").map(|t| Item { text: t.into(), done: false })
            }
        })
        .collect()
}

/// The `tasks` argument (or Swival's legacy `task`) as a list of trimmed
/// strings; a JSON-encoded array inside a string is unwrapped.
fn tasks(args: &Todo) -> Result<Vec<String>, ToolError> {
    let Some(raw) = args.tasks.as_ref().or(args.task.as_ref()) else {
        return Err(ToolError::refused("action requires a 'tasks' parameter"));
    };
    let to_list = |v: &Value| -> Vec<String> {
        match v {
            Value::String(s) => {
                let s = s.trim();
                if s.starts_with('[') {
                    if let Ok(Value::Array(a)) = serde_json::from_str::<Value>(s) {
                        return a.iter().map(item_text).collect();
                    }
                }
                vec![s.to_owned()]
            }
            Value::Array(a) => a.iter().map(item_text).collect(),
            other => vec![other.to_string()],
        }
    };
    let list = to_list(raw);
    if list.is_empty() {
        return Err(ToolError::refused("'tasks' must not be empty"));
    }
    Ok(list)
}

fn item_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.trim().to_owned(),
        other => other.to_string(),
    }
}

/// Split `given` into valid tasks and per-item errors (empty, too long);
/// an error when none is valid.
fn validate(action: &str, given: &[String]) -> Result<(Vec<String>, Vec<ItemError>), ToolError> {
    let mut errors = Vec::new();
    let mut valid = Vec::new();
    for t in given {
        if t.is_empty() {
            errors.push(ItemError { task: String::new(), reason: "empty or whitespace-only task".into() });
        } else if t.chars().count() > MAX_ITEM_CHARS {
            let short: String = t.chars().take(80).collect();
            errors.push(ItemError { task: short, reason: format!("exceeds {MAX_ITEM_CHARS} character limit") });
        } else {
            valid.push(t.clone());
        }
    }
    if !valid.is_empty() {
        return Ok((valid, errors));
    }
    Err(match given {
        [one] if one.is_empty() => ToolError::refused(format!("'{action}' requires a non-empty 'tasks' parameter")),
        [_] => ToolError::refused(format!("task text exceeds {MAX_ITEM_CHARS} character limit, please shorten it")),
        _ => ToolError::refused(format!("all {} items failed — no valid tasks provided", given.len())),
    })
}

/// Why one item of a call was not added, done or removed: its `reason`
/// in the result's `errors`.
#[derive(Debug, thiserror::Error)]
enum ItemRefusal {
    /// The list holds [`MAX_ITEMS`] already.
    #[error("todo list full")]
    Full,
    /// No item matches.
    #[error("no task matching '{0}'")]
    NoMatch(String),
    /// Several items match at the first level that has any (up to five
    /// shown, quoted).
    #[error("'{task}' matches multiple items — be more specific: {}", .listed.join("; "))]
    Ambiguous { task: String, listed: Vec<String> },
}

/// The error when no item of a call succeeded (Swival's wording).
fn all_failed(action: &str, single: bool, errors: &[ItemError]) -> ToolError {
    let reasons: Vec<&str> = errors.iter().map(|e| e.reason.as_str()).collect();
    if action == "add" && reasons.iter().all(|r| *r == "todo list full") {
        return ToolError::refused(format!("todo list full ({MAX_ITEMS} items max per session)"));
    }
    let first = reasons.first().copied().unwrap_or("failed");
    if single {
        ToolError::refused(first)
    } else {
        ToolError::refused(format!("all {} items failed — {first}", errors.len()))
    }
}

impl TodoList {
    /// `error` (Swival's line) followed by the call to make instead: the
    /// shape of `tasks`, and for `done`/`remove` the items it may name.
    fn with_next_call(&self, action: &str, error: ToolError) -> ToolError {
        let open: Vec<&str> = self.items.iter().filter(|i| !i.done).map(|i| i.text.as_str()).collect();
        let example = match (action, open.first()) {
            ("add", _) | (_, None) => NextCall { action, tasks: ["<item text>"] },
            (_, Some(first)) => NextCall { action, tasks: [first] },
        };
        let mut out = format!("{error}\nNext: call todo with {}", super::json_text(&example));
        match open.as_slice() {
            [] if action != "add" => {
                out.push_str(". The list has no open items; if your work is done, give your final answer.")
            }
            [] => {}
            items => out.push_str(&format!(". Open items: {}", serde_json::to_string(items).unwrap_or_default())),
        }
        ToolError::refused(out)
    }

    /// The whole list, in order, as the protocol carries it.
    pub fn items(&self) -> Vec<swival_protocol::TodoItem> {
        self.items.iter().map(|i| swival_protocol::TodoItem { task: i.text.clone(), done: i.done }).collect()
    }

    /// Items not yet done.
    pub fn remaining(&self) -> usize {
        self.items.iter().filter(|i| !i.done).count()
    }

    /// Run one `todo` call; changes are mirrored to `.swival/todo.md` under
    /// `base` when given.
    pub fn call(&mut self, args: &Todo, base: Option<&Path>) -> Result<String, ToolError> {
        let action = args.action.as_str().unwrap_or("");
        match action {
            "list" => return Ok(self.response("list", &[], &[])),
            "clear" => {
                self.removed.extend(self.items.iter().map(|i| key(&i.text)));
                self.items.clear();
                self.save(base);
                return Ok(self.response("clear", &[], &[]));
            }
            "add" | "done" | "remove" => {}
            other => return Err(ToolError::refused(format!("invalid action '{other}', expected one of: {ACTIONS}"))),
        }
        let given = tasks(args).map_err(|e| self.with_next_call(action, e))?;
        let (valid, mut errors) = validate(action, &given)?;
        let mut skipped = Vec::new();
        let mut succeeded = 0;
        for t in &valid {
            let outcome = match action {
                "add" => self.add(t, &mut skipped),
                "done" => self.find(t).map(|i| self.items[i].done = true),
                _ => self.find(t).map(|i| {
                    let item = self.items.remove(i);
                    self.removed.insert(key(&item.text));
                }),
            };
            match outcome {
                Ok(()) => succeeded += 1,
                Err(reason) => errors.push(ItemError { task: t.clone(), reason: reason.to_string() }),
            }
        }
        if succeeded == 0 {
            return Err(all_failed(action, valid.len() + given.len() == 2, &errors));
        }
        self.save(base);
        Ok(self.response(action, &skipped, &errors))
    }

    fn add(&mut self, task: &str, skipped: &mut Vec<String>) -> Result<(), ItemRefusal> {
        if self.items.iter().any(|i| key(&i.text) == key(task)) {
            skipped.push(task.to_owned());
            return Ok(());
        }
        if self.items.len() >= MAX_ITEMS {
            return Err(ItemRefusal::Full);
        }
        self.removed.remove(&key(task));
        self.items.push(Item { text: task.to_owned(), done: false });
        Ok(())
    }

    /// The one item `task` names: exact, else prefix, else substring
    /// (case-insensitive); several at the first level that has any is an
    /// error listing them.
    fn find(&self, task: &str) -> Result<usize, ItemRefusal> {
        let k = key(task);
        let tests: [&dyn Fn(&str) -> bool; 3] = [&|t| t == k, &|t| t.starts_with(&k), &|t| t.contains(&k)];
        for test in tests {
            let hits: Vec<usize> = (0..self.items.len()).filter(|&i| test(&key(&self.items[i].text))).collect();
            match hits.as_slice() {
                [] => continue,
                [one] => return Ok(*one),
                many => {
                    let listed: Vec<String> =
                        many.iter().take(5).map(|&i| format!("'{}'", self.items[i].text)).collect();
                    return Err(ItemRefusal::Ambiguous { task: task.to_owned(), listed });
                }
            }
        }
        Err(ItemRefusal::NoMatch(task.to_owned()))
    }

    fn response(&self, action: &str, skipped: &[String], errors: &[ItemError]) -> String {
        super::json_text(&Answer {
            action,
            total: self.items.len(),
            remaining: self.remaining(),
            items: self.items.iter().map(|i| Entry { task: &i.text, done: i.done }).collect(),
            skipped,
            errors,
        })
    }

    /// Mirror the list to `.swival/todo.md`, keeping other sessions' items.
    /// Best effort: the list in memory is what the model works with.
    fn save(&mut self, base: Option<&Path>) {
        let Some(base) = base else { return };
        let dir = match beneath::swival_dir(base, Missing::Create) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(base = %base.display(), error = %e, "cannot save the todo list");
                return;
            }
        };
        let file = Path::new("todo.md");
        let on_disk = dir.read(file).map(|t| parse(&String::from_utf8_lossy(&t))).unwrap_or_default();
        let mut lines = Vec::new();
        let mut written = HashSet::new();
        for item in &mut self.items {
            let k = key(&item.text);
            // Another session may have finished it meanwhile.
            if on_disk.iter().any(|d| key(&d.text) == k && d.done) {
                item.done = true;
            }
            written.insert(k);
            lines.push(format!("- [{}] {}", if item.done { "x" } else { " " }, item.text));
        }
        for d in on_disk {
            let k = key(&d.text);
            if !written.contains(&k) && !self.removed.contains(&k) {
                written.insert(k);
                lines.push(format!("- [{}] {}", if d.done { "x" } else { " " }, d.text));
            }
        }
        let text = if lines.is_empty() { String::new() } else { lines.join("\n") + "\n" };
        if let Err(e) = dir.replace(file, text.as_bytes()) {
            tracing::warn!(base = %base.display(), error = %e, "cannot save the todo list");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn call(t: &mut TodoList, args: Value) -> Value {
        serde_json::from_str(&t.call(&crate::tools::args::parse(&args).unwrap(), None).unwrap()).unwrap()
    }

    fn call_saving(t: &mut TodoList, dir: &Path, args: Value) -> Value {
        serde_json::from_str(&t.call(&crate::tools::args::parse(&args).unwrap(), Some(dir)).unwrap()).unwrap()
    }

    #[test]
    fn add_done_remove_list_answer_with_the_whole_list() {
        let d = tempfile::tempdir().unwrap();
        let mut t = TodoList::default();
        let r = call_saving(&mut t, d.path(), json!({"action": "add", "tasks": ["Write tests", "Fix bug"]}));
        assert_eq!(r["total"], 2);
        assert_eq!(r["remaining"], 2);
        let r = call_saving(&mut t, d.path(), json!({"action": "done", "tasks": "write"}));
        assert_eq!(r["items"][0], json!({"task": "Write tests", "done": true}));
        assert_eq!(r["remaining"], 1);
        let r = call_saving(&mut t, d.path(), json!({"action": "add", "tasks": "fix BUG"}));
        assert_eq!(r["skipped"], json!(["fix BUG"]));
        let r = call_saving(&mut t, d.path(), json!({"action": "remove", "tasks": "Fix"}));
        assert_eq!(r["total"], 1);
        assert_eq!(std::fs::read_to_string(d.path().join(".swival/todo.md")).unwrap(), "- [x] Write tests\n");
        let r = call_saving(&mut t, d.path(), json!({"action": "list"}));
        assert_eq!(r["action"], "list");
        let r = call_saving(&mut t, d.path(), json!({"action": "clear"}));
        assert_eq!(r["total"], 0);
    }

    #[test]
    fn limits_are_50_items_and_500_chars() {
        let mut t = TodoList::default();
        let many: Vec<String> = (0..50).map(|i| format!("task {i}")).collect();
        call(&mut t, json!({"action": "add", "tasks": many}));
        let err = t.call(&args!({"action": "add", "tasks": "one more"}), None).unwrap_err().render();
        assert_eq!(err, "error: todo list full (50 items max per session)");
        let err = t.call(&args!({"action": "add", "tasks": "x".repeat(501)}), None).unwrap_err().render();
        assert!(err.contains("exceeds 500 character limit"), "{err}");
    }

    #[test]
    fn ambiguous_and_unknown_tasks_are_errors() {
        let mut t = TodoList::default();
        call(&mut t, json!({"action": "add", "tasks": ["fix a", "fix b"]}));
        let err = t.call(&args!({"action": "done", "tasks": "fix"}), None).unwrap_err().render();
        assert!(err.contains("matches multiple items"), "{err}");
        let err = t.call(&args!({"action": "done", "tasks": "zzz"}), None).unwrap_err().render();
        assert_eq!(err, "error: no task matching 'zzz'");
        let err = t.call(&args!({"action": "frobnicate"}), None).unwrap_err().render();
        assert!(err.contains("invalid action"), "{err}");
        let err = t.call(&args!({"action": "add"}), None).unwrap_err().render();
        assert!(err.contains("requires a 'tasks' parameter"), "{err}");
        assert!(err.contains(r#"Next: call todo with {"action":"add","tasks":["<item text>"]}"#), "{err}");
        let err = t.call(&args!({"action": "done"}), None).unwrap_err().render();
        assert!(err.ends_with(r#"{"action":"done","tasks":["fix a"]}. Open items: ["fix a","fix b"]"#), "{err}");
        let err = TodoList::default().call(&args!({"action": "done"}), None).unwrap_err().render();
        assert!(err.ends_with("no open items; if your work is done, give your final answer."), "{err}");
    }

    #[test]
    fn other_sessions_items_in_the_file_are_kept() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".swival")).unwrap();
        std::fs::write(d.path().join(".swival/todo.md"), "- [ ] theirs\n").unwrap();
        let mut t = TodoList::default();
        let r = call_saving(&mut t, d.path(), json!({"action": "add", "tasks": "mine"}));
        assert_eq!(r["total"], 1);
        assert_eq!(std::fs::read_to_string(d.path().join(".swival/todo.md")).unwrap(), "- [ ] mine\n- [ ] theirs\n");
    }
}
