//! File I/O that cannot be redirected out of a directory: the one place the
//! daemon opens, creates, renames and removes files under a session's base
//! dir, for the file tools and for the files the daemon itself keeps in
//! `.swival/`.
//!
//! [`PathPolicy::resolve`](crate::tools::path::PathPolicy::resolve) decides *where*
//! a path may go; this module makes sure the I/O lands *there*. A path checked
//! and then used by name can be redirected in between (a command flips a
//! directory into a symlink), so every operation starts from an open
//! directory ([`Beneath`]) and resolves the rest relative to it with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`: no component may leave
//! the directory and no symlink is followed, anywhere on the way. Where the
//! kernel lacks `openat2` (ENOSYS), the same rule is applied by walking the
//! components with `openat(O_NOFOLLOW)`. Renames, removals and new
//! directories use the `*at` calls on a parent opened that way, whose last
//! component is never followed either.
//!
//! Paths given to a [`Beneath`] are relative and are expected to be
//! canonical already, so a symlink met on the way appeared after the check
//! and the operation fails with [`Error::Symlink`]. [`swival_dir`] is how the
//! daemon reaches its own files: a `.swival` that is a symlink is refused.

use nix::errno::Errno;
use nix::fcntl::{self, AtFlags, OFlag};
use nix::sys::stat::{self, FileStat, Mode, SFlag};
use nix::unistd::{self, UnlinkatFlags};
use std::ffi::{CStr, OsStr, OsString};
use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsFd, BorrowedFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

mod fd;
mod model;
#[cfg(test)]
mod tests;

pub use model::{first_symlink, lexical, read_for_model, read_small};

use fd::*;

/// Why an operation beneath a directory failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A symlink (or a component leading out of the directory) was met on
    /// the way; it was not followed and nothing was touched through it.
    #[error("{} is a symlink and was not followed", .0.display())]
    Symlink(PathBuf),
    /// A FIFO, device, socket or directory where a regular file was
    /// expected; it was not read.
    #[error("{} is not a regular file and was not read", .0.display())]
    NotRegular(PathBuf),
    /// A file larger than the reader's cap; not a byte of it was read.
    #[error("{} is {len} bytes, over the {cap}-byte limit, and was not read", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        len: u64,
        /// The cap.
        cap: u64,
    },
    /// A path the session hides (a credential store, the daemon's own
    /// directories, `sandbox_hide`).
    #[error("{} is hidden from the model and was not read", .0.display())]
    Hidden(PathBuf),
    /// Any other I/O failure, as the OS reported it.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl Error {
    /// Whether the entry does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e {
            Error::Io(e) => e,
            other => io::Error::other(other.to_string()),
        }
    }
}

/// What kind of entry a path names (its last component not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A device, socket or FIFO.
    Other,
}

/// What [`Beneath::metadata`] and [`Beneath::list`] report about an entry.
#[derive(Debug, Clone, Copy)]
pub struct Meta {
    /// File, directory, symlink or other.
    pub kind: Kind,
    /// Size in bytes.
    pub len: u64,
    /// Last modification.
    pub modified: SystemTime,
    /// `st_mode`: type and permission bits.
    pub mode: u32,
}

impl Meta {
    fn from_stat(st: &FileStat) -> Meta {
        let kind = match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
            SFlag::S_IFREG => Kind::File,
            SFlag::S_IFDIR => Kind::Dir,
            SFlag::S_IFLNK => Kind::Symlink,
            _ => Kind::Other,
        };
        let modified = match u64::try_from(st.st_mtime) {
            Ok(s) => SystemTime::UNIX_EPOCH + Duration::new(s, st.st_mtime_nsec.clamp(0, 999_999_999) as u32),
            Err(_) => SystemTime::UNIX_EPOCH,
        };
        Meta { kind, len: st.st_size.max(0) as u64, modified, mode: st.st_mode }
    }

    /// The metadata of an open file.
    pub fn of(file: &File) -> io::Result<Meta> {
        Ok(Meta::from_stat(&stat::fstat(file.as_fd()).map_err(io::Error::from)?))
    }

    /// Whether it is a directory.
    pub fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }
}

/// One entry of a listed directory.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The entry's name.
    pub name: OsString,
    /// Its metadata (a symlink is reported as one, not followed).
    pub meta: Meta,
}

/// How [`Beneath::open_file`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// Read an existing file (or directory); non-blocking, so a FIFO
    /// cannot hang the caller.
    Read,
    /// Write, creating the file or truncating it.
    Truncate,
    /// Write an existing file, truncating it; never creates.
    Rewrite,
    /// Create a new file; fails if the name exists (even as a symlink).
    CreateNew,
    /// Append, creating the file if missing.
    Append,
    /// Open for locking: created if missing, never truncated.
    Lock,
}

impl How {
    fn flags(self) -> OFlag {
        match self {
            // A FIFO planted by a command must not hang the open.
            How::Read => OFlag::O_RDONLY | OFlag::O_NONBLOCK,
            How::Truncate => OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC,
            How::Rewrite => OFlag::O_WRONLY | OFlag::O_TRUNC,
            How::CreateNew => OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
            How::Append => OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_APPEND,
            How::Lock => OFlag::O_WRONLY | OFlag::O_CREAT,
        }
    }
}

/// Mode for new files and directories (the umask applies).
const NEW_FILE: Mode = Mode::from_bits_truncate(0o666);
const NEW_DIR: Mode = Mode::from_bits_truncate(0o777);

/// Flags for a directory opened only to resolve beneath it.
#[cfg(target_os = "linux")]
fn dir_flags() -> OFlag {
    OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC
}
#[cfg(not(target_os = "linux"))]
fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC
}

/// An open directory every operation is confined to.
#[derive(Debug)]
pub struct Beneath {
    /// The directory.
    fd: OwnedFd,
    /// Its path, for messages only (never opened again by name).
    shown: PathBuf,
}

/// What the daemon does when `.swival` does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Create it.
    Create,
    /// Fail with NotFound.
    Fail,
}

/// The daemon's own directory `<base>/.swival`, opened beneath `base`
/// without following a symlink: the one way to reach HISTORY.md, the todo
/// file, the trash and spill files. A `.swival` that is a symlink (made by a
/// command, or committed in a cloned repository) is refused with
/// [`Error::Symlink`] rather than written through.
pub fn swival_dir(base: &Path, missing: Missing) -> Result<Beneath, Error> {
    let b = Beneath::open(base)?;
    if missing == Missing::Create {
        b.mkdir_all(Path::new(".swival"))?;
    }
    b.open_dir(Path::new(".swival"))
}

impl Beneath {
    /// Open `root` (an absolute, canonical directory) to work beneath it.
    pub fn open(root: &Path) -> Result<Beneath, Error> {
        let fd = fcntl::open(root, dir_flags() | OFlag::O_NOFOLLOW, Mode::empty()).map_err(|e| match e {
            Errno::ELOOP => Error::Symlink(root.to_owned()),
            e => Error::Io(e.into()),
        })?;
        Ok(Beneath { fd, shown: root.to_owned() })
    }

    /// The path of `rel` beneath this directory, to name it (a record of
    /// a change); never opened again by name.
    pub fn path_of(&self, rel: &Path) -> PathBuf {
        self.shown.join(rel)
    }

    /// The directory `rel` beneath this one.
    pub fn open_dir(&self, rel: &Path) -> Result<Beneath, Error> {
        let fd = self.open_raw(rel, dir_flags(), Mode::empty())?;
        Ok(Beneath { fd, shown: self.shown.join(rel) })
    }

    /// Open the file `rel`.
    pub fn open_file(&self, rel: &Path, how: How) -> Result<File, Error> {
        Ok(File::from(self.open_raw(rel, how.flags(), NEW_FILE)?))
    }

    /// The whole content of the file `rel`.
    pub fn read(&self, rel: &Path) -> Result<Vec<u8>, Error> {
        let mut bytes = Vec::new();
        self.open_file(rel, How::Read)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The content of `rel` when it is a regular file of at most `cap`
    /// bytes: the type and size are read from the open descriptor (opened
    /// without blocking, no symlink followed), before any byte is read, and
    /// no more than `cap` bytes are read even if the file grows meanwhile.
    pub fn read_regular(&self, rel: &Path, cap: u64) -> Result<Vec<u8>, Error> {
        let file = self.open_file(rel, How::Read)?;
        let meta = Meta::of(&file)?;
        if meta.kind != Kind::File {
            return Err(Error::NotRegular(self.shown.join(rel)));
        }
        if meta.len > cap {
            return Err(Error::TooLarge { path: self.shown.join(rel), len: meta.len, cap });
        }
        let mut bytes = Vec::with_capacity(meta.len as usize);
        file.take(cap).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Metadata of the entry `rel` itself (a final symlink is reported, not
    /// followed).
    pub fn metadata(&self, rel: &Path) -> Result<Meta, Error> {
        let Some((parent, name)) = split(rel)? else {
            return Ok(Meta::from_stat(&stat::fstatat(&self.fd, ".", AtFlags::AT_SYMLINK_NOFOLLOW).map_err(io_err)?));
        };
        let dir = self.open_raw(&parent, dir_flags(), Mode::empty())?;
        let st = stat::fstatat(&dir, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW).map_err(io_err)?;
        Ok(Meta::from_stat(&st))
    }

    /// The entries of the directory `rel`, unsorted, without `.` and `..`.
    pub fn list(&self, rel: &Path) -> Result<Vec<Entry>, Error> {
        let dir = self.open_raw(rel, OFlag::O_RDONLY | OFlag::O_DIRECTORY, Mode::empty())?;
        list_fd(dir).map_err(Error::Io)
    }

    /// Create the directory `rel` and any missing parents, each created
    /// beneath the one before it.
    pub fn mkdir_all(&self, rel: &Path) -> Result<(), Error> {
        let mut cur: Option<OwnedFd> = None;
        for name in normal_components(rel)? {
            let at = cur.as_ref().map_or(self.fd.as_fd(), |f| f.as_fd());
            let next = match open_beneath(at, Path::new(name), dir_flags(), Mode::empty()) {
                Err(Errno::ENOENT) => {
                    match stat::mkdirat(at, name, NEW_DIR) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(e) => return Err(Error::Io(e.into())),
                    }
                    open_beneath(at, Path::new(name), dir_flags(), Mode::empty())
                }
                other => other,
            };
            cur = Some(next.map_err(|e| self.fail(rel, e))?);
        }
        Ok(())
    }

    /// Replace the file `rel` with `bytes`: written to `<rel>.tmp`, created
    /// exclusively (a stale temporary, even a symlink, is removed first, never
    /// followed), then renamed over `rel` within the same directory.
    pub fn replace(&self, rel: &Path, bytes: &[u8]) -> Result<(), Error> {
        self.replace_with_mode(rel, bytes, None)
    }

    /// [`Beneath::replace`], with the new file's permission bits set to
    /// `mode` whatever the umask (`None`: as the umask leaves them).
    pub fn replace_with_mode(&self, rel: &Path, bytes: &[u8], mode: Option<u32>) -> Result<(), Error> {
        let (parent, name) = split(rel)?.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let dir = self.open_raw(&parent, dir_flags(), Mode::empty())?;
        let mut tmp = name.clone();
        tmp.push(".tmp");
        let create = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW;
        let fd = match open_beneath(dir.as_fd(), Path::new(&tmp), create, NEW_FILE) {
            Err(Errno::EEXIST | Errno::ELOOP) => {
                unistd::unlinkat(&dir, tmp.as_os_str(), UnlinkatFlags::NoRemoveDir).map_err(io_err)?;
                open_beneath(dir.as_fd(), Path::new(&tmp), create, NEW_FILE)
            }
            other => other,
        }
        .map_err(|e| self.fail(&parent.join(&tmp), e))?;
        let mut file = File::from(fd);
        file.write_all(bytes)?;
        if let Some(mode) = mode {
            stat::fchmod(&file, Mode::from_bits_truncate(mode & 0o7777)).map_err(io_err)?;
        }
        fcntl::renameat(&dir, tmp.as_os_str(), &dir, name.as_os_str()).map_err(io_err)?;
        Ok(())
    }

    /// The target of the symlink `rel` (which is not followed).
    pub fn read_link(&self, rel: &Path) -> Result<Vec<u8>, Error> {
        let (parent, name) = split(rel)?.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let dir = self.open_raw(&parent, dir_flags(), Mode::empty())?;
        Ok(fcntl::readlinkat(&dir, name.as_os_str()).map_err(io_err)?.into_encoded_bytes())
    }

    /// Make `rel` a symlink to `target`, replacing a file or symlink there.
    pub fn symlink(&self, target: &[u8], rel: &Path) -> Result<(), Error> {
        let (parent, name) = split(rel)?.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let dir = self.open_raw(&parent, dir_flags(), Mode::empty())?;
        match unistd::unlinkat(&dir, name.as_os_str(), UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => {}
            Err(e) => return Err(io_err(e)),
        }
        unistd::symlinkat(OsStr::from_bytes(target), &dir, name.as_os_str()).map_err(io_err)
    }

    /// Remove the directory `rel` if it is empty; whether it was removed.
    pub fn remove_empty_dir(&self, rel: &Path) -> bool {
        let Ok(Some((parent, name))) = split(rel) else { return false };
        let Ok(dir) = self.open_raw(&parent, dir_flags(), Mode::empty()) else { return false };
        unistd::unlinkat(&dir, name.as_os_str(), UnlinkatFlags::RemoveDir).is_ok()
    }

    /// Rename the entry `from` (a file or symlink, moved itself) to `to`
    /// beneath `dest`; across filesystems it is copied and removed.
    pub fn rename(&self, from: &Path, dest: &Beneath, to: &Path) -> Result<(), Error> {
        let (from_parent, from_name) = split(from)?.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let (to_parent, to_name) = split(to)?.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let src = self.open_raw(&from_parent, dir_flags(), Mode::empty())?;
        let dst = dest.open_raw(&to_parent, dir_flags(), Mode::empty())?;
        match fcntl::renameat(&src, from_name.as_os_str(), &dst, to_name.as_os_str()) {
            Err(Errno::EXDEV) => copy_across(src.as_fd(), &from_name, dst.as_fd(), &to_name).map_err(Error::Io),
            other => other.map_err(io_err),
        }
    }

    /// Remove the entry `rel` (a file or symlink, not followed).
    pub fn remove_file(&self, rel: &Path) -> Result<(), Error> {
        let (parent, name) = split(rel)?.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let dir = self.open_raw(&parent, dir_flags(), Mode::empty())?;
        unistd::unlinkat(&dir, name.as_os_str(), UnlinkatFlags::NoRemoveDir).map_err(io_err)
    }

    /// Remove `rel` and everything under it; symlinks inside are removed,
    /// never followed.
    pub fn remove_tree(&self, rel: &Path) -> Result<(), Error> {
        let (parent, name) = split(rel)?.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let dir = self.open_raw(&parent, dir_flags(), Mode::empty())?;
        remove_in(dir.as_fd(), &name).map_err(Error::Io)
    }

    /// Bytes under `rel` (files and symlinks counted as themselves).
    pub fn tree_size(&self, rel: &Path) -> u64 {
        let Ok(Some((parent, name))) = split(rel) else {
            return 0;
        };
        self.open_raw(&parent, dir_flags(), Mode::empty()).map_or(0, |dir| size_in(dir.as_fd(), &name))
    }

    /// Open `rel` beneath this directory with `flags`.
    fn open_raw(&self, rel: &Path, flags: OFlag, mode: Mode) -> Result<OwnedFd, Error> {
        let mode = if flags.contains(OFlag::O_CREAT) { mode } else { Mode::empty() };
        open_beneath(self.fd.as_fd(), rel, flags | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW, mode)
            .map_err(|e| self.fail(rel, e))
    }

    /// The error for `e` met while opening `rel`: a refusal naming the
    /// symlink when one is on the way.
    fn fail(&self, rel: &Path, e: Errno) -> Error {
        match e {
            Errno::ELOOP | Errno::EXDEV => Error::Symlink(self.first_link(rel).unwrap_or_else(|| self.shown.join(rel))),
            Errno::ENOTDIR => match self.first_link(rel) {
                Some(link) => Error::Symlink(link),
                None => Error::Io(e.into()),
            },
            e => Error::Io(e.into()),
        }
    }

    /// The first component of `rel` that is a symlink now (for the message).
    fn first_link(&self, rel: &Path) -> Option<PathBuf> {
        let mut prefix = PathBuf::new();
        for c in rel.components() {
            let Component::Normal(name) = c else { continue };
            prefix.push(name);
            let st = stat::fstatat(&self.fd, &prefix, AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
            if Meta::from_stat(&st).kind == Kind::Symlink {
                return Some(self.shown.join(&prefix));
            }
        }
        None
    }
}
