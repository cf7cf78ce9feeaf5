use super::*;
use crate::message::ToolCall;

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: args.to_owned() }
}

#[test]
fn the_deterministic_file_has_swivals_sections() {
    let messages = vec![
        Message::system("prompt"),
        Message::user("first task"),
        Message::synthetic("files read up front"),
        Message::assistant_turn(None, vec![call("c1", "think", r#"{"thought":"look at\nmain.rs"}"#)]),
        Message::tool_result("c1", "ok"),
        Message::assistant_turn(None, vec![call("c2", "read_file", r#"{"file_path":"main.rs"}"#)]),
        Message::tool_result("c2", format!("fn main() {{}}\n{}", "x".repeat(200))),
        Message::user("second task"),
    ];
    let todo =
        vec![TodoItem { task: "open".to_owned(), done: false }, TodoItem { task: "closed".to_owned(), done: true }];
    let text = deterministic(&messages, &todo);
    let preview = format!("fn main() {{}} {}...", "x".repeat(107));
    assert_eq!(
        text,
        format!(
            "# Continue Here\n\n## Current task\nsecond task\n\n## Original task\nfirst task\n\n## Task checklist\n\
- [x] closed\n- [ ] open\n\n## Key reasoning\n- look at main.rs\n\n## Recent activity\n- called `think`\n\
-   → ok\n- called `read_file`\n-   → {preview}"
        )
    );
}

#[test]
fn the_recent_activity_quotes_a_tools_output_not_the_notes_for_the_model() {
    let messages = vec![
        Message::user("fix add"),
        Message::assistant_turn(None, vec![call("c1", "edit_file", r#"{"file_path":"a.py"}"#)]),
        Message::tool_result_with_notes("c1", "Edited a.py\nIf this change completes the task, reply now.", Some(11)),
    ];
    let text = deterministic(&messages, &[]);
    assert!(text.ends_with("## Recent activity\n- called `edit_file`\n-   → Edited a.py"), "{text}");
}

#[test]
fn a_saved_file_is_taken_once_in_its_block_and_cut_to_4000_characters() {
    let d = tempfile::tempdir().unwrap();
    save(d.path(), &"y".repeat(5000)).unwrap();
    let loaded = take(d.path()).unwrap().unwrap();
    assert_eq!(loaded.block, block(&"y".repeat(MAX_CHARS)));
    assert!(loaded.block.starts_with("<continue-here>\n[This session is resuming interrupted work."));
    assert_eq!(loaded.stale, None);
    assert!(take(d.path()).unwrap().is_none());
    assert!(!d.path().join(".swival/continue.md").exists());
}

#[test]
fn a_symlinked_continue_file_is_neither_read_written_nor_removed() {
    let d = tempfile::tempdir().unwrap();
    let (base, outside) = (d.path().join("base"), d.path().join("secret.txt"));
    std::fs::create_dir_all(base.join(".swival")).unwrap();
    std::fs::write(&outside, "hunter2").unwrap();
    std::os::unix::fs::symlink(&outside, base.join(".swival/continue.md")).unwrap();
    assert!(matches!(take(&base), Err(NoteError::Symlink(_))));
    assert!(matches!(save(&base, "new"), Err(NoteError::Symlink(_))));
    assert!(matches!(clear(&base), Err(NoteError::Symlink(_))));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "hunter2");
    assert!(base.join(".swival/continue.md").is_symlink());
}

#[test]
fn the_summary_input_is_capped_as_swivals() {
    let mut messages = vec![Message::system("s"), Message::user("z".repeat(3000))];
    messages.extend((0..5).map(|_| Message::assistant("a".repeat(2500))));
    let text = summary_input(&messages);
    assert!(text.starts_with(&format!("[user] {}\n[assistant] a", "z".repeat(2000))));
    assert!(text.ends_with("a\n[... truncated]"));
    assert_eq!(text.chars().count(), 8000 + "\n[... truncated]".len());
}
