//! `swivalctl daemon install`: the systemd user units or the LaunchAgent
//! plist from the repository's `systemd/` and `launchd/`, written for the
//! current user with the absolute path of the installed swivald.

use std::path::{Path, PathBuf};

const SOCKET_UNIT: &str = include_str!("../../systemd/swivald.socket");
const SERVICE_UNIT: &str = include_str!("../../systemd/swivald.service");
const PLIST: &str = include_str!("../../launchd/com.swival.swivald.plist");

/// The service unit with `ExecStart` pointing at `exe`.
pub fn service_unit(exe: &Path) -> String {
    SERVICE_UNIT
        .lines()
        .map(|l| if l.starts_with("ExecStart=") { format!("ExecStart={}", exe.display()) } else { l.to_owned() })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The LaunchAgent plist for `exe` listening on `socket`.
pub fn plist(exe: &Path, socket: &Path) -> String {
    let log = socket.with_file_name("swivald.log");
    PLIST
        .replace("@SWIVALD@", &exe.display().to_string())
        .replace("@SOCKET@", &socket.display().to_string())
        .replace("@LOG@", &log.display().to_string())
}

/// Files written by [`install`], and what the user runs next.
#[derive(Debug)]
pub struct Installed {
    /// The files written.
    pub files: Vec<PathBuf>,
    /// The command that enables them.
    pub next_step: String,
}

/// Write the units (Linux) or the plist (macOS) for the current user.
pub fn install(exe: &Path, socket: &Path) -> std::io::Result<Installed> {
    let base = directories::BaseDirs::new()
        .ok_or_else(|| std::io::Error::other("cannot determine the home directory (is HOME set?)"))?;
    if cfg!(target_os = "macos") {
        let dir = base.home_dir().join("Library/LaunchAgents");
        std::fs::create_dir_all(&dir)?;
        if let Some(sock_dir) = socket.parent() {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(sock_dir);
        }
        let path = dir.join("com.swival.swivald.plist");
        std::fs::write(&path, plist(exe, socket))?;
        let next_step = format!("launchctl bootstrap gui/$(id -u) {}", path.display());
        Ok(Installed { files: vec![path], next_step })
    } else {
        let dir = base.config_dir().join("systemd/user");
        std::fs::create_dir_all(&dir)?;
        let socket_path = dir.join("swivald.socket");
        let service_path = dir.join("swivald.service");
        std::fs::write(&socket_path, SOCKET_UNIT)?;
        std::fs::write(&service_path, service_unit(exe))?;
        Ok(Installed {
            files: vec![socket_path, service_path],
            next_step: "systemctl --user daemon-reload && systemctl --user enable --now swivald.socket".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_unit_runs_the_given_binary_and_notifies() {
        let unit = service_unit(Path::new("/opt/bin/swivald"));
        assert!(unit.contains("ExecStart=/opt/bin/swivald\n"), "{unit}");
        assert!(unit.contains("Type=notify"));
    }

    #[test]
    fn socket_unit_is_private() {
        assert!(SOCKET_UNIT.contains("SocketMode=0600"));
    }

    #[test]
    fn plist_has_sockets_entry_with_paths_filled_in() {
        let p = plist(Path::new("/usr/local/bin/swivald"), Path::new("/tmp/swival-501/swivald.sock"));
        assert!(p.contains("<key>Sockets</key>"));
        assert!(p.contains("<string>/usr/local/bin/swivald</string>"));
        assert!(p.contains("<string>/tmp/swival-501/swivald.sock</string>"));
        assert!(!p.contains('@'), "placeholder left: {p}");
    }
}
