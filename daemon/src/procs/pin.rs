//! Policy scripts pinned by SHA-256 (SPEC §6). When a session starts, the
//! program of every filter stage, hook, reviewer and `command` provider,
//! and every argument naming a file (the script an interpreter runs, as in
//! `python3 ./f.py`), is hashed. Every spawn, and every call served by an
//! already started process, first checks that what would run is still
//! byte-identical; a change, by anyone, fails the call closed with both
//! hashes in the message.
//!
//! The check re-hashes only when the file's identity changed: device,
//! inode, size, mtime and ctime are recorded with the hash, and any write
//! or replacement changes at least the ctime, which no unprivileged
//! process can set back.

use super::ProcError;
use sha2::{Digest, Sha256};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// One pinned file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pinned {
    /// The file as the script names it (symlinks are followed when read).
    pub path: PathBuf,
    /// Hex SHA-256 of its contents when the session pinned it.
    pub sha256: String,
    /// Its identity then: (device, inode, size, mtime ns, ctime ns).
    stamp: (u64, u64, u64, i128, i128),
}

fn stamp(meta: &std::fs::Metadata) -> (u64, u64, u64, i128, i128) {
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    (meta.dev(), meta.ino(), meta.size(), ns(meta.mtime(), meta.mtime_nsec()), ns(meta.ctime(), meta.ctime_nsec()))
}

/// Hex SHA-256 of a file's contents.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    Ok(hex::encode(Sha256::digest(std::fs::read(path)?)))
}

impl Pinned {
    /// Pin `path` as it is now; `None` when it cannot be read.
    pub fn new(path: &Path) -> Option<Pinned> {
        let meta = std::fs::metadata(path).ok()?;
        let sha256 = sha256_file(path).ok()?;
        // A write between the stat and the read changes the ctime: the
        // next check then hashes again rather than trusting a stale stamp.
        let after = std::fs::metadata(path).ok()?;
        let stamp = if stamp(&meta) == stamp(&after) { stamp(&meta) } else { (0, 0, 0, 0, 0) };
        Some(Pinned { path: path.to_owned(), sha256, stamp })
    }

    /// Whether the file is still what was pinned; the error names both hashes.
    pub fn verify(&self) -> Result<(), ProcError> {
        if std::fs::metadata(&self.path).is_ok_and(|m| stamp(&m) == self.stamp) {
            return Ok(());
        }
        let now = match sha256_file(&self.path) {
            Ok(h) if h == self.sha256 => return Ok(()),
            Ok(h) => h,
            Err(e) => format!("unreadable ({e})"),
        };
        Err(ProcError::Changed { path: self.path.display().to_string(), pinned: self.sha256.clone(), now })
    }
}

/// Check every pin; the first change found is the error.
pub fn verify_all(pins: &[Pinned]) -> Result<(), ProcError> {
    pins.iter().try_for_each(Pinned::verify)
}

/// Find `program` as the OS would: a path as given, a bare name on PATH.
pub fn locate(program: &str) -> Option<PathBuf> {
    let executable = |p: &Path| p.is_file() && p.metadata().is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    std::env::var_os("PATH").iter().flat_map(std::env::split_paths).map(|d| d.join(program)).find(|p| executable(p))
}

/// The files `argv` runs, as `(path, is the program)`: the located
/// program and every argument naming an existing regular file, relative
/// arguments taken from `cwd` (where the script runs).
pub fn files_of(argv: &[String], cwd: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (i, arg) in argv.iter().enumerate() {
        let path = if i == 0 {
            locate(arg)
        } else if arg.starts_with('-') || arg.is_empty() {
            None
        } else {
            let p = Path::new(arg);
            Some(if p.is_absolute() { p.to_owned() } else { cwd.join(p) }).filter(|p| p.is_file())
        };
        if let Some(p) = path {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Pin every file `argv` runs.
pub fn pin_argv(argv: &[String], cwd: &Path) -> Vec<Pinned> {
    files_of(argv, cwd).iter().filter_map(|p| Pinned::new(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_program_and_a_script_argument_are_pinned_flags_are_not() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.py"), "print(1)").unwrap();
        let pins = pin_argv(&argv(&["sh", "-c", "./f.py", "f.py", "missing.py"]), d.path());
        let paths: Vec<_> = pins.iter().map(|p| p.path.clone()).collect();
        assert_eq!(paths.len(), 2, "{paths:?}");
        assert!(paths[0].ends_with("sh"));
        assert_eq!(paths[1], d.path().join("f.py"));
        assert_eq!(pins[1].sha256, hex::encode(Sha256::digest(b"print(1)")));
    }

    #[test]
    fn an_unchanged_file_verifies_and_a_rewritten_one_names_both_hashes() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f.py");
        std::fs::write(&f, "a").unwrap();
        let pin = Pinned::new(&f).unwrap();
        pin.verify().unwrap();
        std::fs::write(&f, "b").unwrap();
        let err = pin.verify().unwrap_err().to_string();
        assert!(err.contains(&hex::encode(Sha256::digest(b"a"))), "{err}");
        assert!(err.contains(&hex::encode(Sha256::digest(b"b"))), "{err}");
        assert!(err.contains("start a new session"), "{err}");
    }

    #[test]
    fn a_file_replaced_by_rename_or_removed_fails_and_a_same_content_rewrite_passes() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f.py");
        std::fs::write(&f, "a").unwrap();
        let pin = Pinned::new(&f).unwrap();
        std::fs::write(d.path().join("g"), "a").unwrap();
        std::fs::rename(d.path().join("g"), &f).unwrap();
        pin.verify().unwrap();
        std::fs::write(d.path().join("g"), "evil").unwrap();
        std::fs::rename(d.path().join("g"), &f).unwrap();
        assert!(pin.verify().is_err());
        std::fs::remove_file(&f).unwrap();
        assert!(pin.verify().unwrap_err().to_string().contains("unreadable"));
    }
}
