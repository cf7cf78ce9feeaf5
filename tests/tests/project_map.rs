//! A map of the project in a new conversation's first request: on by
//! default for a model server on this machine (a few hundred tokens), off
//! for other providers unless `project_map_tokens` asks for it; the files
//! the task concerns come first, with their definitions, within the
//! budget; a later run of the same conversation gets none.

use serde_json::{json, Value};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{create_session, events_until_finished, NdConn, TestEnv};

/// A small project: the route the task asks about is in `app/routes.py`.
fn project(env: &TestEnv) -> std::path::PathBuf {
    let p = env.project("p");
    let w = |rel: &str, text: &str| {
        let path = p.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    w("README.md", "# Shop\n");
    w("app/routes.py", "from app import views\n\nROUTES = {'/password-reset': views.reset_password}\n");
    w("app/views.py", "def reset_password(request):\n    return 'sent'\n\ndef login(request):\n    return 'ok'\n");
    w("app/models.py", "class User:\n    pass\n");
    for n in 0..150 {
        w(&format!("docs/page{n:03}.md"), "A page of the manual.\n");
    }
    p
}

/// Run `task` in session `sid` to its end.
fn run(c: &mut NdConn, sid: &str, task: &str) {
    let seq = c.ok("session/get", json!({"session_id": sid}))["info"]["last_seq"].as_u64().unwrap();
    c.ok("run/start", json!({"session_id": sid, "task": task}));
    events_until_finished(c, sid, seq + 1);
}

/// The roles and texts of request `n`'s messages.
fn messages(mock: &MockProvider, n: usize) -> Vec<(String, String)> {
    mock.wait_for_requests(n + 1);
    let request: Value = mock.requests()[n].clone();
    let all = request["messages"].as_array().unwrap().iter();
    all.map(|m| (m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap_or("").to_owned())).collect()
}

#[test]
fn a_local_server_gets_a_budgeted_map_with_the_tasks_files_first_once_per_conversation() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let mock = MockProvider::start(vec![Step::text("views.reset_password"), Step::text("again")]);
    let mut c = daemon.nd();
    let config = json!({"provider": "llamacpp", "base_url": mock.base_url(), "model": "m"});
    let sid = create_session(&mut c, &p, config);
    run(&mut c, &sid, "which function handles /password-reset?");
    let first = messages(&mock, 0);
    let roles: Vec<&str> = first.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "user"], "the map, then the task");
    let map = &first[1].1;
    assert!(map.starts_with("A map of this project"), "{map}");
    assert_eq!(map.lines().nth(1), Some("app/routes.py"), "the file the task concerns first: {map}");
    assert!(map.contains("app/views.py\n  1    def reset_password(request)\n"), "with its definitions: {map}");
    assert!(map.len() <= 400 * 4, "within the default budget: {} chars", map.len());
    assert!(map.trim_end().ends_with("more files (list_files shows them)"), "{map}");
    assert_eq!(first[2].1, "which function handles /password-reset?");
    run(&mut c, &sid, "and the login?");
    let second = messages(&mock, 1);
    let maps = second.iter().filter(|(_, t)| t.starts_with("A map of this project")).count();
    assert_eq!(maps, 1, "a later run adds no map");
}

#[test]
fn other_providers_get_none_unless_asked_and_zero_turns_it_off() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = project(&env);
    let mock = MockProvider::start((0..6).map(|_| Step::text("app/views.py reset_password")).collect());
    let mut c = daemon.nd();
    // The first request of a new session running `task` with `config`.
    let mut first_request = |config: Value| {
        let sid = create_session(&mut c, &p, config);
        let before = mock.request_count();
        run(&mut c, &sid, "which function handles /password-reset?");
        messages(&mock, before)
    };
    let base = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    assert_eq!(first_request(base.clone()).len(), 2, "system and task only");
    let mut asked = base.clone();
    asked["project_map_tokens"] = json!(4000);
    let map = first_request(asked)[1].1.clone();
    assert!(map.contains("docs/page149.md") && !map.contains("more files"), "a larger budget holds it all: {map}");
    let off = json!({"provider": "llamacpp", "base_url": mock.base_url(), "model": "m", "project_map_tokens": 0});
    assert_eq!(first_request(off).len(), 2, "0 turns it off");
}
