//! Limits that count what a command uses, where the machine offers a
//! cgroup: each model command runs in a cgroup of its own, so its memory
//! limit counts every page it and its descendants charge — shared
//! mappings, memfd and tmpfs writes too, but not address space reserved
//! and never touched (thread stacks) — its process limit every task, and
//! its CPU limit the time of all of them together.
//!
//! Two layouts are used:
//! - **cgroup v2**, a subtree delegated to the daemon (a systemd user
//!   service with `Delegate=yes`, or the daemon's own cgroup when it runs
//!   as root): the daemon moves itself into a leaf `swivald` of its
//!   cgroup, enables the `memory`, `pids` and `cpu` controllers for the
//!   subtree and makes one sibling per command;
//! - **cgroup v1**, where its `memory` and `cpuacct` hierarchies (and
//!   `pids`) are mounted and the daemon may make directories in its own
//!   cgroup of each (root, on a hybrid machine).
//!
//! Memory is `memory.max` (v2; `memory.swap.max` 0) or
//! `memory.limit_in_bytes` (v1; `memory.memsw.limit_in_bytes` too where
//! swap is accounted): the kernel's OOM killer stops the command inside
//! its cgroup, and its OOM count says so. Processes are `pids.max`. CPU
//! time has no kernel limit in either layout: the daemon reads the
//! cgroup's usage while the command runs and kills everything in it once
//! the limit is passed. The child joins its cgroup between fork and exec,
//! by writing `0` to the `cgroup.procs` files the parent opened, so
//! nothing it starts is ever outside. Where none of this is possible the
//! per-process rlimits of `limits.rs` stay, and `policy/status` says so.

use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Where the daemon makes its commands' cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cgroups {
    /// A delegated cgroup v2 subtree: commands' cgroups are made here.
    V2 {
        /// The daemon's cgroup (the parent of its own leaf).
        parent: PathBuf,
    },
    /// cgroup v1 hierarchies: the daemon's cgroup in each.
    V1 {
        /// In the `memory` hierarchy.
        memory: PathBuf,
        /// In the `cpuacct` hierarchy.
        cpuacct: PathBuf,
        /// In the `pids` hierarchy, when mounted.
        pids: Option<PathBuf>,
    },
}

impl Cgroups {
    /// What `policy/status` calls it.
    pub fn name(&self) -> &'static str {
        match self {
            Cgroups::V2 { .. } => "cgroup v2",
            Cgroups::V1 { .. } => "cgroup v1 (memory, cpuacct, pids)",
        }
    }
}

/// Why no cgroup can be made for commands.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    /// `/proc/self/cgroup` or `/proc/self/mountinfo` could not be read.
    #[error("cannot read {0}: {1}")]
    Proc(&'static str, std::io::Error),
    /// The daemon is in no cgroup of this kind, or none is mounted.
    #[error("{0}")]
    Missing(&'static str),
    /// The daemon's v2 cgroup lacks the controllers.
    #[error("cgroup v2: {} does not offer the memory and pids controllers", .0.display())]
    NoControllers(PathBuf),
    /// The daemon may not make or use cgroups there.
    #[error("{what}: cannot use {}: {source}", .path.display())]
    NotDelegated {
        /// Which layout.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// The refusal.
        source: std::io::Error,
    },
    /// Neither layout is usable.
    #[error("{v2}; {v1}")]
    Neither {
        /// Why not v2.
        v2: Box<Unavailable>,
        /// Why not v1.
        v1: Box<Unavailable>,
    },
}

/// The daemon's cgroups, found once: `Err` says why there are none.
pub fn available() -> &'static Result<Cgroups, Unavailable> {
    static FOUND: std::sync::OnceLock<Result<Cgroups, Unavailable>> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        let found = probe();
        if let Ok(cgroups) = &found {
            sweep(cgroups);
        }
        found
    })
}

/// Remove the command cgroups a daemon that is gone left behind (killed
/// while a command ran): `cmd-<pid>-<n>` of a pid that no longer runs,
/// once empty. A live daemon's are left alone.
fn sweep(cgroups: &Cgroups) {
    let parents: Vec<&PathBuf> = match cgroups {
        Cgroups::V2 { parent } => vec![parent],
        Cgroups::V1 { memory, cpuacct, pids } => std::iter::once(memory).chain([cpuacct]).chain(pids).collect(),
    };
    for parent in parents {
        let Ok(entries) = std::fs::read_dir(parent) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("cmd-")).and_then(|r| r.split('-').next()) else {
                continue;
            };
            if !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
}

/// Find where commands' cgroups can be made (see the module).
fn probe() -> Result<Cgroups, Unavailable> {
    let read = |path: &'static str| std::fs::read_to_string(path).map_err(|e| Unavailable::Proc(path, e));
    let (own, mounts) = (read("/proc/self/cgroup")?, read("/proc/self/mountinfo")?);
    let v2 = match v2(&own, &mounts) {
        Ok(found) => return Ok(found),
        Err(why) => why,
    };
    v1(&own, &mounts).map_err(|v1| Unavailable::Neither { v2: Box::new(v2), v1: Box::new(v1) })
}

/// Mount points of cgroup filesystems: (fstype, super options, mount point).
fn cgroup_mounts(mountinfo: &str) -> Vec<(String, String, PathBuf)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let mut right = right.split(' ');
            let fstype = right.next()?;
            let options = right.nth(1).unwrap_or_default();
            (fstype == "cgroup" || fstype == "cgroup2").then(|| (fstype.to_owned(), options.to_owned(), point.into()))
        })
        .collect()
}

/// A delegated v2 subtree: the daemon's cgroup offers `memory` and `pids`
/// and the daemon may move itself into a leaf and enable them below.
fn v2(own: &str, mountinfo: &str) -> Result<Cgroups, Unavailable> {
    let path =
        own.lines().find_map(|l| l.strip_prefix("0::")).ok_or(Unavailable::Missing("no cgroup v2 membership"))?;
    let (_, _, mount) = cgroup_mounts(mountinfo)
        .into_iter()
        .find(|(t, _, _)| t == "cgroup2")
        .ok_or(Unavailable::Missing("no cgroup v2 mounted"))?;
    let mut parent = mount.join(path.trim_start_matches('/'));
    // Already in our leaf (a daemon restarted in place): its parent.
    if parent.file_name().is_some_and(|n| n == "swivald") {
        parent.pop();
    }
    let controllers = std::fs::read_to_string(parent.join("cgroup.controllers")).unwrap_or_default();
    if !["memory", "pids"].iter().all(|c| controllers.split_whitespace().any(|h| h == *c)) {
        return Err(Unavailable::NoControllers(parent));
    }
    let leaf = parent.join("swivald");
    // Every process of the cgroup moves to the leaf (the daemon, and what
    // it started before this), or the controllers cannot be enabled below.
    let moved = std::fs::create_dir_all(&leaf).and_then(|()| {
        let procs = std::fs::read_to_string(parent.join("cgroup.procs"))?;
        for pid in procs.lines().filter(|l| !l.trim().is_empty()) {
            std::fs::write(leaf.join("cgroup.procs"), pid.trim())?;
        }
        std::fs::write(parent.join("cgroup.subtree_control"), "+memory +pids")
    });
    moved.map_err(|source| Unavailable::NotDelegated { what: "cgroup v2", path: parent.clone(), source })?;
    // CPU time is read from `cpu.stat`, which needs no controller; enabling
    // `cpu` is only a bonus.
    let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+cpu");
    Ok(Cgroups::V2 { parent })
}

/// v1 `memory` and `cpuacct` hierarchies with a cgroup of the daemon's
/// that it may make directories in.
fn v1(own: &str, mountinfo: &str) -> Result<Cgroups, Unavailable> {
    let mounts = cgroup_mounts(mountinfo);
    let dir = |controller: &str| -> Option<PathBuf> {
        let (_, _, mount) = mounts.iter().find(|(t, o, _)| t == "cgroup" && o.split(',').any(|c| c == controller))?;
        let path = own.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
            list.split(',').any(|c| c == controller).then_some(path)
        })?;
        Some(mount.join(path.trim_start_matches('/')))
    };
    let memory = dir("memory").ok_or(Unavailable::Missing("cgroup v1: no memory hierarchy"))?;
    let cpuacct = dir("cpuacct").ok_or(Unavailable::Missing("cgroup v1: no cpuacct hierarchy"))?;
    let pids = dir("pids");
    for d in std::iter::once(&memory).chain(std::iter::once(&cpuacct)).chain(pids.iter()) {
        let probe = d.join(format!("swivald-probe-{}", std::process::id()));
        std::fs::create_dir(&probe)
            .and_then(|()| std::fs::remove_dir(&probe))
            .map_err(|source| Unavailable::NotDelegated { what: "cgroup v1", path: d.clone(), source })?;
    }
    Ok(Cgroups::V1 { memory, cpuacct, pids })
}

/// One command's cgroup: made before it starts, emptied and removed when
/// it is dropped.
#[derive(Debug)]
pub struct CommandCgroup {
    /// Which layout.
    v2: bool,
    /// Its directories, each once (one in v2; one per hierarchy in v1,
    /// where controllers mounted together share one).
    dirs: Vec<PathBuf>,
    /// Where memory is limited and counted.
    memory: PathBuf,
    /// Where CPU time is counted.
    cpu: PathBuf,
    /// Where processes are limited, if anywhere.
    pids: Option<PathBuf>,
    /// The `cgroup.procs` of each of `dirs`, open for the child to join.
    procs: Vec<std::fs::File>,
}

impl CommandCgroup {
    /// A new cgroup for one command with these limits (`None`: none).
    pub fn create(cgroups: &Cgroups, memory: Option<u64>, processes: Option<u64>) -> std::io::Result<CommandCgroup> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!("cmd-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let (v2, mem, cpu, pid) = match cgroups {
            Cgroups::V2 { parent } => (true, parent.join(&name), parent.join(&name), Some(parent.join(&name))),
            Cgroups::V1 { memory, cpuacct, pids } => {
                (false, memory.join(&name), cpuacct.join(&name), pids.as_ref().map(|p| p.join(&name)))
            }
        };
        let mut dirs: Vec<PathBuf> = Vec::new();
        for d in [Some(&mem), Some(&cpu), pid.as_ref()].into_iter().flatten() {
            if !dirs.contains(d) {
                dirs.push(d.clone());
            }
        }
        let mut cg = CommandCgroup { v2, dirs: Vec::new(), memory: mem, cpu, pids: pid, procs: Vec::new() };
        for dir in dirs {
            std::fs::create_dir(&dir)?;
            cg.dirs.push(dir);
        }
        cg.limit(memory, processes)?;
        for dir in &cg.dirs {
            cg.procs.push(std::fs::OpenOptions::new().write(true).open(dir.join("cgroup.procs"))?);
        }
        Ok(cg)
    }

    /// Write the limits into the cgroup's files.
    fn limit(&self, memory: Option<u64>, processes: Option<u64>) -> std::io::Result<()> {
        let set = |file: &Path, value: String| std::fs::write(file, value);
        if let Some(bytes) = memory {
            if self.v2 {
                set(&self.memory.join("memory.max"), bytes.to_string())?;
                // No swap to escape to, where swap is accounted.
                let _ = set(&self.memory.join("memory.swap.max"), "0".into());
            } else {
                set(&self.memory.join("memory.limit_in_bytes"), bytes.to_string())?;
                let memsw = self.memory.join("memory.memsw.limit_in_bytes");
                match memsw.exists() {
                    true => set(&memsw, bytes.to_string())?,
                    // Swap not accounted: keep the command out of it.
                    false => {
                        let _ = set(&self.memory.join("memory.swappiness"), "0".into());
                    }
                }
            }
        }
        if let (Some(n), Some(pids)) = (processes, &self.pids) {
            set(&pids.join("pids.max"), n.to_string())?;
        }
        Ok(())
    }

    /// The descriptors a child writes `0` to between fork and exec to
    /// join (`join_now`).
    pub fn join_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// CPU time used by everything in the cgroup so far.
    pub fn cpu_used(&self) -> Option<Duration> {
        if self.v2 {
            let stat = std::fs::read_to_string(self.cpu.join("cpu.stat")).ok()?;
            let usec = stat.lines().find_map(|l| l.strip_prefix("usage_usec "))?.trim().parse().ok()?;
            return Some(Duration::from_micros(usec));
        }
        let ns = std::fs::read_to_string(self.cpu.join("cpuacct.usage")).ok()?.trim().parse().ok()?;
        Some(Duration::from_nanos(ns))
    }

    /// Whether the kernel's OOM killer stopped something in the cgroup.
    pub fn oom_killed(&self) -> bool {
        let (file, key) = if self.v2 { ("memory.events", "oom_kill ") } else { ("memory.oom_control", "oom_kill ") };
        let text = std::fs::read_to_string(self.memory.join(file)).unwrap_or_default();
        let kills: u64 =
            text.lines().find_map(|l| l.strip_prefix(key)).and_then(|n| n.trim().parse().ok()).unwrap_or(0);
        // v1 kernels without the count: any failure to charge at the limit.
        let failed = !self.v2
            && std::fs::read_to_string(self.memory.join("memory.failcnt"))
                .ok()
                .and_then(|n| n.trim().parse::<u64>().ok())
                .is_some_and(|n| n > 0)
            && !text.contains("oom_kill ");
        kills > 0 || failed
    }

    /// Kill everything in the cgroup once, without waiting (the watch on
    /// the runtime's threads; dropping the cgroup kills until it is empty).
    pub fn kill_now(&self) {
        kill_round(self.v2, &self.dirs[0]);
    }
}

/// Kill what is in the cgroup `dir` once (v2: `cgroup.kill`, which takes
/// every process at once); whether anything was left to kill.
fn kill_round(v2: bool, dir: &Path) -> bool {
    if v2 && std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return false;
    }
    let pids: Vec<i32> = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    for &pid in &pids {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    !pids.is_empty()
}

/// Empty the cgroup (a process may fork while it is being killed; each
/// round kills what it finds) and remove its directories.
fn clean_up(v2: bool, dirs: Vec<PathBuf>) {
    let Some(first) = dirs.first() else { return };
    for _ in 0..100 {
        if !kill_round(v2, first) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    for dir in &dirs {
        // A killed process leaves its cgroup when the kernel reaps it.
        for _ in 0..200 {
            match std::fs::remove_dir(dir) {
                Err(e) if e.raw_os_error() == Some(nix::libc::EBUSY) => std::thread::sleep(Duration::from_millis(5)),
                _ => break,
            }
        }
    }
}

impl Drop for CommandCgroup {
    /// Emptied and removed off the runtime's threads when there is a
    /// runtime (a run dropped mid-command included), here otherwise.
    fn drop(&mut self) {
        self.procs.clear();
        let (v2, dirs) = (self.v2, std::mem::take(&mut self.dirs));
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(move || clean_up(v2, dirs))),
            Err(_) => clean_up(v2, dirs),
        }
    }
}

/// Join the cgroups behind `fds` (between fork and exec: only `write`).
pub fn join_now(fds: &[RawFd]) -> std::io::Result<()> {
    for &fd in fds {
        // SAFETY: write(2) on a descriptor the parent opened and keeps open
        // until the child has executed; async-signal-safe.
        let n = unsafe { nix::libc::write(fd, b"0".as_ptr().cast(), 1) };
        if n != 1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_and_memberships_are_read_as_the_kernel_writes_them() {
        let info = "30 25 0:27 / /sys/fs/cgroup/memory rw,nosuid shared:9 - cgroup cgroup rw,memory\n\
                    31 25 0:28 / /sys/fs/cgroup/unified rw shared:10 - cgroup2 cgroup2 rw,nsdelegate\n\
                    32 25 0:29 / /proc rw - proc proc rw\n";
        let found = cgroup_mounts(info);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0], ("cgroup".into(), "rw,memory".into(), PathBuf::from("/sys/fs/cgroup/memory")));
        assert_eq!(found[1].2, PathBuf::from("/sys/fs/cgroup/unified"));
    }

    #[test]
    fn a_command_cgroup_is_made_limited_and_removed_or_the_reason_there_is_none_is_given() {
        let cgroups = match available() {
            Ok(c) => c,
            Err(why) => return assert!(why.to_string().contains("cgroup"), "{why}"),
        };
        let cg = CommandCgroup::create(cgroups, Some(64 << 20), Some(50)).expect("a command cgroup");
        let dirs = cg.dirs.clone();
        assert!(dirs.iter().all(|d| d.is_dir()));
        assert!(cg.cpu_used().is_some() && !cg.oom_killed());
        let limit = if cg.v2 { "memory.max" } else { "memory.limit_in_bytes" };
        assert_eq!(std::fs::read_to_string(dirs[0].join(limit)).unwrap().trim(), (64u64 << 20).to_string());
        assert!(
            std::fs::read_to_string(dirs[0].join("cgroup.procs")).unwrap().trim().is_empty(),
            "a new cgroup is empty"
        );
        drop(cg);
        assert!(dirs.iter().all(|d| !d.exists()), "removed");
        // One a daemon that is gone left behind is swept; a live one's stays.
        let parent = dirs[0].parent().unwrap();
        let (gone, live) = (parent.join("cmd-999999999-0"), parent.join(format!("cmd-{}-999", std::process::id())));
        std::fs::create_dir(&gone).unwrap();
        std::fs::create_dir(&live).unwrap();
        sweep(cgroups);
        assert!(!gone.exists() && live.exists());
        std::fs::remove_dir(&live).unwrap();
    }
}
