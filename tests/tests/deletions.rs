//! A file deleted though the task named only something inside it, end to
//! end: the `delete_file` result keeps Swival's text and adds a note
//! naming what went and the way back; an answer silent on the file gets
//! one nudge, and the next answer ends the run. A task that asks for the
//! file gets Swival's text alone and no nudge.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

const UTIL: &str = "def helper(x):\n    return x\n\n\ndef main():\n    print(helper(1))\n";

/// Run `task` on a project holding util.py, the model deleting it and then
/// answering each of `answers` in turn; the mock and the run's result.
fn delete_util(task: &str, answers: &[&str]) -> (MockProvider, Value) {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("util.py"), UTIL).unwrap();
    let mut script = vec![Step::tool_call("del", "delete_file", json!({"file_path": "util.py"}))];
    script.extend(answers.iter().map(|a| Step::text(*a)));
    let mock = MockProvider::start(script);
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let mut c = daemon.nd();
    let sid =
        c.ok("session/create", json!({"base_dir": p, "config": config}))["session_id"].as_str().unwrap().to_owned();
    // The task names util.py: it is read up front, so the delete may go ahead.
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert!(!p.join("util.py").exists());
    (mock, result)
}

#[test]
fn deleting_the_file_of_a_function_the_task_names_is_noted_and_the_silent_answer_nudged_once() {
    let answers = ["Removed the unused function.", "I deleted util.py: nothing else in it was used.", "never asked"];
    let (mock, result) = delete_util("delete the unused function `helper` in util.py", &answers);
    let deleted = &mock.tool_results()["del"];
    let (swival, note) = deleted.split_once('\n').unwrap();
    let id = swival.strip_prefix("Trashed util.py -> .swival/trash/").unwrap();
    assert_eq!(id.len(), 32, "{deleted}");
    assert_eq!(
        note,
        format!(
            "Note: the task names `helper`, which was inside this file; the whole file (6 lines, defining helper, \
             main) is gone. If only `helper` should go, restore the file with write_file(file_path=\"util.py\", \
             move_from=\".swival/trash/{id}/util.py\") and edit it instead. If deleting the whole file is right, say \
             why in your answer."
        )
    );
    assert!(!deleted.contains("reply now"), "no push to finish: {deleted}");

    // The first answer did not mention util.py: one nudge, last in the
    // conversation, then the second answer is the run's.
    assert_eq!(mock.request_count(), 3);
    let nudge = mock.texts_of(2).last().unwrap().clone();
    assert!(nudge.starts_with("You deleted util.py (now .swival/trash/"), "{nudge}");
    assert!(nudge.contains("the task named only `helper` inside it"), "{nudge}");
    let last = mock.requests()[2]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user", "{last}");
    assert_eq!(result["answer"], answers[1], "{result}");
}

#[test]
fn deleting_a_file_the_task_asks_for_gets_swivals_text_alone_and_no_nudge() {
    let (mock, result) = delete_util("delete util.py, nothing uses `helper` any more", &["Done."]);
    let deleted = &mock.tool_results()["del"];
    assert!(deleted.starts_with("Trashed util.py -> .swival/trash/") && !deleted.contains("Note:"), "{deleted}");
    assert_eq!(mock.request_count(), 2);
    assert_eq!(result["answer"], "Done.", "{result}");
}
