//! Context compaction with a small configured window: old tool results are
//! cut, then a `summary` call goes through the filter chain, and the run
//! still completes.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{script, TestEnv};

#[test]
fn long_conversation_in_a_small_window_is_compacted_through_the_pipeline() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let text: String = (0..60).map(|i| format!("line {i} of a long file with words in it\n")).collect();
    // Ten files: reading one file ten times would trip the repeat-loop guard.
    for i in 0..10 {
        std::fs::write(p.join(format!("big{i}.txt")), &text).unwrap();
    }
    let filter = script(
        &p,
        "kinds.py",
        "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nopen('kinds.log', 'a').write(req['call_kind'] + '\\n')\nprint(json.dumps({'messages': req['messages']}))\n",
    );
    let mut steps: Vec<Step> = (0..10)
        .map(|i| Step::tool_call(&format!("c{i}"), "read_file", json!({"file_path": format!("big{i}.txt")})))
        .collect();
    steps.extend((0..6).map(|_| Step::text("done")));
    let mock = MockProvider::start(steps);
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m",
        "max_context_tokens": 6000, "llm_filter": filter});
    let mut c = daemon.nd();
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "read the big files"}))["run_id"].clone();
    let r = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(r["stats"]["compactions"].as_u64().unwrap() >= 1, "{r}");
    let kinds = std::fs::read_to_string(p.join("kinds.log")).unwrap();
    assert!(kinds.lines().any(|k| k == "summary"), "the filter never saw a summary call: {kinds}");
    let report = c.ok("report/get", json!({"run_id": run}));
    let compactions: Vec<&Value> =
        report["timeline"].as_array().unwrap().iter().filter(|e| e["type"] == "compaction").collect();
    assert!(!compactions.is_empty());
    assert!(compactions[0]["tokens_after"].as_u64() < compactions[0]["tokens_before"].as_u64());
    // Every request after the first compaction fits the window better than before it.
    let sizes: Vec<usize> = mock.requests().iter().map(|r| r["messages"].to_string().len()).collect();
    assert!(sizes.iter().max().unwrap() / 4 < 12_000, "{sizes:?}");
}
