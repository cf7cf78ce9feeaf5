//! [`Rule::ToolName`]: each tool's name is spelled (as a string literal)
//! in one file of the daemon's code outside tests, the file that declares
//! it; everything else names it through that declaration (`Tool::NAME`,
//! a constant) or asks the registry what a call does.

use super::{non_test_lines, test_file, Rule, Violation};

/// The daemon files (`(rel, text)` pairs) that spell `name` as a string
/// literal outside tests: the first line doing so, and whether that file
/// declares the name (the literal is a constant's value).
fn spelled_in(files: &[(String, String)], name: &str) -> Vec<(String, usize, bool)> {
    let literal = format!("\"{name}\"");
    files
        .iter()
        .filter(|(rel, _)| !test_file(rel))
        .filter_map(|(rel, text)| {
            let lines: Vec<(usize, &str)> =
                non_test_lines(text).into_iter().filter(|(_, line)| line.contains(&literal)).collect();
            let declares = lines.iter().any(|(_, line)| line.contains("const "));
            lines.first().map(|(n, _)| (rel.clone(), *n, declares))
        })
        .collect()
}

/// When a tool's name is spelled in more than one file: one violation per
/// file that spells it without declaring it, and per declaring file past
/// the first.
pub(crate) fn tool_name_rule(files: &[(String, String)], names: &[&str], out: &mut Vec<Violation>) {
    for name in names {
        let found = spelled_in(files, name);
        if found.len() <= 1 {
            continue;
        }
        let all: Vec<&str> = found.iter().map(|(rel, ..)| rel.as_str()).collect();
        let declaring = found.iter().position(|(.., declares)| *declares);
        for (_, (rel, line, _)) in found.iter().enumerate().filter(|(at, _)| Some(*at) != declaring) {
            let what = format!("\"{name}\" (spelled in {})", all.join(", "));
            out.push(Violation { rule: Rule::ToolName, file: rel.clone(), line: *line, what });
        }
    }
}

#[test]
fn a_tool_name_spelled_in_two_files_is_reported_but_not_in_tests() {
    let files = [
        ("daemon/src/tools/a.rs", "const NAME: &str = \"alpha\";\n"),
        (
            "daemon/src/agent/b.rs",
            "fn f(n: &str) -> bool { n == \"alpha\" }\n#[cfg(test)]\nmod tests { const X: &str = \"beta\"; }\n",
        ),
        ("daemon/src/tools/c.rs", "const NAME: &str = \"beta\";\n"),
        ("daemon/src/tools/tests.rs", "const Y: &str = \"beta\";\n"),
    ];
    let files: Vec<(String, String)> = files.iter().map(|(r, t)| ((*r).to_owned(), (*t).to_owned())).collect();
    let mut out = Vec::new();
    tool_name_rule(&files, &["alpha", "beta"], &mut out);
    let shown: Vec<String> = out.iter().map(|v| format!("{}:{}", v.file, v.line)).collect();
    assert_eq!(shown, ["daemon/src/agent/b.rs:1"]);
}
