//! What one of the model's commands may consume (`command_max_processes`,
//! `command_max_memory_mb`, `command_max_cpu_s`): resource limits set in
//! the child between fork and exec, so they hold for the command and
//! everything it starts, with or without the kernel sandbox. No cgroup is
//! needed: a fork bomb meets `RLIMIT_NPROC`, a runaway allocation
//! `RLIMIT_DATA`, a spinning process `RLIMIT_CPU` (SIGXCPU, then SIGKILL
//! five seconds later).

use std::os::unix::fs::MetadataExt;

/// A command's limits; `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// Processes and threads beyond those the user runs when it starts.
    pub processes: Option<u64>,
    /// Bytes of data (heap and private writable mappings) per process.
    pub data_bytes: Option<u64>,
    /// Seconds of CPU time per process.
    pub cpu_s: Option<u64>,
}

/// The resource limits to set for one command, computed when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimits {
    /// `RLIMIT_NPROC`: the user's tasks now plus the allowance.
    nproc: Option<u64>,
    /// `RLIMIT_DATA`.
    data: Option<u64>,
    /// `RLIMIT_CPU` (soft; the hard limit is five seconds more).
    cpu: Option<u64>,
    /// The `cgroup.procs` descriptors the child writes to, to join the
    /// command's cgroup (`cgroup.rs`); the first `joins` count.
    join: [std::os::fd::RawFd; 3],
    /// How many of `join` are set.
    joins: usize,
}

/// Tasks (processes and threads) of this user, counted at most once a
/// second: a walk of /proc costs about a millisecond, and a command
/// starting a second later than the count is still bounded by it plus
/// the allowance.
pub fn user_tasks() -> u64 {
    static LAST: std::sync::Mutex<Option<(std::time::Instant, u64)>> = std::sync::Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
    match *last {
        Some((at, n)) if at.elapsed() < std::time::Duration::from_secs(1) => n,
        _ => {
            let n = count_user_tasks();
            *last = Some((std::time::Instant::now(), n));
            n
        }
    }
}

/// Tasks (processes and threads) of this user now: what `RLIMIT_NPROC`
/// counts.
fn count_user_tasks() -> u64 {
    let uid = nix::unistd::getuid().as_raw();
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .map(|e| {
            // Field 20 of stat, after the command name in parentheses.
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            stat.rsplit(')').next().and_then(|s| s.split_whitespace().nth(17)).and_then(|n| n.parse().ok()).unwrap_or(1)
        })
        .sum()
}

impl Limits {
    /// The limits for a command starting now.
    pub fn now(&self) -> Rlimits {
        Rlimits {
            nproc: self.processes.map(|n| user_tasks().saturating_add(n)),
            data: self.data_bytes,
            cpu: self.cpu_s,
            join: [-1; 3],
            joins: 0,
        }
    }
}

impl Rlimits {
    /// These limits for a command in the cgroup behind `fds` (its
    /// `cgroup.procs`, at most three): the cgroup counts its memory, so no
    /// per-process data limit is set (it would count thread stacks never
    /// touched).
    pub fn in_cgroup(self, fds: &[std::os::fd::RawFd]) -> Rlimits {
        let mut join = [-1; 3];
        let joins = fds.len().min(3);
        join[..joins].copy_from_slice(&fds[..joins]);
        Rlimits { data: None, join, joins, ..self }
    }

    /// Set them on the calling process. Only async-signal-safe calls: this
    /// runs in the child between fork and exec.
    pub fn apply(&self) -> std::io::Result<()> {
        let set = |resource, soft: u64, hard: u64| {
            let lim = libc::rlimit { rlim_cur: soft as libc::rlim_t, rlim_max: hard as libc::rlim_t };
            // SAFETY: setrlimit with a valid pointer to a local struct.
            if unsafe { libc::setrlimit(resource, &lim) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        };
        if let Some(n) = self.nproc {
            set(libc::RLIMIT_NPROC, n, n)?;
        }
        if let Some(b) = self.data {
            set(libc::RLIMIT_DATA, b, b)?;
        }
        if let Some(s) = self.cpu {
            set(libc::RLIMIT_CPU, s, s.saturating_add(5))?;
        }
        super::cgroup::join_now(&self.join[..self.joins])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_allowance_is_counted_from_the_users_tasks_now() {
        let now = user_tasks();
        assert!(now >= 1, "this test's own process counts");
        let r = Limits { processes: Some(10), data_bytes: Some(1 << 30), cpu_s: Some(60) }.now();
        assert!(r.nproc.unwrap() >= now + 10 - 5, "{r:?} against {now}");
        assert_eq!((r.data, r.cpu), (Some(1 << 30), Some(60)));
        assert_eq!(Limits::default().now(), Rlimits { nproc: None, data: None, cpu: None, join: [-1; 3], joins: 0 });
        let joined = r.in_cgroup(&[7, 8]);
        assert_eq!((joined.data, joined.cpu, &joined.join[..joined.joins]), (None, Some(60), &[7, 8][..]));
    }
}
