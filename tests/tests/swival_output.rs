//! What `swivalctl run` prints on stderr, in Swival's words: reviewer
//! rounds and warnings, a filter's stderr, provider failures and an empty
//! `choices` list — with the real daemon, real scripts and the real
//! `swivalctl` binary against the mock provider.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{script, Daemon, TestEnv};

/// A project with a daemon serving it.
struct Setup {
    /// The test's private home.
    env: TestEnv,
    /// The daemon.
    daemon: Daemon,
    /// The project directory (the run's base dir).
    project: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let env = TestEnv::new();
        let daemon = env.start_daemon();
        let project = env.project("p");
        Setup { env, daemon, project }
    }

    /// `swivalctl run` against `mock` with `args` before the task.
    fn run(&self, mock: &MockProvider, args: &[&str]) -> Run {
        let base_url = mock.base_url();
        let mut cmd = self.env.swivalctl(&self.daemon, &self.project);
        cmd.args(["run", "--provider", "generic", "--base-url", &base_url, "--model", "mock-model"]);
        cmd.args(args).arg("do the task");
        Run::from(cmd.output().expect("swivalctl runs"))
    }
}

/// What one `swivalctl run` left behind.
struct Run {
    /// Its exit code.
    code: Option<i32>,
    /// What it printed on stdout.
    stdout: String,
    /// What it printed on stderr.
    stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Asserts each of `lines` is on stderr, in this order.
    fn shows_in_order(&self, lines: &[&str]) {
        let mut rest = self.stderr.as_str();
        for line in lines {
            let at = rest.find(line).unwrap_or_else(|| {
                panic!("{line:?} missing (or out of order) on stderr:\n{}", self.stderr);
            });
            rest = &rest[at + line.len()..];
        }
    }

    /// How many times `text` is on stderr.
    fn count(&self, text: &str) -> usize {
        self.stderr.matches(text).count()
    }
}

/// The report written with `--report`.
fn report(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("a report was written")).expect("report is JSON")
}

const TWO_ROUNDS: &str = r#"#!/usr/bin/env python3
import os, sys
sys.stdin.read()
if os.environ["SWIVAL_REVIEW_ROUND"] == "1":
    print("Please mention the tests.")
    print("And the docs.")
    sys.exit(1)
sys.exit(0)
"#;

#[test]
fn two_review_rounds_print_swivals_round_lines() {
    let s = Setup::new();
    script(&s.project, "review.py", TWO_ROUNDS);
    let mock = MockProvider::start(vec![Step::text("first draft"), Step::text("final answer")]);
    let run = s.run(&mock, &["--reviewer", "./review.py"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "final answer\n");
    run.shows_in_order(&[
        "Review round 1: sending answer to reviewer",
        "[review round 1] Reviewer requested changes:",
        "Please mention the tests.",
        "And the docs.",
        "Review round 2: sending answer to reviewer",
        "Reviewer accepted the answer (round 2)",
    ]);
    assert_eq!(run.count("Reviewer accepted the answer"), 1, "{}", run.stderr);
    assert_eq!(run.count("Warning:"), 0, "{}", run.stderr);
}

#[test]
fn reviewer_exit_2_shows_its_stderr_and_accepts_as_is() {
    let s = Setup::new();
    script(
        &s.project,
        "review.sh",
        "#!/bin/sh\ncat >/dev/null\necho 'reviewer error: no VERDICT found in LLM response' >&2\nexit 2\n",
    );
    let mock = MockProvider::start(vec![Step::text("the answer")]);
    let run = s.run(&mock, &["--reviewer", "./review.sh"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "the answer\n");
    run.shows_in_order(&[
        "Review round 1: sending answer to reviewer",
        "Warning: reviewer stderr: reviewer error: no VERDICT found in LLM response",
        "Warning: Reviewer exited with code 2, accepting answer as-is",
    ]);
    assert_eq!(mock.request_count(), 1, "exit 2 is not a request for another pass");
}

#[test]
fn reviewer_exit_7_accepts_as_is_without_its_stderr() {
    let s = Setup::new();
    script(&s.project, "review.sh", "#!/bin/sh\ncat >/dev/null\necho 'seven stderr' >&2\nexit 7\n");
    let mock = MockProvider::start(vec![Step::text("the answer")]);
    let run = s.run(&mock, &["--reviewer", "./review.sh"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "the answer\n");
    run.shows_in_order(&[
        "Review round 1: sending answer to reviewer",
        "Warning: Reviewer exited with code 7, accepting answer as-is",
    ]);
    assert!(!run.stderr.contains("seven stderr"), "stderr is shown for exit 2 only:\n{}", run.stderr);
}

#[test]
fn max_review_rounds_warns_and_quiet_hides_the_round_lines() {
    let s = Setup::new();
    script(&s.project, "never.sh", "#!/bin/sh\ncat >/dev/null\necho 'still not good'\nexit 1\n");
    let mock = MockProvider::start(vec![Step::text("a1"), Step::text("a2")]);
    let run = s.run(&mock, &["--reviewer", "./never.sh", "--max-review-rounds", "2"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "a2\n");
    run.shows_in_order(&[
        "Review round 1: sending answer to reviewer",
        "[review round 1] Reviewer requested changes:",
        "still not good",
        "Review round 2: sending answer to reviewer",
        "Warning: Max review rounds (2) reached, accepting answer",
    ]);
    assert_eq!(run.count("Reviewer requested changes"), 1, "the capped round's feedback is not shown");

    // Swival's --quiet turns these diagnostics off.
    let mock = MockProvider::start(vec![Step::text("a1"), Step::text("a2")]);
    let quiet = s.run(&mock, &["--quiet", "--reviewer", "./never.sh", "--max-review-rounds", "2"]);
    assert_eq!(quiet.code, Some(0), "{}", quiet.stderr);
    assert_eq!(quiet.stdout, "a2\n");
    assert!(!quiet.stderr.contains("Review round") && !quiet.stderr.contains("Warning:"), "{}", quiet.stderr);
}

const CHATTY_FILTER: &str = r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
sys.stderr.write("redact_filter: scrubbed 2 messages\n")
sys.stderr.write("redact_filter: done\n")
print(json.dumps({"messages": req["messages"]}))
"#;

const FLOODING_FILTER: &str = r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
sys.stderr.write("flood-start\n" + "z" * 200000 + "\nflood-end\n")
print(json.dumps({"messages": req["messages"]}))
"#;

#[test]
fn filter_stderr_is_shown_even_when_quiet_and_bounded() {
    let s = Setup::new();
    script(&s.project, "f.py", CHATTY_FILTER);
    for quiet in [false, true] {
        let mock = MockProvider::start(vec![Step::text("filtered answer")]);
        let mut args = vec!["--llm-filter", "./f.py"];
        if quiet {
            args.push("--quiet");
        }
        let run = s.run(&mock, &args);
        assert_eq!(run.code, Some(0), "quiet={quiet}: {}", run.stderr);
        assert_eq!(run.stdout, "filtered answer\n");
        run.shows_in_order(&["redact_filter: scrubbed 2 messages\nredact_filter: done\n"]);
        assert_eq!(run.count("redact_filter: scrubbed 2 messages"), 1, "once per call: {}", run.stderr);
    }

    script(&s.project, "flood.py", FLOODING_FILTER);
    let mock = MockProvider::start(vec![Step::text("still answered")]);
    let run = s.run(&mock, &["--llm-filter", "./flood.py"]);
    assert_eq!(run.code, Some(0), "{}", &run.stderr[..run.stderr.len().min(2000)]);
    assert_eq!(run.stdout, "still answered\n");
    assert!(run.stderr.contains("flood-start"), "the start is shown");
    assert!(run.stderr.contains("more bytes of filter stderr not shown"), "the rest is cut and said so");
    assert!(!run.stderr.contains("flood-end"), "a filter cannot flood the terminal");
    assert!(run.stderr.len() < 20_000, "stderr holds {} bytes", run.stderr.len());
}

#[test]
fn provider_failure_after_retries_prints_swivals_error_once() {
    let s = Setup::new();
    let fault = || Step::error(500, "upstream exploded", "server_error");
    let mock = MockProvider::start(vec![fault(), fault(), fault()]);
    let report_path = s.project.join("report.json");
    let report_arg = report_path.display().to_string();
    let run = s.run(&mock, &["--retries", "3", "--report", &report_arg]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(mock.request_count(), 3, "three attempts");
    let expected = "LLM call failed (model: mock-model): provider returned HTTP 500: upstream exploded";
    run.shows_in_order(&[&format!("Error: {expected}")]);
    assert_eq!(run.count("Error: "), 1, "the error is printed once:\n{}", run.stderr);
    let r = report(&report_path);
    assert_eq!(r["result"]["outcome"], "error", "{r}");
    let message = r["result"]["error_message"].as_str().unwrap();
    assert!(message.starts_with(expected), "{message}");
}

#[test]
fn unauthorized_is_not_retried_and_prints_swivals_error_even_when_quiet() {
    let s = Setup::new();
    let mock = MockProvider::start(vec![Step::error(401, "Incorrect API key provided", "invalid_request_error")]);
    let run = s.run(&mock, &["--quiet"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(mock.request_count(), 1, "a 401 is not retried");
    let expected = "Error: LLM call failed (model: mock-model): provider returned HTTP 401: Incorrect API key provided";
    run.shows_in_order(&[expected]);
    assert_eq!(run.count("Error: "), 1, "the error is printed once:\n{}", run.stderr);
}

#[test]
fn empty_choices_stop_the_run_at_once_streamed_or_not() {
    const EMPTY: &str = "LLM returned an empty choices list";
    let s = Setup::new();
    for stream in [true, false] {
        std::fs::write(s.project.join("swival.toml"), format!("stream = {stream}\n")).unwrap();
        let mock = MockProvider::start(vec![Step::no_choices(), Step::text("a retry would get this")]);
        let report_path = s.project.join("report.json");
        let report_arg = report_path.display().to_string();
        let run = s.run(&mock, &["--report", &report_arg]);
        assert_eq!(run.code, Some(1), "stream={stream}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "stream={stream}: {}", run.stdout);
        assert_eq!(mock.request_count(), 1, "stream={stream}: an empty choices list is not retried");
        assert_eq!(mock.requests()[0]["stream"].as_bool() == Some(true), stream, "the mock saw the mode asked for");
        run.shows_in_order(&[&format!("Error: {EMPTY}\n")]);
        assert_eq!(run.count("Error: "), 1, "stream={stream}: printed once:\n{}", run.stderr);
        assert!(!run.stderr.contains("retry"), "stream={stream}: {}", run.stderr);
        let r = report(&report_path);
        assert_eq!(r["result"]["outcome"], "error", "stream={stream}: {r}");
        assert_eq!(r["result"]["error_message"], EMPTY, "stream={stream}: {r}");
    }
}

#[test]
fn reviewer_killed_by_a_signal_reports_pythons_negative_code() {
    let s = Setup::new();
    script(&s.project, "review.sh", "#!/bin/sh\ncat >/dev/null\nkill -9 $$\n");
    let mock = MockProvider::start(vec![Step::text("the answer")]);
    let run = s.run(&mock, &["--reviewer", "./review.sh"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "the answer\n");
    run.shows_in_order(&["Warning: Reviewer exited with code -9, accepting answer as-is"]);
}
