//! What a run changed, seen and undone: `run/changes` / `swivalctl diff`
//! lists every file a run's tools and commands created, modified, deleted
//! or renamed, and `run/revert` / `swivalctl undo` puts the tree back byte
//! for byte with its modes, refusing (and changing nothing) when a file
//! changed since; an undo can be undone. Real daemon, mock provider, the
//! model's calls scripted.

use serde_json::{json, Value};
use sha2::Digest as _;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{NdConn, TestEnv};

/// Every file under `dir` (but `.swival/` and `.git/`): its kind, content
/// hash (or link target) and permission bits.
fn tree_state(dir: &Path) -> BTreeMap<String, (String, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            let rel = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if rel == ".swival" || rel == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else if meta.file_type().is_symlink() {
                out.insert(rel, (format!("link:{}", std::fs::read_link(&path).unwrap().display()), 0));
            } else {
                let hash = hex(&sha2::Sha256::digest(std::fs::read(&path).unwrap()));
                out.insert(rel, (hash, meta.permissions().mode() & 0o7777));
            }
        }
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A session of `base` on `mock` that may run `sh`; its id.
fn session(c: &mut NdConn, base: &Path, mock: &MockProvider) -> String {
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true,
        "allowed_commands": ["sh"]});
    c.ok("session/create", json!({"base_dir": base, "config": config}))["session_id"].as_str().unwrap().to_owned()
}

/// Run `task` on `sid` to its end; its run id.
fn run(c: &mut NdConn, sid: &str, task: &str) -> String {
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    run.as_str().unwrap().to_owned()
}

/// A project with files to edit, delete and move, one of them 0600.
fn project(env: &TestEnv) -> std::path::PathBuf {
    let p = env.project("p");
    std::fs::write(p.join("edit.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(p.join("gone.txt"), "delete me\n").unwrap();
    std::fs::write(p.join("move.txt"), "move me\n").unwrap();
    std::fs::write(p.join("gen.txt"), "generated v1\n").unwrap();
    std::fs::write(p.join("secret.env"), "KEY=1\n").unwrap();
    std::fs::set_permissions(p.join("secret.env"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::create_dir(p.join("src")).unwrap();
    std::fs::write(p.join("src/tool.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(p.join("src/tool.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The six changes: write, edit, delete, move, and a command that
/// rewrites a file and creates a binary one.
fn script_six(mock: &MockProvider) {
    mock.push(Step::tool_calls(vec![
        ("w", "write_file", json!({"file_path": "new/made.txt", "content": "made by the run\n"})),
        ("e", "edit_file", json!({"file_path": "edit.txt", "old_string": "two", "new_string": "TWO"})),
        ("r", "read_file", json!({"file_path": "gone.txt"})),
        ("d", "delete_file", json!({"file_path": "gone.txt"})),
        ("m", "write_file", json!({"file_path": "moved.txt", "move_from": "move.txt"})),
    ]));
    let sh = "printf 'generated v2\\n' > gen.txt; head -c 4096 /dev/urandom > bin.dat; printf 'KEY=2\\n' > secret.env";
    mock.push(Step::tool_call("c", "run_command", json!({"command": ["sh", "-c", sh]})));
    mock.push(Step::text("done"));
}

/// A session of a fresh [`project`] that ran the six changes: the daemon
/// and mock (kept alive), the project, its tree before, a connection, the
/// session and the run.
#[allow(clippy::type_complexity)]
fn six_change_run(
    env: &TestEnv,
) -> (swival_tests::Daemon, MockProvider, std::path::PathBuf, BTreeMap<String, (String, u32)>, NdConn, String, String) {
    let daemon = env.start_daemon();
    let p = project(env);
    let before = tree_state(&p);
    let mock = MockProvider::start(vec![]);
    script_six(&mock);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock);
    let run_id = run(&mut c, &sid, "change things");
    (daemon, mock, p, before, c, sid, run_id)
}

fn swivalctl(env: &TestEnv, daemon: &swival_tests::Daemon, dir: &Path, args: &[&str]) -> std::process::Output {
    env.swivalctl(daemon, dir).args(args).output().unwrap()
}

#[test]
fn diff_lists_what_tools_and_commands_changed_and_undo_restores_the_tree_byte_for_byte() {
    let env = TestEnv::new();
    let (daemon, mock, p, before, mut c, _sid, run_id) = six_change_run(&env);
    let after = tree_state(&p);
    assert_ne!(before, after);
    assert!(!p.join("gone.txt").exists(), "{:#?}", mock.tool_results());

    let changes = c.ok("run/changes", json!({"run_id": run_id}));
    let kinds: BTreeMap<String, String> = changes["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_owned(), f["kind"].as_str().unwrap().to_owned()))
        .collect();
    let expected: BTreeMap<String, String> = [
        ("new/made.txt", "created"),
        ("edit.txt", "modified"),
        ("gone.txt", "deleted"),
        ("moved.txt", "renamed"),
        ("gen.txt", "modified"),
        ("bin.dat", "created"),
        ("secret.env", "modified"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .collect();
    assert_eq!(kinds, expected, "{changes:#}");
    let file = |path: &str| changes["files"].as_array().unwrap().iter().find(|f| f["path"] == path).unwrap().clone();
    assert_eq!(file("moved.txt")["old_path"], "move.txt");
    assert_eq!(file("edit.txt")["by"][0]["tool"], "edit_file");
    assert_eq!(file("gen.txt")["by"][0]["tool"], "run_command");
    assert!(file("gen.txt")["by"][0]["label"].as_str().unwrap().contains("sh -c"));
    assert!(file("edit.txt")["diff"].as_str().unwrap().contains("-two\n+TWO\n"), "{changes:#}");
    assert_eq!(file("bin.dat")["binary"], true);
    assert!(file("bin.dat").get("diff").is_none());
    assert_eq!(file("secret.env")["mode_before"], json!(0o100600));

    // The report lists them too.
    let report = c.ok("report/get", json!({"run_id": run_id}));
    assert_eq!(report["changes"].as_array().unwrap().len(), 7, "{report:#}");

    // The CLI shows the same, with the diffs.
    let out = swivalctl(&env, &daemon, &p, &["diff", &run_id]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("7 files changed") && text.contains("move.txt → moved.txt") && text.contains("+TWO"),
        "{text}"
    );

    // Undo puts the tree back exactly, modes included.
    let out = swivalctl(&env, &daemon, &p, &["undo", &run_id, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let undo: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(undo["applied"], true);
    assert_eq!(tree_state(&p), before);
    assert!(!p.join("new").exists(), "the directory the run made is gone with its file");

    // Undoing the undo brings the run's result back.
    let redo = c.ok("run/revert", json!({"run_id": undo["revert_id"]}));
    assert_eq!(redo["applied"], true, "{redo:#}");
    assert_eq!(tree_state(&p), after);

    // Undone and redone, the run's changes are in the tree: undoing it
    // again undoes the redo.
    let again = c.ok("run/revert", json!({"run_id": run_id}));
    assert_eq!((&again["applied"], &again["id"]), (&json!(true), &redo["revert_id"]), "{again:#}");
    assert_eq!(tree_state(&p), before);
    // Now its last undo stands: refused, naming the undo that brings the
    // changes back, and that advice holds.
    let refused = c.call("run/revert", json!({"run_id": run_id}));
    let message = refused["error"]["message"].as_str().unwrap().to_owned();
    let last = again["revert_id"].as_str().unwrap();
    assert!(message.contains("already undone") && message.ends_with(&format!("`swivalctl undo {last}`")), "{message}");
    assert_eq!(c.ok("run/revert", json!({"run_id": last}))["applied"], true);
    assert_eq!(tree_state(&p), after);
}

#[test]
fn a_file_changed_after_the_run_makes_undo_refuse_and_force_reverts_the_rest() {
    let env = TestEnv::new();
    let (daemon, _mock, p, before, mut c, sid, run_id) = six_change_run(&env);
    std::fs::write(p.join("edit.txt"), "the user's own edit\n").unwrap();
    let after_user = tree_state(&p);

    let out = swivalctl(&env, &daemon, &p, &["undo", "--session", &sid]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("edit.txt: changed outside swivald"), "{text}");
    assert!(text.contains("nothing was changed"), "{text}");
    assert_eq!(tree_state(&p), after_user, "a refused undo changes nothing");

    let forced = c.ok("run/revert", json!({"run_id": run_id, "force": true}));
    assert_eq!(forced["applied"], true);
    assert_eq!(forced["conflicts"][0]["path"], "edit.txt");
    let mut expected = before.clone();
    expected.insert("edit.txt".into(), after_user["edit.txt"].clone());
    assert_eq!(tree_state(&p), expected, "everything but the user's file is back");
}

#[test]
fn undoing_one_sessions_run_leaves_another_sessions_files_as_it_left_them() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let (ma, mb) = (MockProvider::start(vec![]), MockProvider::start(vec![]));
    let gate = swival_tests::mock::Gate::new();
    // A writes and edits, waits, then runs a command; B meanwhile writes and runs its own command.
    ma.push(Step::tool_calls(vec![
        ("a1", "write_file", json!({"file_path": "a.txt", "content": "from A\n"})),
        ("a2", "edit_file", json!({"file_path": "edit.txt", "old_string": "one", "new_string": "ONE"})),
    ]));
    ma.push(Step::gated(
        Step::tool_call("a3", "run_command", json!({"command": ["sh", "-c", "echo A > a.out"]})),
        &gate,
    ));
    ma.push(Step::text("A done"));
    mb.push(Step::tool_call("b1", "write_file", json!({"file_path": "b.txt", "content": "from B\n"})));
    mb.push(Step::tool_call("b2", "run_command", json!({"command": ["sh", "-c", "echo B > b.out"]})));
    mb.push(Step::text("B done"));
    let mut c = daemon.nd();
    let (sa, sb) = (session(&mut c, &p, &ma), session(&mut c, &p, &mb));
    let ra = c.ok("run/start", json!({"session_id": sa, "task": "A"}))["run_id"].clone();
    ma.wait_for_requests(2);
    let rb = run(&mut c, &sb, "B");
    gate.open();
    assert_eq!(c.ok("run/wait", json!({"run_id": ra}))["outcome"], "success");
    let b_left = tree_state(&p);

    let undo = c.ok("run/revert", json!({"run_id": ra}));
    assert_eq!(undo["applied"], true, "{undo:#}");
    let now = tree_state(&p);
    for f in ["b.txt", "b.out"] {
        assert_eq!(now.get(f), b_left.get(f), "{f} is B's and stays");
    }
    for f in ["a.txt", "a.out"] {
        assert!(!now.contains_key(f), "{f} was A's and is gone");
    }
    assert_eq!(std::fs::read_to_string(p.join("edit.txt")).unwrap(), "one\ntwo\nthree\n");
    let b_changes = c.ok("run/changes", json!({"run_id": rb}));
    assert_eq!(b_changes["files"].as_array().unwrap().len(), 2, "{b_changes:#}");
}

#[test]
fn a_project_outside_git_with_ignored_trees_and_a_huge_file_is_recorded_without_copying_it() {
    let env = TestEnv::new();
    env.daemon_settings("snapshot_max_file_bytes = 1048576\n");
    let daemon = env.start_daemon();
    let p = env.project("big");
    std::fs::create_dir_all(p.join("node_modules/dep")).unwrap();
    for i in 0..2000 {
        std::fs::write(p.join(format!("node_modules/dep/f{i}.js")), format!("module {i}\n")).unwrap();
    }
    std::fs::write(p.join(".gitignore"), "node_modules/\n").unwrap();
    std::fs::write(p.join("keep.txt"), "keep\n").unwrap();
    let mock = MockProvider::start(vec![]);
    mock.push(Step::tool_call(
        "c",
        "run_command",
        json!({"command": ["sh", "-c",
        "head -c 5000000 /dev/zero > huge.bin; echo changed > keep.txt; echo x > node_modules/dep/f1.js"]}),
    ));
    mock.push(Step::text("done"));
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock);
    let run_id = run(&mut c, &sid, "make a huge file");
    let changes = c.ok("run/changes", json!({"run_id": run_id}));
    let files = changes["files"].as_array().unwrap();
    let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["huge.bin", "keep.txt"], "ignored trees are not recorded: {changes:#}");
    let huge = &files[0];
    assert_eq!((huge["restorable"].clone(), huge["size_after"].clone()), (json!(false), json!(5_000_000)));
    assert!(huge["not_restorable"].as_str().unwrap().contains("size limit"));
    let store = snapshot_store_size(&env);
    assert!(store < 1_000_000, "the store holds {store} bytes: the huge file was copied");

    let undo = c.ok("run/revert", json!({"run_id": run_id}));
    assert_eq!(undo["not_restorable"], json!(["huge.bin"]));
    assert_eq!(std::fs::read_to_string(p.join("keep.txt")).unwrap(), "keep\n");
}

/// Bytes under the daemon's snapshot stores.
fn snapshot_store_size(env: &TestEnv) -> u64 {
    let mut total = 0;
    let mut stack: Vec<_> = walk_for(env.root(), "snapshots");
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.len();
            }
        }
    }
    total
}

/// Directories named `name` under `root`.
fn walk_for(root: &Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if e.file_name() == name {
                    found.push(e.path());
                } else {
                    stack.push(e.path());
                }
            }
        }
    }
    found
}

#[test]
fn unknown_in_flight_and_unrecorded_runs_are_refused_in_one_line_changing_nothing() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let before = tree_state(&p);
    let mut c = daemon.nd();

    let out = swivalctl(&env, &daemon, &p, &["undo", "r_nope"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no run r_nope") && err.lines().count() == 1, "{err}");
    let out = swivalctl(&env, &daemon, &p, &["diff"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--session"));

    // In flight: the model's reply is held until the check is done.
    let gate = swival_tests::mock::Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("late"), &gate)]);
    let sid = session(&mut c, &p, &mock);
    let run_id = c.ok("run/start", json!({"session_id": sid, "task": "wait"}))["run_id"].as_str().unwrap().to_owned();
    mock.wait_for_requests(1);
    let busy = c.call("run/revert", json!({"run_id": run_id}));
    assert!(busy["error"]["message"].as_str().unwrap().contains("still running"), "{busy:#}");
    gate.open();
    c.ok("run/wait", json!({"run_id": run_id}));

    // Its snapshot pruned: the store's shadow repositories removed (a
    // command's contents live there; a file tool's are kept with the set).
    let mock = MockProvider::start(vec![]);
    mock.push(Step::tool_call("w", "run_command", json!({"command": ["sh", "-c", "printf 'x\\n' > edit.txt"]})));
    mock.push(Step::text("done"));
    let sid = session(&mut c, &p, &mock);
    let run_id = run(&mut c, &sid, "edit");
    let changed = tree_state(&p);
    for dir in walk_for(env.root(), "snapshots") {
        std::fs::remove_dir_all(dir).unwrap();
    }
    let out = swivalctl(&env, &daemon, &p, &["undo", &run_id]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&run_id) && err.contains("nothing was changed") && err.lines().count() == 1, "{err}");
    assert_eq!(tree_state(&p), changed);
    assert_ne!(changed, before);
}

/// A command that marks itself started, waits (at most 30 s) until the
/// other session's has started too, then writes its file.
fn meeting_command(me: &str, other: &str) -> Value {
    let sh = format!(
        "touch {me}.ready; i=0; while [ ! -f {other}.ready ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done; echo {me} > {me}.out"
    );
    json!({"command": ["sh", "-c", sh]})
}

/// Two sessions of one project whose commands start at once (and, with
/// `meet`, wait for each other); undo the first's run. Its result, the
/// project's files after, and the second's changes.
fn two_sessions_run_commands_at_once(settings: &str, meet: bool) -> (Value, BTreeMap<String, (String, u32)>, Value) {
    let env = TestEnv::new();
    env.daemon_settings(settings);
    let daemon = env.start_daemon();
    let p = project(&env);
    let (ma, mb) = (MockProvider::start(vec![]), MockProvider::start(vec![]));
    let command = |me: &str, other: &str| match meet {
        true => meeting_command(me, other),
        false => json!({"command": ["sh", "-c", format!("touch {me}.ready; echo {me} > {me}.out")]}),
    };
    ma.push(Step::tool_call("a", "run_command", command("a", "b")));
    ma.push(Step::text("A done"));
    mb.push(Step::tool_call("b", "run_command", command("b", "a")));
    mb.push(Step::text("B done"));
    let mut c = daemon.nd();
    let (sa, sb) = (session(&mut c, &p, &ma), session(&mut c, &p, &mb));
    let ra = c.ok("run/start", json!({"session_id": sa, "task": "A"}))["run_id"].clone();
    let rb = c.ok("run/start", json!({"session_id": sb, "task": "B"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": ra}))["outcome"], "success");
    assert_eq!(c.ok("run/wait", json!({"run_id": rb}))["outcome"], "success");
    let undo = c.ok("run/revert", json!({"run_id": ra}));
    let b_changes = c.ok("run/changes", json!({"run_id": rb}));
    (undo, tree_state(&p), b_changes)
}

#[test]
fn commands_of_two_sessions_in_one_project_take_turns_so_each_undo_is_exact() {
    let (undo, tree, b_changes) = two_sessions_run_commands_at_once("", false);
    assert_eq!(undo["applied"], true, "{undo:#}");
    assert!(undo["conflicts"].as_array().unwrap().is_empty(), "{undo:#}");
    assert!(!tree.contains_key("a.out") && !tree.contains_key("a.ready"), "A's files are gone: {tree:?}");
    assert!(tree.contains_key("b.out") && tree.contains_key("b.ready"), "B's files stay: {tree:?}");
    let b_paths: Vec<&str> =
        b_changes["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(b_paths, ["b.out", "b.ready"], "{b_changes:#}");
}

#[test]
fn commands_allowed_to_overlap_mark_what_both_saw_as_shared_and_undo_leaves_it() {
    let (undo, tree, b_changes) = two_sessions_run_commands_at_once("snapshot_exact_commands = false\n", true);
    assert_eq!(undo["applied"], false, "{undo:#}");
    // What was written while both commands ran is shared (which of them
    // wrote it is not known); what one wrote alone is its own.
    let conflicts = undo["conflicts"].as_array().unwrap();
    assert!(!conflicts.is_empty(), "{undo:#}");
    assert!(conflicts.iter().all(|c| c["cause"].as_str().unwrap().contains("at the same time")), "{undo:#}");
    assert!(tree.contains_key("a.out") && tree.contains_key("b.out"), "a refused undo changes nothing");
    assert!(b_changes["files"].as_array().unwrap().iter().any(|f| f["shared"] == true), "{b_changes:#}");
}

#[test]
fn undoing_a_run_that_changed_nothing_says_so_in_those_words() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let mock = MockProvider::start(vec![
        // A command that runs and changes nothing, then the answer.
        Step::tool_call("c1", "run_command", json!({"command": ["sh", "-c", "true"]})),
        Step::text("nothing to change"),
    ]);
    let mut c = daemon.nd();
    let sid = session(&mut c, &p, &mock);
    let run_id = run(&mut c, &sid, "look around");
    let before = tree_state(&p);
    let out = swivalctl(&env, &daemon, &p, &["undo", "--session", &sid]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("nothing to undo: {run_id} changed no file")), "{text}");
    assert!(!text.contains("0 files put back"), "{text}");
    assert_eq!(tree_state(&p), before);
    // A run that only answered.
    mock.push(Step::text("just an answer"));
    let answered = run(&mut c, &sid, "say hi");
    let out = swivalctl(&env, &daemon, &p, &["undo", "--session", &sid]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("nothing to undo: {answered} changed no file")), "{text}");
}

#[test]
fn run_ends_with_its_ids_and_files_and_diff_and_undo_without_an_argument_take_the_latest_run() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let mock = MockProvider::start(vec![
        Step::tool_call("w", "write_file", json!({"file_path": "made.txt", "content": "made\n"})),
        Step::text("made it"),
    ]);
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    // A git checkout: its top is the project from any directory in it.
    let init = std::process::Command::new("git").args(["init", "-q"]).current_dir(&p).status().unwrap();
    assert!(init.success());
    let before = tree_state(&p);
    let out = swivalctl(&env, &daemon, &p, &["run", "make a file"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let line =
        stderr.lines().find(|l| l.contains("◆ session s_")).unwrap_or_else(|| panic!("no closing line: {stderr}"));
    let run = line.split(" · ").find_map(|part| part.strip_prefix("run ")).unwrap().to_owned();
    assert!(line.contains("1 file changed: made.txt"), "{line}");
    assert!(
        line.contains(&format!("swivalctl diff {run}")) && line.contains(&format!("swivalctl undo {run}")),
        "{line}"
    );
    assert!(line.contains("continue: swivalctl run --session s_"), "{line}");
    // Not with --quiet.
    mock.push(Step::text("quiet"));
    let quiet = swivalctl(&env, &daemon, &p, &["run", "--quiet", "hush"]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("◆ session"));

    // In a subdirectory of the project, no argument means the project's
    // latest run (the quiet one), said on stderr.
    std::fs::create_dir_all(p.join("src/deep")).unwrap();
    let sub = p.join("src/deep");
    let diff = swivalctl(&env, &daemon, &sub, &["diff"]);
    let text = format!("{}{}", String::from_utf8_lossy(&diff.stdout), String::from_utf8_lossy(&diff.stderr));
    assert!(text.contains(&format!("latest run of {}", p.canonicalize().unwrap().display())), "{text}");
    let undo_first = swivalctl(&env, &daemon, &p, &["undo", &run]);
    assert!(undo_first.status.success(), "{}", String::from_utf8_lossy(&undo_first.stderr));
    assert_eq!(tree_state(&p), before);

    // Elsewhere, no run yet: the error says so and what to do.
    let other = env.project("other");
    let none = swivalctl(&env, &daemon, &other, &["undo"]);
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(!none.status.success() && err.contains("no run in") && err.contains("swivalctl sessions"), "{err}");
}
