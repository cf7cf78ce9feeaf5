//! The snapshot stores are collected (`snapshots/gc`, `swivalctl gc`, and
//! after each prune of old sessions): what no stored run names goes, the
//! stores shrink, and `diff` and `undo` of every stored run still work.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

/// Letters and digits compression barely shrinks, `n` of them, different
/// for each `seed`.
fn noise(seed: u64, n: usize) -> String {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            char::from(ALNUM[((x >> 33) % 62) as usize])
        })
        .collect()
}

fn snapshot_bytes(c: &mut swival_tests::NdConn) -> u64 {
    c.ok("daemon/status", json!({}))["snapshot_bytes"].as_u64().expect("snapshot_bytes with snapshots on")
}

#[test]
fn gc_shrinks_the_store_and_diff_and_undo_of_stored_runs_still_work_and_a_prune_removes_it() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("keep.txt"), "kept\n").unwrap();
    // One run's command makes four scratch files (its snapshot takes them
    // into the store), the model writes the file it keeps, and a second
    // command removes the scratch files: their contents are no part of the
    // run's change. (A file tool's own contents reach the store only when
    // the run's set names them.)
    let make = "for i in 0 1 2 3; do head -c 300000 /dev/urandom > b$i.txt; done";
    let mut script = vec![Step::tool_call("m", "run_command", json!({"command": ["sh", "-c", make]}))];
    let write = json!({"file_path": "big.txt", "content": noise(4, 30_000)});
    script.push(Step::tool_call("w", "write_file", write));
    let clean = "rm b0.txt b1.txt b2.txt b3.txt; echo made > cmd.txt";
    script.push(Step::tool_call("c", "run_command", json!({"command": ["sh", "-c", clean]})));
    script.push(Step::text("written"));
    let mock = MockProvider::start(script);
    let mut c = daemon.nd();
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "allowed_commands": ["sh"]});
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].as_str().unwrap().to_owned();
    let run = c.ok(
        "run/start",
        json!({"session_id": sid, "task": "write b0.txt b1.txt b2.txt b3.txt, delete them, write big.txt"}),
    )["run_id"]
        .clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    let diff_before = c.ok("run/changes", json!({"run_id": run}));
    let written = std::fs::read_to_string(p.join("big.txt")).unwrap();
    assert_eq!(written, noise(4, 30_000));

    let before = snapshot_bytes(&mut c);

    let out = env.swivalctl(&daemon, &p).args(["gc", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let gc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(gc["stores"], 1, "{gc:#}");
    assert!(gc["objects_removed"].as_u64().unwrap() >= 4, "four contents and the trees: {gc:#}");
    let after = snapshot_bytes(&mut c);
    assert!(after + 4 * 150_000 < before, "the store shrank by the four contents: {before} → {after}");
    assert_eq!(gc["bytes_after"].as_u64().unwrap(), after, "{gc:#}");

    // The stored run's diff is whole and its undo exact.
    assert_eq!(c.ok("run/changes", json!({"run_id": run})), diff_before);
    let undo = c.ok("run/revert", json!({"run_id": run}));
    assert_eq!(undo["applied"], true, "{undo:#}");
    assert!(!p.join("big.txt").exists() && !p.join("cmd.txt").exists());
    // And the undo's own redo, after another collection.
    let gc = c.ok("snapshots/gc", json!({}));
    assert_eq!(gc["stores_removed"], 0, "{gc:#}");
    let redo = c.ok("run/revert", json!({"run_id": undo["revert_id"]}));
    assert_eq!(redo["applied"], true, "{redo:#}");
    assert_eq!(std::fs::read_to_string(p.join("big.txt")).unwrap(), written);
    // A new run after a collection is recorded as before.
    mock.push(Step::tool_call("x", "write_file", json!({"file_path": "next.txt", "content": "next\n"})));
    mock.push(Step::text("next"));
    let next = c.ok("run/start", json!({"session_id": sid, "task": "write next.txt"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": next}))["outcome"], "success");
    let files = c.ok("run/changes", json!({"run_id": next}))["files"].clone();
    assert_eq!(files.as_array().unwrap().len(), 1, "{files:#}");

    // Pruning every session leaves no set naming the store: it goes.
    c.ok("session/close", json!({"session_id": sid}));
    let pruned = c.ok("session/prune", json!({"older_than_s": 0}));
    assert_eq!(pruned["removed"].as_array().unwrap().len(), 1, "{pruned:#}");
    let left = snapshot_bytes(&mut c);
    assert!(left < 64 * 1024, "the store was removed whole: {left} bytes left");
}

#[test]
fn gc_with_snapshots_off_says_so() {
    let env = TestEnv::new();
    env.daemon_settings("snapshots = false\n");
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    assert!(c.ok("daemon/status", json!({})).get("snapshot_bytes").is_none());
    let r = c.call("snapshots/gc", json!({}));
    let message = r["error"]["message"].as_str().unwrap_or_else(|| panic!("{r}"));
    assert!(message.contains("snapshots = false"), "{message}");
}

#[test]
fn contents_kept_for_a_store_removed_by_hand_stay_while_a_set_names_them_and_go_after() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        Step::tool_call("w", "write_file", json!({"file_path": "a.txt", "content": noise(7, 200_000)})),
        Step::text("written"),
    ]);
    let mut c = daemon.nd();
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].as_str().unwrap().to_owned();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "write a.txt"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    // The snapshot directories removed by hand: the file tool's content,
    // kept with its set, still counts.
    let mut stack = vec![env.root().to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten().filter(|e| e.file_type().unwrap().is_dir()) {
            match e.file_name() == "snapshots" {
                true => std::fs::remove_dir_all(e.path()).unwrap(),
                false => stack.push(e.path()),
            }
        }
    }
    c.ok("snapshots/gc", json!({}));
    assert!(snapshot_bytes(&mut c) > 150_000, "the content its set names stays");
    // Its session pruned, nothing names it: it goes.
    c.ok("session/close", json!({"session_id": sid}));
    c.ok("session/prune", json!({"older_than_s": 0}));
    c.ok("snapshots/gc", json!({}));
    let left = snapshot_bytes(&mut c);
    assert!(left < 64 * 1024, "{left} bytes left");
}
