//! `<base_dir>/.swival/HISTORY.md`: accepted answers, newest last, capped
//! at 500 KB by dropping the oldest entries whole.

use std::path::Path;

/// Largest HISTORY.md kept.
pub const MAX_BYTES: usize = 500 * 1024;
/// How entries begin (Swival's format).
const SEPARATOR: &str = "---\n\n";

/// Append one entry; trim the oldest entries if the file grows past the cap.
pub fn append(base_dir: &Path, task: &str, answer: &str) -> std::io::Result<()> {
    let dir = base_dir.join(".swival");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("HISTORY.md");
    let lock = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("HISTORY.md.lock"))?;
    // Serialise writers (several sessions may share a base dir).
    let _guard =
        nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, e)| std::io::Error::from(e))?;
    let question: String = task.chars().take(200).collect();
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stamp = stamp.trim_end_matches('Z').replace('T', " ");
    let entry = format!("{SEPARATOR}**{stamp}** — *{question}*\n\n{answer}\n\n");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    text.push_str(&entry);
    while text.len() > MAX_BYTES {
        // Drop the oldest entry: everything up to the second separator.
        match text[SEPARATOR.len()..].find(SEPARATOR) {
            Some(i) => text.drain(..SEPARATOR.len() + i),
            None => break,
        };
    }
    let tmp = dir.join("HISTORY.md.tmp");
    std::fs::write(&tmp, &text)?;
    std::fs::rename(&tmp, &path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_appended_in_swivals_format() {
        let d = tempfile::tempdir().unwrap();
        append(d.path(), "what is 2+2", "4").unwrap();
        let text = std::fs::read_to_string(d.path().join(".swival/HISTORY.md")).unwrap();
        assert!(text.starts_with("---\n\n**"));
        assert!(text.contains("— *what is 2+2*\n\n4\n\n"));
    }

    #[test]
    fn oldest_entries_are_dropped_past_the_cap() {
        let d = tempfile::tempdir().unwrap();
        let big = "a".repeat(100 * 1024);
        for i in 0..8 {
            append(d.path(), &format!("task {i}"), &big).unwrap();
        }
        let text = std::fs::read_to_string(d.path().join(".swival/HISTORY.md")).unwrap();
        assert!(text.len() <= MAX_BYTES);
        assert!(text.starts_with(SEPARATOR));
        assert!(text.contains("task 7") && !text.contains("task 0"));
    }
}
