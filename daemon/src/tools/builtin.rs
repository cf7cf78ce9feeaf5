//! The built-in tools as the model sees them, one type each: the doc
//! comment of the type is the tool's description and each field's the
//! argument's, so the schema offered is generated from what the tool
//! reads (`registry.rs` lists them in order; `schema.rs` shapes the
//! schemas as Swival wrote them). The `#[schemars]` attributes give the
//! bounds and defaults the model is told; `description_last` and
//! `items_last` put keys where Swival wrote them. A field skipped by the
//! schema is an argument Swival still takes under an older name.

use super::args::Later;
use super::registry::Tool;
use super::schema::{description_last, items_between, items_last, limit_defaults_to};
use super::{files, outline, search, think, todo, trash, write, CallInput, ToolBox, ToolError};
use crate::toolcall::ToolOutcome;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use swival_protocol::ToolKind;

/// Read a file as numbered lines. Use offset/limit to paginate forward, or tail_lines=N for the file end. Truncated output shows the next offset. Also lists directories.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFile {
    /// Path to the file or directory to read.
    pub file_path: String,
    /// 1-based line number to start reading from. Defaults to 1.
    #[schemars(extend("default" = 1))]
    pub offset: Option<i64>,
    /// Maximum number of lines to return.
    pub limit: Option<i64>,
    /// Number of lines to return from the end of the file. Mutually exclusive with offset; pass at most one of the two. To paginate within the tail, use the offset from the continuation hint in a follow-up call (without tail_lines).
    #[schemars(range(min = 1), transform = description_last)]
    pub tail_lines: Option<i64>,
    /// Swival's older name for `tail_lines`, read when that is absent.
    #[schemars(skip)]
    pub tail: Later<Option<i64>>,
}

impl ReadFile {
    /// A read of the whole of `file_path` (as far as the default limit goes).
    pub fn whole(file_path: &str) -> ReadFile {
        ReadFile {
            file_path: file_path.to_owned(),
            offset: None,
            limit: None,
            tail_lines: None,
            tail: Later::default(),
        }
    }
}

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    const KIND: ToolKind = ToolKind::Read;

    fn run(self, tb: &mut ToolBox, call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        files::read_file(tb, &self, call.editor_text.take()).map(ToolOutcome::ok)
    }

    fn fit(parameters: &mut Value, read_lines: usize) {
        limit_defaults_to(&mut parameters["properties"], read_lines);
    }
}

/// Prefer this over multiple read_file calls when you know which files you need. Reads a batch, each with optional offset/limit/tail_lines. Per-file errors are inline; the batch never fails as a whole.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadMultipleFiles {
    /// List of file read requests.
    #[schemars(with = "Requests<FileRequest>", length(max = files::MAX_BATCH), transform = items_last)]
    pub files: Value,
}

/// A batch's `files` as offered: an array of `T`s. Made here rather than
/// as schemars's `Vec<T>`, which embeds the items' schema through `json!`
/// and so reorders its keys.
pub struct Requests<T>(std::marker::PhantomData<T>);

impl<T: JsonSchema> JsonSchema for Requests<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("Requests{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let items = generator.subschema_for::<T>().to_value();
        Schema::from(Map::from_iter([("type".to_owned(), "array".into()), ("items".to_owned(), items)]))
    }
}

/// One entry of `files` (no description: Swival's has none); a bare path
/// string is taken too.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct FileRequest {
    /// Path to the file to read.
    // Offered and checked here; `batch_entry` takes the path from the
    // entry before parsing it, to title a section even when this fails.
    #[allow(dead_code)]
    pub file_path: String,
    /// 1-based line number to start reading from. Defaults to 1.
    #[schemars(extend("default" = 1))]
    pub offset: Option<i64>,
    /// Maximum number of lines to return.
    pub limit: Option<i64>,
    /// Number of lines to return from the end of the file. Mutually exclusive with offset; pass at most one of the two.
    #[schemars(range(min = 1), transform = description_last)]
    pub tail_lines: Option<i64>,
    /// Swival's older name for `tail_lines`, read when that is absent.
    #[schemars(skip)]
    pub tail: Later<Option<i64>>,
}

impl Tool for ReadMultipleFiles {
    const NAME: &'static str = "read_multiple_files";
    const KIND: ToolKind = ToolKind::Read;

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        files::read_multiple_files(tb, &self).map(ToolOutcome::ok)
    }

    fn fit(parameters: &mut Value, read_lines: usize) {
        limit_defaults_to(&mut parameters["properties"]["files"]["items"]["properties"], read_lines);
    }
}

/// Create or overwrite a file with content, or atomically rename move_from to file_path (not both). Parent directories are created.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFile {
    /// Destination path.
    pub file_path: String,
    /// The content to write. Do not set with move_from.
    #[schemars(with = "Option<String>")]
    pub content: Value,
    /// Source path to atomically rename to file_path. Do not set with content. If the destination already exists, it must have been read or written first.
    pub move_from: Option<String>,
}

impl Tool for WriteFile {
    const NAME: &'static str = "write_file";
    const KIND: ToolKind = ToolKind::Edit;

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        // The one tool whose success may carry a warning.
        write::write_file(tb, &self)
    }

    fn kind(&self) -> ToolKind {
        if self.move_from.is_some() {
            ToolKind::Move
        } else {
            ToolKind::Edit
        }
    }
}

/// Replace old_string with new_string in an existing file. Prefer over write_file for edits.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFile {
    /// Path to the file to edit.
    pub file_path: String,
    /// The exact text to find and replace.
    pub old_string: String,
    /// The replacement text.
    pub new_string: String,
    /// Replace all occurrences.
    #[schemars(extend("default" = false))]
    pub replace_all: Option<bool>,
    /// 1-based line number from read_file. When old_string matches multiple times, only replace the match that touches this line.
    pub line_number: Option<i64>,
    /// Optional [checksum=...] value from your last read_file, write_file or edit_file of this file. The edit is refused if the file changed since.
    pub checksum: Option<String>,
}

impl Tool for EditFile {
    const NAME: &'static str = "edit_file";
    const KIND: ToolKind = ToolKind::Edit;

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        write::edit_file(tb, &self)
    }
}

/// Recursively list files matching a glob, relative to the base directory.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListFiles {
    /// Glob pattern to match files, e.g. "**/*.py", "src/**/*.ts".
    pub pattern: String,
    /// File or directory to search in, relative to base directory. Defaults to "." (base directory).
    #[schemars(extend("default" = "."))]
    pub path: Option<String>,
}

impl Tool for ListFiles {
    const NAME: &'static str = "list_files";
    const KIND: ToolKind = ToolKind::Search;

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        search::list_files(tb, &self).map(ToolOutcome::ok)
    }
}

/// Search file contents with a regex. Returns matches grouped by file with line numbers.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Grep {
    /// Regex pattern to search for (Rust regex syntax: no lookaround or backreferences).
    pub pattern: String,
    /// File or directory to search in, relative to base directory. Defaults to "." (base directory).
    #[schemars(extend("default" = "."))]
    pub path: Option<String>,
    /// Glob pattern to filter filenames, e.g. "*.py".
    pub include: Option<String>,
    /// If true, search case-insensitively.
    #[schemars(extend("default" = false))]
    pub case_insensitive: Option<bool>,
    /// Number of surrounding lines to show before and after each match.
    #[schemars(range(min = 0), extend("default" = 0))]
    pub context_lines: Option<i64>,
}

impl Tool for Grep {
    const NAME: &'static str = "grep";
    const KIND: ToolKind = ToolKind::Search;

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        search::grep(tb, &self).map(ToolOutcome::ok)
    }
}

/// Private scratchpad for planning, debugging, or weighing alternatives. Use before complex actions.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Think {
    /// Your current thinking step. Max 10000 characters.
    pub thought: String,
    /// Current step number (1-based). Optional — auto-increments if omitted.
    #[schemars(range(min = 1), transform = description_last)]
    pub thought_number: Option<i64>,
    /// Estimated total steps needed. Optional — defaults to 3 on first call, then carries forward.
    #[schemars(range(min = 1), transform = description_last)]
    pub total_thoughts: Option<i64>,
    /// true if you need more thinking steps, false when done. Optional — defaults to true.
    pub next_thought_needed: Option<bool>,
    /// Type of thought. 'new' (default): normal thinking step. 'revision': correct a previous thought (set revises_thought). 'branch': explore an alternative (set branch_from_thought + branch_id).
    #[schemars(with = "Option<think::Mode>")]
    pub mode: Later<Option<String>>,
    /// Which thought number is being revised. Used with mode="revision".
    #[schemars(range(min = 1), transform = description_last)]
    pub revises_thought: Option<i64>,
    /// Thought number to branch from. Used with mode="branch", together with branch_id.
    #[schemars(range(min = 1), transform = description_last)]
    pub branch_from_thought: Option<i64>,
    /// Label for the branch (e.g. 'approach-b'). Used with mode="branch", together with branch_from_thought.
    #[schemars(length(min = 1, max = 50), transform = description_last)]
    pub branch_id: Option<String>,
    /// Swival's older way to ask for a revision, read when `mode` is absent.
    #[schemars(skip)]
    pub is_revision: Later<Option<bool>>,
}

impl Tool for Think {
    const NAME: &'static str = "think";
    const KIND: ToolKind = ToolKind::Think;

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        tb.thinking.call(&self).map(ToolOutcome::ok)
    }
}

/// Persistent checklist for multi-step work. Add items as discovered, mark done as completed. Survives context compaction.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Todo {
    /// add: Add a new task (duplicate tasks are ignored). done: Mark a task as completed (no-op if already done). remove: Remove a task entirely. clear: Remove all tasks and start fresh. list: Return the current list (no other params needed).
    #[schemars(with = "todo::Action")]
    pub action: Value,
    /// For 'add': one or more task descriptions (each max 500 chars). For 'done'/'remove': text matching existing tasks (prefix match, case-insensitive). Not needed for 'list' or 'clear'. Accepts a single string or a list of strings.
    #[schemars(with = "Option<todo::Tasks>")]
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

/// Delete a file by moving it to the trash. Cannot delete directories.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteFile {
    /// Path to the file to delete.
    pub file_path: String,
}

impl Tool for DeleteFile {
    const NAME: &'static str = "delete_file";
    const KIND: ToolKind = ToolKind::Delete;

    fn run(self, tb: &mut ToolBox, call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        trash::delete_file(tb, &self, call)
    }
}

/// Show classes, functions, and top-level declarations with line numbers (no bodies). Survey code before reading specific sections. Pass file_path for one file or directory, or files for a batch.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Outline {
    /// Path to a file or directory to outline. A directory produces a shallow survey of its source files.
    pub file_path: Option<String>,
    /// Nesting depth: 1=top-level only, 2=classes+methods, 3=nested functions/classes. When omitted, defaults to 2 for files and 1 for directory surveys. In batch mode, acts as the default for entries without a per-entry depth.
    #[schemars(range(min = 1, max = 3))]
    pub depth: Option<i64>,
    /// List of files or directories to outline (batch mode, max 20).
    // Offered as optional through `default`, not `Option<…>`, whose
    // schema would be flattened with its keys out of Swival's order.
    #[serde(default)]
    #[schemars(with = "Requests<OutlineRequest>", length(max = outline::MAX_BATCH), transform = items_between)]
    pub files: Option<Value>,
}

/// One entry of `outline`'s `files` (no description: Swival's has none);
/// a bare path string is taken too.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct OutlineRequest {
    /// Path to the file or directory to outline.
    pub file_path: String,
    /// Per-file nesting depth override.
    #[schemars(range(min = 1, max = 3))]
    pub depth: Option<i64>,
}

impl Tool for Outline {
    const NAME: &'static str = "outline";
    const KIND: ToolKind = ToolKind::Read;
    // A directory survey, or a batch of them, reads and parses up to 400 files.
    const WALKS_TREE: bool = true;

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        outline::outline(tb, &self).map(ToolOutcome::ok)
    }
}
