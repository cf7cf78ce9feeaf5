//! The nudges end to end: each fires its own `intervention` event,
//! `disable_nudges` turns each off, and the same task in another
//! language is nudged the same way. Real daemon, scripted model.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{events_until_finished, intervention_kinds, run_task, TestEnv};

fn config(mock: &MockProvider) -> Value {
    json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"})
}

/// The nudges a run of `task` on a fresh copy of a small project gets
/// from a scripted model that answers blind, then fails an edit and
/// claims it: each nudge's kind and words.
fn nudges_for(task: &str, claim: &str) -> Vec<(String, String)> {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("README.md"), "# calcd\n").unwrap();
    std::fs::write(p.join("Makefile"), "all:\n\tcc -o calc calc.c\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::text("Done: see build.mk."),
        Step::tool_call("r", "read_file", json!({"file_path": "Makefile"})),
        Step::tool_call("d", "delete_file", json!({"file_path": "build/"})),
        Step::text(claim),
        Step::tool_call(
            "e",
            "edit_file",
            json!({"file_path": "Makefile", "old_string": "all:", "new_string": "all:\nclean:\n\trm -rf build"}),
        ),
        Step::text(claim),
    ]);
    let mut c = daemon.nd();
    let (sid, _, result) = run_task(&mut c, &p, config(&mock), task);
    assert_eq!(result["outcome"], "success", "{result:#}");
    assert_eq!(mock.request_count(), 6, "{:#?}", mock.requests());
    let events = events_until_finished(&mut c, &sid, 1);
    let nudges = events.iter().filter(|e| e["type"] == "intervention");
    nudges.map(|e| (e["kind"].as_str().unwrap().to_owned(), e["message"].as_str().unwrap().to_owned())).collect()
}

#[test]
fn the_same_task_in_english_french_and_german_is_nudged_the_same_way() {
    let english = nudges_for("Add a clean target to the Makefile that removes build/.", "I added a clean target.");
    let kinds: Vec<&str> = english.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["look_first", "unmade", "done_hint"], "{english:#?}");
    assert!(english[0].1.contains("without looking at the project") && english[0].1.contains("Makefile, README.md"));
    assert!(english[1].1.contains("every change you tried failed"), "{english:#?}");
    let french = nudges_for("Ajoute au Makefile une cible clean qui supprime build/.", "J'ai ajouté une cible clean.");
    assert_eq!(french, english);
    let german = nudges_for("Füge dem Makefile ein clean-Ziel hinzu, das build/ löscht.", "Clean-Ziel hinzugefügt.");
    assert_eq!(german, english);
}

#[test]
fn every_answer_and_reply_nudge_fires_its_own_event_and_disable_nudges_turns_each_off() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.py"), "x = 1\n").unwrap();
    let unreadable = "Failed to parse tool call arguments as JSON";
    let miss = json!({"file_path": "a.py", "old_string": "y = 1", "new_string": "y = 2"});
    let edit = json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"});
    // Per nudge: the model's script, and what the run answers with the nudge off.
    let cases: Vec<(&str, Vec<Step>, &str)> = vec![
        ("empty", vec![Step::empty(), Step::text("fine")], ""),
        ("truncated", vec![Step::text_with_finish("half", "length"), Step::text("fine")], "half"),
        ("unreadable", vec![Step::error(500, unreadable, "server_error"), Step::text("fine")], ""),
        ("look_first", vec![Step::text("see b.py"), Step::text("fine")], "see b.py"),
        ("unmade", vec![Step::tool_call("m", "edit_file", miss), Step::text("set"), Step::text("fine")], "set"),
        ("done_hint", vec![Step::tool_call("e", "edit_file", edit), Step::text("fine")], "fine"),
    ];
    // The task names no file, so none is read up front.
    let mut c = daemon.nd();
    for (kind, script, off_answer) in cases {
        std::fs::write(p.join("a.py"), "x = 1\n").unwrap();
        let mock = MockProvider::start(script.clone());
        let (sid, _, result) = run_task(&mut c, &p, config(&mock), "Set x to 2.");
        let events = events_until_finished(&mut c, &sid, 1);
        assert_eq!(intervention_kinds(&events), [kind], "{kind}: {events:#?}");
        assert_eq!(result["answer"], "fine", "{kind}: {result:#}");

        std::fs::write(p.join("a.py"), "x = 1\n").unwrap();
        let mock = MockProvider::start(script);
        let mut cfg = config(&mock);
        cfg["disable_nudges"] = json!([kind]);
        let (sid, _, result) = run_task(&mut c, &p, cfg, "Set x to 2.");
        let events = events_until_finished(&mut c, &sid, 1);
        assert!(intervention_kinds(&events).is_empty(), "{kind} off: {events:#?}");
        if kind == "unreadable" {
            assert_eq!(result["outcome"], "error", "{result:#}");
        } else {
            assert_eq!(result["answer"], off_answer, "{kind} off: {result:#}");
        }
    }
    let mock = MockProvider::start(vec![]);
    let mut cfg = config(&mock);
    cfg["disable_nudges"] = json!(["look_first", "be_nice"]);
    let err = c.call("session/create", json!({"base_dir": p, "config": cfg}));
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("'disable_nudges[1]' must be one of") && message.contains("got 'be_nice'"), "{err}");
}
