//! The helper mode (Linux). swivald re-executes itself as
//! `swivald --sandbox-exec <plan> -- argv...`; `main` hands control here
//! before it parses arguments or starts a thread, because `unshare` of a
//! user namespace needs a single-threaded process. The helper confines
//! itself as the plan says (namespaces, then Landlock, then seccomp) and
//! execs the target in place, so the target keeps the helper's pid,
//! process group, pipes and working directory. A failed step is fatal:
//! the helper never runs a command with less confinement than its plan.
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

/// Exit status of a helper that could not confine or start the command
/// (as `env(1)` uses 125 for its own failures).
pub const HELPER_FAILED: u8 = 125;

/// The Landlock ABI whose rights we ask for; older kernels get the subset
/// they know (best effort), and the status says what is missing.
const ABI_WANTED: ABI = ABI::V9;

/// Device files every program may write; they store nothing.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

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
fn exec(rest: Vec<OsString>) -> Result<Infallible, String> {
    let mut rest = rest.into_iter();
    let spec = rest.next().ok_or("missing the plan after --sandbox-exec")?;
    let spec: ExecSpec = serde_json::from_str(spec.to_str().ok_or("the plan after --sandbox-exec is not UTF-8")?)
        .map_err(|e| format!("bad plan after --sandbox-exec: {e}"))?;
    if rest.next().as_deref() != Some("--".as_ref()) {
        return Err("expected -- between the plan and the command".into());
    }
    let argv: Vec<OsString> = rest.collect();
    let Some(arg0) = argv.first() else {
        return Err("no command after --".into());
    };
    confine(&spec.plan)?;
    let err = std::process::Command::new(&spec.program).arg0(arg0).args(&argv[1..]).exec();
    Err(format!("cannot run {}: {err}", spec.program.display()))
}

/// Apply every step of `plan` to this process, in the only order that
/// works: namespaces and mounts first (Landlock forbids mounting), then
/// Landlock, then seccomp.
fn confine(plan: &HelperPlan) -> Result<(), String> {
    if plan.user_namespace() {
        enter_namespaces(plan)?;
    }
    if plan.landlock {
        landlock(&plan.write_dirs)?;
    }
    if plan.net == Some(NetBlock::Seccomp) {
        deny_ip_sockets()?;
    }
    Ok(())
}

/// A user namespace mapping only our own uid and gid, with a private
/// network namespace (no interface up) and/or a private mount namespace
/// where `hide_paths` are covered (see [`hide`]). Capabilities
/// gained in the namespace are dropped before exec, so a command running
/// as uid 0 cannot undo the mounts or configure the network.
fn enter_namespaces(plan: &HelperPlan) -> Result<(), String> {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let mut flags = CloneFlags::CLONE_NEWUSER;
    if plan.net == Some(NetBlock::Namespace) {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if !plan.hide_paths.is_empty() {
        flags |= CloneFlags::CLONE_NEWNS;
    }
    unshare(flags).map_err(|e| format!("cannot create a user namespace: unshare: {e}"))?;
    match std::fs::write("/proc/self/setgroups", "deny") {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("cannot write /proc/self/setgroups: {e}"))
        }
        _ => {}
    }
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))
        .map_err(|e| format!("cannot write /proc/self/uid_map: {e}"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))
        .map_err(|e| format!("cannot write /proc/self/gid_map: {e}"))?;
    if !plan.hide_paths.is_empty() {
        mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
            .map_err(|e| format!("cannot make the mount namespace private: {e}"))?;
        for path in &plan.hide_paths {
            hide(path)?;
        }
    }
    drop_capabilities()
}

/// Cover `path` in this mount namespace: a directory with an empty
/// read-only tmpfs, anything else (swivald's socket) with /dev/null, so
/// connecting to it is refused. A path that does not exist has nothing to
/// hide.
fn hide(path: &Path) -> Result<(), String> {
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
    result.map_err(|e| format!("cannot hide {}: mount: {e}", path.display()))
}

/// Empty the bounding and ambient sets, so exec leaves no capability.
fn drop_capabilities() -> Result<(), String> {
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments only.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINVAL) {
                break; // past the last capability this kernel knows
            }
            return Err(format!("cannot drop capability {cap}: {err}"));
        }
    }
    // SAFETY: prctl with integer arguments only.
    let rc = unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    if rc != 0 {
        return Err(format!("cannot clear ambient capabilities: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Landlock: read and execute everywhere, every right in `write_dirs`,
/// writes to harmless devices; signals and abstract Unix sockets scoped
/// to the sandbox; on ABI 9 and later, named Unix sockets only inside
/// `write_dirs`. Fails when the kernel enforces nothing.
fn landlock(write_dirs: &[PathBuf]) -> Result<(), String> {
    let e = |what: &str, err: &dyn std::fmt::Display| format!("Landlock: {what}: {err}");
    let fd = |p: &Path| PathFd::new(p).map_err(|err| e(&format!("cannot open {}", p.display()), &err));
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_WANTED))
        .and_then(|r| r.scope(Scope::from_all(ABI_WANTED)))
        .and_then(|r| r.create())
        .map_err(|err| e("cannot create a ruleset", &err))?
        .add_rule(PathBeneath::new(fd(Path::new("/"))?, AccessFs::from_read(ABI_WANTED)))
        .map_err(|err| e("cannot allow reading /", &err))?;
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
        return Err(format!("Landlock is not enforced by this kernel ({})", landlock_unavailable_reason()));
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

/// seccomp: `socket(AF_INET|AF_INET6, ...)` and `io_uring_setup` (which
/// could open sockets without the socket call) fail with EACCES.
fn deny_ip_sockets() -> Result<(), String> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
        TargetArch,
    };
    let e = |err: seccompiler::Error| format!("seccomp: {err}");
    let arch: TargetArch =
        std::env::consts::ARCH.try_into().map_err(|err: seccompiler::BackendError| format!("seccomp: {err}"))?;
    let domain = |af: libc::c_int| -> Result<SeccompRule, String> {
        let cond = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, af as u64)
            .map_err(|err| format!("seccomp: {err}"))?;
        SeccompRule::new(vec![cond]).map_err(|err| format!("seccomp: {err}"))
    };
    let ip_domains = vec![domain(libc::AF_INET)?, domain(libc::AF_INET6)?];
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
        .map_err(|err| format!("seccomp: {err}"))?;
    let program: BpfProgram = filter.try_into().map_err(|err: seccompiler::BackendError| format!("seccomp: {err}"))?;
    seccompiler::apply_filter(&program).map_err(e)
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
    };
    match enter_namespaces(&ns_plan) {
        Ok(()) => caps.user_namespaces = true,
        Err(e) => caps.user_namespaces_error = Some(e),
    }
    match landlock(&[scratch]) {
        Ok(()) => caps.landlock_abi = landlock_abi().ok(),
        Err(e) => caps.landlock_error = Some(e),
    }
    match deny_ip_sockets().and_then(|()| check_ip_sockets_denied()) {
        Ok(()) => caps.seccomp = true,
        Err(e) => caps.seccomp_error = Some(e),
    }
    caps
}

/// After the filter: an IPv4 socket must be refused.
fn check_ip_sockets_denied() -> Result<(), String> {
    // SAFETY: plain socket call; a returned descriptor is closed at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    if fd >= 0 {
        // SAFETY: fd was just returned by socket().
        unsafe { libc::close(fd) };
        return Err("seccomp filter installed but IPv4 sockets still open".into());
    }
    Ok(())
}
