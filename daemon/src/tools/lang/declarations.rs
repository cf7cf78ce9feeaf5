//! What a file declares, as `outline` shows it: one line per class,
//! function, method, type or top-level value, `N    header` (the line
//! number left-aligned in five columns, four spaces per level of nesting,
//! the declaration up to its body), Swival's layout. Files a tree-sitter
//! grammar reads ([`Lang`]) are walked by node; any other text file, or
//! one too large to parse, gets Swival's line-by-line guess (keywords such
//! as `def`, `fn`, `class`, `struct`, and C-like function heads), so C,
//! Java, Ruby or shell files still outline.

use super::Lang;
use regex::Regex;
use std::path::Path;
use std::sync::LazyLock;
use tree_sitter::Node;

/// Characters of a declaration shown; longer ones end in `...`.
const MAX_HEADER: usize = 120;

/// What a file declares.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Declared {
    /// The outline lines, in file order.
    pub lines: Vec<String>,
    /// Whether a grammar read the file (false: the line-by-line guess).
    pub parsed: bool,
}

/// The declarations of the file `path` holding `text`, `depth` levels
/// deep (1: top level; 2: classes and their methods, impl blocks and
/// their functions; 3: what those nest).
pub(crate) fn declared(path: &Path, text: &str, depth: usize) -> Declared {
    let Some((lang, tree)) = Lang::of(path).and_then(|l| Some((l, l.parse(text)?))) else {
        return Declared { lines: guessed(text, depth), parsed: false };
    };
    let mut walk = Walk { text, lang, kinds: kinds(lang), depth, lines: Vec::new() };
    walk.children(tree.root_node(), 0);
    Declared { lines: walk.lines, parsed: true }
}

/// Which nodes of a grammar an outline shows or looks into.
struct Kinds {
    /// Declarations, shown at any level; their body is looked into.
    decls: &'static [&'static str],
    /// Values (assignments, `const`), shown at the top level only.
    values: &'static [&'static str],
    /// Looked through at the same level (blocks of an `if`, a mapping).
    through: &'static [&'static str],
}

/// What an outline shows or looks into in `lang`'s grammar.
fn kinds(lang: Lang) -> Kinds {
    const JS_DECLS: &[&str] =
        &["function_declaration", "generator_function_declaration", "class_declaration", "method_definition"];
    const TS_DECLS: &[&str] = &[
        "function_declaration",
        "generator_function_declaration",
        "class_declaration",
        "abstract_class_declaration",
        "method_definition",
        "method_signature",
        "abstract_method_signature",
        "function_signature",
        "interface_declaration",
        "type_alias_declaration",
        "enum_declaration",
        "internal_module",
        "module",
    ];
    const JS_VALUES: &[&str] = &["lexical_declaration", "variable_declaration"];
    match lang {
        Lang::Python => Kinds {
            decls: &["function_definition", "class_definition"],
            values: &["expression_statement"],
            through: &[
                "if_statement",
                "elif_clause",
                "else_clause",
                "try_statement",
                "except_clause",
                "except_group_clause",
                "finally_clause",
                "with_statement",
                "block",
            ],
        },
        Lang::JavaScript => Kinds { decls: JS_DECLS, values: JS_VALUES, through: &[] },
        // `namespace X {}` is an expression statement in this grammar.
        Lang::TypeScript | Lang::Tsx => {
            Kinds { decls: TS_DECLS, values: JS_VALUES, through: &["ambient_declaration", "expression_statement"] }
        }
        Lang::Rust => Kinds {
            decls: &[
                "function_item",
                "function_signature_item",
                "struct_item",
                "enum_item",
                "union_item",
                "trait_item",
                "impl_item",
                "mod_item",
                "foreign_mod_item",
                "const_item",
                "static_item",
                "type_item",
                "macro_definition",
            ],
            values: &[],
            through: &[],
        },
        Lang::Go => Kinds {
            decls: &["function_declaration", "method_declaration", "type_declaration"],
            values: &["const_declaration", "var_declaration"],
            through: &[],
        },
        Lang::Json => Kinds { decls: &["pair"], values: &[], through: &["object"] },
        Lang::Toml => Kinds { decls: &["pair", "table", "table_array_element"], values: &[], through: &[] },
        Lang::Yaml => {
            Kinds { decls: &["block_mapping_pair"], values: &[], through: &["document", "block_node", "block_mapping"] }
        }
    }
}

/// An outline being made from a parsed file.
struct Walk<'t> {
    /// The file's text.
    text: &'t str,
    /// Its language.
    lang: Lang,
    /// What its grammar's nodes are.
    kinds: Kinds,
    /// Levels shown.
    depth: usize,
    /// The lines so far.
    lines: Vec<String>,
}

impl Walk<'_> {
    /// The declarations among `parent`'s children, at `level`.
    fn children(&mut self, parent: Node<'_>, level: usize) {
        if level >= self.depth {
            return;
        }
        let mut cursor = parent.walk();
        let children: Vec<Node<'_>> = parent.named_children(&mut cursor).collect();
        for child in children {
            self.node(child, level, None);
        }
    }

    /// `node` at `level`; `from` is where its header starts when a wrapper
    /// (`export`) begins before it.
    fn node(&mut self, node: Node<'_>, level: usize, from: Option<usize>) {
        let kind = node.kind();
        match kind {
            // Swival shows a decorator on its own line, before what it decorates.
            "decorated_definition" => {
                let mut cursor = node.walk();
                let decorators: Vec<Node<'_>> =
                    node.named_children(&mut cursor).filter(|c| c.kind() == "decorator").collect();
                for d in decorators {
                    let text = first_line(&self.text[d.byte_range()]);
                    self.push(d, level, text);
                }
                if let Some(definition) = node.child_by_field_name("definition") {
                    self.node(definition, level, None);
                }
            }
            "export_statement" => {
                if let Some(declaration) = node.child_by_field_name("declaration") {
                    self.node(declaration, level, Some(node.start_byte()));
                }
            }
            _ if self.kinds.decls.contains(&kind) => {
                let header = self.header(node, from);
                self.push(node, level, header);
                let inner = node.child_by_field_name("body").or_else(|| node.child_by_field_name("value"));
                self.children(inner.unwrap_or(node), level + 1);
            }
            _ if level == 0 && self.kinds.values.contains(&kind) => {
                if let Some(header) = self.value(node, from) {
                    self.push(node, level, header);
                }
            }
            _ if self.kinds.through.contains(&kind) => self.children(node, level),
            _ => {}
        }
    }

    /// One outline line for `node`.
    fn push(&mut self, node: Node<'_>, level: usize, header: String) {
        self.lines.push(line(node.start_position().row + 1, level, &header));
    }

    /// A declaration as written up to its body (`def f(a, b) -> int`,
    /// `impl Trait for T`), or its first line when it has no body.
    fn header(&self, node: Node<'_>, from: Option<usize>) -> String {
        // Decorators of a JavaScript class or method are not its header.
        let start = from.unwrap_or_else(|| {
            let mut cursor = node.walk();
            let first = node.children(&mut cursor).find(|c| c.kind() != "decorator");
            first.map_or(node.start_byte(), |c| c.start_byte())
        });
        let Some(body) = node.child_by_field_name("body") else {
            return first_line(&self.text[start..node.end_byte()]);
        };
        let head = normalised(&self.text[start..body.start_byte()]);
        let head = head.trim_end_matches([':', '{', ' ']);
        // Swival's Python classes keep their colon; its functions do not.
        match (self.lang, node.kind()) {
            (Lang::Python, "class_definition") => format!("{head}:"),
            _ => head.to_owned(),
        }
    }

    /// A top-level value: Python's assignments as Swival shows them
    /// (`X = ...`, `x: int`), other languages' first line.
    fn value(&self, node: Node<'_>, from: Option<usize>) -> Option<String> {
        if self.lang != Lang::Python {
            return Some(first_line(&self.text[from.unwrap_or(node.start_byte())..node.end_byte()]));
        }
        let assignment = node.named_child(0).filter(|a| a.kind() == "assignment")?;
        let part = |field: &str| assignment.child_by_field_name(field).map(|n| normalised(&self.text[n.byte_range()]));
        let mut out = part("left")?;
        if let Some(annotation) = part("type") {
            out.push_str(&format!(": {annotation}"));
        }
        if assignment.child_by_field_name("right").is_some() {
            out.push_str(" = ...");
        }
        Some(out)
    }
}

/// An outline line: the line number in five columns, then the header
/// indented four spaces a level and cut to [`MAX_HEADER`] characters.
fn line(number: usize, level: usize, header: &str) -> String {
    let shown = match header.char_indices().nth(MAX_HEADER) {
        None => header.to_owned(),
        Some(_) => format!("{}...", header.chars().take(MAX_HEADER - 3).collect::<String>()),
    };
    format!("{number:<5}{}{shown}", "    ".repeat(level))
}

/// The first line of `text`, trimmed.
fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_owned()
}

/// `text` on one line: runs of whitespace as one space, none inside the
/// brackets of a signature split over lines.
fn normalised(text: &str) -> String {
    let one = text.split_whitespace().collect::<Vec<_>>().join(" ");
    one.replace(", )", ")").replace("( ", "(").replace(" )", ")")
}

/// Swival's keywords that open a declaration, after modifiers.
static DECLARATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:export\s+)?(?:default\s+)?(?:pub(?:\s*\([^)]*\))?\s+)?(?:abstract\s+)?(?:static\s+)?(?:async\s+)?",
        r"(?:inline\s+)?(?:comptime\s+)?(?:public\s+|private\s+|protected\s+|internal\s+|fileprivate\s+)?",
        r"(?:static\s+)?(?:override\s+)?(?:def|class|function|fn|func|type|typedef|struct|impl|interface|",
        r"module|package|namespace|protocol|enum|trait|union|test|mod)\b",
    ))
    .expect("the declaration pattern compiles")
});
/// A top-level `const`, `var` or `let`.
static VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:export\s+)?(?:pub\s+)?(?:const|var|let)\b").expect("the value pattern compiles"));
/// A C-like function head: a return type, a name, a parenthesis.
static C_FUNCTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:static\s+)?(?:inline\s+)?(?:extern\s+)?(?:(?:unsigned|signed|long|short|const|volatile|struct|enum)\s+)*",
        r"(?:void|int|char|float|double|bool|size_t|ssize_t|u?int\d+_t|[A-Z_]\w*(?:\s*\*)*)\s+\*?(\w+)\s*\(",
    ))
    .expect("the C function pattern compiles")
});

/// Swival's line-by-line guess for a file no grammar reads: lines opening
/// a declaration, nested by their indentation (four columns a level, or
/// two when the file indents less), comments skipped.
fn guessed(text: &str, depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let stripped = raw.trim_start();
        if stripped.is_empty() || ["#", "//", "/*", "*", "<!--"].iter().any(|c| stripped.starts_with(c)) {
            continue;
        }
        let indent = raw.len() - stripped.len();
        let level = if indent / 4 > 0 { indent / 4 } else { indent / 2 };
        if level >= depth {
            continue;
        }
        let declares = DECLARATION.is_match(stripped) || C_FUNCTION.is_match(stripped);
        if declares || (level == 0 && VALUE.is_match(stripped)) {
            out.push(line(i + 1, level, stripped.trim_end()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outline(name: &str, text: &str, depth: usize) -> Vec<String> {
        declared(Path::new(name), text, depth).lines
    }

    const PY: &str = "import os\n\nLIMIT = 10\nname: str = 'x'\n\n@dataclass\nclass Point(Base):\n    \"\"\"A point.\"\"\"\n    x: int = 0\n\n    def norm(self, p=2) -> float:\n        def inner():\n            pass\n        return 0.0\n\nasync def fetch(\n    url,\n    timeout=3,\n):\n    pass\n\nif __name__ == '__main__':\n    def main():\n        pass\n";

    #[test]
    fn python_depth_one_shows_the_top_level_with_swivals_layout() {
        assert_eq!(
            outline("m.py", PY, 1),
            [
                "3    LIMIT = ...",
                "4    name: str = ...",
                "6    @dataclass",
                "7    class Point(Base):",
                "16   async def fetch(url, timeout=3)",
                "23   def main()",
            ]
        );
    }

    #[test]
    fn python_depth_two_adds_methods_and_three_what_they_nest() {
        let two = outline("m.py", PY, 2);
        assert_eq!(two[4], "11       def norm(self, p=2) -> float");
        assert!(!two.iter().any(|l| l.contains("inner")), "{two:?}");
        let three = outline("m.py", PY, 3);
        assert!(three.contains(&"12           def inner()".to_owned()), "{three:?}");
    }

    #[test]
    fn rust_impl_blocks_show_their_functions_at_depth_two() {
        let rs = "use std::fmt;\n\n/// A thing.\n#[derive(Debug)]\npub struct Thing {\n    a: u8,\n}\n\nimpl Thing {\n    pub fn new(a: u8) -> Thing {\n        Thing { a }\n    }\n\n    fn get(\n        &self,\n    ) -> u8 {\n        self.a\n    }\n}\n\nconst MAX: usize = 3;\n\nmod tests {\n    fn t() {}\n}\n";
        assert_eq!(
            outline("lib.rs", rs, 2),
            [
                "5    pub struct Thing",
                "9    impl Thing",
                "10       pub fn new(a: u8) -> Thing",
                "14       fn get(&self) -> u8",
                "21   const MAX: usize = 3;",
                "23   mod tests",
                "24       fn t()",
            ]
        );
        assert_eq!(outline("lib.rs", rs, 1).len(), 4);
    }

    #[test]
    fn javascript_typescript_and_go_show_exports_classes_and_methods() {
        let js = "export function a(x) {}\nexport class B extends C {\n  m() {}\n}\nconst d = 1;\n";
        assert_eq!(
            outline("a.js", js, 2),
            ["1    export function a(x)", "2    export class B extends C", "3        m()", "5    const d = 1;"]
        );
        let ts = "interface Shape {\n  area(): number;\n}\ntype Id = string;\n";
        assert_eq!(
            outline("s.ts", ts, 2),
            ["1    interface Shape", "2        area(): number", "4    type Id = string;"]
        );
        let go = "package m\n\ntype T struct {\n\tA int\n}\n\nfunc (t *T) Get() int { return t.A }\n\nvar x = 1\n";
        assert_eq!(outline("m.go", go, 2), ["3    type T struct {", "7    func (t *T) Get() int", "9    var x = 1"]);
    }

    #[test]
    fn data_files_show_their_keys_by_level() {
        let toml = "[package]\nname = \"x\"\n\n[dependencies]\nserde = \"1\"\n";
        assert_eq!(outline("Cargo.toml", toml, 1), ["1    [package]", "4    [dependencies]"]);
        assert_eq!(outline("Cargo.toml", toml, 2)[1], "2        name = \"x\"");
        let json = "{\"name\": \"x\", \"scripts\": {\n  \"test\": \"t\"\n}}";
        assert_eq!(
            outline("package.json", json, 2),
            ["1    \"name\": \"x\"", "1    \"scripts\": {", "2        \"test\": \"t\""]
        );
        assert_eq!(outline("c.yaml", "a: 1\nb:\n  c: 2\n", 2), ["1    a: 1", "2    b:", "3        c: 2"]);
    }

    #[test]
    fn other_files_get_swivals_line_by_line_guess() {
        let c = "#include <stdio.h>\n\nstatic int add(int a, int b) {\n    return a + b;\n}\n\nstruct point {\n    int x;\n};\n";
        let got = declared(Path::new("m.c"), c, 2);
        assert!(!got.parsed);
        assert_eq!(got.lines, ["3    static int add(int a, int b) {", "7    struct point {"]);
        assert!(outline("notes.txt", "just words\n", 2).is_empty());
        let long = format!("def {}():", "f".repeat(200));
        assert_eq!(outline("x.rb", &long, 1)[0].chars().count(), 5 + MAX_HEADER);
    }
}
