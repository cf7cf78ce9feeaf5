//! The store's own tests: event numbers and the conversation.

use super::*;
use swival_protocol::EventKind;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("db.sqlite")).unwrap();
    (dir, s)
}

fn session(s: &Store) -> SessionId {
    let id = SessionId("s_1".into());
    s.insert_session(&SessionRow {
        id: id.clone(),
        base_dir: "/tmp".into(),
        title: None,
        config: serde_json::json!({}),
        request: serde_json::Value::Null,
        created_at: "2026-01-01T00:00:00Z".into(),
        last_used_at: "2026-01-01T00:00:00Z".into(),
        closed: false,
        last_seq: 0,
        run_count: 0,
        cost_usd: None,
        worktree: None,
        parent: None,
    })
    .unwrap();
    id
}

#[test]
fn events_get_consecutive_seqs_from_one() {
    let (_d, s) = store();
    let id = session(&s);
    for _ in 0..3 {
        let mut e = Event {
            seq: Seq(0),
            session_id: id.clone(),
            run_id: None,
            time: "t".into(),
            kind: EventKind::Warning { message: "w".into() },
        };
        s.append_event(&mut e, EventWith::Nothing, Box::new(|_| {})).unwrap();
    }
    let seqs: Vec<u64> = s.events_from(&id, 2, 100).unwrap().iter().map(|e| e.seq.0).collect();
    assert_eq!(seqs, [2, 3]);
    assert_eq!(s.session(&id).unwrap().unwrap().last_seq, 3);
}

#[tokio::test]
async fn messages_round_trip_in_order() {
    let (_d, s) = store();
    let id = session(&s);
    s.put_message(&id, 0, &serde_json::json!({"role": "system", "content": "a"})).unwrap();
    s.put_message(&id, 1, &serde_json::json!({"role": "user", "content": "b"})).unwrap();
    let m: Vec<serde_json::Value> = s.messages(&id).unwrap();
    assert_eq!(m[1]["content"], "b");
    s.replace_messages(&id, m[..1].iter().map(ToString::to_string).collect()).await.unwrap();
    assert_eq!(s.messages::<serde_json::Value>(&id).unwrap().len(), 1);
}

#[tokio::test]
async fn a_checkpoint_is_set_replaced_and_cleared() {
    let (_d, s) = store();
    let id = session(&s);
    assert_eq!(s.checkpoint(&id).unwrap(), None);
    let row = CheckpointRow { label: "a".into(), index: 3, digest: "d".into() };
    s.set_checkpoint(&id, Some(row.clone())).await.unwrap();
    assert_eq!(s.checkpoint(&id).unwrap(), Some(row));
    let other = CheckpointRow { label: "b".into(), index: 5, digest: "e".into() };
    s.set_checkpoint(&id, Some(other.clone())).await.unwrap();
    assert_eq!(s.checkpoint(&id).unwrap(), Some(other));
    s.set_checkpoint(&id, None).await.unwrap();
    assert_eq!(s.checkpoint(&id).unwrap(), None);
}

/// Start run `run` of `id` at `at` with `task`, as `run/start` stores it.
fn start_run(s: &Store, id: &SessionId, run: &str, task: &str, at: &str) {
    let row = RunRow {
        id: RunId(run.into()),
        session_id: id.clone(),
        task: task.into(),
        result: None,
        report: None,
        started_at: at.into(),
    };
    let kind = EventKind::Warning { message: "w".into() };
    let mut e = Event { seq: Seq(0), session_id: id.clone(), run_id: None, time: at.into(), kind };
    s.append_event(&mut e, EventWith::Start(&row), Box::new(|_| {})).unwrap();
}

#[test]
fn the_first_run_titles_an_untitled_session_and_last_use_follows_runs_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite");
    let s = Store::open(&path).unwrap();
    let id = session(&s);
    assert_eq!(s.session(&id).unwrap().unwrap().last_used_at, "2026-01-01T00:00:00Z", "created, never run");
    start_run(&s, &id, "r_1", "\nfix the parser\nand its tests", "2026-03-01T10:00:00.000Z");
    start_run(&s, &id, "r_2", "something else", "2026-03-02T10:00:00.000Z");
    drop(s);
    let s = Store::open(&path).unwrap();
    let row = s.session(&id).unwrap().unwrap();
    assert_eq!(row.title.as_deref(), Some("fix the parser"), "the first run's task, not a later one's");
    assert_eq!(row.last_used_at, "2026-03-02T10:00:00.000Z");
    assert_eq!(s.sessions().unwrap()[0].last_used_at, row.last_used_at);
}

#[test]
fn a_session_given_a_title_keeps_it_through_its_runs() {
    let (_d, s) = store();
    let id = SessionId("s_titled".into());
    let mut row = s.session(&session(&s)).unwrap().unwrap();
    row.id = id.clone();
    row.title = Some("mine".into());
    s.insert_session(&row).unwrap();
    start_run(&s, &id, "r_1", "a task", "2026-03-01T10:00:00.000Z");
    assert_eq!(s.session(&id).unwrap().unwrap().title.as_deref(), Some("mine"));
}

#[tokio::test]
async fn a_file_tools_contents_are_kept_by_project_and_pruned_to_what_is_named() {
    let (_d, s) = store();
    let blob = |text: &str| (format!("id-{text}"), std::sync::Arc::<[u8]>::from(text.as_bytes()));
    s.put_change_blobs("/p".into(), vec![blob("one"), blob("two")]).await.unwrap();
    s.put_change_blobs("/q".into(), vec![blob("one")]).await.unwrap();
    // Stored again: left as it was.
    s.put_change_blobs("/p".into(), vec![blob("one")]).await.unwrap();
    let ids = ["id-one".to_owned(), "id-two".to_owned(), "id-none".to_owned()];
    let got = s.change_blobs("/p", &ids).unwrap();
    assert_eq!((got.len(), got["id-two"].as_slice()), (2, &b"two"[..]));
    assert_eq!(s.change_blob_bytes().unwrap(), 9);
    let keep = ["id-one".to_owned()].into();
    assert_eq!(s.prune_change_blobs("/p".into(), keep).await.unwrap(), 1);
    assert_eq!(s.change_blobs("/p", &ids).unwrap().len(), 1);
    assert_eq!(s.change_blobs("/q", &ids).unwrap().len(), 1, "another project's are its own");
    assert_eq!(s.prune_change_blobs("/p".into(), Default::default()).await.unwrap(), 1);
    assert_eq!(s.change_blob_bytes().unwrap(), 3);
}
