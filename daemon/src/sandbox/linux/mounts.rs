//! The helper's private mount namespace: the directories above protected
//! paths pinned in place, policy files bound read-only, hidden paths
//! covered.

use super::{io, sys, HelperError, HelperPlan};
use crate::sandbox::home::HomeView;
use nix::mount::{mount, MsFlags};
use std::path::{Path, PathBuf};

/// Make the new mount namespace private, then: pin the directories above
/// protected paths that the command could rename (so the binds below land
/// inside them), bind policy files read-only, and cover hidden paths (a
/// hidden path inside a policy directory stays hidden).
pub(super) fn apply(plan: &HelperPlan) -> Result<(), HelperError> {
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(sys("cannot make the mount namespace private"))?;
    if let Some(view) = &plan.home {
        private_home(view, &plan.write_dirs)?;
    }
    for dir in pinned_ancestors(plan) {
        pin_in_place(&dir)?;
    }
    for path in &plan.readonly_paths {
        bind_readonly(path)?;
    }
    for path in &plan.hide_paths {
        hide(path)?;
    }
    Ok(())
}

/// How a path is shown in the private home.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Shown {
    /// Bound read-write: a directory commands write.
    Writable,
    /// Bound read-only.
    ReadOnly,
    /// A toolchain directory: an overlay whose writes vanish with the command.
    Overlay,
}

/// Where the overlays' upper and work directories live, inside the home's
/// tmpfs (whose mount turns read-only after, which the overlays' own
/// private copies of it do not).
const OVERLAY_DIR: &str = ".swival-toolchain-writes";

/// Cover the home with an empty tmpfs and show in it only the directories
/// commands write under it (read-write), the paths the view keeps
/// (read-only) and the toolchain locations (a file read-only, a directory
/// overlaid), each opened before the cover and mounted from its open
/// descriptor, parents first; then the tmpfs's mount turns read-only and
/// the working directory is entered again through the new mounts.
fn private_home(view: &HomeView, write_dirs: &[PathBuf]) -> Result<(), HelperError> {
    use nix::fcntl::{open, OFlag};
    use nix::sys::stat::Mode;
    let home = &view.home;
    let mut kept: Vec<(&PathBuf, Shown)> = write_dirs
        .iter()
        .filter(|w| w.starts_with(home) && *w != home)
        .map(|w| (w, Shown::Writable))
        .chain(view.keep.iter().map(|k| (k, Shown::ReadOnly)))
        .chain(view.toolchain.iter().map(|k| (k, Shown::Overlay)))
        // What lies in a directory commands write is shown with it; the
        // model could have made it a symlink to anything.
        .filter(|(k, shown)| *shown == Shown::Writable || !write_dirs.iter().any(|w| k.starts_with(w)))
        .collect();
    kept.sort();
    let mut opened = Vec::new();
    for (path, shown) in kept {
        // Never through a symlink: the view shows the file itself.
        let Ok(meta) = std::fs::symlink_metadata(path) else { continue };
        if meta.file_type().is_symlink() {
            continue;
        }
        let shown = if shown == Shown::Overlay && !meta.is_dir() { Shown::ReadOnly } else { shown };
        let fd = open(path.as_path(), OFlag::O_PATH | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW, Mode::empty())
            .map_err(sys(format!("cannot open {} for the private home", path.display())))?;
        opened.push((path, shown, fd, meta.is_dir()));
    }
    let cwd = std::env::current_dir().ok();
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    mount(Some("tmpfs"), home.as_path(), Some("tmpfs"), flags, Some("size=512m,mode=0755"))
        .map_err(sys(format!("cannot make {} private: mount", home.display())))?;
    for (i, (path, shown, fd, is_dir)) in opened.iter().enumerate() {
        let made = match is_dir {
            true => std::fs::create_dir_all(path),
            false => path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| {
                std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path).map(drop)
            }),
        };
        made.map_err(io(format!("cannot show {} in the private home", path.display())))?;
        let source = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(fd));
        match shown {
            Shown::Overlay => overlay(&source, path, &home.join(OVERLAY_DIR).join(i.to_string()))?,
            _ => {
                mount(
                    Some(source.as_str()),
                    path.as_path(),
                    None::<&str>,
                    MsFlags::MS_BIND | MsFlags::MS_REC,
                    None::<&str>,
                )
                .map_err(sys(format!("cannot show {} in the private home: bind", path.display())))?;
                if *shown == Shown::ReadOnly {
                    remount_readonly(path)?;
                }
            }
        }
    }
    for (link, target) in &view.links {
        // A link inside a directory shown whole is already there.
        if std::fs::symlink_metadata(link).is_err() {
            link.parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::os::unix::fs::symlink(target, link))
                .map_err(io(format!("cannot make {} in the private home", link.display())))?;
        }
    }
    // The mount, not the filesystem: the overlays keep writing to it.
    let ro = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | flags;
    mount(None::<&str>, home.as_path(), None::<&str>, ro, None::<&str>)
        .map_err(sys(format!("cannot make the private {} read-only", home.display())))?;
    if let Some(cwd) = cwd {
        std::env::set_current_dir(&cwd).map_err(io(format!("cannot enter {} again", cwd.display())))?;
    }
    Ok(())
}

/// Mount at `path` an overlay of the directory `lower` (a descriptor's
/// path) whose writes go to `scratch` in the home's tmpfs.
fn overlay(lower: &str, path: &Path, scratch: &Path) -> Result<(), HelperError> {
    let (upper, work) = (scratch.join("u"), scratch.join("w"));
    for dir in [&upper, &work] {
        std::fs::create_dir_all(dir).map_err(io(format!("cannot make {}", dir.display())))?;
    }
    let options = format!("lowerdir={lower},upperdir={},workdir={},userxattr", upper.display(), work.display());
    let overlaid =
        mount(Some("overlay"), path, Some("overlay"), MsFlags::MS_NOSUID | MsFlags::MS_NODEV, Some(options.as_str()));
    if overlaid.is_ok() {
        return Ok(());
    }
    // A kernel without unprivileged overlays (before 5.11): read-only.
    mount(Some(lower), path, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>)
        .map_err(sys(format!("cannot show {} in the private home: bind", path.display())))?;
    remount_readonly(path)
}

/// The toolchain directories a plan overlays: commands may write there
/// (Landlock), as what they write vanishes with them.
pub(super) fn overlaid(plan: &HelperPlan) -> Vec<PathBuf> {
    plan.home.iter().flat_map(|v| v.toolchain.iter()).filter(|p| p.is_dir()).cloned().collect()
}

/// Every existing directory from a writable root down to the parent of a
/// hidden or read-only path that lies under it, outermost first. Hiding
/// and read-only binds attach to a name: were the command to rename a
/// directory above one (`mv conf conf2`), the next command would find the
/// file under a name no rule names. A mount point cannot be renamed or
/// removed (EBUSY), so each such directory is bound onto itself — the file
/// keeps its name, whatever the command does, while everything inside
/// stays writable.
pub(super) fn pinned_ancestors(plan: &HelperPlan) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in plan.hide_paths.iter().chain(&plan.readonly_paths) {
        // From the outermost: an inner write dir is pinned on the way.
        let Some(root) = plan.write_dirs.iter().filter(|w| path.starts_with(w)).min_by_key(|w| w.as_os_str().len())
        else {
            continue;
        };
        let mut dir = root.clone();
        let rest: Vec<_> = path.strip_prefix(root).map(|r| r.components().collect()).unwrap_or_default();
        for c in rest.iter().take(rest.len().saturating_sub(1)) {
            dir.push(c);
            if !out.contains(&dir) && std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                out.push(dir.clone());
            }
        }
    }
    out
}

/// Bind the directory `dir` onto itself (writable as before): a mount point
/// the command can neither rename nor remove.
fn pin_in_place(dir: &Path) -> Result<(), HelperError> {
    mount(Some(dir), dir, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>)
        .map_err(sys(format!("cannot pin {} in place: bind", dir.display())))
}

/// Bind `path` onto itself read-only, keeping the flags the kernel locks
/// for mounts inherited into a user namespace (nosuid, nodev, noexec,
/// atime), so the remount is allowed. A mount point also cannot be renamed
/// or removed (EBUSY), so the file cannot be replaced either.
fn bind_readonly(path: &Path) -> Result<(), HelperError> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    let fail = |what: &str| sys(format!("cannot make {} read-only: {what}", path.display()));
    mount(Some(path), path, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>).map_err(fail("bind"))?;
    remount_readonly(path)
}

/// Remount the bind mount at `path` read-only, keeping the flags the kernel
/// locks (see [`bind_readonly`]).
fn remount_readonly(path: &Path) -> Result<(), HelperError> {
    use nix::sys::statvfs::FsFlags;
    let fail = |what: &str| sys(format!("cannot make {} read-only: {what}", path.display()));
    let vfs = nix::sys::statvfs::statvfs(path).map_err(fail("statvfs"))?;
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (have, keep) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if vfs.flags().contains(have) {
            flags |= keep;
        }
    }
    mount(None::<&str>, path, None::<&str>, flags, None::<&str>).map_err(fail("remount"))
}

/// Cover `path` in this mount namespace: a directory with an empty
/// read-only tmpfs, anything else (a file, swivald's socket) with
/// /dev/null: it reads empty, a write goes nowhere, connecting is refused. A path that does not exist has nothing to
/// hide.
fn hide(path: &Path) -> Result<(), HelperError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let result = if meta.is_dir() {
        mount(
            Some("tmpfs"),
            path,
            Some("tmpfs"),
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("size=4k,mode=0555"),
        )
    } else {
        mount(Some("/dev/null"), path, None::<&str>, MsFlags::MS_BIND, None::<&str>)
    };
    result.map_err(sys(format!("cannot hide {}: mount", path.display())))
}
