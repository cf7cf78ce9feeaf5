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

/// Text that compression barely shrinks, `n` bytes of it.
fn noise(seed: u64, n: usize) -> String {
    let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[(x % 36) as usize])
        })
        .collect()
}

#[test]
fn contents_a_run_wrote_and_took_back_are_never_stored_and_what_its_set_names_is_stored_with_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "old\n").unwrap();
    let mock = MockProvider::start(vec![]);
    // Three scratch files, written and deleted again; a.txt written twice.
    let writes = (0..3).map(|i| {
        (format!("w{i}"), "write_file", json!({"file_path": format!("s{i}.txt"), "content": noise(i, 100_000)}))
    });
    let mut calls: Vec<(String, &str, Value)> = writes.collect();
    calls.extend((0..3).map(|i| (format!("d{i}"), "delete_file", json!({"file_path": format!("s{i}.txt")}))));
    calls.push(("r".into(), "read_file", json!({"file_path": "a.txt"})));
    calls.push(("e".into(), "write_file", json!({"file_path": "a.txt", "content": noise(9, 100_000)})));
    calls.push(("f".into(), "write_file", json!({"file_path": "a.txt", "content": "final\n"})));
    mock.push(Step::tool_calls(calls.iter().map(|(id, name, args)| (id.as_str(), *name, args.clone())).collect()));
    mock.push(Step::text("done"));
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let sid = c.ok("session/create", json!({"base_dir": p, "config": config}))["session_id"].clone();
    let run_id = c.ok("run/start", json!({"session_id": sid, "task": "change a.txt"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run_id}))["outcome"], "success");
    let changes = c.ok("run/changes", json!({"run_id": run_id}));
    let files = changes["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "only a.txt changed: {changes:#}");
    assert_eq!(files[0]["diff"], "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+final\n", "{changes:#}");
    // 400 kB of contents went by; none of them is kept.
    let kept = c.ok("daemon/status", json!({}))["snapshot_bytes"].as_u64().unwrap();
    assert!(kept < 200_000, "the store holds {kept} bytes");
    // What the set names is kept: undo and its redo put each back.
    let undo = c.ok("run/revert", json!({"run_id": run_id}));
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "old\n", "{undo:#}");
    c.ok("run/revert", json!({"run_id": undo["revert_id"]}));
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "final\n");
}
