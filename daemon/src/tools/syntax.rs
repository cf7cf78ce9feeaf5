//! Checks at edit time, without running anything: after `write_file` or
//! `edit_file` changes a source file, the file is parsed (tree-sitter
//! grammars for Python, JavaScript, TypeScript, Rust, Go, JSON, TOML and
//! YAML), and the result says so when the change left a syntax error the
//! file did not have before (a file already broken is not blamed), and
//! names the top-level definitions (functions, classes, types) the change
//! removed. Small models leave a file that does not parse, or drop a
//! function they were told to keep, and answer "done". Which grammar a
//! file gets ([`Lang`]) is shared with `outline.rs`.

use std::collections::BTreeSet;
use std::path::Path;
use tree_sitter::{Language, Node, Parser, Tree};

/// Files larger than this are not parsed (bytes).
const MAX_PARSED: usize = 512 * 1024;
/// Characters of a line shown with an error.
const EXCERPT: usize = 120;
/// Definitions named in one note at most.
const MAX_NAMED: usize = 8;

/// A language the daemon has a tree-sitter grammar for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lang {
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

/// What the result of a write or edit of `path` should add: a syntax
/// error the change introduced, and top-level definitions it removed.
/// `before` is the file's text before (`None`: a new file).
pub fn notes(path: &Path, before: Option<&str>, after: &str) -> Option<String> {
    let lang = Lang::of(path)?;
    let name = lang.name();
    let now = lang.parse(after)?;
    let was = before.and_then(|b| lang.parse(b));
    let mut notes = Vec::new();
    if now.root_node().has_error() && !was.as_ref().is_some_and(|t| t.root_node().has_error()) {
        if let Some(node) = first_error(now.root_node()) {
            let line = node.start_position().row;
            let text: String = after.lines().nth(line).unwrap_or("").trim().chars().take(EXCERPT).collect();
            notes.push(format!(
                "This change leaves a {name} syntax error at line {}: `{text}`. The file no longer parses; fix it before you answer.",
                line + 1
            ));
        }
    }
    if let (Some(was), Some(before)) = (&was, before) {
        let gone: Vec<String> =
            definitions(was.root_node(), before).difference(&definitions(now.root_node(), after)).cloned().collect();
        if !gone.is_empty() {
            let shown: Vec<String> = gone.iter().take(MAX_NAMED).map(|d| format!("`{d}`")).collect();
            notes.push(format!(
                "This change removed {} the file had: {}. If the task did not ask for that, put {} back.",
                if gone.len() == 1 { "a definition" } else { "definitions" },
                shown.join(", "),
                if gone.len() == 1 { "it" } else { "them" }
            ));
        }
    }
    (!notes.is_empty()).then(|| notes.join("\n"))
}

/// The first error or missing node, depth first.
fn first_error(node: Node<'_>) -> Option<Node<'_>> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    children.into_iter().filter(|c| c.has_error() || c.is_missing()).find_map(first_error)
}

/// The names of the top-level definitions (functions, classes, types) of
/// the file `path` holding `text`; none for a file no grammar reads.
pub(super) fn top_level_names(path: &Path, text: &str) -> BTreeSet<String> {
    let tree = Lang::of(path).and_then(|lang| lang.parse(text));
    tree.map(|t| definitions(t.root_node(), text)).unwrap_or_default()
}

/// The names of the top-level definitions under `root`: functions,
/// classes, types (decorated and exported ones included).
fn definitions(root: Node<'_>, text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut cursor = root.walk();
    for node in root.children(&mut cursor) {
        let node = match node.kind() {
            "decorated_definition" | "export_statement" => node
                .child_by_field_name("definition")
                .or_else(|| node.child_by_field_name("declaration"))
                .unwrap_or(node),
            _ => node,
        };
        let defines = matches!(
            node.kind(),
            "function_definition"
                | "class_definition"
                | "function_declaration"
                | "class_declaration"
                | "function_item"
                | "struct_item"
                | "enum_item"
                | "trait_item"
                | "method_declaration"
                | "type_declaration"
        );
        if !defines {
            continue;
        }
        let name = node.child_by_field_name("name").or_else(|| {
            // Go's `type X struct{}`: the name is in its type_spec.
            let mut c = node.walk();
            let spec = node.children(&mut c).find(|n| n.kind() == "type_spec");
            spec.and_then(|s| s.child_by_field_name("name"))
        });
        if let Some(name) = name.and_then(|n| text.get(n.byte_range())) {
            names.insert(name.to_owned());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_the_change_made_is_named_and_an_old_one_is_not() {
        let p = Path::new("a.py");
        let broken = "def f():\n    return import math\n";
        let note = notes(p, Some("def f():\n    return 1\n"), broken).unwrap();
        assert!(note.contains("Python syntax error at line 2") && note.contains("`return import math`"), "{note}");
        assert_eq!(notes(p, Some(broken), "def f():\n    return import os\n"), None, "already broken");
        assert!(notes(Path::new("x.json"), None, "{\"a\": [1, 2}").unwrap().contains("JSON syntax error"));
        assert_eq!(notes(Path::new("notes.txt"), None, "def f(:"), None, "not a source file");
    }

    #[test]
    fn removed_top_level_definitions_are_named() {
        let before = "def keep():\n    pass\n\ndef unused():\n    pass\n\nclass C:\n    pass\n";
        let after = "def keep():\n    pass\n";
        let note = notes(Path::new("m.py"), Some(before), after).unwrap();
        assert!(note.contains("`C`, `unused`"), "{note}");
        let rust = notes(Path::new("l.rs"), Some("fn a() {}\nstruct S;\n"), "fn a() {}\n").unwrap();
        assert!(rust.contains("`S`"), "{rust}");
        let go =
            notes(Path::new("m.go"), Some("package m\nfunc A() {}\ntype T struct{}\n"), "package m\nfunc A() {}\n");
        assert!(go.unwrap().contains("`T`"));
        assert_eq!(notes(Path::new("m.py"), Some(before), before), None);
    }
}
