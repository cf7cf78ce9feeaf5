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

/// Landlock ABI that confines connecting to named Unix sockets.
pub const LANDLOCK_ABI_UNIX_SOCKETS: u32 = 9;
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
        }
    }

    /// Whether `sandbox = "os"` can enforce anything at all here (the
    /// default mode falls back to `builtin` when not).
    pub fn any(&self) -> bool {
        self.landlock_abi.is_some() || self.user_namespaces || self.seccomp
    }
}

/// How commands lose the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetBlock {
    /// A private network namespace with no interface up.
    Namespace,
    /// A seccomp filter refusing IPv4 and IPv6 sockets.
    Seccomp,
}

/// What the helper does before exec'ing one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelperPlan {
    /// Apply Landlock: read and execute everywhere, write only in `write_dirs`.
    pub landlock: bool,
    /// Directories the command may write (base dir, allow-dirs, temp dir).
    pub write_dirs: Vec<PathBuf>,
    /// How to remove the network, if at all.
    pub net: Option<NetBlock>,
    /// Paths covered in a private mount namespace so commands cannot reach
    /// them (swivald's socket or its directory).
    pub hide_paths: Vec<PathBuf>,
}

impl HelperPlan {
    /// Whether the plan needs a user namespace.
    pub fn user_namespace(&self) -> bool {
        self.net == Some(NetBlock::Namespace) || !self.hide_paths.is_empty()
    }
}

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
/// configuration and what the kernel offers. `hide_paths` are hidden from
/// commands (swivald's socket, or its own directory); one that would cover
/// a write dir or the temp dir is dropped, and the status says so.
/// `write_dirs` must include the base dir and the read-write allow-dirs;
/// the per-run temp dir is added for each run.
pub fn plan(
    mode: SandboxMode,
    network_allowed: bool,
    caps: &SandboxCapabilities,
    write_dirs: Vec<PathBuf>,
    hide_paths: Vec<PathBuf>,
) -> (SandboxStatus, Option<HelperPlan>) {
    if mode == SandboxMode::Builtin || !caps.any() {
        return (unconfined(mode, network_allowed, caps), None);
    }
    let mut not_enforced = Vec::new();
    let landlock = caps.landlock_abi.is_some();
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

    let net = if network_allowed {
        None
    } else if caps.user_namespaces {
        Some(NetBlock::Namespace)
    } else if caps.seccomp {
        Some(NetBlock::Seccomp)
    } else {
        not_enforced.push(format!(
            "command_network = false is not enforced: no user namespaces ({}) and no seccomp ({}); commands can use the network",
            caps.user_namespaces_error.as_deref().unwrap_or("unknown reason"),
            caps.seccomp_error.as_deref().unwrap_or("unknown reason")
        ));
        None
    };

    let unix_confined = caps.landlock_abi.is_some_and(|abi| abi >= LANDLOCK_ABI_UNIX_SOCKETS);
    let hide_paths: Vec<PathBuf> = if caps.user_namespaces {
        hide_paths.into_iter().filter(|h| !covers_needed(h, &write_dirs)).collect()
    } else {
        Vec::new()
    };
    let socket_hidden = !hide_paths.is_empty();
    if !socket_hidden && !unix_confined {
        let why = if caps.user_namespaces {
            "no hideable socket path was given"
        } else {
            "needs user namespaces or Landlock ABI 9"
        };
        not_enforced.push(format!("commands can connect to named Unix sockets, swivald's own included ({why})"));
    }

    let status = SandboxStatus {
        mode,
        helper: true,
        filesystem_confined: landlock,
        landlock_abi: caps.landlock_abi,
        network_allowed,
        network_block: net,
        daemon_socket_hidden: socket_hidden,
        not_enforced,
    };
    let plan = HelperPlan { landlock, write_dirs, net, hide_paths };
    (status, Some(plan))
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
    SandboxStatus {
        mode,
        helper: false,
        filesystem_confined: false,
        landlock_abi: None,
        network_allowed,
        network_block: None,
        daemon_socket_hidden: false,
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
        }
    }

    #[test]
    fn full_kernel_enforces_everything_asked() {
        let (status, plan) =
            plan(SandboxMode::Os, false, &full(), vec!["/p".into()], vec!["/run/user/1/swival".into()]);
        let plan = plan.unwrap();
        assert!(plan.landlock && plan.user_namespace());
        assert_eq!(plan.net, Some(NetBlock::Namespace));
        assert!(status.filesystem_confined && status.daemon_socket_hidden);
        assert!(status.not_enforced.is_empty(), "{:?}", status.not_enforced);
    }

    #[test]
    fn seccomp_is_the_fallback_without_user_namespaces() {
        let caps =
            SandboxCapabilities { user_namespaces: false, user_namespaces_error: Some("EPERM".into()), ..full() };
        let (status, plan) = plan(SandboxMode::Os, false, &caps, vec![], vec!["/s".into()]);
        assert_eq!(plan.unwrap().net, Some(NetBlock::Seccomp));
        assert_eq!(status.network_block, Some(NetBlock::Seccomp));
        assert!(status.not_enforced.iter().any(|w| w.contains("named Unix sockets")));
    }

    #[test]
    fn missing_landlock_is_reported_not_pretended() {
        let caps = SandboxCapabilities {
            landlock_abi: None,
            landlock_error: Some("Landlock is not enabled".into()),
            ..full()
        };
        let (status, plan) = plan(SandboxMode::Os, true, &caps, vec![], vec![]);
        assert!(!plan.unwrap().landlock);
        assert!(!status.filesystem_confined);
        assert!(status.not_enforced[0].contains("Landlock is unavailable (Landlock is not enabled)"));
        assert!(status.summary().contains("writes NOT confined"));
    }

    #[test]
    fn a_hide_path_covering_a_write_dir_or_tmp_is_dropped() {
        let tmp_parent = std::env::temp_dir().parent().unwrap().to_owned();
        let (status, plan) =
            plan(SandboxMode::Os, false, &full(), vec!["/home/u/project".into()], vec!["/home/u".into(), tmp_parent]);
        assert!(plan.unwrap().hide_paths.is_empty());
        assert!(!status.daemon_socket_hidden);
        assert!(status.not_enforced.iter().any(|w| w.contains("named Unix sockets")));
    }

    #[test]
    fn builtin_mode_says_nothing_is_enforced() {
        let (status, plan) = plan(SandboxMode::Builtin, false, &full(), vec![], vec![]);
        assert!(plan.is_none());
        assert!(!status.helper);
        assert_eq!(status.not_enforced.len(), 2);
        assert!(status.not_enforced[1].contains("command_network = false is not enforced"));
    }

    #[test]
    fn nothing_available_falls_back_to_in_process_checks() {
        let caps = SandboxCapabilities::none("not Linux");
        let (status, plan) = plan(SandboxMode::Os, false, &caps, vec![], vec![]);
        assert!(plan.is_none());
        assert!(status.not_enforced[0].contains("not Linux"), "{:?}", status.not_enforced);
    }
}
