//! What one command may consume: a fork bomb, a runaway allocation and a
//! spinning loop are each stopped at their limit, the model is told which
//! limit and which key, the run goes on, and the daemon and other sessions
//! never notice.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

const FORK_BOMB: &str = "import os, time\nn = 0\nwhile True:\n    pid = os.fork()\n    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n    n += 1\n";
const ALLOCATE: &str = "x = []\nwhile True:\n    x.append(bytearray(16 << 20))\n";
const SPIN: &str = "while True:\n    pass\n";

fn py(id: &str, code: &str) -> Step {
    Step::tool_call(id, "run_command", json!({"command": ["python3", "-c", code]}))
}

#[test]
fn a_fork_bomb_an_allocation_and_a_spin_are_stopped_at_their_limits_and_the_run_goes_on() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let mock = MockProvider::start(vec![
        py("fork", FORK_BOMB),
        py("mem", ALLOCATE),
        py("after", "print('still here')"),
        Step::text("done"),
        py("cpu", SPIN),
        Step::text("spun"),
        py("other", "print('other session')"),
        Step::text("done too"),
    ]);
    let base =
        json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "allowed_commands": ["python3"]});
    let with = |extra: Value| {
        let mut cfg = base.clone();
        cfg.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        cfg
    };
    let mut run = |project: &str, cfg: Value| {
        let sid =
            c.ok("session/create", json!({"base_dir": env.project(project), "config": cfg}))["session_id"].clone();
        let run = c.ok("run/start", json!({"session_id": sid, "task": "misbehave"}))["run_id"].clone();
        assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
        sid
    };
    run("p", with(json!({"command_max_processes": 64, "command_max_memory_mb": 256, "command_max_cpu_s": 0})));
    run("q", with(json!({"command_max_cpu_s": 1})));
    let tools = mock.tool_results();
    assert!(tools["fork"].contains("command_max_processes") && tools["fork"].contains("64"), "{}", tools["fork"]);
    assert!(tools["mem"].contains("command_max_memory_mb") && tools["mem"].contains("256 MB"), "{}", tools["mem"]);
    assert!(tools["cpu"].contains("error: the command was stopped at its CPU time limit (1 s"), "{}", tools["cpu"]);
    assert!(tools["cpu"].contains("command_max_cpu_s"), "{}", tools["cpu"]);
    assert!(tools["after"].contains("still here"), "{}", tools["after"]);

    // Another session, with the defaults, runs as usual; the daemon answers.
    let other = run("r", base.clone());
    assert!(mock.tool_results()["other"].contains("other session"));
    let st = c.ok("policy/status", json!({"session_id": other}));
    let enforced = st["sandbox"]["enforced"].to_string();
    assert!(
        enforced.contains("1024 processes") && enforced.contains("4096 MB") && enforced.contains("900 s"),
        "the defaults are shown: {enforced}"
    );
}
