//! A file tool's change is recorded from its own account of what it did
//! (the bytes it read and wrote, the mode of the file it wrote, the file it
//! reached): an executable keeps its mode in the record, a file larger than
//! the event's text limit is recorded whole, a move onto a file the model
//! read records what the move ended, a deleted symlink is recorded as a
//! link, and an edit through a linked directory inside the project is
//! recorded as the file it changed, so `undo` puts every one of them back.
//! Real daemon, mock provider, the model's calls scripted.

use serde_json::{json, Value};
use sha2::Digest as _;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

/// Every entry under `dir` but `.swival/`: a file's content hash and
/// permission bits, a link's target.
fn tree_state(dir: &Path) -> BTreeMap<String, (String, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            let rel = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if rel == ".swival" {
                continue;
            } else if meta.file_type().is_symlink() {
                out.insert(rel, (format!("link:{}", std::fs::read_link(&path).unwrap().display()), 0));
            } else if meta.is_dir() {
                stack.push(path);
            } else {
                let hash: String =
                    sha2::Sha256::digest(std::fs::read(&path).unwrap()).iter().map(|b| format!("{b:02x}")).collect();
                out.insert(rel, (hash, meta.permissions().mode() & 0o7777));
            }
        }
    }
    out
}

#[test]
fn a_file_tools_own_account_is_recorded_modes_large_files_moves_links_and_linked_directories_included() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("run.sh"), "#!/bin/sh\necho one\n").unwrap();
    std::fs::set_permissions(p.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    // Over the 64 KiB an editor's diff carries: the event has no text, the
    // record still has the bytes.
    let big: String = (0..4000).map(|i| format!("line {i} of a long file\n")).collect();
    std::fs::write(p.join("big.txt"), &big).unwrap();
    std::fs::write(p.join("from.txt"), "moved content\n").unwrap();
    std::fs::write(p.join("onto.txt"), "what the move ends\n").unwrap();
    std::os::unix::fs::symlink("run.sh", p.join("link")).unwrap();
    std::fs::create_dir(p.join("real")).unwrap();
    std::fs::write(p.join("real/mod.py"), "X = 1\n").unwrap();
    std::os::unix::fs::symlink("real", p.join("lib")).unwrap();
    let before = tree_state(&p);

    let mock = MockProvider::start(vec![]);
    mock.push(Step::tool_calls(vec![
        ("r1", "read_file", json!({"file_path": "run.sh"})),
        ("r2", "read_file", json!({"file_path": "big.txt"})),
        ("r3", "read_file", json!({"file_path": "onto.txt"})),
        ("r4", "read_file", json!({"file_path": "lib/mod.py"})),
    ]));
    mock.push(Step::tool_calls(vec![
        ("e1", "edit_file", json!({"file_path": "run.sh", "old_string": "one", "new_string": "two"})),
        ("w1", "write_file", json!({"file_path": "big.txt", "content": format!("{big}one more line\n")})),
        ("m1", "write_file", json!({"file_path": "onto.txt", "move_from": "from.txt"})),
        ("d1", "delete_file", json!({"file_path": "link"})),
        ("e2", "edit_file", json!({"file_path": "lib/mod.py", "old_string": "X = 1", "new_string": "X = 2"})),
    ]));
    mock.push(Step::text("done"));
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let sid = c.ok("session/create", json!({"base_dir": p, "config": config}))["session_id"].clone();
    let run_id = c.ok("run/start", json!({"session_id": sid, "task": "change things"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run_id}))["outcome"], "success");
    let results = mock.tool_results();
    assert!(results.iter().all(|(_, r)| !r.starts_with("error")), "every call ran: {results:#?}");
    let after = tree_state(&p);
    assert_eq!(after["run.sh"].1, 0o755, "the edit kept the mode");
    assert_eq!(after["real/mod.py"].0, format!("{:x}", sha2::Sha256::digest(b"X = 2\n")));

    let changes = c.ok("run/changes", json!({"run_id": run_id}));
    let files: BTreeMap<String, Value> = changes["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_owned(), f.clone()))
        .collect();
    let kinds: BTreeMap<&str, &str> = files.iter().map(|(k, f)| (k.as_str(), f["kind"].as_str().unwrap())).collect();
    let expected: BTreeMap<&str, &str> = [
        ("run.sh", "modified"),
        ("big.txt", "modified"),
        // A move onto a file: that file's content replaced, the source gone.
        ("onto.txt", "modified"),
        ("from.txt", "deleted"),
        ("link", "deleted"),
        ("real/mod.py", "modified"),
    ]
    .into_iter()
    .collect();
    assert_eq!(kinds, expected, "{changes:#}");
    assert_eq!(files["run.sh"]["mode_before"], json!(0o100755), "{changes:#}");
    assert!(files["onto.txt"]["diff"].as_str().unwrap().contains("-what the move ends\n+moved content"), "{changes:#}");
    assert_eq!(files["link"]["mode_before"], json!(0o120000), "{changes:#}");
    assert!(files["big.txt"]["diff"].as_str().unwrap().contains("+one more line"), "{changes:#}");
    assert!(files["real/mod.py"]["diff"].as_str().unwrap().contains("+X = 2"), "{changes:#}");

    // Undo puts back every file, the one the move ended and the link too.
    let undo = c.ok("run/revert", json!({"run_id": run_id}));
    assert_eq!(undo["applied"], true, "{undo:#}");
    assert_eq!(tree_state(&p), before);
}

/// The git blob id of `bytes`, as `git hash-object` says.
fn blob_id(bytes: &[u8]) -> String {
    use std::io::Write as _;
    let mut git = std::process::Command::new("git")
        .args(["hash-object", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    git.stdin.take().unwrap().write_all(bytes).unwrap();
    String::from_utf8(git.wait_with_output().unwrap().stdout).unwrap().trim().to_owned()
}

#[test]
fn contents_a_run_wrote_and_took_back_never_reach_the_store_and_what_its_set_names_is_packed() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "old\n").unwrap();
    let mock = MockProvider::start(vec![]);
    let scratch: Vec<String> = (0..3).map(|i| format!("scratch {i}\n")).collect();
    let writes = scratch
        .iter()
        .enumerate()
        .map(|(i, text)| (format!("w{i}"), "write_file", json!({"file_path": format!("s{i}.txt"), "content": text})));
    let mut calls: Vec<(String, &str, Value)> = writes.collect();
    calls.extend((0..3).map(|i| (format!("d{i}"), "delete_file", json!({"file_path": format!("s{i}.txt")}))));
    calls.push(("r".into(), "read_file", json!({"file_path": "a.txt"})));
    calls.push(("e".into(), "write_file", json!({"file_path": "a.txt", "content": "draft\n"})));
    calls.push(("f".into(), "write_file", json!({"file_path": "a.txt", "content": "final\n"})));
    mock.push(Step::tool_calls(calls.iter().map(|(id, name, args)| (id.as_str(), *name, args.clone())).collect()));
    mock.push(Step::text("done"));
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let sid = c.ok("session/create", json!({"base_dir": p, "config": config}))["session_id"].clone();
    let run_id = c.ok("run/start", json!({"session_id": sid, "task": "change a.txt"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run_id}))["outcome"], "success");
    let files = c.ok("run/changes", json!({"run_id": run_id}))["files"].clone();
    assert_eq!(files.as_array().unwrap().len(), 1, "only a.txt changed: {files:#}");

    // The project's store: one, under the state dir.
    let mut stack = vec![env.root().to_owned()];
    let mut stores = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            if e.file_type().unwrap().is_dir() {
                match path.file_name().unwrap() == "snapshots" {
                    true => stores.extend(std::fs::read_dir(&path).unwrap().flatten().map(|s| s.path())),
                    false => stack.push(path),
                }
            }
        }
    }
    assert_eq!(stores.len(), 1, "{stores:?}");
    let has = |id: &str| {
        let mut git = std::process::Command::new("git");
        git.arg("--git-dir").arg(&stores[0]).args(["cat-file", "-e", id]);
        git.output().unwrap().status.success()
    };
    assert!(has(&blob_id(b"final\n")), "what the set names after is stored");
    assert!(has(&blob_id(b"old\n")), "and what it names before");
    for text in scratch.iter().map(String::as_bytes).chain([&b"draft\n"[..]]) {
        assert!(!has(&blob_id(text)), "{} never reached the store", String::from_utf8_lossy(text).trim());
    }
    let packs = std::fs::read_dir(stores[0].join("objects/pack")).unwrap().count();
    assert_eq!(packs, 2, "one pack and its index for the run's contents");
}
