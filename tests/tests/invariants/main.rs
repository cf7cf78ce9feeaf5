//! The architecture invariants of ARCHITECTURE.md, checked against the
//! source tree (after rust-analyzer's `tidy` test): a failure names the
//! file, the line and the rule, and says what to do.
//!
//! In the daemon's sources (`daemon/src/`):
//! - only `procs/` starts processes (`Command::new`, std or tokio);
//! - only `store/` and `cache/` use SQLite (`rusqlite`);
//! - `agent/`, `tools/`, `report/` and `mcp/` do not reach into `crate::session`;
//! - handlers in `rpc/` build no JSON by hand (`json!`): wire types live in
//!   the protocol crate;
//! - its top-level modules (each file or directory directly under
//!   `daemon/src/`) depend on each other without a cycle: a module depends
//!   on another when its code outside tests (`#[cfg(test)]` items,
//!   `tests.rs`, `tests/` directories) names `crate::<other>`; so do the
//!   members of each folder (`folders.rs`).
//!
//! In the client (`client/src/`, test modules aside): nothing decides by
//! the words of a daemon message — no `starts_with`, `contains`,
//! `ends_with` or `split` on an `error`, `message`, `source`, `content`,
//! `reason` or `answer`: the protocol carries a typed field for that.
//! Anywhere in `client/`, tests included: no `json!`; the client speaks
//! to the daemon in typed values.
//!
//! In every crate of the workspace: no source file over 600 lines, no
//! function over 80 lines. In the daemon, outside tests: no result read by
//! its `error:` prefix (`prefix.rs`); only `tools/error.rs` writes it.
//!
//! Code that broke a rule before this test existed is listed in [`KNOWN`]
//! with what it is; the test fails on any violation not listed *and* on a
//! listed one that no longer occurs, so the list can only shrink: when you
//! fix one, delete its entry. Never add an entry for new code.
//! [`ALLOWED`] holds the few deliberate exceptions, each with its reason.

mod budget;
mod folders;
mod modules;
mod names;
mod prefix;
mod reads;
use std::fmt;
use std::path::{Path, PathBuf};

/// Longest source file, in lines.
const MAX_FILE_LINES: usize = 600;
/// Longest function, in lines from `fn` to its closing brace.
const MAX_FN_LINES: usize = 80;
/// The workspace's crates (`fuzz/` is outside the workspace).
const CRATES: &[&str] = &["protocol", "daemon", "client", "tests"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// A process started outside `daemon/src/procs/`.
    Spawn,
    /// SQLite used outside `daemon/src/store/` and `daemon/src/cache/`.
    Sqlite,
    /// `crate::session` reached from `agent/`, `tools/`, `report/` or `mcp/`.
    SessionImport,
    /// `json!` in `daemon/src/rpc/`.
    JsonInRpc,
    /// A file read with `std::fs` (or `tokio::fs`) where the daemon reads
    /// files for the model: it would follow the model's links and block on
    /// its FIFOs.
    ModelRead,
    /// Top-level modules of `daemon/src/` that depend on each other in a cycle.
    ModuleCycle,
    /// Files or subfolders of one folder of `daemon/src/` that depend on
    /// each other in a cycle.
    FolderCycle,
    /// A tool's name spelled in more than one daemon file outside tests.
    ToolName,
    /// Client code deciding something by the words of a daemon message.
    ClientReadsWords,
    /// `json!` anywhere in `client/`, its tests included.
    JsonInClient,
    /// A source file over [`MAX_FILE_LINES`].
    LongFile,
    /// A function over [`MAX_FN_LINES`].
    LongFn,
    /// A tool's result classified by its `error:` prefix outside tests: a
    /// result is a typed success or `ToolError`.
    ErrorPrefix,
}

impl Rule {
    /// What to do instead, for the failure message.
    fn advice(self) -> &'static str {
        match self {
            Rule::Spawn => "only daemon/src/procs/ starts processes: describe the child as a procs::Launch and run it through the ProcessRunner",
            Rule::Sqlite => "only daemon/src/store/ and daemon/src/cache/ touch SQLite: add a method there",
            Rule::SessionImport => "agent/, tools/ and report/ must not depend on session/: pass what they need in",
            Rule::JsonInRpc => "rpc/ handlers build no JSON by hand: add a type to the protocol crate",
            Rule::ModelRead => "read a file whose bytes may reach the model through beneath::read_for_model (or a Beneath's read_regular): no symlink followed, regular files only, a size cap",
            Rule::ModuleCycle => "the modules of daemon/src depend on each other in one direction: move what both need into the lower one (or a leaf module) and re-export it from the other if convenient",
            Rule::FolderCycle => "the files of a folder depend on each other in one direction: move what both need into a lower file (a leaf), or merge two files that are one thing",
            Rule::ToolName => "a tool's name is spelled once, where the tool is declared: use its Tool::NAME or constant, or ask tools::registry what a call does (its kind, its runner)",
            Rule::ClientReadsWords => "a client branches on data, never on the daemon's words: add a typed field (a kind, an enum) to the protocol and read that",
            Rule::JsonInClient => "the client builds no JSON by hand: use a protocol type or a struct deriving Serialize (in tests, a typed value or serde_json::from_str of JSON text)",
            Rule::LongFile => "split the file by responsibility (600 lines at most)",
            Rule::LongFn => "split the function (80 lines at most)",
            Rule::ErrorPrefix => "a tool result is a typed success or a ToolError (rendered to `error: …` in tools/error.rs only): return Result<_, ToolError> and match on it",
        }
    }
}

/// A rule broken by today's code that someone is expected to fix.
struct Known {
    /// Which rule.
    rule: Rule,
    /// The file, relative to the workspace root.
    file: &'static str,
    /// The function's name ([`Rule::LongFn`]), a piece of the offending
    /// line (text rules), or "" ([`Rule::LongFile`]).
    what: &'static str,
}

/// Known violations, to be fixed (delete the entry when you do).
const KNOWN: &[Known] = &[];

/// Deliberate exceptions, each with why it is not a violation.
const ALLOWED: &[(Rule, &str, &str, &str)] = &[
    (
        Rule::Spawn,
        "daemon/src/sandbox/linux.rs",
        "std::process::Command::new(program)",
        // The sandbox helper's last step: it replaces the already confined
        // helper process with the command (`exec`); it starts no process.
        "the helper execs the command in its own, already confined process",
    ),
    (
        Rule::ToolName,
        "daemon/src/sandbox/ask/files.rs",
        "\"grep\"",
        "the program grep, whose arguments name files; not the tool",
    ),
    (
        Rule::ToolName,
        "daemon/src/sandbox/ask/risky.rs",
        "\"grep\"",
        "the program grep, which can run others; not the tool",
    ),
    (
        Rule::ModelRead,
        "daemon/src/config/merge.rs",
        "std::fs::read_to_string(path)",
        // The global config (the user's own file, outside every project,
        // often a symlink into a dotfiles repository); project files go
        // through `trust::read_project`.
        "the user's global config, which the model cannot write",
    ),
];

/// One broken rule at one place.
#[derive(Debug)]
struct Violation {
    rule: Rule,
    file: String,
    line: usize,
    /// The function's name, the offending line, or the line count.
    what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {:?}: {} — {}", self.file, self.line, self.rule, self.what, self.rule.advice())
    }
}

impl Violation {
    fn matches(&self, rule: Rule, file: &str, what: &str) -> bool {
        self.rule == rule
            && self.file == file
            && match rule {
                Rule::LongFn => self.what.split(' ').next() == Some(what),
                Rule::LongFile => true,
                _ => self.what.contains(what),
            }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_owned()
}

/// Every `.rs` file under `dir`, sorted, skipping build output.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a line: "" for a comment line.
fn code(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with("//") {
        ""
    } else {
        t
    }
}

/// Text rules for one daemon file (`rel` starts with `daemon/src/`).
fn text_rules(rel: &str, text: &str, out: &mut Vec<Violation>) {
    let inside = |dirs: &[&str]| dirs.iter().any(|d| rel.starts_with(&format!("daemon/src/{d}/")));
    let rules: [(Rule, &[&str], bool); 4] = [
        (Rule::Spawn, &["Command::new"], !inside(&["procs"])),
        (Rule::Sqlite, &["rusqlite"], !inside(&["store", "cache"])),
        (Rule::SessionImport, &["crate::session"], inside(&["agent", "tools", "report", "mcp"])),
        (Rule::JsonInRpc, &["json!"], inside(&["rpc"])),
    ];
    for (n, line) in text.lines().enumerate() {
        let code = code(line);
        for (rule, needles, applies) in &rules {
            if *applies && needles.iter().any(|needle| code.contains(needle)) {
                out.push(Violation { rule: *rule, file: rel.to_owned(), line: n + 1, what: code.to_owned() });
            }
        }
    }
}

/// The top-level module of a daemon file (`rel` starts with `daemon/src/`):
/// `config` for `daemon/src/config/types.rs`, `paths` for
/// `daemon/src/paths.rs`; `None` for the crate roots.
fn top_module(rel: &str) -> Option<&str> {
    let rest = rel.strip_prefix("daemon/src/")?;
    let first = rest.split('/').next()?;
    match first {
        "lib.rs" | "main.rs" => None,
        _ => Some(first.strip_suffix(".rs").unwrap_or(first)),
    }
}

/// Whether a daemon file holds only tests (`tests.rs`, or under `tests/`).
fn test_file(rel: &str) -> bool {
    let mut parts: Vec<&str> = rel.split('/').collect();
    parts.pop() == Some("tests.rs") || parts.contains(&"tests")
}

/// The lines of `text` outside `#[cfg(test)]` items and comments, with
/// their numbers (1-based). rustfmt's layout is relied on, as in
/// [`functions`]: an item with a body ends at the first line that is
/// exactly the item line's indentation followed by `}`.
fn non_test_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        let Some(after) = t.strip_prefix("#[cfg(test)]") else {
            out.push((i + 1, code(lines[i])));
            i += 1;
            continue;
        };
        // The item: on the attribute's line, or the next line that is not
        // an attribute.
        let mut item = i;
        if after.trim().is_empty() {
            item = (i + 1..lines.len()).find(|&j| !lines[j].trim_start().starts_with("#[")).unwrap_or(lines.len());
        }
        let Some(line) = lines.get(item) else { break };
        let indent = &line[..line.len() - line.trim_start().len()];
        // It ends with its line (`mod tests;`, a field or a variant
        // followed by `,`) or with its body's closing brace.
        let end = match (item..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';') || l.ends_with('}') || (j == item && l.ends_with(','))
        }) {
            Some(open) if lines[open].trim_end().ends_with('{') => {
                let close = format!("{indent}}}");
                let closes = |j: &usize| lines[*j].trim_end().trim_end_matches([',', ';']) == close;
                (open + 1..lines.len()).find(closes).unwrap_or(lines.len())
            }
            Some(last) => last,
            None => lines.len(),
        };
        i = end + 1;
    }
    out
}

/// Client rules for one file (`rel` starts with `client/src/`): its code
/// before any test module.
fn client_rules(rel: &str, text: &str, out: &mut Vec<Violation>) {
    const FIELDS: &[&str] = &["error", "message", "source", "content", "reason", "answer"];
    const READS: &[&str] = &[".starts_with(", ".contains(", ".ends_with(", ".split("];
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = code(line);
        if FIELDS.iter().any(|f| code.contains(f)) && READS.iter().any(|r| code.contains(r)) {
            out.push(Violation {
                rule: Rule::ClientReadsWords,
                file: rel.to_owned(),
                line: n + 1,
                what: code.to_owned(),
            });
        }
    }
}

/// `json!` in a file of `client/`, test modules included.
fn client_json_rule(rel: &str, text: &str, out: &mut Vec<Violation>) {
    for (n, line) in text.lines().enumerate() {
        let code = code(line);
        if code.contains("json!") {
            out.push(Violation { rule: Rule::JsonInClient, file: rel.to_owned(), line: n + 1, what: code.to_owned() });
        }
    }
}

/// Every function in `text`: (name, first line (1-based), length in lines).
/// rustfmt's layout is relied on: a body ends at the first line that is
/// exactly the `fn` line's indentation followed by `}`.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let indent = &line[..line.len() - t.len()];
        let mut rest = t;
        for prefix in ["pub(crate) ", "pub(super) ", "pub ", "const ", "async ", "unsafe ", "extern \"C\" "] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        let Some(sig) = rest.strip_prefix("fn ") else { continue };
        let name: String = sig.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        // Find where the signature ends: `{` opens a body, `;` ends a
        // declaration without one.
        let Some(open) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';') || (j == i && l.ends_with('}'))
        }) else {
            continue;
        };
        let l = lines[open].trim_end();
        if l.ends_with(';') {
            continue;
        }
        if l.ends_with('}') {
            out.push((name, i + 1, 1));
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(end) = (open + 1..lines.len()).find(|&j| lines[j].trim_end() == close) {
            out.push((name, i + 1, end - i + 1));
        }
    }
    out
}

/// Size rules for one file.
fn size_rules(rel: &str, text: &str, out: &mut Vec<Violation>) {
    let lines = text.lines().count();
    if lines > MAX_FILE_LINES {
        out.push(Violation { rule: Rule::LongFile, file: rel.to_owned(), line: 1, what: format!("{lines} lines") });
    }
    for (name, line, len) in functions(text) {
        if len > MAX_FN_LINES {
            out.push(Violation {
                rule: Rule::LongFn,
                file: rel.to_owned(),
                line,
                what: format!("{name} ({len} lines)"),
            });
        }
    }
}

fn violations() -> Vec<Violation> {
    let root = root();
    let mut files = Vec::new();
    for krate in CRATES {
        rust_files(&root.join(krate), &mut files);
    }
    let mut out = Vec::new();
    let mut daemon = Vec::new();
    let mut sources = Vec::new();
    for path in &files {
        let rel = path.strip_prefix(&root).expect("under the root").to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {rel}: {e}"));
        if rel.starts_with("daemon/src/") {
            text_rules(&rel, &text, &mut out);
            prefix::error_prefix_rule(&rel, &text, &mut out);
            reads::model_read_rule(&rel, &text, &mut out);
            daemon.push((rel.clone(), text.clone()));
        }
        if rel.starts_with("client/src/") {
            client_rules(&rel, &text, &mut out);
        }
        if rel.starts_with("client/src/") || rel.starts_with("protocol/src/") {
            sources.push((rel.clone(), text.clone()));
        }
        if rel.starts_with("client/") {
            client_json_rule(&rel, &text, &mut out);
        }
        size_rules(&rel, &text, &mut out);
    }
    modules::module_cycles(&daemon, &mut out);
    sources.extend(daemon.iter().cloned());
    folders::folder_cycles(&sources, &mut out);
    let names: Vec<&str> = swivald::tooling::tool_names().collect();
    names::tool_name_rule(&daemon, &names, &mut out);
    out
}

#[test]
fn the_source_tree_keeps_the_architecture_invariants() {
    let found = violations();
    let mut problems = Vec::new();
    for v in &found {
        let known = KNOWN.iter().any(|k| v.matches(k.rule, k.file, k.what));
        let allowed = ALLOWED.iter().any(|(rule, file, what, _)| v.matches(*rule, file, what));
        if !known && !allowed {
            problems.push(format!("new violation: {v}"));
        }
    }
    for k in KNOWN {
        if !found.iter().any(|v| v.matches(k.rule, k.file, k.what)) {
            problems.push(format!(
                "fixed: {} no longer breaks {:?} ({:?}); delete its entry from KNOWN in tests/tests/invariants.rs",
                k.file, k.rule, k.what
            ));
        }
    }
    for (rule, file, what, why) in ALLOWED {
        if !found.iter().any(|v| v.matches(*rule, file, what)) {
            problems.push(format!(
                "stale: the allowed {rule:?} in {file} ({what:?}: {why}) is gone; delete it from ALLOWED in tests/tests/invariants.rs"
            ));
        }
    }
    assert!(problems.is_empty(), "architecture invariants (see ARCHITECTURE.md):\n{}", problems.join("\n"));
}

#[test]
fn function_lengths_are_measured_from_fn_to_its_closing_brace() {
    let text = "\
trait T {
    fn declared(&self);
    fn declared_over_lines(
        &self,
    ) -> u32;
}
pub(crate) async fn body(
    x: u32,
) -> u32 {
    let s = \"}\";
    x
}
fn one_line() -> u32 { 1 }
impl X {
    pub fn method(&self) {
        if true {
        }
    }
}
";
    let got = functions(text);
    let want = [("body", 7, 6), ("one_line", 13, 1), ("method", 15, 4)].map(|(n, l, c)| (n.to_owned(), l, c));
    assert_eq!(got, want);
}

#[test]
fn a_spawn_outside_procs_is_reported_with_file_and_line() {
    let mut out = Vec::new();
    text_rules(
        "daemon/src/tools/x.rs",
        "// Command::new in a comment is fine\nlet c = tokio::process::Command::new(p);\nuse crate::session::Sessions;\n",
        &mut out,
    );
    let shown: Vec<String> = out.iter().map(|v| format!("{}:{}: {:?}", v.file, v.line, v.rule)).collect();
    assert_eq!(shown, ["daemon/src/tools/x.rs:2: Spawn", "daemon/src/tools/x.rs:3: SessionImport"]);
}

#[test]
fn a_client_reading_a_daemon_messages_words_is_reported_but_not_in_its_tests() {
    let mut out = Vec::new();
    let text = "fn f(end: &RunEnd) -> bool {\n    end.error.as_deref().is_some_and(|e| e.starts_with(\"LLM filter blocked request\"))\n}\n\
                fn g(source: &str) -> bool { source.split(' ').next() == Some(\"filter\") }\n\
                #[cfg(test)]\nmod tests { fn t(message: &str) { assert!(message.contains(\"x\")); } }\n";
    client_rules("client/src/cmd/x.rs", text, &mut out);
    let lines: Vec<(Rule, usize)> = out.iter().map(|v| (v.rule, v.line)).collect();
    assert_eq!(lines, [(Rule::ClientReadsWords, 2), (Rule::ClientReadsWords, 4)]);
}

#[test]
fn json_in_the_client_is_reported_in_its_tests_too() {
    let mut out = Vec::new();
    let text = "// json! in a comment is fine\nlet c = serde_json::json!({\"yolo\": true});\n\
                #[cfg(test)]\nmod tests { fn t() { assert_eq!(v, json!([])); } }\n";
    client_json_rule("client/src/cmd/x.rs", text, &mut out);
    let shown: Vec<String> = out.iter().map(|v| format!("{}:{}: {:?}", v.file, v.line, v.rule)).collect();
    assert_eq!(shown, ["client/src/cmd/x.rs:2: JsonInClient", "client/src/cmd/x.rs:4: JsonInClient"]);
}
