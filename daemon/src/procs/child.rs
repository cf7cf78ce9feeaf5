//! One child process: spawned in its own process group, fed its stdin while
//! stdout and stderr are read (so a large payload cannot deadlock on a full
//! pipe), stdout bounded, and the whole group killed on timeout, flood or
//! cancellation.

use super::launch::{self, Io, Launch, Started};
use super::ProcError;
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// What a finished child produced.
#[derive(Debug)]
pub struct Output {
    /// Exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Everything it wrote to stdout (at most the limit).
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr (at most the limit).
    pub stderr: Vec<u8>,
}

/// One child to run to completion.
#[derive(Debug)]
pub struct OneShot<'a> {
    /// Program and arguments (never through a shell).
    pub argv: &'a [String],
    /// Written to stdin, which is then closed.
    pub stdin: &'a [u8],
    /// Working directory.
    pub cwd: &'a Path,
    /// The environment it runs in.
    pub base: &'a super::CallerEnv,
    /// Variables set over `base`.
    pub env: &'a [(String, String)],
    /// The files it runs, as pinned; checked right before the spawn.
    pub pins: &'a [super::Pinned],
    /// Kill the group after this long.
    pub timeout: Duration,
    /// Kill the group if stdout grows past this many bytes.
    pub max_stdout: usize,
}

/// A started child, waiting for its input.
#[derive(Debug)]
pub struct Spawned {
    /// The process (its whole group is killed when this is dropped).
    started: Started,
    /// argv[0], for messages.
    program: String,
}

impl Spawned {
    /// Its process group.
    pub fn pgid(&self) -> Option<i32> {
        self.started.pgid
    }

    /// Take the pipes (for a long-lived worker) and the pid.
    pub fn take_pipes(
        &mut self,
    ) -> (tokio::process::ChildStdin, tokio::process::ChildStdout, tokio::process::ChildStderr, u32) {
        let c = &mut self.started.child;
        let pid = c.id().unwrap_or_default();
        (
            c.stdin.take().expect("piped stdin"),
            c.stdout.take().expect("piped stdout"),
            c.stderr.take().expect("piped stderr"),
            pid,
        )
    }

    /// Whether it already exited (a prespawned child that died while idle).
    pub fn exited(&mut self) -> bool {
        !matches!(self.started.child.try_wait(), Ok(None))
    }
}

/// Start a script in its own process group with piped stdio, after
/// checking its pins.
pub fn spawn(script: &super::Script) -> Result<Spawned, ProcError> {
    spawn_argv(&script.argv, &script.cwd, &script.base, &script.env, &script.pins)
}

fn spawn_argv(
    argv: &[String],
    cwd: &Path,
    base: &super::CallerEnv,
    env: &[(String, String)],
    pins: &[super::Pinned],
) -> Result<Spawned, ProcError> {
    super::pin::verify_all(pins)?;
    let program = argv.first().cloned().unwrap_or_default();
    let launch = Launch {
        program: super::pin::executable(&program, pins).to_path_buf(),
        argv: argv.to_vec(),
        cwd: Some(cwd.to_owned()),
        env: base.script_env(env),
        io: Io::Pipes,
        through: None,
        limits: None,
    };
    let started = launch::start(&launch, &program)?;
    Ok(Spawned { started, program })
}

/// Feed a started child its input and collect its output, killing its
/// whole group on timeout, flood or cancellation (and in any case once
/// the leader has exited, so nothing it started outlives the call).
pub async fn drive(
    mut spawned: Spawned,
    input: &[u8],
    timeout: Duration,
    max_stdout: usize,
    cancel: &CancellationToken,
) -> Result<Output, ProcError> {
    let program = spawned.program.clone();
    let child = &mut spawned.started.child;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let write = async move {
        // A child that exits without reading its input is not an error.
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(input).await;
        }
    };
    let limit = max_stdout;
    let flood = || ProcError::Flood { program: program.clone(), limit };
    let io = |source| ProcError::Io { program: program.clone(), source };
    // try_join stops at the first failure, so a flood ends the wait at once.
    let work = async {
        tokio::try_join!(
            async {
                write.await;
                Ok(())
            },
            async { read_bounded(stdout, limit).await.map_err(|e| e.into_proc(flood, io)) },
            async { read_bounded(stderr, limit).await.map_err(|e| e.into_proc(flood, io)) },
            async { child.wait().await.map_err(io) },
        )
    };
    let result = tokio::select! {
        r = work => r,
        _ = tokio::time::sleep(timeout) => Err(ProcError::Timeout { program: program.clone(), secs: timeout.as_secs_f64() }),
        _ = cancel.cancelled() => Err(ProcError::Cancelled { program: program.clone() }),
    };
    let ((), stdout, stderr, status) = result?;
    Ok(Output { code: status.code(), signal: std::os::unix::process::ExitStatusExt::signal(&status), stdout, stderr })
}

/// Run a child to completion (or kill it) and collect its output, outside
/// the runner's slots (the `command` provider, until it is given the
/// runner).
pub async fn run(job: OneShot<'_>, cancel: &CancellationToken) -> Result<Output, ProcError> {
    let spawned = spawn_argv(job.argv, job.cwd, job.base, job.env, job.pins)?;
    drive(spawned, job.stdin, job.timeout, job.max_stdout, cancel).await
}

/// Start `launch` (which must not take input) and collect its stdout and
/// stderr, each bounded by `max_output`, killing its group on timeout.
/// For daemon-level helpers outside any session (the sandbox probe).
pub async fn output(launch: &Launch, timeout: Duration, max_output: usize) -> Result<Output, ProcError> {
    debug_assert_eq!(launch.io, Io::NoInput);
    let program = launch.program.display().to_string();
    let started = launch::start(launch, &program)?;
    drive(Spawned { started, program }, &[], timeout, max_output, &CancellationToken::new()).await
}

/// Start `launch` (with piped stdin), write `input` to it and collect its
/// stdout and stderr, each bounded by `max_output`, killing its group on
/// timeout. For daemon-level helpers outside any session (git for the
/// snapshot store).
pub async fn output_with_input(
    launch: &Launch,
    input: &[u8],
    timeout: Duration,
    max_output: usize,
) -> Result<Output, ProcError> {
    debug_assert_eq!(launch.io, Io::Pipes);
    let program = launch.program.display().to_string();
    let started = launch::start(launch, &program)?;
    drive(Spawned { started, program }, input, timeout, max_output, &CancellationToken::new()).await
}

/// Why reading a pipe stopped early.
enum ReadError {
    /// More than the limit arrived.
    Flood,
    /// The pipe failed.
    Io(std::io::Error),
}

impl ReadError {
    fn into_proc(self, flood: impl Fn() -> ProcError, io: impl Fn(std::io::Error) -> ProcError) -> ProcError {
        match self {
            ReadError::Flood => flood(),
            ReadError::Io(e) => io(e),
        }
    }
}

/// Read to EOF, failing as soon as more than `limit` bytes arrive.
async fn read_bounded<R: AsyncRead + Unpin>(mut r: R, limit: usize) -> Result<Vec<u8>, ReadError> {
    let mut buf = Vec::new();
    // On the heap: an array here would make every future that runs a
    // process (the command provider, filters, hooks, the agent loop
    // around them) 16 KiB larger per stream, copied each time it moves.
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = r.read(&mut chunk).await.map_err(ReadError::Io)?;
        if n == 0 {
            return Ok(buf);
        }
        if buf.len() + n > limit {
            return Err(ReadError::Flood);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}
