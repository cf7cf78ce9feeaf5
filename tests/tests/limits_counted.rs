//! Limits that count what a command uses: where the machine offers a
//! cgroup, a gigabyte through a shared mapping or a memfd is stopped at a
//! 256 MB limit, many short children are stopped together at a 2 s CPU
//! limit, and 64 threads (with their reserved stacks) run at that same
//! memory limit; where it does not, `policy/status` says the limits are
//! per process and why. 64 threads run under the default limit either way.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

/// A gigabyte of shared anonymous memory, every page touched.
const SHARED: &str = "import mmap\nm = mmap.mmap(-1, 1 << 30, flags=mmap.MAP_SHARED)\n\
for i in range(0, 1 << 30, 4096):\n    m[i] = 1\nprint('survived')\n";
/// A gigabyte written into a memfd.
const MEMFD: &str = "import os\nfd = os.memfd_create('x')\nchunk = b'x' * (1 << 20)\n\
for _ in range(1024):\n    os.write(fd, chunk)\nprint('survived')\n";
/// Forty children, each spinning 0.3 s of CPU: 12 s together.
const CHILDREN: &str = "import subprocess, sys\nspin = 'import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.3: pass'\n\
for _ in range(40):\n    subprocess.run([sys.executable, '-c', spin])\nprint('survived')\n";
/// 64 threads alive at once.
const THREADS: &str =
    "import threading\nb = threading.Barrier(65)\nts = [threading.Thread(target=b.wait) for _ in range(64)]\n\
for t in ts: t.start()\nb.wait()\nfor t in ts: t.join()\nprint('64 threads ran')\n";

fn py(id: &str, code: &str) -> Step {
    Step::tool_call(id, "run_command", json!({"command": ["python3", "-c", code]}))
}

#[test]
fn shared_memory_memfd_and_many_children_are_counted_where_a_cgroup_is_available() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let mock = MockProvider::start(vec![
        py("shared", SHARED),
        py("memfd", MEMFD),
        py("children", CHILDREN),
        py("threads", THREADS),
        Step::text("done"),
        py("threads-default", THREADS),
        Step::text("done too"),
    ]);
    let base = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m",
                      "allowed_commands": ["python3"], "no_history": true});
    let with = |extra: Value| {
        let mut cfg = base.clone();
        cfg.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        cfg
    };
    let mut run = |project: &str, cfg: Value| {
        let sid =
            c.ok("session/create", json!({"base_dir": env.project(project), "config": cfg}))["session_id"].clone();
        let run = c.ok("run/start", json!({"session_id": sid, "task": "use it up"}))["run_id"].clone();
        assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
        c.ok("policy/status", json!({"session_id": sid}))
    };
    let st = run("p", with(json!({"command_max_memory_mb": 256, "command_max_cpu_s": 2})));
    let default_st = run("q", base.clone());
    let tools = mock.tool_results();
    assert!(tools["threads-default"].contains("64 threads ran"), "{}", tools["threads-default"]);
    assert!(default_st["sandbox"]["enforced"].to_string().contains("4096 MB"), "{default_st}");

    let enforced = st["sandbox"]["enforced"].to_string();
    let not_enforced = st["sandbox"]["not_enforced"].to_string();
    if enforced.contains("for the command and everything it starts") {
        for id in ["shared", "memfd"] {
            let r = &tools[id];
            assert!(!r.contains("survived"), "{id} was not stopped: {r}");
            assert!(
                r.contains("stopped at its memory limit (256 MB") && r.contains("command_max_memory_mb"),
                "{id}: {r}"
            );
        }
        let r = &tools["children"];
        assert!(!r.contains("survived") && r.contains("CPU time limit (2 s for the command"), "{r}");
        assert!(tools["threads"].contains("64 threads ran"), "{}", tools["threads"]);
        assert!(!not_enforced.contains("per process, not per command"), "{not_enforced}");
    } else {
        // No cgroup here: the status says what does not hold, and why.
        assert!(not_enforced.contains("per process, not per command") && not_enforced.contains("cgroup"), "{st}");
    }
}
