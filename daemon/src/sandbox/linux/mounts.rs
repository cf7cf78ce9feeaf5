//! The helper's private mount namespace: the directories above protected
//! paths pinned in place, policy files bound read-only, hidden paths
//! covered.

use super::{sys, HelperError, HelperPlan};
use nix::mount::{mount, MsFlags};
use std::path::{Path, PathBuf};

/// Make the new mount namespace private, then: pin the directories above
/// protected paths that the command could rename (so the binds below land
/// inside them), bind policy files read-only, and cover hidden paths (a
/// hidden path inside a policy directory stays hidden).
pub(super) fn apply(plan: &HelperPlan) -> Result<(), HelperError> {
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(sys("cannot make the mount namespace private"))?;
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
        let Some(root) = plan.write_dirs.iter().filter(|w| path.starts_with(w)).max_by_key(|w| w.as_os_str().len())
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
