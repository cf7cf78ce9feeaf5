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
//! process can set back. The path must still resolve to the same real
//! file (a re-pointed symlink fails), and every directory from that file
//! up to `/` must still be the same directory (device and inode): moving
//! a protected directory's parent aside and recreating the tree with an
//! identical script next to other modules fails too.

use super::ProcError;
use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Largest file hashed; a bigger "script" fails the check.
const MAX_PINNED_BYTES: u64 = 256 * 1024 * 1024;

/// One pinned file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pinned {
    /// The file as the script names it.
    pub path: PathBuf,
    /// What it resolved to (symlinks followed) when pinned.
    pub real: PathBuf,
    /// Hex SHA-256 of its contents when the session pinned it.
    pub sha256: String,
    /// Its identity then: (device, inode, size, mtime ns, ctime ns).
    stamp: (u64, u64, u64, i128, i128),
    /// Device and inode of every directory from `real`'s parent up to `/`.
    chain: Vec<(u64, u64)>,
}

fn stamp(meta: &std::fs::Metadata) -> (u64, u64, u64, i128, i128) {
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    (meta.dev(), meta.ino(), meta.size(), ns(meta.mtime(), meta.mtime_nsec()), ns(meta.ctime(), meta.ctime_nsec()))
}

/// Device and inode of each directory above `real`.
fn chain(real: &Path) -> std::io::Result<Vec<(u64, u64)>> {
    real.ancestors().skip(1).map(|d| std::fs::metadata(d).map(|m| (m.dev(), m.ino()))).collect()
}

/// Hex SHA-256 of a regular file's contents. Opened without blocking (a
/// FIFO cannot hang the daemon) and refused unless it is a regular file
/// of at most [`MAX_PINNED_BYTES`].
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > MAX_PINNED_BYTES {
        return Err(std::io::Error::other(format!("larger than {MAX_PINNED_BYTES} bytes")));
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_PINNED_BYTES {
            return Err(std::io::Error::other(format!("larger than {MAX_PINNED_BYTES} bytes")));
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

impl Pinned {
    /// Pin `path` as it is now; `None` when it cannot be read.
    pub fn new(path: &Path) -> Option<Pinned> {
        let real = path.canonicalize().ok()?;
        let meta = std::fs::metadata(&real).ok()?;
        let sha256 = sha256_file(&real).ok()?;
        // A write between the stat and the read changes the ctime: the
        // next check then hashes again rather than trusting a stale stamp.
        let after = std::fs::metadata(&real).ok()?;
        let stamp = if stamp(&meta) == stamp(&after) { stamp(&meta) } else { (0, 0, 0, 0, 0) };
        let chain = chain(&real).ok()?;
        Some(Pinned { path: path.to_owned(), real, sha256, stamp, chain })
    }

    /// Hold this pin to the hash an earlier start of the same session
    /// recorded: a file that changed while the session was not in memory
    /// (or the daemon was down) then fails like any other change.
    pub fn expect(&mut self, sha256: &str) {
        if self.sha256 != sha256 {
            self.sha256 = sha256.to_owned();
            self.stamp = (0, 0, 0, 0, 0);
        }
    }

    /// Whether the file is still what was pinned, where it was pinned;
    /// the error names both hashes (or what else changed).
    pub fn verify(&self) -> Result<(), ProcError> {
        let changed = |now: String| ProcError::Changed {
            path: self.path.display().to_string(),
            pinned: self.sha256.clone(),
            now,
        };
        match self.path.canonicalize() {
            Ok(real) if real == self.real => {}
            Ok(real) => {
                return Err(changed(format!(
                    "a different file ({} instead of {})",
                    real.display(),
                    self.real.display()
                )))
            }
            Err(e) => return Err(changed(format!("unreadable ({e})"))),
        }
        if chain(&self.real).ok().as_ref() != Some(&self.chain) {
            return Err(changed(format!(
                "the same content in a directory that was moved or replaced ({})",
                self.real.parent().unwrap_or(Path::new("/")).display()
            )));
        }
        if std::fs::metadata(&self.real).is_ok_and(|m| stamp(&m) == self.stamp) {
            return Ok(());
        }
        let now = match sha256_file(&self.real) {
            Ok(h) if h == self.sha256 => return Ok(()),
            Ok(h) => h,
            Err(e) => format!("unreadable ({e})"),
        };
        Err(changed(now))
    }
}

/// Check every pin; the first change found is the error.
pub fn verify_all(pins: &[Pinned]) -> Result<(), ProcError> {
    pins.iter().try_for_each(Pinned::verify)
}

/// The executable to run for `argv[0]`: the pinned program (so a PATH
/// lookup at exec time cannot pick another file), else the name itself.
pub fn executable<'a>(program: &'a str, pins: &'a [Pinned]) -> &'a Path {
    match pins.first() {
        Some(p) if !program.contains('/') && p.path.file_name().is_some_and(|n| n == program) => &p.path,
        _ => Path::new(program),
    }
}

/// Find `program` as the OS would: a path as given, a bare name on
/// `path` (the caller's `PATH`).
pub fn locate(program: &str, path: &OsStr) -> Option<PathBuf> {
    let executable = |p: &Path| p.is_file() && p.metadata().is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    // Relative PATH entries (`.`, empty) would mean the daemon's working
    // directory here and the script's at exec: never use them.
    std::env::split_paths(path).filter(|d| d.is_absolute()).map(|d| d.join(program)).find(|p| executable(p))
}

/// The files `argv` runs, as `(path, is the program)`: the located
/// program and every argument naming an existing regular file, relative
/// arguments taken from `cwd` (where the script runs), a bare program
/// name looked up on `path`.
pub fn files_of(argv: &[String], cwd: &Path, path: &OsStr) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (i, arg) in argv.iter().enumerate() {
        let path = if i == 0 {
            locate(arg, path)
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
pub fn pin_argv(argv: &[String], cwd: &Path, path: &OsStr) -> Vec<Pinned> {
    files_of(argv, cwd, path).iter().filter_map(|p| Pinned::new(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn path() -> std::ffi::OsString {
        std::env::var_os("PATH").unwrap_or_default()
    }

    #[test]
    fn the_program_and_a_script_argument_are_pinned_flags_are_not() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.py"), "print(1)").unwrap();
        let pins = pin_argv(&argv(&["sh", "-c", "./f.py", "f.py", "missing.py"]), d.path(), &path());
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
    fn a_moved_parent_directory_or_a_repointed_symlink_fails_even_with_the_same_content() {
        let d = tempfile::tempdir().unwrap();
        let tools = d.path().join("tools/filters");
        std::fs::create_dir_all(&tools).unwrap();
        std::fs::write(tools.join("f.py"), "a").unwrap();
        let pin = Pinned::new(&tools.join("f.py")).unwrap();
        std::fs::rename(d.path().join("tools"), d.path().join("tools2")).unwrap();
        std::fs::create_dir_all(&tools).unwrap();
        std::fs::write(tools.join("f.py"), "a").unwrap();
        let err = pin.verify().unwrap_err().to_string();
        assert!(err.contains("moved or replaced"), "{err}");

        std::fs::write(d.path().join("copy.py"), "a").unwrap();
        std::os::unix::fs::symlink(tools.join("f.py"), d.path().join("link")).unwrap();
        let pin = Pinned::new(&d.path().join("link")).unwrap();
        pin.verify().unwrap();
        std::fs::remove_file(d.path().join("link")).unwrap();
        std::os::unix::fs::symlink(d.path().join("copy.py"), d.path().join("link")).unwrap();
        assert!(pin.verify().unwrap_err().to_string().contains("a different file"));
    }

    #[test]
    fn a_fifo_or_a_device_fails_the_check_instead_of_hanging() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "a").unwrap();
        let pin = Pinned::new(&f).unwrap();
        std::fs::remove_file(&f).unwrap();
        nix::unistd::mkfifo(&f, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(pin.verify().unwrap_err().to_string().contains("not a regular file"));
        assert!(sha256_file(Path::new("/dev/zero")).is_err());
    }

    #[test]
    fn a_bare_program_runs_from_the_pinned_path() {
        let pins = pin_argv(&["sh".to_owned()], Path::new("/"), &path());
        assert_eq!(executable("sh", &pins), pins[0].path.as_path());
        assert_eq!(executable("./x", &pins), Path::new("./x"));
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
