//! The system prompt, in our own words, plus the project's instruction
//! files (CLAUDE.md, AGENTS.md) within a budget and Swival's memory
//! section and block (see `notes::memory`).

use crate::config::FilesMode;
use std::path::{Path, PathBuf};

/// The project's instruction files, in the base dir: CLAUDE.md (shown as
/// the project's instructions) and AGENTS.md (the agents').
pub const INSTRUCTION_FILES: [&str; 2] = ["CLAUDE.md", "AGENTS.md"];

/// Characters of instruction files included, per kind.
const INSTRUCTIONS_BUDGET: usize = 10_000;

/// Bytes of an instruction file read at most: a larger one is left out
/// with a warning, never read.
const INSTRUCTIONS_MAX_BYTES: u64 = 1 << 20;

const BASE: &str = "You are a coding agent working in a project directory on the user's machine. \
Work autonomously until the task is done: choose the most likely intent when a detail is ambiguous, \
and do not stop to ask whether to continue.

{FILES}

How to work:
- Answer greetings and general questions directly; anything about this project's files, read them first and answer from what they say.
- Look before you change: list and grep to find things, read_file before editing, never edit code you have not read.
- Think before multi-step work, debugging and edits.
- Make one logical change at a time, then check it (run the tests or the build when you can).
- When a tool returns an error, work out why before trying again; do not repeat a failing call unchanged.
- When a search finds nothing, try a broader pattern.

Past answers in this project are in .swival/HISTORY.md; read it when earlier work matters.

{MEMORY}Write correct, plain code that follows the project's conventions, without dead code or debug prints. \
Never print secrets. The user's messages come first, then the project's instruction files, then this prompt; \
the sandbox and path rules always hold.

Be concise: say what you are about to do, do it, and end with a short summary of what changed.";

/// The prompt with the lean tool offer (`lean_tools`), for a small model
/// that reads every token before its first word and takes each line as
/// something to do: what a task needs and how to end it, nothing about
/// tools it is not offered (`think`, `todo`), HISTORY.md or keeping
/// memory (a 1.5B model told to keep MEMORY.md up to date wrote it, turn
/// after turn, in place of the task). The memory block itself still comes.
const LEAN_BASE: &str = "You are a coding agent working in a project directory on the user's machine. \
Do the task with your tools, without asking questions.

{FILES}

How to work:
- Anything about this project or its files: read them first and answer from what they say. Other questions: answer directly.
- Read a file before you edit it. In edit_file, copy old_string exactly from what read_file showed; to rewrite a small file, write_file its whole new content.
- Change only what the task asks; keep the rest of the file as it was.
- When a tool returns an error, read it and change the call; never repeat a call unchanged.
- When the task is done, stop calling tools and reply in one or two sentences: what you changed, or the answer.

Never print secrets.";

/// The system prompt of Swival's `command` provider, which gets no tools.
pub const COMMAND_PROVIDER_PROMPT: &str =
    "You are a helpful assistant. Answer the user's question directly and concisely.";

/// The system prompt for a session in `base_dir`, or the replacement text.
/// `memory` is the `<memory>` block (empty: nothing to inject), or `None`
/// with `no_memory`, which also leaves out Swival's memory section; `lean`
/// is the lean tool offer's prompt ([`LEAN_BASE`]); `instructions` the
/// project's instruction files (`None` with `no_instructions`).
pub fn system_prompt(
    base_dir: &Path,
    replacement: Option<&str>,
    instructions: Option<&Instructions>,
    files: FilesMode,
    memory: Option<&str>,
    lean: bool,
) -> String {
    if let Some(text) = replacement {
        return text.to_owned();
    }
    // What the file tools may reach (Swival's sentences for `all` and `none`).
    let rule = match files {
        FilesMode::Some => "Paths are relative to the project directory; paths outside it are refused.",
        FilesMode::All => {
            "Paths are relative to the project directory. Filesystem access is unrestricted. You can read and write any file on the system."
        }
        FilesMode::None => {
            "Filesystem access is restricted to .swival/ only. You cannot read or write project files."
        }
    };
    let mut out = if lean {
        LEAN_BASE.replace("{FILES}", rule)
    } else {
        let guidance = if memory.is_some() { crate::notes::memory::GUIDANCE } else { "" };
        BASE.replace("{FILES}", rule).replace("{MEMORY}", guidance)
    };
    if let Some(found) = instructions {
        if let Some(claude) = &found.claude {
            out.push_str(&format!("\n\n<project-instructions>\n{claude}\n</project-instructions>"));
        }
        if let Some(agents) = &found.agents {
            out.push_str(&format!(
                "\n\n<agent-instructions>\n<!-- project: {} -->\n{agents}\n</agent-instructions>",
                base_dir.join("AGENTS.md").display()
            ));
        }
    }
    if let Some(block) = memory.filter(|b| !b.is_empty()) {
        out.push_str("\n\n");
        out.push_str(block);
    }
    out.push_str(&format!("\n\nCurrent date: {} (UTC)", today()));
    out
}

/// Today's date, `YYYY-MM-DD` in UTC. The day, not the time: the system
/// prompt then stays the same byte for byte for every run in a project
/// that day, so a model server's prefix cache serves it and the tool
/// schemas after it from one run to the next (llama-server keeps the last
/// prompt of its slot; a request that starts the same is not processed
/// again up to where it differs).
fn today() -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    now[..10].to_owned()
}

/// Swival's `## MCP Tools` section: each server's tools (as the model
/// calls them) with their descriptions; `None` without MCP tools.
pub fn mcp_tool_info(servers: &[(String, Vec<(String, String)>)]) -> Option<String> {
    if servers.iter().all(|(_, tools)| tools.is_empty()) {
        return None;
    }
    let mut lines =
        vec!["## MCP Tools".to_owned(), String::new(), "Tools provided by external MCP servers:".to_owned()];
    lines.push(String::new());
    for (server, tools) in servers.iter().filter(|(_, t)| !t.is_empty()) {
        lines.push(format!("**{server}**:"));
        for (name, description) in tools {
            let desc = if description.is_empty() { String::new() } else { format!(": {description}") };
            lines.push(format!("- `{name}`{desc}"));
        }
        lines.push(String::new());
    }
    Some(lines.join("\n"))
}

/// The project's instruction files, as read for the model.
#[derive(Debug, Default)]
pub struct Instructions {
    /// CLAUDE.md's text.
    claude: Option<String>,
    /// AGENTS.md's text.
    agents: Option<String>,
}

impl Instructions {
    /// Read CLAUDE.md and AGENTS.md from `base_dir` the one way a file
    /// reaches the model (`beneath::read_for_model`: no symlink followed,
    /// a regular file under the cap, nothing hidden); one that cannot be
    /// read so is left out and said in a warning.
    pub fn read(base_dir: &Path, hidden: &[PathBuf]) -> (Instructions, Vec<String>) {
        let mut warnings = Vec::new();
        let mut one = |name: &str| match crate::beneath::read_for_model(
            base_dir,
            Path::new(name),
            INSTRUCTIONS_MAX_BYTES,
            hidden,
        ) {
            Ok(bytes) => capped(&String::from_utf8_lossy(&bytes), INSTRUCTIONS_BUDGET),
            Err(e) if e.is_not_found() => None,
            Err(e) => {
                warnings.push(format!("{name} left out of the system prompt: {e}"));
                None
            }
        };
        let [claude, agents] = INSTRUCTION_FILES;
        let found = Instructions { claude: one(claude), agents: one(agents) };
        (found, warnings)
    }
}

/// A file's text without HTML comments, cut to `budget` characters.
fn capped(text: &str, budget: usize) -> Option<String> {
    let mut clean = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        clean.push_str(&rest[..start]);
        rest = rest[start..].find("-->").map(|end| &rest[start + end + 3..]).unwrap_or("");
    }
    clean.push_str(rest);
    let clean = clean.trim();
    if clean.is_empty() {
        return None;
    }
    Some(clean.chars().take(budget).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(base: &Path) -> Instructions {
        Instructions::read(base, &[]).0
    }

    #[test]
    fn an_instruction_file_made_a_link_a_fifo_or_a_giant_is_left_out_with_a_warning() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        std::fs::write(base.join("key"), "PRIVATE KEY").unwrap();
        std::os::unix::fs::symlink(base.join("key"), base.join("AGENTS.md")).unwrap();
        nix::unistd::mkfifo(&base.join("CLAUDE.md"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let (found, warnings) = Instructions::read(&base, &[]);
        let p = system_prompt(&base, None, Some(&found), FilesMode::Some, None, false);
        assert!(!p.contains("PRIVATE KEY") && !p.contains("instructions>"), "{p}");
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        std::fs::remove_file(base.join("AGENTS.md")).unwrap();
        std::fs::File::create(base.join("AGENTS.md")).unwrap().set_len(1 << 30).unwrap();
        let (found, warnings) = Instructions::read(&base, &[]);
        assert!(found.agents.is_none() && warnings[1].contains("over the"), "{warnings:?}");
    }

    #[test]
    fn agents_md_is_included_without_comments_and_capped() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("AGENTS.md"), format!("Use tabs.<!-- hidden-note -->\n{}", "z".repeat(20_000)))
            .unwrap();
        let p = system_prompt(d.path(), None, Some(&read(d.path())), FilesMode::Some, None, false);
        assert!(p.contains("<agent-instructions>") && p.contains("Use tabs."));
        assert!(!p.contains("hidden-note"));
        assert!(p.len() < BASE.len() + INSTRUCTIONS_BUDGET + 500);
    }

    #[test]
    fn the_files_setting_is_said_in_the_prompt() {
        let d = tempfile::tempdir().unwrap();
        let prompt = |files| system_prompt(d.path(), None, None, files, None, false);
        assert!(prompt(FilesMode::Some).contains("paths outside it are refused"));
        assert!(prompt(FilesMode::All).contains("Filesystem access is unrestricted."));
        assert!(prompt(FilesMode::None).contains("Filesystem access is restricted to .swival/ only."));
        assert!(!prompt(FilesMode::None).contains("{FILES}"));
    }

    #[test]
    fn mcp_tools_are_listed_by_server_as_swival_does() {
        let info = vec![
            ("ev".to_owned(), vec![("mcp__ev__echo".to_owned(), "Echoes".to_owned())]),
            ("empty".to_owned(), vec![]),
        ];
        assert_eq!(
            mcp_tool_info(&info).unwrap(),
            "## MCP Tools\n\nTools provided by external MCP servers:\n\n**ev**:\n- `mcp__ev__echo`: Echoes\n"
        );
        assert!(mcp_tool_info(&[]).is_none());
    }

    #[test]
    fn memory_comes_after_the_instructions_with_swivals_section_unless_off() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("AGENTS.md"), "Use tabs.").unwrap();
        let p = system_prompt(
            d.path(),
            None,
            Some(&read(d.path())),
            FilesMode::Some,
            Some("<memory>\nm\n</memory>"),
            false,
        );
        assert!(p.contains("\n\n## Memory\n\n- Keep `.swival/memory/MEMORY.md` up to date"));
        let (agents, memory, date) = (p.find("</agent-instructions>"), p.find("<memory>"), p.find("Current date: "));
        assert!(agents < memory && memory < date, "{p}");
        let off = system_prompt(d.path(), None, Some(&read(d.path())), FilesMode::Some, None, false);
        assert!(!off.contains("## Memory") && !off.contains("MEMORY.md") && !off.contains("{MEMORY}"));
    }

    #[test]
    fn the_lean_prompt_is_short_and_keeps_the_memory_block_without_the_chores() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("AGENTS.md"), "Use tabs.").unwrap();
        let lean =
            system_prompt(d.path(), None, Some(&read(d.path())), FilesMode::Some, Some("<memory>\nm\n</memory>"), true);
        let full = system_prompt(
            d.path(),
            None,
            Some(&read(d.path())),
            FilesMode::Some,
            Some("<memory>\nm\n</memory>"),
            false,
        );
        assert!(lean.len() < full.len() * 2 / 3, "{} against {}", lean.len(), full.len());
        assert!(
            lean.contains("paths outside it are refused") && lean.contains("Use tabs.") && lean.contains("<memory>\nm")
        );
        assert!(lean.contains("stop calling tools and reply"), "{lean}");
        for chore in ["## Memory", "HISTORY.md", "Think before", "run the tests"] {
            assert!(!lean.contains(chore), "{chore} in {lean}");
        }
    }

    #[test]
    fn replacement_prompt_is_used_verbatim() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(system_prompt(d.path(), Some("be brief"), None, FilesMode::Some, Some(""), false), "be brief");
    }
}
