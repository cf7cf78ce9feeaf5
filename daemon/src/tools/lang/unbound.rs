//! Names a Python change left in use but no longer bound: a small model
//! renames `msg = 'hello'` to `message = 'hello'` and leaves `print(msg)`,
//! or edits `from util import add_numbers` into `from util import add` and
//! leaves the call, then answers "done". A name the module bound before
//! the change (an assignment, an import, a definition at its top level)
//! that nothing in the file binds after it (anywhere: a parameter, a loop
//! variable, an `as` name count), yet the file still reads, is named with
//! the line of its first use. A file with `from m import *` is not
//! checked: the star may bind anything.
//!
//! And the other way: a parameter the change gave a function that already
//! existed, which nothing in its body reads. Asked to give `power(x)` a
//! second parameter `n` and return `x ** n`, a small model adds `n=2` to
//! the signature, leaves `return x * x`, and answers "done".

use super::finding::Finding;
use std::collections::{BTreeMap, BTreeSet};
use tree_sitter::Node;

/// Names listed in one note at most.
const MAX_NAMED: usize = 5;
/// Characters of a line shown with a name.
const EXCERPT: usize = 80;

/// The note for a Python change from `before` (parsed as `was`) to `after`
/// (parsed as `now`, without a syntax error); `None` when every name the
/// change unbound is read nowhere.
pub(super) fn note(was: Node<'_>, before: &str, now: Node<'_>, after: &str) -> Option<Finding> {
    if has_kind(now, "wildcard_import") {
        return None;
    }
    let mut bound_after = BTreeSet::new();
    bindings(now, after, &mut bound_after);
    let gone: Vec<String> = top_level_bindings(was, before).into_iter().filter(|n| !bound_after.contains(n)).collect();
    let lines: Vec<&str> = after.lines().collect();
    let used: Vec<(String, usize, String)> = gone
        .iter()
        .filter_map(|name| {
            let row = first_read(now, after, name)?;
            let text: String = lines.get(row).unwrap_or(&"").trim().chars().take(EXCERPT).collect();
            Some((name.clone(), row + 1, text))
        })
        .take(MAX_NAMED)
        .collect();
    (!used.is_empty()).then_some(Finding::Unbound(used))
}

/// The note for a Python change that gave a function it did not create a
/// parameter its body never reads; `None` when there is none. A
/// parameter named `_…`, `self` or `cls`, a `*args` or `**kw`, and a stub's
/// (a body of `pass`, `...` or a docstring) are left alone.
pub(super) fn unused_parameters(was: Node<'_>, before: &str, now: Node<'_>, after: &str) -> Option<Finding> {
    let had: BTreeMap<(String, usize), BTreeSet<String>> =
        keyed(was, before).into_iter().map(|(key, f)| (key, plain_parameters(f, before))).collect();
    let mut unused = Vec::new();
    for (key, f) in keyed(now, after) {
        let name = function_name(f, after);
        let (Some(old), Some(body)) = (had.get(&key), f.child_by_field_name("body")) else { continue };
        if is_stub(body, after) {
            continue;
        }
        for p in plain_parameters(f, after).difference(old) {
            let skipped = p.starts_with('_') || p == "self" || p == "cls";
            if !skipped && first_read(body, after, p).is_none() {
                unused.push((p.clone(), name.clone(), f.start_position().row + 1));
            }
        }
    }
    unused.truncate(MAX_NAMED);
    (!unused.is_empty()).then_some(Finding::UnusedParameters(unused))
}

/// Every function definition in the tree, at any depth, in order.
fn functions(node: Node<'_>) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    if node.kind() == "function_definition" {
        out.push(node);
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    out.extend(children.into_iter().flat_map(functions));
    out
}

/// The tree's functions, each by its name within the classes and
/// functions around it (`A.__init__`) and which of that name it is (a
/// property's getter and setter share one).
fn keyed<'t>(root: Node<'t>, text: &str) -> Vec<((String, usize), Node<'t>)> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    functions(root)
        .into_iter()
        .map(|f| {
            let mut path = vec![function_name(f, text)];
            let mut up = f.parent();
            while let Some(node) = up {
                if matches!(node.kind(), "function_definition" | "class_definition") {
                    path.push(function_name(node, text));
                }
                up = node.parent();
            }
            path.reverse();
            let name = path.join(".");
            let n = seen.entry(name.clone()).or_default();
            *n += 1;
            ((name, *n), f)
        })
        .collect()
}

fn function_name(f: Node<'_>, text: &str) -> String {
    f.child_by_field_name("name").map(|n| node_text(n, text)).unwrap_or_default()
}

/// A function's parameter names, without `*args` and `**kw`.
fn plain_parameters(f: Node<'_>, text: &str) -> BTreeSet<String> {
    let Some(list) = f.child_by_field_name("parameters") else { return BTreeSet::new() };
    let splats: BTreeSet<String> = {
        let mut cursor = list.walk();
        let children: Vec<Node<'_>> = list.named_children(&mut cursor).collect();
        children
            .into_iter()
            .filter(|p| p.kind().contains("splat") || p.named_child(0).is_some_and(|c| c.kind().contains("splat")))
            .flat_map(|p| parameter_names_of(p, text))
            .collect()
    };
    parameter_names(list, text).into_iter().filter(|n| !splats.contains(n)).collect()
}

/// The identifiers anywhere in one parameter node.
fn parameter_names_of(p: Node<'_>, text: &str) -> Vec<String> {
    if p.kind() == "identifier" {
        return vec![node_text(p, text)];
    }
    let mut cursor = p.walk();
    let children: Vec<Node<'_>> = p.named_children(&mut cursor).collect();
    children.into_iter().flat_map(|c| parameter_names_of(c, text)).collect()
}

/// Whether a function body is a stub: only `pass`, `...` and strings.
fn is_stub(body: Node<'_>, text: &str) -> bool {
    let mut cursor = body.walk();
    let statements: Vec<Node<'_>> = body.named_children(&mut cursor).collect();
    statements.iter().all(|s| match s.kind() {
        "pass_statement" | "comment" => true,
        "expression_statement" => s.named_child(0).is_some_and(|e| {
            matches!(e.kind(), "string" | "ellipsis" | "concatenated_string") || node_text(e, text) == "..."
        }),
        _ => false,
    })
}

/// The names the module's top-level statements bind.
fn top_level_bindings(root: Node<'_>, text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut cursor = root.walk();
    for statement in root.named_children(&mut cursor) {
        let statement = match statement.kind() {
            "decorated_definition" => statement.child_by_field_name("definition").unwrap_or(statement),
            "expression_statement" => statement.named_child(0).unwrap_or(statement),
            _ => statement,
        };
        match statement.kind() {
            "function_definition" | "class_definition" => {
                names.extend(statement.child_by_field_name("name").map(|n| node_text(n, text)))
            }
            "assignment" => {
                names.extend(statement.child_by_field_name("left").map(|l| identifiers(l, text)).unwrap_or_default())
            }
            "import_statement" | "import_from_statement" => imported(statement, text, &mut names),
            _ => {}
        }
    }
    names
}

/// Every name the tree binds, at any depth.
fn bindings(node: Node<'_>, text: &str, names: &mut BTreeSet<String>) {
    let field = |f: &str| node.child_by_field_name(f);
    match node.kind() {
        "assignment" | "augmented_assignment" | "for_statement" | "for_in_clause" => {
            names.extend(field("left").map(|l| identifiers(l, text)).unwrap_or_default())
        }
        "function_definition" | "class_definition" => names.extend(field("name").map(|n| node_text(n, text))),
        "parameters" | "lambda_parameters" | "global_statement" | "nonlocal_statement" => {
            names.extend(parameter_names(node, text))
        }
        "as_pattern" => names.extend(field("alias").map(|a| identifiers(a, text)).unwrap_or_default()),
        "named_expression" => names.extend(field("name").map(|n| node_text(n, text))),
        "import_statement" | "import_from_statement" => imported(node, text, names),
        _ => {}
    }
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        bindings(child, text, names);
    }
}

/// The names an import binds: `import a.b` binds `a`, `from m import x`
/// binds `x`, an `as` binds its alias.
fn imported(statement: Node<'_>, text: &str, names: &mut BTreeSet<String>) {
    let module = statement.child_by_field_name("module_name").map(|m| m.id());
    let mut cursor = statement.walk();
    for child in statement.named_children(&mut cursor) {
        if Some(child.id()) == module {
            continue;
        }
        match child.kind() {
            "aliased_import" => names.extend(child.child_by_field_name("alias").map(|a| node_text(a, text))),
            "dotted_name" => names.extend(child.named_child(0).map(|first| node_text(first, text))),
            _ => {}
        }
    }
}

/// The names a parameter list (or `global`/`nonlocal`) binds: its
/// identifiers, but not those of default values or annotations.
fn parameter_names(list: Node<'_>, text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor = list.walk();
    for p in list.named_children(&mut cursor) {
        let name = match p.kind() {
            "identifier" => Some(p),
            "default_parameter" | "typed_default_parameter" => p.child_by_field_name("name"),
            // `x: int`, `*args`, `**kw`: the first identifier inside.
            _ => p
                .named_child(0)
                .filter(|n| n.kind() == "identifier")
                .or_else(|| p.named_child(0).and_then(|n| n.named_child(0)).filter(|n| n.kind() == "identifier")),
        };
        names.extend(name.map(|n| node_text(n, text)));
    }
    names
}

/// The identifiers of a binding target (`a`, `a, b`, `(a, [b, *c])`),
/// not those inside subscripts or attributes (`xs[i] = …` binds nothing).
fn identifiers(target: Node<'_>, text: &str) -> Vec<String> {
    match target.kind() {
        "identifier" => vec![node_text(target, text)],
        "pattern_list"
        | "tuple_pattern"
        | "list_pattern"
        | "list_splat_pattern"
        | "parenthesized_expression"
        | "as_pattern_target" => {
            let mut cursor = target.walk();
            let children: Vec<Node<'_>> = target.named_children(&mut cursor).collect();
            children.into_iter().flat_map(|c| identifiers(c, text)).collect()
        }
        _ => Vec::new(),
    }
}

/// The row of the first place the tree reads `name`: an identifier that
/// is not an attribute's name (`obj.name`) nor a keyword argument's.
fn first_read(node: Node<'_>, text: &str, name: &str) -> Option<usize> {
    if node.kind() == "identifier" && node_text(node, text) == name {
        let parent = node.parent();
        let named_field = parent.is_some_and(|p| {
            let field = match p.kind() {
                "attribute" => "attribute",
                "keyword_argument" => "name",
                _ => return false,
            };
            p.child_by_field_name(field).is_some_and(|f| f.id() == node.id())
        });
        if !named_field {
            return Some(node.start_position().row);
        }
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    children.into_iter().find_map(|c| first_read(c, text, name))
}

/// Whether the tree holds a node of `kind`.
fn has_kind(node: Node<'_>, kind: &str) -> bool {
    if node.kind() == kind {
        return true;
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    children.into_iter().any(|c| has_kind(c, kind))
}

fn node_text(node: Node<'_>, text: &str) -> String {
    text[node.byte_range()].to_owned()
}

#[cfg(test)]
mod tests {
    use super::super::Lang;
    use super::*;

    /// One of the module's notes for a change from `before` to `after`.
    fn noted(check: Check, before: &str, after: &str) -> Option<String> {
        let (was, now) = (Lang::Python.parse(before).unwrap(), Lang::Python.parse(after).unwrap());
        check(was.root_node(), before, now.root_node(), after).map(|f| f.text())
    }

    type Check = fn(Node<'_>, &str, Node<'_>, &str) -> Option<Finding>;

    fn check(before: &str, after: &str) -> Option<String> {
        noted(note, before, after)
    }

    #[test]
    fn a_renamed_variable_still_read_is_named_with_its_line() {
        let note = check("msg = 'hello'\nprint(msg)\n", "message = 'hello'\nprint(msg)\n").unwrap();
        assert!(note.contains("`msg` (line 2: `print(msg)`)") && note.contains("replace_all=true"), "{note}");
        let import = check(
            "from util import add_numbers\n\nprint(add_numbers(2, 3))\n",
            "from util import add\n\nprint(add_numbers(2, 3))\n",
        );
        assert!(import.unwrap().contains("`add_numbers` (line 3"));
        let aliased = check("import numpy as np\nx = np.zeros(3)\n", "import numpy\nx = np.zeros(3)\n");
        assert!(aliased.unwrap().contains("`np` (line 2"));
        let def = check("def f():\n    return 1\n\nprint(f())\n", "def g():\n    return 1\n\nprint(f())\n");
        assert!(def.unwrap().contains("`f` (line 4"));
    }

    #[test]
    fn a_name_still_bound_or_read_nowhere_is_not_named() {
        // Every use renamed too.
        assert_eq!(check("msg = 1\nprint(msg)\n", "message = 1\nprint(message)\n"), None);
        // Bound elsewhere: a parameter, a loop, an `as`, a local, a walrus.
        for after in [
            "def f(msg):\n    print(msg)\n",
            "for msg in xs:\n    print(msg)\n",
            "with open(p) as msg:\n    print(msg)\n",
            "def f():\n    msg = 2\n    return msg\n",
            "if (msg := 3):\n    print(msg)\n",
            "try:\n    pass\nexcept ValueError as msg:\n    print(msg)\n",
            "print([msg for msg in xs])\n",
            "f = lambda msg: msg\n",
            "def f(*msg, **kw):\n    return msg\n",
            "def f(msg: int = 1):\n    return msg\n",
            "import msg\nprint(msg)\n",
            "try:\n    import json as msg\nexcept ImportError:\n    msg = None\nprint(msg)\n",
        ] {
            assert_eq!(check("msg = 1\n", after), None, "{after:?}");
        }
        // Only an attribute or a keyword argument of that name.
        assert_eq!(check("msg = 1\nx = 2\n", "x = 2\nprint(obj.msg, f(msg=x))\n"), None);
        // A star import may bind it.
        assert_eq!(check("msg = 1\n", "from m import *\nprint(msg)\n"), None);
        // A subscript assignment binds nothing, and unbinds nothing.
        assert_eq!(check("xs = []\nxs[0] = 1\n", "xs = [0]\nxs[0] = 1\n"), None);
    }

    fn unused(before: &str, after: &str) -> Option<String> {
        noted(unused_parameters, before, after)
    }

    #[test]
    fn a_parameter_added_and_never_read_is_named() {
        let note = unused("def power(x):\n    return x * x\n", "def power(x, n=2):\n    return x * x\n").unwrap();
        assert!(note.contains("a parameter that nothing in the function reads: `n` of power() (line 1)"), "{note}");
        let method = unused(
            "class A:\n    def f(self):\n        return 1\n",
            "class A:\n    def f(self, limit: int = 3):\n        return 1\n",
        );
        assert!(method.unwrap().contains("`limit` of f() (line 2)"));
    }

    #[test]
    fn a_parameter_read_kept_or_left_alone_is_not_named() {
        let before = "def power(x):\n    return x * x\n";
        for after in [
            "def power(x, n=2):\n    return x ** n\n",
            "def power(x, n=2):\n    def inner():\n        return x ** n\n    return inner()\n",
            "def power(x, _n=2):\n    return x * x\n",
            "def power(x, *args, **kw):\n    return x * x\n",
            "def power(x, n=2):\n    ...\n",
            "def power(x, n=2):\n    \"\"\"Doc.\"\"\"\n    pass\n",
            "def square(x, n=2):\n    return x * x\n",
        ] {
            assert_eq!(unused(before, after), None, "{after:?}");
        }
        // A parameter it had before the change is not this change's.
        assert_eq!(unused("def f(x, n):\n    return x\n", "def f(x, n):\n    return x + 1\n"), None);
        // Nor is one of another class's method of the same name.
        let two = "class A:\n    def __init__(self, x):\n        self.x = x\n\n\
                   class B:\n    def __init__(self, y):\n        pass\n        return None\n";
        assert_eq!(unused(two, &two.replace("self.x = x", "self.x = x + 1")), None);
    }
}
