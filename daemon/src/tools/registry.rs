//! Every tool the daemon knows, each declared once: its name, what it
//! does (a [`ToolKind`], which the loop guards, the runner and the
//! `tool_call` event read) and who runs it. Nothing else lists tool names.
//!
//! A built-in tool is a type implementing [`Tool`]: its fields are the
//! arguments, read by [`args::parse`](super::args::parse), and its
//! `JsonSchema` is what the model is offered (`schema.rs` shapes it as
//! Swival's); `builtin.rs` declares them. [`TOOLS`] lists every tool in
//! the order the model sees them. The command and fetch tools are
//! `sandbox/`'s, which builds their schemas from the session's policy and
//! runs them on the agent's task; MCP tools are their servers', named
//! `mcp__<server>__<tool>`.

use super::delete_file::DeleteFile;
use super::edit_file::EditFile;
use super::grep::Grep;
use super::list_files::ListFiles;
use super::outline::Outline;

use super::read_file::ReadFile;
use super::read_multiple_files::ReadMultipleFiles;
use super::think::Think;
use super::todo::Todo;
use super::write_file::WriteFile;
use super::{args, schema, Tool, ToolError, Typed};
use crate::sandbox;
use serde_json::{Map, Value};
use swival_protocol::ToolKind;

/// Who runs a tool.
#[derive(Debug, Clone, Copy)]
pub enum Runner {
    /// A built-in tool, run by the session's toolbox on the run's task.
    Builtin(Builtin),
    /// `run_command` (`sandbox::run_command_tool`), once the user approved
    /// it when the session asks; offered when commands are on.
    Command,
    /// `fetch_url` (`sandbox::fetch_url_tool`).
    Fetch,
    /// `snapshot`, run by the agent on its own conversation.
    Snapshot,
    /// `complete_goal`, run by the agent for its session's goal; offered
    /// only to a goal's run.
    Goal,
    /// `use_skill`, run by the agent from the session's skills; offered
    /// when the session has any.
    Skill,
    /// `spawn_subagent` and `check_subagents`, run by the agent's
    /// subagents; offered when the session allows subagents.
    Subagents,
}

/// A built-in tool's [`Tool`] impl, as plain functions.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// Read the arguments into the tool's type.
    parse: fn(&Value) -> Result<Box<dyn Typed>, ToolError>,
    /// The schema offered, for a session's `read_lines`.
    schema: fn(usize) -> Value,
    /// Whether a call takes an editor's unsaved text ([`Tool::EDITOR_TEXT`]).
    editor_text: bool,
    /// The tool's own repair of a call's arguments ([`Tool::repair`]).
    repair: fn(&mut Map<String, Value>) -> Vec<String>,
}

impl Builtin {
    /// `args` read into the tool's type.
    pub(super) fn parse(&self, args: &Value) -> Result<Box<dyn Typed>, ToolError> {
        (self.parse)(args)
    }

    /// Whether a call takes an editor's unsaved text of the file it names
    /// ([`Tool::EDITOR_TEXT`]).
    pub fn takes_editor_text(&self) -> bool {
        self.editor_text
    }
}

/// One tool.
#[derive(Debug)]
pub struct Spec {
    /// The name the model calls it by.
    pub name: &'static str,
    /// What it does.
    pub kind: ToolKind,
    /// Who runs it.
    pub runner: Runner,
    /// Whether a call may take long ([`Tool::WALKS_TREE`]).
    walks_tree: bool,
    /// Names models reach for when they mean this tool ([`Tool::ALIASES`]).
    aliases: &'static [&'static str],
}

/// Every tool, in the order the model sees them (Swival's): the built-in
/// tools, `fetch_url`, `snapshot`, `outline` (which Swival appends after
/// them) and `run_command`; [`in_order`] places the built-in schemas among the
/// others so.
pub const TOOLS: &[Spec] = &[
    builtin::<ReadFile>(),
    builtin::<ReadMultipleFiles>(),
    builtin::<WriteFile>(),
    builtin::<EditFile>(),
    builtin::<ListFiles>(),
    builtin::<Grep>(),
    builtin::<Think>(),
    builtin::<Todo>(),
    builtin::<DeleteFile>(),
    other(sandbox::FETCH_TOOL, ToolKind::Fetch, Runner::Fetch).aliased(&["fetch"]),
    other(sandbox::SNAPSHOT_TOOL, ToolKind::Think, Runner::Snapshot),
    builtin::<Outline>(),
    other(sandbox::COMMAND_TOOL, ToolKind::Execute, Runner::Command).aliased(&[
        "bash",
        "shell",
        sandbox::SHELL_TOOL,
        "exec",
        "execute_command",
    ]),
    other(sandbox::SHELL_TOOL, ToolKind::Execute, Runner::Command),
    other(sandbox::PYTHON_TOOL, ToolKind::Execute, Runner::Command),
    other(COMPLETE_GOAL, ToolKind::Think, Runner::Goal),
    other(crate::skills::TOOL, ToolKind::Other, Runner::Skill),
    other(SPAWN_SUBAGENT, ToolKind::Other, Runner::Subagents),
    other(CHECK_SUBAGENTS, ToolKind::Other, Runner::Subagents),
];

/// Swival's `complete_goal`: the model says its session's goal is met.
pub const COMPLETE_GOAL: &str = "complete_goal";
/// Swival's `spawn_subagent`: a child session on a task of its own.
pub const SPAWN_SUBAGENT: &str = "spawn_subagent";
/// Swival's `check_subagents`: the run's subagents, polled or collected.
pub const CHECK_SUBAGENTS: &str = "check_subagents";

/// The names of the built-in tools the rest of the daemon speaks of
/// (their one spelling is the tool's own file, through [`Tool::NAME`]).
pub mod names {
    use super::super::Tool;
    /// `delete_file`.
    pub const DELETE_FILE: &str = super::DeleteFile::NAME;
    /// `think`.
    pub const THINK: &str = super::Think::NAME;
}

/// The entry of the built-in tool `T`.
const fn builtin<T: Tool + Send + Sync + 'static>() -> Spec {
    let functions =
        Builtin { parse: parse::<T>, schema: schema::function::<T>, editor_text: T::EDITOR_TEXT, repair: T::repair };
    Spec {
        name: T::NAME,
        kind: T::KIND,
        runner: Runner::Builtin(functions),
        walks_tree: T::WALKS_TREE,
        aliases: T::ALIASES,
    }
}

/// The entry of a tool the toolbox does not run.
const fn other(name: &'static str, kind: ToolKind, runner: Runner) -> Spec {
    Spec { name, kind, runner, walks_tree: false, aliases: &[] }
}

fn parse<T: Tool + Send + Sync + 'static>(args: &Value) -> Result<Box<dyn Typed>, ToolError> {
    Ok(Box::new(args::parse::<T>(args)?))
}

impl Spec {
    /// This entry, known also by `aliases` ([`Tool::ALIASES`]).
    const fn aliased(self, aliases: &'static [&'static str]) -> Spec {
        Spec { aliases, ..self }
    }

    /// Whether a call may take long and should leave the runtime's worker
    /// ([`Tool::WALKS_TREE`]).
    pub fn walks_tree(&self) -> bool {
        self.walks_tree
    }

    /// The built-in tool's functions (`None` for the command and fetch tools).
    pub(super) fn builtin(&self) -> Option<&Builtin> {
        match &self.runner {
            Runner::Builtin(b) => Some(b),
            Runner::Command | Runner::Fetch | Runner::Snapshot | Runner::Goal | Runner::Skill | Runner::Subagents => {
                None
            }
        }
    }
}

/// The tool called `name`, if the daemon has one by that name (MCP tools
/// are their session's).
pub fn spec(name: &str) -> Option<&'static Spec> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The tool a model most likely meant by `name`, a name no tool has
/// (matched without case): the one that lists it among its aliases.
pub fn alias_of(name: &str) -> Option<&'static Spec> {
    let lower = name.to_ascii_lowercase();
    TOOLS.iter().find(|t| t.aliases.contains(&lower.as_str()))
}

/// What the tool `name` does: its declared kind, [`ToolKind::Mcp`] for an
/// MCP server's tool, [`ToolKind::Other`] for a name no tool has.
pub fn kind(name: &str) -> ToolKind {
    match spec(name) {
        Some(t) => t.kind,
        None if crate::mcp::spec::is_namespaced(name) => ToolKind::Mcp,
        None => ToolKind::Other,
    }
}

/// The tool `name`'s own repair of a call's arguments ([`Tool::repair`]);
/// nothing for a tool the toolbox does not run.
pub(super) fn repair_args(name: &str, args: &mut Map<String, Value>) -> Vec<String> {
    spec(name).and_then(Spec::builtin).map_or_else(Vec::new, |b| (b.repair)(args))
}

/// `builtins` (the built-in tools' schemas, in [`TOOLS`] order) and
/// `others` (`fetch_url`, `run_command` and what a run adds, in their
/// order) as the model sees them: a built-in tool declared after one that
/// is not built in comes right after that one (`outline` after
/// `fetch_url`), the others first; one whose anchor is not offered comes
/// last.
pub fn in_order(builtins: Vec<Value>, others: Vec<Value>) -> Vec<Value> {
    let anchor = |schema: &Value| {
        let at = TOOLS.iter().position(|t| Some(t.name) == super::schema::name_of(schema))?;
        TOOLS[..at].iter().rev().find(|t| t.builtin().is_none()).map(|t| t.name)
    };
    let mut pending: Vec<(Option<&str>, Value)> = builtins.into_iter().map(|s| (anchor(&s), s)).collect();
    let mut take = |after: Option<&str>| {
        let (now, later) = std::mem::take(&mut pending).into_iter().partition(|(a, _)| *a == after);
        pending = later;
        now.into_iter().map(|(_, s)| s).collect::<Vec<Value>>()
    };
    let mut out = take(None);
    for schema in others {
        let name = super::schema::name_of(&schema).map(str::to_owned);
        out.push(schema);
        if let Some(name) = name {
            out.extend(take(Some(&name)));
        }
    }
    out.extend(pending.into_iter().map(|(_, s)| s));
    out
}

/// The names of the built-in tools, in order.
pub(super) fn builtin_names() -> impl Iterator<Item = &'static str> {
    TOOLS.iter().filter(|t| t.builtin().is_some()).map(|t| t.name)
}

/// The schemas of the built-in tools, in order, for a session whose reads
/// return `read_lines` lines unless they name a `limit`.
pub(super) fn builtin_schemas(read_lines: usize) -> Vec<Value> {
    TOOLS.iter().filter_map(Spec::builtin).map(|b| (b.schema)(read_lines)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_kind(name: &str, raw: &str) -> ToolKind {
        super::super::parsed::ParsedCall::read("c", name, raw).kind
    }

    #[test]
    fn names_are_unique_and_kinds_say_what_guards_need() {
        let mut names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len());
        let changing: Vec<&str> = TOOLS.iter().filter(|t| t.kind.changes_files()).map(|t| t.name).collect();
        let changing_expected =
            ["write_file", "edit_file", "delete_file", "run_command", "run_shell_command", "run_python"];
        assert_eq!(changing, changing_expected);
        let notes: Vec<&str> = TOOLS.iter().filter(|t| t.kind.is_bookkeeping()).map(|t| t.name).collect();
        assert_eq!(notes, ["think", "todo", "snapshot", "complete_goal"]);
        let walking: Vec<&str> = TOOLS.iter().filter(|t| t.walks_tree()).map(|t| t.name).collect();
        assert_eq!(walking, ["list_files", "grep", "delete_file", "outline"]);
    }

    #[test]
    fn a_calls_kind_comes_from_the_registry_and_its_arguments() {
        assert_eq!(call_kind("write_file", r#"{"file_path": "b", "content": "x"}"#), ToolKind::Edit);
        assert_eq!(call_kind("write_file", r#"{"file_path": "b", "move_from": "a"}"#), ToolKind::Move);
        assert_eq!(call_kind("write_file", "{bad"), ToolKind::Edit);
        assert_eq!(call_kind("run_command", r#"{"command": ["ls"]}"#), ToolKind::Execute);
        assert_eq!(call_kind("mcp__fs__read", "{}"), ToolKind::Mcp);
        assert_eq!(call_kind("bash", "{}"), ToolKind::Other);
    }
}
