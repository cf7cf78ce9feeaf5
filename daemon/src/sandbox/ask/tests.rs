//! The ask gate's unit tests: Swival's bucket rules, the table of risky
//! uses (every entry's example), and what answers are kept.

use super::*;
use risky::RISKY;

fn b(argv: &[&str]) -> String {
    bucket(&argv.iter().map(|s| s.to_string()).collect::<Vec<_>>())
}

#[test]
fn buckets_follow_swivals_rules() {
    assert_eq!(b(&["git", "push", "origin", "main"]), "git push");
    assert_eq!(b(&["git", "status"]), "git");
    assert_eq!(b(&["uv", "run", "pytest", "-q"]), "uv run pytest");
    assert_eq!(b(&["python3", "-m", "pytest"]), "python3 -m pytest");
    assert_eq!(b(&["cargo", "test", "--all"]), "cargo test");
    assert_eq!(b(&["/usr/bin/ls", "-l"]), "/usr/bin/ls");
    assert_eq!(b(&["bash", "-lc", "echo hi"]), "bash -c");
    assert_eq!(b(&["perl", "-e", "print 1"]), "perl -e");
    assert_eq!(b(&["python3", "/tmp/x.py"]), "python3 <temp-script>");
    assert_eq!(b(&["python3", "script.py"]), "python3");
}

#[test]
fn the_model_cannot_steer_a_command_into_a_milder_bucket() {
    // A program it wrote is its own path, never the trusted name.
    assert_eq!(b(&["./bin/cargo", "test"]), "./bin/cargo");
    assert_eq!(b(&["/tmp/x/git", "push"]), "/tmp/x/git");
    // git's global options do not hide the subcommand.
    assert_eq!(b(&["git", "-C", ".", "push"]), "git push");
    assert_eq!(b(&["git", "--no-pager", "-c", "core.sshCommand=x", "reset", "--hard"]), "git reset");
    // Inline code is inline code wherever the option sits.
    assert_eq!(b(&["bash", "--norc", "-c", "id"]), "bash -c");
    assert_eq!(b(&["bash", "-o", "posix", "-c", "id"]), "bash -c");
    assert_eq!(b(&["python3", "-W", "ignore", "-c", "1"]), "python3 -c");
    assert_eq!(b(&["node", "--eval", "1"]), "node -e");
    assert_eq!(b(&["perl", "-E", "say 1"]), "perl -e");
    // Wrappers are bucketed by the whole command, and high-risk.
    assert_eq!(b(&["env", "FOO=1", "rm", "-rf", "x"]), "env FOO=1 rm -rf x");
    assert!(high_risk(&b(&["timeout", "5", "ls"])));
    assert_eq!(b(&["npm", "i", "left-pad"]), "npm install");
    assert_eq!(b(&["python3", "-m", "pip", "install", "x"]), "python3 -m pip");
    // Control characters are shown escaped.
    assert_eq!(display("ls\x1b[2K\rrm"), "ls\\u{1b}[2K\\rrm");
}

#[test]
fn high_risk_buckets() {
    assert!(high_risk("rm"));
    assert!(high_risk("bash -c"));
    assert!(high_risk("git push"));
    assert!(high_risk("python3 -m pip"));
    assert!(high_risk("./bin/cargo"));
    assert!(!high_risk("git"));
    assert!(!high_risk("ls"));
}

#[test]
fn an_answer_reaches_only_its_own_sessions_question() {
    let approvals = Approvals::default();
    let mine = SessionId("s1".into());
    let (id, mut rx) = approvals.ask(&mine);
    assert!(!approvals.answer(&SessionId("s2".into()), &id, ApprovalDecision::AllowOnce));
    assert!(approvals.answer(&mine, &id, ApprovalDecision::RejectOnce));
    assert_eq!(rx.try_recv().unwrap(), ApprovalDecision::RejectOnce);
    assert!(!approvals.answer(&mine, &id, ApprovalDecision::AllowOnce), "answered twice");
}

/// A verdict of `bucket` (`every_time` as given) and its command's shape.
fn asked(bucket: &str, every_time: bool) -> (Verdict, Vec<String>) {
    (Verdict { bucket: bucket.into(), every_time, ..Verdict::default() }, vec![bucket.to_owned()])
}

#[test]
fn always_answers_hold_for_the_session() {
    let gate = AskGate::new(Arc::default(), Duration::from_secs(1), &["make".into()]);
    assert_eq!(gate.known("make", &["make".into(), "anything".into()], &[]), Some(true), "a bucket from config");
    assert_eq!(gate.known("rm", &["rm".into()], &[]), None);
    let (rm, rm_shape) = asked("rm", false);
    gate.remember(&rm, &rm_shape, ApprovalDecision::RejectAlways, &[]);
    let (ls, ls_shape) = asked("ls", false);
    gate.remember(&ls, &ls_shape, ApprovalDecision::AllowOnce, &[]);
    assert_eq!(gate.known("rm", &["rm".into(), "-f".into()], &[]), Some(false), "a rejection holds for the bucket");
    assert_eq!(gate.known("ls", &ls_shape, &[]), None);
}

#[test]
fn an_always_holds_for_the_same_command_only_and_names_what_is_new() {
    let d = tempfile::tempdir().unwrap();
    for file in ["a.txt", "b.txt"] {
        std::fs::write(d.path().join(file), "x").unwrap();
    }
    let line = |l: &str| shape::shape(&shlex::split(l).unwrap(), d.path());
    let gate = AskGate::new(Arc::default(), Duration::from_secs(1), &[]);
    let v = verdict(&["sort", "a.txt"]);
    gate.remember(&v, &line("sort a.txt"), ApprovalDecision::AllowAlways, &[]);
    assert_eq!(gate.known(&v.bucket, &line("sort b.txt"), &[]), Some(true), "another path in the project");
    for later in ["sort --compress-program=sh a.txt", "sort -o /etc/x a.txt", "sort a.txt /home/u/.pgpass"] {
        let shape = line(later);
        assert_eq!(gate.known(&v.bucket, &shape, &[]), None, "{later}");
        assert!(!gate.unseen(&v.bucket, &shape).is_empty(), "{later}");
    }
    assert_eq!(gate.unseen(&v.bucket, &line("sort --compress-program=sh a.txt")), ["--compress-program=sh"]);
}

fn verdict(argv: &[&str]) -> Verdict {
    classify(&argv.iter().map(|s| s.to_string()).collect::<Vec<_>>())
}

#[test]
fn every_risky_entry_matches_its_example_with_its_own_bucket() {
    for entry in RISKY {
        let v = verdict(entry.example);
        assert!(v.high_risk && v.every_time, "{:?}: {v:?}", entry.example);
        let reason = v.reason.clone().unwrap_or_default();
        assert!(reason.contains(entry.reason), "{:?} gave {reason:?}, not {:?}", entry.example, entry.reason);
        let program = entry.example[0];
        assert!(v.bucket.starts_with(program), "{:?}: {}", entry.example, v.bucket);
        if !entry.name.is_empty() && entry.name != "-c" {
            assert!(v.bucket.ends_with(entry.name), "{:?}: {} should name {}", entry.example, v.bucket, entry.name);
        }
    }
}

#[test]
fn risky_buckets_name_the_risk() {
    assert_eq!(verdict(&["git", "-c", "alias.x=!touch PWNED", "x"]).bucket, "git -c alias");
    assert_eq!(verdict(&["git", "-c", "core.fsmonitor=touch PWNED", "status"]).bucket, "git -c core.fsmonitor");
    assert_eq!(verdict(&["git", "--config-env=core.pager=HOME", "log"]).bucket, "git -c core.pager");
    assert_eq!(verdict(&["git", "-c", "diff.py.textconv=x", "log", "-p"]).bucket, "git -c diff.textconv");
    assert_eq!(verdict(&["git", "-c", "weird.key=1", "status"]).bucket, "git -c weird.key");
    assert_eq!(verdict(&["awk", "BEGIN{system(\"touch PWNED\")}"]).bucket, "awk system()");
    assert_eq!(verdict(&["sed", "-n", "1e touch PWNED", "a.txt"]).bucket, "sed e");
    assert_eq!(verdict(&["tar", "-xf", "a.tar", "--to-command=touch PWNED"]).bucket, "tar --to-command");
    assert_eq!(verdict(&["tar", "xIf", "zstd", "a.tar"]).bucket, "tar --use-compress-program");
    assert_eq!(verdict(&["tar", "--to-com=x", "-xf", "a.tar"]).bucket, "tar --to-command");
    assert_eq!(verdict(&["find", ".", "-execdir", "id", ";"]).bucket, "find -exec");
    assert_eq!(verdict(&["/usr/bin/gawk", "BEGIN{system(\"id\")}"]).bucket, "/usr/bin/gawk system()");
    assert_eq!(verdict(&["python3.11", "-c", "1"]).bucket, "python3.11 -c");
    assert_eq!(verdict(&["python3", "-c", "1"]).bucket, "python3 -c");
    assert_eq!(verdict(&["bash", "-lc", "id"]).bucket, "bash -c");
    assert_eq!(verdict(&["uv", "run", "awk", "BEGIN{system(\"id\")}"]).bucket, "uv run awk system()");
    assert_eq!(verdict(&["timeout", "5", "ls"]).bucket, "timeout 5 ls");
    let hidden = verdict(&["uv", "run", "--with", "x", "awk", "BEGIN{system(\"id\")}"]);
    assert!(hidden.every_time && hidden.high_risk, "{hidden:?}");
}

#[test]
fn harmless_uses_keep_swivals_buckets() {
    for (argv, b) in [
        (&["git", "status"][..], "git"),
        (&["git", "log"], "git"),
        (&["git", "-c", "color.ui=never", "log"], "git"),
        (&["git", "-C", "sub", "push"], "git push"),
        (&["git", "add", "-u"], "git"),
        (&["awk", "{print $1}", "a.txt"], "awk"),
        (&["awk", "-F", ":", "$1 == \"a\" || $2 == \"b\" {print}", "a.txt"], "awk"),
        (&["awk", "-f", "prog.awk", "a.txt"], "awk"),
        (&["sed", "-n", "1p", "a.txt"], "sed"),
        (&["sed", "-i", "s/a/b/g", "a.txt"], "sed"),
        (&["sed", "-n", "1p", "web.txt"], "sed"),
        (&["tar", "tf", "a.tar"], "tar"),
        (&["tar", "-czf", "a.tgz", "--exclude=x", "."], "tar"),
        (&["find", ".", "-name", "*.rs"], "find"),
        (&["rsync", "-av", "a/", "b/"], "rsync"),
        (&["ssh", "-v", "h"], "ssh"),
        (&["zip", "-r", "a.zip", "."], "zip"),
        (&["make", "test", "-j4"], "make"),
        (&["cargo", "test", "--all"], "cargo test"),
        (&["python3", "ok.py"], "python3"),
        (&["npm", "test"], "npm test"),
        (&["less", "a.txt"], "less"),
        (&["uv", "run", "pytest", "-q"], "uv run pytest"),
    ] {
        let v = verdict(argv);
        assert_eq!(v.bucket, b, "{argv:?}");
        assert!(!v.every_time, "{argv:?}: {v:?}");
    }
}

#[test]
fn an_always_for_a_bucket_asked_every_time_allows_once_and_a_changed_file_is_asked_again() {
    let gate = AskGate::new(Arc::default(), Duration::from_secs(1), &[]);
    let (awk, awk_shape) = asked("awk system()", true);
    gate.remember(&awk, &awk_shape, ApprovalDecision::AllowAlways, &[]);
    assert_eq!(gate.known("awk system()", &awk_shape, &[]), None);
    let (sed, sed_shape) = asked("sed e", true);
    gate.remember(&sed, &sed_shape, ApprovalDecision::RejectAlways, &[]);
    assert_eq!(gate.known("sed e", &sed_shape, &[]), Some(false));
    let (py, py_shape) = asked("python3", false);
    gate.remember(&py, &py_shape, ApprovalDecision::AllowAlways, &[]);
    let changed = Changed { path: "/p/evil.py".into(), sha256: Some("00".into()) };
    assert_eq!(gate.known("python3", &py_shape, &[]), Some(true));
    assert_eq!(gate.known("python3", &py_shape, &[changed]), None);
}
