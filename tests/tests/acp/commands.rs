//! The slash commands the ACP agent answers without a model call: diff and
//! undo of the last run, and the session's goal and loops.

use super::*;

#[test]
fn diff_and_undo_are_offered_to_the_editor_and_put_the_last_run_back() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call("w", "write_file", json!({"file_path": "made.txt", "content": "made in the editor\n"})),
        Step::text("made it"),
    ]);
    provider_config(&env, &mock, "");
    let cwd = p.display().to_string();
    let steps = json!([
        {"op": "new", "cwd": cwd},
        {"op": "prompt", "text": "make a file"},
        {"op": "prompt", "text": "/diff"},
        {"op": "prompt", "text": "/undo"},
    ]);
    let seen = Driver::start(&env, &daemon, json!({ "steps": steps })).finish();
    let offered = seen.iter().find(|v| v["update"]["sessionUpdate"] == "available_commands_update");
    assert!(offered.is_some_and(|v| v.to_string().contains("\"undo\"")), "{}", dump(&seen));
    let text = text_of(&seen, "agent_message_chunk");
    assert!(text.contains("```diff") && text.contains("+made in the editor"), "{}", dump(&seen));
    assert!(text.contains("1 file put back"), "{}", dump(&seen));
    assert!(!p.join("made.txt").exists(), "the undo removed the file the run made");
    assert_eq!(mock.request_count(), 2, "no model call for /diff or /undo");
}

#[test]
fn an_editor_sets_pauses_and_reads_the_sessions_goal_and_lists_its_loops() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("working on it"), &gate)]);
    provider_config(&env, &mock, "");
    let cwd = p.display().to_string();
    let steps = json!([
        {"op": "new", "cwd": cwd},
        {"op": "prompt", "text": "/goal write the notes"},
        {"op": "prompt", "text": "/goal pause"},
        {"op": "prompt", "text": "/goal"},
        {"op": "prompt", "text": "/loops"},
    ]);
    let seen = Driver::start(&env, &daemon, json!({ "steps": steps })).finish();
    let offered = seen.iter().find(|v| v["update"]["sessionUpdate"] == "available_commands_update");
    assert!(offered.is_some_and(|v| v.to_string().contains("\"goal\"")), "{}", dump(&seen));
    let text = text_of(&seen, "agent_message_chunk");
    assert!(text.contains(": active\n  objective: write the notes"), "{}", dump(&seen));
    assert!(text.matches(": paused\n").count() == 2, "paused, then shown paused: {}", dump(&seen));
    assert!(text.contains("no active loops"), "{}", dump(&seen));
    gate.open();
}
