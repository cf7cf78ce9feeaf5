//! `/remember`: a project fact as a bullet under `## Conventions` in the
//! project's AGENTS.md, with Swival's rules and replies (the file created
//! with Swival's two sections when missing, a malformed one left alone, a
//! duplicate skipped). The file is the user's, written on the user's side.

use std::path::Path;

/// AGENTS.md's length Swival aims under.
const BUDGET: usize = 3000;

/// Add `text` to the AGENTS.md at `path`; the reply to show.
pub fn remember(path: &Path, text: &str) -> String {
    let bullet = format!("- {text}\n");
    let existing = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let created =
                format!("## Workflow\n\n<!-- Consider running /init to populate this section. -->\n\n## Conventions\n\n{bullet}");
            return match std::fs::write(path, created) {
                Ok(()) => format!("Created AGENTS.md with: {text}\ntip: run /init to populate the Workflow section"),
                Err(e) => format!("cannot write {}: {e}", path.display()),
            };
        }
        Err(e) => return format!("cannot read {}: {e}", path.display()),
    };
    if let Some(reason) = malformed(&existing) {
        return format!("AGENTS.md is malformed ({reason}). Run /init first.");
    }
    let key = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let wanted = key(text);
    if existing.lines().filter_map(|l| l.trim().strip_prefix("- ")).any(|b| key(b) == wanted) {
        return "Already in AGENTS.md, skipping.".into();
    }
    let updated = insert_convention(&existing, &bullet);
    if let Err(e) = std::fs::write(path, &updated) {
        return format!("cannot write {}: {e}", path.display());
    }
    let mut reply = format!("Added to AGENTS.md: {text}");
    if updated.chars().count() > BUDGET {
        reply.push_str(&format!("\nwarning: AGENTS.md now exceeds {BUDGET} character target"));
    }
    reply
}

/// Why AGENTS.md does not have Swival's shape, if it does not.
fn malformed(text: &str) -> Option<&'static str> {
    let sections: Vec<&str> = text.lines().filter(|l| l.starts_with("## ")).map(str::trim).collect();
    if !sections.contains(&"## Workflow") {
        return Some("missing ## Workflow section");
    }
    if !sections.contains(&"## Conventions") {
        return Some("missing ## Conventions section");
    }
    if sections.first() != Some(&"## Workflow") {
        return Some("## Workflow is not the first section");
    }
    None
}

/// `text` with `bullet` at the end of its `## Conventions` section.
fn insert_convention(text: &str, bullet: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines.iter().position(|l| l.trim() == "## Conventions").unwrap_or(lines.len());
    let end = (start + 1..lines.len()).find(|&i| lines[i].starts_with("## ")).unwrap_or(lines.len());
    // After the section's last non-blank line.
    let at = (start + 1..end).rev().find(|&i| !lines[i].trim().is_empty()).map_or(start + 1, |i| i + 1);
    let mut out: String = lines[..at].concat();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if at == start + 1 {
        out.push('\n');
    }
    out.push_str(bullet);
    out.push_str(&lines[at..].concat());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fact_creates_agents_md_then_joins_conventions_once() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("AGENTS.md");
        assert!(remember(&path, "use cargo nextest").starts_with("Created AGENTS.md with: use cargo nextest"));
        assert_eq!(remember(&path, "tabs,  not spaces"), "Added to AGENTS.md: tabs,  not spaces");
        assert_eq!(remember(&path, "Tabs, not spaces"), "Already in AGENTS.md, skipping.");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("## Conventions\n\n- use cargo nextest\n- tabs,  not spaces\n"), "{text:?}");
    }

    #[test]
    fn a_bullet_goes_before_the_next_section_and_a_malformed_file_is_left_alone() {
        let text = "## Workflow\n\nmake\n\n## Conventions\n\n- a\n\n## Commits\n\nshort\n";
        assert_eq!(
            insert_convention(text, "- b\n"),
            "## Workflow\n\nmake\n\n## Conventions\n\n- a\n- b\n\n## Commits\n\nshort\n"
        );
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("AGENTS.md");
        std::fs::write(&path, "# Notes\n").unwrap();
        assert_eq!(remember(&path, "x"), "AGENTS.md is malformed (missing ## Workflow section). Run /init first.");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# Notes\n");
    }
}
