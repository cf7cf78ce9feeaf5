//! Swival's snapshot between runs and `/continue`: `session/checkpoint`
//! (set, refused while one is active, cancelled, kept across a restart,
//! cleared by a compaction before it), `session/restore` (the turns since
//! the checkpoint, or since the last user message, collapsed into one
//! summary written by a `summary` call) and `run/start` with `resume`.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{NdConn, TestEnv};

/// A session of `base` on `mock` (with `extra` config keys); its id.
fn session(c: &mut NdConn, base: &Path, mock: &MockProvider, extra: Value) -> String {
    let mut config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    c.ok("session/create", json!({"base_dir": base, "config": config}))["session_id"].as_str().unwrap().to_owned()
}

/// Run `task` on session `sid` to its end; its result.
fn run(c: &mut NdConn, sid: &str, task: &str) -> Value {
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}))
}

/// The stored conversation of `sid`.
fn messages(c: &mut NdConn, sid: &str) -> Vec<Value> {
    c.ok("session/get", json!({"session_id": sid}))["messages"].as_array().unwrap().clone()
}

/// `session/checkpoint` on `sid` with `params` added; its result.
fn checkpoint(c: &mut NdConn, sid: &str, params: Value) -> Value {
    let mut p = json!({"session_id": sid});
    p.as_object_mut().unwrap().extend(params.as_object().unwrap().clone());
    c.ok("session/checkpoint", p)
}

/// Script a turn reading `file`, then `answer`.
fn read_then_answer(mock: &MockProvider, id: &str, file: &str, answer: &str) {
    mock.push(Step::tool_call(id, "read_file", json!({"file_path": file})));
    mock.push(Step::text(answer));
}

#[test]
fn a_checkpoint_is_saved_refused_while_active_and_cancelled_once() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("first answer")]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &env.project("p"), &mock, json!({}));
    assert_eq!(run(&mut c, &sid, "first task")["outcome"], "success");
    let saved = checkpoint(&mut c, &sid, json!({"label": "explore"}));
    assert_eq!(saved, json!({"message": "checkpoint saved: explore", "active": "explore"}));
    let refused = checkpoint(&mut c, &sid, json!({"label": "other"}));
    assert_eq!(
        refused,
        json!({"message": "checkpoint already active (label='explore'). Cancel it first with /unsave.", "active": "explore"})
    );
    let cancelled = checkpoint(&mut c, &sid, json!({"cancel": true}));
    assert_eq!(cancelled, json!({"message": "checkpoint cancelled: explore"}));
    let none = checkpoint(&mut c, &sid, json!({"cancel": true}));
    assert_eq!(none, json!({"message": "no active checkpoint to cancel"}));
    let default = checkpoint(&mut c, &sid, json!({}));
    assert_eq!(default, json!({"message": "checkpoint saved: user-checkpoint", "active": "user-checkpoint"}));
    assert_eq!(mock.request_count(), 1, "a checkpoint calls no model");
}

#[test]
fn restore_collapses_the_turns_since_the_checkpoint_into_one_snapshot_message() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "the parser lives in src/parse.rs\n").unwrap();
    let mock = MockProvider::start(vec![Step::text("first answer")]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, json!({}));
    assert_eq!(run(&mut c, &sid, "first task")["outcome"], "success");
    let kept = messages(&mut c, &sid);
    checkpoint(&mut c, &sid, json!({"label": "dig"}));
    read_then_answer(&mock, "c1", "a.txt", "found it");
    assert_eq!(run(&mut c, &sid, "look around")["outcome"], "success");
    let before = messages(&mut c, &sid);
    mock.push(Step::text("They read a.txt: the parser is in src/parse.rs."));
    let r = c.ok("session/restore", json!({"session_id": sid}));
    let collapsed = before.len() - kept.len();
    assert_eq!(r["collapsed"], collapsed, "{r}");
    assert!(r["tokens_saved"].as_u64().unwrap() > 0, "{r}");
    let said = format!("snapshot: restored — collapsed {collapsed} turns, saved ~{} tokens", r["tokens_saved"]);
    assert_eq!(r["message"], said.as_str());
    let after = messages(&mut c, &sid);
    assert_eq!(after[..kept.len()], kept[..], "the messages before the checkpoint stay");
    assert_eq!(after.len(), kept.len() + 1, "{after:?}");
    let snapshot = &after[kept.len()];
    assert_eq!(snapshot["role"], "assistant");
    let expected = format!(
        "[snapshot: dig]\nThey read a.txt: the parser is in src/parse.rs.\n(collapsed {collapsed} turns, saved ~{} tokens)",
        r["tokens_saved"]
    );
    assert_eq!(snapshot["content"], expected.as_str());
    // The summary was asked of the model, shown the collapsed turns.
    let call = mock.requests().last().unwrap().clone();
    assert!(call["messages"][0]["content"].as_str().unwrap().starts_with("You summarise"), "{call}");
    let shown = call["messages"][1]["content"].as_str().unwrap();
    assert!(shown.contains("look around") && shown.contains("found it") && !shown.contains("first task"), "{shown}");
    let event = swival_tests::first_event(&daemon, "compaction", &sid);
    assert_eq!((&event["turn"], &event["strategy"]), (&json!(0), &json!("snapshot_restore")), "{event}");
    assert!(event.get("run_id").is_none(), "{event}");
    assert_eq!(checkpoint(&mut c, &sid, json!({"cancel": true}))["message"], "no active checkpoint to cancel");
    // The next run goes on from the collapsed conversation.
    mock.push(Step::text("still here"));
    assert_eq!(run(&mut c, &sid, "and now?")["answer"], "still here");
    let sent = mock.requests().last().unwrap()["messages"].to_string();
    assert!(sent.contains("[snapshot: dig]") && !sent.contains("found it"), "{sent}");
}

#[test]
fn restore_without_a_checkpoint_collapses_since_the_last_user_message() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(p.join("b.txt"), "beta\n").unwrap();
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, json!({}));
    read_then_answer(&mock, "c1", "a.txt", "first answer");
    assert_eq!(run(&mut c, &sid, "first task")["outcome"], "success");
    read_then_answer(&mock, "c2", "b.txt", "second answer");
    assert_eq!(run(&mut c, &sid, "second task")["outcome"], "success");
    let before = messages(&mut c, &sid);
    let task = before.iter().rposition(|m| m["content"] == "second task").unwrap();
    mock.push(Step::text("b.txt holds beta."));
    let r = c.ok("session/restore", json!({"session_id": sid}));
    assert_eq!(r["collapsed"], before.len() - task - 1, "{r}");
    let after = messages(&mut c, &sid);
    assert_eq!(after[..=task], before[..=task], "the task and all before it stay");
    assert_eq!(after.len(), task + 2, "{after:?}");
    let text = after[task + 1]["content"].as_str().unwrap();
    assert!(text.starts_with("[snapshot: investigation]\nb.txt holds beta.\n(collapsed "), "{text}");
}

#[test]
fn restore_with_nothing_after_the_point_changes_nothing_and_keeps_the_checkpoint() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("first answer")]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &env.project("p"), &mock, json!({}));
    let empty = c.ok("session/restore", json!({"session_id": sid}));
    assert_eq!(empty, json!({"message": "nothing to collapse", "collapsed": 0, "tokens_saved": 0}));
    assert_eq!(run(&mut c, &sid, "first task")["outcome"], "success");
    let before = messages(&mut c, &sid);
    // One answer after the task: nothing to collapse.
    let r = c.ok("session/restore", json!({"session_id": sid}));
    assert_eq!(r, json!({"message": "nothing to collapse", "collapsed": 0, "tokens_saved": 0}));
    checkpoint(&mut c, &sid, json!({"label": "here"}));
    let r = c.ok("session/restore", json!({"session_id": sid}));
    assert_eq!(r["message"], "nothing to collapse");
    assert_eq!(messages(&mut c, &sid), before);
    assert_eq!(mock.request_count(), 1, "no summary call");
    assert_eq!(checkpoint(&mut c, &sid, json!({}))["active"], "here", "the checkpoint stays");
}

#[test]
fn the_checkpoint_survives_a_restart() {
    let env = TestEnv::new();
    let mock = MockProvider::start(vec![Step::text("first answer")]);
    let mut daemon = env.start_daemon();
    let mut c = daemon.nd();
    let sid = session(&mut c, &env.project("p"), &mock, json!({}));
    assert_eq!(run(&mut c, &sid, "first task")["outcome"], "success");
    let kept = messages(&mut c, &sid);
    checkpoint(&mut c, &sid, json!({"label": "kept"}));
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    daemon.wait_exit();
    drop(c);

    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let again = checkpoint(&mut c, &sid, json!({"label": "new"}));
    assert_eq!(again["message"], "checkpoint already active (label='kept'). Cancel it first with /unsave.");
    mock.push(Step::text("second answer"));
    mock.push(Step::text("third answer"));
    run(&mut c, &sid, "second task");
    run(&mut c, &sid, "third task");
    mock.push(Step::text("two more tasks were answered"));
    let r = c.ok("session/restore", json!({"session_id": sid}));
    assert_eq!(r["collapsed"], 4, "{r}");
    let after = messages(&mut c, &sid);
    assert_eq!(after[..kept.len()], kept[..]);
    assert!(after[kept.len()]["content"].as_str().unwrap().starts_with("[snapshot: kept]\n"), "{after:?}");
}

#[test]
fn a_compaction_that_changes_a_message_before_the_checkpoint_clears_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let long: String = (0..40).map(|i| format!("line {i} of a long file with words in it\n")).collect();
    std::fs::write(p.join("long.txt"), &long).unwrap();
    std::fs::write(p.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(p.join("b.txt"), "beta\n").unwrap();
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, json!({}));
    read_then_answer(&mock, "c1", "long.txt", "read it");
    assert_eq!(run(&mut c, &sid, "first task")["outcome"], "success");
    mock.push(Step::tool_call("c2", "read_file", json!({"file_path": "a.txt"})));
    read_then_answer(&mock, "c3", "b.txt", "read both");
    assert_eq!(run(&mut c, &sid, "second task")["outcome"], "success");
    checkpoint(&mut c, &sid, json!({"label": "late"}));
    // The long result, outside the last six messages, is cut.
    let r = c.ok("session/compact", json!({"session_id": sid}));
    assert_eq!(r["strategy"], "truncate_tool_results", "{r}");
    let saved = checkpoint(&mut c, &sid, json!({"label": "fresh"}));
    assert_eq!(saved["message"], "checkpoint saved: fresh", "the stale checkpoint was cleared: {saved}");
}

#[test]
fn a_resume_run_sends_no_new_user_message_and_goes_on_with_the_conversation() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "alpha\n").unwrap();
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock, json!({"max_turns": 1}));
    let refused = c.call("run/start", json!({"session_id": sid, "task": "(continued)", "resume": true}));
    assert_eq!(refused["error"]["code"], -32005, "nothing to resume yet: {refused}");
    // The turn budget runs out after the tool call.
    mock.push(Step::tool_call("c1", "read_file", json!({"file_path": "a.txt"})));
    assert_eq!(run(&mut c, &sid, "read a.txt")["outcome"], "exhausted");
    let before = messages(&mut c, &sid);
    let requests = mock.request_count();
    mock.push(Step::text("alpha, as read"));
    let run_id = c.ok("run/start", json!({"session_id": sid, "task": "(continued)", "resume": true}))["run_id"].clone();
    let r = c.ok("run/wait", json!({"run_id": run_id}));
    assert_eq!((&r["outcome"], &r["answer"]), (&json!("success"), &json!("alpha, as read")), "{r}");
    let sent = mock.requests()[requests].clone();
    let sent = sent["messages"].as_array().unwrap();
    assert_eq!(sent.len(), before.len(), "the conversation as it was, nothing added: {sent:?}");
    assert_eq!(sent.last().unwrap()["role"], before.last().unwrap()["role"]);
    assert_eq!(sent.last().unwrap()["content"], before.last().unwrap()["content"]);
    assert!(!Value::from(sent.clone()).to_string().contains("(continued)"), "{sent:?}");
    let after = messages(&mut c, &sid);
    assert_eq!(after[..before.len()], before[..]);
    assert_eq!(after.len(), before.len() + 1, "only the answer is added: {after:?}");
    assert_eq!(after.last().unwrap()["content"], "alpha, as read");
}

#[test]
fn a_failed_summary_call_changes_nothing_and_says_why() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("first answer"), Step::text("second answer")]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &env.project("p"), &mock, json!({}));
    assert_eq!(run(&mut c, &sid, "first task")["outcome"], "success");
    checkpoint(&mut c, &sid, json!({"label": "mark"}));
    assert_eq!(run(&mut c, &sid, "second task")["outcome"], "success");
    let before = messages(&mut c, &sid);
    mock.push(Step::error(400, "no summaries today", "invalid_request_error"));
    let r = c.ok("session/restore", json!({"session_id": sid}));
    assert_eq!((&r["collapsed"], &r["tokens_saved"]), (&json!(0), &json!(0)), "{r}");
    let message = r["message"].as_str().unwrap();
    assert!(message.starts_with("nothing collapsed: the summary call failed: "), "{message}");
    assert!(message.contains("no summaries today"), "{message}");
    assert_eq!(messages(&mut c, &sid), before);
    assert_eq!(checkpoint(&mut c, &sid, json!({}))["active"], "mark", "the checkpoint stays");
}

#[test]
fn a_run_during_a_restore_is_refused_as_busy() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("first answer"), Step::text("second answer")]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &env.project("p"), &mock, json!({}));
    run(&mut c, &sid, "first task");
    checkpoint(&mut c, &sid, json!({}));
    run(&mut c, &sid, "second task");
    let gate = swival_tests::mock::Gate::new();
    mock.push(Step::gated(Step::text("a summary"), &gate));
    let mut restoring = daemon.nd();
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "session/restore", "params": {"session_id": sid}});
    restoring.send_raw(request.to_string().as_bytes());
    mock.wait_for_requests(3);
    let busy = c.call("run/start", json!({"session_id": sid, "task": "meanwhile"}));
    assert_eq!(busy["error"]["code"], -32003, "{busy}");
    let busy = c.call("session/checkpoint", json!({"session_id": sid, "cancel": true}));
    assert_eq!(busy["error"]["code"], -32003, "{busy}");
    gate.open();
    let reply = restoring.read();
    assert_eq!(reply["result"]["collapsed"], 2, "{reply}");
}
