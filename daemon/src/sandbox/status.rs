//! What the kernel can enforce ([`SandboxCapabilities`], found once by
//! running the helper's probe), what a session's commands actually get
//! ([`SandboxStatus`], for `policy/status` and warnings), and the plan the
//! helper is handed for each command ([`HelperPlan`]). The status is
//! derived from the same data as the plan, so it cannot claim more than
//! the helper does; the helper refuses to run a command when a step of its
//! plan fails.

use crate::config::SandboxMode;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Landlock ABI that scopes signals and abstract Unix sockets.
pub const LANDLOCK_ABI_SCOPES: u32 = 6;
/// Landlock ABI that controls truncation.
pub const LANDLOCK_ABI_TRUNCATE: u32 = 3;

/// What the running kernel lets the helper enforce. Each item was tried
/// for real in a throwaway helper process; an error says why it failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SandboxCapabilities {
    /// The Landlock ABI version when a ruleset could be enforced.
    pub landlock_abi: Option<u32>,
    /// Why Landlock cannot be used.
    pub landlock_error: Option<String>,
    /// User, network and mount namespaces can be created without privileges.
    pub user_namespaces: bool,
    /// Why they cannot.
    pub user_namespaces_error: Option<String>,
    /// A seccomp filter denying IP sockets works.
    pub seccomp: bool,
    /// Why it does not.
    pub seccomp_error: Option<String>,
    /// A private PID namespace with its own /proc works.
    #[serde(default)]
    pub pid_namespace: bool,
    /// Why it does not.
    #[serde(default)]
    pub pid_namespace_error: Option<String>,
}

impl SandboxCapabilities {
    /// Nothing can be enforced, for `why` (not Linux, probe failed).
    pub fn none(why: &str) -> SandboxCapabilities {
        SandboxCapabilities {
            landlock_abi: None,
            landlock_error: Some(why.to_owned()),
            user_namespaces: false,
            user_namespaces_error: Some(why.to_owned()),
            seccomp: false,
            seccomp_error: Some(why.to_owned()),
            pid_namespace: false,
            pid_namespace_error: Some(why.to_owned()),
        }
    }

    /// Whether `sandbox = "os"` can enforce anything at all here (the
    /// default mode falls back to `builtin` when not).
    pub fn any(&self) -> bool {
        self.landlock_abi.is_some() || self.user_namespaces || self.seccomp
    }
}

/// How commands lose the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetBlock {
    /// A private network namespace with no interface up.
    Namespace,
    /// A seccomp filter refusing IPv4 and IPv6 sockets.
    Seccomp,
}

/// What the helper does before exec'ing one command.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HelperPlan {
    /// Apply Landlock: read and execute everywhere, write only in `write_dirs`.
    pub landlock: bool,
    /// Directories the command may write (base dir, allow-dirs, temp dir).
    pub write_dirs: Vec<PathBuf>,
    /// How to remove the network, if at all.
    pub net: Option<NetBlock>,
    /// Paths covered in a private mount namespace so commands cannot reach
    /// them (swivald's socket, its state, cache and config directories,
    /// credential stores).
    pub hide_paths: Vec<PathBuf>,
    /// Paths bound read-only in the private mount namespace: policy
    /// scripts, their directories and the config files naming them.
    #[serde(default)]
    pub readonly_paths: Vec<PathBuf>,
    /// Run the command in a private PID namespace under a small init, so
    /// everything it starts dies with it and /proc shows only its own.
    #[serde(default)]
    pub pid_namespace: bool,
    /// seccomp refuses `socket(AF_UNIX, …)`: no named or abstract Unix
    /// socket can be reached (socketpair still works).
    #[serde(default)]
    pub deny_unix_sockets: bool,
    /// Strict reads: Landlock allows reading only these (plus `write_dirs`).
    #[serde(default)]
    pub read_dirs: Option<Vec<PathBuf>>,
    /// Most processes in the PID namespace (`command_max_processes`): its
    /// `pid_max`, where the kernel keeps one per namespace (6.14 on; the
    /// kernel's floor is 301), which holds even for root.
    #[serde(default)]
    pub max_processes: Option<u64>,
    /// A private home: commands see only what it keeps, and the
    /// directories they write (`home.rs`).
    #[serde(default)]
    pub home: Option<super::home::HomeView>,
    /// When set, Landlock lets the command write only here (and in the
    /// toolchain overlays), whatever `write_dirs` shows: an edit check.
    #[serde(default)]
    pub landlock_writes: Option<Vec<PathBuf>>,
}

impl HelperPlan {
    /// Whether the plan needs a user namespace.
    pub fn user_namespace(&self) -> bool {
        self.net == Some(NetBlock::Namespace) || self.mount_namespace() || self.pid_namespace
    }

    /// Whether the plan needs a private mount namespace.
    pub fn mount_namespace(&self) -> bool {
        !self.hide_paths.is_empty() || !self.readonly_paths.is_empty() || self.pid_namespace || self.home.is_some()
    }

    /// Whether a seccomp filter is installed.
    pub fn seccomp(&self) -> bool {
        self.net == Some(NetBlock::Seccomp) || self.deny_unix_sockets
    }
}

/// What a session asks of the command sandbox.
#[derive(Debug, Clone, Default)]
pub struct PlanInput {
    /// `sandbox` as configured.
    pub mode: SandboxMode,
    /// `command_network`.
    pub network_allowed: bool,
    /// The base dir and the read-write allow-dirs (the per-run temp dir
    /// is added for each run).
    pub write_dirs: Vec<PathBuf>,
    /// Read-only allow-dirs (readable in strict-read mode).
    pub read_only_dirs: Vec<PathBuf>,
    /// swivald's socket (or its directory), hidden from commands.
    pub socket: Option<PathBuf>,
    /// Everything else hidden: the daemon's directories, credential stores.
    pub hide: Vec<PathBuf>,
    /// Policy files and directories commands must see read-only.
    pub readonly: Vec<PathBuf>,
    /// `sandbox_strict_read`.
    pub strict_read: bool,
    /// The private home commands should see (`home::view`).
    pub home: Option<super::home::HomeView>,
}

/// Directories every program needs to read in strict-read mode.
pub const SYSTEM_READ_DIRS: &[&str] =
    &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/dev", "/proc", "/sys", "/nix"];

/// What one session's commands get, for `policy/status` and the warning
/// event. Every field is what is enforced, not what was asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxStatus {
    /// `sandbox` as configured.
    pub mode: SandboxMode,
    /// Commands run through the helper.
    pub helper: bool,
    /// The kernel refuses writes outside the base dir, the allow-dirs and
    /// the run's temp dir (Landlock ABI in `landlock_abi`).
    pub filesystem_confined: bool,
    /// The Landlock ABI in use.
    pub landlock_abi: Option<u32>,
    /// `command_network = true`: commands may use the network.
    pub network_allowed: bool,
    /// How the network is removed when it is not allowed; `None` means
    /// not removed (allowed, or the kernel cannot).
    pub network_block: Option<NetBlock>,
    /// swivald's socket directory is hidden from commands.
    pub daemon_socket_hidden: bool,
    /// Paths hidden from commands (an empty read-only view).
    pub hidden: Vec<PathBuf>,
    /// Policy paths commands see read-only.
    pub readonly: Vec<PathBuf>,
    /// Commands run in a private PID namespace: their descendants die
    /// with them and /proc shows only their own processes.
    pub pid_namespace: bool,
    /// Commands cannot create Unix sockets (seccomp).
    pub unix_sockets_blocked: bool,
    /// Reads limited to system directories, the base dir and allowed dirs.
    pub strict_read: bool,
    /// The private home commands see, when one is enforced.
    pub home: Option<super::home::HomeView>,
    /// One sentence per thing asked for that is not enforced (empty when
    /// everything is). The session emits these as warnings.
    pub not_enforced: Vec<String>,
}

impl SandboxStatus {
    /// One line for logs and `swivalctl`.
    pub fn summary(&self) -> String {
        if !self.helper {
            return match self.mode {
                SandboxMode::Builtin => {
                    "builtin: in-process checks only, commands are not confined by the kernel".into()
                }
                SandboxMode::Os => "os requested but nothing can be enforced here: in-process checks only".into(),
            };
        }
        let fs = match self.landlock_abi {
            Some(abi) if self.filesystem_confined => {
                format!("writes confined by Landlock ABI {abi}")
            }
            _ => "writes NOT confined".into(),
        };
        let net = match (self.network_allowed, self.network_block) {
            (true, _) => "network allowed".to_owned(),
            (false, Some(NetBlock::Namespace)) => "network removed (private network namespace)".into(),
            (false, Some(NetBlock::Seccomp)) => "network removed (seccomp denies IP sockets)".into(),
            (false, None) => "network NOT removed".into(),
        };
        format!("os: {fs}; {net}")
    }
}

/// The status a session gets and the plan for its commands, from the
/// configuration and what the kernel offers. A hidden path that would
/// cover a write dir or the temp dir is dropped, and the status says so.
pub fn plan(input: PlanInput, caps: &SandboxCapabilities) -> (SandboxStatus, Option<HelperPlan>) {
    let PlanInput { mode, network_allowed, write_dirs, read_only_dirs, socket, hide, readonly, strict_read, home } =
        input;
    if mode == SandboxMode::Builtin || !caps.any() {
        return (unconfined(mode, network_allowed, caps), None);
    }
    let mut not_enforced = Vec::new();
    let landlock = caps.landlock_abi.is_some();
    landlock_gaps(caps, &mut not_enforced);
    let net = network_block(network_allowed, caps, &mut not_enforced);
    let deny_unix_sockets = unix_sockets_denied(network_allowed, caps, &mut not_enforced);
    let hiding = hiding(caps, &write_dirs, socket, hide, readonly, &mut not_enforced);
    if !hiding.socket_hidden && !deny_unix_sockets {
        not_enforced.push("commands can connect to swivald's own socket".into());
    }
    let pid_namespace = pid_namespace(caps, &mut not_enforced);
    let home = private_home(caps, home, &mut not_enforced);
    let read_dirs = strict_read_dirs(strict_read, landlock, read_only_dirs, &mut not_enforced);

    let status = SandboxStatus {
        mode,
        helper: true,
        filesystem_confined: landlock,
        landlock_abi: caps.landlock_abi,
        network_allowed,
        network_block: net,
        daemon_socket_hidden: hiding.socket_hidden,
        hidden: hiding.hidden,
        readonly: hiding.readonly.clone(),
        pid_namespace,
        unix_sockets_blocked: deny_unix_sockets,
        strict_read: read_dirs.is_some(),
        home: home.clone(),
        not_enforced,
    };
    let plan = HelperPlan {
        landlock,
        write_dirs,
        net,
        hide_paths: hiding.paths,
        readonly_paths: hiding.readonly,
        pid_namespace,
        deny_unix_sockets,
        read_dirs,
        max_processes: None,
        home,
        landlock_writes: None,
    };
    (status, Some(plan))
}

/// The private home, where user namespaces let the helper build it.
fn private_home(
    caps: &SandboxCapabilities,
    home: Option<super::home::HomeView>,
    not_enforced: &mut Vec<String>,
) -> Option<super::home::HomeView> {
    let view = home?;
    if caps.user_namespaces {
        return Some(view);
    }
    not_enforced.push(format!(
        "commands see all of {} but the hidden paths, not only the project and toolchains (no user namespaces: {})",
        view.home.display(),
        userns_why(caps)
    ));
    None
}

/// Why user namespaces are unavailable, for a note.
fn userns_why(caps: &SandboxCapabilities) -> String {
    caps.user_namespaces_error.as_deref().unwrap_or("unknown reason").to_owned()
}

/// What Landlock (or its absence, or an old ABI) leaves unconfined.
fn landlock_gaps(caps: &SandboxCapabilities, not_enforced: &mut Vec<String>) {
    match caps.landlock_abi {
        None => not_enforced.push(format!(
            "Landlock is unavailable ({}): commands can write anywhere the user can, outside the base directory too",
            caps.landlock_error.as_deref().unwrap_or("unknown reason")
        )),
        Some(abi) => {
            if abi < LANDLOCK_ABI_TRUNCATE {
                not_enforced.push(format!("Landlock ABI {abi} cannot stop commands from truncating files outside the writable directories (needs ABI {LANDLOCK_ABI_TRUNCATE}, Linux 6.2)"));
            }
            if abi < LANDLOCK_ABI_SCOPES {
                not_enforced.push(format!("Landlock ABI {abi} cannot stop commands from signalling other processes of the user, swivald included (needs ABI {LANDLOCK_ABI_SCOPES}, Linux 6.12)"));
            }
        }
    }
}

/// How the network is taken from commands, if it is and can be.
fn network_block(
    network_allowed: bool,
    caps: &SandboxCapabilities,
    not_enforced: &mut Vec<String>,
) -> Option<NetBlock> {
    if network_allowed {
        None
    } else if caps.user_namespaces {
        Some(NetBlock::Namespace)
    } else if caps.seccomp {
        Some(NetBlock::Seccomp)
    } else {
        not_enforced.push(format!(
            "command_network = false is not enforced: no user namespaces ({}) and no seccomp ({}); commands can use the network",
            userns_why(caps),
            caps.seccomp_error.as_deref().unwrap_or("unknown reason")
        ));
        None
    }
}

/// Whether seccomp refuses to create Unix sockets: unless the network is
/// allowed (a named socket is a door out of the sandbox: ssh-agent, the
/// D-Bus session bus, docker).
fn unix_sockets_denied(network_allowed: bool, caps: &SandboxCapabilities, not_enforced: &mut Vec<String>) -> bool {
    if network_allowed {
        not_enforced.push("command_network = true: commands can also connect to named Unix sockets the user can reach (ssh-agent, D-Bus, docker) outside the hidden paths".into());
    } else if !caps.seccomp {
        not_enforced.push(format!(
            "commands can connect to named Unix sockets the user can reach (ssh-agent, D-Bus, docker): seccomp is unavailable ({})",
            caps.seccomp_error.as_deref().unwrap_or("unknown reason")
        ));
    }
    !network_allowed && caps.seccomp
}

/// What the helper hides and binds read-only (with user namespaces only).
struct Hiding {
    /// Every path hidden: the daemon's socket and the configured ones.
    paths: Vec<PathBuf>,
    /// Whether the daemon's socket is among them.
    socket_hidden: bool,
    /// The configured hidden paths kept, sorted.
    hidden: Vec<PathBuf>,
    /// Paths bound read-only, sorted.
    readonly: Vec<PathBuf>,
}

/// The paths to hide and to bind read-only; a hidden path that would
/// cover a write dir is dropped. Without user namespaces nothing is, and
/// the notes say what that leaves readable and writable.
fn hiding(
    caps: &SandboxCapabilities,
    write_dirs: &[PathBuf],
    socket: Option<PathBuf>,
    hide: Vec<PathBuf>,
    readonly: Vec<PathBuf>,
    not_enforced: &mut Vec<String>,
) -> Hiding {
    if !caps.user_namespaces {
        if !readonly.is_empty() {
            not_enforced.push(format!("commands can modify policy scripts and config files where they can write (no user namespaces: {}); a changed script is still refused by its pinned SHA-256", userns_why(caps)));
        }
        not_enforced.push(format!("commands can read the daemon's state (other sessions' conversations) and credential stores such as ~/.ssh (no user namespaces: {})", userns_why(caps)));
        return Hiding { paths: Vec::new(), socket_hidden: false, hidden: Vec::new(), readonly: Vec::new() };
    }
    let keep = |h: &PathBuf| !covers_needed(h, write_dirs);
    let socket: Vec<PathBuf> = socket.into_iter().filter(keep).collect();
    // Paths that do not exist yet stay in the plan: the helper hides
    // (or binds) whatever exists when each command starts.
    let mut hidden: Vec<PathBuf> = hide.into_iter().filter(keep).collect();
    hidden.sort();
    hidden.dedup();
    let socket_hidden = !socket.is_empty();
    let mut paths = socket;
    paths.extend(hidden.iter().cloned());
    let mut readonly = readonly;
    readonly.sort();
    readonly.dedup();
    Hiding { paths, socket_hidden, hidden, readonly }
}

/// Whether commands get a PID namespace (with user namespaces only).
fn pid_namespace(caps: &SandboxCapabilities, not_enforced: &mut Vec<String>) -> bool {
    let pid_namespace = caps.user_namespaces && caps.pid_namespace;
    if !pid_namespace {
        let why = if caps.user_namespaces {
            caps.pid_namespace_error.clone().unwrap_or_else(|| "unknown reason".into())
        } else {
            userns_why(caps)
        };
        not_enforced.push(format!("processes a command starts in a new session (setsid, double fork) can outlive it, and /proc shows other processes' command lines (no PID namespace: {why})"));
    }
    pid_namespace
}

/// The directories commands may read under `sandbox_strict_read` (the
/// system's and the configured read-only ones), when Landlock can enforce it.
fn strict_read_dirs(
    strict_read: bool,
    landlock: bool,
    read_only_dirs: Vec<PathBuf>,
    not_enforced: &mut Vec<String>,
) -> Option<Vec<PathBuf>> {
    match (strict_read, landlock) {
        (false, _) => None,
        (true, true) => {
            let mut dirs: Vec<PathBuf> = SYSTEM_READ_DIRS.iter().map(PathBuf::from).filter(|p| p.exists()).collect();
            dirs.extend(read_only_dirs);
            Some(dirs)
        }
        (true, false) => {
            not_enforced.push("sandbox_strict_read is not enforced: Landlock is unavailable".into());
            None
        }
    }
}

/// The status when commands run without the helper (builtin mode, or a
/// kernel that enforces nothing): every kernel-side promise is listed as
/// not enforced.
fn unconfined(mode: SandboxMode, network_allowed: bool, caps: &SandboxCapabilities) -> SandboxStatus {
    let why = if mode == SandboxMode::Builtin {
        "sandbox = \"builtin\"".to_owned()
    } else {
        format!("the kernel offers no sandboxing here ({})", caps.landlock_error.as_deref().unwrap_or("unknown reason"))
    };
    let mut not_enforced =
        vec![format!("{why}: commands can write anywhere the user can, outside the base directory too")];
    if !network_allowed {
        not_enforced.push(format!("{why}: command_network = false is not enforced; commands can use the network"));
    }
    not_enforced.push(format!("{why}: commands see the daemon's state, credential stores and Unix sockets, can modify policy scripts (a changed script is still refused by its pinned SHA-256), and what they start can outlive them"));
    SandboxStatus {
        mode,
        helper: false,
        filesystem_confined: false,
        landlock_abi: None,
        network_allowed,
        network_block: None,
        daemon_socket_hidden: false,
        hidden: Vec::new(),
        readonly: Vec::new(),
        pid_namespace: false,
        unix_sockets_blocked: false,
        strict_read: false,
        home: None,
        not_enforced,
    }
}

/// Whether hiding `path` would also hide a directory commands must write
/// (a write dir, or the temp dir their per-run TMPDIR lives in).
fn covers_needed(path: &Path, write_dirs: &[PathBuf]) -> bool {
    let tmp = std::env::temp_dir();
    write_dirs.iter().chain(std::iter::once(&tmp)).any(|d| d.starts_with(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> SandboxCapabilities {
        SandboxCapabilities {
            landlock_abi: Some(7),
            landlock_error: None,
            user_namespaces: true,
            user_namespaces_error: None,
            seccomp: true,
            seccomp_error: None,
            pid_namespace: true,
            pid_namespace_error: None,
        }
    }

    fn input(network: bool, write: &[&str], socket: Option<&str>) -> PlanInput {
        PlanInput {
            mode: SandboxMode::Os,
            network_allowed: network,
            write_dirs: write.iter().map(PathBuf::from).collect(),
            socket: socket.map(PathBuf::from),
            ..PlanInput::default()
        }
    }

    #[test]
    fn full_kernel_enforces_everything_asked() {
        let (status, plan) = plan(input(false, &["/p"], Some("/run/user/1/swival")), &full());
        let plan = plan.unwrap();
        assert!(plan.landlock && plan.user_namespace() && plan.pid_namespace && plan.deny_unix_sockets);
        assert_eq!(plan.net, Some(NetBlock::Namespace));
        assert!(status.filesystem_confined && status.daemon_socket_hidden && status.pid_namespace);
        assert!(status.unix_sockets_blocked);
        assert!(status.not_enforced.is_empty(), "{:?}", status.not_enforced);
    }

    #[test]
    fn seccomp_is_the_fallback_without_user_namespaces() {
        let caps =
            SandboxCapabilities { user_namespaces: false, user_namespaces_error: Some("EPERM".into()), ..full() };
        let (status, plan) = plan(input(false, &[], Some("/s")), &caps);
        let plan = plan.unwrap();
        assert_eq!(plan.net, Some(NetBlock::Seccomp));
        assert!(plan.deny_unix_sockets && !plan.pid_namespace && plan.hide_paths.is_empty());
        assert_eq!(status.network_block, Some(NetBlock::Seccomp));
        assert!(status.not_enforced.iter().any(|w| w.contains("setsid")), "{:?}", status.not_enforced);
        assert!(status.not_enforced.iter().any(|w| w.contains("credential stores")), "{:?}", status.not_enforced);
    }

    #[test]
    fn allowing_the_network_says_unix_sockets_stay_reachable() {
        let (status, plan) = plan(input(true, &[], Some("/s")), &full());
        assert!(!plan.unwrap().deny_unix_sockets);
        assert!(status.not_enforced.iter().any(|w| w.contains("named Unix sockets")), "{:?}", status.not_enforced);
    }

    #[test]
    fn missing_landlock_is_reported_not_pretended() {
        let caps = SandboxCapabilities {
            landlock_abi: None,
            landlock_error: Some("Landlock is not enabled".into()),
            ..full()
        };
        let (status, plan) = plan(input(true, &[], None), &caps);
        assert!(!plan.unwrap().landlock);
        assert!(!status.filesystem_confined);
        assert!(status.not_enforced[0].contains("Landlock is unavailable (Landlock is not enabled)"));
        assert!(status.summary().contains("writes NOT confined"));
    }

    #[test]
    fn a_hide_path_covering_a_write_dir_or_tmp_is_dropped() {
        let tmp_parent = std::env::temp_dir().parent().unwrap().to_owned();
        let mut i = input(false, &["/home/u/project"], Some("/home/u"));
        i.hide = vec![tmp_parent];
        let (status, plan) = plan(i, &full());
        assert!(plan.unwrap().hide_paths.is_empty());
        assert!(!status.daemon_socket_hidden);
        assert!(status.hidden.is_empty());
    }

    #[test]
    fn strict_read_lists_system_dirs_and_read_only_allow_dirs() {
        let mut i = input(false, &["/p"], None);
        i.strict_read = true;
        i.read_only_dirs = vec!["/ro".into()];
        let (status, plan) = plan(i, &full());
        let dirs = plan.unwrap().read_dirs.unwrap();
        assert!(dirs.contains(&PathBuf::from("/usr")) && dirs.contains(&PathBuf::from("/ro")));
        assert!(!dirs.iter().any(|d| d == Path::new("/home") || d == Path::new("/root")));
        assert!(status.strict_read);
    }

    #[test]
    fn builtin_mode_says_nothing_is_enforced() {
        let mut i = input(false, &[], None);
        i.mode = SandboxMode::Builtin;
        let (status, plan) = plan(i, &full());
        assert!(plan.is_none());
        assert!(!status.helper);
        assert!(status.not_enforced[1].contains("command_network = false is not enforced"));
        assert!(status.not_enforced[2].contains("outlive them"));
    }

    #[test]
    fn nothing_available_falls_back_to_in_process_checks() {
        let caps = SandboxCapabilities::none("not Linux");
        let (status, plan) = plan(input(false, &[], None), &caps);
        assert!(plan.is_none());
        assert!(status.not_enforced[0].contains("not Linux"), "{:?}", status.not_enforced);
    }
}
