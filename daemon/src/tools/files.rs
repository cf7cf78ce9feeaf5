//! What the file tools share: the read caps, a content's checksum, the
//! binary sniff, a long line cut, and a path opened beneath its root for
//! reading (`read_file.rs`, `read_multiple_files.rs`, `outline.rs`,
//! `map.rs`).

use super::{ToolBox, ToolError};
use crate::beneath::{Beneath, How, Meta};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Most bytes of file content one response carries, by default
/// (`max_output_kb`; see [`super::OutputCaps`]).
pub const MAX_READ_BYTES: usize = 50 * 1024;
/// Lines longer than this many characters are cut.
pub const MAX_LINE_CHARS: usize = 2000;
/// A NUL byte in this many leading bytes marks a file as binary.
pub const BINARY_SNIFF: usize = 8 * 1024;
/// Default number of lines per read, by default (`max_output_lines`).
pub const DEFAULT_LIMIT: usize = 2000;
/// First 8 hex digits of the SHA-256 of `bytes` (Swival's checksum).
pub fn checksum(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..4])
}

/// Whether `bytes` look binary (a NUL in the first 8 KB).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_SNIFF)].contains(&0)
}

/// A line cut to [`MAX_LINE_CHARS`] with a marker saying how long it was.
pub fn cut_line(line: &str) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None => line.into(),
        Some((at, _)) => format!("{}… [line truncated: {} chars]", &line[..at], line.chars().count()).into(),
    }
}

/// What `requested` (resolved to `path`) is, opened beneath its root.
pub(super) enum Opened {
    /// It does not exist.
    Missing,
    /// A directory, to list.
    Dir(Beneath, PathBuf),
    /// A file, open for reading.
    File(std::fs::File),
}

/// Open the resolved `path` for reading, beneath the directory it lies in.
pub(super) fn open_for_read(tb: &ToolBox, path: &Path, requested: &str) -> Result<Opened, ToolError> {
    let (dir, rel) = tb.beneath(path)?;
    let file = match dir.open_file(&rel, How::Read) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => return Ok(Opened::Missing),
        Err(e) => return Err(tb.io_error(requested, "read", e)),
    };
    match Meta::of(&file) {
        Ok(m) if m.is_dir() => Ok(Opened::Dir(dir, rel)),
        Ok(_) => Ok(Opened::File(file)),
        Err(e) => Err(ToolError::refused(format!("cannot read {requested}: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::read_file::read_file;
    use super::super::read_multiple_files::read_multiple_files;
    use super::super::test_toolbox as toolbox;
    use super::*;
    use serde_json::json;

    #[test]
    fn read_numbers_lines_and_ends_with_checksum() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "one\ntwo\n").unwrap();
        let out = read_file(&mut toolbox(d.path()), &args!({"file_path": "a.txt"}), None).unwrap();
        assert_eq!(out, format!("1: one\n2: two\n[checksum={}]", checksum(b"one\ntwo\n")));
    }

    #[test]
    fn large_file_reads_in_pages_that_cover_it_all() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (0..4000).map(|i| format!("line {i} {}\n", "x".repeat(40))).collect();
        std::fs::write(d.path().join("big.txt"), &text).unwrap();
        let mut tb = toolbox(d.path());
        let mut offset = 1;
        let mut seen = Vec::new();
        loop {
            let out = read_file(&mut tb, &args!({"file_path": "big.txt", "offset": offset}), None).unwrap();
            assert!(out.len() <= MAX_READ_BYTES + 200);
            for l in out.lines().filter(|l| !l.starts_with('[')) {
                let (_, body) = l.split_once(": ").unwrap();
                seen.push(format!("{body}\n"));
            }
            match out.lines().find_map(|l| l.split("use offset=").nth(1)) {
                Some(rest) => offset = rest.trim_end_matches(" to continue]").parse().unwrap(),
                None => break,
            }
        }
        assert_eq!(seen.concat(), text);
    }

    #[test]
    fn max_output_lines_and_kb_set_the_default_limit_and_the_byte_cap() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (1..=50).map(|i| format!("line {i} {}\n", "x".repeat(40))).collect();
        std::fs::write(d.path().join("f.txt"), text).unwrap();
        let mut tb = toolbox(d.path());
        tb.caps = crate::tools::OutputCaps { read_bytes: 1024, read_lines: 3 };
        let out = read_file(&mut tb, &args!({"file_path": "f.txt"}), None).unwrap();
        assert!(out.starts_with("1: line 1 ") && out.contains("\n3: line 3 ") && !out.contains("4: line 4"), "{out}");
        assert!(out.contains("[47 more lines, use offset=4 to continue]"), "{out}");
        let out = read_file(&mut tb, &args!({"file_path": "f.txt", "limit": 50}), None).unwrap();
        assert!(out.contains("more lines, use offset=") && out.len() < 1024 + 100, "{out}");
        let schema = &tb.schemas()[0]["function"]["parameters"]["properties"]["limit"];
        assert_eq!(
            (&schema["default"], schema["description"].as_str().unwrap()),
            (&json!(3), "Maximum number of lines to return. Defaults to 3.")
        );
    }

    #[test]
    fn long_lines_are_cut_with_a_marker() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("l.txt"), "y".repeat(5000)).unwrap();
        let out = read_file(&mut toolbox(d.path()), &args!({"file_path": "l.txt"}), None).unwrap();
        assert!(out.contains("[line truncated: 5000 chars]"));
        assert!(out.len() < 2200);
    }

    #[test]
    fn tail_lines_reads_the_end_and_conflicts_with_offset() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("t.txt"), "a\nb\nc\nd\n").unwrap();
        let mut tb = toolbox(d.path());
        let out = read_file(&mut tb, &args!({"file_path": "t.txt", "tail_lines": 2}), None).unwrap();
        assert!(out.starts_with("3: c\n4: d\n[checksum="), "{out}");
        let err = read_file(&mut tb, &args!({"file_path": "t.txt", "tail_lines": 2, "offset": 2}), None)
            .unwrap_err()
            .render();
        assert!(err.contains("cannot combine 'offset' and 'tail_lines'"));
    }

    #[test]
    fn binary_and_missing_files_are_errors_naming_the_path() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("b.bin"), b"ab\0cd").unwrap();
        let mut tb = toolbox(d.path());
        let err = read_file(&mut tb, &args!({"file_path": "b.bin"}), None).unwrap_err().render();
        assert!(err.starts_with("error: binary file detected: b.bin"));
        let err = read_file(&mut tb, &args!({"file_path": "nope.txt"}), None).unwrap_err().render();
        assert!(err.starts_with("error: path does not exist: nope.txt"));
    }

    #[test]
    fn directory_read_lists_entries_with_slashes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("f.txt"), "").unwrap();
        let out = read_file(&mut toolbox(d.path()), &args!({"file_path": "."}), None).unwrap();
        assert_eq!(out, "f.txt\nsub/");
    }

    #[test]
    fn read_multiple_files_gives_one_section_per_file_and_errors_inline() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "alpha\n").unwrap();
        std::fs::create_dir(d.path().join("dir")).unwrap();
        let out = read_multiple_files(
            &mut toolbox(d.path()),
            &args!({"files": ["a.txt", {"file_path": "missing.txt"}, {"file_path": "dir"}, 7]}),
        )
        .unwrap();
        assert!(out.starts_with("files_succeeded: 1\nfiles_with_errors: 3\nbatch_truncated: false\n\n=== FILE: a.txt ===\nstatus: ok\nrequest: offset=1 limit=2000\ncontent_truncated: false\nchecksum: "), "{out}");
        assert!(out.contains("1: alpha"));
        assert!(out.contains(
            "=== FILE: missing.txt ===\nstatus: error\nrequest: offset=1 limit=2000\nerror: path does not exist: missing.txt"
        ));
        assert!(out.contains("error: is a directory, use read_file to list directories"));
        assert!(out.contains("=== FILE: file 4 ==="));
    }

    #[test]
    fn read_multiple_files_refuses_more_than_twenty() {
        let d = tempfile::tempdir().unwrap();
        let files: Vec<String> = (0..21).map(|i| format!("f{i}")).collect();
        let err = read_multiple_files(&mut toolbox(d.path()), &args!({ "files": files })).unwrap_err().render();
        assert!(err.contains("maximum is 20"));
    }

    #[test]
    fn read_multiple_files_stops_at_the_batch_budget() {
        let d = tempfile::tempdir().unwrap();
        let big = "z".repeat(1000) + "\n";
        for i in 0..3 {
            std::fs::write(d.path().join(format!("{i}.txt")), big.repeat(30)).unwrap();
        }
        let mut tb = toolbox(d.path());
        let out = read_multiple_files(&mut tb, &args!({"files": ["0.txt", "1.txt", "2.txt"]})).unwrap();
        assert!(tb.tracker.seen(&tb.policy.base.join("0.txt")));
        assert!(
            !tb.tracker.seen(&tb.policy.base.join("1.txt")),
            "a skipped file was never shown, so it does not count as read"
        );
        assert!(out.contains("batch_truncated: true"), "{}", &out[..200]);
        assert!(out.ends_with("[batch_truncated: 2 file(s) skipped due to size limit; read them in another call]"));
    }

    #[test]
    fn a_read_counts_for_the_write_guard_only_when_lines_came_back() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "x\n").unwrap();
        let mut tb = toolbox(d.path());
        let path = tb.policy.base.join("a.txt");
        read_file(&mut tb, &args!({"file_path": "a.txt", "offset": 5}), None).unwrap_err().render();
        assert!(!tb.tracker.seen(&path));
        read_file(&mut tb, &args!({"file_path": "a.txt"}), None).unwrap();
        assert!(tb.tracker.seen(&path));
    }
}
