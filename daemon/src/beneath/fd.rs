//! The `*at` calls beneath an open directory: opening without following
//! symlinks (`openat2`, or a walk with `O_NOFOLLOW`), listing, removing,
//! measuring and copying by name.

use super::*;

pub(super) fn io_err(e: Errno) -> Error {
    Error::Io(e.into())
}

/// The `Normal` components of `rel`; `..`, a root or a prefix is refused
/// (they could lead out), `.` is skipped.
pub(super) fn normal_components(rel: &Path) -> Result<Vec<&OsStr>, Error> {
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
pub(super) fn split(rel: &Path) -> Result<Option<(PathBuf, OsString)>, Error> {
    let names = normal_components(rel)?;
    Ok(names.split_last().map(|(last, parents)| (parents.iter().collect(), (*last).to_owned())))
}

/// Whether `openat2` is missing (ENOSYS once seen).
#[cfg(target_os = "linux")]
static NO_OPENAT2: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Open `rel` beneath `dir` following no symlink: `openat2` where the
/// kernel has it, else [`walk_open`].
pub(super) fn open_beneath(dir: BorrowedFd<'_>, rel: &Path, flags: OFlag, mode: Mode) -> nix::Result<OwnedFd> {
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
pub(super) fn walk_open(dir: BorrowedFd<'_>, rel: &Path, flags: OFlag, mode: Mode) -> nix::Result<OwnedFd> {
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

pub(super) fn is_symlink(dir: BorrowedFd<'_>, name: &OsStr) -> bool {
    stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok_and(|st| Meta::from_stat(&st).kind == Kind::Symlink)
}

/// The entries of the open directory `dir` (opened `O_RDONLY`).
pub(super) fn list_fd(dir: OwnedFd) -> io::Result<Vec<Entry>> {
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
pub(super) fn read_names(dir: OwnedFd) -> io::Result<Vec<OsString>> {
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
pub(super) fn remove_in(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
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
pub(super) fn size_in(dir: BorrowedFd<'_>, name: &OsStr) -> u64 {
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
pub(super) fn copy_across(src: BorrowedFd<'_>, from: &OsStr, dst: BorrowedFd<'_>, to: &OsStr) -> io::Result<()> {
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
