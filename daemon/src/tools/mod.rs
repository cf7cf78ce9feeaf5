//! The tools the model can call: every tool the daemon has, declared once
//! in `registry.rs` (the built-in ones in `builtin.rs`, each a type whose
//! schema is what the model sees), and the toolbox that runs the built-in
//! ones. A tool answers a [`ToolOutcome`] (`write_file`'s and
//! `delete_file`'s text may carry a warning); a failure is a [`ToolError`], shown to the model as `error: `
//! and its message. A call's [`ToolOutcome`] says which it was, so nobody
//! downstream reads the text to find out; the command, fetch and MCP tools
//! outside this module return one too.
//!
//! Every path a tool touches goes through [`path::PathPolicy::resolve`]
//! (reads with `Access::Read`; writes, moves and deletes with
//! `Access::Write`), and the I/O on it through [`beneath`]: the directory
//! the resolved path lies under is opened and the rest is opened beneath
//! it following no symlink ([`ToolBox::beneath`]), so a path changed after
//! the check cannot redirect the I/O. Files: `files.rs` (reads), `write.rs`
//! (write, move, edit), `edit.rs` (the pure edit matcher), `trash.rs` (soft
//! delete; `asked.rs`: whether the task asked for it), `search.rs`
//! (list_files, grep), `outline.rs` (with `lang/declarations.rs`), `todo.rs`,
//! `think.rs`, `schema.rs` (schemas from the types, and a run's offer).

/// Typed tool arguments from JSON, for unit tests: `args!({"file_path": "a"})`.
#[cfg(test)]
macro_rules! args {
    ($($json:tt)+) => {
        crate::tools::args::parse(&serde_json::json!($($json)+)).expect("test arguments parse")
    };
}

pub(crate) mod args;
mod asked;
pub use asked::listed;
mod edit;
mod edit_file;
mod error;
mod files;
mod grep;
mod lang;
mod lean;
mod list_files;
mod map;
mod miss;
mod named;
mod near;
pub mod offer;
mod outline;
pub mod parsed;
pub mod path;
mod read_file;
mod read_multiple_files;
pub mod registry;
pub mod repair;
pub mod schema;
mod search;
mod tracker;
pub use lang::notes as syntax_notes;
mod delete_file;
mod think;
mod todo;
mod write;
mod write_file;

use crate::beneath::{self, Beneath};
use crate::toolcall::ToolOutcome;
pub use error::ToolError;
use path::{Access, FilesMode, PathPolicy};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::path::{Component, Path, PathBuf};
use swival_protocol::ToolKind;
pub use tracker::{text_hash, ReadTracker};

/// JSON a tool writes (an answer, a call to make, a trash index line) as
/// text. It goes through a `Value`, as the `json!` it replaced did, so its
/// keys come out as they always have: in the order written when serde_json
/// keeps order (the workspace build), sorted otherwise.
fn json_text(value: &impl Serialize) -> String {
    serde_json::to_value(value).expect("tool JSON serializes").to_string()
}

/// How much one file tool result carries (Swival's `max_output_kb` and
/// `max_output_lines`, per session rather than process-wide).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputCaps {
    /// Bytes of content per `read_file`, `read_multiple_files` batch,
    /// directory listing, `list_files` and `grep` result.
    pub read_bytes: usize,
    /// Lines a read returns when it names no `limit`.
    pub read_lines: usize,
}

impl Default for OutputCaps {
    fn default() -> Self {
        OutputCaps { read_bytes: files::MAX_READ_BYTES, read_lines: files::DEFAULT_LIMIT }
    }
}

/// What a tool call brings besides its arguments.
#[derive(Debug, Default)]
pub struct CallInput<'a> {
    /// The model's id for the call (`delete_file` records it).
    pub id: &'a str,
    /// An editor's text of one path (unsaved edits included), which a
    /// `read_file` of that path shows instead of the disk.
    pub editor_text: Option<(std::path::PathBuf, String)>,
    /// The run's task ("" when unknown, as in a resumed run): `delete_file`
    /// tells whether it asked for the file to go.
    pub task: &'a str,
}

/// A built-in tool: the type is its arguments, and the impl says what the
/// tool is called, what it does and how it runs. The type's doc comment
/// is the tool's description and each field's the argument's (one line
/// each: lines would be joined with a newline).
pub trait Tool: DeserializeOwned + JsonSchema {
    /// The name the model calls it by.
    const NAME: &'static str;
    /// What it does.
    const KIND: ToolKind;
    /// Whether a call may take long and should leave the runtime's worker:
    /// it walks a tree (a search) or may move one (a delete, to the
    /// trash). The others read or write a bounded amount (one file, or at
    /// most 20, each read up to 50 KiB).
    const WALKS_TREE: bool = matches!(Self::KIND, ToolKind::Search | ToolKind::Delete);
    /// Whether a call takes an editor's unsaved text of the file it names
    /// ([`CallInput::editor_text`]), which the agent then asks the
    /// session's editor for.
    const EDITOR_TEXT: bool = false;
    /// Names models reach for when they mean this tool (`cat` for
    /// `read_file`): a call by one of them, when no tool has that name, is
    /// answered with this tool's name (`repair::unknown_tool`).
    const ALIASES: &'static [&'static str] = &[];

    /// Repair a call's arguments (already JSON, with Swival's argument
    /// names) for what a model gets wrong with this tool in particular;
    /// one note per change, in Swival's words.
    fn repair(_args: &mut serde_json::Map<String, Value>) -> Vec<String> {
        Vec::new()
    }

    /// Run the call on the session's toolbox, with what the call brings
    /// besides its arguments (`call`: the model's id for it, an editor's
    /// text).
    fn run(self, tb: &mut ToolBox, call: &mut CallInput) -> Result<ToolOutcome, ToolError>;

    /// The files this call writes, edits, moves or deletes, as given (for
    /// the nudges that watch what a run changed).
    fn paths(&self) -> Vec<String> {
        Vec::new()
    }

    /// What this call does, when that depends on its arguments.
    fn kind(&self) -> ToolKind {
        Self::KIND
    }

    /// Fit the generated parameters to the session, whose reads return
    /// `read_lines` lines unless they name a `limit`.
    fn fit(_parameters: &mut Value, _read_lines: usize) {}
}

/// A built-in tool's call, its arguments read into the tool's type.
pub trait Typed: Send + Sync {
    /// Run it on the session's toolbox.
    fn run(self: Box<Self>, tb: &mut ToolBox, call: &mut CallInput) -> Result<ToolOutcome, ToolError>;
    /// What it does ([`Tool::kind`]).
    fn kind(&self) -> ToolKind;
    /// The files it names ([`Tool::paths`]).
    fn paths(&self) -> Vec<String>;
}

impl<T: Tool + Send + Sync> Typed for T {
    fn run(self: Box<Self>, tb: &mut ToolBox, call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        Tool::run(*self, tb, call)
    }

    fn kind(&self) -> ToolKind {
        Tool::kind(self)
    }

    fn paths(&self) -> Vec<String> {
        Tool::paths(self)
    }
}

/// One session's tools and their state.
#[derive(Debug)]
pub struct ToolBox {
    /// Where file tools may go.
    policy: PathPolicy,
    /// Output caps of the file tools.
    caps: OutputCaps,
    /// The read-before-write guard's memory.
    tracker: ReadTracker,
    /// Whether the guard is on (Swival's `no_read_guard` turns it off).
    read_guard: bool,
    /// Whether writes and edits of source files are parsed (`edit_checks`).
    edit_checks: bool,
    /// What `think` remembers.
    thinking: think::Thinking,
    /// The session's `todo` checklist.
    todo: todo::TodoList,
    /// The session's MCP servers and their tools.
    mcp: crate::mcp::SessionMcp,
    /// The last `edit_file` miss, to help a repeat.
    misses: miss::Misses,
    /// The skills the run's setup found (`use_skill`).
    skills: crate::skills::Catalog,
    /// How the offer words the tools (`lean_tools`).
    style: offer::SchemaStyle,
}

impl ToolBox {
    /// A toolbox for a session whose paths follow `policy`.
    pub fn new(policy: PathPolicy) -> ToolBox {
        ToolBox {
            policy,
            caps: OutputCaps::default(),
            tracker: ReadTracker::default(),
            read_guard: true,
            edit_checks: true,
            thinking: think::Thinking::default(),
            todo: todo::TodoList::default(),
            mcp: crate::mcp::SessionMcp::default(),
            misses: miss::Misses::default(),
            skills: crate::skills::Catalog::default(),
            style: offer::SchemaStyle::Swival,
        }
    }

    /// Take `skills` as the run's: the directories of those outside the
    /// base dir become readable (Swival's read allowlist).
    /// The session's settings for its tools: the read-before-write guard
    /// (`!no_read_guard`), the checks after a change (`edit_checks`), how
    /// the offer words the tools and the read caps.
    pub fn configure(&mut self, read_guard: bool, edit_checks: bool, style: offer::SchemaStyle, caps: OutputCaps) {
        self.read_guard = read_guard;
        self.edit_checks = edit_checks;
        self.style = style;
        self.caps = caps;
    }

    /// Where file tools may go.
    pub fn policy(&self) -> &PathPolicy {
        &self.policy
    }

    /// Whether writes and edits are checked after a change (`edit_checks`).
    pub fn edit_checks(&self) -> bool {
        self.edit_checks
    }

    /// The session's `todo` checklist as it stands.
    pub fn todo_items(&self) -> Vec<swival_protocol::TodoItem> {
        self.todo.items()
    }

    /// The skills the run's setup found (`use_skill`).
    pub fn skills(&self) -> &crate::skills::Catalog {
        &self.skills
    }

    /// The session's MCP servers and their tools.
    pub fn mcp(&self) -> &crate::mcp::SessionMcp {
        &self.mcp
    }

    /// The session's MCP servers, to start, fit or lease.
    pub fn mcp_mut(&mut self) -> &mut crate::mcp::SessionMcp {
        &mut self.mcp
    }

    /// A new run begins: what the read guard knows from an earlier run
    /// counts as read, not as read in this run.
    pub fn new_run(&mut self) {
        self.tracker.new_run();
    }

    /// Whether this run has read any file yet.
    pub fn read_nothing_yet(&self) -> bool {
        self.tracker.paths().next().is_none()
    }

    /// Take the skills the run's setup found (`use_skill`).
    pub fn set_skills(&mut self, skills: crate::skills::Catalog) {
        self.policy.skills = skills.outside_dirs();
        self.skills = skills;
    }

    /// The schemas of the file tools offered to the model.
    pub fn schemas(&self) -> Vec<Value> {
        offer::file_tools(self.caps.read_lines)
    }

    /// What a run offers the model: the file tools and `commands` (the
    /// command tools) in the session's style, and the MCP servers' tools
    /// as their servers wrote them, serialised once. Without MCP tools the
    /// offer is shared with every run offering the same.
    pub fn offer(&self, commands: Vec<Value>) -> std::sync::Arc<offer::Offer> {
        let mcp = self.mcp.schemas();
        if mcp.is_empty() {
            return offer::Offer::shared(self.caps.read_lines, self.style, commands);
        }
        let mut all = registry::in_order(self.schemas(), commands);
        // The lean cuts name no MCP tool (theirs are `mcp__<server>__<tool>`).
        all.extend(mcp.iter().cloned());
        std::sync::Arc::new(offer::Offer::styled(all, self.style))
    }

    /// Run one tool call; the result string is what the model sees.
    pub fn call(&mut self, name: &str, raw_args: &str) -> String {
        self.call_with(name, raw_args, CallInput::default()).text
    }

    /// [`ToolBox::call`] with what the call brings besides its arguments
    /// (the model's id for it, recorded in the trash index by
    /// `delete_file`; an editor's text of the file it reads), and what
    /// the result means. The one place a tool's failure becomes the text
    /// the model reads.
    pub fn call_with(&mut self, name: &str, raw_args: &str, call: CallInput) -> ToolOutcome {
        parsed::ParsedCall::read(call.id, name, raw_args).run(self, call)
    }

    /// A `todo` call: the list is mirrored only where the policy allows (a
    /// `.swival` that is a symlink leading outside keeps it in memory, and
    /// one leading anywhere is never followed).
    fn todo_call(&mut self, args: &todo::Todo) -> Result<String, ToolError> {
        let base = self.policy.resolve(".swival/todo.md", Access::Write).ok().map(|_| self.policy.base.clone());
        self.todo.call(args, base.as_deref())
    }
}

impl ToolBox {
    /// Open the directory `resolved` (a path the policy accepted) lies
    /// under — the innermost of the base dir and the allowed dirs holding
    /// it, or `/` under yolo — and return it with the rest of the path.
    pub(crate) fn beneath(&self, resolved: &Path) -> Result<(Beneath, PathBuf), ToolError> {
        let root = std::iter::once(&self.policy.base)
            .chain(&self.policy.allow_rw)
            .chain(&self.policy.allow_ro)
            .chain(&self.policy.skills)
            .filter(|d| resolved.starts_with(d))
            .max_by_key(|d| d.as_os_str().len())
            .map(PathBuf::as_path)
            .or_else(|| (self.policy.files == FilesMode::All).then_some(Path::new("/")))
            .ok_or_else(|| {
                ToolError::refused(format!(
                    "{} is outside the base directory {}",
                    resolved.display(),
                    self.policy.base.display()
                ))
            })?;
        let rel = resolved.strip_prefix(root).unwrap_or(Path::new("")).to_owned();
        let dir =
            Beneath::open(root).map_err(|e| ToolError::refused(format!("cannot open {}: {e}", root.display())))?;
        Ok((dir, rel))
    }

    /// The entry `requested` names, its last component not followed (so a
    /// symlink can be moved or deleted itself): its directory is resolved
    /// and checked for writing like any path, then opened with
    /// [`ToolBox::beneath`]. Use it only after `resolve` accepted the same
    /// string.
    pub(crate) fn entry(&self, requested: &str) -> Result<(Beneath, PathBuf), ToolError> {
        let original = self.policy.unresolved(requested)?;
        let (Some(parent), Some(Component::Normal(name))) = (original.parent(), original.components().next_back())
        else {
            // `.`, `..` or `/` at the end: the resolved path is the entry.
            return self.beneath(&self.policy.resolve(requested, Access::Write)?);
        };
        let parent =
            parent.to_str().ok_or_else(|| ToolError::refused(format!("path {requested} is not valid UTF-8")))?;
        let (dir, rel) = self.beneath(&self.policy.resolve(parent, Access::Write)?)?;
        Ok((dir, rel.join(name)))
    }

    /// The failure of I/O on `requested`: a symlink met beneath the root
    /// (it appeared after the check) reads like the outside-the-base-dir
    /// refusal; anything else is `cannot <what>`.
    pub(crate) fn io_error(&self, requested: &str, what: &'static str, e: beneath::Error) -> ToolError {
        match e {
            beneath::Error::Symlink(_) => ToolError::Changed {
                requested: requested.to_owned(),
                symlink: e,
                base: self.policy.base.display().to_string(),
            },
            beneath::Error::Io(source) => ToolError::Io { what, requested: requested.to_owned(), source },
            other => ToolError::Io { what, requested: requested.to_owned(), source: other.into() },
        }
    }
}

/// A toolbox on `dir` with no extra directories, for unit tests.
#[cfg(test)]
fn test_toolbox(dir: &Path) -> ToolBox {
    ToolBox::new(PathPolicy {
        base: dir.canonicalize().unwrap(),
        allow_rw: vec![],
        allow_ro: vec![],
        skills: vec![],
        files: FilesMode::Some,
        protected: vec![],
        hidden: vec![],
        home: std::env::var_os("HOME").map(PathBuf::from),
        home_view: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_in_swivals_order_and_all_dispatch() {
        let d = tempfile::tempdir().unwrap();
        let mut tb = test_toolbox(d.path());
        let names: Vec<String> =
            tb.schemas().iter().map(|s| s["function"]["name"].as_str().unwrap().to_owned()).collect();
        assert_eq!(
            names,
            [
                "read_file",
                "read_multiple_files",
                "write_file",
                "edit_file",
                "list_files",
                "grep",
                "think",
                "todo",
                "delete_file",
                "outline"
            ]
        );
        for n in &names {
            let out = tb.call(n, "{}");
            assert!(!out.contains("unknown tool"), "{n}: {out}");
        }
    }

    #[test]
    fn unknown_tools_and_bad_json_are_errors() {
        let d = tempfile::tempdir().unwrap();
        let mut tb = test_toolbox(d.path());
        assert!(tb.call("nope", "{}").starts_with("error: unknown tool 'nope'"));
        assert!(tb.call("read_file", "{bad").starts_with("error: invalid JSON"));
        assert!(tb.call("read_file", "[1]").starts_with("error: tool arguments must be"));
    }

    #[test]
    fn a_calls_outcome_says_failed_or_warned_where_the_result_is_made() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("m.py"), "def add(a, b):\n    return a + b\n").unwrap();
        let mut tb = test_toolbox(d.path());
        let read =
            tb.call_with("read_file", r#"{"file_path": "m.py"}"#, CallInput { id: "c1", ..CallInput::default() });
        assert!(!read.failed && !read.warned, "{}", read.text);
        let rewrite = r#"{"file_path": "m.py", "content": "def multiply(a, b):\n    return a * b"}"#;
        let written = tb.call_with("write_file", rewrite, CallInput { id: "c2", ..CallInput::default() });
        assert!(written.warned && !written.failed, "{}", written.text);
        assert!(written.text.contains("\nNote: "), "{}", written.text);
        let missing =
            tb.call_with("read_file", r#"{"file_path": "nope.py"}"#, CallInput { id: "c3", ..CallInput::default() });
        assert!(missing.failed && missing.text.starts_with("error: "), "{}", missing.text);
    }

    #[test]
    fn every_file_tool_refuses_a_path_outside_the_base() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("p");
        std::fs::create_dir(&base).unwrap();
        std::fs::write(d.path().join("outside.txt"), "x").unwrap();
        let mut tb = test_toolbox(&base);
        let calls = [
            ("read_file", r#"{"file_path": "../outside.txt"}"#),
            ("read_multiple_files", r#"{"files": ["../outside.txt"]}"#),
            ("write_file", r#"{"file_path": "../outside.txt", "content": "y"}"#),
            ("write_file", r#"{"file_path": "in.txt", "move_from": "../outside.txt"}"#),
            ("edit_file", r#"{"file_path": "../outside.txt", "old_string": "x", "new_string": "y"}"#),
            ("delete_file", r#"{"file_path": "../outside.txt"}"#),
            ("list_files", r#"{"pattern": "*", "path": ".."}"#),
            ("grep", r#"{"pattern": "x", "path": "../outside.txt"}"#),
            ("outline", r#"{"file_path": "../outside.txt"}"#),
            ("outline", r#"{"file_path": ".."}"#),
            ("outline", r#"{"files": ["../outside.txt"]}"#),
        ];
        for (name, args) in calls {
            let out = tb.call(name, args);
            assert!(out.contains("outside base directory"), "{name}: {out}");
        }
        assert_eq!(std::fs::read_to_string(d.path().join("outside.txt")).unwrap(), "x");
    }

    #[test]
    fn a_swival_dir_leading_outside_gets_no_todo_file_and_no_trash() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("p");
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir_all(&base).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, base.join(".swival")).unwrap();
        std::fs::write(base.join("f.txt"), "x\n").unwrap();
        let mut tb = test_toolbox(&base);
        let out = tb.call("todo", r#"{"action": "add", "tasks": "t"}"#);
        assert!(out.contains("\"total\":1"), "{out}");
        tb.call("read_file", r#"{"file_path": "f.txt"}"#);
        let out = tb.call("delete_file", r#"{"file_path": "f.txt"}"#);
        assert!(out.contains("outside base directory"), "{out}");
        assert!(base.join("f.txt").exists());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    #[test]
    fn a_swival_symlink_leading_inside_the_base_is_not_followed_either() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink("elsewhere", d.path().join(".swival")).unwrap();
        std::fs::write(d.path().join("f.txt"), "x\n").unwrap();
        let mut tb = test_toolbox(d.path());
        let out = tb.call("todo", r#"{"action": "add", "tasks": "t"}"#);
        assert!(out.contains("\"total\":1"), "{out}");
        tb.call("read_file", r#"{"file_path": "f.txt"}"#);
        let out = tb.call("delete_file", r#"{"file_path": "f.txt"}"#);
        assert!(out.starts_with("error: cannot use the trash: "), "{out}");
        assert!(out.ends_with(".swival is a symlink and was not followed"), "{out}");
        assert!(d.path().join("f.txt").exists());
        assert_eq!(std::fs::read_dir(d.path().join("elsewhere")).unwrap().count(), 0);
    }

    #[test]
    fn file_tools_work_in_allowed_dirs_through_their_own_root() {
        let d = tempfile::tempdir().unwrap();
        let (base, extra) = (d.path().join("p"), d.path().join("extra"));
        std::fs::create_dir_all(&base).unwrap();
        std::fs::create_dir_all(&extra).unwrap();
        let mut tb = test_toolbox(&base);
        tb.policy.allow_rw = vec![extra.canonicalize().unwrap()];
        let target = format!("{}/sub/n.txt", extra.display());
        let out = tb.call("write_file", &serde_json::json!({"file_path": target, "content": "n"}).to_string());
        assert!(out.starts_with("Wrote 1 bytes"), "{out}");
        let out = tb.call("write_file", &serde_json::json!({"file_path": "m.txt", "move_from": target}).to_string());
        assert_eq!(out, format!("Moved {target} -> m.txt"));
        assert_eq!(std::fs::read_to_string(base.join("m.txt")).unwrap(), "n");
        let out = tb.call("read_file", &serde_json::json!({"file_path": extra.join("sub")}).to_string());
        assert_eq!(out, format!("{}/sub is an empty directory", extra.display()));
    }
}
