//! [`Rule::ErrorPrefix`]: no daemon code outside tests reads a tool
//! result's `error:` prefix.

use super::{non_test_lines, test_file, Rule, Violation};

/// No daemon code outside tests decides a result by its `error:` prefix;
/// `tools/error.rs` renders the prefix, the one place it is written for
/// the model.
pub(crate) fn error_prefix_rule(rel: &str, text: &str, out: &mut Vec<Violation>) {
    if test_file(rel) || rel == "daemon/src/tools/error.rs" {
        return;
    }
    for (line, code) in non_test_lines(text) {
        if code.contains("starts_with(\"error") {
            out.push(Violation { rule: Rule::ErrorPrefix, file: rel.to_owned(), line, what: code.trim().to_owned() });
        }
    }
}

#[test]
fn a_result_read_by_its_error_prefix_is_reported_but_not_in_tests() {
    let text = "fn f(t: &str) -> bool {\n    t.starts_with(\"error:\")\n}\n#[cfg(test)]\nmod tests {\n    fn g(t: &str) -> bool { t.starts_with(\"error:\") }\n}\n";
    let mut out = Vec::new();
    error_prefix_rule("daemon/src/agent/x.rs", text, &mut out);
    let shown: Vec<String> = out.iter().map(|v| format!("{}:{}", v.file, v.line)).collect();
    assert_eq!(shown, ["daemon/src/agent/x.rs:2"]);
}
