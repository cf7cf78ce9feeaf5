//! Where things live: the socket (SPEC §3) and the per-user directories, and
//! the ownership and permission checks on the socket's directory.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The socket path (SPEC §3); see [`swival_protocol::paths::socket_path`].
pub fn socket_path(explicit: Option<&Path>) -> PathBuf {
    swival_protocol::paths::socket_path(explicit, nix::unistd::getuid().as_raw())
}

/// The per-user directory under a base directory (config, state, cache).
fn user_dir(pick: fn(&directories::BaseDirs) -> Option<&Path>) -> PathBuf {
    directories::BaseDirs::new()
        .and_then(|b| pick(&b).map(|p| p.join("swival")))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("swival-{}", nix::unistd::getuid())))
}

/// `$XDG_CONFIG_HOME/swival`.
pub fn config_dir() -> PathBuf {
    user_dir(|b| Some(b.config_dir()))
}

/// `$XDG_STATE_HOME/swival` (the data dir where the OS has no state dir).
pub fn state_dir() -> PathBuf {
    user_dir(|b| b.state_dir().or(Some(b.data_local_dir())))
}

/// `$XDG_CACHE_HOME/swival`.
pub fn cache_dir() -> PathBuf {
    user_dir(|b| Some(b.cache_dir()))
}

/// `$XDG_DATA_HOME/swival-worktrees`: sessions' git worktrees, outside the
/// state dir (commands cannot see the state dir, and a write dir under a
/// hidden one would show it again).
pub fn worktrees_dir() -> PathBuf {
    directories::BaseDirs::new()
        .map(|b| b.data_dir().join("swival-worktrees"))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("swival-worktrees-{}", nix::unistd::getuid())))
}

/// A socket directory we must not use.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    /// Creating or inspecting the directory failed.
    #[error("cannot prepare socket directory {dir}: {source}")]
    Io { dir: PathBuf, source: std::io::Error },
    /// Something other than a directory is in the way.
    #[error("socket directory {dir} is not a directory; remove it or pick another socket path with --socket")]
    NotADirectory { dir: PathBuf },
    /// Another user owns it: they could swap the socket under us.
    #[error("socket directory {dir} is owned by uid {owner}, not by you (uid {me}); remove it or pick another socket path with --socket")]
    WrongOwner { dir: PathBuf, owner: u32, me: u32 },
    /// Group or others may enter it.
    #[error(
        "socket directory {dir} has mode {mode:04o}, which lets group or others in; fix it with `chmod 700 {dir}`"
    )]
    TooOpen { dir: PathBuf, mode: u32 },
}

/// Create the socket's directory (0700) if missing, then check that it is a
/// real directory owned by us with no group/other permission bits.
pub fn prepare_socket_dir(dir: &Path) -> Result<(), DirError> {
    let io = |source| DirError::Io { dir: dir.to_owned(), source };
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Parents are missing: create them with the usual mode, and the
            // socket's own directory with 0700.
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::DirBuilder::new().mode(0o700).create(dir).map_err(io)?;
        }
        Err(e) => return Err(io(e)),
    }
    let meta = std::fs::symlink_metadata(dir).map_err(io)?;
    if !meta.is_dir() {
        return Err(DirError::NotADirectory { dir: dir.to_owned() });
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(DirError::WrongOwner { dir: dir.to_owned(), owner: meta.uid(), me });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(DirError::TooOpen { dir: dir.to_owned(), mode });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_socket_path_wins() {
        assert_eq!(socket_path(Some(Path::new("/x/y.sock"))), PathBuf::from("/x/y.sock"));
    }

    #[test]
    fn socket_dir_is_created_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b/swival");
        prepare_socket_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn group_readable_socket_dir_is_refused_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("open");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
        let err = prepare_socket_dir(&dir).unwrap_err().to_string();
        assert!(err.contains("chmod 700"), "{err}");
        assert!(err.contains(&dir.display().to_string()), "{err}");
    }

    #[test]
    fn file_in_place_of_socket_dir_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("f");
        std::fs::write(&dir, "").unwrap();
        assert!(matches!(prepare_socket_dir(&dir), Err(DirError::NotADirectory { .. })));
    }
}
