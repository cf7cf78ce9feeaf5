//! Starting an MCP server that speaks on stdio: a long-lived child in its
//! own process group, run with its caller's environment (MCP servers are
//! user-configured programs, like hooks) and its pinned files checked
//! first. The server's stdin and stdout are the MCP transport; its stderr
//! is read and dropped so a chatty server never blocks on a full pipe.
//!
//! A server lives as long as its [`McpChild`]: dropping it kills the whole
//! group. So that none outlives a daemon that was killed outright, every
//! server has a pid file in the daemon's state directory (`mcp/<pid>`,
//! holding the process's start time) while it runs; the next daemon start
//! kills each group it names whose leader is still that same process
//! ([`reap_orphans`]).
//!
//! A server does not hold a `max_children` slot: it is one process per
//! configured server (and base dir), bounded by the configs the user
//! trusted, idle most of the time; slots bound the work started per call.

use super::launch::{self, Io, Launch, Started, Through};
use super::Env;
use super::{Pinned, ProcError};
use std::path::{Path, PathBuf};

/// What to start.
#[derive(Debug, Clone)]
pub struct McpLaunch<'a> {
    /// argv: the located program first (as pinned), then its arguments.
    pub argv: &'a [String],
    /// Its working directory.
    pub cwd: &'a Path,
    /// Its environment: the caller's with the server's `env` over it, or
    /// exactly the confined one.
    pub env: Env,
    /// Run it through the sandbox helper (`sandbox_mcp`).
    pub through: Option<Through>,
    /// The files it runs, checked before the spawn.
    pub pins: &'a [Pinned],
    /// Where its pid file goes.
    pub pid_dir: &'a Path,
}

/// A running MCP server process (its group killed and its pid file
/// removed when dropped).
#[derive(Debug)]
pub struct McpChild {
    /// The process.
    started: Started,
    /// Its pid file, if one could be written.
    pid_file: Option<PathBuf>,
}

impl McpChild {
    /// Its pid.
    pub fn pid(&self) -> Option<u32> {
        self.started.child.id()
    }

    /// Whether it has exited.
    pub fn exited(&mut self) -> bool {
        !matches!(self.started.child.try_wait(), Ok(None))
    }

    /// How it ended (`exit status 1`, `signal 9 (SIGKILL)`), once it has.
    pub fn exit_status(&mut self) -> Option<String> {
        match self.started.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }
}

impl Drop for McpChild {
    fn drop(&mut self) {
        // `Started` kills the group when it drops, right after this.
        if let Some(f) = &self.pid_file {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Start a stdio server: the child and its stdout (to read) and stdin
/// (to write).
pub fn start(
    l: McpLaunch<'_>,
    name: &str,
) -> Result<(McpChild, tokio::process::ChildStdout, tokio::process::ChildStdin), ProcError> {
    super::pin::verify_all(l.pins)?;
    let program = l.argv.first().cloned().unwrap_or_default();
    let launch = Launch {
        program: super::pin::executable(&program, l.pins).to_path_buf(),
        argv: l.argv.to_vec(),
        cwd: Some(l.cwd.to_owned()),
        env: l.env,
        io: Io::Pipes,
        through: l.through,
        limits: None,
    };
    let mut started = launch::start(&launch, name)?;
    let stdout = started.child.stdout.take().expect("piped stdout");
    let stdin = started.child.stdin.take().expect("piped stdin");
    if let Some(mut stderr) = started.child.stderr.take() {
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
        });
    }
    let pid_file = started.pgid.and_then(|pid| write_pid_file(l.pid_dir, pid));
    Ok((McpChild { started, pid_file }, stdout, stdin))
}

/// The start time of process `pid` (field 22 of `/proc/<pid>/stat`), which
/// tells a process from a later one given the same pid.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; fields after it don't.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(19)?.parse().ok()
}

fn write_pid_file(dir: &Path, pid: i32) -> Option<PathBuf> {
    let started = start_time(pid)?;
    std::fs::create_dir_all(dir).ok()?;
    let path = dir.join(pid.to_string());
    std::fs::write(&path, started.to_string()).ok()?;
    Some(path)
}

/// Kill the process group of every MCP server a previous daemon left
/// running (its pid file names a process that is still the one started),
/// and remove the pid files; returns how many groups were killed.
pub fn reap_orphans(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut killed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let pid = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse::<i32>().ok());
        let recorded = std::fs::read_to_string(&path).ok().and_then(|t| t.trim().parse::<u64>().ok());
        if let (Some(pid), Some(recorded)) = (pid, recorded) {
            if pid > 1 && start_time(pid) == Some(recorded) {
                super::kill_group(Some(pid));
                killed += 1;
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_file_of_a_process_that_is_gone_or_another_is_removed_without_a_kill() {
        let dir = tempfile::tempdir().unwrap();
        // This process, with a start time that is not its own: a reused pid.
        let me = std::process::id() as i32;
        std::fs::write(dir.path().join(me.to_string()), "1").unwrap();
        std::fs::write(dir.path().join("junk"), "x").unwrap();
        assert_eq!(reap_orphans(dir.path()), 0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_process_group_a_killed_daemon_left_is_killed_at_the_next_start() {
        use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
        let dir = tempfile::tempdir().unwrap();
        let mut orphan = std::process::Command::new("sleep").arg("300").process_group(0).spawn().unwrap();
        let pid = orphan.id() as i32;
        assert!(write_pid_file(dir.path(), pid).is_some());
        assert_eq!(reap_orphans(dir.path()), 1);
        assert_eq!(orphan.wait().unwrap().signal(), Some(libc::SIGKILL));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn start_time_reads_this_process() {
        assert!(start_time(std::process::id() as i32).is_some());
    }
}
