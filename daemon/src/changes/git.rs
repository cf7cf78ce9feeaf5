//! The `git` program, as the daemon runs it for itself: located once at
//! start, run through `procs/` with an exact environment (no user or
//! system config, no hooks, no prompts, fixed identity), bounded in time
//! and output. The snapshot store and worktrees are built on it.

use crate::procs::{self, Env, Io, Launch, Output};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Longest a git call may take before it is killed.
const TIMEOUT: Duration = Duration::from_secs(120);

/// Most bytes a git call may write to stdout (blob contents are read in
/// batches under the snapshot size limit).
pub const MAX_OUTPUT: usize = 512 * 1024 * 1024;

/// Why a git call failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// No `git` program was found when the daemon started.
    #[error("the git program was not found on the daemon's PATH; install git to record and undo changes")]
    Missing,
    /// It could not run, timed out or flooded.
    #[error("git {args}: {source}")]
    Proc { args: String, source: procs::ProcError },
    /// It exited with an error.
    #[error("git {args} failed ({status}): {stderr}")]
    Failed { args: String, status: String, stderr: String },
}

/// The located program and the environment every call starts from.
#[derive(Debug, Clone)]
pub struct Git {
    /// The executable.
    program: Option<PathBuf>,
    /// PATH and HOME, kept for git's helpers.
    base: Vec<(String, OsString)>,
}

/// Where one call runs: a repository (or the shadow store) and its work tree.
#[derive(Debug, Clone, Default)]
pub struct Repo {
    /// `GIT_DIR`, when not found from the working directory.
    pub git_dir: Option<PathBuf>,
    /// `GIT_WORK_TREE`.
    pub work_tree: Option<PathBuf>,
    /// `GIT_INDEX_FILE`.
    pub index: Option<PathBuf>,
    /// The working directory.
    pub cwd: PathBuf,
    /// Read the user's own git config (worktrees in their repository);
    /// otherwise none at all (the snapshot store).
    pub user_config: bool,
}

impl Git {
    /// Find `git` on the daemon's PATH.
    pub fn locate() -> Git {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut base = vec![("PATH".to_owned(), path.clone())];
        if let Some(home) = std::env::var_os("HOME") {
            base.push(("HOME".to_owned(), home));
        }
        Git { program: procs::locate("git", &path), base }
    }

    /// Whether git was found.
    pub fn available(&self) -> bool {
        self.program.is_some()
    }

    /// Run `git args` in `repo` with `input` on stdin; its stdout, or an
    /// error with its stderr when it exits non-zero.
    pub async fn run(&self, repo: &Repo, args: &[&str], input: &[u8]) -> Result<Vec<u8>, GitError> {
        let out = self.output(repo, args, input).await?;
        match out.code {
            Some(0) => Ok(out.stdout),
            _ => Err(failed(args, &out)),
        }
    }

    /// Run `git args` and return its whole output, whatever its exit code.
    pub async fn output(&self, repo: &Repo, args: &[&str], input: &[u8]) -> Result<Output, GitError> {
        let program = self.program.clone().ok_or(GitError::Missing)?;
        let mut argv = vec!["git".to_owned()];
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        let launch = Launch {
            program,
            argv,
            cwd: Some(repo.cwd.clone()),
            env: Env::Exact(self.env(repo)),
            io: Io::Pipes,
            through: None,
            limits: None,
        };
        procs::output_with_input(&launch, input, TIMEOUT, MAX_OUTPUT)
            .await
            .map_err(|source| GitError::Proc { args: shown(args), source })
    }

    /// The exact environment of a call in `repo`.
    fn env(&self, repo: &Repo) -> Vec<(String, OsString)> {
        let mut env = self.base.clone();
        let mut set = |k: &str, v: OsString| env.push((k.to_owned(), v));
        set("LC_ALL", "C".into());
        set("GIT_TERMINAL_PROMPT", "0".into());
        set("GIT_NO_REPLACE_OBJECTS", "1".into());
        set("GIT_OPTIONAL_LOCKS", "0".into());
        for (k, v) in [("NAME", "swivald"), ("EMAIL", "swivald@localhost"), ("DATE", "2000-01-01T00:00:00Z")] {
            set(&format!("GIT_AUTHOR_{k}"), v.into());
            set(&format!("GIT_COMMITTER_{k}"), v.into());
        }
        if !repo.user_config {
            // The snapshot store's paths are paths, never patterns.
            set("GIT_LITERAL_PATHSPECS", "1".into());
            set("GIT_CONFIG_NOSYSTEM", "1".into());
            set("GIT_CONFIG_GLOBAL", "/dev/null".into());
        }
        if let Some(d) = &repo.git_dir {
            set("GIT_DIR", d.into());
        }
        if let Some(w) = &repo.work_tree {
            set("GIT_WORK_TREE", w.into());
        }
        if let Some(i) = &repo.index {
            set("GIT_INDEX_FILE", i.into());
        }
        env
    }
}

/// The error for a call that exited non-zero.
fn failed(args: &[&str], out: &Output) -> GitError {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stderr = stderr.trim().lines().take(4).collect::<Vec<_>>().join("; ");
    let status = match (out.code, out.signal) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "no status".to_owned(),
    };
    GitError::Failed { args: shown(args), status, stderr }
}

/// The arguments for a message (the first few).
fn shown(args: &[&str]) -> String {
    let mut s = args.iter().take(4).copied().collect::<Vec<_>>().join(" ");
    if args.len() > 4 {
        s.push_str(" …");
    }
    s
}

/// Split NUL-terminated records.
pub fn records(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.split(|b| *b == 0).filter(|r| !r.is_empty())
}

/// A path as git prints it with `-z` (bytes, not quoted).
pub fn path_of(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

/// `path` as bytes, for git's stdin.
pub fn bytes_of(path: &std::path::Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes()
}
