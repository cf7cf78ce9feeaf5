//! Python's indentation, which its grammar tolerates and Python does
//! not: a statement indented where no block opens, and a line continuing
//! a bracket left of its statement (read with a small lexer of Python's
//! strings and brackets).

use tree_sitter::{Node, Tree};

/// The row of the first statement of `text` (parsed as `tree`) whose
/// indentation Python refuses.
pub(super) fn python_indent_row(tree: &Tree, text: &str) -> Option<usize> {
    let indents: Vec<usize> = text.lines().map(|l| l.len() - l.trim_start().len()).collect();
    python_indent_error(tree.root_node(), &indents, 0)
}

/// `text` with every line that continues an open bracket indented past
/// the statement it belongs to, or `None` when no line needed it. Python
/// ignores the indentation of such lines; the rows stay as they were.
/// Strings (a triple-quoted one's lines are its content) and comments are
/// skipped over, so their brackets do not count.
pub(super) fn python_continuations_indented(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 64);
    let (mut depth, mut string, mut statement_indent, mut changed) = (0usize, None::<(u8, bool)>, 0, false);
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        let open = depth > 0 && string.is_none();
        if open && !line.trim().is_empty() && indent < statement_indent + 4 {
            out.push_str(&" ".repeat(statement_indent + 4));
            out.push_str(&line[indent..]);
            changed = true;
        } else {
            out.push_str(line);
        }
        if depth == 0 && string.is_none() {
            statement_indent = indent;
        }
        string = scan_python_line(line.as_bytes(), &mut depth, string);
    }
    changed.then_some(out)
}

/// Follow one line of Python: the bracket `depth` after it, and the
/// string (its quote, whether triple) still open at its end.
fn scan_python_line(b: &[u8], depth: &mut usize, mut string: Option<(u8, bool)>) -> Option<(u8, bool)> {
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match string {
            Some(_) if c == b'\\' => i += 1,
            Some((q, false)) if c == q => string = None,
            Some((q, true)) if b[i..].starts_with(&[q, q, q]) => {
                string = None;
                i += 2;
            }
            Some(_) => {}
            None => match c {
                b'#' => break,
                b'\'' | b'"' => {
                    let triple = b[i..].starts_with(&[c, c, c]);
                    string = Some((c, triple));
                    i += if triple { 2 } else { 0 };
                }
                b'(' | b'[' | b'{' => *depth += 1,
                b')' | b']' | b'}' => *depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        i += 1;
    }
    // A short string ends with its line, unless a backslash continues it.
    string.filter(|(_, triple)| *triple || b.ends_with(b"\\\n"))
}

/// The first statement of `node`'s body (the module or a block) whose
/// indentation Python refuses, as its row: the module's statements start
/// at column 0, a block's all at the column of its first, deeper than the
/// line that opens it (`outer`). tree-sitter's Python grammar parses a
/// line that lost its indent (`for` at column 0 inside a function, and
/// the `return` after it at column 4) without an error node; Python stops
/// with "IndentationError".
fn python_indent_error(node: Node<'_>, indents: &[usize], outer: usize) -> Option<usize> {
    let is_module = node.kind() == "module";
    let mut column: Option<usize> = is_module.then_some(0);
    let mut last_row = None;
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let start = child.start_position();
        // Comments go anywhere; a statement after `;` or on the line of
        // the header (`if x: return`) does not start a line.
        let opens_line =
            last_row != Some(start.row) && child.kind() != "comment" && indents.get(start.row) == Some(&start.column);
        last_row = Some(child.end_position().row);
        if opens_line {
            let want = *column.get_or_insert(start.column);
            if start.column != want || (!is_module && start.column <= outer) {
                return Some(start.row);
            }
        }
        let indent = if opens_line { start.column } else { outer };
        if let Some(row) = blocks_of(child).find_map(|block| python_indent_error(block, indents, indent)) {
            return Some(row);
        }
    }
    None
}

/// The blocks directly under a statement (`body`, `else`, `except`…
/// clauses), not those of statements inside them.
fn blocks_of(node: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    let mut cursor = node.walk();
    let mut found = Vec::new();
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "block" => found.push(child),
            // A decorated definition holds its definition; clauses hold
            // their blocks.
            "function_definition"
            | "class_definition"
            | "else_clause"
            | "elif_clause"
            | "except_clause"
            | "finally_clause"
            | "except_group_clause" => found.extend(blocks_of(child)),
            _ => {}
        }
    }
    found.into_iter()
}
