//! The helper mode (Linux). swivald re-executes itself as
//! `swivald --sandbox-exec <plan> -- argv...`; `main` hands control here
//! before it parses arguments or starts a thread, because `unshare` of a
//! user namespace needs a single-threaded process. The helper confines
//! itself as the plan says (namespaces and mounts, then Landlock, then
//! seccomp) and execs the target, which keeps the helper's process group,
//! pipes and working directory. With a PID namespace the helper forks a
//! small init (pid 1 there) that mounts a private /proc and runs the
//! command as its child; when the command exits, init exits and the kernel
//! kills everything left in the namespace (setsid and double-forked
//! processes included); the helper then exits with the command's status.
//! A failed step is fatal: the helper never runs a command with less
//! confinement than its plan.
//!
//! `swivald --sandbox-probe` tries every mechanism in a throwaway process
//! and prints the [`SandboxCapabilities`] as JSON.

use super::status::{HelperPlan, NetBlock, SandboxCapabilities};
use super::{ExecSpec, EXEC_FLAG, PROBE_FLAG};
use landlock::{
    Access, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod mounts;

/// Exit status of a helper that could not confine or start the command
/// (as `env(1)` uses 125 for its own failures).
pub const HELPER_FAILED: u8 = 125;

/// The Landlock ABI whose rights we ask for; older kernels get the subset
/// they know (best effort), and the status says what is missing.
const ABI_WANTED: ABI = ABI::V9;

/// Device files every program may write; they store nothing.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// Why the helper could not confine or start the command, or why a probe
/// step failed. Printed by the helper on stderr (`swivald sandbox: …`) and
/// kept in the [`SandboxCapabilities`] a probe reports.
#[derive(Debug, thiserror::Error)]
enum HelperError {
    /// The command line after `--sandbox-exec` is not `<plan> -- argv...`.
    #[error("{0}")]
    Usage(&'static str),
    /// The plan is not a valid [`ExecSpec`].
    #[error("bad plan after --sandbox-exec: {0}")]
    BadPlan(serde_json::Error),
    /// `exec` failed.
    #[error("cannot run {}: {source}", .program.display())]
    Exec { program: PathBuf, source: std::io::Error },
    /// A system call of a confinement step failed: what it was for, and
    /// the errno.
    #[error("{what}: {source}")]
    Sys { what: String, source: nix::errno::Errno },
    /// A file write or a raw system call of a confinement step failed.
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    /// A Landlock step failed.
    #[error("Landlock: {what}: {detail}")]
    Landlock { what: String, detail: String },
    /// Landlock is there but enforces nothing; why.
    #[error("Landlock is not enforced by this kernel ({0})")]
    LandlockNotEnforced(String),
    /// The seccomp filter could not be built or installed.
    #[error("seccomp: {0}")]
    Seccomp(String),
    /// Something a step checks did not hold, in its own words.
    #[error("{0}")]
    Failed(String),
}

/// [`HelperError::Sys`].
fn sys(what: impl Into<String>) -> impl FnOnce(nix::errno::Errno) -> HelperError {
    let what = what.into();
    move |source| HelperError::Sys { what, source }
}

/// [`HelperError::Io`].
fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HelperError {
    let what = what.into();
    move |source| HelperError::Io { what, source }
}

/// Run the helper when argv asks for it; `None` means "not a helper, go on
/// with the daemon". Call it first thing in `main`.
pub fn main_if_helper() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    let first = args.next()?;
    if first == EXEC_FLAG {
        let rest: Vec<OsString> = args.collect();
        let Err(e) = exec(rest);
        eprintln!("swivald sandbox: {e}");
        Some(ExitCode::from(HELPER_FAILED))
    } else if first == PROBE_FLAG {
        let caps = probe();
        match serde_json::to_string(&caps) {
            Ok(json) => {
                println!("{json}");
                Some(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("swivald sandbox probe: {e}");
                Some(ExitCode::from(HELPER_FAILED))
            }
        }
    } else {
        None
    }
}

/// Parse `<spec> -- argv...`, confine, exec. Returns only on failure.
fn exec(rest: Vec<OsString>) -> Result<Infallible, HelperError> {
    let mut rest = rest.into_iter();
    let spec = rest.next().ok_or(HelperError::Usage("missing the plan after --sandbox-exec"))?;
    let spec = spec.to_str().ok_or(HelperError::Usage("the plan after --sandbox-exec is not UTF-8"))?;
    let spec: ExecSpec = serde_json::from_str(spec).map_err(HelperError::BadPlan)?;
    if rest.next().as_deref() != Some("--".as_ref()) {
        return Err(HelperError::Usage("expected -- between the plan and the command"));
    }
    let argv: Vec<OsString> = rest.collect();
    if argv.is_empty() {
        return Err(HelperError::Usage("no command after --"));
    }
    let plan = &spec.plan;
    if plan.user_namespace() {
        enter_namespaces(plan)?;
    }
    if plan.pid_namespace {
        return run_under_init(plan, &spec.program, &argv);
    }
    confine_self(plan)?;
    Err(exec_program(&spec.program, &argv))
}

/// Exec `program` with `argv` (argv\[0\] kept); returns why it failed.
fn exec_program(program: &Path, argv: &[OsString]) -> HelperError {
    let source = std::process::Command::new(program).arg0(&argv[0]).args(&argv[1..]).exec();
    HelperError::Exec { program: program.to_owned(), source }
}

/// The steps after namespaces and mounts, in the only order that works:
/// capabilities dropped, then Landlock (which forbids mounting), then
/// seccomp.
fn confine_self(plan: &HelperPlan) -> Result<(), HelperError> {
    if plan.user_namespace() {
        drop_capabilities()?;
    }
    if plan.landlock {
        let dirs = plan.landlock_writes.as_ref().unwrap_or(&plan.write_dirs);
        let writes: Vec<PathBuf> = dirs.iter().cloned().chain(mounts::overlaid(plan)).collect();
        landlock(&writes, plan.read_dirs.as_deref())?;
    }
    if plan.seccomp() {
        let mut families = Vec::new();
        if plan.net == Some(NetBlock::Seccomp) {
            families.extend([libc::AF_INET, libc::AF_INET6]);
        }
        if plan.deny_unix_sockets {
            families.push(libc::AF_UNIX);
        }
        deny_sockets(&families)?;
    }
    Ok(())
}

/// The PID namespace path (after `unshare`, so our first child is pid 1
/// there): fork init, wait for it, and leave with the command's status.
fn run_under_init(plan: &HelperPlan, program: &Path, argv: &[OsString]) -> Result<Infallible, HelperError> {
    use nix::sys::wait::{waitpid, WaitStatus};
    use nix::unistd::{fork, ForkResult};
    let (status_r, status_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(sys("cannot create a pipe"))?;
    // SAFETY: the helper is single-threaded (main calls it before any
    // thread exists), so the child may run arbitrary code.
    match unsafe { fork() }.map_err(sys("cannot fork the sandbox init"))? {
        ForkResult::Child => {
            drop(status_r);
            let code = match init(plan, program, argv) {
                Ok(status) => {
                    let _ = nix::unistd::write(&status_w, &status.to_ne_bytes());
                    0
                }
                Err(e) => {
                    eprintln!("swivald sandbox: {e}");
                    i32::from(HELPER_FAILED)
                }
            };
            // SAFETY: leaving the forked child without running destructors.
            unsafe { libc::_exit(code) }
        }
        ForkResult::Parent { child } => {
            drop(status_w);
            let init_status = loop {
                match waitpid(child, None) {
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(sys("waiting for the sandbox init failed")(e)),
                    Ok(s) => break s,
                }
            };
            let mut raw = [0u8; 4];
            let got = nix::unistd::read(&status_r, &mut raw).unwrap_or(0);
            if got != raw.len() {
                return match init_status {
                    WaitStatus::Exited(_, code) => {
                        Err(HelperError::Failed(format!("the sandbox init failed (exit {code})")))
                    }
                    other => Err(HelperError::Failed(format!("the sandbox init ended: {other:?}"))),
                };
            }
            leave_like(i32::from_ne_bytes(raw))
        }
    }
}

/// Exit as the command did: its exit code, or the same signal.
fn leave_like(status: i32) -> ! {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: default disposition, then the signal to ourselves.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        std::process::exit(128 + sig);
    }
    std::process::exit(libc::WEXITSTATUS(status))
}

/// pid 1 of the namespace: mount its /proc, start the command, reap every
/// orphan until the command exits, and return the command's raw wait
/// status. Returning ends init, which makes the kernel kill whatever is
/// left in the namespace.
fn init(plan: &HelperPlan, program: &Path, argv: &[OsString]) -> Result<i32, HelperError> {
    use nix::unistd::{fork, ForkResult};
    // SAFETY: prctl with integer arguments only. If the helper dies (the
    // daemon killed its group), init and with it the namespace die too.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    mount_proc()?;
    if let Some(n) = plan.max_processes {
        // This namespace's own pid_max; an older kernel has one for the
        // whole machine, which the namespace cannot write (EPERM): then
        // RLIMIT_NPROC alone limits the command.
        let _ = std::fs::write("/proc/sys/kernel/pid_max", n.saturating_add(2).max(PID_MAX_FLOOR).to_string());
    }
    // SAFETY: still single-threaded.
    let command = match unsafe { fork() }.map_err(sys("cannot fork the command"))? {
        ForkResult::Child => {
            let why = match confine_self(plan) {
                Ok(()) => exec_program(program, argv),
                Err(e) => e,
            };
            eprintln!("swivald sandbox: {why}");
            // SAFETY: leaving the forked child without running destructors.
            unsafe { libc::_exit(i32::from(HELPER_FAILED)) }
        }
        ForkResult::Parent { child } => child,
    };
    loop {
        let mut raw = 0;
        // SAFETY: waitpid on any child with a valid status pointer.
        let pid = unsafe { libc::waitpid(-1, &mut raw, 0) };
        if pid == command.as_raw() {
            return Ok(raw);
        }
        if pid < 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(io("init lost its command")(err));
            }
        }
    }
}

/// The lowest `pid_max` the kernel accepts.
const PID_MAX_FLOOR: u64 = 301;

/// A /proc for this PID namespace, so commands see only their own processes.
fn mount_proc() -> Result<(), HelperError> {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), "/proc", Some("proc"), flags, None::<&str>).map_err(sys("cannot mount a private /proc"))
}

/// A user namespace mapping only our own uid and gid, with a private
/// network namespace (no interface up) and/or a private mount namespace
/// where `hide_paths` are covered (see [`hide`]). Capabilities
/// gained in the namespace are dropped before exec, so a command running
/// as uid 0 cannot undo the mounts or configure the network.
fn enter_namespaces(plan: &HelperPlan) -> Result<(), HelperError> {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let mut flags = CloneFlags::CLONE_NEWUSER;
    if plan.net == Some(NetBlock::Namespace) {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if plan.mount_namespace() {
        flags |= CloneFlags::CLONE_NEWNS;
    }
    if plan.pid_namespace {
        flags |= CloneFlags::CLONE_NEWPID;
    }
    unshare(flags).map_err(sys("cannot create a user namespace: unshare"))?;
    match std::fs::write("/proc/self/setgroups", "deny") {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io("cannot write /proc/self/setgroups")(e)),
        _ => {}
    }
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1\n")).map_err(io("cannot write /proc/self/uid_map"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1\n")).map_err(io("cannot write /proc/self/gid_map"))?;
    if plan.mount_namespace() {
        mounts::apply(plan)?;
    }
    Ok(())
}

/// Empty the bounding and ambient sets, so exec leaves no capability.
fn drop_capabilities() -> Result<(), HelperError> {
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments only.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINVAL) {
                break; // past the last capability this kernel knows
            }
            return Err(io(format!("cannot drop capability {cap}"))(err));
        }
    }
    // SAFETY: prctl with integer arguments only.
    let rc = unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    if rc != 0 {
        return Err(io("cannot clear ambient capabilities")(std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Landlock: read and execute everywhere (or, in strict-read mode, only
/// in `read_dirs`), every right in `write_dirs`, writes to harmless
/// devices; signals and abstract Unix sockets scoped to the sandbox; on
/// ABI 9 and later, named Unix sockets only inside `write_dirs`. Fails
/// when the kernel enforces nothing.
fn landlock(write_dirs: &[PathBuf], read_dirs: Option<&[PathBuf]>) -> Result<(), HelperError> {
    let e = |what: &str, err: &dyn std::fmt::Display| HelperError::Landlock {
        what: what.to_owned(),
        detail: err.to_string(),
    };
    let fd = |p: &Path| PathFd::new(p).map_err(|err| e(&format!("cannot open {}", p.display()), &err));
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_WANTED))
        .and_then(|r| r.scope(Scope::from_all(ABI_WANTED)))
        .and_then(|r| r.create())
        .map_err(|err| e("cannot create a ruleset", &err))?;
    let everything = [PathBuf::from("/")];
    for dir in read_dirs.unwrap_or(&everything) {
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd(dir)?, AccessFs::from_read(ABI_WANTED)))
            .map_err(|err| e(&format!("cannot allow reading {}", dir.display()), &err))?;
    }
    for dir in write_dirs {
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd(dir)?, AccessFs::from_all(ABI_WANTED)))
            .map_err(|err| e(&format!("cannot allow writing {}", dir.display()), &err))?;
    }
    for dev in DEVICES.iter().map(Path::new).filter(|p| p.exists()) {
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd(dev)?, AccessFs::from_file(ABI_WANTED)))
            .map_err(|err| e(&format!("cannot allow writing {}", dev.display()), &err))?;
    }
    let status = ruleset.restrict_self().map_err(|err| e("cannot enforce the ruleset", &err))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(HelperError::LandlockNotEnforced(landlock_unavailable_reason()));
    }
    Ok(())
}

/// The kernel's Landlock ABI version, or the errno saying why there is none.
fn landlock_abi() -> Result<u32, i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: null attributes, size 0.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v > 0 {
        Ok(v as u32)
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

fn landlock_unavailable_reason() -> String {
    match landlock_abi() {
        Ok(abi) => format!("the kernel reports ABI {abi}"),
        Err(libc::EOPNOTSUPP) => {
            "Landlock is built into the kernel but not enabled; add landlock to the lsm= boot parameter".into()
        }
        Err(libc::ENOSYS) => "the kernel has no Landlock (needs Linux 5.13 with CONFIG_SECURITY_LANDLOCK)".into(),
        Err(errno) => format!("landlock_create_ruleset failed with errno {errno}"),
    }
}

/// seccomp: `socket(family, ...)` for each of `families` and
/// `io_uring_setup` (which could open sockets without the socket call)
/// fail with EACCES.
fn deny_sockets(families: &[libc::c_int]) -> Result<(), HelperError> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
        TargetArch,
    };
    let e = |err: &dyn std::fmt::Display| HelperError::Seccomp(err.to_string());
    let arch: TargetArch = std::env::consts::ARCH.try_into().map_err(|err: seccompiler::BackendError| e(&err))?;
    let domain = |af: libc::c_int| -> Result<SeccompRule, HelperError> {
        let cond =
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, af as u64).map_err(|err| e(&err))?;
        SeccompRule::new(vec![cond]).map_err(|err| e(&err))
    };
    let ip_domains = families.iter().map(|f| domain(*f)).collect::<Result<Vec<_>, _>>()?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, ip_domains.clone());
    #[cfg(target_arch = "x86_64")]
    {
        // The x32 ABI numbers the same call with this bit set.
        const X32_SYSCALL_BIT: i64 = 0x4000_0000;
        rules.insert(libc::SYS_socket | X32_SYSCALL_BIT, ip_domains);
    }
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EACCES as u32), arch)
        .map_err(|err| e(&err))?;
    let program: BpfProgram = filter.try_into().map_err(|err: seccompiler::BackendError| e(&err))?;
    seccompiler::apply_filter(&program).map_err(|err| e(&err))
}

/// Try each mechanism for real, in the helper's order, and report.
fn probe() -> SandboxCapabilities {
    let mut caps = SandboxCapabilities::default();
    let scratch = std::env::temp_dir();
    let ns_plan = HelperPlan {
        landlock: false,
        write_dirs: Vec::new(),
        net: Some(NetBlock::Namespace),
        hide_paths: vec![scratch.clone()],
        readonly_paths: Vec::new(),
        pid_namespace: true,
        deny_unix_sockets: false,
        read_dirs: None,
        max_processes: None,
        home: None,
        landlock_writes: None,
    };
    match enter_namespaces(&ns_plan) {
        Ok(()) => {
            caps.user_namespaces = true;
            match probe_pid_namespace() {
                Ok(()) => caps.pid_namespace = true,
                Err(e) => caps.pid_namespace_error = Some(e.to_string()),
            }
        }
        Err(e) => {
            caps.pid_namespace_error = Some(e.to_string());
            caps.user_namespaces_error = Some(e.to_string());
        }
    }
    match drop_capabilities().and_then(|()| landlock(&[scratch], None)) {
        Ok(()) => caps.landlock_abi = landlock_abi().ok(),
        Err(e) => caps.landlock_error = Some(e.to_string()),
    }
    match deny_sockets(&[libc::AF_INET, libc::AF_INET6]).and_then(|()| check_ip_sockets_denied()) {
        Ok(()) => caps.seccomp = true,
        Err(e) => caps.seccomp_error = Some(e.to_string()),
    }
    caps
}

/// In a fresh PID namespace (already unshared), a child must be pid 1 and
/// able to mount its own /proc.
fn probe_pid_namespace() -> Result<(), HelperError> {
    use nix::sys::wait::{waitpid, WaitStatus};
    use nix::unistd::{fork, ForkResult};
    // SAFETY: the probe is single-threaded.
    match unsafe { fork() }.map_err(sys("cannot fork in a PID namespace"))? {
        ForkResult::Child => {
            let code = match mount_proc() {
                Ok(()) if std::process::id() == 1 => 0,
                Ok(()) => 2,
                Err(e) => {
                    eprintln!("{e}");
                    1
                }
            };
            // SAFETY: leaving the forked child without running destructors.
            unsafe { libc::_exit(code) }
        }
        ForkResult::Parent { child } => match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, 0)) => Ok(()),
            Ok(WaitStatus::Exited(_, 1)) => Err(HelperError::Failed(
                "a private /proc cannot be mounted (is /proc partly covered, as in some containers?)".into(),
            )),
            Ok(other) => Err(HelperError::Failed(format!("the PID namespace probe ended: {other:?}"))),
            Err(e) => Err(sys("waiting for the PID namespace probe failed")(e)),
        },
    }
}

/// After the filter: an IPv4 socket must be refused.
fn check_ip_sockets_denied() -> Result<(), HelperError> {
    // SAFETY: plain socket call; a returned descriptor is closed at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    if fd >= 0 {
        // SAFETY: fd was just returned by socket().
        unsafe { libc::close(fd) };
        return Err(HelperError::Failed("seccomp filter installed but IPv4 sockets still open".into()));
    }
    Ok(())
}
