use super::*;
use std::fs;

/// Write `<dir>/<name>/SKILL.md` with `description` and `body`.
fn skill(dir: &Path, name: &str, description: &str, body: &str) -> PathBuf {
    let d = dir.join(name);
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join(SKILL_FILE), format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n")).unwrap();
    d
}

/// Discover in `base` with `extra` and no global directories.
fn find(base: &Path, extra: &[PathBuf]) -> Discovery {
    discover(&Sources { base, extra, global: Vec::new() })
}

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().canonicalize().unwrap().join("p");
    fs::create_dir_all(&base).unwrap();
    (d, base)
}

#[test]
fn project_skills_come_first_and_a_second_of_a_name_is_ignored() {
    let (_d, base) = tmp();
    skill(&base.join(".swival/skills"), "lint", "Lint <!-- hidden --> code", "Run the linter.");
    skill(&base.join(".agents/skills"), "lint", "Other", "x");
    let outside = base.parent().unwrap().join("shared");
    skill(&outside.join("group"), "deploy", "Deploy it", "Steps.");
    let found = find(&base, std::slice::from_ref(&outside));
    assert_eq!(found.catalog.names(), ["deploy", "lint"]);
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    assert!(
        found.warnings[0].starts_with("skill 'lint' in ") && found.warnings[0].contains("ignored; already loaded from")
    );
    let section = found.catalog.prompt_section().unwrap();
    let lint_md = base.join(".swival/skills/lint/SKILL.md");
    assert!(section.contains(&format!("- lint: Lint  code (file: {})", lint_md.display())), "{section}");
    assert!(section.contains("\n- deploy: Deploy it\n"), "{section}");
    assert!(section.contains("use_skill` is the only way to access them"), "{section}");
    assert_eq!(found.catalog.outside_dirs(), [outside.join("group/deploy")]);
}

#[test]
fn invalid_skills_are_skipped_with_swivals_warnings() {
    let (_d, base) = tmp();
    let root = base.join(".swival/skills");
    skill(&root, "Bad_Name", "d", "b");
    fs::create_dir_all(root.join("nodesc")).unwrap();
    fs::write(root.join("nodesc/SKILL.md"), "---\nname: nodesc\n---\nbody").unwrap();
    skill(&root, "other", "d", "b");
    fs::rename(root.join("other"), root.join("renamed")).unwrap();
    let found = find(&base, &[]);
    assert!(found.catalog.is_empty());
    let w = found.warnings.join("\n");
    assert!(w.contains("invalid skill in ") && w.contains("name 'Bad_Name' must be lowercase"), "{w}");
    assert!(w.contains("nodesc: missing 'description' field"), "{w}");
    assert!(w.contains("name 'other' does not match directory name 'renamed'"), "{w}");
}

#[test]
fn symlinks_never_lead_reads_out_of_a_skill_root() {
    let (d, base) = tmp();
    let root = base.join(".swival/skills");
    fs::create_dir_all(&root).unwrap();
    let elsewhere = d.path().join("elsewhere");
    skill(&elsewhere, "stolen", "d", "SECRET-BODY");
    std::os::unix::fs::symlink(elsewhere.join("stolen"), root.join("stolen")).unwrap();
    fs::create_dir_all(root.join("linked")).unwrap();
    fs::write(d.path().join("secret.md"), "---\nname: linked\ndescription: SECRET\n---\nSECRET").unwrap();
    std::os::unix::fs::symlink(d.path().join("secret.md"), root.join("linked/SKILL.md")).unwrap();
    let found = find(&base, &[]);
    assert!(found.catalog.is_empty(), "{:?}", found.catalog.names());
    let w = found.warnings.join("\n");
    assert!(w.contains("stolen is a symlink and was not followed"), "{w}");
    assert!(w.contains("linked/SKILL.md is a symlink and was not followed"), "{w}");
    assert!(!w.contains("SECRET"));
}

#[test]
fn activation_is_swivals_text_with_the_supporting_files() {
    let (_d, base) = tmp();
    let dir = skill(&base.join(".swival/skills"), "pdf", "PDFs", "Use <!-- no -->the script.");
    fs::create_dir_all(dir.join("scripts")).unwrap();
    fs::write(dir.join("scripts/run.py"), "print()").unwrap();
    fs::write(dir.join("ref.md"), "r").unwrap();
    fs::write(dir.join(".hidden"), "h").unwrap();
    let found = find(&base, &[]);
    let text = found.catalog.activate("pdf").unwrap();
    let want = format!(
        "[Skill: pdf activated]\n\n<skill-instructions>\nUse the script.\n</skill-instructions>\n\nSkill directory: {0}\n\nSupporting files in this skill directory:\n  {0}/ref.md\n  {0}/scripts/run.py\n\nTo read these files, use read_file with the absolute paths shown above.",
        dir.display()
    );
    assert_eq!(text, want);
    assert_eq!(found.catalog.activate("nope").unwrap_err().to_string(), "unknown skill: 'nope'");
    let long = skill(&base.join(".swival/skills"), "long", "L", &"x".repeat(MAX_SKILL_BODY_CHARS + 5));
    let text = find(&base, &[]).catalog.activate("long").unwrap();
    assert!(
        text.contains("\n\n[truncated at 20000 characters]\n</skill-instructions>"),
        "{}",
        &text[text.len() - 300..]
    );
    assert!(text.ends_with(&format!("(e.g. \"{}/scripts/example.py\").", long.display())));
}

#[test]
fn a_skills_dir_may_be_one_skill_and_inside_the_project_is_opened_beneath_it() {
    let (d, base) = tmp();
    let one = skill(d.path(), "solo", "Solo", "b");
    fs::create_dir_all(d.path().join("real")).unwrap();
    skill(&d.path().join("real"), "inner", "I", "b");
    std::os::unix::fs::symlink(d.path().join("real"), base.join("link")).unwrap();
    let found = find(&base, &[one.clone(), base.join("link"), base.join("missing")]);
    assert_eq!(found.catalog.names(), ["solo"]);
    let w = found.warnings.join("\n");
    assert!(w.contains("link is a symlink and was not followed"), "{w}");
    assert!(w.contains(&format!("skills directory does not exist: {}", base.join("missing").display())), "{w}");
}

#[test]
fn mentions_follow_swivals_boundaries() {
    let (_d, base) = tmp();
    skill(&base.join(".swival/skills"), "lint", "d", "b");
    skill(&base.join(".swival/skills"), "a-b", "d", "b");
    let c = find(&base, &[]).catalog;
    assert_eq!(c.mentions("use $lint and $a-b, again $lint"), ["lint", "a-b"]);
    assert!(c.mentions("x$lint $lintX $lint- $nope").is_empty());
    let schema = c.schema().unwrap();
    assert_eq!(schema["function"]["parameters"]["properties"]["name"]["enum"], json!(["a-b", "lint"]));
    assert_eq!(
        schema["function"]["description"],
        "Activate a skill to get detailed instructions. Available skills: a-b, lint. Use this instead of searching for SKILL.md files."
    );
}
