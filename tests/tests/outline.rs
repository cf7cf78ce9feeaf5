//! `outline` end to end: the real daemon offers it after `fetch_url` with
//! Swival's schema, and a scripted model that calls it on a file, on a
//! directory and on a path outside the project reads the declarations
//! with their line numbers, the survey, and the refusal.

use serde_json::json;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

#[test]
fn the_model_outlining_a_file_reads_its_functions_with_line_numbers() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::create_dir(p.join("pkg")).unwrap();
    let code = "import math\n\nclass Circle:\n    def __init__(self, r):\n        self.r = r\n\n    def area(self):\n        return math.pi * self.r ** 2\n\n\ndef unit():\n    return Circle(1)\n";
    std::fs::write(p.join("pkg/geo.py"), code).unwrap();
    std::fs::write(p.parent().unwrap().join("outside.py"), "def secret():\n    pass\n").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("c0", "outline", json!({"file_path": "pkg/geo.py"})),
        Step::tool_call("c1", "outline", json!({"file_path": "pkg", "depth": 1})),
        Step::tool_call("c2", "outline", json!({"file_path": "../outside.py"})),
        Step::text("done"),
    ]);
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    let mut c = daemon.nd();
    let sid =
        c.ok("session/create", json!({"base_dir": p, "config": config}))["session_id"].as_str().unwrap().to_owned();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "what does geo.py define?"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["answer"], "done");

    let results = mock.tool_results();
    assert_eq!(
        results["c0"],
        "3    class Circle:\n4        def __init__(self, r)\n7        def area(self)\n11   def unit()"
    );
    let survey = &results["c1"];
    assert!(survey.starts_with("directory: pkg/\nsource_files: 1 selected\n\n"), "{survey}");
    assert!(survey.ends_with("=== FILE: pkg/geo.py ===\nstatus: ok\n3    class Circle:\n11   def unit()"), "{survey}");
    let refused = &results["c2"];
    assert!(refused.starts_with("error: ") && refused.contains("outside base directory"), "{refused}");
    assert!(!refused.contains("secret"), "{refused}");
}
