//! The loop guards end to end, with a scripted model that repeats itself
//! the way small models do.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{events_until_finished, intervention_kinds, run_task, TestEnv};

fn config(mock: &MockProvider) -> Value {
    json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"})
}

#[test]
fn a_model_repeating_a_refused_edit_is_told_refused_and_stopped() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.py"), "x = 1\n").unwrap();
    // Text the file does not have: refused unread (and shown), then not found.
    let edit = json!({"file_path": "a.py", "old_string": "y = 5", "new_string": "y = 6"});
    let steps: Vec<Step> = (0..10).map(|i| Step::tool_call(&format!("c{i}"), "edit_file", edit.clone())).collect();
    let mock = MockProvider::start(steps);
    let mut c = daemon.nd();
    let (sid, run, result) = run_task(&mut c, &p, config(&mock), "set y to 6");

    // Two real failures, five refusals, then one last call without tools;
    // it still calls a tool, so the run ends as stuck: eight model calls,
    // not max_turns' hundred.
    assert_eq!(result["outcome"], "error", "{result}");
    assert!(result["error"].as_str().unwrap().contains("the model is stuck"), "{result}");
    assert_eq!(mock.request_count(), 8);
    let last = &mock.requests()[7];
    assert!(last.get("tools").is_none(), "the last call offers no tools: {last}");
    assert!(mock.texts_of(7).last().unwrap().starts_with("STOP: your last tool calls were refused as repeats"));
    assert_eq!(std::fs::read_to_string(p.join("a.py")).unwrap(), "x = 1\n");

    // What the model saw: the read guard with the file read for it, then
    // refusals naming the call.
    let second = mock.texts_of(1);
    let guard = second.last().unwrap();
    assert!(guard.contains("It has now been read for you") && guard.contains("1: x = 1"), "{guard}");
    let third = mock.texts_of(3);
    let refusal = third.iter().rev().find(|t| t.contains("repeat-loop guard")).expect("a refusal");
    assert!(
        refusal
            .starts_with("error: repeat-loop guard tripped — edit_file was called with identical arguments 3 times."),
        "{refusal}"
    );

    // Every intervention is an event and a report entry.
    let events = events_until_finished(&mut c, &sid, 1);
    let kinds: Vec<&str> =
        events.iter().filter(|e| e["type"] == "intervention").map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["storm", "storm", "storm", "storm", "storm", "stuck"], "{events:?}");
    let report = c.ok("report/get", json!({"run_id": run}));
    assert_eq!(report["stats"]["stormed_calls"], 5, "{}", report["stats"]);
    let storms = report["timeline"].as_array().unwrap().iter().filter(|e| e["type"] == "storm_suppression").count();
    assert_eq!(storms, 5);
}

#[test]
fn an_unread_file_is_edited_when_the_text_matches_once_and_a_slip_is_repaired() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("conf.py"), "limit = 10\n").unwrap();
    let mock = MockProvider::start(vec![
        // `path` for `file_path`, and an argument no tool takes.
        Step::tool_call(
            "c1",
            "edit_file",
            json!({"path": "conf.py", "old_string": "limit = 10", "new_string": "limit = 20", "why": "task"}),
        ),
        Step::tool_call("c2", "create_file", json!({"file_path": "new.py", "content": "x"})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let (_, _, result) = run_task(&mut c, &p, config(&mock), "raise the limit to 20");
    assert_eq!(result["outcome"], "success", "{result}");
    assert_eq!(std::fs::read_to_string(p.join("conf.py")).unwrap(), "limit = 20\n");
    let second = mock.texts_of(1);
    let edited = second.last().unwrap();
    assert!(edited.starts_with("Edited conf.py"), "{edited}");
    assert!(edited.contains("(auto-corrected: 'path' → 'file_path'; ignored 'why': edit_file takes"), "{edited}");
    let third = mock.texts_of(2);
    assert!(
        third.last().unwrap().starts_with("error: unknown tool 'create_file'. Did you mean 'write_file'?"),
        "{third:?}"
    );
}

#[test]
fn storm_breaker_false_turns_the_guards_off() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.py"), "x = 1\nx = 1\n").unwrap();
    let edit = json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"});
    let mut steps: Vec<Step> = (0..4).map(|i| Step::tool_call(&format!("c{i}"), "edit_file", edit.clone())).collect();
    steps.push(Step::text("gave up"));
    let mock = MockProvider::start(steps);
    let mut cfg = config(&mock);
    cfg["storm_breaker"] = json!(false);
    let mut c = daemon.nd();
    let (_, _, result) = run_task(&mut c, &p, cfg, "set x");
    assert_eq!(result["outcome"], "success", "{result}");
    assert_eq!(result["stats"]["stormed_calls"], 0);
    assert_eq!(result["stats"]["tool_calls_failed"], 4, "every repeat ran: {result}");
    let all: Vec<String> = (0..5).flat_map(|n| mock.texts_of(n)).collect();
    assert!(all.iter().all(|t| !t.contains("IMPORTANT") && !t.contains("repeat-loop")), "{all:?}");
}

/// A model that lists the same files seven times (two run, five are
/// refused, so the run is stuck) and then says `last_word` without tools:
/// the run's result and the number of model calls.
fn stuck_run(last_word: &str) -> (Value, usize) {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let list = json!({"pattern": "*.py"});
    let mut steps: Vec<Step> = (0..7).map(|i| Step::tool_call(&format!("c{i}"), "list_files", list.clone())).collect();
    steps.push(Step::text(last_word));
    let mock = MockProvider::start(steps);
    let mut c = daemon.nd();
    let (_, _, result) = run_task(&mut c, &p, config(&mock), "fix the bug");
    (result, mock.request_count())
}

#[test]
fn a_stuck_model_answering_without_tools_ends_the_run_with_that_answer() {
    let (result, calls) = stuck_run("I could not find the file to change; nothing was edited.");
    assert_eq!(result["outcome"], "success", "{result}");
    assert_eq!(result["answer"], "I could not find the file to change; nothing was edited.");
    assert_eq!(calls, 8);
    assert_eq!(result["stats"]["stormed_calls"], 5);
}

#[test]
fn a_stuck_model_writing_a_tool_call_as_its_last_word_ends_the_run_as_stuck() {
    let (result, calls) = stuck_run("```json\n{\"name\": \"list_files\", \"arguments\": {\"pattern\": \"*.py\"}}\n```");
    // Not an answer: the run ends as stuck, not as a success.
    assert_eq!(result["outcome"], "error", "{result}");
    assert!(result["error"].as_str().unwrap().starts_with("the model is stuck"), "{result}");
    assert_eq!(calls, 8);
}

#[test]
fn files_the_task_names_are_read_up_front_and_a_wrong_directory_names_the_real_file() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("calc.py"), "x = 1\n").unwrap();
    // A small model's slips: a directory it invented, then a whole-file
    // write that drops what was there.
    let wrong = json!({"file_path": "src/calc.py", "old_string": "x = 1", "new_string": "x = 2"});
    let rewrite = json!({"file_path": "calc.py", "content": "y = 2\n"});
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "edit_file", wrong),
        Step::tool_call("c2", "write_file", rewrite),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let (_, _, result) = run_task(&mut c, &p, config(&mock), "calc.py: set x to 2");
    assert_eq!(result["outcome"], "success", "{result}");

    // The first request carries the named file as read_file shows it.
    let first = mock.texts_of(0);
    let pre = first.last().unwrap();
    assert!(pre.starts_with("The task names these files") && pre.contains("=== calc.py ===\n1: x = 1"), "{pre}");
    let results = mock.tool_results();
    assert_eq!(
        results["c1"],
        r#"error: file does not exist: src/calc.py. calc.py exists: if you meant it, retry this call with "file_path": "calc.py"."#
    );
    // Counted as read, so the overwrite ran; the note says what it lost,
    // and no line pushes the model to finish.
    let wrote = &results["c2"];
    assert!(
        wrote.contains("\nNote: this replaced the whole file, and 1 of its 1 earlier lines are gone (`x = 1`)"),
        "{wrote}"
    );
    assert!(!wrote.contains("reply now"), "{wrote}");
    assert!(!p.join("src").exists(), "the wrong directory was never created");
}

#[test]
fn a_question_on_the_files_answered_blind_is_nudged_unless_its_files_were_read_up_front() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("dates.py"), "def parse_date(s):\n    return s.split('-')\n").unwrap();
    std::fs::write(p.join("names.py"), "def parse_name(s):\n    return s.title()\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::text("date_utils.py"),
        Step::tool_call("g", "grep", json!({"pattern": "def parse_date"})),
        Step::text("dates.py"),
        Step::text("It returns the parts of the date."),
    ]);
    let mut c = daemon.nd();
    let (_, _, result) = run_task(&mut c, &p, config(&mock), "Which file defines the function parse_date?");
    assert_eq!(result["answer"], "dates.py", "{result:#}");
    let nudge = mock.texts_of(1).last().unwrap().clone();
    assert!(nudge.contains("without looking at the project") && nudge.contains("dates.py, names.py"), "{nudge}");
    // dates.py is named, so read up front: the first answer stands.
    let task = "What does the function in dates.py return?";
    let (_, _, named) = run_task(&mut c, &p, config(&mock), task);
    assert_eq!(named["answer"], "It returns the parts of the date.", "{named:#}");
    assert_eq!(mock.request_count(), 4);
}

#[test]
fn an_answer_after_a_failed_change_is_nudged_once_and_copied_read_output_is_left_out() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("settings.json"), "{\n  \"timeout\": 30\n}\n").unwrap();
    // The model reads, makes an edit that misses, claims the change, is
    // nudged, then writes the file back with read_file's numbers and
    // checksum line in it.
    let copied = "1: {\n2:   \"timeout\": 60\n3: }\n[checksum=1a2b3c4d]";
    let missed =
        json!({"file_path": "settings.json", "old_string": "\"timeout\": 45", "new_string": "\"timeout\": 60"});
    let mock = MockProvider::start(vec![
        Step::tool_call("r", "read_file", json!({"file_path": "settings.json"})),
        Step::tool_call("e", "edit_file", missed),
        Step::text("I changed the timeout from 30 to 60."),
        Step::tool_call("w", "write_file", json!({"file_path": "settings.json", "content": copied})),
        Step::text("I changed the timeout from 30 to 60."),
    ]);
    let mut c = daemon.nd();
    let (_, _, result) = run_task(&mut c, &p, config(&mock), "Set the timeout in settings.json to 60.");
    assert_eq!(result["answer"], "I changed the timeout from 30 to 60.", "{result:#}");
    let nudge = mock.texts_of(3).last().unwrap().clone();
    assert!(nudge.contains("No change of this run stands: every change you tried failed"), "{nudge}");
    assert_eq!(std::fs::read_to_string(p.join("settings.json")).unwrap(), "{\n  \"timeout\": 60\n}\n");
    let wrote = &mock.tool_results()["w"];
    assert!(wrote.contains("left out the line numbers") && wrote.contains("'[checksum=…]' line"), "{wrote}");
    assert_eq!(mock.request_count(), 5, "the second claim, after a change, ends the run");
}

#[test]
fn an_edit_undone_after_its_syntax_error_leaves_the_answer_nudged_to_make_the_change() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let before = "def greet(name):\n    return 'Hello, ' + name\n";
    std::fs::write(p.join("hello.py"), before).unwrap();
    // What a small model did: an edit that breaks the syntax, told so, is
    // undone, and the answer says it fixed the syntax error.
    let edit = |id: &str, old: &str, new: &str| {
        Step::tool_call(id, "edit_file", json!({"file_path": "hello.py", "old_string": old, "new_string": new}))
    };
    let mock = MockProvider::start(vec![
        edit("broke", "+ name", "+ name!"),
        edit("undid", "+ name!", "+ name"),
        Step::text("Fixed the syntax error in hello.py."),
        edit("made", "+ name", "+ name + '!'"),
        Step::text("greet now ends with an exclamation mark."),
    ]);
    let mut c = daemon.nd();
    let task = "greet() in hello.py should end with an exclamation mark. Fix it.";
    let (_, _, result) = run_task(&mut c, &p, config(&mock), task);
    assert_eq!(result["answer"], "greet now ends with an exclamation mark.", "{result:#}");
    let broke = &mock.tool_results()["broke"];
    assert!(broke.contains("Python syntax error at line 2") && broke.contains("undoing the change"), "{broke}");
    let nudge = mock.texts_of(3).last().unwrap().clone();
    assert!(nudge.contains("No change of this run stands: hello.py is as at the start of the run"), "{nudge}");
    let after = std::fs::read_to_string(p.join("hello.py")).unwrap();
    assert_eq!(after, "def greet(name):\n    return 'Hello, ' + name + '!'\n");
    assert_eq!(mock.request_count(), 5, "the answer after the change stands ends the run");
}

#[test]
fn a_tool_call_written_as_text_with_tools_offered_runs_as_that_call_and_the_run_goes_on() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("notes.txt"), "the code name is Aurora\n").unwrap();
    // What a small model on llama.cpp sends when the template missed its call.
    let written = r#"{"name": "read_file", "arguments": {"file_path": "notes.txt", "offset": 1, "tail_lines": null}}"#;
    let not_offered = r#"{"name": "run_command", "arguments": {"command": ["ls"]}}"#;
    let mock = MockProvider::start(vec![Step::text(written), Step::text("Aurora"), Step::text(not_offered)]);
    let mut c = daemon.nd();
    let (sid, _, result) = run_task(&mut c, &p, config(&mock), "what is the code name? answer with it only");
    assert_eq!(result["outcome"], "success", "{result}");
    assert_eq!(result["answer"], "Aurora", "{result}");
    // The second request holds the call as a call, and its result.
    let second = &mock.requests()[1]["messages"];
    let call = second.as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(call["tool_calls"][0]["function"]["name"], "read_file", "{call}");
    let results: Vec<String> = mock.tool_results().into_values().collect();
    assert!(results.iter().any(|r| r.contains("Aurora")), "{results:?}");
    assert_eq!(result["stats"]["tool_calls_total"], 1, "{result}");

    // A tool that is not offered (commands are off) stays text: here, the answer.
    let run = c.ok("run/start", json!({"session_id": sid, "task": "list the files"}))["run_id"].clone();
    let second_run = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(second_run["outcome"], "success", "{second_run}");
    assert_eq!(second_run["answer"], not_offered, "{second_run}");
}

#[test]
fn a_tool_call_the_server_could_not_read_is_asked_for_anew_not_retried() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.py"), "x = 1\n").unwrap();
    // llama.cpp keeps the model's reply to itself and answers 500; at
    // temperature 0 the same request would get the same reply.
    let unreadable = "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at \
                      line 4, column 17: syntax error while parsing value - unexpected end of input";
    let edit = json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"});
    let mock = MockProvider::start(vec![
        Step::error(500, unreadable, "server_error"),
        Step::tool_call("e", "edit_file", edit),
        Step::text("Set x to 2."),
    ]);
    let mut c = daemon.nd();
    let (sid, _, result) = run_task(&mut c, &p, config(&mock), "Set x in a.py to 2.");
    assert_eq!(result["outcome"], "success", "{result:#}");
    assert_eq!(result["answer"], "Set x to 2.");
    assert_eq!(std::fs::read_to_string(p.join("a.py")).unwrap(), "x = 2\n");
    assert_eq!(mock.request_count(), 3, "asked anew once, not retried");
    assert_eq!(result["stats"]["provider_retries"], 0, "{result:#}");
    // The second request is the first plus the stand-in reply and the note.
    let requests = mock.requests();
    let (first, second) = (requests[0]["messages"].as_array().unwrap(), requests[1]["messages"].as_array().unwrap());
    assert_eq!(&second[..first.len()], &first[..]);
    assert_eq!(second.len(), first.len() + 2);
    assert_eq!(second[first.len()]["role"], "assistant");
    let note = second[first.len() + 1]["content"].as_str().unwrap();
    assert!(note.contains("could not be read") && note.contains("valid JSON"), "{note}");
    let events = events_until_finished(&mut c, &sid, 1);
    assert_eq!(intervention_kinds(&events), ["unreadable", "done_hint"], "{events:#?}");
    let nudge = events.iter().find(|e| e["type"] == "intervention").unwrap();
    assert!(nudge["message"].as_str().unwrap().contains("could not be read"));
}

#[test]
fn a_server_that_keeps_failing_to_read_the_call_ends_the_run_when_the_turns_run_out() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let unreadable = "Failed to parse tool call arguments as JSON";
    let mock = MockProvider::start((0..3).map(|_| Step::error(500, unreadable, "server_error")).collect());
    let mut c = daemon.nd();
    let mut cfg = config(&mock);
    cfg["max_turns"] = json!(3);
    let (_, _, result) = run_task(&mut c, &p, cfg, "Set x in a.py to 2.");
    assert_eq!(result["outcome"], "exhausted", "{result:#}");
    // One agent call a turn (the continue file's summary call comes after).
    let agent_calls = mock.requests().iter().filter(|r| r.get("tools").is_some()).count();
    assert_eq!(agent_calls, 3, "one call a turn");
}

#[test]
fn a_reply_repeating_itself_forever_is_cut_and_the_run_goes_on_to_its_answer() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    // A text that never ends, then a write_file call whose content never
    // ends: each stream is cut, the run told, and the answer ends it.
    let mock = MockProvider::start(vec![
        Step::repeating("Here is the plan:\n", "I will read the file.\n"),
        Step::repeating_call("w", "write_file", r#"{"file_path": "a.txt", "content": ""#, "x = 1\\n"),
        Step::text("I could not write it."),
    ]);
    let mut c = daemon.nd();
    let (sid, run, result) = run_task(&mut c, &p, config(&mock), "plan the change");
    assert_eq!(result["outcome"], "success", "{result:#}");
    assert_eq!(result["answer"], "I could not write it.");
    assert_eq!(mock.request_count(), 3);
    // Each stream was dropped by the daemon, not ended by the mock.
    swival_tests::wait_until("both endless streams cut", || mock.streams_cut() == 2);
    assert!(!p.join("a.txt").exists(), "a call cut off is not run");

    // The text is kept up to its first copy, then the nudge.
    let second = mock.requests()[1]["messages"].as_array().unwrap().clone();
    let n = second.len();
    assert_eq!(second[n - 2]["role"], "assistant");
    assert_eq!(second[n - 2]["content"], "Here is the plan:\nI will read the file.");
    let nudge = second[n - 1]["content"].as_str().unwrap();
    assert!(nudge.starts_with("Your last reply was cut off: it kept repeating the same text"), "{nudge}");
    let third = mock.texts_of(2);
    let nudge = third.last().unwrap();
    assert!(nudge.contains("the arguments of its write_file call kept repeating"), "{nudge}");
    let cut_call = mock.requests()[2]["messages"].as_array().unwrap().iter().any(|m| m["tool_calls"].is_array());
    assert!(!cut_call, "the cut call is not in the conversation");

    let events = events_until_finished(&mut c, &sid, 1);
    assert_eq!(intervention_kinds(&events), ["runaway", "runaway"], "{events:#?}");
    let tools: Vec<&Value> = events.iter().filter(|e| e["type"] == "intervention").map(|e| &e["tool"]).collect();
    assert_eq!(tools, [&json!(""), &json!("write_file")]);
    let report = c.ok("report/get", json!({"run_id": run}));
    let timeline = report["timeline"].as_array().unwrap();
    let cut = timeline.iter().filter(|e| e["type"] == "intervention" && e["kind"] == "runaway").count();
    assert_eq!(cut, 2, "{timeline:#?}");
    let lengths = timeline.iter().filter(|e| e["type"] == "llm_call" && e["finish_reason"] == "length").count();
    assert_eq!(lengths, 2, "a cut reply ends as one cut by the limit: {timeline:#?}");
}

#[test]
fn a_reply_of_forty_tool_calls_runs_sixteen_and_answers_every_other_id() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let calls: Vec<(String, Value)> =
        (0..40).map(|i| (format!("c{i}"), json!({"pattern": format!("f{i}*.py")}))).collect();
    let step = Step::tool_calls(calls.iter().map(|(id, args)| (id.as_str(), "list_files", args.clone())).collect());
    let mock = MockProvider::start(vec![step, Step::text("No such files.")]);
    let mut c = daemon.nd();
    let (sid, run, result) = run_task(&mut c, &p, config(&mock), "find the files");
    assert_eq!(result["outcome"], "success", "{result:#}");
    let results = mock.tool_results();
    assert_eq!(results.len(), 40, "every call id is answered");
    let capped = "error: not run: your reply held 40 tool calls and at most 16 run from one reply.";
    for (i, (id, _)) in calls.iter().enumerate() {
        assert_eq!(results[id].starts_with(capped), i >= 16, "{id}: {}", results[id]);
    }
    let events = events_until_finished(&mut c, &sid, 1);
    assert_eq!(intervention_kinds(&events), ["call_cap"], "{events:#?}");
    let report = c.ok("report/get", json!({"run_id": run}));
    assert_eq!(report["stats"]["tool_calls_total"], 40, "{}", report["stats"]);
    assert_eq!(report["stats"]["tool_calls_failed"], 24, "{}", report["stats"]);
    assert!(report["timeline"].as_array().unwrap().iter().any(|e| e["kind"] == "call_cap"));
}

#[test]
fn writing_a_file_back_and_forth_is_told_counted_and_its_repeat_refused() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "A\n").unwrap();
    let write =
        |id: &str, content: &str| Step::tool_call(id, "write_file", json!({"file_path": "a.txt", "content": content}));
    let mock = MockProvider::start(vec![
        Step::tool_call("r", "read_file", json!({"file_path": "a.txt"})),
        write("b1", "B\n"),
        write("a1", "A\n"),
        write("b2", "B\n"),
        write("a2", "A\n"),
        Step::text("a.txt now holds B."),
    ]);
    let mut c = daemon.nd();
    let (sid, run, result) = run_task(&mut c, &p, config(&mock), "Make a.txt hold B.");
    assert_eq!(result["outcome"], "success", "{result:#}");
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "B\n", "the last write was refused");
    let results = mock.tool_results();
    assert!(!results["b1"].contains("back to a content"), "{}", results["b1"]);
    for id in ["a1", "b2"] {
        assert!(results[id].contains("This put the file back to a content it already had earlier in this run"));
    }
    assert!(
        results["a2"]
            .starts_with("error: repeat-loop guard tripped — write_file was called with identical arguments 2 times."),
        "{}",
        results["a2"]
    );
    let events = events_until_finished(&mut c, &sid, 1);
    assert_eq!(intervention_kinds(&events), ["unchanged", "unchanged", "storm"], "{events:#?}");
    let report = c.ok("report/get", json!({"run_id": run}));
    let timeline = report["timeline"].as_array().unwrap();
    assert_eq!(timeline.iter().filter(|e| e["kind"] == "unchanged").count(), 2, "{timeline:#?}");
    assert_eq!(report["stats"]["stormed_calls"], 1);
}

#[test]
fn an_edit_with_old_string_equal_to_new_string_fails_at_once_and_its_repeat_is_refused() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.py"), "x = 1\n").unwrap();
    let same = json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 1"});
    let mock = MockProvider::start(vec![
        Step::tool_call("e1", "edit_file", same.clone()),
        Step::tool_call("e2", "edit_file", same),
        Step::text("I could not make the change."),
        Step::text("I could not make the change."),
    ]);
    let mut c = daemon.nd();
    let (sid, _, result) = run_task(&mut c, &p, config(&mock), "Set x to 2 in a.py.");
    assert_eq!(result["outcome"], "success", "{result:#}");
    let results = mock.tool_results();
    // The file is unread, yet no read is made for the model: the call is wrong whatever it holds.
    let first = &results["e1"];
    assert!(first.starts_with("error: edit_file: old_string and new_string are identical"), "{first}");
    assert!(!first.contains("It has now been read for you"), "{first}");
    let second = &results["e2"];
    assert!(
        second.starts_with("error: repeat-loop guard tripped — edit_file was called with identical arguments 2 times."),
        "{second}"
    );
    let events = events_until_finished(&mut c, &sid, 1);
    let kinds = intervention_kinds(&events);
    assert_eq!(&kinds[..2], ["unchanged", "storm"], "{events:#?}");
    assert_eq!(std::fs::read_to_string(p.join("a.py")).unwrap(), "x = 1\n");
}

#[test]
fn a_note_failing_the_same_way_again_and_again_ends_the_run_as_stuck() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    // Seen with a small model: `todo done` of a task never added, eleven times.
    let done = json!({"action": "done", "tasks": "nothing changed"});
    let mut steps: Vec<Step> = (0..7).map(|i| Step::tool_call(&format!("t{i}"), "todo", done.clone())).collect();
    steps.push(Step::text("hello.py is written."));
    let mock = MockProvider::start(steps);
    let mut c = daemon.nd();
    let (sid, _, result) = run_task(&mut c, &p, config(&mock), "Create hello.py");
    assert_eq!(result["answer"], "hello.py is written.", "{result:#}");
    let results = mock.tool_results();
    assert!(results["t1"].starts_with("error: no task matching"), "{results:#?}");
    assert!(results["t2"].contains("todo was called with identical arguments 3 times"), "{results:#?}");
    let kinds = intervention_kinds(&events_until_finished(&mut c, &sid, 1));
    assert_eq!(kinds.iter().filter(|k| *k == "storm").count(), 5, "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("stuck"), "{kinds:?}");
    assert_eq!(mock.request_count(), 8, "the last word is the eighth call");
}
