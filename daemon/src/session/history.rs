//! `<base_dir>/.swival/HISTORY.md`: accepted answers, newest last, capped
//! at 500 KB by dropping the oldest entries whole. The file, its lock and
//! its temporary are reached through [`swival_dir`], so a `.swival` (or any
//! of them) that is a symlink is refused rather than written through.

use crate::beneath::{swival_dir, How, Missing};
use std::path::Path;

/// Largest HISTORY.md kept.
pub const MAX_BYTES: usize = 500 * 1024;
/// How entries begin (Swival's format).
const SEPARATOR: &str = "---\n\n";

/// Append one entry; trim the oldest entries if the file grows past the cap.
pub fn append(base_dir: &Path, task: &str, answer: &str) -> std::io::Result<()> {
    let dir = swival_dir(base_dir, Missing::Create)?;
    let path = Path::new("HISTORY.md");
    let lock = dir.open_file(Path::new("HISTORY.md.lock"), How::Lock)?;
    // Serialise writers (several sessions may share a base dir).
    let _guard =
        nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, e)| std::io::Error::from(e))?;
    let question: String = task.chars().take(200).collect();
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stamp = stamp.trim_end_matches('Z').replace('T', " ");
    let entry = format!("{SEPARATOR}**{stamp}** — *{question}*\n\n{answer}\n\n");
    let mut text = match dir.read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.is_not_found() => String::new(),
        Err(e) => return Err(e.into()),
    };
    text.push_str(&entry);
    while text.len() > MAX_BYTES {
        // Drop the oldest entry: everything up to the second separator.
        match text[SEPARATOR.len()..].find(SEPARATOR) {
            Some(i) => text.drain(..SEPARATOR.len() + i),
            None => break,
        };
    }
    // Written to HISTORY.md.tmp, created exclusively, then renamed.
    Ok(dir.replace(path, text.as_bytes())?)
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
    fn a_symlinked_swival_dir_is_refused_and_nothing_is_written_through_it() {
        let d = tempfile::tempdir().unwrap();
        let (base, outside) = (d.path().join("base"), d.path().join("outside"));
        std::fs::create_dir(&base).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, base.join(".swival")).unwrap();
        let err = append(&base, "t", "the answer").unwrap_err();
        assert!(err.to_string().ends_with(".swival is a symlink and was not followed"), "{err}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }

    #[test]
    fn planted_symlinks_for_the_temporary_and_the_file_are_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let (base, outside) = (d.path().join("base"), d.path().join("victim"));
        std::fs::create_dir_all(base.join(".swival")).unwrap();
        std::fs::write(&outside, "precious").unwrap();
        std::os::unix::fs::symlink(&outside, base.join(".swival/HISTORY.md.tmp")).unwrap();
        append(&base, "t", "the answer").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert!(std::fs::read_to_string(base.join(".swival/HISTORY.md")).unwrap().contains("the answer"));
        // HISTORY.md itself a symlink: neither read (its target would end up
        // in the history) nor written through.
        std::fs::remove_file(base.join(".swival/HISTORY.md")).unwrap();
        std::os::unix::fs::symlink(&outside, base.join(".swival/HISTORY.md")).unwrap();
        let err = append(&base, "t", "again").unwrap_err();
        assert!(err.to_string().contains("HISTORY.md is a symlink and was not followed"), "{err}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
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
