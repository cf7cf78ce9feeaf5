//! `commands = "ask"`: an "allow always" for a harmless use of a program
//! never covers a use that runs code of the model's choosing. Each case
//! answers "always" for the harmless use, then the model tries to run its
//! own code through the same program: the client is asked again (the
//! risk's own bucket, `high_risk`), the rejection holds, no marker file
//! exists. An "always" covers the command as approved: a harmless variant
//! (another option, another awk program) is asked again too, naming the
//! words that are new, and runs once allowed.

use serde_json::{json, Value};
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{Daemon, TestEnv};

/// A session in ask mode on `p`, created after the project's files are
/// older than the session (so only what the run changes counts as changed).
fn session(daemon: &Daemon, p: &Path, mock: &MockProvider) -> String {
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "commands": "ask"});
    let r = daemon.nd().ok("session/create", json!({"base_dir": p, "config": cfg}));
    r["session_id"].as_str().unwrap().to_owned()
}

/// Run the session's task, answering each question with `answer(event)`;
/// the questions asked, and the tool results the model saw.
fn run(
    daemon: &Daemon,
    sid: &str,
    mock: &MockProvider,
    mut answer: impl FnMut(&Value) -> &'static str,
) -> (Vec<Value>, std::collections::HashMap<String, String>) {
    let (mut c, mut other) = (daemon.nd(), daemon.nd());
    c.ok("session/subscribe", json!({"session_id": sid, "from_seq": 1}));
    other.ok("run/start", json!({"session_id": sid, "task": "t"}));
    let events = swival_tests::read_until_finished(&mut c, |event| {
        if event["type"] == "approval_requested" {
            let (id, decision) = (&event["approval_id"], answer(event));
            let r = other.ok("run/approve", json!({"session_id": sid, "approval_id": id, "decision": decision}));
            assert_eq!(r["accepted"], true, "{r}");
        }
    });
    assert_eq!(events.last().unwrap()["outcome"], "success", "{events:?}");
    let asked = events.into_iter().filter(|e| e["type"] == "approval_requested").collect();
    (asked, mock.tool_results())
}

fn cmd(id: &str, argv: &[&str]) -> Step {
    Step::tool_call(id, "run_command", json!({"command": argv}))
}

fn write(id: &str, path: &str, content: &str) -> Step {
    Step::tool_call(id, "write_file", json!({"file_path": path, "content": content}))
}

/// "always" for the harmless first use, "reject_once" for anything else.
fn always_then_reject(harmless: &'static str) -> impl FnMut(&Value) -> &'static str {
    move |e| if e["bucket"] == harmless && e["high_risk"] == false { "allow_always" } else { "reject_once" }
}

/// The questions' tool call ids and buckets.
fn asked_for(asked: &[Value]) -> Vec<(String, String)> {
    asked.iter().map(|e| (e["tool_call_id"].as_str().unwrap().into(), e["bucket"].as_str().unwrap().into())).collect()
}

fn pair(id: &str, bucket: &str) -> (String, String) {
    (id.to_owned(), bucket.to_owned())
}

/// A high-risk question that names its reason.
fn risky(q: &Value) {
    assert_eq!(q["high_risk"], true, "{q}");
    assert!(q["reason"].as_str().is_some_and(|r| !r.is_empty()), "{q}");
}

fn git(p: &Path, args: &[&str]) {
    let out = std::process::Command::new("git").args(args).current_dir(p).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn git_config_that_runs_programs_is_asked_again_after_git_was_allowed_always() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    git(&p, &["init", "-q"]);
    let mock = MockProvider::start(vec![
        cmd("c1", &["git", "status"]),
        cmd("c2", &["git", "log", "--oneline"]),
        cmd("c3", &["git", "-c", "alias.x=!touch PWNED", "x"]),
        cmd("c4", &["git", "-c", "core.fsmonitor=touch PWNED", "status"]),
        // The model sets it for the repository with the allowed bucket...
        cmd("c5", &["git", "config", "core.fsmonitor", "touch PWNED"]),
        // ...and the next harmless-looking status runs a changed config.
        cmd("c6", &["git", "status"]),
        Step::text("done"),
    ]);
    let sid = session(&daemon, &p, &mock);
    let (asked, results) = run(&daemon, &sid, &mock, always_then_reject("git"));
    let expected = [
        pair("c1", "git"),
        pair("c2", "git"),
        pair("c3", "git -c alias"),
        pair("c4", "git -c core.fsmonitor"),
        pair("c5", "git"),
        pair("c6", "git"),
    ];
    assert_eq!(asked_for(&asked), expected, "{asked:?}");
    assert_eq!(asked[1]["unseen_args"], json!(["log", "--oneline"]), "{}", asked[1]);
    assert_eq!(asked[4]["unseen_args"], json!(["config", "core.fsmonitor", "touch PWNED"]), "{}", asked[4]);
    for q in [&asked[2], &asked[3], &asked[5]] {
        risky(q);
    }
    assert_eq!(asked[2]["argv"], json!(["git", "-c", "alias.x=!touch PWNED", "x"]));
    assert_eq!(asked[2]["every_time"], true);
    assert_eq!(asked[5]["changed_files"], json!([".git/config"]), "{}", asked[5]);
    assert!(asked[5].get("unseen_args").is_none(), "the command itself was approved: {}", asked[5]);
    assert!(!results["c2"].starts_with("error: user denied"), "{}", results["c2"]);
    assert!(!p.join("PWNED").exists(), "a rejected command ran");
}

#[test]
fn awk_and_sed_programs_that_run_commands_are_asked_again() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "one two\nthree four\n").unwrap();
    let mock = MockProvider::start(vec![
        cmd("a1", &["awk", "{print $1}", "a.txt"]),
        cmd("a2", &["awk", "{print $2}", "a.txt"]),
        cmd("a3", &["awk", "BEGIN{system(\"touch PWNED\")}"]),
        cmd("s1", &["sed", "-n", "1p", "a.txt"]),
        cmd("s2", &["sed", "-n", "2p", "a.txt"]),
        cmd("s3", &["sed", "-n", "1e touch PWNED", "a.txt"]),
        Step::text("done"),
    ]);
    let sid = session(&daemon, &p, &mock);
    let mut answer = always_then_reject("awk");
    let (asked, results) = run(&daemon, &sid, &mock, |e| if e["bucket"] == "sed" { "allow_always" } else { answer(e) });
    let expected = [
        pair("a1", "awk"),
        pair("a2", "awk"),
        pair("a3", "awk system()"),
        pair("s1", "sed"),
        pair("s2", "sed"),
        pair("s3", "sed e"),
    ];
    assert_eq!(asked_for(&asked), expected, "{asked:?}");
    assert_eq!(asked[1]["unseen_args"], json!(["{print $2}"]), "{}", asked[1]);
    assert_eq!(asked[4]["unseen_args"], json!(["2p"]), "{}", asked[4]);
    risky(&asked[2]);
    risky(&asked[5]);
    assert!(results["a2"].contains("two"), "{}", results["a2"]);
    assert!(results["s2"].contains("three four"), "{}", results["s2"]);
    assert!(!p.join("PWNED").exists(), "a rejected command ran");
}

#[test]
fn tar_with_a_command_to_run_is_asked_again_after_tar_was_allowed_always() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "x").unwrap();
    let out = std::process::Command::new("tar").args(["cf", "a.tar", "a.txt"]).current_dir(&p).output().unwrap();
    assert!(out.status.success());
    let mock = MockProvider::start(vec![
        cmd("t1", &["tar", "tf", "a.tar"]),
        cmd("t2", &["tar", "tvf", "a.tar"]),
        cmd("t3", &["tar", "-xf", "a.tar", "--to-command=touch PWNED"]),
        Step::text("done"),
    ]);
    let sid = session(&daemon, &p, &mock);
    let (asked, results) = run(&daemon, &sid, &mock, always_then_reject("tar"));
    assert_eq!(asked_for(&asked), [pair("t1", "tar"), pair("t2", "tar"), pair("t3", "tar --to-command")], "{asked:?}");
    assert_eq!(asked[1]["unseen_args"], json!(["tvf"]), "{}", asked[1]);
    risky(&asked[2]);
    assert!(results["t2"].contains("a.txt"), "{}", results["t2"]);
    assert!(!p.join("PWNED").exists(), "a rejected command ran");
}

#[test]
fn a_script_the_model_wrote_is_asked_every_time_and_named_while_an_unchanged_one_is_not() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("ok.py"), "print('ok')\n").unwrap();
    let evil = "open('PWNED', 'a').write('x')\n";
    let mock = MockProvider::start(vec![
        cmd("c1", &["python3", "ok.py"]),
        write("w1", "evil.py", evil),
        cmd("c2", &["python3", "evil.py"]),
        cmd("c3", &["python3", "ok.py"]),
        // Varied, or the storm breaker would refuse the third identical call.
        cmd("c4", &["python3", "evil.py", "again"]),
        cmd("c5", &["python3", "./evil.py"]),
        Step::text("done"),
    ]);
    let sid = session(&daemon, &p, &mock);
    // c2 rejected, c4 allowed once, c5 rejected.
    let mut evil_answers = ["reject_once", "allow_once", "reject_once"].into_iter();
    let (asked, results) = run(&daemon, &sid, &mock, |e| {
        if e["changed_files"].is_null() {
            "allow_always"
        } else {
            evil_answers.next().unwrap()
        }
    });
    assert_eq!(
        asked_for(&asked),
        [pair("c1", "python3"), pair("c2", "python3"), pair("c4", "python3"), pair("c5", "python3")]
    );
    assert!(asked[0]["changed_files"].is_null(), "{}", asked[0]);
    for q in &asked[1..] {
        risky(q);
        assert_eq!(q["changed_files"], json!(["evil.py"]), "{q}");
    }
    assert!(results["c3"].contains("ok"), "{}", results["c3"]);
    assert!(results["c5"].starts_with("error: user denied"), "{}", results["c5"]);
    // Only the run allowed once wrote the marker.
    assert_eq!(std::fs::read_to_string(p.join("PWNED")).unwrap(), "x");
}

#[test]
fn an_always_given_for_a_changed_script_covers_it_only_as_it_was() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        write("w1", "s.py", "print('first')\n"),
        cmd("c1", &["python3", "s.py"]),
        cmd("c2", &["python3", "s.py"]),
        write("w2", "s.py", "open('PWNED', 'w')\n"),
        cmd("c3", &["python3", "./s.py"]),
        Step::text("done"),
    ]);
    let sid = session(&daemon, &p, &mock);
    let mut answers = ["allow_always", "reject_once"].into_iter();
    let (asked, results) = run(&daemon, &sid, &mock, |_| answers.next().unwrap());
    assert_eq!(asked_for(&asked), [pair("c1", "python3"), pair("c3", "python3")], "{asked:?}");
    assert_eq!(asked[1]["changed_files"], json!(["s.py"]));
    assert!(results["c2"].contains("first"), "{}", results["c2"]);
    assert!(!p.join("PWNED").exists(), "a rejected command ran");
}

#[test]
fn make_is_asked_again_once_the_model_rewrote_the_makefile_with_a_file_tool() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("Makefile"), "test:\n\techo tested\n").unwrap();
    let mock = MockProvider::start(vec![
        cmd("m1", &["make", "test"]),
        // Varied, or the storm breaker would refuse the third identical call.
        cmd("m2", &["make", "-s", "test"]),
        // The read guard wants a file read before it is overwritten.
        Step::tool_call("r1", "read_file", json!({"file_path": "Makefile"})),
        write("w1", "Makefile", "test:\n\ttouch PWNED\n"),
        cmd("m3", &["make", "test"]),
        Step::text("done"),
    ]);
    let sid = session(&daemon, &p, &mock);
    let (asked, results) = run(&daemon, &sid, &mock, always_then_reject("make"));
    assert_eq!(asked_for(&asked), [pair("m1", "make"), pair("m2", "make"), pair("m3", "make")], "{asked:?}");
    assert_eq!(asked[1]["unseen_args"], json!(["-s"]), "{}", asked[1]);
    risky(&asked[2]);
    assert_eq!(asked[2]["changed_files"], json!(["Makefile"]));
    assert!(results["m2"].contains("tested"), "{}", results["m2"]);
    assert!(p.join("Makefile").metadata().is_ok_and(|m| m.len() > 0) && !results["w1"].starts_with("error"));
    assert!(!p.join("PWNED").exists(), "a rejected command ran");
}

#[test]
fn make_is_asked_again_once_a_command_rewrote_the_makefile() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("Makefile"), "test:\n\techo tested\n").unwrap();
    let rewrite = "printf 'test:\\n\\ttouch PWNED\\n' > Makefile";
    let mock = MockProvider::start(vec![
        cmd("m1", &["make", "test"]),
        cmd("sh", &["sh", "-c", rewrite]),
        cmd("m2", &["make", "test"]),
        Step::text("done"),
    ]);
    let sid = session(&daemon, &p, &mock);
    let (asked, _) = run(&daemon, &sid, &mock, |e| match e["bucket"].as_str() {
        Some("make") if e["changed_files"].is_null() => "allow_always",
        Some("sh -c") => "allow_once",
        _ => "reject_once",
    });
    assert_eq!(asked_for(&asked), [pair("m1", "make"), pair("sh", "sh -c"), pair("m2", "make")], "{asked:?}");
    assert_eq!(asked[1]["every_time"], true, "inline code is asked every time");
    risky(&asked[2]);
    assert_eq!(asked[2]["changed_files"], json!(["Makefile"]));
    assert!(std::fs::read_to_string(p.join("Makefile")).unwrap().contains("touch PWNED"), "the rewrite ran");
    assert!(!p.join("PWNED").exists(), "a rejected command ran");
}

#[test]
fn allow_always_on_a_use_that_runs_code_allows_it_once() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![
        cmd("a1", &["awk", "BEGIN{system(\"touch ONE\")}"]),
        cmd("a2", &["awk", "BEGIN{system(\"touch TWO\")}"]),
        Step::text("done"),
    ]);
    let sid = session(&daemon, &p, &mock);
    let mut answers = ["allow_always", "reject_once"].into_iter();
    let (asked, _) = run(&daemon, &sid, &mock, |_| answers.next().unwrap());
    assert_eq!(asked_for(&asked), [pair("a1", "awk system()"), pair("a2", "awk system()")], "{asked:?}");
    assert!(asked.iter().all(|q| q["every_time"] == true));
    assert!(p.join("ONE").exists() && !p.join("TWO").exists());
}

/// The rejections above mean something: allowed, each of these uses runs
/// the model's command in the sandbox.
#[test]
fn the_risky_uses_run_the_models_command_when_allowed() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    git(&p, &["init", "-q"]);
    std::fs::write(p.join("a.txt"), "x\n").unwrap();
    let out = std::process::Command::new("tar").args(["cf", "a.tar", "a.txt"]).current_dir(&p).output().unwrap();
    assert!(out.status.success());
    let mock = MockProvider::start(vec![
        cmd("g1", &["git", "-c", "alias.x=!touch M1", "x"]),
        cmd("g2", &["git", "-c", "core.fsmonitor=touch M2", "status"]),
        cmd("s1", &["sed", "-n", "1e touch M3", "a.txt"]),
        cmd("t1", &["tar", "-xf", "a.tar", "--to-command=touch M4"]),
        Step::text("done"),
    ]);
    let sid = session(&daemon, &p, &mock);
    let (asked, _) = run(&daemon, &sid, &mock, |_| "allow_once");
    assert_eq!(asked.len(), 4, "{asked:?}");
    for m in ["M1", "M2", "M3", "M4"] {
        assert!(p.join(m).exists(), "{m} was not made: {:?}", mock.tool_results());
    }
}

#[test]
fn an_always_for_a_harmless_line_covers_no_option_or_module_the_user_never_saw() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    std::fs::write(p.join("a.txt"), "b\na\n").unwrap();
    std::fs::write(p.join("ok.py"), "print('ok')\n").unwrap();
    let marker = p.join("PWNED").display().to_string();
    let mock = MockProvider::start(vec![
        cmd("s1", &["sort", "./a.txt"]),
        cmd("s2", &["sort", "--compress-program=sh", "-S", "1", "./a.txt"]),
        cmd("p1", &["python3", "./ok.py"]),
        write("w1", "evil.py", &format!("open({marker:?}, 'w')\n")),
        cmd("p2", &["python3", "-m", "evil"]),
        cmd("p3", &["python3", "-X", "importtime", "./ok.py"]),
        Step::text("done"),
    ]);
    let sid = session(&daemon, &p, &mock);
    let mut first = std::collections::HashSet::new();
    let (asked, results) = run(&daemon, &sid, &mock, |e| {
        // "always" the first time each program is asked, "no" after.
        let program = e["argv"][0].as_str().unwrap_or_default().to_owned();
        if first.insert(program) {
            "allow_always"
        } else {
            "reject_once"
        }
    });
    let ids: Vec<&str> = asked.iter().map(|e| e["tool_call_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["s1", "s2", "p1", "p2", "p3"], "{asked:?}");
    for (q, new) in [(&asked[1], "--compress-program=sh"), (&asked[3], "-m"), (&asked[4], "-X")] {
        let unseen = q["unseen_args"].as_array().unwrap_or_else(|| panic!("the new words are named: {q}"));
        assert!(unseen.iter().any(|w| w == new), "{q}");
    }
    for id in ["s2", "p2", "p3"] {
        assert!(results[id].starts_with("error: user denied"), "{id}: {}", results[id]);
    }
    assert!(results["p1"].contains("ok"), "{}", results["p1"]);
    assert!(!p.join("PWNED").exists(), "a rejected command ran");
}
