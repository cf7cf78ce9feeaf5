//! How a child is started: the one place in the daemon that builds a
//! `Command` and spawns it. Every child leads its own process group (so the
//! whole group can be killed) and is killed when its handle is dropped.
//! What differs between policy scripts, the model's commands and the
//! sandbox probe is described by a [`Launch`], not by separate spawn code.

use super::ProcError;
use crate::environment::Env;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::Stdio;
use tokio::process::Command;

/// Everything about one child before it starts.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The file executed (a pinned script's resolved path, a whitelisted
    /// program's absolute path, or swivald itself as the helper).
    pub program: PathBuf,
    /// argv as the child sees it: argv\[0\] first, then the arguments.
    /// Under [`Launch::through`], argv\[0\] is what the helper passes on.
    pub argv: Vec<String>,
    /// Working directory; `None` keeps the daemon's.
    pub cwd: Option<PathBuf>,
    /// Its environment.
    pub env: Env,
    /// How stdin, stdout and stderr are wired.
    pub io: Io,
    /// Run `program` through this helper instead of directly.
    pub through: Option<Through>,
    /// Resource limits set in the child before it executes (the model's
    /// commands).
    pub limits: Option<super::limits::Rlimits>,
}

/// How a child's stdio is wired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// stdin, stdout and stderr each a pipe (policy scripts).
    Pipes,
    /// stdin from /dev/null; stdout and stderr each a pipe (the probe).
    NoInput,
    /// stdin from /dev/null; stdout and stderr into one pipe, so the
    /// output keeps the order it was written in (the model's commands).
    Merged,
}

/// A confining helper the program runs through: the child is
/// `helper <args>... -- argv...`, and the helper execs `argv` in the
/// confined process (see `sandbox/linux.rs`).
#[derive(Debug, Clone)]
pub struct Through {
    /// The helper executable (swivald itself).
    pub helper: PathBuf,
    /// Its arguments before `--` (the flag and the serialized plan).
    pub args: Vec<String>,
}

/// A started child and the pipes it was given.
#[derive(Debug)]
pub struct Started {
    /// The process (killed when dropped).
    pub child: tokio::process::Child,
    /// Its process group (= its pid).
    pub pgid: Option<i32>,
    /// The read end of the merged output pipe ([`Io::Merged`] only).
    pub merged: Option<tokio::net::unix::pipe::Receiver>,
}

impl Drop for Started {
    /// Nothing a child started outlives its handle.
    fn drop(&mut self) {
        kill_group(self.pgid);
    }
}

/// Why the merged output pipe could not be set up; the text is what the
/// model's commands report.
fn pipe_error(what: &str, e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("{what}: {e}"))
}

/// Start `launch`. `name` is used in errors.
pub fn start(launch: &Launch, name: &str) -> Result<Started, ProcError> {
    let io_error = |source| ProcError::Io { program: name.to_owned(), source };
    let mut cmd = match &launch.through {
        Some(through) => {
            let mut cmd = Command::new(&through.helper);
            cmd.args(&through.args).arg("--").args(&launch.argv);
            cmd
        }
        None => {
            let mut cmd = Command::new(&launch.program);
            if let Some((argv0, args)) = launch.argv.split_first() {
                cmd.as_std_mut().arg0(argv0);
                cmd.args(args);
            }
            cmd
        }
    };
    match &launch.env {
        Env::Inherit(vars) => cmd.envs(vars.iter().map(|(k, v)| (k, v))),
        Env::Exact(vars) => cmd.env_clear().envs(vars.iter().map(|(k, v)| (k, v))),
    };
    if let Some(cwd) = &launch.cwd {
        cmd.current_dir(cwd);
    }
    let mut merged = None;
    match launch.io {
        Io::Pipes => cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()),
        Io::NoInput => cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()),
        Io::Merged => {
            let (reader, writer) =
                output_pipe().map_err(|e| io_error(pipe_error("cannot create a pipe for the command's output", e)))?;
            let writer2 = writer
                .try_clone()
                .map_err(|e| io_error(pipe_error("cannot create a pipe for the command's output", e)))?;
            let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(reader)
                .map_err(|e| io_error(pipe_error("cannot read the command's output", e)))?;
            merged = Some(reader);
            cmd.stdin(Stdio::null()).stdout(Stdio::from(writer)).stderr(Stdio::from(writer2))
        }
    };
    cmd.process_group(0).kill_on_drop(true);
    if let Some(limits) = launch.limits {
        // SAFETY: the closure only calls setrlimit, which is
        // async-signal-safe, between fork and exec.
        unsafe { cmd.as_std_mut().pre_exec(move || limits.apply()) };
    }
    let spawned = cmd.spawn();
    // The Command holds our copies of the merged pipe's write end; until
    // they are closed the reader never sees EOF.
    drop(cmd);
    let child = spawned.map_err(|source| ProcError::Spawn { program: name.to_owned(), source })?;
    let pgid = child.id().map(|p| p as i32);
    Ok(Started { child, pgid, merged })
}

/// A pipe whose ends are close-on-exec from birth, so a child spawned
/// concurrently cannot inherit them and hold our reader open.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn output_pipe() -> nix::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
}

/// A pipe, close-on-exec right after creation (no `pipe2` here).
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
fn output_pipe() -> nix::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    let (r, w) = nix::unistd::pipe()?;
    fcntl(&r, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    fcntl(&w, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    Ok((r, w))
}

/// SIGKILL a whole process group (ignoring "no such group").
pub fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid.filter(|p| *p > 1) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
    }
}
