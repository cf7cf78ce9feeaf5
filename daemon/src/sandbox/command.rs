//! `run_command`: run one argv (never through a shell) with cwd = base
//! dir, stdin from /dev/null, stdout and stderr merged into one pipe, in
//! its own process group, through the helper when the session is
//! sandboxed. This file decides what runs and how (policy check, the
//! helper's plan, environment, a private TMPDIR) and formats the result;
//! the daemon's process runner starts it in one of its `max_children`
//! slots and kills the whole group when the command ends, times out or is
//! cancelled, so nothing it started outlives the call (`procs/merged.rs`).
//! The result is Swival's: `Exit code: N` or `error: command timed out
//! after Ns` first, then the output; more than 10 KB goes to a spill file.

use super::policy::{self};
use super::spill;
use super::{CommandEnv, ExecSpec, EXEC_FLAG};
use crate::procs::cgroup::{self, CommandCgroup};
use crate::procs::{Capture, Ending, Env, Io, Launch, Limits, ProcError, Through};
use crate::toolcall::ToolOutcome;
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Command output shown inline at most; more is spilled.
pub const INLINE_LIMIT: usize = 10 * 1024;
/// Command output kept at most (the rest is drained and dropped).
pub const CAPTURE_LIMIT: usize = 1024 * 1024;

/// Variables every command gets when set: what programs need to find
/// themselves, their user and their locale, and nothing that could be a
/// secret. `LC_*` is matched by prefix.
pub const ENV_ALLOWED: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR"];

/// The environment commands run with: the allow-list [`ENV_ALLOWED`] (and
/// `LC_*`) plus the names in `extra` (`command_env`), taken from `vars`;
/// never the rest of the daemon's environment.
pub fn allowed_environment(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    extra: &[String],
) -> Vec<(String, OsString)> {
    let mut out: Vec<(String, OsString)> = vars
        .into_iter()
        .filter_map(|(k, v)| k.into_string().ok().map(|k| (k, v)))
        .filter(|(k, _)| ENV_ALLOWED.contains(&k.as_str()) || k.starts_with("LC_") || extra.contains(k))
        .collect();
    out.sort();
    out
}

/// The `run_command` tool: repair and check the model's arguments, run,
/// and add Swival's `(auto-corrected: …)` note when the argument was
/// repaired.
pub async fn run_command_tool(env: &CommandEnv, args: &Value, cancel: &CancellationToken) -> ToolOutcome {
    let call = match policy::parse_call(args) {
        Ok(c) => c,
        Err(e) => return ToolOutcome::failed(format!("error: {e}")),
    };
    let mut result = run_command(env, &call.argv, call.timeout, cancel).await;
    if let Some(note) = call.repair_note {
        result.append_note(&format!("(auto-corrected: {note})"));
    }
    result
}

/// Run `argv` under `env` and return the tool result. A command that ran
/// and exited succeeded whatever its status (Swival's contract: the model
/// reads `Exit code: N`); one that could not run, timed out or was
/// cancelled failed.
pub async fn run_command(
    env: &CommandEnv,
    argv: &[String],
    timeout: Duration,
    cancel: &CancellationToken,
) -> ToolOutcome {
    let ran = match run_argv(env, argv, timeout, cancel).await {
        Ok(ran) => ran,
        Err(why) => return ToolOutcome::failed(format!("error: {why}")),
    };
    let mut result = format_result(&env.base_dir, ran.ending, timeout, ran.capture);
    if let Some(why) = ran.counted.or_else(|| limit_reached(&env.limits, ran.ending, &result.text)) {
        result.append_line(&why);
    }
    result
}

/// Why a command could not run, in words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CouldNotRun(pub String);

/// How a command run under a session's sandbox ended.
#[derive(Debug)]
pub struct Ran {
    /// How it ended.
    pub ending: Ending,
    /// Its output, stdout and stderr merged.
    pub capture: Capture,
    /// The counted limit it reached (CPU time, memory), in words.
    pub counted: Option<String>,
}

/// Run `argv` as `env` runs commands (the policy's program, the sandbox,
/// the limits); why it could not run, in words.
pub async fn run_argv(
    env: &CommandEnv,
    argv: &[String],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Ran, CouldNotRun> {
    let program = policy::check(argv, &env.policy, &env.base_dir).map_err(|e| CouldNotRun(e.to_string()))?;
    if !env.base_dir.is_dir() {
        let why = format!("base directory does not exist or is not a directory: {}", env.base_dir.display());
        return Err(CouldNotRun(why));
    }
    let tmp = match &env.plan {
        Some(_) => Some(
            RunTempDir::create()
                .map_err(|e| CouldNotRun(format!("cannot create the command's temp directory: {e}")))?,
        ),
        None => None,
    };
    let cgroup =
        command_cgroup(&env.limits).map_err(|e| CouldNotRun(format!("cannot make the command's cgroup: {e}")))?;
    let launch = launch(env, &program, argv, tmp.as_ref(), cgroup.as_ref())
        .map_err(|e| CouldNotRun(format!("cannot prepare the command: {e}")))?;
    let run = env.runner.run_merged(&launch, timeout, CAPTURE_LIMIT, cancel);
    let (outcome, cpu_over) = watch_cpu(run, cgroup.as_ref(), env.limits.cpu_s).await;
    let oom = cgroup.as_ref().is_some_and(CommandCgroup::oom_killed);
    // Emptied and removed off the runtime's threads (its `Drop`).
    drop(cgroup);
    let (ending, capture) = match outcome {
        Ok(m) => (m.ending, m.output),
        // Cancelled while waiting for a slot: nothing ran.
        Err(ProcError::Cancelled { .. }) => (Ending::Cancelled, Capture::new(CAPTURE_LIMIT)),
        Err(ProcError::Spawn { source, .. }) => {
            return Err(CouldNotRun(format!("failed to start command {}: {source}", program.display())))
        }
        Err(ProcError::Io { source, .. }) => return Err(CouldNotRun(source.to_string())),
        Err(e) => return Err(CouldNotRun(e.to_string())),
    };
    drop(tmp);
    Ok(Ran { ending, capture, counted: counted_limit(&env.limits, cpu_over, oom) })
}

/// The command's own cgroup, where the machine offers one and a memory,
/// process or CPU limit is set (`procs::cgroup`); `None` leaves the
/// rlimits alone to enforce them.
fn command_cgroup(limits: &Limits) -> std::io::Result<Option<CommandCgroup>> {
    if limits.data_bytes.is_none() && limits.processes.is_none() && limits.cpu_s.is_none() {
        return Ok(None);
    }
    match cgroup::available() {
        Ok(cgroups) => CommandCgroup::create(cgroups, limits.data_bytes, limits.processes).map(Some),
        Err(_) => Ok(None),
    }
}

/// Run `run` while reading the cgroup's CPU time: past `cpu_s` seconds for
/// everything in it together, everything in it is killed. Whether that
/// happened.
async fn watch_cpu<T>(
    run: impl std::future::Future<Output = T>,
    cgroup: Option<&CommandCgroup>,
    cpu_s: Option<u64>,
) -> (T, bool) {
    let (Some(cg), Some(limit)) = (cgroup, cpu_s) else { return (run.await, false) };
    let limit = Duration::from_secs(limit);
    tokio::pin!(run);
    let watch = async {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            if cg.cpu_used().is_some_and(|used| used > limit) {
                return;
            }
        }
    };
    tokio::select! {
        r = &mut run => (r, false),
        () = watch => {
            cg.kill_now();
            (run.await, true)
        }
    }
}

/// What the model is told when the cgroup stopped the command: certain,
/// read from the kernel (its OOM count) or the daemon's own CPU watch.
fn counted_limit(limits: &Limits, cpu_over: bool, oom: bool) -> Option<String> {
    if let (true, Some(cpu)) = (cpu_over, limits.cpu_s) {
        return Some(format!(
            "error: the command was stopped at its CPU time limit ({cpu} s for the command and everything it started, command_max_cpu_s)"
        ));
    }
    let mb = limits.data_bytes.map(|b| b >> 20).filter(|_| oom)?;
    Some(format!(
        "error: the command was stopped at its memory limit ({mb} MB for the command and everything it started, command_max_memory_mb)"
    ))
}

/// What to start: the helper with the plan, or the program itself; the
/// environment is exactly the session's (TMPDIR the run's own under the
/// helper).
fn launch(
    env: &CommandEnv,
    program: &Path,
    argv: &[String],
    tmp: Option<&RunTempDir>,
    cgroup: Option<&CommandCgroup>,
) -> serde_json::Result<Launch> {
    let mut vars = env.env.clone();
    let through = match (&env.plan, tmp) {
        (Some(plan), Some(tmp)) => {
            let mut plan = plan.clone();
            plan.write_dirs.push(tmp.0.clone());
            plan.max_processes = env.limits.processes;
            let spec = serde_json::to_string(&ExecSpec { program: program.to_owned(), plan })?;
            vars.push(("TMPDIR".to_owned(), tmp.0.clone().into_os_string()));
            Some(Through { helper: env.helper.clone(), args: vec![EXEC_FLAG.to_owned(), spec] })
        }
        _ => None,
    };
    Ok(Launch {
        program: program.to_owned(),
        argv: argv.to_vec(),
        cwd: Some(env.base_dir.clone()),
        env: Env::Exact(vars),
        io: Io::Merged,
        through,
        limits: Some(match cgroup {
            Some(cg) => env.limits.now().in_cgroup(&cg.join_fds()),
            None => env.limits.now(),
        }),
    })
}

/// Swival's result text, spilled when over [`INLINE_LIMIT`]; a timeout
/// or a cancellation is a failure.
fn format_result(base: &Path, ending: Ending, timeout: Duration, capture: Capture) -> ToolOutcome {
    let failed = matches!(ending, Ending::TimedOut | Ending::Cancelled);
    let head = match ending {
        Ending::Exited(0) => None,
        Ending::Exited(code) => Some(format!("Exit code: {code}")),
        Ending::TimedOut => Some(format!("error: command timed out after {}s", seconds(timeout))),
        Ending::Cancelled => Some("error: command was cancelled".to_owned()),
    };
    let output = String::from_utf8_lossy(&capture.bytes);
    let mut parts: Vec<&str> = Vec::new();
    if let Some(h) = &head {
        parts.push(h);
    }
    if !output.is_empty() {
        parts.push(&output);
    }
    if capture.truncated {
        parts.push("[output truncated at 1MB]");
    }
    let text = if parts.is_empty() {
        "(no output)".to_owned()
    } else {
        let result = parts.join("\n");
        if result.len() <= INLINE_LIMIT {
            result
        } else {
            let saved = spill::save_large_output(&result, base, INLINE_LIMIT, capture.truncated, None);
            match head {
                Some(h) => format!("{saved}\n{h}"),
                None => saved,
            }
        }
    };
    ToolOutcome { text, failed, warned: false, change: None, unasked: None, notes_at: None, futile: None }
}

/// What the model is told when a command ended at one of its limits: the
/// limit and the key that sets it. CPU time is certain (the kernel's
/// SIGXCPU, or its SIGKILL past the hard limit); the others are read from
/// the failure the program printed (a failed fork, a failed allocation).
fn limit_reached(limits: &Limits, ending: Ending, text: &str) -> Option<String> {
    let Ending::Exited(code) = ending else { return None };
    if code == 0 {
        return None;
    }
    // SIGXCPU: the soft CPU limit (the hard one, five seconds on, is a
    // SIGKILL, which could also be the kernel's OOM killer).
    if let (Some(cpu), -24) = (limits.cpu_s, code) {
        return Some(format!(
            "error: the command was stopped at its CPU time limit ({cpu} s per process, command_max_cpu_s)"
        ));
    }
    let lower = text.to_ascii_lowercase();
    const MEMORY: &[&str] = &[
        "cannot allocate memory",
        "memoryerror",
        "out of memory",
        "memory allocation of",
        "bad_alloc",
        "heap out of memory",
        "failed to allocate",
    ];
    const FORK: &[&str] =
        &["resource temporarily unavailable", "fork: retry", "can't fork", "cannot fork", "fork failed"];
    if let Some(mb) = limits.data_bytes.map(|b| b >> 20).filter(|_| MEMORY.iter().any(|m| lower.contains(m))) {
        return Some(format!(
            "error: the command ran out of memory at its limit ({mb} MB of data per process, command_max_memory_mb)"
        ));
    }
    if let Some(n) = limits.processes.filter(|_| FORK.iter().any(|m| lower.contains(m))) {
        return Some(format!(
            "error: the command could not start more processes at its limit ({n} processes and threads beyond the user's own, command_max_processes)"
        ));
    }
    None
}

/// `30` for whole seconds, `2.5` otherwise.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{:.1}", d.as_secs_f64())
    }
}

/// The command's private TMPDIR (writable under Landlock), removed with
/// everything in it when the run ends (or, for a confined MCP server, when
/// the server stops).
#[derive(Debug)]
pub(crate) struct RunTempDir(pub(crate) PathBuf);

impl RunTempDir {
    /// A new private directory under the system's temp dir.
    pub(crate) fn create() -> std::io::Result<RunTempDir> {
        use std::os::unix::fs::DirBuilderExt;
        let path = std::env::temp_dir().join(format!("swivald-run-{}", spill::random_hex(8)));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(RunTempDir(path))
    }
}

impl Drop for RunTempDir {
    fn drop(&mut self) {
        // A command may leave many files; do not stall the runtime on them.
        let path = std::mem::take(&mut self.0);
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(move || std::fs::remove_dir_all(path))),
            Err(_) => drop(std::fs::remove_dir_all(path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procs::ProcessRunner;
    use crate::sandbox::CommandPolicy;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// A builtin-mode environment allowing the given programs from /usr/bin or /bin.
    fn env(base: &Path, names: &[&str]) -> CommandEnv {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let map = policy::resolve_whitelist(&names, base, "/usr/bin:/bin".as_ref()).unwrap();
        CommandEnv {
            policy: CommandPolicy::Whitelist(map),
            base_dir: base.canonicalize().unwrap(),
            plan: None,
            helper: PathBuf::from("/nonexistent"),
            env: allowed_environment(std::env::vars_os(), &[]),
            runner: Arc::new(ProcessRunner::new(4)),
            ask: None,
            limits: Limits::default(),
            check_plan: None,
            edit_checks: Default::default(),
        }
    }

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test]
    async fn arguments_reach_the_program_literally_in_the_base_dir() {
        let base = tempfile::tempdir().unwrap();
        let env = env(base.path(), &["echo", "pwd"]);
        let c = CancellationToken::new();
        let out = run_command(&env, &argv(&["echo", "$(id)", "; rm -rf x"]), Duration::from_secs(10), &c).await;
        assert_eq!(out, ToolOutcome::ok("$(id) ; rm -rf x\n".into()));
        let out = run_command(&env, &argv(&["pwd"]), Duration::from_secs(10), &c).await;
        assert_eq!(out.text.trim_end(), env.base_dir.display().to_string());
        // What a command prints is its output, not a verdict on it.
        let out = run_command(&env, &argv(&["echo", "error: not really"]), Duration::from_secs(10), &c).await;
        assert_eq!(out, ToolOutcome::ok("error: not really\n".into()));
    }

    #[tokio::test]
    async fn nonzero_exit_is_reported_with_the_output() {
        let base = tempfile::tempdir().unwrap();
        let env = env(base.path(), &["sh"]);
        let c = CancellationToken::new();
        let out =
            run_command(&env, &argv(&["sh", "-c", "echo out; echo err >&2; exit 3"]), Duration::from_secs(10), &c)
                .await;
        // Swival's contract: the model reads the status; the call succeeded.
        assert_eq!(out, ToolOutcome::ok("Exit code: 3\nout\nerr\n".into()));
    }

    #[tokio::test]
    async fn command_not_in_whitelist_is_an_error_result() {
        let base = tempfile::tempdir().unwrap();
        let env = env(base.path(), &["echo"]);
        let out =
            run_command(&env, &argv(&["rm", "-rf", "x"]), Duration::from_secs(10), &CancellationToken::new()).await;
        assert_eq!(out, ToolOutcome::failed("error: command 'rm' is not allowed. Allowed commands: echo".into()));
    }

    #[tokio::test]
    async fn empty_output_says_so() {
        let base = tempfile::tempdir().unwrap();
        let env = env(base.path(), &["true"]);
        let out = run_command(&env, &argv(&["true"]), Duration::from_secs(10), &CancellationToken::new()).await;
        assert_eq!(out, ToolOutcome::ok("(no output)".into()));
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group_and_keeps_partial_output() {
        let base = tempfile::tempdir().unwrap();
        let env = env(base.path(), &["sh"]);
        // Neither the command nor its grandchild would ever end by itself:
        // a runner that waited for them hangs, and the test runner's
        // timeout (.config/nextest.toml) fails it.
        let script = "sleep 86400 & echo $! > grandchild.pid; echo started; sleep 86400";
        let out =
            run_command(&env, &argv(&["sh", "-c", script]), Duration::from_secs(1), &CancellationToken::new()).await;
        assert_eq!(out, ToolOutcome::failed("error: command timed out after 1s\nstarted\n".into()));
        let pid: i32 = std::fs::read_to_string(base.path().join("grandchild.pid")).unwrap().trim().parse().unwrap();
        assert!(gone(pid), "grandchild {pid} survived");
    }

    #[tokio::test]
    async fn cancel_kills_the_group() {
        let base = tempfile::tempdir().unwrap();
        let env = env(base.path(), &["sleep"]);
        let c = CancellationToken::new();
        let c2 = c.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            c2.cancel();
        });
        let out = run_command(&env, &argv(&["sleep", "60"]), Duration::from_secs(30), &c).await;
        assert_eq!(out, ToolOutcome::failed("error: command was cancelled".into()));
    }

    #[tokio::test]
    async fn large_output_is_spilled_with_the_exit_code_after_the_preview() {
        let base = tempfile::tempdir().unwrap();
        let env = env(base.path(), &["sh"]);
        let out = run_command(
            &env,
            &argv(&["sh", "-c", "seq 1 5000; exit 2"]),
            Duration::from_secs(10),
            &CancellationToken::new(),
        )
        .await;
        assert!(!out.failed);
        let out = out.text;
        assert!(out.starts_with("Command output too large for context ("), "{out}");
        assert!(out.ends_with("[/preview]\nExit code: 2"), "{out}");
        let rel = out.lines().find_map(|l| l.strip_prefix("Full output saved to: ")).unwrap();
        let saved = std::fs::read_to_string(base.path().join(rel)).unwrap();
        let expected: String = (1..=5000).map(|i| format!("{i}\n")).collect();
        assert_eq!(saved, format!("Exit code: 2\n{expected}"));
    }

    #[tokio::test]
    async fn repaired_string_argument_gets_a_note() {
        let base = tempfile::tempdir().unwrap();
        let env = env(base.path(), &["echo"]);
        let out = run_command_tool(&env, &serde_json::json!({"command": "echo hi"}), &CancellationToken::new()).await;
        assert_eq!(out.text, "hi\n\n(auto-corrected: run_command received a string; converted to argv array)");
        assert_eq!(out.own_text(), "hi\n", "the note is for the model, not a person");
    }

    #[test]
    fn only_allowed_variables_reach_commands() {
        let vars = [("PATH", "/bin"), ("LC_ALL", "C"), ("OPENAI_API_KEY", "sk-x"), ("FOO", "1"), ("BAR", "2")]
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = allowed_environment(vars, &["FOO".to_owned()]);
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["FOO", "LC_ALL", "PATH"]);
    }

    #[test]
    fn capture_keeps_one_megabyte() {
        let mut c = Capture::new(CAPTURE_LIMIT);
        c.push(&vec![b'a'; CAPTURE_LIMIT - 1]);
        c.push(b"bc");
        assert_eq!(c.bytes.len(), CAPTURE_LIMIT);
        assert!(c.truncated);
    }

    #[test]
    fn whitelist_map_is_sorted_in_errors() {
        let p = CommandPolicy::Whitelist(BTreeMap::new());
        assert_eq!(
            policy::check(&argv(&["x"]), &p, Path::new("/")).unwrap_err().to_string(),
            "command 'x' is not allowed. Allowed commands: (none)"
        );
    }

    /// Whether `pid` is dead (gone, or a zombie nobody reaped yet).
    pub(crate) fn gone(pid: i32) -> bool {
        for _ in 0..50 {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return true,
                Ok(stat) => {
                    let state = stat.rsplit(')').next().and_then(|s| s.split_whitespace().next());
                    if state == Some("Z") || state == Some("X") {
                        return true;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}
