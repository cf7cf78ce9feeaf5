//! Skills (Swival's SKILL.md instructions): the catalogue in the system
//! prompt, `use_skill` offered with the names and answering Swival's
//! activation text, `$name` mentions, `--no-skills`, invalid skills
//! skipped with warnings, skills outside the project readable only
//! through their own directory, symlinks never followed out of a skills
//! root, and `swivalctl skills list|add|delete`. Assertions are on the
//! requests the mock provider received.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{bin, create_session, events_until_finished, NdConn, TestEnv};

/// Write `<dir>/<name>/SKILL.md`; the skill's directory.
fn skill(dir: &Path, name: &str, description: &str, body: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("SKILL.md"), format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"))
        .unwrap();
    d
}

/// Run `task` in a new session of `base` with `extra` config; the session
/// id and the run's events.
fn run(c: &mut NdConn, base: &Path, mock: &MockProvider, extra: Value, task: &str) -> (String, Vec<Value>) {
    let mut config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "no_history": true});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let sid = create_session(c, base, config);
    c.ok("run/start", json!({"session_id": sid, "task": task}));
    let events = events_until_finished(c, &sid, 0);
    (sid, events)
}

/// The system prompt of the first request.
fn system(mock: &MockProvider) -> String {
    mock.requests()[0]["messages"][0]["content"].as_str().unwrap().to_owned()
}

/// The `use_skill` schema of the first request, if offered.
fn use_skill(mock: &MockProvider) -> Option<Value> {
    let tools = mock.requests()[0]["tools"].as_array().cloned().unwrap_or_default();
    tools.into_iter().find(|t| t["function"]["name"] == "use_skill")
}

/// The warnings among `events`.
fn warnings(events: &[Value]) -> Vec<String> {
    events.iter().filter(|e| e["type"] == "warning").filter_map(|e| e["message"].as_str().map(str::to_owned)).collect()
}

#[test]
fn a_project_skill_is_catalogued_offered_and_activated_in_swivals_words() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let dir = skill(
        &p.join(".swival/skills"),
        "lint",
        "Lint the code <!-- internal -->",
        "Run the linter on <!-- x -->every file.",
    );
    std::fs::write(dir.join("rules.md"), "no tabs").unwrap();
    let mock =
        MockProvider::start(vec![Step::tool_call("u1", "use_skill", json!({"name": "lint"})), Step::text("linted")]);
    let mut c = daemon.nd();
    let (_sid, events) = run(&mut c, &p, &mock, json!({}), "lint it");
    let finished = events.last().unwrap();
    assert_eq!(finished["outcome"], "success", "{finished:#}");

    let system = system(&mock);
    let skill_md = dir.join("SKILL.md");
    let catalogue = format!(
        "\n\n## Skills\nA skill is a set of local instructions stored in a `SKILL.md` file.\n### Available skills\n\n\
         - lint: Lint the code (file: {})\n\n### How to use skills\n\
         - Call the `use_skill` tool with the skill name to activate it and receive detailed instructions.\n\
         - For local skills (those showing a file path above), you may also read the SKILL.md file directly.\n\
         - If the user mentions a skill with `$skill-name`, it is activated automatically.",
        skill_md.display()
    );
    assert!(system.contains(&catalogue), "{system}");
    let schema = use_skill(&mock).expect("use_skill offered");
    assert_eq!(schema["function"]["parameters"]["properties"]["name"]["enum"], json!(["lint"]));
    assert_eq!(schema["function"]["parameters"]["required"], json!(["name"]));
    let names: Vec<Value> =
        mock.requests()[0]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].clone()).collect();
    let at = |n: &str| names.iter().position(|x| x == n).unwrap();
    assert!(at("fetch_url") < at("use_skill"), "Swival's order: {names:?}");

    let want = format!(
        "[Skill: lint activated]\n\n<skill-instructions>\nRun the linter on every file.\n</skill-instructions>\n\n\
         Skill directory: {0}\n\nSupporting files in this skill directory:\n  {0}/rules.md\n\n\
         To read these files, use read_file with the absolute paths shown above.",
        dir.display()
    );
    assert_eq!(mock.tool_results()["u1"], want);
    let run_id = finished["run_id"].clone();
    let report = c.ok("report/get", json!({"run_id": run_id}));
    assert_eq!(report["stats"]["skills_used"], json!(["lint"]), "{report:#}");
    assert_eq!(report["settings"]["skills_discovered"], json!(["lint"]), "{report:#}");
}

#[test]
fn a_mentioned_skill_is_activated_before_the_first_call() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    skill(&p.join(".swival/skills"), "deploy", "Deploy", "Ship it carefully.");
    let mock = MockProvider::start(vec![Step::text("done")]);
    let mut c = daemon.nd();
    let (_sid, events) = run(&mut c, &p, &mock, json!({}), "please $deploy now");
    let finished = events.last().unwrap();
    let messages = mock.requests()[0]["messages"].as_array().unwrap().clone();
    let call = messages.iter().find(|m| m["role"] == "assistant").expect("the synthetic use_skill call");
    let id = call["tool_calls"][0]["id"].as_str().unwrap();
    assert!(id.starts_with("auto_skill_deploy_"), "{id}");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "use_skill");
    let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["tool_call_id"], id);
    assert!(result["content"].as_str().unwrap().contains("<skill-instructions>\nShip it carefully.\n"), "{result}");
    let report = c.ok("report/get", json!({"run_id": finished["run_id"]}));
    assert_eq!(report["stats"]["skills_used"], json!(["deploy"]), "{report:#}");
}

#[test]
fn no_skills_means_no_catalogue_and_no_tool() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    skill(&p.join(".swival/skills"), "lint", "Lint", "b");
    let mock = MockProvider::start(vec![Step::text("ok")]);
    let mut c = daemon.nd();
    run(&mut c, &p, &mock, json!({"no_skills": true}), "hi $lint");
    assert!(!system(&mock).contains("## Skills"));
    assert!(use_skill(&mock).is_none());
    assert!(!mock.requests_text().contains("auto_skill_"));
}

#[test]
fn invalid_skills_are_skipped_with_swivals_warnings() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let root = p.join(".swival/skills");
    skill(&root, "Bad_Name", "Bad", "b");
    std::fs::create_dir_all(root.join("nodesc")).unwrap();
    std::fs::write(root.join("nodesc/SKILL.md"), "---\nname: nodesc\n---\nbody\n").unwrap();
    let mock = MockProvider::start(vec![Step::text("ok")]);
    let mut c = daemon.nd();
    let (_sid, events) = run(&mut c, &p, &mock, json!({}), "hi");
    let warnings = warnings(&events);
    let bad = format!(
        "invalid skill in {}: name 'Bad_Name' must be lowercase alphanumeric with hyphens, no leading/trailing/consecutive hyphens",
        root.join("Bad_Name").display()
    );
    assert!(warnings.contains(&bad), "{warnings:#?}");
    let nodesc = format!(
        "failed to parse SKILL.md frontmatter in {}: missing 'description' field",
        root.join("nodesc").display()
    );
    assert!(warnings.contains(&nodesc), "{warnings:#?}");
    assert!(!system(&mock).contains("## Skills"));
    assert!(use_skill(&mock).is_none());
}

#[test]
fn skills_outside_the_project_are_listed_without_a_path_and_only_their_directory_is_readable() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let shared = env.root().join("shared");
    let deploy = skill(&shared.join("ops"), "deploy", "Deploy things", "Read notes.md first.");
    std::fs::write(deploy.join("notes.md"), "deploy notes here").unwrap();
    std::fs::write(shared.join("private.txt"), "not a skill file").unwrap();
    let global = skill(&env.root().join("config/swival/skills"), "style", "House style", "b");
    std::fs::write(global.join("guide.md"), "global guide here").unwrap();
    let mock = MockProvider::start(vec![
        Step::tool_call("u1", "use_skill", json!({"name": "deploy"})),
        Step::tool_calls(vec![
            ("r1", "read_file", json!({"file_path": deploy.join("notes.md")})),
            ("r2", "read_file", json!({"file_path": global.join("guide.md")})),
            ("r3", "read_file", json!({"file_path": shared.join("private.txt")})),
            ("r4", "write_file", json!({"file_path": deploy.join("notes.md"), "content": "x"})),
        ]),
        Step::text("deployed"),
    ]);
    let mut c = daemon.nd();
    run(&mut c, &p, &mock, json!({"skills_dir": [shared]}), "deploy");
    let system = system(&mock);
    assert!(system.contains("\n- deploy: Deploy things\n- style: House style\n"), "{system}");
    assert!(system.contains("`use_skill` is the only way to access them"), "{system}");
    assert!(!system.contains(&shared.display().to_string()), "no path for a skill outside: {system}");
    let results = mock.tool_results();
    assert!(results["u1"].contains(&format!("Skill directory: {}", deploy.display())), "{}", results["u1"]);
    assert!(results["r1"].contains("deploy notes here"), "{}", results["r1"]);
    assert!(results["r2"].contains("global guide here"), "a global skill is readable: {}", results["r2"]);
    assert!(results["r3"].starts_with("error: ") && !results["r3"].contains("not a skill file"), "{}", results["r3"]);
    assert!(results["r4"].contains("read-only"), "{}", results["r4"]);
    assert_eq!(std::fs::read_to_string(deploy.join("notes.md")).unwrap(), "deploy notes here");
}

#[test]
fn symlinks_never_lead_a_skill_read_outside_its_root() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let root = p.join(".swival/skills");
    std::fs::create_dir_all(&root).unwrap();
    let outside = env.root().join("outside");
    skill(&outside, "evil", "SECRET-DESCRIPTION", "SECRET-BODY-1");
    std::os::unix::fs::symlink(outside.join("evil"), root.join("evil")).unwrap();
    std::fs::write(env.root().join("secret.md"), "---\nname: linked\ndescription: SECRET-2\n---\nSECRET-BODY-2\n")
        .unwrap();
    std::fs::create_dir_all(root.join("linked")).unwrap();
    std::os::unix::fs::symlink(env.root().join("secret.md"), root.join("linked/SKILL.md")).unwrap();
    let mock = MockProvider::start(vec![Step::tool_call("u1", "use_skill", json!({"name": "evil"})), Step::text("ok")]);
    let mut c = daemon.nd();
    let (_sid, events) = run(&mut c, &p, &mock, json!({}), "use $evil and $linked");
    let sent = mock.requests_text();
    assert!(!sent.contains("SECRET"), "a secret reached the provider: {sent}");
    assert!(!system(&mock).contains("## Skills"));
    assert!(use_skill(&mock).is_none());
    let warnings = warnings(&events);
    let dir = format!("skill directory {} is a symlink and was not followed", root.join("evil").display());
    let file = format!("{} is a symlink and was not followed", root.join("linked/SKILL.md").display());
    assert!(warnings.contains(&dir) && warnings.contains(&file), "{warnings:#?}");
}

#[test]
fn swivalctl_skills_lists_adds_and_deletes_the_projects_skills() {
    let env = TestEnv::new();
    let p = env.project("p");
    std::fs::write(p.join("swival.toml"), "").unwrap();
    skill(&p.join(".swival/skills"), "lint", "Lint   the  code", "b");
    let repo = env.root().join("repo");
    skill(&repo.join("skills"), "fmt", "Format", "b");
    skill(&repo.join("skills"), "Bad", "x", "b");
    let ctl = |args: &[&str]| {
        let out = env.command(&bin("swivalctl")).current_dir(&p).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let root = p.join(".swival/skills");
    let (code, out, _) = ctl(&["skills", "list"]);
    assert_eq!(code, Some(0));
    let global = env.root().join("config/swival/skills");
    let want = format!(
        "project skills ({}):\n  lint — Lint the code\nglobal skills ({}):\n  (none)\n",
        root.display(),
        global.display()
    );
    assert_eq!(out, want);
    let (code, out, err) = ctl(&["skills", "add", repo.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, format!("Installed 1 skill(s) into this project ({}): fmt\n", root.display()));
    assert!(err.contains("skipping skill 'Bad'"), "{err}");
    assert!(root.join("fmt/SKILL.md").is_file());
    let (code, _, err) = ctl(&["skills", "add", repo.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert!(err.contains("skill 'fmt' already exists in"), "{err}");
    let (code, out, _) = ctl(&["skills", "delete", "fmt"]);
    assert_eq!((code, out), (Some(0), format!("Removed skill 'fmt' from {}\n", root.display())));
    assert!(!root.join("fmt").exists());
    let (code, _, err) = ctl(&["skills", "remove", "fmt"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("not found: "), "{err}");
}
