//! The state disk fills up: the run in flight ends with the terminal state
//! its waiters see once space returns, and a daemon restarted on the full
//! disk still serves reads. Needs a small tmpfs as the state directory;
//! where this process may not mount one, the test says so and skips.

use serde_json::json;
use std::io::Write;
use std::path::Path;
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::TestEnv;

/// A 4 MiB tmpfs on `dir`, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path) -> Result<Tmpfs, String> {
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!("mount failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(Tmpfs(dir.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fill the filesystem of `dir` until it has no space left.
fn fill(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = vec![0u8; 4096];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
    path
}

#[test]
fn a_full_state_disk_delays_the_runs_end_until_space_returns_and_a_restart_still_serves_reads() {
    let env = TestEnv::new();
    let state = env.root().join("state");
    let _tmpfs = match Tmpfs::mount(&state) {
        Ok(t) => t,
        Err(why) => {
            println!("SKIPPED: a full state disk needs a tmpfs mount here: {why}");
            return;
        }
    };
    let gate = Gate::new();
    let mock = MockProvider::start(vec![
        Step::tool_call("t1", "think", json!({"thought": "x".repeat(2000)})),
        Step::gated(Step::text("the answer"), &gate),
    ]);
    let mut daemon = env.start_daemon();
    let mut c = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    let project = env.project("p");
    let sid = c.ok("session/create", json!({"base_dir": project, "config": config}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    mock.wait_for_requests(2);

    // The disk fills while the model is answering; then the answer comes.
    let filler = fill(&state);
    gate.open();
    let mut waiter = daemon.nd();
    waiter.send_raw(
        format!("{}\n", json!({"jsonrpc": "2.0", "id": 7, "method": "run/wait", "params": {"run_id": run}})).as_bytes(),
    );
    // Reads are still served meanwhile.
    let list = c.ok("session/list", json!({}));
    assert_eq!(list["sessions"][0]["session_id"], sid);
    std::fs::remove_file(&filler).unwrap();
    let told = waiter.read();
    assert_eq!(told["result"]["outcome"], "success", "{told}");
    // What the waiter was told is what is stored.
    let detail = c.ok("session/get", json!({"session_id": sid}));
    assert_eq!(detail["runs"][0]["outcome"], "success", "{detail}");
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["answer"], "the answer");

    // A restart on a full disk still serves session/list and session/get.
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert!(daemon.wait_exit().success());
    let filler = fill(&state);
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let list = c.ok("session/list", json!({}));
    assert_eq!(list["sessions"][0]["session_id"], sid);
    let detail = c.ok("session/get", json!({"session_id": sid}));
    assert_eq!(detail["runs"][0]["outcome"], "success", "{detail}");
    drop(c);
    drop(daemon);
    std::fs::remove_file(filler).unwrap();
}
