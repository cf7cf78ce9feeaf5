//! What a check after a change found, as data, and the one place it
//! becomes the text the model reads ([`Finding::text`], [`render`]).

use crate::sandbox::check::CheckError;

/// One thing a check after a change found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// The change left a syntax error the file did not have.
    SyntaxError {
        /// The language, as the model is told (`Python`).
        lang: &'static str,
        /// Its line, from 1.
        line: usize,
        /// The line, trimmed and cut.
        excerpt: String,
    },
    /// The language's own parser (TOML, JSON) refused the file.
    Parser(CheckError),
    /// Top-level definitions, or in a config file keys, the change removed.
    Removed {
        /// Keys of a config file, not definitions.
        keys: bool,
        /// Those named (the first few).
        named: Vec<String>,
        /// How many were removed.
        count: usize,
        /// Whether the change also added definitions (a rename, not an addition).
        added: bool,
    },
    /// Python names the change left used but no longer bound: each with
    /// the line (from 1) and text of its first use.
    Unbound(Vec<(String, usize, String)>),
    /// Parameters the change gave a function that nothing in it reads:
    /// each with its function and the function's line (from 1).
    UnusedParameters(Vec<(String, String, usize)>),
}

impl Finding {
    /// The words the model reads.
    pub fn text(&self) -> String {
        match self {
            Finding::SyntaxError { lang, line, excerpt } => format!(
                "This change leaves a {lang} syntax error at line {line}: `{excerpt}`. The file no longer parses; fix that line so it parses and still does what the task asks (undoing the change leaves the task undone), then answer."
            ),
            Finding::Parser(error) => error.note(),
            Finding::Removed { keys, named, count, added } => removed(*keys, named, *count, *added),
            Finding::Unbound(uses) => {
                let shown: Vec<String> =
                    uses.iter().map(|(name, line, text)| format!("`{name}` (line {line}: `{text}`)")).collect();
                format!(
                    "This change left {} used but no longer defined: {}. Python stops there with a NameError. Change \
                     those uses too (edit_file with replace_all=true renames every one), or define the name again.",
                    if uses.len() == 1 { "a name" } else { "names" },
                    shown.join(", ")
                )
            }
            Finding::UnusedParameters(unused) => {
                let shown: Vec<String> =
                    unused.iter().map(|(p, function, line)| format!("`{p}` of {function}() (line {line})")).collect();
                format!(
                    "This change added {} that nothing in the function reads: {}. If the task asks the function to use \
                     it, change the body too.",
                    if unused.len() == 1 { "a parameter" } else { "parameters" },
                    shown.join(", ")
                )
            }
        }
    }
}

/// [`Finding::Removed`]'s words.
fn removed(keys: bool, named: &[String], count: usize, added: bool) -> String {
    let shown: Vec<String> = named.iter().map(|d| format!("`{d}`")).collect();
    let what = match (keys, count) {
        (true, 1) => "a key",
        (true, _) => "keys",
        (false, 1) => "a definition",
        (false, _) => "definitions",
    };
    let mut note = format!(
        "This change removed {what} the file had: {}. If the task did not ask for that, put {} back.",
        shown.join(", "),
        if count == 1 { "it" } else { "them" }
    );
    // A small model asked to add `multiply` renames `add` to it.
    if !keys && added {
        note.push_str(" To add code and keep what is there, make new_string the old_string followed by the new code.");
    }
    note
}

/// The findings as the tool result's note, one a line; `None` for none.
pub fn render(findings: &[Finding]) -> Option<String> {
    (!findings.is_empty()).then(|| findings.iter().map(Finding::text).collect::<Vec<_>>().join("\n"))
}
