//! The slash commands, one table for the REPL and for editors (ACP):
//! Swival's names, arguments and help where Swival has them, and ours
//! (`/reasoning`, `/policy`, `/report`, `/sessions`, `/attach`). Each is
//! a [`Slash`], which is what the REPL and the ACP agent match on; the
//! names are only here.

/// Every slash command, by what it does (two names may do one thing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slash {
    /// `/help`.
    Help,
    /// `/exit`, `/quit`.
    Exit,
    /// `/clear`, `/new`.
    Clear,
    /// `/status`.
    Status,
    /// `/tools`.
    Tools,
    /// `/model`.
    Model,
    /// `/profile`.
    Profile,
    /// `/reasoning`.
    Reasoning,
    /// `/extend`.
    Extend,
    /// `/continue`.
    Continue,
    /// `/goal`.
    Goal,
    /// `/loop`.
    Loop,
    /// `/loops`.
    Loops,
    /// `/unloop`.
    Unloop,
    /// `/compact`.
    Compact,
    /// `/save`.
    Save,
    /// `/restore`.
    Restore,
    /// `/unsave`.
    Unsave,
    /// `/add-dir`.
    AddDir,
    /// `/add-dir-ro`.
    AddDirRo,
    /// `/copy`.
    Copy,
    /// `/remember`.
    Remember,
    /// `/learn`.
    Learn,
    /// `/init`.
    Init,
    /// `/policy`.
    Policy,
    /// `/report`.
    Report,
    /// `/diff`.
    Diff,
    /// `/undo`.
    Undo,
    /// `/sessions`.
    Sessions,
    /// `/attach`.
    Attach,
}

/// One slash command.
pub struct Command {
    /// Its name, with the slash.
    pub name: &'static str,
    /// Its arguments, for the help.
    pub args: &'static str,
    /// What it does.
    pub help: &'static str,
    /// What it is, for whoever does it.
    pub slash: Slash,
}

/// The commands an editor (ACP) is offered too, in the order it lists
/// them: those that need no terminal.
const FOR_EDITORS: &[Slash] =
    &[Slash::Policy, Slash::Report, Slash::Compact, Slash::Diff, Slash::Undo, Slash::Goal, Slash::Loops];

/// Every slash command, in the order `/help` lists them.
pub const COMMANDS: &[Command] = &[
    Command { name: "/help", args: "", help: "Show this help message", slash: Slash::Help },
    Command { name: "/exit", args: "", help: "Exit the REPL", slash: Slash::Exit },
    Command { name: "/quit", args: "", help: "Exit the REPL", slash: Slash::Exit },
    Command {
        name: "/clear",
        args: "",
        help: "Start a fresh conversation (the old one stays in the daemon)",
        slash: Slash::Clear,
    },
    Command {
        name: "/new",
        args: "",
        help: "Start a fresh conversation (the old one stays in the daemon)",
        slash: Slash::Clear,
    },
    Command {
        name: "/status",
        args: "",
        help: "Show session stats (model, context, turns, sandbox)",
        slash: Slash::Status,
    },
    Command { name: "/tools", args: "", help: "List the tools the model has", slash: Slash::Tools },
    Command {
        name: "/model",
        args: "[name|N]",
        help: "Show the model and list the server's, or switch (by name or number) for the next runs",
        slash: Slash::Model,
    },
    Command { name: "/profile", args: "[name]", help: "Switch LLM profile", slash: Slash::Profile },
    Command { name: "/reasoning", args: "[level]", help: "Show or set the reasoning effort", slash: Slash::Reasoning },
    Command { name: "/extend", args: "[N]", help: "Double max turns, or set to N", slash: Slash::Extend },
    Command { name: "/continue", args: "", help: "Continue the agent loop where it stopped", slash: Slash::Continue },
    Command {
        name: "/goal",
        args: "[<objective>|replace <objective>|pause|resume|clear]",
        help: "Set, replace, pause, resume, or clear the session's goal (the daemon works on it)",
        slash: Slash::Goal,
    },
    Command {
        name: "/loop",
        args: "[interval] <prompt>",
        help: "Run a prompt on an interval, each time in a fresh worktree (the daemon keeps it)",
        slash: Slash::Loop,
    },
    Command { name: "/loops", args: "", help: "List active loops", slash: Slash::Loops },
    Command { name: "/unloop", args: "<id|all>", help: "Cancel a loop", slash: Slash::Unloop },
    Command { name: "/compact", args: "[--drop]", help: "Compress conversation context", slash: Slash::Compact },
    Command { name: "/save", args: "[label]", help: "Set a context checkpoint", slash: Slash::Save },
    Command { name: "/restore", args: "", help: "Summarize & collapse since checkpoint", slash: Slash::Restore },
    Command { name: "/unsave", args: "", help: "Cancel active checkpoint", slash: Slash::Unsave },
    Command { name: "/add-dir", args: "<path>", help: "Grant read+write access to a directory", slash: Slash::AddDir },
    Command {
        name: "/add-dir-ro",
        args: "<path>",
        help: "Grant read-only access to a directory",
        slash: Slash::AddDirRo,
    },
    Command { name: "/copy", args: "", help: "Copy last output to clipboard", slash: Slash::Copy },
    Command {
        name: "/remember",
        args: "<text>",
        help: "Add a durable project fact to AGENTS.md",
        slash: Slash::Remember,
    },
    Command {
        name: "/learn",
        args: "",
        help: "Review session for mistakes and persist to memory",
        slash: Slash::Learn,
    },
    Command {
        name: "/init",
        args: "",
        help: "Scan project for build/test/lint workflow and conventions, write AGENTS.md",
        slash: Slash::Init,
    },
    Command {
        name: "/policy",
        args: "",
        help: "Show the session's policy: filters, hooks, sandbox",
        slash: Slash::Policy,
    },
    Command { name: "/report", args: "", help: "Show the last run's stats", slash: Slash::Report },
    Command {
        name: "/diff",
        args: "[id]",
        help: "Show what the last run (or run id) changed, with diffs",
        slash: Slash::Diff,
    },
    Command {
        name: "/undo",
        args: "[--force] [id]",
        help: "Put back what the last run (or run/undo id) changed",
        slash: Slash::Undo,
    },
    Command {
        name: "/sessions",
        args: "[all]",
        help: "This project's sessions, newest first (all: every project's)",
        slash: Slash::Sessions,
    },
    Command { name: "/attach", args: "<id>", help: "Switch to another session of the daemon", slash: Slash::Attach },
];

/// The command `line` starts with, and its argument (trimmed); `None`
/// when its first word names no command.
pub fn parse(line: &str) -> Option<(Slash, &str)> {
    let (name, arg) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    COMMANDS.iter().find(|c| c.name == name).map(|c| (c.slash, arg.trim()))
}

/// The commands an editor is offered ([`FOR_EDITORS`]).
pub fn for_editors() -> impl Iterator<Item = &'static Command> {
    FOR_EDITORS.iter().filter_map(|s| COMMANDS.iter().find(|c| c.slash == *s))
}

/// The help text.
pub fn help() -> String {
    let mut out = String::from("Available commands:\n");
    let mut i = 0;
    while i < COMMANDS.len() {
        let c = &COMMANDS[i];
        // Commands with the same help share a row (Swival's `/exit, /quit`).
        let mut label = format!("{} {}", c.name, c.args).trim_end().to_owned();
        while COMMANDS.get(i + 1).is_some_and(|n| n.help == c.help) {
            i += 1;
            label = format!("{label}, {}", COMMANDS[i].name);
        }
        out.push_str(&format!("  {label:<24}{}\n", c.help));
        i += 1;
    }
    out.push_str("  !! <command>            Run a shell command and print output (no LLM)\n");
    out.push_str("Enter sends; a line ending in \\ (or Alt-Enter) goes on; Ctrl-R searches history;\n");
    out.push_str("Ctrl-C cancels a run; Ctrl-C twice on an empty prompt, Ctrl-D or /exit leaves.\n");
    out
}

/// What is said of `name` when no command has it (`None`: one has).
pub fn unknown(name: &str) -> Option<String> {
    if COMMANDS.iter().any(|c| c.name == name) {
        return None;
    }
    Some(match closest(name) {
        Some(near) => format!("unknown command {name}; did you mean {near}? (/help lists them)"),
        None => format!("unknown command {name}. Run /help to list commands."),
    })
}

/// The command closest to `name` (by edit distance, two letters swapped
/// counting as one edit), for a hint: only a close one, at most two
/// fifths of the name's letters away (`/modle` is `/model`, `/foo` is
/// nothing).
pub fn closest(name: &str) -> Option<&'static str> {
    let letters = name.trim_start_matches('/').chars().count();
    let most = (letters * 2 / 5).max(1);
    COMMANDS
        .iter()
        .map(|c| (strsim::osa_distance(name, c.name), c.name))
        .filter(|(d, _)| *d <= most)
        .min()
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_command_is_told_the_closest_name() {
        assert_eq!(closest("/stauts"), Some("/status"));
        assert_eq!(closest("/modle"), Some("/model"));
        assert_eq!(closest("/zzzzzzzzzz"), None);
        assert_eq!(closest("/foo"), None, "three letters off a four-letter name is not close");
        assert_eq!(closest("/cpoy"), Some("/copy"));
    }

    #[test]
    fn help_lists_every_command_with_shared_rows() {
        let h = help();
        assert!(h.contains("  /exit, /quit") && h.contains("  /clear, /new"), "{h}");
        assert!(COMMANDS.iter().all(|c| h.contains(c.name)));
    }

    #[test]
    fn a_line_is_parsed_into_its_command_and_argument() {
        assert_eq!(parse("/quit"), Some((Slash::Exit, "")));
        assert_eq!(parse("/undo  --force r1 "), Some((Slash::Undo, "--force r1")));
        assert_eq!(parse("/undone"), None);
        assert_eq!(parse("hello /undo"), None);
        let offered: Vec<&str> = for_editors().map(|c| c.name).collect();
        assert_eq!(offered, ["/policy", "/report", "/compact", "/diff", "/undo", "/goal", "/loops"]);
    }
}
