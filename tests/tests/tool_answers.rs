//! What each file tool answers to arguments it cannot take, byte for byte:
//! a missing or mistyped argument, Swival's lenient forms (numeric
//! strings, `"true"`, 0/1, legacy names such as `tail`, `task` and
//! `is_revision`) and the tools' own refusals of odd shapes, with which
//! of several problems a tool reports first: a missing or mistyped
//! argument, in the order the tool's arguments are declared, before any
//! other (`read_file` used to resolve its path before it read `offset`,
//! `edit_file` to look at the file before it read `checksum`; an argument
//! Swival reads only in some cases, such as `tail` or think's `mode`, is
//! still checked only then). Run in this crate's build,
//! where JSON results keep their keys in the order written, as the
//! workspace's daemon does.

use swivald::tooling::{FilesMode, PathPolicy, ToolBox};

/// `(tool, arguments, result)`, run in this order on one toolbox over a
/// base dir holding `f.txt` (two lines); `<base>` stands for the base dir
/// and `<parent>` for the directory holding it.
const CASES: &[(&str, &str, &str)] = &[
    ("read_file", r#"{}"#, "error: missing required argument 'file_path'"),
    ("read_file", r#"{"file_path": 5}"#, "error: 'file_path' must be a string, got a number"),
    ("read_file", r#"{"file_path": null}"#, "error: missing required argument 'file_path'"),
    ("read_file", r#"{"file_path": "f.txt", "offset": "x"}"#, "error: 'offset' must be an integer, got \"x\""),
    ("read_file", r#"{"file_path": "f.txt", "offset": true}"#, "error: 'offset' must be an integer, got a boolean"),
    ("read_file", r#"{"file_path": "f.txt", "offset": 2.5}"#, "error: 'offset' must be an integer, got 2.5"),
    ("read_file", r#"{"file_path": "f.txt", "offset": "2"}"#, "2: two\n[checksum=c3f9c8c2]"),
    ("read_file", r#"{"file_path": "f.txt", "offset": 2.0, "limit": "1"}"#, "2: two\n[checksum=c3f9c8c2]"),
    ("read_file", r#"{"file_path": "f.txt", "limit": "abc"}"#, "error: 'limit' must be an integer, got \"abc\""),
    ("read_file", r#"{"file_path": "f.txt", "limit": null}"#, "1: one\n2: two\n[checksum=c3f9c8c2]"),
    ("read_file", r#"{"file_path": "f.txt", "tail_lines": [1]}"#, "error: 'tail_lines' must be an integer, got an array"),
    ("read_file", r#"{"file_path": "f.txt", "tail": "x"}"#, "error: 'tail' must be an integer, got \"x\""),
    ("read_file", r#"{"file_path": "f.txt", "tail": 1}"#, "1: one\n2: two\n[checksum=c3f9c8c2]"),
    ("read_file", r#"{"file_path": "f.txt", "tail_lines": 1, "tail": "x"}"#, "1: one\n2: two\n[checksum=c3f9c8c2]"),
    ("read_file", r#"{"file_path": "f.txt", "offset": 2, "tail_lines": 5}"#, "error: cannot combine 'offset' and 'tail_lines'. To read the last 5 lines, drop 'offset' and keep tail_lines=5. To paginate forward from line 2, drop 'tail_lines' and keep offset=2."),
    ("read_file", r#"{"file_path": "f.txt", "offset": 2, "tail_lines": 1}"#, "2: two\n[checksum=c3f9c8c2]"),
    ("read_file", r#"{"file_path": "f.txt", "unknown": 1}"#, "1: one\n2: two\n[checksum=c3f9c8c2]"),
    ("read_file", r#"{"file_path": "../x", "offset": "x"}"#, "error: 'offset' must be an integer, got \"x\""),
    ("read_multiple_files", r#"{}"#, "error: read_multiple_files requires a non-empty 'files' array. Each entry is either a path string or an object like {\"file_path\": \"...\", \"offset\": 1, \"limit\": 200}. To read a single file, use read_file instead."),
    ("read_multiple_files", r#"{"files": "f.txt"}"#, "error: read_multiple_files requires a non-empty 'files' array. Each entry is either a path string or an object like {\"file_path\": \"...\", \"offset\": 1, \"limit\": 200}. To read a single file, use read_file instead."),
    ("read_multiple_files", r#"{"files": []}"#, "error: read_multiple_files requires a non-empty 'files' array. Each entry is either a path string or an object like {\"file_path\": \"...\", \"offset\": 1, \"limit\": 200}. To read a single file, use read_file instead."),
    ("read_multiple_files", r#"{"files": [5, {}, {"file_path": 5}, "f.txt"]}"#, "files_succeeded: 1\nfiles_with_errors: 3\nbatch_truncated: false\n\n=== FILE: file 1 ===\nstatus: error\nrequest: offset=1 limit=2000\nerror: expected a path string or an object with file_path, got a number\n\n=== FILE: file 2 ===\nstatus: error\nrequest: offset=1 limit=2000\nerror: missing file_path\n\n=== FILE: file 3 ===\nstatus: error\nrequest: offset=1 limit=2000\nerror: missing file_path\n\n=== FILE: f.txt ===\nstatus: ok\nrequest: offset=1 limit=2000\ncontent_truncated: false\nchecksum: c3f9c8c2\n1: one\n2: two"),
    ("read_multiple_files", r#"{"files": [{"file_path": "f.txt", "offset": "x"}, {"file_path": "f.txt", "tail": 1, "limit": 1}]}"#, "files_succeeded: 1\nfiles_with_errors: 1\nbatch_truncated: false\n\n=== FILE: f.txt ===\nstatus: error\nrequest: offset=1 limit=2000\nerror: 'offset' must be an integer, got \"x\"\n\n=== FILE: f.txt ===\nstatus: ok\nrequest: tail=1\ncontent_truncated: false\nchecksum: c3f9c8c2\n2: two"),
    ("read_multiple_files", r#"{"files": [{"file_path": "f.txt", "tail_lines": true}, {"file_path": "f.txt", "offset": 1, "tail_lines": 2}]}"#, "files_succeeded: 0\nfiles_with_errors: 2\nbatch_truncated: false\n\n=== FILE: f.txt ===\nstatus: error\nrequest: offset=1 limit=2000\nerror: 'tail_lines' must be an integer, got a boolean\n\n=== FILE: f.txt ===\nstatus: error\nrequest: offset=1 limit=2000\nerror: cannot combine 'offset' and 'tail_lines'. To read the last 2 lines, drop 'offset' and keep tail_lines=2. To paginate forward from line 1, drop 'tail_lines' and keep offset=1."),
    ("write_file", r#"{}"#, "error: missing required argument 'file_path'"),
    ("write_file", r#"{"file_path": 5}"#, "error: 'file_path' must be a string, got a number"),
    ("write_file", r#"{"file_path": "w.txt"}"#, "error: write_file requires exactly one of 'content' or 'move_from'. To create or overwrite w.txt, pass 'content' as a string (use \"\" for an empty file). To rename an existing file to w.txt, pass 'move_from' with the source path. Retry with one of these arguments."),
    ("write_file", r#"{"file_path": "w.txt", "content": "", "move_from": 5}"#, "error: 'move_from' must be a string, got a number"),
    ("write_file", r#"{"file_path": "w.txt", "move_from": 5}"#, "error: 'move_from' must be a string, got a number"),
    ("write_file", r#"{"file_path": "w.txt", "content": "a", "move_from": "f.txt"}"#, "error: write_file received both 'content' and 'move_from'. These are mutually exclusive: set 'content' (a string) to create or overwrite w.txt, OR set 'move_from' (a source path) to atomically rename that path to w.txt. Drop whichever one does not apply and retry."),
    ("write_file", r#"{"file_path": "w.json", "content": {"a": [1, 2]}}"#, "Wrote 29 bytes to w.json\n[checksum=f7bbad63]"),
    ("write_file", r#"{"file_path": "w.txt", "content": null, "move_from": ""}"#, "error: write_file requires exactly one of 'content' or 'move_from'. To create or overwrite w.txt, pass 'content' as a string (use \"\" for an empty file). To rename an existing file to w.txt, pass 'move_from' with the source path. Retry with one of these arguments."),
    ("edit_file", r#"{}"#, "error: missing required argument 'file_path'"),
    ("edit_file", r#"{"file_path": "f.txt"}"#, "error: missing required argument 'old_string'"),
    ("edit_file", r#"{"file_path": "f.txt", "old_string": 5, "new_string": "x"}"#, "error: 'old_string' must be a string, got a number"),
    ("edit_file", r#"{"file_path": "f.txt", "old_string": "one"}"#, "error: missing required argument 'new_string'"),
    ("edit_file", r#"{"file_path": "f.txt", "old_string": "one", "new_string": "x", "replace_all": "yes"}"#, "error: 'replace_all' must be true or false, got \"yes\""),
    ("edit_file", r#"{"file_path": "f.txt", "old_string": "one", "new_string": "x", "line_number": "x"}"#, "error: 'line_number' must be an integer, got \"x\""),
    ("edit_file", r#"{"file_path": "f.txt", "old_string": "one", "new_string": "x", "line_number": [1]}"#, "error: 'line_number' must be an integer, got an array"),
    ("edit_file", r#"{"file_path": "f.txt", "old_string": "one", "new_string": "1", "checksum": 5}"#, "error: 'checksum' must be a string, got a number"),
    ("edit_file", r#"{"file_path": "f.txt", "old_string": "one", "new_string": "1", "replace_all": "true", "line_number": "1"}"#, "Edited f.txt\n[checksum=1650a178]"),
    ("edit_file", r#"{"file_path": "nope.txt", "old_string": "one", "new_string": "x", "checksum": 5}"#, "error: 'checksum' must be a string, got a number"),
    ("list_files", r#"{}"#, "error: missing required argument 'pattern'"),
    ("list_files", r#"{"pattern": 5}"#, "error: 'pattern' must be a string, got a number"),
    ("list_files", r#"{"pattern": "*", "path": 5}"#, "error: 'path' must be a string, got a number"),
    ("list_files", r#"{"pattern": "*.txt", "path": null}"#, "f.txt"),
    ("grep", r#"{}"#, "error: missing required argument 'pattern'"),
    ("grep", r#"{"pattern": 5}"#, "error: 'pattern' must be a string, got a number"),
    ("grep", r#"{"pattern": "o", "path": 5}"#, "error: 'path' must be a string, got a number"),
    ("grep", r#"{"pattern": "o", "include": 5}"#, "error: 'include' must be a string, got a number"),
    ("grep", r#"{"pattern": "o", "case_insensitive": "x"}"#, "error: 'case_insensitive' must be true or false, got \"x\""),
    ("grep", r#"{"pattern": "O", "case_insensitive": 1, "context_lines": "1"}"#, "Found 1 match\n\nf.txt:\n  Line 1: 1\n  Line 2: two  <<<"),
    ("grep", r#"{"pattern": "o", "context_lines": "x"}"#, "error: 'context_lines' must be an integer, got \"x\""),
    ("grep", r#"{"pattern": "o", "context_lines": -3}"#, "Found 1 match\n\nf.txt:\n  Line 2: two"),
    ("think", r#"{}"#, "error: missing required argument 'thought'"),
    ("think", r#"{"thought": 5}"#, "error: 'thought' must be a string, got a number"),
    ("think", r#"{"thought": "a", "mode": 5, "is_revision": "x"}"#, "{\"thought_number\":1,\"total_thoughts\":3,\"next_thought_needed\":true,\"branches\":[],\"history_length\":1}"),
    ("think", r#"{"thought": "a", "revises_thought": "x"}"#, "error: 'revises_thought' must be an integer, got \"x\""),
    ("think", r#"{"thought": "a", "branch_id": 5}"#, "error: 'branch_id' must be a string, got a number"),
    ("think", r#"{"thought": "a", "mode": 5}"#, "error: 'mode' must be a string, got a number"),
    ("think", r#"{"thought": "a", "is_revision": "x"}"#, "error: 'is_revision' must be true or false, got \"x\""),
    ("think", r#"{"thought": "a", "mode": "new", "is_revision": "x"}"#, "{\"thought_number\":2,\"total_thoughts\":3,\"next_thought_needed\":true,\"branches\":[],\"history_length\":2}"),
    ("think", r#"{"thought": "a", "thought_number": "x"}"#, "error: 'thought_number' must be an integer, got \"x\""),
    ("think", r#"{"thought": "a", "total_thoughts": true}"#, "error: 'total_thoughts' must be an integer, got a boolean"),
    ("think", r#"{"thought": "a", "next_thought_needed": "maybe"}"#, "error: 'next_thought_needed' must be true or false, got \"maybe\""),
    ("think", r#"{"thought": "a", "thought_number": "4", "total_thoughts": 2.0, "next_thought_needed": "false"}"#, "{\"thought_number\":4,\"total_thoughts\":4,\"next_thought_needed\":false,\"branches\":[],\"history_length\":3}"),
    ("think", r#"{"thought": "a", "mode": "branch", "branch_from_thought": "1", "branch_id": " b "}"#, "{\"thought_number\":4,\"total_thoughts\":4,\"next_thought_needed\":true,\"branches\":[\"b\"],\"history_length\":4}"),
    ("think", r#"{"thought": "a", "is_revision": 1, "revises_thought": 1}"#, "{\"thought_number\":5,\"total_thoughts\":5,\"next_thought_needed\":true,\"branches\":[\"b\"],\"history_length\":5}"),
    ("todo", r#"{}"#, "error: invalid action '', expected one of: add, clear, done, list, remove"),
    ("todo", r#"{"action": 5}"#, "error: invalid action '', expected one of: add, clear, done, list, remove"),
    ("todo", r#"{"action": "add", "tasks": 5}"#, "{\"action\":\"add\",\"total\":1,\"remaining\":1,\"items\":[{\"task\":\"5\",\"done\":false}]}"),
    ("todo", r#"{"action": "add", "tasks": null}"#, "error: action requires a 'tasks' parameter\nNext: call todo with {\"action\":\"add\",\"tasks\":[\"<item text>\"]}. Open items: [\"5\"]"),
    ("todo", r#"{"action": "add", "task": "legacy"}"#, "{\"action\":\"add\",\"total\":2,\"remaining\":2,\"items\":[{\"task\":\"5\",\"done\":false},{\"task\":\"legacy\",\"done\":false}]}"),
    ("todo", r#"{"action": "add", "tasks": "[\"x\", 3]"}"#, "{\"action\":\"add\",\"total\":4,\"remaining\":4,\"items\":[{\"task\":\"5\",\"done\":false},{\"task\":\"legacy\",\"done\":false},{\"task\":\"x\",\"done\":false},{\"task\":\"3\",\"done\":false}]}"),
    ("todo", r#"{"action": "list", "tasks": {}}"#, "{\"action\":\"list\",\"total\":4,\"remaining\":4,\"items\":[{\"task\":\"5\",\"done\":false},{\"task\":\"legacy\",\"done\":false},{\"task\":\"x\",\"done\":false},{\"task\":\"3\",\"done\":false}]}"),
    ("think", r#"{"thought": "a", "mode": "revision"}"#, "error: revision mode requires revises_thought; valid thought numbers: [1, 2, 4, 5]. Use mode=\"revision\" with revises_thought=5, or omit mode for a normal thought"),
    ("think", r#"{"thought": "a", "mode": "branch", "branch_id": "c"}"#, "error: branch mode requires branch_from_thought and branch_id. Both branch_from_thought and branch_id must be set together"),
    ("todo", r#"{"action": "add", "tasks": ["x", "", "new one", "X"]}"#, "{\"action\":\"add\",\"total\":5,\"remaining\":5,\"items\":[{\"task\":\"5\",\"done\":false},{\"task\":\"legacy\",\"done\":false},{\"task\":\"x\",\"done\":false},{\"task\":\"3\",\"done\":false},{\"task\":\"new one\",\"done\":false}],\"skipped\":[\"x\",\"X\"],\"errors\":[{\"task\":\"\",\"reason\":\"empty or whitespace-only task\"}]}"),
    ("todo", r#"{"action": "done", "tasks": ["zzz", "yyy"]}"#, "error: all 2 items failed — no task matching 'zzz'"),
    ("todo", r#"{"action": "done", "tasks": []}"#, "error: 'tasks' must not be empty\nNext: call todo with {\"action\":\"done\",\"tasks\":[\"5\"]}. Open items: [\"5\",\"legacy\",\"x\",\"3\",\"new one\"]"),
    ("todo", r#"{"action": "remove"}"#, "error: action requires a 'tasks' parameter\nNext: call todo with {\"action\":\"remove\",\"tasks\":[\"5\"]}. Open items: [\"5\",\"legacy\",\"x\",\"3\",\"new one\"]"),
    ("todo", r#"{"action": "add", "tasks": "  "}"#, "error: 'add' requires a non-empty 'tasks' parameter"),
    ("todo", r#"{"action": "clear"}"#, "{\"action\":\"clear\",\"total\":0,\"remaining\":0,\"items\":[]}"),
    ("todo", r#"{"action": "done", "tasks": "x"}"#, "error: no task matching 'x'"),
    ("delete_file", r#"{}"#, "error: missing required argument 'file_path'"),
    ("delete_file", r#"{"file_path": 5}"#, "error: 'file_path' must be a string, got a number"),
    ("outline", r#"{}"#, "error: outline requires either 'file_path' (a single path) or 'files' (an array of {file_path, depth?} objects). Retry with one of these arguments."),
    ("outline", r#"{"file_path": 5}"#, "error: 'file_path' must be a string, got a number"),
    ("outline", r#"{"file_path": "f.txt", "depth": "x"}"#, "error: 'depth' must be an integer, got \"x\""),
    ("outline", r#"{"file_path": "", "files": []}"#, "error: outline requires either 'file_path' (a single path) or 'files' (an array of {file_path, depth?} objects). Retry with one of these arguments."),
    ("outline", r#"{"files": [{"depth": 1}, {"file_path": "f.txt", "depth": "9"}]}"#, "files_succeeded: 1\nfiles_with_errors: 1\nbatch_truncated: false\n\n=== FILE: file 1 ===\nstatus: error\nerror: missing file_path\n\n=== FILE: f.txt ===\nstatus: ok\nno declarations found: outline parses Python, JavaScript, TypeScript, Rust, Go, JSON, TOML and YAML; in f.txt it looked for lines that open a declaration and found none (read_file shows the text)"),
    ("nope", r#"{}"#, "error: unknown tool 'nope'. Available tools: read_file, read_multiple_files, write_file, edit_file, list_files, grep, think, todo, delete_file, outline"),
    ("read_file", r#"{bad"#, "error: invalid JSON in tool arguments: key must be a string at line 1 column 2"),
    ("read_file", r#"[1]"#, "error: tool arguments must be a JSON object, got [1]"),
    ("read_file", r#""#, "error: missing required argument 'file_path'"),
];

#[test]
fn each_tool_answers_bad_and_lenient_arguments_as_it_always_has() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f.txt"), "one\ntwo\n").unwrap();
    let base = d.path().canonicalize().unwrap();
    let policy = PathPolicy {
        base: base.clone(),
        allow_rw: vec![],
        allow_ro: vec![],
        skills: vec![],
        files: FilesMode::Some,
        protected: vec![],
        hidden: vec![],
        home: None,
        home_view: None,
    };
    let shown = |text: String| {
        let parent = base.parent().unwrap().display().to_string();
        text.replace(&base.display().to_string(), "<base>").replace(&parent, "<parent>")
    };
    let mut tb = ToolBox::new(policy);
    for (name, args, expected) in CASES {
        assert_eq!(shown(tb.call(name, args)), *expected, "{name} {args}");
    }
}
