use super::*;

#[test]
fn entries_split_at_headings_outside_fences_with_bootstrap_marks() {
    let text = "intro line\n\n<!-- bootstrap -->\n# Always\nkeep this\n\n## Build\n```sh\n# not a heading\n```\n\
<!-- bootstrap -->\n\nafter a blank line\n### Later\ntext\n";
    let entries = parse(text);
    let ids: Vec<(&str, bool)> = entries.iter().map(|e| (e.id.as_str(), e.bootstrap)).collect();
    assert_eq!(ids, [("m0", false), ("m1", true), ("m2", false), ("m3", false)]);
    assert_eq!(entries[0].content, "intro line");
    assert_eq!(entries[1].content, "# Always\nkeep this");
    assert_eq!(entries[2].content, "## Build\n```sh\n# not a heading\n```\n\nafter a blank line");
    assert_eq!(entries[3].content, "### Later\ntext");
}

#[test]
fn the_task_picks_the_matching_entry_and_bootstrap_always_comes_first() {
    let mut text = "<!-- bootstrap -->\n## Project\nThe project builds with make.\n".to_owned();
    for topic in ["parser", "network", "database", "logging"] {
        text.push_str(&format!("\n## {topic}\nNotes about the {topic} module.\n"));
    }
    // Every word counts (no stop words, as in Swival): "the" would match all.
    let loaded = budgeted(&parse(&text), "database connection fails");
    assert_eq!(
        loaded.block,
        format!(
            "<memory>\n{PREAMBLE}\n\n## Project\nThe project builds with make.\n\n## database\n\
Notes about the database module.\n</memory>"
        )
    );
    let stats = loaded.stats.unwrap();
    assert_eq!((stats.total_entries, stats.bootstrap_entries, stats.retrievable_entries), (5, 1, 4));
    assert_eq!(stats.retrieved_ids, ["m3"]);
    assert_eq!(stats.mode, "budgeted");
}

#[test]
fn bootstrap_entries_are_cut_to_their_budget() {
    let long = "word ".repeat(600);
    let text = format!("<!-- bootstrap -->\n# Big\n{long}\n<!-- bootstrap -->\n# Next\nnever reached\n");
    let loaded = budgeted(&parse(&text), "");
    assert!(!loaded.block.contains("never reached"));
    assert_eq!(loaded.stats.unwrap().bootstrap_tokens, BOOTSTRAP_BUDGET as u64);
}

#[test]
fn full_mode_cuts_at_200_lines_or_8000_characters() {
    let many: String = (0..300).map(|i| format!("line {i}\n")).collect();
    let text = full_text(&many);
    assert!(text.ends_with("line 199\n\n[... truncated at 200 lines]"));
    let wide: String = (0..100).map(|_| format!("{}\n", "x".repeat(99))).collect();
    let text = full_text(&wide);
    assert!(text.ends_with("x\n\n[... truncated at 8000 characters]"));
    assert_eq!(text.lines().filter(|l| l.starts_with('x')).count(), 80);
}

#[test]
fn added_notes_are_bullets_under_their_heading() {
    let d = tempfile::tempdir().unwrap();
    add(d.path(), "run tests with make check", Some("Testing")).unwrap();
    add(d.path(), "- no network in CI", None).unwrap();
    let text = std::fs::read_to_string(d.path().join(".swival/memory/MEMORY.md")).unwrap();
    assert_eq!(text, "## Testing\n\n- run tests with make check\n- no network in CI\n");
    let loaded = load(d.path(), "how do I run the tests", false).unwrap();
    assert!(loaded.block.contains("- run tests with make check"));
}

#[test]
fn a_symlinked_memory_file_or_directory_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let (base, outside) = (d.path().join("base"), d.path().join("outside"));
    std::fs::create_dir_all(base.join(".swival")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("MEMORY.md"), "# Secret\nhunter2\n").unwrap();
    std::os::unix::fs::symlink(&outside, base.join(".swival/memory")).unwrap();
    assert!(matches!(load(&base, "secret", true), Err(NoteError::Symlink(_))));
    assert!(matches!(add(&base, "x", None), Err(NoteError::Symlink(_))));
    std::fs::remove_file(base.join(".swival/memory")).unwrap();
    std::fs::create_dir(base.join(".swival/memory")).unwrap();
    std::os::unix::fs::symlink(outside.join("MEMORY.md"), base.join(".swival/memory/MEMORY.md")).unwrap();
    assert!(matches!(load(&base, "secret", false), Err(NoteError::Symlink(_))));
    assert!(matches!(add(&base, "x", None), Err(NoteError::Symlink(_))));
    assert_eq!(std::fs::read_to_string(outside.join("MEMORY.md")).unwrap(), "# Secret\nhunter2\n");
}
