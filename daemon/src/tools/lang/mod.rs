//! What the daemon knows of the languages of the files the model
//! writes: which tree-sitter grammar reads a file ([`Lang`]), the checks
//! after a change (`check.rs`, with Python's own rules in `python.rs` and
//! `unbound.rs`, and the key walk of config formats in `config.rs`), and
//! what a file declares (`declarations.rs`, for `outline`).

mod check;
mod config;
mod declarations;
mod finding;
mod python;
mod unbound;

pub use check::notes;
pub(super) use check::top_level_names;
pub(super) use declarations::declared;
use std::path::Path;
use tree_sitter::{Language, Parser, Tree};

/// Files larger than this are not parsed (bytes).
const MAX_PARSED: usize = 512 * 1024;

/// A language the daemon has a tree-sitter grammar for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    JavaScript,
    TypeScript,
    /// TypeScript with JSX (`.tsx`), a grammar of its own.
    Tsx,
    Rust,
    Go,
    Json,
    Toml,
    Yaml,
}

impl Lang {
    /// The language of a file, by its extension; `None` for others.
    pub(super) fn of(path: &Path) -> Option<Lang> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "py" | "pyi" => Lang::Python,
            "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "rs" => Lang::Rust,
            "go" => Lang::Go,
            "json" => Lang::Json,
            "toml" => Lang::Toml,
            "yaml" | "yml" => Lang::Yaml,
            _ => return None,
        })
    }

    /// Its name, as a note to the model says it.
    pub(super) fn name(self) -> &'static str {
        match self {
            Lang::Python => "Python",
            Lang::JavaScript => "JavaScript",
            Lang::TypeScript | Lang::Tsx => "TypeScript",
            Lang::Rust => "Rust",
            Lang::Go => "Go",
            Lang::Json => "JSON",
            Lang::Toml => "TOML",
            Lang::Yaml => "YAML",
        }
    }

    /// Its grammar.
    fn grammar(self) -> Language {
        match self {
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Json => tree_sitter_json::LANGUAGE.into(),
            Lang::Toml => tree_sitter_toml_ng::LANGUAGE.into(),
            Lang::Yaml => tree_sitter_yaml::LANGUAGE.into(),
        }
    }

    /// `text` parsed; `None` when it is too large or cannot be parsed.
    pub(super) fn parse(self, text: &str) -> Option<Tree> {
        if text.len() > MAX_PARSED {
            return None;
        }
        let mut parser = Parser::new();
        parser.set_language(&self.grammar()).ok()?;
        parser.parse(text, None)
    }
}
