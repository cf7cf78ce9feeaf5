//! [`Rule::ModelRead`]: where the daemon reads files for the model, no
//! plain `std::fs` read.

use super::{code, non_test_lines, test_file, Rule, Violation};

/// Where the daemon reads files whose bytes may reach a request: the
/// modules of instruction files, notes, skills, sessions (the reviewer's
/// files), config and the pipeline.
const MODEL_READ_MODULES: &[&str] = &["agent", "notes", "skills", "session", "config", "pipeline", "mcp"];

/// Reads that follow links and block on FIFOs.
const PLAIN_READS: &[&str] =
    &["fs::read(", "fs::read_to_string(", "File::open(", "tokio::fs::read(", "tokio::fs::read_to_string("];

/// [`Rule::ModelRead`] for one daemon file, tests left out.
pub(crate) fn model_read_rule(rel: &str, text: &str, out: &mut Vec<Violation>) {
    let inside = MODEL_READ_MODULES.iter().any(|d| rel.starts_with(&format!("daemon/src/{d}/")));
    if !inside || test_file(rel) {
        return;
    }
    for (n, line) in non_test_lines(text) {
        let code = code(line);
        if PLAIN_READS.iter().any(|needle| code.contains(needle)) {
            out.push(Violation { rule: Rule::ModelRead, file: rel.to_owned(), line: n, what: code.to_owned() });
        }
    }
}

#[test]
fn a_plain_read_where_files_reach_the_model_is_reported_but_not_in_tests_or_elsewhere() {
    let text = "fn f(p: &Path) -> String {\n    std::fs::read_to_string(p).unwrap()\n}\n\
                // std::fs::read(p) in a comment\n\
                #[cfg(test)]\nmod tests {\n    fn t() { std::fs::read(\"x\").unwrap(); }\n}\n";
    let mut out = Vec::new();
    model_read_rule("daemon/src/agent/x.rs", text, &mut out);
    model_read_rule("daemon/src/store/x.rs", text, &mut out);
    model_read_rule("daemon/src/skills/tests.rs", text, &mut out);
    let shown: Vec<String> = out.iter().map(|v| format!("{}:{}", v.file, v.line)).collect();
    assert_eq!(shown, ["daemon/src/agent/x.rs:2"]);
}
