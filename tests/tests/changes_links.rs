//! A run's change record against commands that play with the tree: a
//! directory swapped for a symlink (or a link for a directory) is recorded
//! as what it is, with the run's file-tool writes beside it, and `undo`
//! names every file it did not put back and why.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{NdConn, TestEnv};

/// A session of `base` on `mock` that may run `sh`; its id.
fn session(c: &mut NdConn, base: &Path, mock: &MockProvider) -> String {
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true,
        "allowed_commands": ["sh"]});
    c.ok("session/create", json!({"base_dir": base, "config": config}))["session_id"].as_str().unwrap().to_owned()
}

/// Run `task` on `sid` to its end; its run id.
fn run(c: &mut NdConn, sid: &str, task: &str) -> Value {
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    run
}

fn paths(changes: &Value) -> Vec<String> {
    changes["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn a_directory_swapped_for_a_symlink_keeps_the_runs_record_and_undo_says_what_it_left() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::create_dir(p.join("src")).unwrap();
    std::fs::write(p.join("src/lib.txt"), "library\n").unwrap();
    std::fs::write(p.join("keep.txt"), "kept\n").unwrap();
    let elsewhere = env.project("elsewhere");
    std::fs::write(elsewhere.join("lib.txt"), "not ours\n").unwrap();
    let swap = format!("rm -rf src && ln -s {} src", elsewhere.display());
    let mock = MockProvider::start(vec![
        Step::tool_call("w", "write_file", json!({"file_path": "made.txt", "content": "made\n"})),
        Step::tool_call("c", "run_command", json!({"command": ["sh", "-c", swap]})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock);
    let run_id = run(&mut c, &sid, "swap it");
    let changes = c.ok("run/changes", json!({"run_id": run_id}));
    let files = paths(&changes);
    assert!(files.contains(&"made.txt".to_owned()), "{changes:#}");
    assert!(files.contains(&"src".to_owned()), "the link is recorded as itself: {changes:#}");
    assert!(files.contains(&"src/lib.txt".to_owned()), "the file under the old directory: {changes:#}");
    let undo = c.ok("run/revert", json!({"run_id": run_id}));
    assert_eq!(undo["applied"], true, "{undo:#}");
    let mut put_back: Vec<&str> = undo["reverted"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    put_back.sort();
    assert_eq!(put_back, ["made.txt", "src", "src/lib.txt"], "{undo:#}");
    assert!(!p.join("made.txt").exists());
    let meta = std::fs::symlink_metadata(p.join("src")).unwrap();
    assert!(meta.is_dir(), "the directory is back");
    assert_eq!(std::fs::read_to_string(p.join("src/lib.txt")).unwrap(), "library\n");
    assert_eq!(std::fs::read_to_string(elsewhere.join("lib.txt")).unwrap(), "not ours\n");
}

#[test]
fn a_link_replaced_by_a_directory_is_recorded_and_put_back_as_a_link() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let elsewhere = env.project("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, p.join("lib")).unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call(
            "c",
            "run_command",
            json!({"command": ["sh", "-c", "rm lib && mkdir lib && echo x > lib/a.txt"]}),
        ),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock);
    let run_id = run(&mut c, &sid, "make it a directory");
    let files = paths(&c.ok("run/changes", json!({"run_id": run_id})));
    assert_eq!(files, ["lib", "lib/a.txt"]);
    let undo = c.ok("run/revert", json!({"run_id": run_id}));
    assert_eq!(undo["applied"], true, "{undo:#}");
    assert_eq!(std::fs::read_link(p.join("lib")).unwrap(), elsewhere);
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none(), "nothing written through the link");
}

#[test]
fn undo_names_each_file_it_could_not_put_back_and_why_and_puts_back_the_rest() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::create_dir(p.join("src")).unwrap();
    std::fs::write(p.join("src/old.txt"), "old\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_calls(vec![
            ("d", "delete_file", json!({"file_path": "src/old.txt"})),
            ("w", "write_file", json!({"file_path": "top.txt", "content": "new\n"})),
        ]),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock);
    let run_id = run(&mut c, &sid, "delete src/old.txt and write top.txt");
    // After the run, `src` becomes a link out of the project: putting
    // `src/old.txt` back would write through it.
    let elsewhere = env.project("elsewhere");
    std::fs::remove_dir_all(p.join("src")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, p.join("src")).unwrap();
    let out = env.swivalctl(&daemon, &p).args(["undo", run_id.as_str().unwrap(), "--force"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "a partial undo fails: {text}");
    assert!(text.contains("1 file put back") && text.contains("top.txt"), "{text}");
    assert!(text.contains("1 file could not be put back") && text.contains("src/old.txt: "), "{text}");
    assert!(!p.join("top.txt").exists());
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none(), "nothing written through the link");
    // The undo is recorded with what it did, so it can be redone.
    let redo = text.split("swivalctl undo ").nth(1).and_then(|t| t.split(')').next()).expect("the undo's id");
    let undo = c.ok("run/changes", json!({"run_id": redo}));
    assert_eq!(paths(&undo), ["top.txt"], "{undo:#}");
}

#[test]
fn a_command_waiting_for_approval_does_not_hold_the_projects_command_turn() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let asks = MockProvider::start(vec![
        Step::tool_call("a", "run_command", json!({"command": ["sh", "-c", "echo a > a.txt"]})),
        Step::text("asked"),
    ]);
    let mut c = daemon.nd();
    let cfg = json!({"provider": "generic", "base_url": asks.base_url(), "model": "m", "commands": "ask"});
    let waiting =
        c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].as_str().unwrap().to_owned();
    let mut events = daemon.nd();
    events.ok("session/subscribe", json!({"session_id": waiting, "from_seq": 1}));
    let asked_run = c.ok("run/start", json!({"session_id": waiting, "task": "t"}))["run_id"].clone();
    let approval = loop {
        let event = events.read();
        if event["params"]["result"]["type"] == "approval_requested" {
            break event["params"]["result"]["approval_id"].clone();
        }
    };
    // While the user decides, another session's command in the project
    // runs and is recorded.
    let other = MockProvider::start(vec![
        Step::tool_call("b", "run_command", json!({"command": ["sh", "-c", "echo b > b.txt"]})),
        Step::text("ran"),
    ]);
    let sid = session(&mut c, &p, &other);
    let run_id = run(&mut c, &sid, "write b");
    assert_eq!(paths(&c.ok("run/changes", json!({"run_id": run_id}))), ["b.txt"]);
    let r = c.ok("run/approve", json!({"session_id": waiting, "approval_id": approval, "decision": "allow_once"}));
    assert_eq!(r["accepted"], true, "{r}");
    assert_eq!(c.ok("run/wait", json!({"run_id": asked_run}))["outcome"], "success");
    assert_eq!(paths(&c.ok("run/changes", json!({"run_id": asked_run}))), ["a.txt"]);
}

#[test]
fn a_file_tool_call_starts_no_git_process_and_its_change_is_recorded() {
    let env = TestEnv::new();
    // `git` on the daemon's PATH is a wrapper logging each start.
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("git"))
        .find(|g| g.is_file())
        .expect("git on PATH");
    let bin = env.root().join("logged-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = env.root().join("git.log");
    let body = format!("#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n", log.display(), real.display());
    swival_tests::script(&bin, "git", &body);
    let mut cmd = env.command(&swival_tests::bin("swivald"));
    let path =
        std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())));
    cmd.env("PATH", path.unwrap());
    let daemon = swival_tests::Daemon::spawn(&env, cmd, &[]).unwrap();
    let p = env.project("p");
    std::fs::write(p.join("notes.txt"), "one\ntwo\n").unwrap();
    std::fs::write(p.join("old.txt"), "old\n").unwrap();
    let mock = MockProvider::start(vec![
        // A first run opens the project's store and takes its snapshot.
        Step::tool_call("c", "run_command", json!({"command": ["sh", "-c", "true"]})),
        Step::text("ready"),
        Step::tool_calls(vec![
            ("w", "write_file", json!({"file_path": "made.txt", "content": "made\n"})),
            ("e", "edit_file", json!({"file_path": "notes.txt", "old_string": "two", "new_string": "TWO"})),
            ("m", "write_file", json!({"file_path": "moved.txt", "move_from": "made.txt"})),
            ("d", "delete_file", json!({"file_path": "old.txt"})),
        ]),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock);
    run(&mut c, &sid, "warm up");
    let started = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!started.is_empty(), "the wrapper is the daemon's git");
    let run_id = run(&mut c, &sid, "write made.txt, edit notes.txt, move made.txt to moved.txt, delete old.txt");
    let after = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(after, started, "git started during a run of file tools");
    let changes = c.ok("run/changes", json!({"run_id": run_id}));
    assert_eq!(paths(&changes), ["moved.txt", "notes.txt", "old.txt"], "{changes:#}");
    let undo = c.ok("run/revert", json!({"run_id": run_id}));
    assert_eq!(undo["applied"], true, "{undo:#}");
    assert_eq!(std::fs::read_to_string(p.join("notes.txt")).unwrap(), "one\ntwo\n");
    assert_eq!(std::fs::read_to_string(p.join("old.txt")).unwrap(), "old\n");
    assert!(!p.join("moved.txt").exists() && !p.join("made.txt").exists());
}

#[test]
fn file_tools_named_at_a_fifo_a_link_out_or_under_a_linked_parent_record_without_hanging_or_following() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let elsewhere = env.project("elsewhere");
    std::fs::write(elsewhere.join("secret.txt"), "SECRET-OUTSIDE\n").unwrap();
    let plant = format!("mkfifo pipe && ln -s {out}/secret.txt link && ln -s {out} sub", out = elsewhere.display());
    let mock = MockProvider::start(vec![
        Step::tool_call("c", "run_command", json!({"command": ["sh", "-c", plant]})),
        Step::tool_call("w1", "write_file", json!({"file_path": "pipe", "content": "x\n"})),
        Step::tool_call("d1", "delete_file", json!({"file_path": "pipe"})),
        Step::tool_call("w2", "write_file", json!({"file_path": "link", "content": "y\n"})),
        Step::tool_call("w3", "write_file", json!({"file_path": "sub/new.txt", "content": "z\n"})),
        Step::tool_call("w4", "write_file", json!({"file_path": "plain.txt", "content": "plain\n"})),
        Step::text("done"),
    ]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock);
    // Every bracket ends: a FIFO is looked at without blocking.
    let run_id = run(&mut c, &sid, "plant and write");
    let changes = c.ok("run/changes", json!({"run_id": run_id}));
    assert!(paths(&changes).contains(&"plain.txt".to_owned()), "{changes:#}");
    assert!(!changes.to_string().contains("SECRET-OUTSIDE"), "nothing beyond a link is read: {changes:#}");
    assert!(!elsewhere.join("new.txt").exists(), "nothing written beyond a linked parent");
    assert_eq!(std::fs::read_to_string(elsewhere.join("secret.txt")).unwrap(), "SECRET-OUTSIDE\n");
}
