//! File I/O that cannot be redirected out of a directory: the one place the
//! daemon opens, creates, renames and removes files under a session's base
//! dir, for the file tools and for the files the daemon itself keeps in
//! `.swival/`.
//!
//! [`PathPolicy::resolve`](super::path::PathPolicy::resolve) decides *where*
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

/// Why an operation beneath a directory failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A symlink (or a component leading out of the directory) was met on
    /// the way; it was not followed and nothing was touched through it.
    #[error("{} is a symlink and was not followed", .0.display())]
    Symlink(PathBuf),
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
        Meta { kind, len: st.st_size.max(0) as u64, modified }
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

    /// The directory's path, as opened.
    pub fn root(&self) -> &Path {
        &self.shown
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
        File::from(fd).write_all(bytes)?;
        fcntl::renameat(&dir, tmp.as_os_str(), &dir, name.as_os_str()).map_err(io_err)?;
        Ok(())
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

fn io_err(e: Errno) -> Error {
    Error::Io(e.into())
}

/// The `Normal` components of `rel`; `..`, a root or a prefix is refused
/// (they could lead out), `.` is skipped.
fn normal_components(rel: &Path) -> Result<Vec<&OsStr>, Error> {
    let mut names = Vec::new();
    for c in rel.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(n) => names.push(n),
            _ => {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a plain relative path", rel.display()),
                )))
            }
        }
    }
    Ok(names)
}

/// `rel` as (parent, last name); `None` for the directory itself.
fn split(rel: &Path) -> Result<Option<(PathBuf, OsString)>, Error> {
    let names = normal_components(rel)?;
    Ok(names.split_last().map(|(last, parents)| (parents.iter().collect(), (*last).to_owned())))
}

/// Whether `openat2` is missing (ENOSYS once seen).
#[cfg(target_os = "linux")]
static NO_OPENAT2: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Open `rel` beneath `dir` following no symlink: `openat2` where the
/// kernel has it, else [`walk_open`].
fn open_beneath(dir: BorrowedFd<'_>, rel: &Path, flags: OFlag, mode: Mode) -> nix::Result<OwnedFd> {
    let rel = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
    #[cfg(target_os = "linux")]
    if !NO_OPENAT2.load(std::sync::atomic::Ordering::Relaxed) {
        use fcntl::ResolveFlag;
        use std::sync::atomic::Ordering;
        let mut how =
            fcntl::OpenHow::new().flags(flags).resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
        if flags.contains(OFlag::O_CREAT) {
            how = how.mode(mode);
        }
        // EAGAIN: a concurrent rename disturbed the lookup; try again.
        for _ in 0..8 {
            match fcntl::openat2(dir, rel, how) {
                Err(Errno::EAGAIN) => continue,
                Err(Errno::ENOSYS) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    break;
                }
                other => return other,
            }
        }
    }
    walk_open(dir, rel, flags, mode)
}

/// The fallback for kernels without `openat2`: each directory on the way is
/// opened with `O_NOFOLLOW` relative to the one before, so no symlink is
/// followed and `..` never appears (the caller's path is canonical).
fn walk_open(dir: BorrowedFd<'_>, rel: &Path, flags: OFlag, mode: Mode) -> nix::Result<OwnedFd> {
    let mut names = Vec::new();
    for c in rel.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(n) => names.push(n),
            _ => return Err(Errno::EXDEV),
        }
    }
    let Some((last, parents)) = names.split_last() else {
        return fcntl::openat(dir, ".", flags & !OFlag::O_NOFOLLOW, mode);
    };
    let mut cur: Option<OwnedFd> = None;
    for name in parents {
        let at = cur.as_ref().map_or(dir, |f| f.as_fd());
        let next = match fcntl::openat(at, *name, dir_flags() | OFlag::O_NOFOLLOW, Mode::empty()) {
            // O_PATH|O_NOFOLLOW opens a symlink itself; O_DIRECTORY then
            // says ENOTDIR. Report it as the symlink it is.
            Err(Errno::ENOTDIR) if is_symlink(at, name) => Err(Errno::ELOOP),
            other => other,
        }?;
        cur = Some(next);
    }
    let at = cur.as_ref().map_or(dir, |f| f.as_fd());
    fcntl::openat(at, *last, flags | OFlag::O_NOFOLLOW, mode)
}

fn is_symlink(dir: BorrowedFd<'_>, name: &OsStr) -> bool {
    stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok_and(|st| Meta::from_stat(&st).kind == Kind::Symlink)
}

/// The entries of the open directory `dir` (opened `O_RDONLY`).
fn list_fd(dir: OwnedFd) -> io::Result<Vec<Entry>> {
    let names = read_names(unistd::dup(&dir)?)?;
    Ok(names
        .into_iter()
        .filter_map(|name| {
            let st = stat::fstatat(&dir, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
            Some(Entry { meta: Meta::from_stat(&st), name })
        })
        .collect())
}

/// The names in a directory, read through its own descriptor.
fn read_names(dir: OwnedFd) -> io::Result<Vec<OsString>> {
    let raw = dir.into_raw_fd();
    // SAFETY: `raw` is an open directory descriptor we own; on success
    // `fdopendir` takes it over and `closedir` below closes it.
    let dirp = unsafe { libc::fdopendir(raw) };
    if dirp.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so `raw` is still ours to close.
        unsafe { libc::close(raw) };
        return Err(e);
    }
    let mut names = Vec::new();
    let result = loop {
        // readdir signals both the end and an error with NULL; errno tells.
        Errno::clear();
        // SAFETY: `dirp` is a valid, open DIR stream used by this thread only.
        let ent = unsafe { libc::readdir(dirp) };
        if ent.is_null() {
            break match Errno::last_raw() {
                0 => Ok(()),
                e => Err(io::Error::from_raw_os_error(e)),
            };
        }
        // SAFETY: `d_name` of a returned entry is a NUL-terminated string
        // valid until the next readdir on this stream.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) }.to_bytes();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(name).to_owned());
        }
    };
    // SAFETY: `dirp` came from fdopendir and is closed exactly once.
    unsafe { libc::closedir(dirp) };
    result.map(|()| names)
}

/// Remove `name` in `dir`, recursively if it is a directory.
fn remove_in(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let st = stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)?;
    if Meta::from_stat(&st).kind != Kind::Dir {
        return Ok(unistd::unlinkat(dir, name, UnlinkatFlags::NoRemoveDir)?);
    }
    let sub = fcntl::openat(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    for child in read_names(unistd::dup(&sub)?)? {
        remove_in(sub.as_fd(), &child)?;
    }
    Ok(unistd::unlinkat(dir, name, UnlinkatFlags::RemoveDir)?)
}

/// Bytes under `name` in `dir`.
fn size_in(dir: BorrowedFd<'_>, name: &OsStr) -> u64 {
    let Ok(st) = stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) else {
        return 0;
    };
    let meta = Meta::from_stat(&st);
    if meta.kind != Kind::Dir {
        return meta.len;
    }
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let Ok(sub) = fcntl::openat(dir, name, flags, Mode::empty()) else {
        return 0;
    };
    let names = unistd::dup(&sub).map_err(io::Error::from).and_then(read_names).unwrap_or_default();
    names.iter().map(|n| size_in(sub.as_fd(), n)).sum()
}

/// `rename` across filesystems: copy `from` (a symlink as a symlink, a file
/// with its permissions) to `to`, then remove `from`.
fn copy_across(src: BorrowedFd<'_>, from: &OsStr, dst: BorrowedFd<'_>, to: &OsStr) -> io::Result<()> {
    let st = stat::fstatat(src, from, AtFlags::AT_SYMLINK_NOFOLLOW)?;
    match Meta::from_stat(&st).kind {
        Kind::Symlink => {
            let target = fcntl::readlinkat(src, from)?;
            match unistd::symlinkat(target.as_os_str(), dst, to) {
                Err(Errno::EEXIST) => {
                    unistd::unlinkat(dst, to, UnlinkatFlags::NoRemoveDir)?;
                    unistd::symlinkat(target.as_os_str(), dst, to)?;
                }
                other => other?,
            }
        }
        Kind::File => {
            let mut input = File::from(fcntl::openat(
                src,
                from,
                OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            )?);
            let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
            let perms = Mode::from_bits_truncate(st.st_mode & 0o7777);
            let mut output = File::from(fcntl::openat(dst, to, flags, perms)?);
            io::copy(&mut input, &mut output)?;
            stat::fchmod(output.as_fd(), perms)?;
        }
        _ => return Err(io::Error::new(io::ErrorKind::InvalidInput, "only files and symlinks can be moved")),
    }
    Ok(unistd::unlinkat(src, from, UnlinkatFlags::NoRemoveDir)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A base dir and a sibling "outside" dir holding `secret`.
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap().join("base");
        let outside = d.path().canonicalize().unwrap().join("outside");
        std::fs::create_dir(&base).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("secret"), "SECRET").unwrap();
        (d, base, outside)
    }

    #[test]
    fn a_symlinked_swival_dir_is_refused() {
        let (_d, base, outside) = setup();
        symlink(&outside, base.join(".swival")).unwrap();
        for missing in [Missing::Create, Missing::Fail] {
            let err = swival_dir(&base, missing).unwrap_err();
            assert!(matches!(err, Error::Symlink(_)), "{err:?}");
            assert!(err.to_string().ends_with(".swival is a symlink and was not followed"), "{err}");
        }
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    }

    #[test]
    fn a_swival_dir_is_created_when_missing_and_reported_missing_otherwise() {
        let (_d, base, _) = setup();
        assert!(swival_dir(&base, Missing::Fail).unwrap_err().is_not_found());
        let dir = swival_dir(&base, Missing::Create).unwrap();
        dir.replace(Path::new("f"), b"x").unwrap();
        assert_eq!(std::fs::read_to_string(base.join(".swival/f")).unwrap(), "x");
    }

    #[test]
    fn a_temporary_planted_as_a_symlink_is_replaced_not_followed() {
        let (_d, base, outside) = setup();
        std::fs::create_dir(base.join(".swival")).unwrap();
        symlink(outside.join("secret"), base.join(".swival/HISTORY.md.tmp")).unwrap();
        let dir = swival_dir(&base, Missing::Create).unwrap();
        dir.replace(Path::new("HISTORY.md"), b"entry").unwrap();
        assert_eq!(std::fs::read_to_string(outside.join("secret")).unwrap(), "SECRET");
        assert_eq!(std::fs::read_to_string(base.join(".swival/HISTORY.md")).unwrap(), "entry");
        assert!(std::fs::symlink_metadata(base.join(".swival/HISTORY.md.tmp")).is_err());
    }

    #[test]
    fn a_final_symlink_is_neither_read_nor_written_through() {
        let (_d, base, outside) = setup();
        symlink(outside.join("secret"), base.join("link")).unwrap();
        let b = Beneath::open(&base).unwrap();
        assert!(matches!(b.read(Path::new("link")), Err(Error::Symlink(_))));
        for how in [How::Truncate, How::Rewrite, How::Append, How::Lock] {
            assert!(matches!(b.open_file(Path::new("link"), how), Err(Error::Symlink(_))), "{how:?}");
        }
        assert!(b.open_file(Path::new("link"), How::CreateNew).is_err());
        assert_eq!(b.metadata(Path::new("link")).unwrap().kind, Kind::Symlink);
        assert_eq!(std::fs::read_to_string(outside.join("secret")).unwrap(), "SECRET");
    }

    #[test]
    fn a_symlink_swapped_in_mid_path_makes_the_open_fail() {
        let (_d, base, outside) = setup();
        std::fs::create_dir(base.join("d")).unwrap();
        std::fs::write(base.join("d/secret"), "inside").unwrap();
        let b = Beneath::open(&base).unwrap();
        assert_eq!(b.read(Path::new("d/secret")).unwrap(), b"inside");
        // The path was checked with `d` a directory; now it is a symlink.
        std::fs::remove_dir_all(base.join("d")).unwrap();
        symlink(&outside, base.join("d")).unwrap();
        let err = b.read(Path::new("d/secret")).unwrap_err();
        assert_eq!(err.to_string(), format!("{} is a symlink and was not followed", base.join("d").display()));
        assert!(matches!(b.open_file(Path::new("d/x"), How::Truncate), Err(Error::Symlink(_))));
        assert!(matches!(b.mkdir_all(Path::new("d/sub")), Err(Error::Symlink(_))));
        assert!(matches!(b.list(Path::new("d")), Err(Error::Symlink(_))));
        assert!(matches!(b.remove_file(Path::new("d/secret")), Err(Error::Symlink(_))));
        // The fallback walk refuses it too.
        let flags = OFlag::O_RDONLY | OFlag::O_CLOEXEC;
        assert_eq!(walk_open(b.fd.as_fd(), Path::new("d/secret"), flags, Mode::empty()).unwrap_err(), Errno::ELOOP);
        assert_eq!(walk_open(b.fd.as_fd(), Path::new("../x"), flags, Mode::empty()).unwrap_err(), Errno::EXDEV);
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
        assert_eq!(std::fs::read_to_string(outside.join("secret")).unwrap(), "SECRET");
    }

    #[test]
    fn the_fallback_walk_opens_and_creates_like_openat2() {
        let (_d, base, _) = setup();
        std::fs::create_dir_all(base.join("a/b")).unwrap();
        let b = Beneath::open(&base).unwrap();
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_CLOEXEC;
        let fd = walk_open(b.fd.as_fd(), Path::new("a/b/new"), flags, NEW_FILE).unwrap();
        File::from(fd).write_all(b"n").unwrap();
        assert_eq!(std::fs::read_to_string(base.join("a/b/new")).unwrap(), "n");
        symlink("b", base.join("a/l")).unwrap();
        let read = OFlag::O_RDONLY | OFlag::O_CLOEXEC;
        assert_eq!(walk_open(b.fd.as_fd(), Path::new("a/l"), read, Mode::empty()).unwrap_err(), Errno::ELOOP);
    }

    #[test]
    fn rename_moves_entries_between_directories_and_trees_are_removed_without_following() {
        let (_d, base, outside) = setup();
        std::fs::write(base.join("f"), "F").unwrap();
        std::fs::create_dir_all(base.join("t/sub")).unwrap();
        symlink(&outside, base.join("t/sub/out")).unwrap();
        let b = Beneath::open(&base).unwrap();
        let t = b.open_dir(Path::new("t")).unwrap();
        b.rename(Path::new("f"), &t, Path::new("sub/g")).unwrap();
        assert_eq!(std::fs::read_to_string(base.join("t/sub/g")).unwrap(), "F");
        assert_eq!(b.tree_size(Path::new("t")), 1 + outside.as_os_str().len() as u64);
        let mut names: Vec<OsString> = t.list(Path::new("sub")).unwrap().into_iter().map(|e| e.name).collect();
        names.sort();
        assert_eq!(names, ["g", "out"]);
        b.remove_tree(Path::new("t")).unwrap();
        assert!(!base.join("t").exists());
        assert_eq!(std::fs::read_to_string(outside.join("secret")).unwrap(), "SECRET");
    }

    #[test]
    fn copy_across_keeps_symlinks_and_file_modes() {
        use std::os::unix::fs::PermissionsExt;
        let (_d, base, _) = setup();
        std::fs::create_dir(base.join("to")).unwrap();
        std::fs::write(base.join("x"), "X").unwrap();
        std::fs::set_permissions(base.join("x"), std::fs::Permissions::from_mode(0o750)).unwrap();
        symlink("somewhere", base.join("l")).unwrap();
        let b = Beneath::open(&base).unwrap();
        let to = b.open_dir(Path::new("to")).unwrap();
        copy_across(b.fd.as_fd(), OsStr::new("x"), to.fd.as_fd(), OsStr::new("x")).unwrap();
        copy_across(b.fd.as_fd(), OsStr::new("l"), to.fd.as_fd(), OsStr::new("l")).unwrap();
        assert_eq!(std::fs::read_to_string(base.join("to/x")).unwrap(), "X");
        assert_eq!(std::fs::metadata(base.join("to/x")).unwrap().permissions().mode() & 0o777, 0o750);
        assert_eq!(std::fs::read_link(base.join("to/l")).unwrap(), Path::new("somewhere"));
        assert!(!base.join("x").exists() && std::fs::symlink_metadata(base.join("l")).is_err());
    }
}
