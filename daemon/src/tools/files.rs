//! `read_file` and `write_file` with Swival's output format, caps and the
//! read-before-write guard.

use super::path::Access;
use super::ToolBox;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// Most bytes of file content one read returns.
pub const MAX_READ_BYTES: usize = 50 * 1024;
/// Lines longer than this are cut.
pub const MAX_LINE_CHARS: usize = 2000;
/// Default number of lines per read.
const DEFAULT_LIMIT: usize = 2000;

/// First 8 hex digits of the SHA-256 of `bytes` (Swival's checksum).
pub fn checksum(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..4])
}

fn arg_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("error: missing required string argument '{key}'"))
}

fn arg_usize(args: &Value, key: &str) -> Result<Option<usize>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .map(|n| Some(n as usize))
            .ok_or_else(|| format!("error: '{key}' must be a non-negative integer, got {v}")),
    }
}

/// `read_file {file_path, offset?, limit?, tail_lines?}`.
pub fn read_file(tb: &mut ToolBox, args: &Value) -> Result<String, String> {
    let requested = arg_str(args, "file_path")?;
    let path = tb.policy.resolve(requested, Access::Read)?;
    let meta =
        std::fs::metadata(&path).map_err(|e| format!("error: cannot read {requested}: {e}"))?;
    if meta.is_dir() {
        return list_dir(&path, requested);
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("error: cannot read {requested}: {e}"))?;
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err(format!("error: {requested} is a binary file"));
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| format!("error: {requested} is not valid UTF-8 text"))?;
    let mut lines: Vec<&str> = text.split('\n').collect();
    if text.ends_with('\n') {
        lines.pop();
    }
    let total = lines.len();
    let offset = arg_usize(args, "offset")?;
    let limit = arg_usize(args, "limit")?.unwrap_or(DEFAULT_LIMIT).max(1);
    let tail = arg_usize(args, "tail_lines")?;
    let start = match (offset, tail) {
        (Some(o), Some(t)) if t > 1 && o > 1 => {
            return Err("error: use either offset or tail_lines, not both".into())
        }
        (_, Some(t)) if t >= 1 => total.saturating_sub(t),
        (Some(o), _) => o.max(1) - 1,
        _ => 0,
    };
    if start > 0 && start >= total {
        return Err(format!(
            "error: offset {} is past the end of {requested} ({total} lines)",
            start + 1
        ));
    }
    let mut out = String::new();
    let mut end = start;
    let mut budget = MAX_READ_BYTES;
    for (i, line) in lines.iter().enumerate().skip(start).take(limit) {
        let shown = cut_line(line);
        let entry = format!("{}: {shown}\n", i + 1);
        if entry.len() > budget && end > start {
            break;
        }
        budget = budget.saturating_sub(entry.len());
        out.push_str(&entry);
        end = i + 1;
    }
    if end < total {
        let _ = writeln!(
            out,
            "[{} more lines, use offset={} to continue]",
            total - end,
            end + 1
        );
    }
    let _ = write!(out, "[checksum={}]", checksum(&bytes));
    tb.tracker.mark(&path);
    Ok(out)
}

/// A line cut to [`MAX_LINE_CHARS`] with a marker saying how long it was.
fn cut_line(line: &str) -> std::borrow::Cow<'_, str> {
    let n = line.chars().count();
    if n <= MAX_LINE_CHARS {
        return line.into();
    }
    let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{cut}… [line truncated: {n} chars]").into()
}

fn list_dir(path: &std::path::Path, requested: &str) -> Result<String, String> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .map_err(|e| format!("error: cannot list {requested}: {e}"))?
        .filter_map(Result::ok)
        .map(|e| {
            let mut n = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                n.push('/');
            }
            n
        })
        .collect();
    names.sort();
    Ok(if names.is_empty() {
        format!("{requested} is an empty directory")
    } else {
        names.join("\n")
    })
}

/// `write_file {file_path, content}`.
pub fn write_file(tb: &mut ToolBox, args: &Value) -> Result<String, String> {
    let requested = arg_str(args, "file_path")?;
    let content = match args.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => return Err("error: write_file needs 'content'".into()),
        Some(other) => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    let path = tb.policy.resolve(requested, Access::Write)?;
    if path.is_dir() {
        return Err(format!("error: {requested} is a directory"));
    }
    if path.exists() && tb.read_guard && !tb.tracker.seen(&path) {
        return Err("error: cannot write to an existing file that hasn't been read first. Use read_file to inspect the current contents before modifying.".into());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("error: cannot create the directories for {requested}: {e}"))?;
    }
    std::fs::write(&path, content.as_bytes())
        .map_err(|e| format!("error: cannot write {requested}: {e}"))?;
    tb.tracker.mark(&path);
    Ok(format!(
        "Wrote {} bytes to {requested}\n[checksum={}]",
        content.len(),
        checksum(content.as_bytes())
    ))
}

/// `think {thought, ...}`: a scratchpad with no side effects.
pub fn think(tb: &mut ToolBox, args: &Value) -> Result<String, String> {
    let thought = arg_str(args, "thought")?;
    if thought.chars().count() > 10_000 {
        return Err("error: a thought is limited to 10000 characters".into());
    }
    tb.thoughts += 1;
    let next = args
        .get("next_thought_needed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(serde_json::json!({
        "thought_number": tb.thoughts,
        "total_thoughts": args.get("total_thoughts").and_then(Value::as_u64).unwrap_or(tb.thoughts),
        "next_thought_needed": next,
        "history_length": tb.thoughts,
    })
    .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn toolbox(dir: &std::path::Path) -> ToolBox {
        ToolBox::new(super::super::path::PathPolicy {
            base: dir.canonicalize().unwrap(),
            allow_rw: vec![],
            allow_ro: vec![],
            yolo: false,
        })
    }

    #[test]
    fn read_numbers_lines_and_ends_with_checksum() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "one\ntwo\n").unwrap();
        let out = read_file(&mut toolbox(d.path()), &json!({"file_path": "a.txt"})).unwrap();
        assert_eq!(
            out,
            format!("1: one\n2: two\n[checksum={}]", checksum(b"one\ntwo\n"))
        );
    }

    #[test]
    fn large_file_reads_in_pages_that_cover_it_all() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (0..4000)
            .map(|i| format!("line {i} {}\n", "x".repeat(40)))
            .collect();
        std::fs::write(d.path().join("big.txt"), &text).unwrap();
        let mut tb = toolbox(d.path());
        let mut offset = 1;
        let mut seen = Vec::new();
        loop {
            let out =
                read_file(&mut tb, &json!({"file_path": "big.txt", "offset": offset})).unwrap();
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
    fn long_lines_are_cut_with_a_marker() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("l.txt"), "y".repeat(5000)).unwrap();
        let out = read_file(&mut toolbox(d.path()), &json!({"file_path": "l.txt"})).unwrap();
        assert!(out.contains("[line truncated: 5000 chars]"));
        assert!(out.len() < 2200);
    }

    #[test]
    fn overwrite_needs_a_read_first() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("e.txt"), "old").unwrap();
        let mut tb = toolbox(d.path());
        let err =
            write_file(&mut tb, &json!({"file_path": "e.txt", "content": "new"})).unwrap_err();
        assert!(err.contains("hasn't been read first"));
        read_file(&mut tb, &json!({"file_path": "e.txt"})).unwrap();
        write_file(&mut tb, &json!({"file_path": "e.txt", "content": "new"})).unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("e.txt")).unwrap(),
            "new"
        );
    }

    #[test]
    fn new_files_and_parents_are_created() {
        let d = tempfile::tempdir().unwrap();
        let out = write_file(
            &mut toolbox(d.path()),
            &json!({"file_path": "x/y/z.txt", "content": "hi"}),
        )
        .unwrap();
        assert!(out.starts_with("Wrote 2 bytes to x/y/z.txt"));
        assert_eq!(
            std::fs::read_to_string(d.path().join("x/y/z.txt")).unwrap(),
            "hi"
        );
    }
}
