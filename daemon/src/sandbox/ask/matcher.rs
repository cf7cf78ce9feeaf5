//! Matching a command line against the table of risky uses
//! ([`super::risky::RISKY`]): which entries' patterns its arguments make.

use super::risky::{Pattern, Pattern::*, Risky, RISKY};
use super::scripts;

/// One risky use a command line makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// What the bucket adds to the program's name; `None` for a wrapper
    /// (the bucket is the whole command line) or Swival's inline code.
    pub name: Option<String>,
    /// Why, as the user reads it.
    pub reason: &'static str,
    /// The entry matched.
    pub pattern: Pattern,
}

/// The risky uses `args` (the arguments after the program) make of
/// `program` (already without directory and version), in table order.
pub fn find(program: &str, args: &[&str]) -> Vec<Hit> {
    let sub = scripts::subcommand(program, args);
    let mut hits = Vec::new();
    for entry in RISKY.iter().filter(|e| e.programs.contains(&program)) {
        if !entry.sub.is_empty() && !sub.is_some_and(|s| entry.sub.contains(&s)) {
            continue;
        }
        for pattern in entry.patterns {
            if let Some(name) = matches(*pattern, entry, program, args) {
                hits.push(Hit { name, reason: entry.reason, pattern: *pattern });
                break;
            }
        }
    }
    hits
}

/// Whether `pattern` matches: `Some(name)` (`None` inside: no name of its
/// own) when it does.
fn matches(pattern: Pattern, entry: &Risky, program: &str, args: &[&str]) -> Option<Option<String>> {
    let named = || Some(Some(entry.name.to_owned()));
    let found = match pattern {
        Wrapper => return Some(None),
        InlineCode => return super::lists::inline_code(program, args).map(|_| None),
        Always => true,
        Long(opt) => args.iter().any(|a| long_option(a, opt)),
        Short(c) => args.iter().any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(c)),
        Bundled(c) => args.first().is_some_and(|a| a.chars().all(|ch| ch.is_ascii_alphabetic()) && a.contains(c)),
        Word(w) => args.iter().any(|a| *a == w || a.strip_prefix(w).is_some_and(|rest| rest.starts_with('='))),
        Prefix(p) => args.iter().any(|a| a.starts_with(p)),
        GitConfig(glob) => scripts::git_settings(args).iter().any(|(key, _)| git_key_matches(glob, key)),
        GitOtherConfig => {
            let other = scripts::git_settings(args).into_iter().find(|(key, _)| !git_key_known(key));
            return other.map(|(key, _)| Some(format!("-c {key}")));
        }
        SshOption(key) => scripts::ssh_options(args).iter().any(|k| k == key),
        Awk(risk) => scripts::awk_programs(args).iter().any(|p| risk.in_program(p)),
        Sed(c) => scripts::sed_commands(args).contains(&c),
        Assignment => args.iter().any(|a| !a.starts_with('-') && a.split_once('=').is_some_and(|(n, _)| is_name(n))),
    };
    if found {
        named()
    } else {
        None
    }
}

/// `arg` is `--opt`, `--opt=value`, or an abbreviation of either.
fn long_option(arg: &str, opt: &str) -> bool {
    let Some(name) = arg.strip_prefix("--") else { return false };
    let name = name.split_once('=').map_or(name, |(n, _)| n);
    !name.is_empty() && opt.starts_with(name)
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Git settings harmless to give on the command line (lower case).
const HARMLESS_GIT_KEYS: &[&str] = &[
    "user.name",
    "user.email",
    "color.*",
    "column.*",
    "advice.*",
    "i18n.*",
    "core.quotepath",
    "core.autocrlf",
    "core.safecrlf",
    "core.abbrev",
    "core.filemode",
    "core.ignorecase",
    "core.longpaths",
    "core.whitespace",
    "init.defaultbranch",
    "safe.directory",
    "pull.rebase",
    "pull.ff",
    "merge.ff",
    "push.default",
    "fetch.prune",
    "log.date",
    "log.decorate",
    "format.pretty",
    "diff.renames",
    "diff.noprefix",
    "diff.mnemonicprefix",
    "status.short",
    "status.branch",
    "gc.auto",
    "maintenance.auto",
    "commit.verbose",
    "protocol.version",
];

/// Whether a key is matched by a `GitConfig` entry or known harmless.
fn git_key_known(key: &str) -> bool {
    HARMLESS_GIT_KEYS.iter().any(|g| git_key_matches(g, key))
        || RISKY.iter().flat_map(|e| e.patterns).any(|p| matches!(p, GitConfig(g) if git_key_matches(g, key)))
}

/// Whether a git key (lower case) matches a pattern: `a.b` exactly,
/// `a.*` any key of section `a`, `a.*.b` key `b` of any subsection of `a`.
pub fn git_key_matches(glob: &str, key: &str) -> bool {
    match glob.split_once(".*") {
        None => glob == key,
        Some((section, "")) => key.strip_prefix(section).is_some_and(|r| r.starts_with('.')),
        Some((section, name)) => {
            key.strip_prefix(section).is_some_and(|r| r.starts_with('.'))
                && key.ends_with(name)
                && key.len() > section.len() + name.len() + 1
        }
    }
}
