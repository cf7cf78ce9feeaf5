//! Checks at edit time, without running anything: after `write_file` or
//! `edit_file` changes a source file, the file is parsed (tree-sitter
//! grammars for Python, JavaScript, TypeScript, Rust, Go, JSON, TOML and
//! YAML), and the result says so when the change left a syntax error the
//! file did not have before (a file already broken is not blamed), and
//! names the top-level definitions (functions, classes, types) the change
//! removed, or in a config file the keys, and in Python the names it left
//! used but unbound (`unbound.rs`). Small models leave a file that
//! does not parse, drop a function they were told to keep, or replace a
//! key with its new value, and answer "done". Which grammar a
//! file gets is [`Lang`].

use super::config::keys;
use super::finding::{render, Finding};
use super::python::{python_continuations_indented, python_indent_row};
use super::Lang;
use std::collections::BTreeSet;
use std::path::Path;
use tree_sitter::{Node, Tree};

/// Characters of a line shown with an error.
const EXCERPT: usize = 120;
/// Definitions named in one note at most.
const MAX_NAMED: usize = 8;

/// What the result of a write or edit of `path` should add (see
/// [`findings`]), as text.
pub fn notes(path: &Path, before: Option<&str>, after: &str) -> Option<String> {
    render(&findings(path, before, after))
}

/// What a write or edit of `path` found: a syntax error the change
/// introduced, top-level definitions (or keys) it removed, and in Python
/// names it left unbound and parameters it added unread. `before` is the
/// file's text before (`None`: a new file).
pub fn findings(path: &Path, before: Option<&str>, after: &str) -> Vec<Finding> {
    let Some(lang) = Lang::of(path) else { return Vec::new() };
    let Some(now) = lang.parse(after) else { return Vec::new() };
    let was = before.and_then(|b| lang.parse(b));
    let mut found = Vec::new();
    let was_broken = was.as_ref().zip(before).is_some_and(|(t, b)| error_row(lang, t, b).is_some());
    let error = error_row(lang, &now, after);
    if let Some(line) = error.filter(|_| !was_broken) {
        let excerpt: String = after.lines().nth(line).unwrap_or("").trim().chars().take(EXCERPT).collect();
        found.push(Finding::SyntaxError { lang: lang.name(), line: line + 1, excerpt });
    }
    if error.is_none() {
        found.extend(parser_note(lang, path, before, after));
    }
    if let (Some(was), Some(before)) = (&was, before) {
        let keys_of = matches!(lang, Lang::Json | Lang::Toml | Lang::Yaml);
        let names = |root, text| if keys_of { keys(root, text) } else { definitions(root, text) };
        let (had, has) = (names(was.root_node(), before), names(now.root_node(), after));
        let gone: Vec<&String> = had.difference(&has).collect();
        if !gone.is_empty() {
            let named = gone.iter().take(MAX_NAMED).map(|d| (*d).clone()).collect();
            let added = has.difference(&had).next().is_some();
            found.push(Finding::Removed { keys: keys_of, named, count: gone.len(), added });
        }
    }
    // Bindings are read off a tree without error nodes only: one the
    // grammar blamed wrongly (see `error_row`) is skipped too.
    let clean = !now.root_node().has_error();
    if let (Lang::Python, None, true, Some(was), Some(before)) = (lang, error, clean, &was, before) {
        found.extend(super::unbound::note(was.root_node(), before, now.root_node(), after));
        found.extend(super::unbound::unused_parameters(was.root_node(), before, now.root_node(), after));
    }
    found
}

/// The first error the parser of a TOML or JSON file reports that the
/// grammar lets through (a duplicate TOML key, a comment in JSON), as a
/// check's note, unless the text `before` had the same one.
fn parser_note(lang: Lang, path: &Path, before: Option<&str>, after: &str) -> Option<Finding> {
    let (line, message) = parser_error(lang, after)?;
    if before.and_then(|b| parser_error(lang, b)).is_some_and(|(_, m)| m == message) {
        return None;
    }
    let file = path.file_name()?.to_string_lossy().into_owned();
    let tool = format!("{} parser", lang.name());
    Some(Finding::Parser(crate::sandbox::check::CheckError { tool, file, line: Some(line), message }))
}

/// The line (from 1) and message of the first error the daemon's own
/// TOML or JSON parser finds in `text`.
fn parser_error(lang: Lang, text: &str) -> Option<(usize, String)> {
    match lang {
        Lang::Toml => {
            let e = text.parse::<toml::Table>().err()?;
            let at = e.span().map_or(0, |s| s.start).min(text.len());
            Some((text[..at].matches('\n').count() + 1, e.message().trim().replace('\n', " ")))
        }
        Lang::Json => {
            let e = serde_json::from_str::<serde::de::IgnoredAny>(text).err()?;
            let message = e.to_string();
            Some((e.line(), message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m).to_owned()))
        }
        _ => None,
    }
}

/// The row (from 0) of `tree`'s first syntax error, counting for Python
/// the indentation the grammar tolerates and Python does not.
fn error_row(lang: Lang, tree: &Tree, text: &str) -> Option<usize> {
    let root = tree.root_node();
    let grammar_row = || first_error(root).map(|n| n.start_position().row);
    if lang != Lang::Python {
        return grammar_row();
    }
    if !root.has_error() {
        return python_indent_row(tree, text);
    }
    // The grammar blames a line that continues a bracket left of its
    // statement (`if (a and` / `b):` in a function); Python does not.
    let indented = python_continuations_indented(text);
    match indented.as_deref().and_then(|t| Some((lang.parse(t)?, t))) {
        Some((fixed, t)) if !fixed.root_node().has_error() => python_indent_row(&fixed, t),
        _ => grammar_row(),
    }
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
pub(crate) fn top_level_names(path: &Path, text: &str) -> BTreeSet<String> {
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
    fn the_parsers_errors_the_grammar_lets_through_are_named_once() {
        let (t, dup) = (Path::new("c.toml"), "a = 1\nb = 2\na = 3\n");
        let note = notes(t, Some("a = 1\nb = 2\n"), dup).unwrap();
        assert!(note.starts_with("TOML parser: c.toml:3: duplicate key"), "{note}");
        assert_eq!(notes(t, Some(dup), &format!("{dup}c = 4\n")), None, "already failing the same way");
        let note = notes(Path::new("d.json"), None, "{\"a\": 1 // why\n}").unwrap();
        assert!(note.contains("d.json:1:"), "{note}");
    }

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
    fn a_lost_indent_is_a_syntax_error() {
        let before = "def total(xs):\n    s = 0\n    for i in range(len(xs) - 1):\n        s += xs[i]\n    return s\n";
        let after = "def total(xs):\n    s = 0\nfor i in range(len(xs)):\n        s += xs[i]\n    return s\n";
        let note = notes(Path::new("calc.py"), Some(before), after).unwrap_or_default();
        assert!(note.contains("syntax error at line 5: `return s`"), "{note}");
        let p = Path::new("m.py");
        for (broken, line) in [
            ("x = 1\n    y = 2\n", 2),
            ("def f():\n    a = 1\n  b = 2\n", 3),
            ("if x:\n    pass\nelse:\n  a = 1\n    b = 2\n", 5),
        ] {
            let note = notes(p, Some("x = 1\n"), broken).unwrap_or_default();
            assert!(note.contains(&format!("syntax error at line {line}")), "{broken:?}: {note}");
        }
    }

    #[test]
    fn valid_python_indentation_is_not_blamed() {
        let valid = r#"import os  # a comment
@decorator(
    arg=1,
)
class C(Base):
    """Doc
  string at any indent
"""
    x = 1; y = 2
        # a comment deeper than code

    async def m(self):
        if x: return 1
        elif y:
            pass
        else:
            try:
                v = {
            "k": 1,
                }
            except (A, B) as e:
                raise
            finally:
                total = (1 +
                    2)
        with open(f) as h, open(g) as i:
            match v:
                case 1:
                    return \
                        2
                case _:
                    pass
        while True:
            break
        else:
            pass
        for a in b:
            def inner(): return a
        return lambda q: q
"#;
        assert_eq!(notes(Path::new("v.py"), Some("x = 1\n"), valid), None);
    }

    #[test]
    fn a_line_continuing_a_bracket_left_of_its_statement_is_not_blamed() {
        let p = Path::new("c.py");
        for valid in [
            "def f():\n    if (a and\nb):\n        return 1\n    return 2\n",
            "def f():\n    x = (1 +\n  2)\n    return x\n",
            "class A:\n    def m(self):\n        v = [f('(', \"[\"),  # (\n  g(\"\"\"\n)\"\"\")]\n        return v\n",
        ] {
            assert_eq!(notes(p, Some("x = 1\n"), valid), None, "{valid:?}");
        }
        // Still an error: a bracket never closed, and a lost indent after one.
        for (broken, line) in
            [("def f():\n    x = (1 +\n2\n    return x\n", 2), ("def f():\n    x = (1 +\n2)\n  return x\n", 4)]
        {
            let note = notes(p, Some("x = 1\n"), broken).unwrap_or_default();
            assert!(note.contains(&format!("syntax error at line {line}")), "{broken:?}: {note}");
        }
    }

    #[test]
    fn keys_a_config_change_removed_are_named() {
        let json = notes(
            Path::new("s.json"),
            Some("{\"name\": \"svc\", \"timeout\": 30, \"db\": {\"port\": 1}, \"l\": [{\"x\": 1}]}"),
            "{\"name\": \"svc\", \"60\": 30, \"db\": {\"host\": 1}, \"l\": []}",
        )
        .unwrap();
        assert!(json.contains("removed keys the file had: `db.port`, `timeout`."), "{json}");
        let toml =
            notes(Path::new("c.toml"), Some("a = 1\n[srv]\nport = 8\nhost = \"h\"\n"), "a = 1\n[srv]\nport = 9\n");
        assert!(toml.unwrap().contains("removed a key the file had: `srv.host`."));
        let yaml = notes(Path::new("c.yml"), Some("a:\n  b: 1\n  c: 2\nd: 3\n"), "a:\n  b: 5\nd: 3\n");
        assert!(yaml.unwrap().contains("`a.c`"));
        assert_eq!(
            notes(Path::new("s.json"), Some("{\"a\": 1}"), "{\"a\": 2, \"b\": 3}"),
            None,
            "a value changed, a key added"
        );
    }

    #[test]
    fn removed_top_level_definitions_are_named() {
        let before = "def keep():\n    pass\n\ndef unused():\n    pass\n\nclass C:\n    pass\n";
        let after = "def keep():\n    pass\n";
        let note = notes(Path::new("m.py"), Some(before), after).unwrap();
        assert!(note.contains("`C`, `unused`") && !note.contains("To add code"), "{note}");
        let renamed = notes(Path::new("m.py"), Some(after), "def multiply():\n    pass\n").unwrap();
        assert!(renamed.contains("`keep`") && renamed.contains("followed by the new code"), "{renamed}");
        let rust = notes(Path::new("l.rs"), Some("fn a() {}\nstruct S;\n"), "fn a() {}\n").unwrap();
        assert!(rust.contains("`S`"), "{rust}");
        let go =
            notes(Path::new("m.go"), Some("package m\nfunc A() {}\ntype T struct{}\n"), "package m\nfunc A() {}\n");
        assert!(go.unwrap().contains("`T`"));
        assert_eq!(notes(Path::new("m.py"), Some(before), before), None);
    }
}
