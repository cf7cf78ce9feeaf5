//! Sessions in their own git worktree: `session/create {worktree: true}`
//! (`swivalctl run --worktree`) works on a branch `swival/<id>` in the
//! daemon's worktrees dir and leaves the user's checkout alone;
//! `swivalctl apply` brings the work in as uncommitted changes, or names
//! the conflicting files and changes nothing; `session/prune` removes the
//! worktrees of deleted sessions and keeps their branches. The model's
//! edits are scripted through the mock provider's tool calls.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use swival_tests::mock::{Gate, MockProvider, Step};
use swival_tests::{Daemon, NdConn, TestEnv};

/// Run git in `dir` with a fixed identity and no user config; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A project `name` in a git repository with `a.txt` committed.
fn repo(env: &TestEnv, name: &str) -> PathBuf {
    let p = env.project(name);
    git(&p, &["init", "-q"]);
    std::fs::write(p.join("a.txt"), "one\n").unwrap();
    git(&p, &["add", "a.txt"]);
    git(&p, &["commit", "-q", "-m", "start"]);
    p.canonicalize().unwrap()
}

/// The test's worktrees dir, set as the daemon's `worktrees_dir`; a
/// daemon started on it.
fn daemon(env: &TestEnv) -> (Daemon, PathBuf) {
    let dir = env.root().join("worktrees");
    env.daemon_settings(&format!("worktrees_dir = \"{}\"", dir.display()));
    (env.start_daemon(), dir)
}

/// The session config on `mock`: no history file, writes without reads.
fn config(mock: &MockProvider, extra: Value) -> Value {
    let mut c = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true,
                       "no_read_guard": true});
    c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    c
}

/// A worktree session of `base` on `mock`: the whole `session/create` result.
fn worktree_session(c: &mut NdConn, base: &Path, mock: &MockProvider, extra: Value) -> Value {
    c.ok("session/create", json!({"base_dir": base, "config": config(mock, extra), "worktree": true}))
}

/// Run `task` in `sid` to its end; its result.
fn run(c: &mut NdConn, sid: &Value, task: &str) -> Value {
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    c.ok("run/wait", json!({"run_id": run}))
}

/// Script one turn writing `file` with `content`, then an answer.
fn write_then_answer(mock: &MockProvider, id: &str, file: &str, content: &str) {
    mock.push(Step::tool_call(id, "write_file", json!({"file_path": file, "content": content})));
    mock.push(Step::text("done"));
}

/// Stop `daemon` as a service manager does, and wait for it.
fn stop(mut daemon: Daemon) {
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    daemon.wait_exit();
}

/// `swivalctl args…` in `cwd`: (exit code, stdout, stderr).
fn ctl(env: &TestEnv, daemon: &Daemon, cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = env.swivalctl(daemon, cwd).args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn a_worktree_session_works_on_its_branch_and_leaves_the_checkout_untouched() {
    let env = TestEnv::new();
    let (daemon, dir) = daemon(&env);
    let p = repo(&env, "p");
    std::fs::write(p.join("draft.txt"), "not committed\n").unwrap();
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let created = worktree_session(&mut c, &p, &mock, json!({}));
    let sid = created["session_id"].clone();
    let warnings = created["warnings"].to_string();
    assert!(warnings.contains("1 file(s) with uncommitted changes"), "{created}");
    let info = c.ok("session/get", json!({"session_id": sid}))["info"].clone();
    let branch = format!("swival/{}", sid.as_str().unwrap());
    assert_eq!(info["base_dir"], p.display().to_string());
    assert_eq!(info["worktree"]["branch"], branch.as_str(), "{info}");
    let wt = PathBuf::from(info["worktree"]["path"].as_str().unwrap());
    assert!(wt.starts_with(dir.canonicalize().unwrap()) && wt.ends_with(sid.as_str().unwrap()), "{}", wt.display());
    assert!(!wt.join("draft.txt").exists(), "the worktree starts from HEAD");

    write_then_answer(&mock, "w", "a.txt", "changed in the worktree\n");
    assert_eq!(run(&mut c, &sid, "change a.txt")["outcome"], "success");
    assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "changed in the worktree\n");
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "one\n", "the checkout is untouched");
    assert!(git(&p, &["branch", "--list", &branch]).contains(&branch));

    // The worktree is remembered across a restart, and listed.
    drop(c);
    stop(daemon);
    let daemon = env.start_daemon();
    let list = daemon.nd().ok("session/list", json!({}));
    assert_eq!(list["sessions"][0]["worktree"]["path"], wt.display().to_string(), "{list}");
    let (code, out, _) = ctl(&env, &daemon, &p, &["sessions"]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("worktree {} (branch {branch})", wt.display())), "{out}");

    // `swivalctl run --worktree` says where it works and how to apply.
    let mock = MockProvider::start(vec![Step::text("looked")]);
    let args = ["run", "--worktree", "--provider", "generic", "--base-url", &mock.base_url(), "--model", "m"];
    let (code, out, err) = ctl(&env, &daemon, &p, &[&args[..], &["--no-history", "look"]].concat());
    assert_eq!((code, out.as_str()), (0, "looked\n"), "{err}");
    assert!(
        err.contains("on branch swival/s_") && err.contains("bring the changes in with `swivalctl apply s_"),
        "{err}"
    );
    assert_eq!(daemon.nd().ok("session/list", json!({}))["sessions"][1]["worktree"]["origin"], p.display().to_string());
}

#[test]
fn apply_brings_the_first_session_in_and_names_the_conflict_of_the_second() {
    let env = TestEnv::new();
    let (daemon, _) = daemon(&env);
    let p = repo(&env, "p");
    let (m1, m2) = (MockProvider::start(vec![]), MockProvider::start(vec![]));
    let mut c = daemon.nd();
    let s1 = worktree_session(&mut c, &p, &m1, json!({}))["session_id"].clone();
    let s2 = worktree_session(&mut c, &p, &m2, json!({}))["session_id"].clone();
    write_then_answer(&m1, "w1", "a.txt", "first\n");
    write_then_answer(&m2, "w2", "a.txt", "second\n");
    assert_eq!(run(&mut c, &s1, "edit a.txt")["outcome"], "success");
    assert_eq!(run(&mut c, &s2, "edit a.txt")["outcome"], "success");
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "one\n", "untouched until apply");

    let (code, out, err) = ctl(&env, &daemon, &p, &["apply", s1.as_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("applied 1 file(s)") && out.contains("a.txt"), "{out}");
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "first\n");
    assert_eq!(git(&p, &["diff", "--cached", "--name-only"]), "", "the index is untouched");
    assert_eq!(git(&p, &["status", "--porcelain"]), " M a.txt\n");

    let (code, out, err) = ctl(&env, &daemon, &p, &["apply", s2.as_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("not applied") && err.contains("\n  a.txt"), "{err}");
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "first\n", "a conflict changes nothing");
    let r = c.ok("session/apply", json!({"session_id": s2}));
    assert_eq!((&r["applied"], &r["conflicts"]), (&json!(false), &json!(["a.txt"])), "{r}");

    // A second apply brings only what is newer.
    let (code, out, _) = ctl(&env, &daemon, &p, &["apply", s1.as_str().unwrap()]);
    assert_eq!(
        (code, out.trim()),
        (0, format!("nothing new to apply from branch swival/{}", s1.as_str().unwrap()).as_str())
    );
    write_then_answer(&m1, "w3", "b.txt", "more\n");
    assert_eq!(run(&mut c, &s1, "add b.txt")["outcome"], "success");
    let r = c.ok("session/apply", json!({"session_id": s1}));
    assert_eq!((&r["applied"], &r["files"]), (&json!(true), &json!(["b.txt"])), "{r}");
    assert_eq!(std::fs::read_to_string(p.join("b.txt")).unwrap(), "more\n");
}

#[test]
fn prune_removes_the_worktrees_of_deleted_sessions_and_keeps_their_branches() {
    let env = TestEnv::new();
    let (daemon, _) = daemon(&env);
    let p = repo(&env, "p");
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let sid = worktree_session(&mut c, &p, &mock, json!({}))["session_id"].clone();
    let wt = c.ok("session/get", json!({"session_id": sid}))["info"]["worktree"]["path"].as_str().unwrap().to_owned();
    write_then_answer(&mock, "w", "new.txt", "work in progress\n");
    assert_eq!(run(&mut c, &sid, "start something")["outcome"], "success");
    // A fresh daemon holds no session in memory, so prune may delete it.
    drop(c);
    stop(daemon);
    let daemon = env.start_daemon();
    let (code, out, err) = ctl(&env, &daemon, &p, &["sessions", "--json", "prune", "--older-than", "0s"]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let branch = format!("swival/{}", sid.as_str().unwrap());
    assert_eq!(r["removed"], json!([sid]), "{r}");
    assert_eq!((&r["worktrees_removed"], &r["branches_kept"]), (&json!([wt]), &json!([branch])), "{r}");
    assert!(!Path::new(&wt).exists(), "the worktree is removed");
    assert_eq!(git(&p, &["show", &format!("{branch}:new.txt")]), "work in progress\n", "its work is on the branch");
    assert!(!git(&p, &["worktree", "list"]).contains(&wt));
    let again = daemon.nd().ok("session/prune", json!({"older_than_s": 0}));
    assert_eq!(again["worktrees_removed"], json!([]), "{again}");
}

#[test]
fn a_directory_without_a_git_commit_is_refused_in_one_line() {
    let env = TestEnv::new();
    let (daemon, dir) = daemon(&env);
    let plain = env.project("plain").canonicalize().unwrap();
    let empty = env.project("empty").canonicalize().unwrap();
    git(&empty, &["init", "-q"]);
    let mut c = daemon.nd();
    for base in [&plain, &empty] {
        let r = c.call("session/create", json!({"base_dir": base, "worktree": true}));
        assert_eq!(r["error"]["data"]["kind"], "config_invalid", "{r}");
        let said = format!("{} is not a git repository with a commit; --worktree needs one", base.display());
        assert_eq!(r["error"]["message"], said.as_str(), "{r}");
    }
    let (code, _, err) =
        ctl(&env, &daemon, &plain, &["run", "--worktree", "--provider", "generic", "--model", "m", "t"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim(),
        format!("Error: {} is not a git repository with a commit; --worktree needs one", plain.display())
    );
    assert!(c.ok("session/list", json!({}))["sessions"].as_array().unwrap().is_empty());
    assert!(std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0) == 0, "nothing is left in the worktrees dir");
}

#[test]
fn apply_names_an_unknown_a_plain_and_a_running_session_and_what_to_do() {
    let env = TestEnv::new();
    let (daemon, _) = daemon(&env);
    let p = repo(&env, "p");
    let (code, _, err) = ctl(&env, &daemon, &p, &["apply", "s_0000000000000000"]);
    assert_eq!(code, 1);
    assert!(err.starts_with("swivalctl: error: no session s_0000000000000000; list sessions"), "{err}");
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("done"), &gate)]);
    let mut c = daemon.nd();
    let plain =
        c.ok("session/create", json!({"base_dir": p, "config": config(&mock, json!({}))}))["session_id"].clone();
    let (code, _, err) = ctl(&env, &daemon, &p, &["apply", plain.as_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("does not work in a git worktree (it was not created with --worktree)"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let sid = worktree_session(&mut c, &p, &mock, json!({}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "t"}))["run_id"].clone();
    let busy = c.call("session/apply", json!({"session_id": sid}));
    assert_eq!(busy["error"]["data"]["kind"], "session_busy", "{busy}");
    gate.open();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    assert_eq!(c.ok("session/apply", json!({"session_id": sid}))["applied"], true);
}

#[test]
fn the_model_cannot_write_the_checkout_it_came_from() {
    let env = TestEnv::new();
    let (daemon, _) = daemon(&env);
    let p = repo(&env, "p");
    let origin_file = p.join("a.txt");
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let sid = worktree_session(&mut c, &p, &mock, json!({"allowed_commands": ["sh"]}))["session_id"].clone();
    mock.push(Step::tool_call("abs", "write_file", json!({"file_path": origin_file, "content": "x"})));
    mock.push(Step::tool_call("dotgit", "write_file", json!({"file_path": ".git", "content": "gitdir: /tmp"})));
    mock.push(Step::text("done"));
    assert_eq!(run(&mut c, &sid, "write outside")["outcome"], "success");
    let results = mock.tool_results();
    assert!(results["abs"].starts_with("error:"), "{}", results["abs"]);
    assert!(results["dotgit"].starts_with("error:"), "{}", results["dotgit"]);
    assert_eq!(std::fs::read_to_string(&origin_file).unwrap(), "one\n");

    let st = c.ok("policy/status", json!({"session_id": sid}));
    if !st["sandbox"]["enforced"].to_string().contains("Landlock") {
        eprintln!(
            "SKIPPED: commands writing the checkout, because the kernel here does not confine them: {}",
            st["sandbox"]
        );
        return;
    }
    let git_config = p.join(".git/config");
    let before = std::fs::read_to_string(&git_config).unwrap();
    let write = format!("echo x > {}; echo x >> {}", origin_file.display(), git_config.display());
    mock.push(Step::tool_call("sh", "run_command", json!({"command": ["sh", "-c", write]})));
    mock.push(Step::text("done"));
    assert_eq!(run(&mut c, &sid, "write with a command")["outcome"], "success");
    let out = &mock.tool_results()["sh"];
    assert!(out.contains("ermission denied") || out.contains("Read-only"), "{out}");
    assert_eq!(std::fs::read_to_string(&origin_file).unwrap(), "one\n", "{out}");
    assert_eq!(std::fs::read_to_string(&git_config).unwrap(), before, "{out}");
}

#[test]
fn a_subagent_of_a_worktree_session_works_in_the_same_worktree() {
    const PREAMBLE: &str = "You are a subagent working on a specific task within a larger project.";
    let env = TestEnv::new();
    let (daemon, _) = daemon(&env);
    let p = repo(&env, "p");
    let mock = MockProvider::start(vec![]);
    mock.push(Step::tool_call("s1", "spawn_subagent", json!({"task": "write child.txt"})));
    mock.push(Step::tool_call("c1", "check_subagents", json!({"action": "collect", "subagent_id": "sub_1"})));
    mock.push(Step::text("the child wrote it"));
    let write = json!({"file_path": "child.txt", "content": "from the child\n"});
    mock.route(&[PREAMBLE, "write child.txt"], vec![Step::tool_call("w", "write_file", write), Step::text("wrote it")]);
    let mut c = daemon.nd();
    let created = worktree_session(&mut c, &p, &mock, json!({"subagents": true}));
    let (sid, wt) = (created["session_id"].clone(), PathBuf::from(created["worktree"]["path"].as_str().unwrap()));
    assert_eq!(run(&mut c, &sid, "have a subagent write child.txt")["outcome"], "success");
    let results = mock.tool_results();
    assert_eq!(results["s1"], "Background agent sub_1 is ready.");
    assert_eq!(results["c1"], "wrote it");
    assert_eq!(std::fs::read_to_string(wt.join("child.txt")).unwrap(), "from the child\n");
    assert!(!p.join("child.txt").exists(), "the checkout is untouched");

    // The child is a session of the same project, owned by its parent's worktree.
    let list = c.ok("session/list", json!({}));
    let child = list["sessions"].as_array().unwrap().iter().find(|s| s["parent"].is_object()).unwrap().clone();
    assert_eq!(child["base_dir"], p.display().to_string(), "{child}");
    let (code, _, err) = ctl(&env, &daemon, &p, &["apply", child["session_id"].as_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains(&format!("swivalctl apply {}", sid.as_str().unwrap())), "{err}");
    let (code, out, err) = ctl(&env, &daemon, &p, &["apply", sid.as_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(std::fs::read_to_string(p.join("child.txt")).unwrap(), "from the child\n");
}

/// The system prompt of the first request `mock` got.
fn system_prompt(mock: &MockProvider) -> String {
    let first = &mock.requests()[0];
    first["messages"][0]["content"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_worktree_session_carries_the_checkouts_instructions_memory_and_skills_and_names_what_it_leaves_out() {
    let env = TestEnv::new();
    let (daemon, _) = daemon(&env);
    let p = repo(&env, "p");
    std::fs::write(p.join("AGENTS.md"), "Always answer in French.\n").unwrap();
    std::fs::create_dir_all(p.join(".swival/memory")).unwrap();
    std::fs::write(p.join(".swival/memory/MEMORY.md"), "## Build <!-- bootstrap -->\nRun make build-all first.\n")
        .unwrap();
    std::fs::create_dir_all(p.join(".agents/skills/deploy")).unwrap();
    let skill = "---\nname: deploy\ndescription: Ship the build to staging.\n---\nRun make deploy.\n";
    std::fs::write(p.join(".agents/skills/deploy/SKILL.md"), skill).unwrap();
    for i in 1..=7 {
        std::fs::write(p.join(format!("draft{i}.txt")), "not committed\n").unwrap();
    }
    let mock = MockProvider::start(vec![]);
    let mut c = daemon.nd();
    let created = worktree_session(&mut c, &p, &mock, json!({}));
    let (sid, wt) = (created["session_id"].clone(), PathBuf::from(created["worktree"]["path"].as_str().unwrap()));
    let warnings = created["warnings"].to_string();
    assert!(
        warnings.contains("7 file(s) with uncommitted changes")
            && warnings.contains("draft1.txt, draft2.txt, draft3.txt, draft4.txt, draft5.txt and 2 more"),
        "the files left out, by name: {warnings}"
    );
    assert!(!warnings.contains("AGENTS.md") && !warnings.contains("SKILL.md"), "carried: {warnings}");

    write_then_answer(&mock, "w", "a.txt", "changed\n");
    assert_eq!(run(&mut c, &sid, "change a.txt, then build")["outcome"], "success");
    let system = system_prompt(&mock);
    assert!(system.contains("Always answer in French."), "the untracked AGENTS.md: {system}");
    assert!(system.contains("Run make build-all first."), "the memory: {system}");
    assert!(system.contains("deploy: Ship the build to staging."), "the skill: {system}");
    assert_eq!(std::fs::read_to_string(wt.join(".agents/skills/deploy/SKILL.md")).unwrap(), skill);

    // What was carried is context, not the session's work: apply brings
    // only the change, without colliding with the checkout's own copies.
    let applied = c.ok("session/apply", json!({"session_id": sid}));
    assert_eq!(applied["applied"], true, "{applied}");
    assert_eq!(applied["files"], json!(["a.txt"]), "{applied}");
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "changed\n");
}

#[test]
fn a_symlinked_agents_md_in_the_checkout_is_neither_copied_nor_followed() {
    let env = TestEnv::new();
    let (daemon, _) = daemon(&env);
    let p = repo(&env, "p");
    let secret = env.root().join("outside-secret.txt");
    std::fs::write(&secret, "SECRET-OUTSIDE-THE-PROJECT\n").unwrap();
    std::os::unix::fs::symlink(&secret, p.join("AGENTS.md")).unwrap();
    std::fs::create_dir_all(p.join(".swival")).unwrap();
    std::os::unix::fs::symlink(env.root(), p.join(".swival/memory")).unwrap();
    let mock = MockProvider::start(vec![Step::text("done")]);
    let mut c = daemon.nd();
    let created = worktree_session(&mut c, &p, &mock, json!({}));
    let (sid, wt) = (created["session_id"].clone(), PathBuf::from(created["worktree"]["path"].as_str().unwrap()));
    let warnings = created["warnings"].to_string();
    assert!(warnings.contains("not carried into the worktree: AGENTS.md: a symlink, not followed"), "{warnings}");
    assert!(warnings.contains("not carried into the worktree: .swival/memory: a symlink"), "{warnings}");
    assert!(warnings.contains("1 file(s) with uncommitted changes") && warnings.contains(": AGENTS.md;"), "{warnings}");
    assert!(std::fs::symlink_metadata(wt.join("AGENTS.md")).is_err(), "nothing made in the worktree");
    assert!(std::fs::symlink_metadata(wt.join(".swival/memory")).is_err(), "nothing made in the worktree");

    assert_eq!(run(&mut c, &sid, "hello")["outcome"], "success");
    let sent = serde_json::to_string(&mock.requests()).unwrap();
    assert!(!sent.contains("SECRET-OUTSIDE-THE-PROJECT"), "{sent}");
}
