//! File tools end to end: the real daemon runs a session whose scripted
//! model (the mock provider) calls tools; each test reads the tool results
//! from the requests the mock received, as the model would see them.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{init_params, TestEnv};

/// The read-before-write guard's text (Swival's).
const READ_FIRST: &str = "error: cannot write to an existing file that hasn't been read first. Use read_file to inspect the current contents before modifying.";

/// Swival's read-guard line, then the file, read for the model.
fn read_for_the_model(result: &str, content: &str) -> bool {
    result.starts_with(READ_FIRST) && result.contains("It has now been read for you") && result.contains(content)
}

/// Run one session on `base` whose model makes `calls` in order, one per turn, then answers.
/// Returns each call's result as the model received it in the following request.
fn run_calls(env: &TestEnv, base: &Path, config: Value, calls: Vec<(&str, Value)>) -> Vec<String> {
    let ids: Vec<String> = (0..calls.len()).map(|i| format!("call_{i}")).collect();
    let mut script: Vec<Step> =
        calls.iter().zip(&ids).map(|((name, args), id)| Step::tool_call(id, name, args.clone())).collect();
    script.push(Step::text("done"));
    let mock = MockProvider::start(script);
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    c.ok("initialize", init_params());
    let mut cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "mock-model"});
    cfg["disable_nudges"] = json!(["unmade"]); // no answer nudge adds a turn after a failed change
    for (k, v) in config.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    let sid = c.ok("session/create", json!({"base_dir": base, "config": cfg}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "use the tools"}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    assert_eq!(result["answer"], "done", "{result}");
    let requests = mock.requests();
    assert_eq!(requests.len(), calls.len() + 1);
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            let messages = requests[i + 1]["messages"].as_array().unwrap();
            let msg = messages
                .iter()
                .rfind(|m| m["role"] == "tool" && m["tool_call_id"] == id.as_str())
                .unwrap_or_else(|| panic!("no tool result for {id} in request {}", i + 1));
            msg["content"].as_str().unwrap().to_owned()
        })
        .collect()
}

fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn paths_outside_the_base_dir_and_the_root_are_refused_naming_the_path() {
    let env = TestEnv::new();
    let base = env.project("p");
    // `../outside.txt` from the project, a file elsewhere, and a symlink
    // inside the project leading to it.
    std::fs::write(base.parent().unwrap().join("outside.txt"), "near").unwrap();
    let secret = env.root().join("secret.txt");
    std::fs::write(&secret, "far").unwrap();
    std::os::unix::fs::symlink(&secret, base.join("link.txt")).unwrap();
    let abs = secret.to_str().unwrap();
    let results = run_calls(
        &env,
        &base,
        json!({}),
        vec![
            ("read_file", json!({"file_path": "../outside.txt"})),
            ("read_file", json!({"file_path": abs})),
            ("read_file", json!({"file_path": "link.txt"})),
            ("read_file", json!({"file_path": "/"})),
            ("write_file", json!({"file_path": "link.txt", "content": "pwned"})),
            ("write_file", json!({"file_path": "../outside.txt", "content": "pwned"})),
        ],
    );
    let named = ["../outside.txt", abs, "link.txt", "/", "link.txt", "../outside.txt"];
    for (out, path) in results.iter().zip(named) {
        assert!(out.starts_with("error:"), "{path}: {out}");
        assert!(out.contains(path), "the error names {path}: {out}");
        assert!(!out.contains("far") && !out.contains("near"), "{out}");
    }
    assert!(results[3].contains("filesystem root"), "{}", results[3]);
    assert_eq!(read(&secret), "far");
    assert_eq!(read(base.parent().unwrap().join("outside.txt")), "near");
}

#[test]
fn allowed_dirs_are_read_write_and_allowed_dirs_ro_are_read_only() {
    let env = TestEnv::new();
    let base = env.project("p");
    let rw = env.root().join("shared-rw");
    let ro = env.root().join("shared-ro");
    std::fs::create_dir_all(&rw).unwrap();
    std::fs::create_dir_all(&ro).unwrap();
    std::fs::write(rw.join("a.txt"), "rw content\n").unwrap();
    std::fs::write(ro.join("b.txt"), "ro content\n").unwrap();
    let (a, b) = (rw.join("a.txt"), ro.join("b.txt"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let ro_new = ro.join("new.txt");
    let results = run_calls(
        &env,
        &base,
        json!({"allowed_dirs": [rw], "allowed_dirs_ro": [ro]}),
        vec![
            ("read_file", json!({"file_path": a})),
            ("write_file", json!({"file_path": a, "content": "changed"})),
            ("read_file", json!({"file_path": b})),
            ("write_file", json!({"file_path": b, "content": "changed"})),
            ("write_file", json!({"file_path": ro_new, "content": "x"})),
        ],
    );
    assert!(results[0].starts_with("1: rw content\n[checksum="), "{}", results[0]);
    assert!(results[1].starts_with("Wrote 7 bytes to "), "{}", results[1]);
    assert_eq!(read(rw.join("a.txt")), "changed");
    assert!(results[2].starts_with("1: ro content\n"), "{}", results[2]);
    for out in &results[3..] {
        assert!(out.starts_with("error:") && out.contains("read-only"), "{out}");
    }
    assert!(results[3].contains(b), "{}", results[3]);
    assert_eq!(read(ro.join("b.txt")), "ro content\n");
    assert!(!ro_new.exists());
}

#[test]
fn overwriting_an_unread_file_is_refused_until_it_is_read() {
    let env = TestEnv::new();
    let base = env.project("p");
    std::fs::write(base.join("keep.txt"), "original\n").unwrap();
    let write = json!({"file_path": "keep.txt", "content": "replaced\n"});
    let results = run_calls(
        &env,
        &base,
        json!({}),
        vec![("write_file", write.clone()), ("read_file", json!({"file_path": "keep.txt"})), ("write_file", write)],
    );
    assert!(read_for_the_model(&results[0], "original"), "{}", results[0]);
    assert!(results[2].starts_with("Wrote 9 bytes to keep.txt\n[checksum="), "{}", results[2]);
    assert_eq!(read(base.join("keep.txt")), "replaced\n");
}

#[test]
fn edit_file_matches_exact_then_trimmed_then_punctuation_normalised_text() {
    let env = TestEnv::new();
    let base = env.project("p");
    let original = "fn main() {\n    let greeting = \u{201c}hello\u{201d};\n        println!(\"{}\", greeting);\n    let n = 1;\n}\n";
    std::fs::write(base.join("main.rs"), original).unwrap();
    let results = run_calls(
        &env,
        &base,
        json!({}),
        vec![
            ("read_file", json!({"file_path": "main.rs"})),
            // Exact.
            ("edit_file", json!({"file_path": "main.rs", "old_string": "let n = 1;", "new_string": "let n = 2;"})),
            // Indentation differs on the second line: per-line trimmed match.
            (
                "edit_file",
                json!({"file_path": "main.rs", "old_string": "println!(\"{}\", greeting);\nlet n = 2;", "new_string": "    println!(\"{greeting}\");\n    let n = 3;"}),
            ),
            // Curly quotes in the file, straight ones sent.
            (
                "edit_file",
                json!({"file_path": "main.rs", "old_string": "let greeting = \"hello\";", "new_string": "    let greeting = \"hi\";"}),
            ),
        ],
    );
    for out in &results[1..] {
        assert!(out.starts_with("Edited main.rs\n[checksum="), "{out}");
    }
    assert_eq!(
        read(base.join("main.rs")),
        "fn main() {\n    let greeting = \"hi\";\n    println!(\"{greeting}\");\n    let n = 3;\n}\n"
    );
}

#[test]
fn ambiguous_edit_lists_candidate_lines_and_line_number_picks_one() {
    let env = TestEnv::new();
    let base = env.project("p");
    std::fs::write(base.join("c.py"), "x = 0\nprint(x)\nx = 0\n").unwrap();
    let results = run_calls(
        &env,
        &base,
        json!({}),
        vec![
            ("read_file", json!({"file_path": "c.py"})),
            ("edit_file", json!({"file_path": "c.py", "old_string": "x = 0", "new_string": "x = 1"})),
            ("edit_file", json!({"file_path": "c.py", "old_string": "x = 0", "new_string": "x = 1", "line_number": 3})),
        ],
    );
    let err = &results[1];
    assert!(
        err.starts_with("error: edit_file: multiple matches (2 found); add line_number from read_file to target one match, or set replace_all=true. (in c.py)"),
        "{err}"
    );
    assert!(err.contains("\n  line 1: 'x = 0'\n  line 3: 'x = 0'"), "{err}");
    assert!(results[2].starts_with("Edited c.py"), "{}", results[2]);
    assert_eq!(read(base.join("c.py")), "x = 0\nprint(x)\nx = 1\n");
}

#[test]
fn edit_miss_shows_the_closest_match_with_line_numbers() {
    let env = TestEnv::new();
    let base = env.project("p");
    std::fs::write(
        base.join("lib.rs"),
        "use std::io;\n\npub fn parse_config(path: &str) -> io::Result<Config> {\n    todo_later()\n}\n",
    )
    .unwrap();
    let results = run_calls(
        &env,
        &base,
        json!({}),
        vec![
            ("read_file", json!({"file_path": "lib.rs"})),
            (
                "edit_file",
                json!({"file_path": "lib.rs", "old_string": "pub fn parse_configs(path: &Path) -> io::Result<Config> {", "new_string": "x"}),
            ),
        ],
    );
    let err = &results[1];
    assert!(err.starts_with("error: edit_file: old_string not found."), "{err}");
    assert!(err.contains("Closest match (line 3,"), "{err}");
    assert!(err.contains("    3: pub fn parse_config(path: &str) -> io::Result<Config> {"), "{err}");
    assert!(read(base.join("lib.rs")).contains("parse_config(path: &str)"));
}

#[test]
fn a_repeated_edit_miss_gets_the_call_that_applies_and_a_short_file_is_shown_whole() {
    let env = TestEnv::new();
    let base = env.project("p");
    std::fs::write(base.join("sum.py"), "def total(n):\n    return n * (n + 1) // 2\n\nprint(total(3))\n").unwrap();
    let imagined =
        json!({"file_path": "sum.py", "old_string": "return n*(n+1)//2", "new_string": "return sum(range(n + 1))"});
    let nowhere = json!({"file_path": "sum.py", "old_string": "return 1 + 2 + ... + n", "new_string": "x"});
    let results = run_calls(
        &env,
        &base,
        json!({}),
        vec![
            ("read_file", json!({"file_path": "sum.py"})),
            ("edit_file", nowhere.clone()),
            ("edit_file", imagined.clone()),
            ("edit_file", imagined),
        ],
    );
    assert!(
        results[1].contains("The whole file (4 lines)") && results[1].contains("\n2:     return n * (n + 1) // 2"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("    2:     return n * (n + 1) // 2") && results[2].contains("around it:"),
        "{}",
        results[2]
    );
    assert!(results[2].contains("without the \"N: \" line numbers"), "{}", results[2]);
    let again = &results[3];
    assert!(again.contains("same old_string before"), "{again}");
    let call: Value = serde_json::from_str(again.lines().last().unwrap()).unwrap();
    assert_eq!(call["old_string"], "    return n * (n + 1) // 2", "{again}");
    assert_eq!(call["new_string"], "return sum(range(n + 1))");
}

/// Where each page of `text` starts under the 50 KB read cap (numbered
/// lines, one newline each), so the scripted model can ask for them.
fn page_offsets(text: &str) -> Vec<usize> {
    let mut offsets = vec![1];
    let mut used = 0;
    for (i, line) in text.lines().enumerate() {
        let entry = format!("{}: {line}", i + 1).len() + 1;
        if used + entry > 50 * 1024 {
            offsets.push(i + 1);
            used = 0;
        }
        used += entry;
    }
    offsets
}

#[test]
fn a_200_kb_file_read_in_pages_reassembles_to_the_whole_file() {
    let env = TestEnv::new();
    let base = env.project("p");
    let text: String = (0..2000).map(|i| format!("row {i:04} {}\n", "abcdefghij".repeat(10))).collect();
    assert!(text.len() >= 200 * 1024);
    std::fs::write(base.join("big.txt"), &text).unwrap();
    let offsets = page_offsets(&text);
    assert!(offsets.len() >= 4, "{offsets:?}");
    let calls = offsets.iter().map(|o| ("read_file", json!({"file_path": "big.txt", "offset": o}))).collect();
    // A window large enough that compaction never cuts the pages under test.
    let pages = run_calls(&env, &base, json!({"max_context_tokens": 1_000_000}), calls);
    let mut seen = String::new();
    for (i, page) in pages.iter().enumerate() {
        assert!(page.len() <= 50 * 1024 + 100, "page {i} is {} bytes", page.len());
        let hint = page
            .lines()
            .find_map(|l| l.strip_prefix('[')?.split("use offset=").nth(1))
            .map(|rest| rest.trim_end_matches(" to continue]").parse::<usize>().unwrap());
        assert_eq!(hint, offsets.get(i + 1).copied(), "page {i}'s continue hint");
        for line in page.lines().filter(|l| !l.starts_with('[')) {
            let (_, body) = line.split_once(": ").unwrap();
            seen.push_str(body);
            seen.push('\n');
        }
    }
    assert_eq!(seen, text);
}

#[test]
fn a_5000_char_line_comes_back_cut_with_a_marker() {
    let env = TestEnv::new();
    let base = env.project("p");
    std::fs::write(base.join("wide.txt"), format!("short\n{}\nend\n", "w".repeat(5000))).unwrap();
    let results = run_calls(&env, &base, json!({}), vec![("read_file", json!({"file_path": "wide.txt"}))]);
    let lines: Vec<&str> = results[0].lines().collect();
    assert_eq!(lines[0], "1: short");
    assert_eq!(lines[1], format!("2: {}… [line truncated: 5000 chars]", "w".repeat(2000)));
    assert_eq!(lines[2], "3: end");
}

#[test]
fn list_files_and_grep_stop_at_100_results_and_say_so() {
    let env = TestEnv::new();
    let base = env.project("p");
    for i in 0..150 {
        std::fs::write(base.join(format!("f{i:03}.txt")), "needle\n").unwrap();
    }
    let results = run_calls(
        &env,
        &base,
        json!({}),
        vec![("list_files", json!({"pattern": "*.txt"})), ("grep", json!({"pattern": "needle"}))],
    );
    let listed: Vec<&str> = results[0].lines().collect();
    assert_eq!(listed.len(), 101, "{}", results[0]);
    assert!(listed[..100].iter().all(|l| l.starts_with('f') && l.ends_with(".txt")));
    assert_eq!(listed[100], "(Showing first 100 of 150 matches (by mtime, newest first). Narrow the path or pattern.)");
    let grep = &results[1];
    assert!(grep.starts_with("Found 150 matches\n"), "{grep}");
    assert_eq!(grep.matches("  Line 1: needle").count(), 100);
    assert!(grep.ends_with("\n(Results truncated: showing first 100 matches. Use a more specific pattern or path.)"));
}

#[test]
fn the_model_is_offered_the_file_tools_in_swivals_order_outline_after_fetch_url() {
    let env = TestEnv::new();
    let base = env.project("p");
    let mock = MockProvider::start(vec![Step::text("hi")]);
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    c.ok("initialize", init_params());
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "mock-model"});
    let sid = c.ok("session/create", json!({"base_dir": base, "config": cfg}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}));
    let names: Vec<String> = mock.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    let ours = [
        "read_file",
        "read_multiple_files",
        "write_file",
        "edit_file",
        "list_files",
        "grep",
        "think",
        "todo",
        "delete_file",
        "fetch_url",
        "outline",
    ];
    let positions: Vec<usize> = ours
        .iter()
        .map(|n| names.iter().position(|m| m == n).unwrap_or_else(|| panic!("{n} offered: {names:?}")))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{names:?}");
}

#[test]
fn delete_file_moves_the_file_to_the_trash_and_read_multiple_files_reads_a_batch() {
    let env = TestEnv::new();
    let base = env.project("p");
    std::fs::write(base.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(base.join("b.txt"), "beta\n").unwrap();
    let results = run_calls(
        &env,
        &base,
        json!({}),
        vec![
            ("delete_file", json!({"file_path": "a.txt"})),
            ("read_multiple_files", json!({"files": ["a.txt", {"file_path": "b.txt"}]})),
            ("delete_file", json!({"file_path": "a.txt"})),
        ],
    );
    assert!(read_for_the_model(&results[0], "alpha"), "{}", results[0]);
    assert!(
        results[1].starts_with(
            "files_succeeded: 2\nfiles_with_errors: 0\nbatch_truncated: false\n\n=== FILE: a.txt ===\nstatus: ok\n"
        ),
        "{}",
        results[1]
    );
    assert!(results[1].contains("=== FILE: b.txt ===") && results[1].contains("1: beta"));
    let trashed = results[2].lines().next().unwrap_or_default();
    let id = trashed.strip_prefix("Trashed a.txt -> .swival/trash/").unwrap_or_else(|| panic!("{}", results[2]));
    assert!(!base.join("a.txt").exists());
    assert_eq!(read(base.join(".swival/trash").join(id).join("a.txt")), "alpha\n");
    let index = read(base.join(".swival/trash/index.jsonl"));
    let entry: Value = serde_json::from_str(index.trim()).unwrap();
    assert_eq!(entry["original_path"], "a.txt");
}

/// What the flipper in the race test did, and what the model saw.
#[derive(Debug, Default)]
struct RaceTally {
    /// Times `d` changed between a directory and a symlink.
    flips: usize,
    /// `write_file d/x` results that wrote.
    written: usize,
    /// `read_file d/secret` results that read the inside file.
    read_inside: usize,
    /// Results refused by the path check (`d` was a symlink then).
    refused: usize,
    /// Results refused by the open beneath the base dir (`d` became a
    /// symlink after the check).
    refused_late: usize,
    /// Any other error.
    other: usize,
}

/// What the file outside the base dir holds in the race test.
const MARKER: &str = "OUTSIDE-MARKER-7d3e91";
/// Writes, and as many reads, in the race test.
const EACH: usize = 500;
/// Calls per model turn in the race test.
const PER_TURN: usize = 50;

#[test]
fn a_directory_flipped_to_a_symlink_never_lets_file_tools_reach_outside() {
    let env = TestEnv::new();
    let base = env.project("p");
    let outside = env.root().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret"), MARKER).unwrap();
    let d = base.join("d");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("secret"), "inside secret\n").unwrap();

    // 500 writes and 500 reads, interleaved, 50 per model turn.
    let calls: Vec<(String, &str, Value)> = (0..2 * EACH)
        .map(|k| match k % 2 {
            0 => (format!("w{k}"), "write_file", json!({"file_path": "d/x", "content": format!("inside {k}\n")})),
            _ => (format!("r{k}"), "read_file", json!({"file_path": "d/secret"})),
        })
        .collect();
    let mut script: Vec<Step> = calls
        .chunks(PER_TURN)
        .map(|turn| Step::tool_calls(turn.iter().map(|(id, name, args)| (id.as_str(), *name, args.clone())).collect()))
        .collect();
    script.push(Step::text("done"));
    let mock = MockProvider::start(script).with_context_length(50_000_000);
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    c.ok("initialize", init_params());
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "mock-model", "max_turns": 100});
    let sid = c.ok("session/create", json!({"base_dir": base, "config": cfg}))["session_id"].clone();

    let flipper = Flipper::start(d, base.join("d.alt"), &outside);
    let run = c.ok("run/start", json!({"session_id": sid, "task": "race"}))["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    let flips = flipper.stop();
    assert_eq!(result["answer"], "done", "{result}");

    let names: Vec<String> =
        std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["secret"], "a file appeared outside the base dir");
    assert_eq!(read(outside.join("secret")), MARKER);
    assert!(!mock.requests_text().contains(MARKER), "the outside file reached the model");

    let tally = race_tally(&calls, &mock.requests(), flips);
    eprintln!("race tally: {tally:?}");
    assert!(tally.flips > 2 * EACH, "the flipper barely ran: {tally:?}");
    assert!(tally.refused + tally.refused_late > 0 && tally.written + tally.read_inside > 0, "{tally:?}");
}

/// A thread flipping a directory between itself and a symlink to
/// `outside` as fast as it can: one atomic exchange with `alt` per flip,
/// so the path is always one or the other, never missing.
struct Flipper {
    /// Set to end the thread.
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Flips so far.
    flips: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// The thread.
    thread: std::thread::JoinHandle<()>,
}

impl Flipper {
    /// Make `alt` a symlink to `outside` and start exchanging it with `dir`.
    fn start(dir: PathBuf, alt: PathBuf, outside: &Path) -> Flipper {
        use std::sync::atomic::Ordering;
        std::os::unix::fs::symlink(outside, &alt).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flips = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let thread = {
            let (stop, flips) = (stop.clone(), flips.clone());
            std::thread::spawn(move || {
                use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
                while !stop.load(Ordering::Relaxed) {
                    renameat2(AT_FDCWD, &dir, AT_FDCWD, &alt, RenameFlags::RENAME_EXCHANGE).unwrap();
                    flips.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        Flipper { stop, flips, thread }
    }

    /// Stop flipping; how many flips there were.
    fn stop(self) -> usize {
        use std::sync::atomic::Ordering;
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
        self.flips.load(Ordering::Relaxed)
    }
}

/// Every call's result, read from the request after its turn, sorted
/// into the tally; none may hold the outside file's marker.
fn race_tally(calls: &[(String, &str, Value)], requests: &[Value], flips: usize) -> RaceTally {
    assert_eq!(requests.len(), 2 * EACH / PER_TURN + 1);
    let mut tally = RaceTally { flips, ..RaceTally::default() };
    for (turn, batch) in calls.chunks(PER_TURN).enumerate() {
        let messages = requests[turn + 1]["messages"].as_array().unwrap();
        for (id, _, _) in batch {
            let out = messages
                .iter()
                .rfind(|m| m["role"] == "tool" && m["tool_call_id"] == id.as_str())
                .unwrap_or_else(|| panic!("no tool result for {id}"))["content"]
                .as_str()
                .unwrap();
            assert!(!out.contains(MARKER), "{id}: {out}");
            if out.starts_with("Wrote ") {
                tally.written += 1;
            } else if out.contains("1: inside secret") {
                tally.read_inside += 1;
            } else if out.contains("is a symlink and was not followed") {
                tally.refused_late += 1;
            } else if out.contains("outside base directory") {
                tally.refused += 1;
            } else {
                assert!(out.starts_with("error:"), "{id}: {out}");
                tally.other += 1;
            }
        }
    }
    tally
}

#[test]
fn a_cloned_repo_whose_swival_dir_is_a_symlink_gets_its_answer_and_a_warning_but_no_history() {
    let env = TestEnv::new();
    let base = env.project("cloned");
    let outside = env.root().join("outside");
    std::fs::create_dir(&outside).unwrap();
    // As committed in a repository: `.swival -> ../../outside`.
    std::os::unix::fs::symlink("../../outside", base.join(".swival")).unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("t1", "todo", json!({"action": "add", "tasks": "look around"})),
        Step::text("the answer"),
    ]);
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    c.ok("initialize", init_params());
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "mock-model"});
    let sid = c.ok("session/create", json!({"base_dir": base, "config": cfg}))["session_id"].clone();
    c.ok("run/start", json!({"session_id": sid, "task": "summarise the repo"}));
    let events = swival_tests::events_until_finished(&mut c, sid.as_str().unwrap(), 0);
    let end = events.last().unwrap();
    assert_eq!(end["outcome"], "success", "{end}");
    assert_eq!(end["answer"], "the answer", "{end}");
    let warnings: Vec<&str> =
        events.iter().filter(|e| e["type"] == "warning").filter_map(|e| e["message"].as_str()).collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("history was not written") && w.contains(".swival is a symlink and was not followed")),
        "{warnings:?}"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "something was written through .swival");
}
