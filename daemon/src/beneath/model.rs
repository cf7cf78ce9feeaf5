//! The one way the daemon reads a file whose bytes reach a request to the
//! model: instruction files, memory, continue, skills, the reviewer modes'
//! objective and verify files. The model can write where these files lie,
//! so such a file may be a symlink to a key, a FIFO that never answers, or
//! a sparse gigabyte. Each is opened beneath a directory the daemon chose
//! with no symlink followed anywhere on the way, without blocking, read
//! only when the open descriptor is a regular file no larger than the
//! reader's cap, and never when it lies under a path the session hides.

use super::{Beneath, Error};
use std::path::{Component, Path, PathBuf};

/// The bytes of `path` (absolute, or relative to `base`) for the model.
///
/// A path that lies under `base` (lexically, `..` resolved without
/// following anything) is opened beneath `base`, so no component of it may
/// be a symlink — the model can make any of them one. A path elsewhere was
/// named by the user (an absolute `--objective`): it is opened beneath its
/// parent directory as the user wrote it, and only its last component must
/// not be a link. Either way the file must be regular and at most `cap`
/// bytes (checked on the open descriptor before reading), and outside
/// every path in `hidden` (canonical paths).
pub fn read_for_model(base: &Path, path: &Path, cap: u64, hidden: &[PathBuf]) -> Result<Vec<u8>, Error> {
    let full = lexical(&base.join(path));
    let (root, rel) = match full.strip_prefix(base) {
        Ok(rel) if !rel.as_os_str().is_empty() => (base.to_owned(), rel.to_owned()),
        _ => {
            let (Some(parent), Some(name)) = (full.parent(), full.file_name()) else {
                return Err(Error::NotRegular(full));
            };
            let parent = parent.canonicalize()?;
            (parent, PathBuf::from(name))
        }
    };
    let shown = root.join(&rel);
    if hidden.iter().any(|h| shown.starts_with(h)) {
        return Err(Error::Hidden(shown));
    }
    Beneath::open(&root)?.read_regular(&rel, cap)
}

/// The text of the small file at `path`, for the daemon's own use (a
/// project's `.git` file, its config, `info/exclude`): opened without
/// blocking, so a FIFO the model planted cannot hang the daemon, and read
/// only when it is a regular file of at most `cap` bytes. Symlinks are
/// followed: what it says never reaches the model.
pub fn read_small(path: &Path, cap: u64) -> std::io::Result<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    // Not even opened unless it is a regular file now (opening a device can
    // act); the descriptor is checked again.
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::other(format!("{} is not a regular file", path.display())));
    }
    let file = std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > cap {
        return Err(std::io::Error::other(format!("{} is not a regular file of at most {cap} bytes", path.display())));
    }
    let mut text = String::new();
    file.take(cap).read_to_string(&mut text)?;
    Ok(text)
}

/// The first symlink on the way from `from` down to `path` (which lies
/// under it), `path` itself included; `None` when there is none (or the
/// way stops at something missing).
pub fn first_symlink(from: &Path, path: &Path) -> Option<PathBuf> {
    let mut at = from.to_owned();
    for c in path.strip_prefix(from).ok()?.components() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Some(at),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// `p` with `.` and `..` resolved by name (nothing is followed).
pub fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap().join("p");
        std::fs::create_dir(&base).unwrap();
        (d, base)
    }

    #[test]
    fn a_regular_file_under_the_cap_is_read_relative_or_absolute() {
        let (_d, base) = base();
        std::fs::write(base.join("AGENTS.md"), "be kind").unwrap();
        assert_eq!(read_for_model(&base, Path::new("AGENTS.md"), 100, &[]).unwrap(), b"be kind");
        let outside = base.parent().unwrap().join("objective.txt");
        std::fs::write(&outside, "the goal").unwrap();
        assert_eq!(read_for_model(&base, &outside, 100, &[]).unwrap(), b"the goal");
    }

    #[test]
    fn a_link_anywhere_under_the_base_is_not_followed() {
        let (_d, base) = base();
        let secret = base.parent().unwrap().join("id_rsa");
        std::fs::write(&secret, "KEY").unwrap();
        std::os::unix::fs::symlink(&secret, base.join("AGENTS.md")).unwrap();
        let err = read_for_model(&base, Path::new("AGENTS.md"), 100, &[]).unwrap_err();
        assert!(matches!(err, Error::Symlink(_)), "{err:?}");
        std::os::unix::fs::symlink(base.parent().unwrap(), base.join("docs")).unwrap();
        let err = read_for_model(&base, Path::new("docs/id_rsa"), 100, &[]).unwrap_err();
        assert!(matches!(err, Error::Symlink(_)), "{err:?}");
        // `..` out of the base and back in is judged by where it lands.
        let err = read_for_model(&base, Path::new("../p/AGENTS.md"), 100, &[]).unwrap_err();
        assert!(matches!(err, Error::Symlink(_)), "{err:?}");
    }

    #[test]
    fn a_fifo_a_directory_and_a_sparse_giant_are_not_read() {
        let (_d, base) = base();
        nix::unistd::mkfifo(&base.join("AGENTS.md"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let err = read_for_model(&base, Path::new("AGENTS.md"), 100, &[]).unwrap_err();
        assert!(matches!(err, Error::NotRegular(_)), "{err:?}");
        std::fs::create_dir(base.join("CLAUDE.md")).unwrap();
        let err = read_for_model(&base, Path::new("CLAUDE.md"), 100, &[]).unwrap_err();
        assert!(matches!(err, Error::NotRegular(_)), "{err:?}");
        let giant = std::fs::File::create(base.join("SKILL.md")).unwrap();
        giant.set_len(1 << 30).unwrap();
        let err = read_for_model(&base, Path::new("SKILL.md"), 1 << 20, &[]).unwrap_err();
        assert!(matches!(err, Error::TooLarge { len, .. } if len == 1 << 30), "{err:?}");
    }

    #[test]
    fn a_hidden_path_is_not_read() {
        let (_d, base) = base();
        std::fs::create_dir(base.join("conf")).unwrap();
        std::fs::write(base.join("conf/.env"), "TOKEN=1").unwrap();
        let err = read_for_model(&base, Path::new("conf/.env"), 100, &[base.join("conf")]).unwrap_err();
        assert!(matches!(err, Error::Hidden(_)), "{err:?}");
    }
}
