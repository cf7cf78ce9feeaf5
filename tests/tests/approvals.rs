//! `commands = "ask"`: a command waits for a user's approval of its bucket,
//! asked as an `approval_requested` event and answered with `run/approve`
//! by any client; no answer in time is a rejection (fail closed).

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{Daemon, NdConn, TestEnv};

fn create(c: &mut NdConn, base: &Path, mock: &MockProvider, extra: Value) -> String {
    let mut cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "commands": "ask"});
    for (k, v) in extra.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    let r = c.ok("session/create", json!({"base_dir": base, "config": cfg}));
    r["session_id"].as_str().unwrap().to_owned()
}

/// Follow `session` from seq 1, answering each approval with the next of
/// `answers`, until the run finishes; the events seen.
fn run_answering(daemon: &Daemon, session: &str, answers: &[&str]) -> Vec<Value> {
    let mut answers = answers.iter();
    let (mut c, mut other) = (daemon.nd(), daemon.nd());
    c.ok("session/subscribe", json!({"session_id": session, "from_seq": 1}));
    other.ok("run/start", json!({"session_id": session, "task": "t"}));
    swival_tests::read_until_finished(&mut c, |event| {
        if event["type"] == "approval_requested" {
            let decision = answers.next().unwrap_or_else(|| panic!("asked more than expected: {event}"));
            let id = &event["approval_id"];
            let r = other.ok("run/approve", json!({"session_id": session, "approval_id": id, "decision": decision}));
            assert_eq!(r["accepted"], true, "{r}");
        }
    })
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

#[test]
fn a_rejected_command_does_not_run_and_the_run_goes_on() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "run_command", json!({"command": ["touch", "made-by-the-model"]})),
        Step::text("I could not run it."),
    ]);
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, &mock, json!({}));
    let events = run_answering(&daemon, &sid, &["reject_once"]);
    let asked = of_type(&events, "approval_requested");
    assert_eq!(asked.len(), 1, "{events:?}");
    assert_eq!(asked[0]["bucket"], "touch");
    assert_eq!(asked[0]["command"], "touch made-by-the-model");
    assert_eq!(asked[0]["tool_call_id"], "c1");
    assert_eq!(asked[0]["argv"], json!(["touch", "made-by-the-model"]), "the exact argv");
    for absent in ["reason", "changed_files", "every_time"] {
        assert!(asked[0].get(absent).is_none(), "{absent} is left out when there is none: {}", asked[0]);
    }
    assert_eq!(of_type(&events, "approval_resolved")[0]["decision"], "reject_once");
    assert!(!p.join("made-by-the-model").exists(), "a rejected command ran");
    let result = &mock.tool_results()["c1"];
    assert!(result.starts_with("error: user denied command bucket 'touch'"), "{result}");
    assert_eq!(events.last().unwrap()["outcome"], "success");
}

#[test]
fn allow_always_covers_the_same_command_on_other_project_paths_and_approved_buckets_are_never_asked() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    // Files of the project: "always" for touching one covers touching the
    // other (a new file's name would be a word never approved).
    std::fs::write(p.join("one"), "").unwrap();
    std::fs::write(p.join("two"), "").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "run_command", json!({"command": ["touch", "./one"]})),
        Step::tool_call("c2", "run_command", json!({"command": ["touch", "./two"]})),
        Step::tool_call("c3", "run_command", json!({"command": ["ls"]})),
        // An option nobody approved: asked again, naming it.
        Step::tool_call("c4", "run_command", json!({"command": ["touch", "--reference=/etc/passwd", "./one"]})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, &mock, json!({"approved_buckets": ["ls"]}));
    let events = run_answering(&daemon, &sid, &["allow_always", "reject_once"]);
    let asked = of_type(&events, "approval_requested");
    assert_eq!(asked.len(), 2, "{events:?}");
    assert_eq!(asked[1]["tool_call_id"], "c4");
    assert_eq!(asked[1]["unseen_args"], json!(["--reference=/etc/passwd"]), "{}", asked[1]);
    assert!(p.join("one").exists() && p.join("two").exists());
    let results = mock.tool_results();
    assert!(results["c3"].contains("one"), "{}", results["c3"]);
    assert!(results["c4"].starts_with("error: user denied"), "{}", results["c4"]);
}

#[test]
fn no_answer_in_time_is_a_rejection() {
    let env = TestEnv::new();
    env.daemon_settings("approval_timeout_s = 0.3");
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "run_command", json!({"command": ["touch", "late"]})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, &mock, json!({}));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    let r = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(!p.join("late").exists());
    assert!(mock.tool_results()["c1"].starts_with("error: user denied"));
    let events = swival_tests::events_until_finished(&mut c, &sid, 1);
    let resolved = of_type(&events, "approval_resolved");
    assert_eq!((resolved[0]["decision"].as_str(), resolved[0]["by"].as_str()), (Some("reject_once"), Some("timeout")));
}

#[test]
fn an_answer_to_nothing_waiting_is_not_accepted_and_a_bad_decision_is_named() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let sid = create(&mut c, &p, &mock, json!({}));
    let r = c.ok("run/approve", json!({"session_id": sid, "approval_id": "a_0", "decision": "allow_once"}));
    assert_eq!(r["accepted"], false);
    let bad = c.call("run/approve", json!({"session_id": sid, "approval_id": "a_0", "decision": "maybe"}));
    assert!(bad["error"]["data"].as_str().unwrap().contains("unknown variant `maybe`"), "{bad}");
}

#[test]
fn swivalctl_run_without_a_terminal_rejects_and_says_so() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call("c1", "run_command", json!({"command": ["touch", "x"]})),
        Step::text("done without it"),
    ]);
    let out = env
        .swivalctl(&daemon, &p)
        .args(["run", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m"])
        .args(["--commands", "ask", "make x"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("`touch x` needs approval"), "{stderr}");
    assert!(!p.join("x").exists());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "done without it");
}

#[test]
fn an_after_llm_call_hook_can_ask_the_user_before_any_tool_runs() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let hook = swival_tests::script(
        &p,
        "ask.py",
        "#!/usr/bin/env python3\nimport sys, json\nreq = json.load(sys.stdin)\n\
         print(json.dumps({'ask': [c['id'] for c in req['assistant']['tool_calls']], 'reason': 'look first'}))\n",
    );
    let mock = MockProvider::start(vec![
        Step::tool_call("w1", "write_file", json!({"file_path": "a.txt", "content": "a"})),
        Step::tool_call("w2", "write_file", json!({"file_path": "b.txt", "content": "b"})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let hooks = json!([{"point": "after_llm_call", "command": hook}]);
    let sid = create(&mut c, &p, &mock, json!({"commands": "none", "hooks": hooks}));
    let events = run_answering(&daemon, &sid, &["allow_always"]);
    let asked = of_type(&events, "approval_requested");
    assert_eq!(asked.len(), 1, "allow_always holds for the same tool and reason: {events:?}");
    assert_eq!(asked[0]["bucket"], "write_file (hook: look first)");
    assert!(p.join("a.txt").exists() && p.join("b.txt").exists());
}
